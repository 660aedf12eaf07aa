package workflows

// The campaign's trials: the searcher's actions carried out, trials
// started, their reports taken in and their ends booked.

import (
	"fmt"
	"math"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// apply carries out the searcher's actions.
func (c *campaign) apply(ctx workflow.Context, acts []hpo.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case hpo.Create:
			if !c.st.Stopping && !c.st.SearchDone {
				c.st.Pending = append(c.st.Pending, PendingTrial{Create: a})
			}
		case hpo.Continue:
			c.continueTrial(ctx, a)
		case hpo.Stop:
			if i := c.find(a.TrialID, ""); i >= 0 && c.inline != nil {
				c.inline.stopTrial(c.st.InFlight[i].WorkflowID)
			} else if i >= 0 && c.st.InFlight[i].Started {
				c.signal(ctx, c.st.InFlight[i].WorkflowID, Control{Action: ControlStop, Reason: "stopped by the searcher"})
			}
		case hpo.Shutdown:
			c.st.SearchDone, c.st.Pending = true, nil
			reason := "the searcher shut down"
			if a.Reason != "" {
				reason = "the searcher is done: " + a.Reason
			}
			if len(c.st.InFlight) > 0 {
				c.beginStop(ctx, CampaignCompleted, reason)
			} else if a.Reason != "" && !c.st.Stopping && !c.st.Paused {
				c.st.Reason = reason
			}
		default:
			panic(fmt.Sprintf("workflows: unknown searcher action %T", a))
		}
	}
	c.dirty = true
}

// continueTrial queues the next segment of a parked trial; a trial that
// is not parked (unknown, running, ended otherwise, or forgotten past
// MaxParked) comes back to the searcher as failed.
func (c *campaign) continueTrial(ctx workflow.Context, a hpo.Continue) {
	if c.st.Stopping || c.st.SearchDone {
		return
	}
	i := slices.IndexFunc(c.st.Parked, func(p ParkedTrial) bool { return p.TrialID == a.TrialID })
	if i < 0 {
		c.logger.Warn("the searcher continued a trial that is not paused at its budget", "trial", a.TrialID)
		c.apply(ctx, c.searcher.TrialFailed(a.TrialID))
		return
	}
	p := c.st.Parked[i]
	c.st.Parked = slices.Delete(c.st.Parked, i, i+1)
	if len(c.st.Parked) == 0 {
		c.st.Parked = nil
	}
	c.st.Pending = append(c.st.Pending, PendingTrial{
		Create:   hpo.Create{ID: p.TrialID, Params: p.Params, Budget: a.Budget, Stage: a.Stage},
		Continue: &p,
	})
}

// park keeps a trial that reached its budget for a Continue, forgetting
// the worst-scoring parked trial beyond MaxParked.
func (c *campaign) park(p ParkedTrial) {
	c.st.Parked = append(c.st.Parked, p)
	if len(c.st.Parked) <= MaxParked {
		return
	}
	max := c.spec.PrimaryObjective().Mode == "max"
	worst := 0
	for i, q := range c.st.Parked {
		w := c.st.Parked[worst]
		switch {
		case !q.Scored && w.Scored:
			worst = i
		case q.Scored && w.Scored && (q.Score > w.Score) != max && q.Score != w.Score:
			worst = i
		}
	}
	c.logger.Info("forgot a paused trial: more than MaxParked wait to be continued", "trial", c.st.Parked[worst].TrialID, "max", MaxParked)
	c.st.Parked = slices.Delete(c.st.Parked, worst, worst+1)
}

// dispatch starts pending trials while the window has room.
func (c *campaign) dispatch(ctx workflow.Context) {
	for !c.draining && !c.st.Paused && !c.st.Stopping && len(c.st.Pending) > 0 &&
		len(c.st.InFlight) < c.window() {
		cr := c.st.Pending[0]
		c.st.Pending = c.st.Pending[1:]
		if len(c.st.Pending) == 0 {
			c.st.Pending = nil
		}
		c.startTrial(ctx, cr)
	}
}

