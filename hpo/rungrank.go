package hpo

import (
	"math"
	"slices"
)

// revisionRungRank is the revision from which ASHA and Hyperband tell a
// model-based sampler (tpe) each trial's result at the highest rung it
// reached, ranked as Optuna 3.1's TPESampler ranks a pruned trial: by the
// step it reached, furthest first, then by its value there.
//
// Before it, the sampler ranked every stopped trial by its last metric,
// whatever the budget it was measured at, and promotion ASHA told the
// sampler only each trial's first-rung metric. On learning curves that
// cross (fast starters that plateau high, slow starters that end lower) a
// first-rung metric favours the fast starters, so TPE proposed ever more
// of them (docs/benchmarks.md, issue 30).
const revisionRungRank = 3

// rungLearner is a sampler that can take a better result for a trial it
// has already observed: promotion ASHA tells it again when a trial it
// heard of at one rung pauses at a higher one. Samplers that do not learn
// from metrics, or do not implement it, are fed as before
// revisionRungRank.
type rungLearner interface {
	// relearn gives the oldest stopped observation whose metric is old
	// the metric metric, stopped or complete; false if there is none
	// (the sampler has forgotten it).
	relearn(old, metric float64, stopped bool) bool
}

// rungKey is the metric a sampler is told for a trial stopped or paused
// below the top at rung level level (0: before the first rung, 1 at the
// lowest budget, …), loss oriented lower is better: every level apart
// by 4 and, within a level, loss squashed into [−1, 1] by v/(1+|v|), so
// that the sampler's order of these metrics is Optuna's order of pruned
// trials, (level descending, loss ascending). The squash keeps order to
// about 1e-15 absolute, and relative 1e-8 at |loss| = 1e8: metrics
// closer than that tie, and the older ranks first, as with equal ones.
func rungKey(level int, loss float64) float64 {
	return loss/(1+math.Abs(loss)) - 4*float64(level)
}

// toldKey is rungKey in the sampler's orientation: its Mode.
func toldKey(mode string, level int, loss float64) float64 {
	k := rungKey(level, loss)
	if mode == "max" {
		return -k
	}
	return k
}

// relearn replaces the oldest stopped observation whose metric is old
// (observations in the order they ended: the trial told old first).
func (t *tpe) relearn(old, metric float64, stopped bool) bool {
	k := slices.IndexFunc(t.st.Stopped, func(i int32) bool { return t.st.Metrics[i] == old })
	if k < 0 {
		return false
	}
	i := t.st.Stopped[k]
	at := slices.Index(t.byMetric, i)
	t.byMetric = slices.Delete(t.byMetric, at, at+1)
	t.st.Metrics[i] = clamp(metric, -math.MaxFloat64, math.MaxFloat64)
	if !stopped {
		t.st.Stopped = slices.Delete(t.st.Stopped, k, k+1)
		t.stopped[i] = false
	}
	at, _ = slices.BinarySearchFunc(t.byMetric, i, t.cmpMetric)
	t.byMetric = slices.Insert(t.byMetric, at, i)
	return true
}

// budgetLevels are the levels of rung budgets: level j+1 for the j-th
// smallest of budgets (distinct within rungSlack).
func budgetLevels(budgets []float64) []float64 {
	var out []float64
	for _, b := range budgets {
		if !slices.ContainsFunc(out, func(x float64) bool { return math.Abs(x-b) <= b*rungSlack }) {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// levelOf is budget's level among levels (budgetLevels): its index + 1.
func levelOf(levels []float64, budget float64) int {
	return slices.IndexFunc(levels, func(x float64) bool { return math.Abs(x-budget) <= budget*rungSlack }) + 1
}
