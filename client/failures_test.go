package client_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// growingFailures lists one more failed trial each time it is asked, as
// visibility catches up with a campaign's count.
type growingFailures struct{ asked atomic.Int32 }

func (g *growingFailures) FailedTrials(_ context.Context, _ string, limit int) ([]workflows.TrialStatus, error) {
	n := min(int(g.asked.Add(1))-1, limit)
	return make([]workflows.TrialStatus, n), nil
}

func TestWaitFailedTrialsWaitsForVisibility(t *testing.T) {
	g := &growingFailures{}
	trials, err := client.WaitFailedTrials(context.Background(), g, "c", 2)
	if err != nil || len(trials) != 2 {
		t.Fatalf("WaitFailedTrials = %d trials, %v; want 2", len(trials), err)
	}
	if asked := g.asked.Load(); asked != 3 {
		t.Errorf("asked %d times, want 3 (0, 1, then 2 listed)", asked)
	}
}

func TestFailedErrorMessage(t *testing.T) {
	e := &client.FailedError{Campaign: "c", Reason: "its workflow was terminated (by an operator)", Failed: 0}
	if got := e.Error(); got != "campaign c failed: its workflow was terminated (by an operator)" {
		t.Errorf("got %q", got)
	}
	e = &client.FailedError{Campaign: "c", Reason: "budget.max_failures: 5 trials failed (max 5)", Failed: 5,
		Trials: []workflows.TrialStatus{{TrialID: "t00005", TrialProgress: workflows.TrialProgress{State: workflows.TrialFailed,
			Error: "trial t00005: trainer exited with signal killed (log: l)\n| oom"}}}}
	want := "campaign c failed: budget.max_failures: 5 trials failed (max 5)\n" +
		"  t00005: trainer exited with signal killed (log: l)\n    | oom\n" +
		"  … and 4 more failed trial(s): gleaner trials c"
	if got := e.Error(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
