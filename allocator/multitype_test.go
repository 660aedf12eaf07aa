package allocator

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bartolsthoorn/gohighs/highs"
	"github.com/stretchr/testify/require"
)

// The multi-type path of the compact formulation (cutting-plane prices,
// LP rounding, reduced-cost fixing, the core on HiGHS in reduced costs)
// must return the optimum: brute force on small random pools of two to
// four node types, on all three objectives, with current allocations.
func TestCompactMultiTypeMatchesBruteForce(t *testing.T) {
	const instances = 300
	for seed := range uint64(instances) {
		rng := rand.New(rand.NewPCG(seed, 0x4c7))
		trials, nodes, types := 1+rng.IntN(5), rng.IntN(16), 2+rng.IntN(3)
		p := randomProblem(rng, trials, nodes, types)
		t.Run(fmt.Sprintf("seed=%d/%dx%dx%d", seed, trials, nodes, types), func(t *testing.T) {
			in, err := prepare(p)
			require.NoError(t, err)
			want, wantVal := bruteForce(in)
			res, err := Solve(p, nil)
			require.NoError(t, err)
			require.Equal(t, StatusOptimal, res.Status)
			require.Truef(t, closeRel(wantVal, res.Objective, 1e-9),
				"objective (-want +got):\n-%v (counts %v types %v)\n+%v (counts %v)", wantVal, want.counts, want.types, res.Objective, res.Counts())
		})
	}
}

// The incumbent built from the LP prices is feasible, on every instance
// and at any prices (at 0 every trial wants its largest option, so the
// repair has the most to do).
func TestLagrangeRoundIsFeasible(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 0x70d))
		p := randomProblem(rng, 1+rng.IntN(12), rng.IntN(40), 2+rng.IntN(3))
		in, err := prepare(p)
		require.NoError(t, err)
		opts := compactOptions(in)
		prices := make([]float64, len(in.types))
		if seed%2 == 1 {
			prices, _, _ = cuttingPlanePrices(in, hullOptions(opts, len(in.types)), 1e-9)
		}
		d := lagrangeRound(in, opts, prices)
		used := make([]int, len(in.types))
		for j, k := range d.counts {
			if k == 0 {
				continue
			}
			c := in.trials[j].choice(d.types[j])
			require.NotNil(t, c, "seed %d: trial %d on a type it cannot use", seed, j)
			require.True(t, k >= c.min && k <= c.max(), "seed %d: trial %d: %d nodes", seed, j, k)
			used[d.types[j]] += k
		}
		for typ, u := range used {
			require.LessOrEqual(t, u, in.capacity[typ], "seed %d: type %d", seed, typ)
		}
	}
}

// min L(λ) found by cutting planes is the optimum of the LP relaxation,
// here solved as an LP by HiGHS over every option.
func TestCuttingPlaneBoundIsTheLPOptimum(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 0x1b9))
		p := randomProblem(rng, 1+rng.IntN(30), rng.IntN(60), 2+rng.IntN(3))
		in, err := prepare(p)
		require.NoError(t, err)
		opts := compactOptions(in)
		_, bound, _ := cuttingPlanePrices(in, hullOptions(opts, len(in.types)), 1e-9)
		lp := lpRelaxation(t, in, opts)
		require.Truef(t, math.Abs(bound-lp) <= 1e-7*math.Max(1, math.Abs(lp)),
			"seed %d: cutting planes %v, LP %v", seed, bound, lp)
	}
}

// lpRelaxation is the LP relaxation of the MCKP over opts, on HiGHS.
func lpRelaxation(t *testing.T, in *instance, opts [][]option) float64 {
	var m milp
	capCols := make([][]int, len(in.types))
	capCoef := make([][]float64, len(in.types))
	for _, list := range opts {
		var cols []int
		var ones []float64
		for _, o := range list {
			c := m.addCol(o.v, 0, 1, false)
			cols, ones = append(cols, c), append(ones, 1)
			if o.k > 0 {
				capCols[o.typ] = append(capCols[o.typ], c)
				capCoef[o.typ] = append(capCoef[o.typ], float64(o.k))
			}
		}
		m.addRow(1, cols, ones, 1)
	}
	for typ := range in.types {
		if len(capCols[typ]) > 0 { // HiGHS refuses a model ending in empty rows
			m.addRow(-inf, capCols[typ], capCoef[typ], float64(in.capacity[typ]))
		}
	}
	model := highs.Model{Maximize: true, ColCosts: m.cost, ColLower: m.lower, ColUpper: m.upper,
		RowLower: m.rowLower, RowUpper: m.rowUpper, ConstMatrix: m.entries}
	sol, err := model.Solve(highs.WithOutput(false), highs.WithThreads(1))
	require.NoError(t, err)
	require.True(t, sol.IsOptimal())
	return sol.Objective
}

// The pool that mapNodes builds once per type hands out the same nodes as
// packing each trial afresh from what the previous ones left (the mapping
// before the pool, kept here as the oracle).
func TestFreePoolMatchesPackingEachTrialAfresh(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 0xf00))
		var nodes []Node
		idx := map[string]int{}
		for i := range 1 + rng.IntN(40) {
			n := Node{ID: fmt.Sprintf("n%02d", i)}
			if seed%3 > 0 {
				n.Host = fmt.Sprintf("h%d", rng.IntN(1+rng.IntN(8)))
			}
			idx[n.ID] = i
			nodes = append(nodes, n)
		}
		free := rng.Perm(len(nodes))
		pool := newFreePool(nodes, slices.Clone(free))
		rest := free
		for len(rest) > 0 {
			need := 1 + rng.IntN(len(rest))
			var has []string
			for range rng.IntN(3) {
				has = append(has, nodes[rng.IntN(len(nodes))].ID)
			}
			var want []int
			want, rest = packHostsAfresh(nodes, rest, need, has, idx)
			got := pool.take(need, has, idx)
			require.Equal(t, want, got, "seed %d: need %d has %v", seed, need, has)
			require.Equal(t, len(rest), pool.len())
		}
	}
}

func packHostsAfresh(nodes []Node, free []int, need int, has []string, idIdx map[string]int) (picked, rest []int) {
	if need == 0 {
		return nil, free
	}
	byHost := map[string][]int{}
	var order []string
	for _, i := range free {
		h := nodes[i].Host
		if _, ok := byHost[h]; !ok {
			order = append(order, h)
		}
		byHost[h] = append(byHost[h], i)
	}
	if len(order) < 2 {
		return free[:need], free[need:]
	}
	take := func(h string, n int) {
		got := byHost[h][:n]
		picked = append(picked, got...)
		byHost[h] = byHost[h][n:]
		need -= n
	}
	for _, id := range has {
		if need == 0 {
			break
		}
		if i, ok := idIdx[id]; ok {
			if h := nodes[i].Host; len(byHost[h]) > 0 {
				take(h, min(need, len(byHost[h])))
			}
		}
	}
	for need > 0 {
		best := ""
		found := false
		for _, h := range order {
			n := len(byHost[h])
			if n == 0 {
				continue
			}
			b := len(byHost[best])
			switch {
			case !found:
				best, found = h, true
			case n >= need && (b < need || n < b):
				best = h // covers it, more tightly
			case b < need && n > b:
				best = h // neither covers it: the larger
			}
		}
		take(best, min(need, len(byHost[best])))
	}
	taken := map[int]bool{}
	for _, i := range picked {
		taken[i] = true
	}
	for _, i := range free {
		if !taken[i] {
			rest = append(rest, i)
		}
	}
	return picked, rest
}
