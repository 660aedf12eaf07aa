package hpo

import (
	"cmp"
	"math"
	"slices"
)

// How motpe divides its observations and weighs l's (motpe's doc), after
// Optuna 3.1's _split_observation_pairs, _solve_hssp and
// _calculate_weights_below_for_multi_objective.

// hvEpsilon is Optuna's EPS: added to every hypervolume contribution, and
// an infeasible trial's weight in l, so that no kernel of l weighs 0.
const hvEpsilon = 1e-12

// selectBelow returns the nb observations l models, in no particular
// order: with constraints and at most nb feasible observations, the nb of
// least violation (older first among equals); otherwise, of the feasible
// ones, with one objective the nb best (older first among equals), with
// several the whole non-dominated fronts that fit and the next one cut by
// hssp. The slice is scratch, valid until the next call.
func (s *motpe) selectBelow(nb int) []int32 {
	sc := &s.scr
	sc.below = sc.below[:0]
	if nb <= 0 {
		return sc.below
	}
	cands := sc.order[:0]
	feasible := 0
	for i, v := range s.viol {
		if v == 0 {
			feasible++
		}
		cands = append(cands, int32(i))
	}
	sc.order = cands
	if feasible <= nb && feasible < len(cands) {
		slices.SortStableFunc(cands, func(a, b int32) int { return cmp.Compare(s.viol[a], s.viol[b]) })
		return append(sc.below, cands[:nb]...)
	}
	cands = slices.DeleteFunc(cands, func(i int32) bool { return s.viol[i] > 0 })
	if len(s.goals.Modes) == 1 {
		slices.SortStableFunc(cands, func(a, b int32) int { return cmp.Compare(s.loss[a][0], s.loss[b][0]) })
		return append(sc.below, cands[:nb]...)
	}
	// In lexicographic order a point's dominators all come before it, and
	// a point no member of its front dominates is dominated by no point
	// left (domination is transitive): one pass peels a front.
	slices.SortStableFunc(cands, func(a, b int32) int { return slices.Compare(s.loss[a], s.loss[b]) })
	rest := cands
	for len(sc.below) < nb {
		sc.front = sc.front[:0]
		k := 0
		for _, i := range rest {
			if slices.ContainsFunc(sc.front, func(j int32) bool { return dominatesMin(s.loss[j], s.loss[i]) }) {
				rest[k] = i
				k++
			} else {
				sc.front = append(sc.front, i)
			}
		}
		rest = rest[:k]
		if len(sc.below)+len(sc.front) <= nb {
			sc.below = append(sc.below, sc.front...)
			continue
		}
		slices.Sort(sc.front) // Optuna's order, which decides its ties
		sc.below = append(sc.below, s.hssp(sc.front, nb-len(sc.below))...)
	}
	return sc.below
}

// hssp picks k of the observations front (one non-dominated front) by
// greedy hypervolume subset selection: each step takes the point whose
// hypervolume contribution to those taken is largest (the first among
// equals), the reference point front's (hvReference). A point's
// contribution shrinks by the part of the box it shares with the point
// taken, the box of their componentwise maximum, that the others taken
// did not already cover — Optuna's _solve_hssp update, a 1−1/e
// approximation of the best subset.
func (s *motpe) hssp(front []int32, k int) []int32 {
	pts := s.scr.pts[:0]
	for _, i := range front {
		pts = append(pts, s.loss[i])
	}
	s.scr.pts = pts
	ref := hvReference(pts)
	contrib := make([]float64, len(front))
	for j, p := range pts {
		contrib[j] = hypervolumeMin([][]float64{p}, ref)
	}
	taken := make([]bool, len(front))
	var chosen []int32
	var sel [][]float64
	hv := 0.0
	for len(chosen) < k {
		best := -1
		for j := range front {
			if !taken[j] && (best < 0 || contrib[j] > contrib[best]) {
				best = j
			}
		}
		taken[best] = true
		for j, p := range pts {
			if taken[j] {
				continue
			}
			shared := make([]float64, len(p))
			for m := range p {
				shared[m] = max(p[m], pts[best][m])
			}
			contrib[j] -= hypervolumeMin(nondominatedMin(append(slices.Clone(sel), shared)), ref) - hv
		}
		sel = append(sel, pts[best])
		hv = hypervolumeMin(nondominatedMin(sel), ref)
		chosen = append(chosen, front[best])
	}
	return chosen
}

// contributionWeights appends to out the weights in l of the observations
// below (several objectives): a feasible one's hypervolume contribution
// to the feasible ones of below, plus hvEpsilon, over the largest such;
// 1 for a lone feasible one; hvEpsilon for an infeasible one.
func (s *motpe) contributionWeights(below []int32, out []float64) []float64 {
	var pts [][]float64
	for _, i := range below {
		if s.viol[i] == 0 {
			pts = append(pts, s.loss[i])
		}
	}
	w := make([]float64, len(pts))
	switch len(pts) {
	case 0:
	case 1:
		w[0] = 1
	default:
		ref := hvReference(pts)
		hv := hypervolumeMin(nondominatedMin(pts), ref)
		others := make([][]float64, 0, len(pts)-1)
		top := 0.0
		for j := range pts {
			others = append(append(others[:0], pts[:j]...), pts[j+1:]...)
			w[j] = hv - hypervolumeMin(nondominatedMin(others), ref) + hvEpsilon
			top = max(top, w[j])
		}
		for j := range w {
			w[j] = clamp(w[j]/top, 0, 1)
			if math.IsNaN(w[j]) { // values so large their volumes overflow
				w[j] = 1
			}
		}
	}
	k := 0
	for _, i := range below {
		if s.viol[i] == 0 {
			out = append(out, w[k])
			k++
		} else {
			out = append(out, hvEpsilon)
		}
	}
	return out
}

// hvReference is Optuna's reference point for the minimised points pts:
// their worst value per objective moved outward by a tenth of itself
// (max(1.1w, 0.9w)), ε where that is 0, so every point lies inside.
func hvReference(pts [][]float64) []float64 {
	ref := slices.Clone(pts[0])
	for _, p := range pts[1:] {
		for m := range p {
			ref[m] = max(ref[m], p[m])
		}
	}
	for m, w := range ref {
		ref[m] = max(1.1*w, 0.9*w)
		if ref[m] == 0 {
			ref[m] = hvEpsilon
		}
	}
	return ref
}
