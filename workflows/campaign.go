package workflows

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// CampaignWorkflow runs a campaign: it asks its searcher for trials, starts
// each as a child TrialWorkflow (at most max_concurrent in flight), feeds
// the searcher what the trials report through SignalTrialReport, keeps the
// leaderboard, and continues as new with a compact CampaignState long
// before Temporal's history limits.
func CampaignWorkflow(ctx workflow.Context, in CampaignInput) (CampaignResult, error) {
	c, err := newCampaign(ctx, in)
	if err != nil {
		return CampaignResult{}, err
	}
	return c.run(ctx)
}

type campaign struct {
	in        CampaignInput
	spec      gleaner.CampaignSpec
	wfID      string
	threshold int
	searcher  hpo.Searcher
	fresh     bool
	st        CampaignState
	reports   workflow.ReceiveChannel
	logger    interface {
		Info(string, ...interface{})
		Warn(string, ...interface{})
	}

	pendingStarts, pendingSignals int
	draining, finished            bool
	// dirty wakes the main loop after a handler or a goroutine changed state.
	dirty bool
	sa    *searchAttrValues
	// inline runs the trials of a trial.inline campaign (nil otherwise);
	// assignments are the pool's to it, out its signals to the pool.
	inline      *inliner
	assignments workflow.ReceiveChannel
	out         outbox
	countsAt    time.Time // when the counts last went to visibility
	// legacyBest: a run recorded before "best-never-worse" ranks trials
	// by their latest value and takes the leaderboard's first as its
	// best, as it did then (its search attribute upserts depend on it).
	legacyBest bool
}

// searchRevision is the revision of the searchers' rules (hpo.Revision) a
// new campaign is created under and keeps, through every continue-as-new.
// A campaign first run before revisions were recorded is revision 0.
func searchRevision(ctx workflow.Context) int {
	v := workflow.GetVersion(ctx, "searcher-revision", workflow.DefaultVersion, hpo.Revision)
	if v == workflow.DefaultVersion {
		return 0
	}
	return int(v)
}

func newCampaign(ctx workflow.Context, in CampaignInput) (*campaign, error) {
	spec := in.Spec.WithDefaults()
	// The spec is validated at submission and by the campaign's first run;
	// a run continued as new trusts it, so that a rule tightened since
	// does not fail a running campaign. Runs recorded before validated
	// every run.
	if in.State == nil || workflow.GetVersion(ctx, "validate-first-run-only", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		if err := spec.Validate(); err != nil {
			return nil, temporal.NewNonRetryableApplicationError("invalid campaign spec: "+err.Error(), ErrTypeInvalidSpec, err)
		}
	}
	cfg := spec.SearchConfig()
	c := &campaign{
		in: in, spec: spec, wfID: workflow.GetInfo(ctx).WorkflowExecution.ID,
		threshold: in.HistoryThreshold, logger: workflow.GetLogger(ctx),
	}
	if c.threshold <= 0 {
		c.threshold = DefaultCampaignHistoryThreshold
	}
	c.legacyBest = workflow.GetVersion(ctx, "best-never-worse", workflow.DefaultVersion, 1) == workflow.DefaultVersion
	pipelined := pipelineVersion(ctx, spec) // campaign_pipeline.go
	if pipelined {
		cfg.MaxConcurrent = 2 * spec.Budget.MaxConcurrent
	}
	var err error
	if in.State == nil {
		c.fresh = true
		c.st.NextNumber = 1
		if len(spec.Search.WarmStart) > 0 {
			if cfg.History, err = c.warmStart(ctx); err != nil {
				return nil, err
			}
		}
		c.st.SearchRevision = searchRevision(ctx)
		cfg.Revision = c.st.SearchRevision
		c.searcher, err = hpo.NewSearcher(cfg)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError("invalid campaign spec: search: "+err.Error(), ErrTypeInvalidSpec, err)
		}
		if spec.Trial.Inline {
			c.inline = newInliner(c, pipelined)
		}
		return c, nil
	}
	c.st = *in.State
	cfg.Revision = c.st.SearchRevision
	c.searcher, err = hpo.RestoreSearcher(cfg, c.st.Searcher)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError("invalid campaign state: "+err.Error(), ErrTypeBadState, err)
	}
	if spec.Trial.Inline {
		c.inline = newInliner(c, pipelined)
	}
	return c, nil
}

