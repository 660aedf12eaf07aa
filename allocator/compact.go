package allocator

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// The compact formulation (docs/allocator.md). With no migration on a
// homogeneous pool, every count vector with Σ_j n_j ≤ |N| is realisable, so
// node identities drop out and the problem is a multiple-choice knapsack
// (MCKP): binary y[j][o] per option o = (type t, count k) of trial j,
//
//	max Σ_j Σ_o v_j(o)·y[j][o]   s.t.  Σ_o y[j][o] = 1  ∀j,
//	                                   Σ_j Σ_{o: t(o)=t} k(o)·y[j][o] ≤ |N_t|  ∀t.
//
// Before HiGHS sees it, the model is shrunk with exact reductions:
//
//  1. Dominance: an option is dropped if another option of the same trial
//     on the same type (or 0 nodes) uses no more nodes and is worth at
//     least as much.
//  2. An incumbent (lower bound LB): the best of the greedy solution and
//     the current allocation kept as it is (the warm start: between two
//     decisions little changes, so it is often optimal already).
//  3. Lagrangian reduced-cost fixing (Sinha & Zoltners 1979; Pisinger 1995
//     for the MCKP core). Relaxing capacity with prices λ_t ≥ 0 gives the
//     bound  L(λ) = Σ_t λ_t|N_t| + Σ_j max_o (v_j(o) − λ_{t(o)}·k(o)).
//     Forcing trial j to option o costs its reduced cost
//     r_j(o) = max_o' (v_j(o') − λ·k(o')) − (v_j(o) − λ·k(o)), so no
//     solution using o is worth more than L(λ) − r_j(o); options with
//     L(λ) − r_j(o) < LB cannot improve on the incumbent and are dropped.
//     On one type λ is the LP dual, read off the sorted slopes of each
//     trial's concave hull; on several types it is found by subgradient
//     steps (any λ ≥ 0 gives a valid bound).
//
// Trials left with one option are fixed. What remains (the core: the
// trials whose best option the bound cannot decide) is solved exactly: on
// one node type by dynamic programming over the residual capacity when
// options × capacity is small (it is an MCKP, and HiGHS spends up to a
// second proving optimality among the near-ties that linear segments of
// the curves produce), otherwise by HiGHS.
func solveCompact(in *instance, s Settings) (decision, Status, error) {
	opts := compactOptions(in)
	inc := newDecision(len(in.trials))
	incVal := math.Inf(-1)
	for _, d := range []decision{solveGreedy(in), currentDecision(in)} {
		if v := in.objective(d); v > incVal {
			inc, incVal = d, v
		}
	}
	lambda := lagrangePrices(in, opts, incVal)
	bound, best := lagrangeBound(in, opts, lambda)
	// The bound sums terms that can cancel (node prices against very
	// negative preemption values), so the tolerance scales with the terms.
	scale := 0.0
	for t, l := range lambda {
		scale += l * float64(in.capacity[t])
	}
	for _, b := range best {
		scale += math.Abs(b)
	}
	tol := 1e-9 * math.Max(1, scale)
	if bound-incVal <= tol {
		return inc, StatusOptimal, nil
	}
	// Reduced-cost fixing.
	for j := range opts {
		kept := opts[j][:0]
		for _, o := range opts[j] {
			reduced := best[j] - (o.v - priceOf(lambda, o))
			if bound-reduced >= incVal-tol {
				kept = append(kept, o)
			}
		}
		opts[j] = kept
	}
	return solveReducedMCKP(in, s, opts, inc, incVal)
}

// option is one choice of a trial: k nodes of type typ (typ −1 when k = 0)
// worth v.
type option struct {
	typ, k int
	v      float64
}

func priceOf(lambda []float64, o option) float64 {
	if o.k == 0 {
		return 0
	}
	return lambda[o.typ] * float64(o.k)
}

// compactOptions lists every trial's undominated options, 0 nodes first,
// then by type and count.
func compactOptions(in *instance) [][]option {
	opts := make([][]option, len(in.trials))
	for j := range in.trials {
		ti := &in.trials[j]
		list := []option{{typ: -1, k: 0, v: ti.zero}}
		for ci := range ti.choices {
			c := &ti.choices[ci]
			runMax := ti.zero
			for i, v := range c.values {
				if v > runMax {
					list = append(list, option{typ: c.typ, k: c.min + i, v: v})
					runMax = v
				}
			}
		}
		opts[j] = list
	}
	return opts
}

