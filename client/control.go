package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
)

// rejectedError is a refused Pause, Resume or Stop: errors.Is(err,
// ErrRejected), with the campaign's reason as the message.
type rejectedError struct {
	reason string
	cause  error
}

func (e *rejectedError) Error() string { return "rejected: " + e.reason }

func (e *rejectedError) Is(target error) bool { return target == ErrRejected }

func (e *rejectedError) Unwrap() error { return e.cause }

// control sends a pause, resume or stop update (verb names it in errors)
// and returns the status after.
func (c *Client) control(ctx context.Context, name, verb, update, reason string) (gleaner.CampaignStatus, error) {
	if err := checkName("campaign", name); err != nil {
		return gleaner.CampaignStatus{}, fmt.Errorf("%s: %w", verb, err)
	}
	h, err := c.tc.UpdateWorkflow(ctx, tclient.UpdateWorkflowOptions{
		WorkflowID:   gleaner.CampaignWorkflowID(name),
		UpdateName:   update,
		Args:         []any{gleaner.ControlRequest{Reason: reason}},
		WaitForStage: tclient.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		var s gleaner.CampaignStatus
		if err = h.Get(ctx, &s); err == nil {
			return s, nil
		}
	}
	var app *temporal.ApplicationError
	switch {
	case errors.As(err, &app):
		// The campaign's validator refused: its message says why.
		return gleaner.CampaignStatus{}, fmt.Errorf("%s campaign %q: %w", verb, name, &rejectedError{reason: app.Message(), cause: err})
	case isNotFound(err):
		// Updates find no ended workflow: say which of the two it is.
		d, derr := c.describe(ctx, name)
		if derr != nil {
			return gleaner.CampaignStatus{}, fmt.Errorf("%s: %w", verb, derr)
		}
		if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			// The campaign's own state says more than its workflow's.
			state := "its workflow is " + strings.ToLower(st.String())
			if s, serr := c.Status(ctx, name); serr == nil {
				state = "it is " + string(s.State)
			}
			why := fmt.Sprintf("campaign %s has already ended: %s", name, state)
			return gleaner.CampaignStatus{}, fmt.Errorf("%s campaign %q: %w", verb, name, &rejectedError{reason: why, cause: err})
		}
	}
	return gleaner.CampaignStatus{}, fmt.Errorf("%s campaign %q: %w", verb, name, err)
}

// Pause stops creating trials and pauses the running ones at a checkpoint
// (they give their nodes back). reason is shown in the status and the UI.
// A campaign that is not running refuses with ErrRejected.
func (c *Client) Pause(ctx context.Context, name, reason string) (gleaner.CampaignStatus, error) {
	return c.control(ctx, name, "pause", gleaner.UpdatePause, reason)
}

// Resume undoes Pause; a campaign that is not paused refuses with
// ErrRejected.
func (c *Client) Resume(ctx context.Context, name, reason string) (gleaner.CampaignStatus, error) {
	return c.control(ctx, name, "resume", gleaner.UpdateResume, reason)
}

// Stop stops every trial at a checkpoint and ends the campaign as stopped
// once they have reported (Wait returns then). The returned status is
// "stopping"; an ended campaign refuses with ErrRejected.
func (c *Client) Stop(ctx context.Context, name, reason string) (gleaner.CampaignStatus, error) {
	return c.control(ctx, name, "stop", gleaner.UpdateStop, reason)
}
