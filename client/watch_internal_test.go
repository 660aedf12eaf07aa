package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"google.golang.org/grpc"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// After failures in a row Watch waits every, then twice as long each time,
// up to 10s, or every when that is longer.
func TestWatchRetryDelay(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		every    time.Duration
		failures int
		want     time.Duration
	}{
		{2 * s, 1, 2 * s}, {2 * s, 2, 4 * s}, {2 * s, 3, 8 * s}, {2 * s, 4, 10 * s}, {2 * s, 100, 10 * s},
		{200 * time.Millisecond, 1, 200 * time.Millisecond}, {200 * time.Millisecond, 6, 6400 * time.Millisecond},
		{30 * s, 1, 30 * s}, {30 * s, 5, 30 * s},
	} {
		if got := watchRetryDelay(tc.every, tc.failures); got != tc.want {
			t.Errorf("watchRetryDelay(%v, %d) = %v, want %v", tc.every, tc.failures, got, tc.want)
		}
	}
}

// fakeTemporal answers status queries from a script of errors and then
// statuses; any other call panics (the embedded nil interface).
type fakeTemporal struct {
	tclient.Client
	mu      sync.Mutex
	answers []any // error or workflows.CampaignStatus, one per status query
}

func (f *fakeTemporal) QueryWorkflow(_ context.Context, workflowID, _ string, _ string, _ ...any) (converter.EncodedValue, error) {
	if workflowID != workflows.CampaignWorkflowID("c") {
		return nil, serviceerror.NewNotFound("no pool here")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	if err, ok := a.(error); ok {
		return nil, err
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(a)
	if err != nil {
		return nil, err
	}
	return tclient.NewValue(p), nil
}

func (f *fakeTemporal) WorkflowService() workflowservice.WorkflowServiceClient { return emptyHistory{} }

// emptyHistory has no workflow: every history is empty; any other call
// panics.
type emptyHistory struct {
	workflowservice.WorkflowServiceClient
}

func (emptyHistory) GetWorkflowExecutionHistory(context.Context, *workflowservice.GetWorkflowExecutionHistoryRequest, ...grpc.CallOption) (*workflowservice.GetWorkflowExecutionHistoryResponse, error) {
	return &workflowservice.GetWorkflowExecutionHistoryResponse{}, nil
}

// Failed queries are sent and the watch goes on (backing off) until the
// server answers again; it ends after the campaign has.
func TestWatchGoesOnThroughFailures(t *testing.T) {
	down := serviceerror.NewUnavailable("connection refused")
	running := workflows.CampaignStatus{Campaign: "c", State: workflows.CampaignRunning}
	done := workflows.CampaignStatus{Campaign: "c", State: workflows.CampaignCompleted}
	c := New(&fakeTemporal{answers: []any{running, down, down, down, running, done}}, Options{})
	var got []string
	for p := range c.Watch(t.Context(), "c", time.Millisecond) {
		switch {
		case p.Err != nil:
			var u *serviceerror.Unavailable
			if !errors.As(p.Err, &u) {
				t.Fatalf("Err = %v, want the server's Unavailable", p.Err)
			}
			got = append(got, "error")
		default:
			got = append(got, string(p.Status.State))
		}
	}
	want := []string{"running", "error", "error", "error", "running", "completed"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Watch sent %v, want %v", got, want)
	}
}