// warmStart reads the finished trials of search.warm_start's campaigns
// (activity WarmStart) for the searcher's history. It runs once, before
// the searcher exists; the searcher's snapshot keeps what it learnt.
func (c *campaign) warmStart(ctx workflow.Context) ([]hpo.Observation, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5, NonRetryableErrorTypes: []string{ErrTypeInvalidSpec}},
	})
	var res WarmStartResult
	in := WarmStartInput{Campaigns: c.spec.Search.WarmStart, Metric: c.spec.Objective.Metric, Space: c.spec.Space}
	if err := workflow.ExecuteActivity(actx, WarmStartActivityName, in).Get(ctx, &res); err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) && app.Type() == ErrTypeInvalidSpec {
			return nil, temporal.NewNonRetryableApplicationError("invalid campaign spec: "+app.Message(), ErrTypeInvalidSpec, err)
		}
		return nil, fmt.Errorf("warm start from %v: %w", c.spec.Search.WarmStart, err)
	}
	c.st.WarmStarted = len(res.Observations)
	c.logger.Info("warm start", "campaigns", c.spec.Search.WarmStart, "taken", res.Taken, "skipped", res.Skipped)
	return res.Observations, nil
}

func (c *campaign) run(ctx workflow.Context) (CampaignResult, error) {
	if err := c.registerHandlers(ctx); err != nil {
		return CampaignResult{}, err
	}
	c.reports = workflow.GetSignalChannel(ctx, SignalTrialReport)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var r TrialReport
			c.reports.Receive(ctx, &r)
			c.handleReport(ctx, r)
		}
	})
	if c.inline != nil {
		c.inline.listen(ctx)
	}
	if c.fresh {
		c.apply(ctx, c.searcher.Initial())
	}
	for {
		c.dispatch(ctx)
		if c.inline != nil {
			c.inline.step(ctx)
		}
		c.publish(ctx)
		if c.done() {
			break
		}
		if c.shouldContinueAsNew(ctx) {
			if err := c.drain(ctx); err != nil {
				return CampaignResult{}, err
			}
			if !c.done() {
				return CampaignResult{}, c.continueAsNew(ctx)
			}
			break
		}
		c.dirty = false
		if err := workflow.Await(ctx, func() bool { return c.dirty || c.shouldContinueAsNew(ctx) }); err != nil {
			return CampaignResult{}, err
		}
	}
	if c.inline != nil {
		c.inline.close(ctx)
	}
	if err := workflow.Await(ctx, func() bool {
		return c.pendingSignals == 0 && c.pendingStarts == 0 && workflow.AllHandlersFinished(ctx)
	}); err != nil {
		return CampaignResult{}, err
	}
	if err := c.out.drain(ctx); err != nil {
		c.logger.Warn("a signal to the pool was not delivered", "error", err)
	}
	c.finished = true
	if !c.st.Stopping {
		c.st.End = CampaignCompleted
		if !c.st.SearchDone {
			c.st.Reason = "the searcher has nothing more to run"
		}
	}
	c.publish(ctx)
	res := c.result()
	if res.State == CampaignFailed {
		return CampaignResult{}, temporal.NewNonRetryableApplicationError(res.Reason, ErrTypeMaxFailures, nil, res)
	}
	return res, nil
}

