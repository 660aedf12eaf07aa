package gleaner

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// The best of a campaign of several objectives or with constraints: its
// Pareto front under constrained domination and the front's hypervolume,
// computed here once for the campaign's status, its result and every
// window that shows them (docs/campaign-spec.md, "Several objectives and
// constraints").

// ParetoFront is a campaign's Pareto front: the trials no other
// dominates (rank 1), and their hypervolume.
type ParetoFront struct {
	// Trials are the front's trials, by the first objective's value (best
	// first), then by number.
	Trials []LeaderboardEntry `json:"trials"`
	// Size is how many trials the front holds (a memo snapshot may carry
	// fewer in Trials).
	Size int `json:"size"`
	// Thinned counts the trials the campaign dropped from the front, the
	// most crowded first, to keep it bounded (MaxParetoFront).
	Thinned int `json:"thinned,omitempty"`
	// Hypervolume is the volume of objective space the front's feasible
	// trials dominate, up to ReferencePoint (0 when none is feasible).
	Hypervolume float64 `json:"hypervolume"`
	// ReferencePoint has one value per objective, in its own units: the
	// spec's reference_point, or, with ReferenceDerived, one derived from
	// the front (hpo.Goals.ReferencePoint); nil when the front has no
	// feasible trial to derive one from.
	ReferencePoint   []float64 `json:"reference_point,omitempty"`
	ReferenceDerived bool      `json:"reference_derived,omitempty"`
}

// MaxParetoFront bounds the trials a campaign keeps on its front: each is
// a few hundred bytes of its state. Beyond, the most crowded is dropped
// (the smallest crowding distance), so the front's extremes stay.
const MaxParetoFront = 1000

// Goals is what dominance means for a campaign with these objectives and
// constraints.
func Goals(objectives []hpo.Objective, constraints []hpo.Constraint) hpo.Goals {
	return hpo.Config{Mode: objectives[0].Mode, Objectives: objectives, Constraints: constraints}.Goals()
}

// Result is the entry's values as hpo compares them: its Values, and a
// value per constraint (NaN where it reported none).
func (e LeaderboardEntry) Result(constraints []hpo.Constraint) hpo.Result {
	r := hpo.Result{Values: e.Values}
	if len(constraints) > 0 {
		r.Constraints = make([]float64, len(constraints))
		for i, c := range constraints {
			v, ok := e.Constraints[c.Metric]
			if !ok {
				v = math.NaN()
			}
			r.Constraints[i] = v
		}
	}
	return r
}

// NewParetoFront is the view of a campaign's front: its trials sorted,
// their hypervolume against ref (nil: derived from the front).
func NewParetoFront(objectives []hpo.Objective, constraints []hpo.Constraint, front []LeaderboardEntry, ref []float64, thinned int) *ParetoFront {
	g := Goals(objectives, constraints)
	f := &ParetoFront{Trials: slices.Clone(front), Size: len(front), Thinned: thinned, ReferencePoint: ref}
	if f.Trials == nil {
		f.Trials = []LeaderboardEntry{}
	}
	max := objectives[0].Mode == "max"
	slices.SortStableFunc(f.Trials, func(a, b LeaderboardEntry) int {
		if a.Infeasible != b.Infeasible {
			if a.Infeasible {
				return 1
			}
			return -1
		}
		c := cmp.Compare(first(a.Values), first(b.Values))
		if max {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.Number, b.Number))
	})
	rs := make([]hpo.Result, len(front))
	for i, e := range front {
		rs[i] = e.Result(constraints)
	}
	if f.ReferencePoint == nil {
		f.ReferencePoint, f.ReferenceDerived = g.ReferencePoint(rs), true
	}
	if f.ReferencePoint != nil {
		f.Hypervolume = g.Hypervolume(rs, f.ReferencePoint)
	}
	return f
}

func first(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return v[0]
}

// HypervolumeText says a front's hypervolume and where from, as every
// window says it: "hypervolume 0.42 at reference point (1, 50)", with
// " (derived)" when Gleaner derived the point, or "no feasible trial yet"
// when there is none to measure.
func (f *ParetoFront) HypervolumeText() string {
	if f.ReferencePoint == nil {
		return "hypervolume 0 (no feasible trial with every objective yet)"
	}
	pts := make([]string, len(f.ReferencePoint))
	for i, v := range f.ReferencePoint {
		pts[i] = fmt.Sprintf("%.6g", v)
	}
	text := fmt.Sprintf("hypervolume %.6g at reference point (%s)", f.Hypervolume, strings.Join(pts, ", "))
	if f.ReferenceDerived {
		text += " (derived)"
	}
	return text
}
