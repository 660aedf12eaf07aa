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
//  2. An incumbent (lower bound LB): the best of a heuristic solution and
//     the current allocation kept as it is (the warm start: between two
//     decisions little changes, so it is often optimal already). The
//     heuristic is the greedy on one type, and on several the rounding of
//     the LP solution at the prices of step 3 (lagrangeRound).
//  3. Lagrangian reduced-cost fixing (Sinha & Zoltners 1979; Pisinger 1995
//     for the MCKP core). Relaxing capacity with prices λ_t ≥ 0 gives the
//     bound  L(λ) = Σ_t λ_t|N_t| + Σ_j max_o (v_j(o) − λ_{t(o)}·k(o)).
//     Forcing trial j to option o costs its reduced cost
//     r_j(o) = max_o' (v_j(o') − λ·k(o')) − (v_j(o) − λ·k(o)), so no
//     solution using o is worth more than L(λ) − r_j(o); options with
//     L(λ) − r_j(o) < LB cannot improve on the incumbent and are dropped.
//     λ is the LP dual, so L(λ) is the LP bound: on one type read off the
//     sorted slopes of each trial's concave hull, on several found by
//     cutting planes (cuttingPlanePrices). If L(λ) meets the incumbent
//     (within RelGap), the incumbent is proven optimal.
//
// Trials left with one option are fixed. What remains (the core: the
// trials whose best option the bound cannot decide) is solved exactly: on
// one node type by dynamic programming over the residual capacity when
// options × capacity is small (it is an MCKP, and HiGHS spends up to a
// second proving optimality among the near-ties that linear segments of
// the curves produce), otherwise by HiGHS, in reduced costs
// (solveReducedMCKP).
func solveCompact(in *instance, s Settings) (decision, Status, error) {
	opts := compactOptions(in)
	inc := newDecision(len(in.trials))
	incVal := math.Inf(-1)
	// Prices λ and incumbents: on one type the exact LP dual and the
	// greedy; on several the LP dual by cutting planes and the rounding of
	// the LP solution (the greedy is 0.3–0.7 % worse there).
	var (
		lambda    []float64
		candidate decision
		tried     [][]float64
	)
	if len(in.types) <= 1 {
		lambda = lagrangePrices(in, opts)
		candidate = solveGreedy(in)
	} else {
		lambda, _, tried = cuttingPlanePrices(in, hullOptions(opts, len(in.types)), 1e-9)
		candidate = lagrangeRound(in, opts, lambda)
	}
	for _, d := range []decision{candidate, currentDecision(in)} {
		if v := in.objective(d); v > incVal {
			inc, incVal = d, v
		}
	}
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
	proven := math.Max(tol, s.RelGap*math.Abs(bound))
	// Rounding the LP is sensitive to how its many near-ties are broken
	// (two node types that run a trial alike): where the first rounding
	// is not proven optimal, round again at the last prices the cutting
	// planes tried, which break them otherwise, and keep the best. Each
	// costs one pass over the options; the core it shrinks costs HiGHS
	// far more.
	for i := len(tried) - 1; i >= max(0, len(tried)-maxExtraRoundings) && bound-incVal > proven; i-- {
		if d := lagrangeRound(in, opts, tried[i]); in.objective(d) > incVal {
			inc, incVal = d, in.objective(d)
		}
	}
	// The incumbent is within RelGap of the bound, hence of the optimum.
	if bound-incVal <= proven {
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
	d, status, err := solveReducedMCKP(in, s, opts, lambda, best, bound, inc, incVal)
	// Stopped at its time limit, HiGHS leaves the incumbent or better:
	// never return worse than the greedy (on one type it is a candidate
	// already).
	if err == nil && status != StatusOptimal && len(in.types) > 1 {
		if g := solveGreedy(in); in.objective(g) > in.objective(d) {
			d = g
		}
	}
	return d, status, err
}

// maxExtraRoundings bounds the extra roundings of the LP in solveCompact:
// about 10 ms each at 10,000 trials; with 3 rather than 0 or 1 the proof
// at 10,000 trials × 4,096 nodes took 2 s rather than 27 s (3 seeds), 8
// did no better.
const maxExtraRoundings = 3

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

// lagrangePrices returns the node price λ of a single-type pool: the
// exact LP dual (several types: cuttingPlanePrices).
func lagrangePrices(in *instance, opts [][]option) []float64 {
	lambda := make([]float64, len(in.types))
	for t := range in.types {
		lambda[t] = hullDual(opts, t, in.capacity[t])
	}
	return lambda
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
			hull = pushHull(hull, o)
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

// solveReducedMCKP fixes trials with a single option left and solves the
// rest exactly: by dynamic programming on one type when it is small,
// otherwise on HiGHS; the incumbent is kept if HiGHS stops early with
// worse.
//
// HiGHS sees the core in reduced costs: with r_j(o) = best_j −
// (v_j(o) − λ·k(o)) ≥ 0 and s_t the nodes of type t left idle, every
// feasible solution is worth L(λ) − Σ_j r_j − Σ_t λ_t·s_t exactly, so it
// maximises −Σ r − Σ λ·s. The objective is then the (small) loss against
// the bound rather than a sum of large values that differ in their eighth
// digit, which is what near-ties between trials make it, and the gap
// HiGHS may stop at is RelGap of the bound, in absolute terms. Most core
// trials have two options left; each is one binary column that switches
// it from the first to the second, with no row of its own (HiGHS's
// presolve finds the same substitution, at a cost: 15–30 % of the
// solve at 10,000 trials).
func solveReducedMCKP(in *instance, s Settings, opts [][]option, lambda, best []float64, bound float64, inc decision, incVal float64) (decision, Status, error) {
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
	m := milp{absGap: s.RelGap * math.Max(1, math.Abs(bound))}
	cols := make([][]int, len(opts))
	capCols := make([][]int, len(in.types))
	capCoef := make([][]float64, len(in.types))
	reduced := func(j int, o option) float64 { return best[j] - (o.v - priceOf(lambda, o)) }
	// rhs is what the core's options and the idle nodes add up to per
	// type; a trial with two options takes the first, and one binary
	// column switches it to the second (no row for it: most of the core).
	rhs := append([]int(nil), left...)
	use := func(c int, o option, sign int) {
		if o.k > 0 {
			capCols[o.typ] = append(capCols[o.typ], c)
			capCoef[o.typ] = append(capCoef[o.typ], float64(sign*o.k))
		}
	}
	for _, j := range free {
		if list := opts[j]; len(list) == 2 {
			a, b := list[0], list[1]
			if a.k > 0 {
				rhs[a.typ] -= a.k
			}
			c := m.addBinary(reduced(j, a) - reduced(j, b))
			cols[j] = []int{-1, c}
			if a.k > 0 && b.k > 0 && a.typ == b.typ {
				capCols[a.typ] = append(capCols[a.typ], c)
				capCoef[a.typ] = append(capCoef[a.typ], float64(b.k-a.k))
			} else {
				use(c, b, 1)
				use(c, a, -1)
			}
			continue
		}
		ones := make([]float64, len(opts[j]))
		for i, o := range opts[j] {
			c := m.addBinary(-reduced(j, o))
			cols[j] = append(cols[j], c)
			ones[i] = 1
			use(c, o, 1)
		}
		m.addRow(1, cols[j], ones, 1)
	}
	for t := range in.types {
		if len(capCols[t]) > 0 {
			slack := m.addCol(-lambda[t], 0, float64(left[t]), false)
			m.addRow(float64(rhs[t]), append(capCols[t], slack), append(capCoef[t], 1), float64(rhs[t]))
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
		pick := 0
		for i, c := range cols[j] {
			if c >= 0 && on(sol.x, c) {
				pick = i
			}
		}
		o := opts[j][pick]
		d.counts[j], d.types[j] = o.k, max(o.typ, 0)
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

// pushHull adds option o (of a larger count than the last) to the upper
// concave hull of value over count kept in hull, dropping the points that
// fall on or below the chord to o.
func pushHull(hull []option, o option) []option {
	for len(hull) >= 2 {
		a, b := hull[len(hull)-2], hull[len(hull)-1]
		if (b.v-a.v)*float64(o.k-a.k) <= (o.v-a.v)*float64(b.k-a.k) {
			hull = hull[:len(hull)-1]
			continue
		}
		break
	}
	return append(hull, o)
}
