package hpo

import (
	"math"
	"slices"
	"sort"
)

// Pareto dominance, non-dominated sorting, crowding distance and
// hypervolume: the one implementation behind the searchers for several
// objectives and every view that shows a Pareto front.

// Violation is r's total constraint violation under g: 0 when r is
// feasible, +Inf when it lacks a constrained value.
func (g Goals) Violation(r Result) float64 {
	total := 0.0
	for i, c := range g.Constraints {
		v := math.NaN()
		if i < len(r.Constraints) {
			v = r.Constraints[i]
		}
		total += c.Violation(v)
	}
	return total
}

// Feasible reports whether r meets every constraint.
func (g Goals) Feasible(r Result) bool { return g.Violation(r) == 0 }

// minimised returns r's values turned into minimisation (max objectives
// negated); a missing value is +Inf, worse than any reported one.
func (g Goals) minimised(r Result) []float64 {
	out := make([]float64, len(g.Modes))
	for i, m := range g.Modes {
		v := math.NaN()
		if i < len(r.Values) {
			v = r.Values[i]
		}
		switch {
		case math.IsNaN(v):
			out[i] = math.Inf(1)
		case m == "max":
			out[i] = -v
		default:
			out[i] = v
		}
	}
	return out
}

// Dominates reports whether a dominates b under constrained domination: a
// feasible result dominates an infeasible one; of two infeasible ones the
// smaller total violation dominates; of two feasible ones a dominates b
// when it is no worse in every objective and better in one.
func (g Goals) Dominates(a, b Result) bool {
	va, vb := g.Violation(a), g.Violation(b)
	if va != vb {
		return va < vb
	}
	if va > 0 { // equally infeasible
		return false
	}
	return dominatesMin(g.minimised(a), g.minimised(b))
}

func dominatesMin(a, b []float64) bool {
	better := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		if a[i] < b[i] {
			better = true
		}
	}
	return better
}

// Ranks returns each result's non-dominated rank under constrained
// domination (0: the Pareto front) by Deb et al.'s fast non-dominated
// sort, O(M·N²).
func (g Goals) Ranks(rs []Result) []int {
	n := len(rs)
	viol := make([]float64, n)
	mins := make([][]float64, n)
	for i, r := range rs {
		viol[i], mins[i] = g.Violation(r), g.minimised(r)
	}
	dom := func(a, b int) bool {
		if viol[a] != viol[b] {
			return viol[a] < viol[b]
		}
		return viol[a] == 0 && dominatesMin(mins[a], mins[b])
	}
	count := make([]int, n)     // how many dominate i
	beats := make([][]int32, n) // whom i dominates
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch {
			case dom(i, j):
				beats[i] = append(beats[i], int32(j))
				count[j]++
			case dom(j, i):
				beats[j] = append(beats[j], int32(i))
				count[i]++
			}
		}
	}
	rank := make([]int, n)
	var front []int
	for i := range rs {
		if count[i] == 0 {
			front = append(front, i)
		}
	}
	for r := 0; len(front) > 0; r++ {
		var next []int
		for _, i := range front {
			rank[i] = r
			for _, j := range beats[i] {
				if count[j]--; count[j] == 0 {
					next = append(next, int(j))
				}
			}
		}
		front = next
	}
	return rank
}

// Front returns the indices of the rank-0 results (the Pareto front), in
// input order.
func (g Goals) Front(rs []Result) []int {
	var out []int
	for i, r := range g.Ranks(rs) {
		if r == 0 {
			out = append(out, i)
		}
	}
	return out
}

// Crowding returns each result's crowding distance within rs (one front):
// the sum over objectives of the normalised gap between its neighbours;
// the extremes of each objective get +Inf (Deb et al., NSGA-II).
func (g Goals) Crowding(rs []Result) []float64 {
	n := len(rs)
	d := make([]float64, n)
	if n <= 2 {
		for i := range d {
			d[i] = math.Inf(1)
		}
		return d
	}
	mins := make([][]float64, n)
	for i, r := range rs {
		mins[i] = g.minimised(r)
	}
	idx := make([]int, n)
	for m := range g.Modes {
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return mins[idx[a]][m] < mins[idx[b]][m] })
		lo, hi := mins[idx[0]][m], mins[idx[n-1]][m]
		d[idx[0]], d[idx[n-1]] = math.Inf(1), math.Inf(1)
		span := hi - lo
		if span == 0 || math.IsInf(span, 0) || math.IsNaN(span) {
			continue
		}
		for k := 1; k < n-1; k++ {
			d[idx[k]] += (mins[idx[k+1]][m] - mins[idx[k-1]][m]) / span
		}
	}
	return d
}

// Hypervolume is the volume the feasible results with every value
// dominate, bounded by ref (a value per objective, in the objectives' own
// directions): the larger, the better the front. Results not strictly
// better than ref in every objective add nothing.
func (g Goals) Hypervolume(rs []Result, ref []float64) float64 {
	r := g.minimised(Result{Values: ref})
	var pts [][]float64
	for _, x := range rs {
		if !x.Complete() || !g.Feasible(x) {
			continue
		}
		p := g.minimised(x)
		inside := true
		for i := range p {
			if p[i] >= r[i] {
				inside = false
				break
			}
		}
		if inside {
			pts = append(pts, p)
		}
	}
	if len(r) > 3 {
		pts = nondominatedMin(pts) // fewer slices; below 4 the sweeps skip them
	}
	return hypervolumeMin(pts, r)
}

