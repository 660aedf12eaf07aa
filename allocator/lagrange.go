package allocator

import (
	"math"
	"sort"
)

// Several node types. The Lagrangian bound
//
//	L(λ) = Σ_t λ_t|N_t| + Σ_j max_o (v_j(o) − λ_{t(o)}·k(o)),   λ ≥ 0,
//
// is convex and piecewise linear in the K prices, and its minimum is the
// optimum of the LP relaxation of the MCKP (Lagrangian duality for a
// linear programme; Sinha & Zoltners 1979). Its minimiser λ* prices the
// nodes of each type so finely that taking every trial's best option at λ*
// nearly fills every type (an LP basic solution has at most K fractional
// trials), which is what the incumbent below is built from.

// maxCuttingPlanes bounds the iterations of cuttingPlanePrices: at 10,000
// trials and 4 types it converges in about 50.
const maxCuttingPlanes = 200

// cuttingPlanePrices minimises L(λ) by Kelley's cutting-plane method
// (Kelley, The cutting-plane method for solving convex programs, J. SIAM
// 1960): every evaluation at λ_i gives the linear piece of L active there,
// L(λ) ≥ L(λ_i) + g_i·(λ − λ_i) with g_i = |N| − (nodes the best options
// use), and the next λ minimises the maximum of the pieces so far, a small
// LP (K+1 columns, one row per piece) on HiGHS. Its optimum is a lower
// bound on min L, so the loop stops when the best L(λ) seen is within tol
// of it: λ is then the LP dual, up to tol. It returns the best λ and L(λ),
// evaluated here, so the bound is valid whatever the master's accuracy,
// and every λ it evaluated, in order (the last ones are near-optimal
// prices that break ties between options differently: roundings from them
// are other good incumbents). Should HiGHS fail on the master, it returns
// the best prices so far: any λ ≥ 0 gives a valid bound, a weaker one only
// leaves a larger core to solve.
//
// opts may be reduced to hullOptions: L(λ) is the same.
func cuttingPlanePrices(in *instance, opts [][]option, relTol float64) (lambdaBest []float64, bound float64, tried [][]float64) {
	K := len(in.types)
	// Above its highest slope (v(o) − v(0))/k(o), type t is worth nothing
	// to any trial and L grows with λ_t, so λ_t ∈ [0, upper_t].
	upper := make([]float64, K)
	for _, list := range opts {
		for _, o := range list[1:] {
			upper[o.typ] = math.Max(upper[o.typ], (o.v-list[0].v)/float64(o.k))
		}
	}
	lambda := make([]float64, K)
	for t := range lambda {
		lambda[t] = hullDual(opts, t, in.capacity[t])
	}
	g := make([]float64, K)
	best := lagrangeValue(in, opts, lambda, g)
	bestLambda := append([]float64(nil), lambda...)
	// The master in scaled units, z = L/scale and µ_t = λ_t/upper_t:
	//   max −z  s.t.  z − Σ_t (g_t·upper_t/scale)·µ_t ≥ (L_i − g_i·λ_i)/scale,
	//                 0 ≤ µ ≤ 1,
	// with L/scale = 10⁶ whatever the units of throughput, so that the
	// stopping tolerance (10⁻⁹·L: 10⁻³ here) is far above HiGHS's
	// feasibility tolerance (10⁻⁷ absolute).
	scale := 1e-6 * math.Abs(best)
	if scale == 0 {
		scale = 1
	}
	cost := make([]float64, K+1)
	lower := make([]float64, K+1)
	hi := make([]float64, K+1)
	cost[0], lower[0], hi[0] = -1, -inf, inf
	cols := make([]int, K+1)
	for t := range K {
		cols[t+1] = t + 1
		if upper[t] > 0 {
			hi[t+1] = 1
		}
	}
	master, err := newLPSession(cost, lower, hi)
	if err != nil {
		return bestLambda, best, nil
	}
	defer master.close()
	coef := make([]float64, K+1)
	l := best
	for range maxCuttingPlanes {
		a := l
		coef[0] = 1
		for t := range g {
			a -= g[t] * lambda[t]
			coef[t+1] = -g[t] * upper[t] / scale
		}
		if err := master.addRow(a/scale, cols, coef, inf); err != nil {
			break
		}
		x, obj, err := master.solve()
		if err != nil {
			break
		}
		if lower := -obj * scale; best-lower <= relTol*math.Abs(best) {
			break
		}
		for t := range lambda {
			lambda[t] = x[cols[t+1]] * upper[t]
		}
		tried = append(tried, append([]float64(nil), lambda...))
		if l = lagrangeValue(in, opts, lambda, g); l < best {
			best = l
			copy(bestLambda, lambda)
		}
	}
	return bestLambda, best, tried
}