// currentDecision keeps every running trial at its current size when that
// is an allowed count, and leaves the rest at 0: always feasible, since
// the nodes are held already.
func currentDecision(in *instance) decision {
	d := newDecision(len(in.trials))
	for j := range in.trials {
		ti := &in.trials[j]
		if ti.cur == 0 {
			continue
		}
		if c := ti.choice(ti.curType); c != nil && ti.cur >= c.min && ti.cur <= c.max() {
			d.counts[j], d.types[j] = ti.cur, ti.curType
		}
	}
	return d
}

// lagrangeBound returns L(λ) and each trial's best Lagrangian value.
func lagrangeBound(in *instance, opts [][]option, lambda []float64) (float64, []float64) {
	best := make([]float64, len(opts))
	total := 0.0
	for t, l := range lambda {
		total += l * float64(in.capacity[t])
	}
	for j, list := range opts {
		b := math.Inf(-1)
		for _, o := range list {
			b = math.Max(b, o.v-priceOf(lambda, o))
		}
		best[j] = b
		total += b
	}
	return total, best
}

// lagrangePrices returns node prices λ_t: the exact LP dual on one type,
// subgradient-improved per-type duals on several.
func lagrangePrices(in *instance, opts [][]option, incumbent float64) []float64 {
	lambda := make([]float64, len(in.types))
	for t := range in.types {
		lambda[t] = hullDual(opts, t, in.capacity[t])
	}
	if len(in.types) <= 1 {
		return lambda
	}
	// Polyak subgradient steps on L(λ), keeping the best λ seen.
	bestL, _ := lagrangeBound(in, opts, lambda)
	bestLambda := append([]float64(nil), lambda...)
	cur := append([]float64(nil), lambda...)
	for iter := 0; iter < 200; iter++ {
		l, _ := lagrangeBound(in, opts, cur)
		if l < bestL {
			bestL = l
			copy(bestLambda, cur)
		}
		g := make([]float64, len(cur))
		for t := range g {
			g[t] = float64(in.capacity[t])
		}
		for _, list := range opts {
			arg, b := 0, math.Inf(-1)
			for i, o := range list {
				if v := o.v - priceOf(cur, o); v > b {
					arg, b = i, v
				}
			}
			if o := list[arg]; o.k > 0 {
				g[o.typ] -= float64(o.k)
			}
		}
		norm := 0.0
		for _, x := range g {
			norm += x * x
		}
		if norm == 0 || l-incumbent <= 0 {
			break
		}
		step := (l - incumbent) / norm
		for t := range cur {
			cur[t] = math.Max(0, cur[t]-step*g[t])
		}
	}
	return bestLambda
}

// hullDual is the LP dual price of type t's capacity when every trial may
// use only t: walk each trial's upper concave hull of (k, v) from 0 nodes,
// sort all hull segments by slope, and fill the capacity; the price is the
// slope of the segment that does not fit (0 if all fit).
func hullDual(opts [][]option, t int, capacity int) float64 {
	type segment struct {
		dk    int
		slope float64
	}
	var segs []segment
	var hull []option
	for _, list := range opts {
		hull = hull[:0]
		for _, o := range list {
			if o.k != 0 && o.typ != t {
				continue
			}
			for len(hull) >= 2 {
				a, b := hull[len(hull)-2], hull[len(hull)-1]
				// b lies on or below the chord from a to o: drop it.
				if (b.v-a.v)*float64(o.k-a.k) <= (o.v-a.v)*float64(b.k-a.k) {
					hull = hull[:len(hull)-1]
					continue
				}
				break
			}
			hull = append(hull, o)
		}
		for i := 1; i < len(hull); i++ {
			dk := hull[i].k - hull[i-1].k
			segs = append(segs, segment{dk: dk, slope: (hull[i].v - hull[i-1].v) / float64(dk)})
		}
	}
	sort.Slice(segs, func(a, b int) bool { return segs[a].slope > segs[b].slope })
	used := 0
	for _, s := range segs {
		if s.slope <= 0 {
			break
		}
		if used+s.dk > capacity {
			return s.slope
		}
		used += s.dk
	}
	return 0
}

