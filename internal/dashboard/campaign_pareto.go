package dashboard

import (
	"math"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// A campaign of several objectives or with constraints on its page: each
// row carries its objectives' values and whether it is feasible, as the
// campaign ranks it (workflows' resultOf: a report's values count once
// every objective is in it); the front itself is the status's Pareto,
// computed once for every window (gleaner.ParetoFront).

// rowValues sets a row's Values and Infeasible; nil for a campaign of
// one objective, whose rows have neither.
type rowValues struct {
	spec  SpecView
	goals hpo.Goals
}

func newRowValues(spec SpecView) *rowValues {
	if spec.Objectives == nil {
		return nil
	}
	return &rowValues{spec: spec, goals: gleaner.Goals(spec.Objectives, spec.Constraints)}
}

// set gives r trial t's latest complete result: every objective's value
// from its latest metrics (finite), and whether its constrained metrics
// keep their bounds (one it did not report breaks it).
func (v *rowValues) set(r *Row, t gleaner.TrialStatus) {
	if v == nil {
		return
	}
	values := make([]float64, len(v.spec.Objectives))
	for i, o := range v.spec.Objectives {
		x, ok := t.Metrics[o.Metric]
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		values[i] = x
	}
	e := gleaner.LeaderboardEntry{Values: values, Constraints: map[string]float64{}}
	for _, c := range v.spec.Constraints {
		if x, ok := t.Metrics[c.Metric]; ok && !math.IsNaN(x) {
			e.Constraints[c.Metric] = x
		}
	}
	r.Values, r.Infeasible = values, !v.goals.Feasible(e.Result(v.spec.Constraints))
}

// feasibleText is a row's feasibility in the export: yes, no, or empty
// before it has a result.
func feasibleText(r Row) string {
	switch {
	case r.Values == nil:
		return ""
	case r.Infeasible:
		return "no"
	}
	return "yes"
}