// lagrangeValue returns L(λ) and writes its subgradient to g: the idle
// nodes of each type less those the trials' best options use.
func lagrangeValue(in *instance, opts [][]option, lambda, g []float64) float64 {
	total := 0.0
	for t, l := range lambda {
		total += l * float64(in.capacity[t])
		g[t] = float64(in.capacity[t])
	}
	for _, list := range opts {
		arg, b := bestAt(list, lambda)
		total += b
		if o := list[arg]; o.k > 0 {
			g[o.typ] -= float64(o.k)
		}
	}
	return total
}

// bestAt returns the index and the Lagrangian value v − λ·k of the best
// option of list at prices λ (the first of equals).
func bestAt(list []option, lambda []float64) (int, float64) {
	arg, b := 0, math.Inf(-1)
	for i, o := range list {
		if v := o.v - priceOf(lambda, o); v > b {
			arg, b = i, v
		}
	}
	return arg, b
}

// hullOptions keeps, of every trial's options, the zero option and the
// vertices of each type's upper concave hull of (k, v) from (0, v(0)):
// an option under the hull is never strictly best at any prices, so L(λ)
// over these is L(λ) over all, in fewer evaluations.
func hullOptions(opts [][]option, types int) [][]option {
	out := make([][]option, len(opts))
	var hull []option
	for j, list := range opts {
		keep := []option{list[0]}
		for t := 0; t < types; t++ {
			hull = append(hull[:0], list[0])
			for _, o := range list[1:] {
				if o.typ != t {
					continue
				}
				hull = pushHull(hull, o)
			}
			keep = append(keep, hull[1:]...)
		}
		out[j] = keep
	}
	return out
}

// lagrangeRound builds an incumbent from prices λ: every trial takes its
// best option at λ; where a type is then over its capacity, trials on it
// move to the option that costs least in Lagrangian value per node freed
// (another count, another type with room, or 0) until it fits; finally
// the greedy fills what is left. At the LP dual the first step fills
// every type but for the trials nearly tied between options (at most K
// are fractional in a basic LP solution, but near-ties break either way),
// and moving a tied trial costs almost nothing, so the result is within a
// few trials' worth of the LP bound.
func lagrangeRound(in *instance, opts [][]option, lambda []float64) decision {
	choice := make([]int, len(opts))
	used := make([]int, len(in.types))
	for j, list := range opts {
		choice[j], _ = bestAt(list, lambda)
		if o := list[choice[j]]; o.k > 0 {
			used[o.typ] += o.k
		}
	}
	type move struct {
		trial, to int
		ratio     float64
	}
	for over := overused(in, used); over >= 0; over = overused(in, used) {
		var moves []move
		for j, list := range opts {
			cur := list[choice[j]]
			if cur.k == 0 || cur.typ != over {
				continue
			}
			for i, o := range list {
				freed := cur.k
				if o.k > 0 && o.typ == over {
					freed -= o.k
				}
				if freed <= 0 {
					continue
				}
				loss := (cur.v - priceOf(lambda, cur)) - (o.v - priceOf(lambda, o))
				moves = append(moves, move{trial: j, to: i, ratio: loss / float64(freed)})
			}
		}
		sort.Slice(moves, func(a, b int) bool {
			if moves[a].ratio != moves[b].ratio {
				return moves[a].ratio < moves[b].ratio
			}
			if moves[a].trial != moves[b].trial {
				return moves[a].trial < moves[b].trial
			}
			return moves[a].to < moves[b].to
		})
		moved := make([]bool, len(opts))
		for _, mv := range moves {
			if used[over] <= in.capacity[over] {
				break
			}
			cur, o := opts[mv.trial][choice[mv.trial]], opts[mv.trial][mv.to]
			if moved[mv.trial] || (o.k > 0 && o.typ != over && used[o.typ]+o.k > in.capacity[o.typ]) {
				continue
			}
			moved[mv.trial] = true
			used[cur.typ] -= cur.k
			if o.k > 0 {
				used[o.typ] += o.k
			}
			choice[mv.trial] = mv.to
		}
	}
	d := newDecision(len(opts))
	for j, i := range choice {
		if o := opts[j][i]; o.k > 0 {
			d.counts[j], d.types[j] = o.k, o.typ
		}
	}
	return greedyFrom(in, d)
}

// overused returns a type whose nodes are over-used, or −1.
func overused(in *instance, used []int) int {
	for t, u := range used {
		if u > in.capacity[t] {
			return t
		}
	}
	return -1
}
