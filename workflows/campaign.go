package workflows

import (
	"errors"
	"fmt"
	"time"

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
	// multi is set in a campaign of several objectives or with
	// constraints (campaign_pareto.go).
	multi *multiGoals
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
		threshold: in.HistoryThreshold, logger: workflow.GetLogger(ctx), multi: newMultiGoals(spec),
	}
	if c.threshold <= 0 {
		c.threshold = DefaultCampaignHistoryThreshold
	}
	c.legacyBest = workflow.GetVersion(ctx, "best-never-worse", workflow.DefaultVersion, 1) == workflow.DefaultVersion
	pipe := pipelineVersion(ctx, spec) // campaign_pipeline.go
	if pipe != nil {
		cfg.MaxConcurrent = (1 + pipe.depth) * spec.Budget.MaxConcurrent
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
			c.inline = newInliner(c, pipe)
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
		c.inline = newInliner(c, pipe)
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
	in := WarmStartInput{Campaigns: c.spec.Search.WarmStart, Metric: c.spec.PrimaryObjective().Metric, Space: c.spec.Space}
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
		CampaignCounts: c.st.Counts, Best: c.best(), Pareto: c.paretoView(), Leaderboard: lb, Warnings: c.warnings()}
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
