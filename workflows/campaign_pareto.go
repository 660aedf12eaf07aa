package workflows

// A campaign of several objectives or with constraints (the spec's
// MultiObjective): each trial's result is a vector, its best is the
// Pareto front under constrained domination, and its leaderboard is
// ordered by non-dominated rank, then crowding. A campaign of one
// objective never comes here: its commands and state are as they were
// (campaign_rank.go), so that its recorded histories replay.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// multiGoals is what dominance means for the campaign; set only in a
// campaign of several objectives or with constraints.
type multiGoals struct {
	objectives  []hpo.Objective
	constraints []hpo.Constraint
	goals       hpo.Goals
}

func newMultiGoals(spec gleaner.CampaignSpec) *multiGoals {
	if !spec.MultiObjective() {
		return nil
	}
	objs := spec.ObjectiveList()
	return &multiGoals{objectives: objs, constraints: spec.Constraints, goals: gleaner.Goals(objs, spec.Constraints)}
}

// resultOf is the result a report's metrics carry: every objective's
// value (finite), and the constrained metrics it reported; ok is false
// when an objective is missing or not finite.
func (m *multiGoals) resultOf(metrics map[string]float64) (values []float64, cons map[string]float64, ok bool) {
	values = make([]float64, len(m.objectives))
	for i, o := range m.objectives {
		v, has := metrics[o.Metric]
		if !has || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, nil, false
		}
		values[i] = v
	}
	for _, c := range m.constraints {
		if v, has := metrics[c.Metric]; has && !math.IsNaN(v) {
			if cons == nil {
				cons = map[string]float64{}
			}
			cons[c.Metric] = v
		}
	}
	return values, cons, true
}

// result is an entry's hpo.Result.
func (m *multiGoals) result(e LeaderboardEntry) hpo.Result { return e.Result(m.constraints) }

// entry is a trial's leaderboard entry for a result.
func (m *multiGoals) entry(t InFlightTrial, values []float64, cons map[string]float64, state TrialState) LeaderboardEntry {
	e := LeaderboardEntry{TrialID: t.TrialID, Number: t.Number, Params: t.Params, Score: values[0], Latest: values[0],
		State: state, Samples: t.Samples, Restarts: t.Restarts, Stage: t.Stage, Values: values, Constraints: cons}
	e.Infeasible = !m.goals.Feasible(m.result(e))
	return e
}

// keep returns the entry to keep for a trial that had old and now
// reports e: its earlier result when that dominates the new one (as one
// objective's best never gets worse), with the new state and progress.
func (m *multiGoals) keep(old, e LeaderboardEntry) LeaderboardEntry {
	if m.goals.Dominates(m.result(old), m.result(e)) {
		old.Latest, old.State, old.Samples, old.Restarts, old.Stage = e.Latest, e.State, e.Samples, e.Restarts, e.Stage
		return old
	}
	return e
}

// rankMulti enters a trial's result in the leaderboard and the front.
func (c *campaign) rankMulti(t InFlightTrial, values []float64, cons map[string]float64, state TrialState) {
	m := c.multi
	e := m.entry(t, values, cons, state)
	if j := c.ranked(t.TrialID); j >= 0 {
		c.st.Leaderboard[j] = m.keep(c.st.Leaderboard[j], e)
	} else {
		c.st.Leaderboard = append(c.st.Leaderboard, e)
	}
	c.st.Leaderboard = m.order(c.st.Leaderboard)
	if len(c.st.Leaderboard) > LeaderboardSize {
		c.st.Leaderboard = c.st.Leaderboard[:LeaderboardSize]
	}
	c.offerFront(e)
}

// order sorts entries by non-dominated rank among them, then by
// crowding distance within a rank (the least crowded first), then by
// number, and sets each one's Rank (1: the front).
func (m *multiGoals) order(lb []LeaderboardEntry) []LeaderboardEntry {
	rs := make([]hpo.Result, len(lb))
	for i, e := range lb {
		rs[i] = m.result(e)
	}
	ranks := m.goals.Ranks(rs)
	crowd := make([]float64, len(lb))
	byRank := map[int][]int{}
	for i, r := range ranks {
		byRank[r] = append(byRank[r], i)
	}
	for r := 0; r < len(lb); r++ {
		idx, ok := byRank[r]
		if !ok {
			break
		}
		sub := make([]hpo.Result, len(idx))
		for k, i := range idx {
			sub[k] = rs[i]
		}
		for k, d := range m.goals.Crowding(sub) {
			crowd[idx[k]] = d
		}
	}
	order := make([]int, len(lb))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ranks[a], ranks[b]), cmp.Compare(crowd[b], crowd[a]), cmp.Compare(lb[a].Number, lb[b].Number))
	})
	out := make([]LeaderboardEntry, len(lb))
	for k, i := range order {
		out[k] = lb[i]
		out[k].Rank = ranks[i] + 1
	}
	return out
}

// offerFront enters a trial's entry in the front when no entry there
// dominates it, and drops those it dominates; the trial's own earlier
// entry gives way unless it dominates the new one. Beyond
// gleaner.MaxParetoFront the most crowded entry goes.
func (c *campaign) offerFront(e LeaderboardEntry) {
	m := c.multi
	if i := slices.IndexFunc(c.st.Front, func(f LeaderboardEntry) bool { return f.TrialID == e.TrialID }); i >= 0 {
		e = m.keep(c.st.Front[i], e)
		c.st.Front = slices.Delete(c.st.Front, i, i+1)
	}
	r := m.result(e)
	for _, f := range c.st.Front {
		if m.goals.Dominates(m.result(f), r) {
			return
		}
	}
	c.st.Front = slices.DeleteFunc(c.st.Front, func(f LeaderboardEntry) bool { return m.goals.Dominates(r, m.result(f)) })
	e.Rank = 1
	c.st.Front = append(c.st.Front, e)
	for len(c.st.Front) > gleaner.MaxParetoFront {
		rs := make([]hpo.Result, len(c.st.Front))
		for i, f := range c.st.Front {
			rs[i] = m.result(f)
		}
		d := m.goals.Crowding(rs)
		worst := 0
		for i := range d {
			if d[i] < d[worst] || d[i] == d[worst] && c.st.Front[i].Number > c.st.Front[worst].Number {
				worst = i
			}
		}
		c.st.Front = slices.Delete(c.st.Front, worst, worst+1)
		c.st.FrontThinned++
	}
}

// frontState sets the state of a trial's front entry (a trial that
// failed after reporting stays on the front, as one objective's best
// stays).
func (c *campaign) frontState(trialID string, state TrialState) {
	for i := range c.st.Front {
		if c.st.Front[i].TrialID == trialID {
			c.st.Front[i].State = state
		}
	}
}

// reportMulti takes in a running trial's report: a complete result is
// ranked and told to the searcher.
func (c *campaign) reportMulti(ctx workflow.Context, t *InFlightTrial, r TrialReport) {
	values, cons, ok := c.multi.resultOf(r.Metrics)
	if !ok {
		return
	}
	t.Values, t.Constraints = values, cons
	state := r.State
	if state == "" || state.Terminal() {
		state = TrialRunning
	}
	c.rankMulti(*t, values, cons, state)
	c.apply(ctx, hpo.Report(c.searcher, t.TrialID, c.progress(r), c.multi.result(LeaderboardEntry{Values: values, Constraints: cons})))
}

// finalResult is a trial's result at its end: its final report's, else
// its latest complete one; ok is false when it never had one (its values
// are then NaN, as the searcher wants them).
func (c *campaign) finalResult(t InFlightTrial, r TrialReport) (values []float64, cons map[string]float64, ok bool) {
	if values, cons, ok = c.multi.resultOf(r.Metrics); ok {
		return values, cons, true
	}
	if t.Values != nil {
		return t.Values, t.Constraints, true
	}
	return nil, nil, false
}

// finishMulti books a completed or stopped trial of a campaign of
// several objectives and returns what its searcher asks next.
func (c *campaign) finishMulti(t InFlightTrial, r TrialReport, outcome hpo.Outcome) []hpo.Action {
	values, cons, ok := c.finalResult(t, r)
	res := hpo.Result{Values: make([]float64, len(c.multi.objectives))}
	if ok {
		c.rankMulti(t, values, cons, r.State)
		res = c.multi.result(LeaderboardEntry{Values: values, Constraints: cons})
	} else {
		for i := range res.Values {
			res.Values[i] = math.NaN()
		}
		res = c.multi.result(LeaderboardEntry{Values: res.Values})
		if j := c.ranked(t.TrialID); j >= 0 {
			c.st.Leaderboard[j].State = r.State
		}
	}
	c.frontState(t.TrialID, r.State)
	if EndedWithoutObjective(r.State, ok, r.Metrics) {
		c.missedObjective(t, r)
	}
	if r.State == TrialCompleted && r.Resume != nil {
		p := ParkedTrial{TrialID: t.TrialID, Number: t.Number, Params: t.Params, Segment: t.Segment,
			Scored: ok, Resume: *r.Resume, Stage: t.Stage, Budget: t.Budget}
		if ok {
			p.Score = values[0] // the worst-first cap looks at the first objective
		}
		c.park(p)
	}
	return hpo.Finish(c.searcher, t.TrialID, res, outcome)
}