func (c *campaign) startTrial(ctx workflow.Context, pt PendingTrial) {
	cr := pt.Create
	n, seg := c.st.NextNumber, 1
	if p := pt.Continue; p != nil {
		// The next segment of a parked trial: its number, a new workflow;
		// its earlier segment's completion is now this one's outcome.
		n, seg = p.Number, p.Segment+1
		c.st.Counts.Completed--
		c.st.Counts.Continued++
	} else {
		c.st.NextNumber++
		c.st.Counts.Created++
	}
	t := InFlightTrial{TrialID: cr.ID, Number: n, WorkflowID: TrialSegmentWorkflowID(c.wfID, n, seg), Params: cr.Params,
		Stage: cr.Stage, Segment: seg, Budget: cr.Budget, State: TrialPending}
	c.st.TopBudget = max(c.st.TopBudget, cr.Budget)
	c.st.InFlight = append(c.st.InFlight, t)
	s := c.spec
	input := TrialInput{
		TrialID: t.TrialID, Number: n, CampaignID: s.Name, CampaignWorkflowID: c.wfID, Pool: s.Pool,
		Params: cr.Params, Command: s.Command, WorkDir: s.WorkDir, Env: s.Env,
		MinNodes: s.Resources.MinNodes, MaxNodes: s.Resources.MaxNodes, NodeType: s.Resources.NodeType,
		ObjectiveMetric: s.PrimaryObjective().Metric, GracePeriod: s.Trial.GracePeriod.Std(), MaxRestarts: s.Trial.MaxRestarts,
		RescaleUpCost: s.Trial.RescaleUpCost.Std(), RescaleDownCost: s.Trial.RescaleDownCost.Std(),
		Budget: cr.Budget, Stage: cr.Stage, From: cr.From, FromProgress: cr.FromProgress, ArchParam: archParam(s.Space), Weight: s.Resources.Weight,
		Model: s.Resources.Model, Batch: s.Resources.Batch,
	}
	if cr.Budget > 0 {
		input.BudgetUnit = s.Search.BudgetUnit
	}
	if c.in.Tuning != nil {
		input.ReportInterval = c.in.Tuning.ReportInterval
	}
	if p := pt.Continue; p != nil {
		st := p.Resume.Progress()
		input.State, input.Segment, input.Owner = &st, seg, p.Resume.Owner
		t.Samples, t.Restarts = p.Resume.Samples, p.Resume.Restarts
	}
	if c.inline != nil {
		c.st.InFlight[len(c.st.InFlight)-1].Started = true
		c.inline.start(ctx, t.WorkflowID, input)
		c.apply(ctx, c.searcher.TrialCreated(t.TrialID))
		return
	}
	summary := fmt.Sprintf("%s trial %s: %s", s.Name, t.TrialID, cr.Params.Format(0))
	if cr.Stage != "" {
		summary = fmt.Sprintf("%s trial %s (%s): %s", s.Name, t.TrialID, cr.Stage, cr.Params.Format(0))
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: t.WorkflowID,
		// Trials outlive the run that started them: continue-as-new closes it.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:         summary,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			GleanerCampaign.ValueSet(s.Name), GleanerKind.ValueSet(WorkflowKindTrial), GleanerTrial.ValueSet(t.TrialID),
			GleanerPool.ValueSet(s.Pool), GleanerStatus.ValueSet(string(TrialPending))),
	})
	fut := workflow.ExecuteChildWorkflow(cctx, TrialWorkflowName, input)
	c.pendingStarts++
	workflow.Go(ctx, func(ctx workflow.Context) {
		err := fut.GetChildWorkflowExecution().Get(ctx, nil)
		c.pendingStarts--
		c.dirty = true
		if err != nil {
			c.endTrial(ctx, t.WorkflowID, TrialReport{State: TrialFailed, Final: true, Error: "could not start: " + err.Error()})
			return
		}
		c.started(ctx, t.WorkflowID)
		// Within this run, a trial that dies without its final report (it
		// was terminated, or its workflow failed) still ends here.
		// A failed trial's workflow fails with its final report as the
		// error's details: whichever of the two arrives first counts.
		if err := fut.Get(ctx, nil); err != nil {
			r, ok := FailedTrialReport(err)
			if !ok {
				r = TrialReport{State: TrialFailed, Final: true, Error: err.Error()}
			}
			c.endTrial(ctx, t.WorkflowID, r)
		}
	})
}

func (c *campaign) started(ctx workflow.Context, workflowID string) {
	i := c.find("", workflowID)
	if i < 0 {
		return
	}
	t := &c.st.InFlight[i]
	t.Started = true
	id := t.TrialID
	switch {
	case c.st.Stopping:
		c.signal(ctx, workflowID, Control{Action: ControlStop, Reason: c.st.Reason})
	case c.st.Paused:
		c.signal(ctx, workflowID, Control{Action: ControlPause, Reason: c.st.Reason})
	}
	c.apply(ctx, c.searcher.TrialCreated(id))
}

// find returns the index of the in-flight trial with this workflow id (or,
// when that is empty, trial id), or -1.
func (c *campaign) find(trialID, workflowID string) int {
	for i, t := range c.st.InFlight {
		if (workflowID != "" && t.WorkflowID == workflowID) || (workflowID == "" && t.TrialID == trialID) {
			return i
		}
	}
	return -1
}

