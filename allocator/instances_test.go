package allocator

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// randomProblem builds a valid problem of the given size: nodes of `types`
// types (one type: the default type or a named one), trials of which some
// run on random disjoint node subsets of one type (sometimes with departed
// ids, sometimes below MinNodes after departures), random bounds that may
// exceed the pool, noisy non-monotone curves (sometimes decreasing, some
// points at zero), per-type curves on multi-type pools, random rescale
// costs, weights and IdleUntil (some unknown), and a random objective.
// Same rng state ⇒ same problem.
func randomProblem(rng *rand.Rand, trials, nodes, types int) *Problem {
	base := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	typeNames := make([]string, max(types, 1))
	for t := range typeNames {
		typeNames[t] = fmt.Sprintf("gpu%d", t)
	}
	if types <= 1 && rng.IntN(2) == 0 {
		typeNames[0] = DefaultNodeType
	}
	p := &Problem{
		Lookahead: time.Duration(30+rng.IntN(1200)) * time.Second,
		Objective: []Objective{ObjectiveThroughput, ObjectiveEfficiency, ObjectiveWeighted}[rng.IntN(3)],
	}
	byType := make([][]int, len(typeNames)) // free node indices per type
	for i := range nodes {
		n := Node{ID: fmt.Sprintf("n%02d", i), Type: typeNames[rng.IntN(len(typeNames))]}
		if rng.IntN(3) > 0 {
			// Coarse times so that ties occur.
			n.IdleUntil = base.Add(time.Duration(rng.IntN(6)) * 10 * time.Minute)
		}
		p.Nodes = append(p.Nodes, n)
		t := typeIdxOf(typeNames, n.Type)
		byType[t] = append(byType[t], i)
	}
	for t := range byType {
		rng.Shuffle(len(byType[t]), func(a, b int) { byType[t][a], byType[t][b] = byType[t][b], byType[t][a] })
	}
	for j := range trials {
		tr := Trial{ID: fmt.Sprintf("t%d", j)}
		tr.MinNodes = 1 + rng.IntN(3)
		tr.MaxNodes = tr.MinNodes + rng.IntN(max(nodes/2, 1)+2)
		if rng.IntN(4) == 0 {
			tr.RescaleUpCost = 0
		} else {
			tr.RescaleUpCost = rng.Float64() * p.Lookahead.Seconds() / 2
		}
		tr.RescaleDownCost = rng.Float64() * p.Lookahead.Seconds() / 3
		if rng.IntN(3) == 0 {
			tr.Weight = float64(rng.IntN(4)) // 0 means 1
		}
		// Usable types: all, or (multi-type pools, half the time) a subset.
		usable := make([]int, len(typeNames))
		for t := range usable {
			usable[t] = t
		}
		perType := len(typeNames) > 1 && rng.IntN(2) == 0
		if perType {
			rng.Shuffle(len(usable), func(a, b int) { usable[a], usable[b] = usable[b], usable[a] })
			usable = usable[:1+rng.IntN(len(usable))]
			tr.CurvesByType = make(map[string]Curve, len(usable))
			for _, t := range usable {
				tr.CurvesByType[typeNames[t]] = randomCurve(rng, tr.MaxNodes)
			}
		} else {
			tr.Curve = randomCurve(rng, tr.MaxNodes)
		}
		// Half the trials run on free nodes of one usable type.
		if rng.IntN(2) == 0 {
			t := usable[rng.IntN(len(usable))]
			k := min(len(byType[t]), 1+rng.IntN(tr.MaxNodes+1))
			for _, i := range byType[t][:k] {
				tr.Nodes = append(tr.Nodes, p.Nodes[i].ID)
			}
			byType[t] = byType[t][k:]
		}
		if rng.IntN(5) == 0 {
			tr.Nodes = append(tr.Nodes, fmt.Sprintf("gone-%d", j)) // departed
		}
		rng.Shuffle(len(tr.Nodes), func(a, b int) { tr.Nodes[a], tr.Nodes[b] = tr.Nodes[b], tr.Nodes[a] })
		p.Trials = append(p.Trials, tr)
	}
	return p
}

// newTestRand returns the seeded generator tests use.
func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x61ea)) }

func typeIdxOf(names []string, typ string) int {
	for i, n := range names {
		if n == typ {
			return i
		}
	}
	panic("unknown type " + typ)
}

// randomCurve returns a noisy curve reaching at least maxNodes: roughly
// sub-linear scaling with noise, sometimes a decreasing tail, sometimes a
// point at zero throughput, sometimes gaps between points.
func randomCurve(rng *rand.Rand, maxNodes int) Curve {
	single := 10 + rng.Float64()*90
	alpha := rng.Float64() * 0.3
	var c Curve
	k := 0
	last := maxNodes + rng.IntN(3)
	for k < last {
		k += 1 + rng.IntN(2) // sometimes skip a count: interpolation
		tp := single * float64(k) / (1 + alpha*float64(k-1))
		tp *= 0.7 + 0.6*rng.Float64() // noise: not monotone, not concave
		switch rng.IntN(10) {
		case 0:
			tp = 0
		case 1:
			tp = single * rng.Float64() // a dip
		}
		c = append(c, Point{Nodes: k, Throughput: tp})
	}
	return c
}
