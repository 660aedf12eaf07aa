package workflows

// The campaign's control: pause, resume and stop updates, and the
// signals that carry them to its trials.

import (
	"fmt"

	"go.temporal.io/sdk/workflow"
)

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
