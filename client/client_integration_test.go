package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

const taskQueue = "client-test"

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// mlpSpec is a campaign, in pool client-test, of go-mlp trials of steps ×
// stepMS each.
func mlpSpec(t *testing.T, name string, trials, concurrent, steps, stepMS int) gleaner.CampaignSpec {
	t.Helper()
	spec := testenv.MLPSpec(t, name, trials, concurrent, steps, stepMS)
	spec.Pool = "client-test"
	return spec
}

func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually retries f every 200 ms until it returns nil or d passes.
func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestClient drives the whole client against a real dev server and an
// in-process worker: submit, watch, wait, leaderboard, trials, duplicate
// and invalid submissions, pause/resume/stop, unknown names.
func TestClient(t *testing.T) {
	srv := testenv.DevServer(t, devserver.Options{})
	testenv.Worker(t, srv, taskQueue, nil)
	c := client.New(srv.Client(), client.Options{TaskQueue: taskQueue, Namespace: srv.Namespace()})

	// A small campaign: 6 trials of ~1–2 s, 3 at a time.
	spec := mlpSpec(t, "small", 6, 3, 40, 30)
	camp, err := c.Submit(timeout(t, time.Minute), spec)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if camp.Name != "small" || camp.WorkflowID != workflows.CampaignWorkflowID("small") || camp.RunID == "" ||
		camp.UIURL != "http://localhost:8233/namespaces/default/workflows/gleaner-campaign-small" {
		t.Errorf("Submit returned %+v", camp)
	}

	var seen []client.Progress
	sawPool := false
	for p := range c.Watch(timeout(t, 3*time.Minute), "small", 300*time.Millisecond) {
		if p.Err != nil {
			t.Logf("watch: %v", p.Err)
			continue
		}
		seen = append(seen, p)
		sawPool = sawPool || p.Pool != nil
	}
	if len(seen) < 2 {
		t.Fatalf("Watch sent %d values without error, want several", len(seen))
	}
	last := seen[len(seen)-1]
	if !last.Done() || last.Status.State != workflows.CampaignCompleted || last.Status.Completed != 6 {
		t.Errorf("the watch ended on %+v, want the campaign completed with 6 trials", last.Status)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].Status.Ended() < seen[i-1].Status.Ended() {
			t.Errorf("trials ended went back from %d to %d", seen[i-1].Status.Ended(), seen[i].Status.Ended())
		}
	}
	if !sawPool {
		t.Error("Watch never read the pool's status")
	}

	res, err := c.Wait(timeout(t, time.Minute), "small")
	if err != nil || res.State != workflows.CampaignCompleted || res.Completed != 6 || res.Failed != 0 {
		t.Fatalf("Wait = %+v, %v; want 6 completed", res, err)
	}

	board, err := c.Leaderboard(timeout(t, time.Minute), "small")
	if err != nil {
		t.Fatalf("Leaderboard: %v", err)
	}
	if len(board) != 6 || len(res.Leaderboard) != 6 {
		t.Fatalf("leaderboard has %d entries, the result %d; want 6", len(board), len(res.Leaderboard))
	}
	if !sort.SliceIsSorted(board, func(i, j int) bool { return board[i].Score < board[j].Score }) {
		t.Errorf("leaderboard not sorted by val_loss: %+v", board)
	}
	for i, e := range board {
		if r := res.Leaderboard[i]; e.TrialID != r.TrialID || e.Score != r.Score {
			t.Errorf("leaderboard[%d] = %s %g, the result has %s %g", i, e.TrialID, e.Score, r.TrialID, r.Score)
		}
	}
	if res.Best == nil || res.Best.TrialID != board[0].TrialID {
		t.Errorf("best %+v, leaderboard starts with %s", res.Best, board[0].TrialID)
	}

	var trials []workflows.TrialStatus
	eventually(t, 30*time.Second, "six trials in visibility", func() error {
		trials, err = c.Trials(timeout(t, time.Minute), "small")
		if err == nil && len(trials) != 6 {
			err = fmt.Errorf("%d trials", len(trials))
		}
		return err
	})
	for i, s := range trials {
		if s.State != workflows.TrialCompleted || s.Step != 40 || len(s.Params) != 7 {
			t.Errorf("trial %d: %+v, want completed at step 40 with its 7 params", i, s)
		}
		if i > 0 && trials[i-1].TrialID >= s.TrialID {
			t.Errorf("trials not in order: %s before %s", trials[i-1].TrialID, s.TrialID)
		}
	}

	if _, err := c.Submit(timeout(t, time.Minute), spec); !errors.Is(err, client.ErrExists) {
		t.Errorf("submitting %q again: %v, want ErrExists", spec.Name, err)
	}

	invalid := mlpSpec(t, "invalid", 6, 3, 40, 30)
	invalid.Budget.MaxTrials = -1
	_, err = c.Submit(timeout(t, time.Minute), invalid)
	if !errors.Is(err, client.ErrInvalidSpec) || !strings.Contains(err.Error(), "budget.max_trials") {
		t.Errorf("submitting an invalid spec: %v, want ErrInvalidSpec naming budget.max_trials", err)
	}
	if _, err := c.Status(timeout(t, time.Minute), "invalid"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("an invalid spec started something: Status = %v", err)
	}

	// A longer campaign to steer: each trial would take ~40 s.
	if _, err := c.Submit(timeout(t, time.Minute), mlpSpec(t, "long", 4, 2, 2000, 20)); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	eventually(t, time.Minute, "a trial of the long campaign to train", func() error {
		s, err := c.Status(timeout(t, time.Minute), "long")
		if err == nil && (s.Running == 0 || s.Best == nil) {
			err = fmt.Errorf("status %+v", s)
		}
		return err
	})
	st, err := c.Pause(timeout(t, time.Minute), "long", "testing")
	if err != nil || st.State != workflows.CampaignPaused || st.Reason != "testing" {
		t.Fatalf("Pause = %+v, %v; want paused", st, err)
	}
	if st, err = c.Status(timeout(t, time.Minute), "long"); err != nil || st.State != workflows.CampaignPaused {
		t.Errorf("Status after Pause = %+v, %v; want paused", st, err)
	}
	_, err = c.Pause(timeout(t, time.Minute), "long", "")
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "already paused") {
		t.Errorf("a second Pause: %v, want ErrRejected saying it is already paused", err)
	} else {
		t.Logf("a second pause: %v", err)
	}
	if st, err = c.Resume(timeout(t, time.Minute), "long", ""); err != nil || st.State != workflows.CampaignRunning {
		t.Errorf("Resume = %+v, %v; want running", st, err)
	}
	if st, err = c.Stop(timeout(t, time.Minute), "long", "enough"); err != nil || st.State != workflows.CampaignStopping {
		t.Errorf("Stop = %+v, %v; want stopping", st, err)
	}
	res, err = c.Wait(timeout(t, 2*time.Minute), "long")
	if err != nil || res.State != workflows.CampaignStopped || res.Reason != "enough" || res.Completed != 0 {
		t.Errorf("Wait after Stop = %+v, %v; want stopped, no trial completed", res, err)
	}
	_, err = c.Stop(timeout(t, time.Minute), "long", "")
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "ended") {
		t.Errorf("Stop of an ended campaign: %v, want ErrRejected saying it has ended", err)
	} else {
		t.Logf("stopping an ended campaign: %v", err)
	}

	// A campaign whose workflow an operator terminates: Wait says so,
	// with the operator's reason (the SDK's error says only "terminated").
	if _, err := c.Submit(timeout(t, time.Minute), mlpSpec(t, "ended-outside", 2, 1, 4000, 30)); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if err := srv.Client().TerminateWorkflow(timeout(t, time.Minute), workflows.CampaignWorkflowID("ended-outside"), "", "disk quota"); err != nil {
		t.Fatalf("TerminateWorkflow: %v", err)
	}
	_, err = c.Wait(timeout(t, time.Minute), "ended-outside")
	var fe *client.FailedError
	if !errors.As(err, &fe) || fe.Reason != "its workflow was terminated (disk quota)" {
		t.Errorf("Wait of a terminated campaign: %v, want a FailedError with the operator's reason", err)
	}

	got, err := c.Spec(timeout(t, time.Minute), "long")
	if err != nil || got.Budget.MaxFailures != 4 || got.Search.Seed != 1 {
		t.Errorf("Spec = %+v, %v; want the spec with its defaults", got, err)
	}

	for what, err := range map[string]error{
		"Status":      second(c.Status(timeout(t, time.Minute), "nope")),
		"Leaderboard": second(c.Leaderboard(timeout(t, time.Minute), "nope")),
		"Trials":      second(c.Trials(timeout(t, time.Minute), "nope")),
		"Pause":       second(c.Pause(timeout(t, time.Minute), "nope", "")),
		"Wait":        second(c.Wait(timeout(t, time.Minute), "nope")),
		"Spec":        second(c.Spec(timeout(t, time.Minute), "nope")),
	} {
		if !errors.Is(err, client.ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s of an unknown campaign: %v, want ErrNotFound naming it", what, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }
