package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// ErrCampaignFailed: the campaign ended as failed (budget.max_failures
// reached), or its workflow was ended from outside (terminated, timed
// out, canceled). Wait's error is then a *FailedError.
var ErrCampaignFailed = errors.New("campaign failed")

// FailuresShown is how many failed trials a FailedError names in full
// (the newest); the others are counted.
const FailuresShown = 3

// FailedError says why a campaign failed: its reason and its newest failed
// trials, each with what its result records (TrialStatus.Error: the
// trainer's exit status, the path of its log and the log's last lines, as
// the worker read them). errors.Is(err, ErrCampaignFailed) holds.
type FailedError struct {
	Campaign string
	// Reason is the campaign's ("budget.max_failures: 2 trials failed
	// (max 2)"), or how its workflow ended.
	Reason string
	// Failed counts the campaign's failed trials; Trials are the newest
	// of them (at most FailuresShown), newest first. Trials is empty when
	// they could not be read (TrialsErr says why).
	Failed    int
	Trials    []gleaner.TrialStatus
	TrialsErr error
	// Err is the workflow's own error.
	Err error
}

func (e *FailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "campaign %s failed: %s", e.Campaign, e.Reason)
	for _, t := range e.Trials {
		b.WriteString("\n")
		b.WriteString(DescribeFailure(t))
	}
	if more := e.Failed - len(e.Trials); more > 0 && len(e.Trials) > 0 {
		fmt.Fprintf(&b, "\n  … and %d more failed trial(s): gleaner trials %s", more, e.Campaign)
	}
	if e.TrialsErr != nil {
		fmt.Fprintf(&b, "\n  (its failed trials could not be read: %v)", e.TrialsErr)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrCampaignFailed) hold.
func (e *FailedError) Is(target error) bool { return target == ErrCampaignFailed }

// Unwrap is the workflow's error.
func (e *FailedError) Unwrap() error { return e.Err }

// DescribeFailure is a failed trial for people, indented by two spaces:
// its id and parameters on the first line, then its error whole (its
// exit status, restarts, log path, and the log's last lines as the worker
// read them), each further line indented by four.
func DescribeFailure(t gleaner.TrialStatus) string {
	reason := strings.TrimSpace(t.Error)
	// The worker's messages start with "trial t00001: ", said already.
	reason = strings.TrimPrefix(reason, "trial "+t.TrialID+": ")
	if reason == "" {
		reason = "no error recorded"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %s", t.TrialID)
	if len(t.Params) > 0 {
		parts := make([]string, 0, len(t.Params))
		for _, n := range t.Params.Names() {
			v := hpo.DescribeValue(t.Params[n]) // an architecture in its short form
			if !t.Params[n].IsStr {
				v = strconv.FormatFloat(t.Params[n].Num, 'g', 4, 64)
			}
			parts = append(parts, n+"="+v)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, " "))
	}
	lines := strings.Split(reason, "\n")
	fmt.Fprintf(&b, ": %s", lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(&b, "\n    %s", l)
	}
	return b.String()
}

// FailedTrials is the newest limit (≤ 0: all) of a campaign's failed
// trials, newest first, as their results record them (see listTrials). A
// campaign with a workflow per trial finds them through visibility
// (GleanerStatus = "failed" on its trials, or their workflow failed),
// which lags a moment behind; an inline campaign reads its trial records.
func (c *Client) FailedTrials(ctx context.Context, name string, limit int) ([]gleaner.TrialStatus, error) {
	l, err := c.listTrials(ctx, name, trialSelect{limit: limit, failed: true})
	if err != nil {
		return nil, err
	}
	slices.Reverse(l.Trials) // newest first
	return l.Trials, nil
}

// failure builds Wait's error for a campaign whose workflow failed (err):
// its reason, read from the result it carries, or how the workflow ended,
// and its newest failed trials.
func (c *Client) failure(ctx context.Context, name string, res gleaner.CampaignResult, err error) error {
	e := &FailedError{Campaign: name, Reason: res.Reason, Failed: res.Failed, Err: err}
	var (
		app        *temporal.ApplicationError
		terminated *temporal.TerminatedError
		canceled   *temporal.CanceledError
		timeout    *temporal.TimeoutError
	)
	switch {
	case errors.As(err, &terminated):
		// The SDK's error says only "terminated": the operator's reason is
		// in the close event.
		e.Reason = "its workflow was terminated"
		if why := c.terminationReason(ctx, name); why != "" {
			e.Reason += " (" + why + ")"
		}
	case errors.As(err, &canceled):
		e.Reason = "its workflow was canceled"
	case errors.As(err, &timeout):
		e.Reason = "its workflow timed out (" + timeout.TimeoutType().String() + ")"
	case e.Reason == "" && errors.As(err, &app):
		e.Reason = app.Message()
	case e.Reason == "":
		e.Reason = err.Error()
	}
	if res.Failed > 0 {
		e.Trials, e.TrialsErr = WaitFailedTrials(ctx, c, name, min(res.Failed, FailuresShown))
	}
	return e
}

// FailedTrialsReader reads a campaign's failed trials: a *Client.
type FailedTrialsReader interface {
	FailedTrials(ctx context.Context, name string, limit int) ([]gleaner.TrialStatus, error)
}

// failedTrialsPatience bounds how long WaitFailedTrials waits for
// visibility to list the failed trials a campaign has counted.
const failedTrialsPatience = 5 * time.Second

// WaitFailedTrials is r.FailedTrials(ctx, name, want), asked again (every
// 250 ms, for up to 5 s) while it lists fewer than want: a campaign
// counts a failed trial as soon as the trial reports, and visibility
// lists it a moment later. It returns what it found by then.
func WaitFailedTrials(ctx context.Context, r FailedTrialsReader, name string, want int) ([]gleaner.TrialStatus, error) {
	deadline := time.Now().Add(failedTrialsPatience)
	for {
		trials, err := r.FailedTrials(ctx, name, want)
		if err != nil || len(trials) >= want || time.Now().After(deadline) {
			return trials, err
		}
		select {
		case <-ctx.Done():
			return trials, nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// terminationReason is the reason given when campaign name's workflow was
// terminated ("" when it cannot be read).
func (c *Client) terminationReason(ctx context.Context, name string) string {
	it := c.tc.GetWorkflowHistory(ctx, gleaner.CampaignWorkflowID(name), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return ""
		}
		if a := ev.GetWorkflowExecutionTerminatedEventAttributes(); a != nil {
			return a.GetReason()
		}
	}
	return ""
}