func (c *campaign) handleReport(ctx workflow.Context, r TrialReport) {
	c.dirty = true
	if r.Final {
		c.endTrial(ctx, r.WorkflowID, r)
		return
	}
	i := c.find(r.TrialID, r.WorkflowID)
	if i < 0 {
		c.logger.Warn("report from a trial not in flight ignored", "trial", r.TrialID, "workflow", r.WorkflowID)
		return
	}
	t := &c.st.InFlight[i]
	t.Samples, t.Restarts = r.Samples, r.Restarts
	if r.State != "" && !r.State.Terminal() {
		t.State = r.State
	}
	if c.multi != nil {
		c.reportMulti(ctx, t, r)
		return
	}
	if score, ok := c.score(r); ok {
		state := r.State
		if state == "" || state.Terminal() {
			state = TrialRunning
		}
		c.rank(*t, score, state)
		c.apply(ctx, c.searcher.TrialReported(t.TrialID, c.progress(r), score))
	}
}

// endTrial takes the trial out of flight on its final report (or its
// workflow's failure); later news of it is ignored.
func (c *campaign) endTrial(ctx workflow.Context, workflowID string, r TrialReport) {
	i := c.find(r.TrialID, workflowID)
	if i < 0 {
		return
	}
	t := c.st.InFlight[i]
	c.st.InFlight = append(c.st.InFlight[:i], c.st.InFlight[i+1:]...)
	if len(c.st.InFlight) == 0 {
		c.st.InFlight = nil
	}
	if r.Samples > t.Samples {
		t.Samples = r.Samples
	}
	if r.Restarts > t.Restarts {
		t.Restarts = r.Restarts
	}
	score, ok := c.score(r)
	var acts []hpo.Action
	switch r.State {
	case TrialCompleted, TrialStopped:
		outcome := hpo.OutcomeCompleted
		if r.State == TrialStopped {
			c.st.Counts.Stopped++
			outcome = hpo.OutcomeStopped
		} else {
			c.st.Counts.Completed++
		}
		if c.multi != nil {
			acts = c.finishMulti(t, r, outcome)
			break
		}
		metric := math.NaN()
		if ok {
			metric = score
			c.rank(t, score, r.State)
		} else if j := c.ranked(t.TrialID); j >= 0 {
			c.st.Leaderboard[j].State = r.State
		}
		if b := c.st.Best; b != nil && b.TrialID == t.TrialID {
			b.State = r.State
		}
		if EndedWithoutObjective(r.State, !r.ObjectiveMissing, r.Metrics) {
			c.missedObjective(t, r)
		}
		if r.State == TrialCompleted && r.Resume != nil {
			c.park(ParkedTrial{TrialID: t.TrialID, Number: t.Number, Params: t.Params, Segment: t.Segment,
				Score: score, Scored: ok, Resume: *r.Resume, Stage: t.Stage, Budget: t.Budget})
		}
		acts = c.searcher.TrialFinished(t.TrialID, metric, outcome)
	default: // TrialFailed, or a final report without a terminal state
		c.st.Counts.Failed++
		if b := c.st.Best; b != nil && b.TrialID == t.TrialID {
			b.State = TrialFailed // the best stays: it was reported
		}
		if c.multi != nil {
			c.frontState(t.TrialID, TrialFailed)
		}
		if j := c.ranked(t.TrialID); j >= 0 {
			c.st.Leaderboard = append(c.st.Leaderboard[:j], c.st.Leaderboard[j+1:]...)
		}
		c.logger.Warn("trial failed", "trial", t.TrialID, "error", r.Error)
		acts = c.searcher.TrialFailed(t.TrialID)
	}
	c.apply(ctx, acts)
	if c.st.Counts.Failed >= c.spec.Budget.MaxFailures {
		c.beginStop(ctx, CampaignFailed, fmt.Sprintf("budget.max_failures: %d trials failed (max %d)",
			c.st.Counts.Failed, c.spec.Budget.MaxFailures))
	}
	c.dirty = true
}

// missedObjective counts a trial that finished without ever reporting the
// objective metric. The campaign goes on (see docs/workflows-campaign.md):
// it warns in its status, its details and, once, its log.
func (c *campaign) missedObjective(t InFlightTrial, r TrialReport) {
	c.st.Counts.ObjectiveMissing++
	if c.st.Missed == nil {
		c.st.Missed = &MissedObjective{}
	}
	c.st.Missed.add(t.TrialID, r.Metrics)
	if c.st.Counts.ObjectiveMissing == 1 {
		c.logger.Warn("a trial finished without reporting the objective metric", "trial", t.TrialID,
			"objective", c.spec.PrimaryObjective().Metric, "warning", c.warnings()[0])
	}
}

// warnings are the campaign's warnings for a person (CampaignStatus.Warnings).
func (c *campaign) warnings() []string {
	if c.multi != nil {
		if w := missedObjectivesWarning(c.multi.objectives, c.st.Missed, c.st.Counts.ObjectiveMissing,
			c.st.Counts.Completed+c.st.Counts.Stopped); w != "" {
			return []string{w}
		}
		return nil
	}
	if w := missedObjectiveWarning(c.spec.Objective.Metric, c.st.Missed, c.st.Counts.ObjectiveMissing,
		c.st.Counts.Completed+c.st.Counts.Stopped); w != "" {
		return []string{w}
	}
	return nil
}