// solveReducedMCKP fixes trials with a single option left and hands the
// rest to HiGHS; the incumbent is kept if HiGHS stops early with worse.
func solveReducedMCKP(in *instance, s Settings, opts [][]option, inc decision, incVal float64) (decision, Status, error) {
	d := newDecision(len(in.trials))
	left := append([]int(nil), in.capacity...)
	var free []int
	for j, list := range opts {
		if len(list) == 1 {
			if o := list[0]; o.k > 0 {
				d.counts[j], d.types[j] = o.k, o.typ
				left[o.typ] -= o.k
			}
			continue
		}
		free = append(free, j)
	}
	if len(in.types) == 1 && coreSize(opts, free, left[0]) <= dpBudget {
		solveCoreDP(opts, free, left[0], d)
		return d, StatusOptimal, nil
	}
	var m milp
	cols := make([][]int, len(opts))
	capCols := make([][]int, len(in.types))
	capCoef := make([][]float64, len(in.types))
	for _, j := range free {
		ones := make([]float64, len(opts[j]))
		for i, o := range opts[j] {
			c := m.addBinary(o.v)
			cols[j] = append(cols[j], c)
			ones[i] = 1
			if o.k > 0 {
				capCols[o.typ] = append(capCols[o.typ], c)
				capCoef[o.typ] = append(capCoef[o.typ], float64(o.k))
			}
		}
		m.addRow(1, cols[j], ones, 1)
	}
	for t := range in.types {
		if len(capCols[t]) > 0 {
			m.addRow(-inf, capCols[t], capCoef[t], float64(left[t]))
		}
	}
	sol, err := m.solve(s)
	if errors.Is(err, ErrSolver) {
		// HiGHS stopped (time limit) before finding a solution of the
		// reduced model: the incumbent is feasible, just not proven optimal.
		return inc, StatusFeasible, nil
	}
	if err != nil {
		return decision{}, "", fmt.Errorf("compact formulation: %w", err)
	}
	for _, j := range free {
		for i, c := range cols[j] {
			if on(sol.x, c) {
				o := opts[j][i]
				d.counts[j], d.types[j] = o.k, max(o.typ, 0)
			}
		}
	}
	status := StatusOptimal
	if !sol.optimal {
		status = StatusFeasible
	}
	if in.objective(d) < incVal {
		return inc, status, nil
	}
	return d, status, nil
}

// dpBudget bounds options × residual capacity for the dynamic program
// (about 50 ms); larger cores go to HiGHS.
const dpBudget = 50_000_000

func coreSize(opts [][]option, free []int, capacity int) int {
	n := 0
	for _, j := range free {
		n += len(opts[j])
	}
	return n * (capacity + 1)
}

// solveCoreDP solves the single-type MCKP of the free trials exactly:
// best[c] is the most value the trials processed so far reach using at
// most c nodes, and pick[i][c] the option trial free[i] takes there
// (Dudziński & Walukiewicz, EJOR 1987, §4). The reduced option sets
// contain an optimal solution, so this is the optimum of the whole problem.
func solveCoreDP(opts [][]option, free []int, capacity int, d decision) {
	best := make([]float64, capacity+1)
	next := make([]float64, capacity+1)
	pick := make([][]int32, len(free))
	for i, j := range free {
		pick[i] = make([]int32, capacity+1)
		for c := 0; c <= capacity; c++ {
			arg, val := -1, math.Inf(-1)
			for oi, o := range opts[j] {
				if o.k <= c {
					if v := best[c-o.k] + o.v; v > val {
						arg, val = oi, v
					}
				}
			}
			next[c], pick[i][c] = val, int32(arg)
		}
		best, next = next, best
	}
	c := capacity
	for i := len(free) - 1; i >= 0; i-- {
		j := free[i]
		o := opts[j][pick[i][c]]
		d.counts[j], d.types[j] = o.k, max(o.typ, 0)
		c -= o.k
	}
}