// nondominatedMin keeps the points no other point dominates (duplicates
// once).
func nondominatedMin(pts [][]float64) [][]float64 {
	var out [][]float64
	for i, p := range pts {
		keep := true
		for j, q := range pts {
			if j != i && (dominatesMin(q, p) || (j < i && slices.Equal(p, q))) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	return out
}

// hypervolumeMin is the exact hypervolume of minimisation points below
// ref (dominated ones add nothing): a sweep in two dimensions, slicing
// along the last objective above that (Zitzler's HSO): O(n log n) in two
// dimensions, O(n² log n) in three, for the fronts of up to 1,000 trials
// campaigns keep.
func hypervolumeMin(pts [][]float64, ref []float64) float64 {
	if len(pts) == 0 {
		return 0
	}
	d := len(ref)
	if d == 1 {
		best := pts[0][0]
		for _, p := range pts[1:] {
			best = math.Min(best, p[0])
		}
		return ref[0] - best
	}
	if d == 2 {
		s := slices.Clone(pts)
		slices.SortFunc(s, func(a, b []float64) int {
			if c := cmpFloat(a[0], b[0]); c != 0 {
				return c
			}
			return cmpFloat(a[1], b[1])
		})
		vol, prevY := 0.0, ref[1]
		for _, p := range s {
			if p[1] < prevY {
				vol += (ref[0] - p[0]) * (prevY - p[1])
				prevY = p[1]
			}
		}
		return vol
	}
	if d == 3 {
		return hypervolume3(pts, ref)
	}
	s := slices.Clone(pts)
	slices.SortFunc(s, func(a, b []float64) int { return cmpFloat(a[d-1], b[d-1]) })
	vol := 0.0
	for k := range s {
		top := ref[d-1]
		if k+1 < len(s) {
			top = s[k+1][d-1]
		}
		h := top - s[k][d-1]
		if h <= 0 {
			continue
		}
		proj := make([][]float64, k+1)
		for i := 0; i <= k; i++ {
			proj[i] = s[i][:d-1]
		}
		// Dominated projections add nothing and need no filtering: the
		// two-dimensional sweep skips them (O(k log k) a slice, so
		// O(n² log n) in three dimensions).
		vol += h * hypervolumeMin(proj, ref[:d-1])
	}
	return vol
}

// hypervolume3 is hypervolumeMin in three dimensions: the points taken in
// order of the third objective, each slab's area that of the staircase of
// the points below it, kept non-dominated and sorted by the first
// objective as points arrive: O(n²) at worst, milliseconds for 1,000.
func hypervolume3(pts [][]float64, ref []float64) float64 {
	s := slices.Clone(pts)
	slices.SortFunc(s, func(a, b []float64) int { return cmpFloat(a[2], b[2]) })
	var stair [][]float64 // x ascending, y descending
	area, vol := 0.0, 0.0
	for k, p := range s {
		// p is dominated in (x, y) by the step at or left of its x.
		i, _ := slices.BinarySearchFunc(stair, p[0], func(q []float64, x float64) int { return cmpFloat(q[0], x) })
		dominated := (i < len(stair) && stair[i][0] == p[0] && stair[i][1] <= p[1]) || (i > 0 && stair[i-1][1] <= p[1])
		if !dominated {
			j := i
			for j < len(stair) && stair[j][1] >= p[1] {
				j++ // the steps p dominates
			}
			stair = slices.Replace(stair, i, j, p[:2])
			area = 0
			prevY := ref[1]
			for _, q := range stair {
				area += (ref[0] - q[0]) * (prevY - q[1])
				prevY = q[1]
			}
		}
		top := ref[2]
		if k+1 < len(s) {
			top = s[k+1][2]
		}
		vol += area * (top - p[2])
	}
	return vol
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ReferencePoint derives a hypervolume reference point from results when
// the spec gives none: the worst feasible value of each objective, moved
// outward by a tenth of the objective's range (or by 1 when the range is
// 0), so the front's extremes count. Nil when no result is feasible and
// complete.
func (g Goals) ReferencePoint(rs []Result) []float64 {
	var lo, hi []float64
	for _, r := range rs {
		if !r.Complete() || !g.Feasible(r) {
			continue
		}
		p := g.minimised(r)
		if lo == nil {
			lo, hi = slices.Clone(p), slices.Clone(p)
			continue
		}
		for i := range p {
			lo[i], hi[i] = math.Min(lo[i], p[i]), math.Max(hi[i], p[i])
		}
	}
	if lo == nil {
		return nil
	}
	ref := make([]float64, len(hi))
	for i := range hi {
		margin := (hi[i] - lo[i]) / 10
		if margin == 0 {
			margin = 1
		}
		ref[i] = hi[i] + margin
		if g.Modes[i] == "max" {
			ref[i] = -ref[i]
		}
	}
	return ref
}
