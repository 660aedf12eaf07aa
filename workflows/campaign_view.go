package workflows

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// searchAttrValues are the campaign's search attributes as last upserted.
type searchAttrValues struct {
	status         string
	best           float64
	hasBest        bool
	hv             float64
	hasHV          bool
	ended, running int64
}

// publish upserts the search attributes that changed (all of them once per
// run) and refreshes the markdown details the UI shows.
func (c *campaign) publish(ctx workflow.Context) {
	now := searchAttrValues{status: string(c.phase()), ended: int64(c.st.Counts.Ended()), running: int64(len(c.st.InFlight))}
	if b := c.bestKept(); b != nil {
		now.best, now.hasBest = b.Score, true
	}
	if f := c.paretoView(); f != nil && f.ReferencePoint != nil {
		now.hv, now.hasHV = f.Hypervolume, true
	}
	var ups []temporal.SearchAttributeUpdate
	prev := c.sa
	if prev == nil {
		prev = &searchAttrValues{status: "\x00", ended: -1, running: -1}
		ups = append(ups, GleanerCampaign.ValueSet(c.spec.Name), GleanerKind.ValueSet(WorkflowKindCampaign))
	}
	// An inline campaign ends trials in most of its workflow tasks: its
	// search attributes and memo snapshot go out at most every
	// InlineCountsEvery, or when its status changes.
	if c.inline == nil || now.status != prev.status || workflow.Now(ctx).Sub(c.countsAt) >= InlineCountsEvery {
		if now.status != prev.status {
			ups = append(ups, GleanerStatus.ValueSet(now.status))
		}
		if now.hasBest && (!prev.hasBest || now.best != prev.best) {
			ups = append(ups, GleanerBestScore.ValueSet(now.best))
		}
		if now.hasHV && (!prev.hasHV || now.hv != prev.hv) {
			ups = append(ups, GleanerHypervolume.ValueSet(now.hv))
		}
		if now.ended != prev.ended {
			ups = append(ups, GleanerTrialsDone.ValueSet(now.ended))
		}
		if now.running != prev.running {
			ups = append(ups, GleanerTrialsRunning.ValueSet(now.running))
		}
	}
	if len(ups) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, ups...); err != nil {
			c.logger.Warn("search attributes not upserted", "error", err)
		}
		c.sa = &now
		c.countsAt = workflow.Now(ctx)
		if c.inline != nil {
			c.upsertSnapshot(ctx)
		}
	}
	// Details are workflow metadata, not history: refreshing them is free.
	workflow.SetCurrentDetails(ctx, c.details())
}

// details is the markdown the Temporal UI shows for the campaign: one
// summary line and the top of the leaderboard.
func (c *campaign) details() string {
	var b strings.Builder
	s := c.status()
	fmt.Fprintf(&b, "**%s** · %s · %d of %d trials ended (%d completed, %d stopped, %d failed) · %s",
		s.Campaign, s.State, s.Ended(), s.MaxTrials, s.Completed, s.Stopped, s.Failed, strings.Join(s.Census(), " · "))
	if s.Reason != "" {
		fmt.Fprintf(&b, " · %s", s.Reason)
	}
	b.WriteString("\n\n")
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "**Warning:** %s\n\n", escapeMarkdown(w))
	}
	lb := c.leaderboard()
	if c.multi != nil {
		c.detailsPareto(&b, s, lb)
		return b.String()
	}
	if len(lb) == 0 {
		b.WriteString("No trial has reported " + c.spec.Objective.Metric + " yet.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "| # | trial | %s (%s) | state | samples | params |\n|---:|---|---:|---|---:|---|\n",
		c.spec.Objective.Metric, c.spec.Objective.Mode)
	for i, e := range lb {
		if i == detailsLeaderboardN {
			break
		}
		state := string(e.State)
		if e.Stage != "" {
			state += " (" + escapeMarkdown(e.Stage) + ")"
		}
		fmt.Fprintf(&b, "| %d | %s | %.6g | %s | %.0f | %s |\n", i+1, e.TrialID, e.Score, state, e.Samples,
			strings.ReplaceAll(e.Params.Format(0), "|", `\|`))
	}
	return b.String()
}

