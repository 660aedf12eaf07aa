package workflows

// The campaign's ranking: a report's progress and score, and the
// leaderboard the best values make.

import (
	"math"
	"sort"

	"github.com/gleaner-hpc/gleaner"
)

// progress is a report's progress in search.budget_unit.
func (c *campaign) progress(r TrialReport) float64 {
	switch c.spec.Search.BudgetUnit {
	case gleaner.BudgetSteps:
		return float64(r.Step)
	case gleaner.BudgetEpochs:
		return r.Epoch
	}
	return r.Samples
}

func (c *campaign) score(r TrialReport) (float64, bool) {
	v, ok := r.Metrics[c.spec.Objective.Metric]
	return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
}

func (c *campaign) ranked(trialID string) int {
	for j, e := range c.st.Leaderboard {
		if e.TrialID == trialID {
			return j
		}
	}
	return -1
}

// rank enters or updates the trial's score (its best value, and its
// latest) and keeps the top LeaderboardSize, best first; the campaign's
// best never gets worse.
func (c *campaign) rank(t InFlightTrial, score float64, state TrialState) {
	e := LeaderboardEntry{TrialID: t.TrialID, Number: t.Number, Params: t.Params, Score: score, Latest: score,
		State: state, Samples: t.Samples, Restarts: t.Restarts, Stage: t.Stage}
	if j := c.ranked(t.TrialID); j >= 0 {
		if !c.legacyBest && c.better(c.st.Leaderboard[j].Score, score) {
			e.Score = c.st.Leaderboard[j].Score
		}
		c.st.Leaderboard[j] = e
	} else {
		c.st.Leaderboard = append(c.st.Leaderboard, e)
	}
	if !c.legacyBest && (c.st.Best == nil || c.better(e.Score, c.st.Best.Score) || c.st.Best.TrialID == e.TrialID) {
		b := e
		c.st.Best = &b
	}
	lb, max := c.st.Leaderboard, c.spec.Objective.Mode == "max"
	sort.SliceStable(lb, func(i, j int) bool {
		if lb[i].Score != lb[j].Score {
			return (lb[i].Score > lb[j].Score) == max
		}
		return lb[i].Number < lb[j].Number
	})
	if len(lb) > LeaderboardSize {
		c.st.Leaderboard = lb[:LeaderboardSize]
	}
}

// better reports whether objective value a is strictly better than b.
func (c *campaign) better(a, b float64) bool {
	if c.spec.Objective.Mode == "max" {
		return a > b
	}
	return a < b
}