func (c *campaign) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (CampaignStatus, error) { return c.status(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryTrials, func() ([]TrialStatus, error) {
		if c.inline == nil {
			return nil, nil
		}
		return c.inline.trials(), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, QueryLeaderboard, func() ([]LeaderboardEntry, error) {
		return c.leaderboard(), nil
	}); err != nil {
		return err
	}
	type handler struct {
		name     string
		validate func() error
		apply    func(workflow.Context, ControlRequest)
	}
	for _, h := range []handler{
		{UpdatePause, c.validatePause, c.pause},
		{UpdateResume, c.validateResume, c.resume},
		{UpdateStop, c.validateStop, c.stop},
	} {
		err := workflow.SetUpdateHandlerWithOptions(ctx, h.name,
			func(ctx workflow.Context, req ControlRequest) (CampaignStatus, error) {
				h.apply(ctx, req)
				c.dirty = true
				return c.status(), nil
			},
			workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req ControlRequest) error { return h.validate() }})
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *campaign) validatePause() error {
	switch c.phase() {
	case CampaignPaused:
		return fmt.Errorf("campaign %s is already paused", c.spec.Name)
	case CampaignRunning:
		return nil
	}
	return fmt.Errorf("campaign %s cannot pause: it is %s", c.spec.Name, c.phase())
}

func (c *campaign) validateResume() error {
	switch c.phase() {
	case CampaignRunning:
		return fmt.Errorf("campaign %s is not paused: it is running", c.spec.Name)
	case CampaignPaused:
		return nil
	}
	return fmt.Errorf("campaign %s cannot resume: it is %s", c.spec.Name, c.phase())
}

func (c *campaign) validateStop() error {
	switch c.phase() {
	case CampaignRunning, CampaignPaused:
		return nil
	case CampaignStopping:
		return fmt.Errorf("campaign %s is already stopping", c.spec.Name)
	}
	return fmt.Errorf("campaign %s has already ended: it is %s", c.spec.Name, c.phase())
}

func (c *campaign) pause(ctx workflow.Context, req ControlRequest) {
	c.st.Paused, c.st.Reason = true, reasonOr(req.Reason, "paused by request")
	c.broadcast(ctx, Control{Action: ControlPause, Reason: c.st.Reason})
}

func (c *campaign) resume(ctx workflow.Context, req ControlRequest) {
	c.st.Paused, c.st.Reason = false, ""
	c.broadcast(ctx, Control{Action: ControlResume, Reason: req.Reason})
}

func (c *campaign) stop(ctx workflow.Context, req ControlRequest) {
	c.beginStop(ctx, CampaignStopped, reasonOr(req.Reason, "stopped by request"))
}

func reasonOr(reason, def string) string {
	if reason != "" {
		return reason
	}
	return def
}

// beginStop stops every in-flight trial; the campaign ends as end once the
// last has reported.
func (c *campaign) beginStop(ctx workflow.Context, end CampaignPhase, reason string) {
	if c.st.Stopping {
		return
	}
	c.st.Stopping, c.st.Paused, c.st.End, c.st.Reason, c.st.Pending = true, false, end, reason, nil
	c.broadcast(ctx, Control{Action: ControlStop, Reason: reason})
}

// broadcast sends ctl to every started in-flight trial; trials still
// starting get the campaign's current control once they have started.
func (c *campaign) broadcast(ctx workflow.Context, ctl Control) {
	if c.inline != nil {
		c.dirty = true // inline trials follow the campaign's state (inliner.step)
		return
	}
	for _, t := range c.st.InFlight {
		if t.Started {
			c.signal(ctx, t.WorkflowID, ctl)
		}
	}
}