// pareto is the campaign's front as every window shows it, each trial's
// state classified by v.
func (c *campaign) pareto(v trialView) *gleaner.ParetoFront {
	front := make([]LeaderboardEntry, len(c.st.Front))
	for i, e := range c.st.Front {
		e.State, e.Stage = v.state(e.TrialID, e.State, e.Stage)
		front[i] = e
	}
	return gleaner.NewParetoFront(c.multi.objectives, c.multi.constraints, front, c.spec.ReferencePoint, c.st.FrontThinned)
}

// missedObjectivesWarning is missedObjectiveWarning for several
// objectives: a trial missed when no report of it carried them all.
func missedObjectivesWarning(objectives []hpo.Objective, m *MissedObjective, missing, finished int) string {
	if missing == 0 || m == nil {
		return ""
	}
	names := make([]string, len(objectives))
	for i, o := range objectives {
		names[i] = fmt.Sprintf("%q", o.Metric)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d finished trials never reported every objective metric (%s) in one report", missing, finished, strings.Join(names, ", "))
	if len(m.Trials) > 0 {
		more := ""
		if missing > len(m.Trials) {
			more = ", …"
		}
		fmt.Fprintf(&b, " (%s%s)", strings.Join(m.Trials, ", "), more)
	}
	if len(m.Metrics) == 0 {
		b.WriteString(" and reported no metrics at all: does the trainer append JSON lines to $GLEANER_REPORT_FILE? (see docs/protocol.md)")
		return b.String()
	}
	more := ""
	if m.MetricsCut {
		more = ", …"
	}
	fmt.Fprintf(&b, "; they reported: %s%s", strings.Join(m.Metrics, ", "), more)
	for _, o := range objectives {
		if i := slices.Index(m.Metrics, o.Metric); i < 0 {
			if s := SuggestMetric(o.Metric, m.Metrics); s != "" {
				fmt.Fprintf(&b, " (%s: did you mean %q?)", o.Metric, s)
			}
		}
	}
	if m.Silent > 0 {
		fmt.Fprintf(&b, "; %d reported no metrics at all", m.Silent)
	}
	return b.String()
}

// paretoView is the front with its trials' states classified, or nil in a
// campaign of one objective.
func (c *campaign) paretoView() *gleaner.ParetoFront {
	if c.multi == nil {
		return nil
	}
	return c.pareto(c.view())
}

// detailsPareto writes the UI's details of a campaign of several
// objectives: the front's size and hypervolume, then the top of the
// leaderboard with each objective's value.
func (c *campaign) detailsPareto(b *strings.Builder, s CampaignStatus, lb []LeaderboardEntry) {
	if f := s.Pareto; f != nil && f.Size > 0 {
		fmt.Fprintf(b, "**Pareto front:** %d trials · %s\n\n", f.Size, escapeMarkdown(f.HypervolumeText()))
	}
	if len(lb) == 0 {
		names := make([]string, len(c.multi.objectives))
		for i, o := range c.multi.objectives {
			names[i] = o.Metric
		}
		b.WriteString("No trial has reported " + escapeMarkdown(strings.Join(names, ", ")) + " yet.\n")
		return
	}
	b.WriteString("| # | trial | rank |")
	for _, o := range c.multi.objectives {
		fmt.Fprintf(b, " %s (%s) |", escapeMarkdown(o.Metric), o.Mode)
	}
	cons := len(c.multi.constraints) > 0
	if cons {
		b.WriteString(" feasible |")
	}
	b.WriteString(" state | samples | params |\n|---:|---|---:|")
	b.WriteString(strings.Repeat("---:|", len(c.multi.objectives)))
	if cons {
		b.WriteString("---|")
	}
	b.WriteString("---|---:|---|\n")
	for i, e := range lb {
		if i == detailsLeaderboardN {
			break
		}
		fmt.Fprintf(b, "| %d | %s | %d |", i+1, e.TrialID, e.Rank)
		for _, v := range e.Values {
			fmt.Fprintf(b, " %.6g |", v)
		}
		if cons {
			fmt.Fprintf(b, " %s |", feasibleText(e))
		}
		state := string(e.State)
		if e.Stage != "" {
			state += " (" + escapeMarkdown(e.Stage) + ")"
		}
		fmt.Fprintf(b, " %s | %.0f | %s |\n", state, e.Samples, strings.ReplaceAll(e.Params.Format(0), "|", `\|`))
	}
}

func feasibleText(e LeaderboardEntry) string {
	if e.Infeasible {
		return "no"
	}
	return "yes"
}
