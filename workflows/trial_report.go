package workflows

// What a trial workflow shows and tells: its state, search attributes
// and details, and its reports to the campaign.

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"
)

// end ends the trial in state s (errMsg: a failure's reason).
func (t *trial) end(ctx workflow.Context, s TrialState, errMsg string) {
	changed := t.core.p.State != s
	t.core.end(workflow.Now(ctx), s, errMsg)
	if changed {
		t.announceState(ctx)
	}
}

func (t *trial) setState(ctx workflow.Context, s TrialState) {
	if t.core.p.State == s {
		return
	}
	t.core.setState(workflow.Now(ctx), s, t.paused)
	t.announceState(ctx)
}

// announceState shows a new state in the trial's attributes and tells
// the campaign.
func (t *trial) announceState(ctx workflow.Context) {
	s := t.core.p.State
	t.upsertAttributes(ctx)
	// The campaign shows its trials' states (ClassifyTrial): it hears a
	// change between pending, running and paused at once, without the
	// metrics (the searcher hears nothing new); an end comes with the
	// final report.
	if !s.Terminal() && t.in.CampaignWorkflowID != "" &&
		workflow.GetVersion(ctx, "trial-state-report", workflow.DefaultVersion, 1) == 1 {
		r := t.report(ctx, false)
		r.Metrics = nil
		workflow.SignalExternalWorkflow(ctx, t.in.CampaignWorkflowID, "", SignalTrialReport, r)
	}
}

func (t *trial) upsertAttributes(ctx workflow.Context) {
	_ = workflow.UpsertTypedSearchAttributes(ctx,
		GleanerKind.ValueSet(WorkflowKindTrial),
		GleanerCampaign.ValueSet(t.in.CampaignID),
		GleanerTrial.ValueSet(t.in.TrialID),
		GleanerPool.ValueSet(t.in.Pool),
		GleanerStatus.ValueSet(string(t.core.p.State)),
	)
	workflow.SetCurrentDetails(ctx, t.details())
}

// details is the markdown the Temporal UI shows for the trial.
func (t *trial) details() string {
	s := fmt.Sprintf("**Trial %s** (%s) — %s\n\n| | |\n|---|---|\n| nodes | %d |\n| samples | %.0f |\n| step | %d |\n| restarts | %d |\n| rescales | %d |\n",
		t.in.TrialID, t.in.CampaignID, t.core.p.State, len(t.core.p.Nodes), t.core.p.Samples, t.core.p.Step, t.core.p.Restarts, t.core.p.Rescales)
	if v, ok := t.core.p.Metrics[t.in.ObjectiveMetric]; ok {
		s += fmt.Sprintf("| %s | %.6g |\n", t.in.ObjectiveMetric, v)
	}
	if t.in.Stage != "" {
		s += fmt.Sprintf("| stage | %s |\n", escapeMarkdown(t.in.Stage))
	}
	if t.in.Budget > 0 {
		s += fmt.Sprintf("| budget | %.0f %s |\n", t.in.Budget, t.in.BudgetUnit)
	}
	if t.in.From != "" {
		s += fmt.Sprintf("| started from | trial %s's checkpoint at %g %s |\n", t.in.From, t.in.FromProgress, t.in.BudgetUnit)
	}
	if t.core.p.Checkpoint != "" {
		s += fmt.Sprintf("| checkpoint | `%s` |\n", t.core.p.Checkpoint)
	}
	if t.core.p.MalformedReports > 0 {
		s += fmt.Sprintf("| malformed report lines skipped | %d |\n", t.core.p.MalformedReports)
	}
	if t.core.p.Killed > 0 {
		s += fmt.Sprintf("| runs killed after ignoring SIGTERM | %d |\n", t.core.p.Killed)
	}
	if t.core.p.BadCheckpoints > 0 {
		s += fmt.Sprintf("| reported checkpoints rejected | %d (latest: %s) |\n", t.core.p.BadCheckpoints, escapeMarkdown(strings.Join(strings.Fields(t.core.p.BadCheckpoint), " ")))
	}
	if t.core.p.State.Terminal() && t.core.p.State != TrialFailed && !t.core.p.ObjectiveSeen {
		s += fmt.Sprintf("\n**Warning:** the trainer never reported the objective metric `%s`.\n", t.in.ObjectiveMetric)
	}
	if t.core.p.Error != "" {
		s += fmt.Sprintf("\nError: %s\n", t.core.p.Error)
	}
	return s
}

func (t *trial) report(ctx workflow.Context, final bool) TrialReport {
	return t.core.report(t.owner(ctx), final)
}

// reportToCampaign sends the trial's report to its campaign; the future
// is nil when there is no campaign.
func (t *trial) reportToCampaign(ctx workflow.Context, final bool) workflow.Future {
	t.reportDirty = false
	t.lastReport = workflow.Now(ctx)
	workflow.SetCurrentDetails(ctx, t.details())
	if t.in.CampaignWorkflowID == "" {
		return nil
	}
	return workflow.SignalExternalWorkflow(ctx, t.in.CampaignWorkflowID, "", SignalTrialReport, t.report(ctx, final))
}

// awaitFinalReport waits until the server has taken the final report:
// the campaign counts the trial in flight until it arrives.
func (t *trial) awaitFinalReport(ctx workflow.Context, f workflow.Future) {
	if f == nil {
		return
	}
	if err := f.Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("final report to campaign failed", "campaign", t.in.CampaignWorkflowID, "error", err)
	}
}

// finish releases the trial's nodes and sends its final report.
func (t *trial) finish(ctx workflow.Context) TrialReport {
	// The signals still going out to the pool (a profile) are taken
	// first, so the pool learns from them before it forgets the trial.
	if err := t.out.drain(ctx); err != nil {
		workflow.GetLogger(ctx).Warn("a signal to the pool was not delivered", "pool", t.in.Pool, "error", err)
	}
	// The deregistration and the final report go out together, and the
	// trial waits for both at once.
	together := t.finishesTogether(ctx)
	var dereg workflow.Future
	if t.registered {
		dereg = t.sendDeregister(ctx)
		if !together {
			t.awaitDeregister(ctx, dereg)
			dereg = nil
		}
	}
	final := t.reportToCampaign(ctx, true)
	if dereg != nil {
		t.awaitDeregister(ctx, dereg)
	}
	t.awaitFinalReport(ctx, final)
	return t.report(ctx, true)
}

// finishesTogether says whether this run of the trial ends by sending
// its deregistration and final report together (with no release of the
// last run's nodes before them). A trial ended by an earlier build sent
// the release, then the deregistration, then the report, each awaited: a
// round trip through the server apiece.
func (t *trial) finishesTogether(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, "trial-finish-together", workflow.DefaultVersion, 1) == 1
}