func (c *campaign) signal(ctx workflow.Context, workflowID string, ctl Control) {
	c.pendingSignals++
	f := workflow.SignalExternalWorkflow(ctx, workflowID, "", SignalControl, ctl)
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { c.pendingSignals--; c.dirty = true }()
		err := f.Get(ctx, nil)
		if err == nil {
			return
		}
		// The trial's workflow has closed. A trial sends its final report
		// before it closes, so that report is already here: handle what
		// has arrived, and a trial still in flight after that is lost (it
		// was terminated, or belonged to an earlier run and failed).
		var r TrialReport
		for c.reports.ReceiveAsync(&r) {
			c.handleReport(ctx, r)
			r = TrialReport{}
		}
		if c.find("", workflowID) >= 0 {
			c.endTrial(ctx, workflowID, TrialReport{State: TrialFailed, Final: true,
				Error: fmt.Sprintf("trial workflow closed without a final report (%s not delivered: %v)", ctl.Action, err)})
		}
	})
}

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
	max := c.spec.Objective.Mode == "max"
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
		ObjectiveMetric: s.Objective.Metric, GracePeriod: s.Trial.GracePeriod.Std(), MaxRestarts: s.Trial.MaxRestarts,
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
	summary := fmt.Sprintf("%s trial %s: %s", s.Name, t.TrialID, formatParams(cr.Params))
	if cr.Stage != "" {
		summary = fmt.Sprintf("%s trial %s (%s): %s", s.Name, t.TrialID, cr.Stage, formatParams(cr.Params))
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: t.WorkflowID,
		// Trials outlive the run that started them: continue-as-new closes it.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:         summary,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			GleanerCampaign.ValueSet(s.Name), GleanerKind.ValueSet(KindTrial), GleanerTrial.ValueSet(t.TrialID),
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
			"objective", c.spec.Objective.Metric, "warning", c.warnings()[0])
	}
}

// warnings are the campaign's warnings for a person (CampaignStatus.Warnings).
func (c *campaign) warnings() []string {
	if w := missedObjectiveWarning(c.spec.Objective.Metric, c.st.Missed, c.st.Counts.ObjectiveMissing,
		c.st.Counts.Completed+c.st.Counts.Stopped); w != "" {
		return []string{w}
	}
	return nil
}

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

func (c *campaign) done() bool {
	return len(c.st.InFlight) == 0 && len(c.st.Pending) == 0 && c.pendingStarts == 0
}

func (c *campaign) phase() CampaignPhase {
	switch {
	case c.finished:
		return c.st.End
	case c.st.Stopping:
		return CampaignStopping
	case c.st.Paused:
		return CampaignPaused
	}
	return CampaignRunning
}

func (c *campaign) shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= c.threshold
}

// drain gets the run ready to continue as new: no new children, every
// child started, every control signal delivered, every handler finished and
// every report received handled.
func (c *campaign) drain(ctx workflow.Context) error {
	c.draining = true
	if c.inline != nil {
		if err := c.inline.drain(ctx); err != nil {
			return err
		}
		var a Assignment
		for c.assignments.ReceiveAsync(&a) {
			c.inline.onAssignment(a)
			a = Assignment{}
		}
	}
	for {
		if err := workflow.Await(ctx, func() bool {
			return c.pendingStarts == 0 && c.pendingSignals == 0 && workflow.AllHandlersFinished(ctx)
		}); err != nil {
			return err
		}
		var r TrialReport
		n := 0
		for c.reports.ReceiveAsync(&r) {
			c.handleReport(ctx, r)
			r, n = TrialReport{}, n+1
		}
		if n == 0 && c.pendingSignals == 0 {
			if err := c.out.drain(ctx); err != nil {
				c.logger.Warn("a signal to the pool was not delivered", "error", err)
			}
			return nil
		}
	}
}

func (c *campaign) continueAsNew(ctx workflow.Context) error {
	snap, err := c.searcher.Snapshot()
	if err != nil {
		return fmt.Errorf("continue-as-new: %w", err)
	}
	st := c.st
	st.Searcher = snap
	st.Runs++
	in := c.in
	in.State = &st
	return workflow.NewContinueAsNewError(ctx, CampaignWorkflowName, in)
}

func (c *campaign) result() CampaignResult {
	lb := c.leaderboard()
	if len(lb) > resultLeaderboardN {
		lb = lb[:resultLeaderboardN]
	}
	return CampaignResult{Campaign: c.spec.Name, State: c.phase(), Reason: c.st.Reason,
		CampaignCounts: c.st.Counts, Best: c.best(), Leaderboard: lb, Warnings: c.warnings()}
}

// archParam is the space's first architecture parameter, or "".
func archParam(space hpo.Space) string {
	for _, p := range space {
		if p.Type == hpo.ParamArch {
			return p.Name
		}
	}
	return ""
}