// escapeMarkdown keeps text the trainers chose (metric names) from turning
// into markup, links or HTML in the UI.
var escapeMarkdown = strings.NewReplacer(`\`, `\\`, "_", `\_`, "*", `\*`, "`", "\\`", "|", `\|`,
	"<", `\<`, "[", `\[`).Replace

// capSnapshot drops the status's trial briefs, those of trials holding no
// nodes (parked, stopped at their rung) first, then the Pareto front's
// trials past the first ten, then leaderboard entries, worst first, then
// the rest of the front, until the snapshot's JSON is at most limit bytes (the
// counts stay whole). Only a client that cannot wait for the campaign
// reads the snapshot; a query answers in full.
func capSnapshot(s CampaignSnapshot, limit int) CampaignSnapshot {
	if jsonSize(s) <= limit {
		return s
	}
	briefs := slices.Clone(s.Status.Trials)
	idle := func(b TrialBrief) bool {
		return b.State == TrialParked || b.State == TrialAtRung || b.State == TrialCompleted
	}
	slices.SortStableFunc(briefs, func(a, b TrialBrief) int { // in flight first
		switch {
		case idle(a) == idle(b):
			return 0
		case idle(a):
			return 1
		}
		return -1
	})
	// Keep as many as fit at their average size, then one fewer at a
	// time while still over: a few encodings, not one per brief.
	full := jsonSize(s)
	s.Status.Trials = nil
	base := jsonSize(s)
	keep := 0
	if n := len(briefs); n > 0 && limit > base {
		keep = min(n, (limit-base)*n/max(1, full-base))
	}
	for s.Status.Trials = briefs[:keep]; keep > 0 && jsonSize(s) > limit; s.Status.Trials = briefs[:keep] {
		keep--
	}
	if keep == 0 {
		s.Status.Trials = nil
	}
	if f := s.Status.Pareto; f != nil && len(f.Trials) > 0 && jsonSize(s) > limit {
		// The front's trials, past the first few, before the leaderboard.
		p := *f
		for len(p.Trials) > detailsLeaderboardN && jsonSize(s) > limit {
			p.Trials = p.Trials[:max(detailsLeaderboardN, len(p.Trials)/2)]
			s.Status.Pareto = &p
		}
	}
	for len(s.Leaderboard) > 0 && jsonSize(s) > limit {
		s.Leaderboard = s.Leaderboard[:len(s.Leaderboard)-1]
	}
	for f := s.Status.Pareto; f != nil && len(f.Trials) > 0 && jsonSize(s) > limit; f = s.Status.Pareto {
		p := *f
		p.Trials = p.Trials[:len(p.Trials)-1]
		s.Status.Pareto = &p
	}
	return s
}

// jsonSize is the length of v as JSON (0 when it cannot be encoded):
// deterministic, so workflow code may decide on it.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// MemoSnapshotMax bounds the snapshot in the memo, as JSON: Temporal
// refuses a memo over 32 KB (limit.memoSize.error) and fails the workflow
// task that upserts it, so large parameters (a NAS architecture) cost
// leaderboard entries, never the campaign.
const MemoSnapshotMax = 16 << 10

func (c *campaign) upsertSnapshot(ctx workflow.Context) {
	snap := CampaignSnapshot{Status: c.status()}
	snap.Status.AsOf = workflow.Now(ctx)
	lb := c.leaderboard()
	snap.Leaderboard = lb[:min(len(lb), detailsLeaderboardN)]
	snap = capSnapshot(snap, MemoSnapshotMax)
	if err := workflow.UpsertMemo(ctx, map[string]any{MemoSnapshot: snap}); err != nil {
		c.logger.Warn("memo not upserted", "error", err)
	}
}

// ownState is an in-flight trial's own state: an inline trial's as its
// campaign runs it, a trial workflow's as it last reported.
func (c *campaign) ownState(t InFlightTrial) TrialState {
	if c.inline != nil {
		if i := c.inline.find(t.WorkflowID); i >= 0 {
			return c.inline.st().Trials[i].Progress.State
		}
	}
	if t.State == "" {
		return TrialRunning // a state from before trials reported theirs
	}
	return t.State
}

// trialView classifies the campaign's trials (ClassifyTrial): one place
// for the counts, the briefs, the leaderboard's states and the details.
type trialView struct {
	c        *campaign
	phase    CampaignPhase
	inFlight map[string]InFlightTrial
	parked   map[string]ParkedTrial
}

func (c *campaign) view() trialView {
	v := trialView{c: c, phase: c.phase(), inFlight: make(map[string]InFlightTrial, len(c.st.InFlight)),
		parked: make(map[string]ParkedTrial, len(c.st.Parked))}
	for _, t := range c.st.InFlight {
		v.inFlight[t.TrialID] = t
	}
	for _, p := range c.st.Parked {
		v.parked[p.TrialID] = p
	}
	return v
}

// state is what a person is shown for trial id, whose own (or last
// known) state is own, and the stage it is shown with.
func (v trialView) state(id string, own TrialState, stage string) (TrialState, string) {
	f := TrialFacts{Campaign: v.phase, SearchDone: v.c.st.SearchDone}
	if t, ok := v.inFlight[id]; ok {
		f.InFlight, own, stage = true, v.c.ownState(t), t.Stage
	} else if p, ok := v.parked[id]; ok {
		f.Parked, stage = true, p.Stage
		f.Final = p.Budget <= 0 || p.Budget >= v.c.topBudget()*(1-budgetSlack)
	}
	return ClassifyTrial(own, f), stage
}

// topBudget is the search's top budget: its settings' max_budget when the
// spec sets one (hpo.Settings.TopBudget), else the largest budget a
// segment was given so far.
func (c *campaign) topBudget() float64 {
	if b := c.spec.Search.Settings.TopBudget(); b > 0 {
		return b
	}
	return c.st.TopBudget
}

// leaderboard is the leaderboard with each entry's state as classified.
func (c *campaign) leaderboard() []LeaderboardEntry {
	v := c.view()
	out := make([]LeaderboardEntry, len(c.st.Leaderboard))
	for i, e := range c.st.Leaderboard {
		e.State, e.Stage = v.state(e.TrialID, e.State, e.Stage)
		out[i] = e
	}
	return out
}

// best is the best value any trial reported (it never gets worse), with
// its trial's state as classified.
func (c *campaign) best() *LeaderboardEntry { return c.bestIn(c.view()) }

// bestIn is best with the trial's state classified by v.
func (c *campaign) bestIn(v trialView) *LeaderboardEntry {
	b := c.bestKept()
	if b == nil {
		return nil
	}
	e := *b
	e.State, e.Stage = v.state(e.TrialID, e.State, e.Stage)
	return &e
}

// bestKept is the best entry as the campaign keeps it, its state not
// classified (the search attribute needs only its score).
func (c *campaign) bestKept() *LeaderboardEntry {
	if c.multi != nil {
		return nil // its best is its front (paretoView)
	}
	if (c.st.Best == nil || c.legacyBest) && len(c.st.Leaderboard) > 0 {
		return &c.st.Leaderboard[0] // a state from before Best was kept
	}
	return c.st.Best
}

// trialMode says how this run runs its trials (CampaignStatus.TrialMode).
func (c *campaign) trialMode() string {
	switch {
	case c.inline == nil:
		return "workflow"
	case c.inline.pipe == nil:
		return "inline"
	}
	return fmt.Sprintf("inline, pipelined %d deep", c.inline.pipe.depth)
}

// status counts and lists the trials by their classified state.
func (c *campaign) status() CampaignStatus {
	b := c.spec.Budget
	s := CampaignStatus{
		Campaign: c.spec.Name, State: c.phase(), Reason: c.st.Reason, CampaignCounts: c.st.Counts,
		Pending:   len(c.st.Pending),
		MaxTrials: b.MaxTrials, MaxConcurrent: b.MaxConcurrent, MaxFailures: b.MaxFailures,
		Progress: c.searcher.Progress(), Objective: c.spec.Objective.Metric, Mode: c.spec.Objective.Mode,
		Runs: c.st.Runs, WarmStarted: c.st.WarmStarted, Warnings: c.warnings(), TrialMode: c.trialMode(),
	}
	v := c.view()
	s.Best = c.bestIn(v)
	if c.multi != nil {
		s.Objectives, s.Constraints, s.Pareto = c.multi.objectives, c.multi.constraints, c.pareto(v)
		s.Objective, s.Mode = c.multi.objectives[0].Metric, c.multi.objectives[0].Mode
	}
	add := func(id, wfID string, own TrialState, stage string) {
		st, stage := v.state(id, own, stage)
		switch st {
		case TrialRunning:
			s.Running++
		case TrialPending:
			s.Waiting++
		case TrialPaused:
			s.Paused++
		case TrialParked:
			s.Parked++
		case TrialAtRung:
			s.AtRung++
		}
		s.Trials = append(s.Trials, TrialBrief{TrialID: id, WorkflowID: wfID, State: st, Stage: stage})
	}
	for _, t := range c.st.InFlight {
		add(t.TrialID, t.WorkflowID, t.State, t.Stage)
	}
	for _, p := range c.st.Parked {
		add(p.TrialID, TrialSegmentWorkflowID(c.wfID, p.Number, max(p.Segment, 1)), TrialCompleted, p.Stage)
	}
	for _, p := range c.st.Pending {
		if p.Continue != nil { // a parked trial's next segment, queued to start
			s.Trials = append(s.Trials, TrialBrief{TrialID: p.ID, State: TrialPending, Stage: p.Stage})
		}
	}
	slices.SortFunc(s.Trials, func(a, b TrialBrief) int {
		return cmp.Or(cmp.Compare(len(a.TrialID), len(b.TrialID)), cmp.Compare(a.TrialID, b.TrialID))
	})
	return s
}
