package integration_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// checkAllTrainedOnce: every trial of the campaign completed once, and
// trained each of its steps once (a resumed run continues its checkpoint's
// sample count, so a trial run twice to completion would count double).
func checkAllTrainedOnce(t *testing.T, reports []workflows.TrialReport, steps int) {
	t.Helper()
	for _, r := range reports {
		if r.State != workflows.TrialCompleted {
			t.Errorf("trial %s: %s (%s)", r.TrialID, r.State, r.Error)
		}
		if r.Samples != float64(steps*32) {
			t.Errorf("trial %s: %v samples, want %d", r.TrialID, r.Samples, steps*32)
		}
	}
}

// (d) The worker is SIGKILLed mid-campaign (its trainers die with it) and
// restarted: RunTrial is retried after its heartbeat times out, resumes
// each trial from its newest checkpoint, and the campaign completes with
// no trial lost, none run twice and none counted as restarted.
func TestWorkerKilledMidCampaign(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	w := startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: "campaign-d"})
	const trials, steps = 6, 450
	spec := testenv.MLPSpec(t, "killed", trials, 3, steps, 20)
	run := startCampaign(t, srv.Client(), "campaign-d", spec)

	// Any trial running past a checkpoint: watching only the first, a
	// loaded CI machine once let it finish (9 s) between two polls, and
	// nothing else would do.
	waitFor(t, 2*time.Minute, "a trial to train past a checkpoint", func() (bool, error) {
		for n := 1; n <= trials; n++ {
			s, err := trialStatus(t, srv.Client(), workflows.TrialWorkflowID(run.GetID(), n))
			if err == nil && s.State == workflows.TrialRunning && s.Checkpoint != "" && s.Step >= 30 {
				return true, nil
			}
		}
		return false, nil
	})
	w.Kill()
	w.Start()

	res := campaignResult(t, run, 5*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials || res.Failed != 0 {
		t.Fatalf("result %s %+v, want %d completed", res.State, res.CampaignCounts, trials)
	}
	reports := trialReports(t, srv.Client(), spec.Name, trials)
	checkAllTrainedOnce(t, reports, steps)
	// A lost worker is not the trainer's failure: no restart is counted
	// (the retry resumed from the newest checkpoint; TestFaultsLoseNothing
	// checks the work lost).
	checkNoRestarts(t, reports, "after the worker died")
}

// checkNoRestarts: no trial counted a restart (after what).
func checkNoRestarts(t *testing.T, reports []workflows.TrialReport, after string) int {
	t.Helper()
	total := 0
	for _, r := range reports {
		total += r.Restarts
		if r.Restarts != 0 {
			t.Errorf("trial %s: %d restarts %s, want 0", r.TrialID, r.Restarts, after)
		}
	}
	return total
}

// (e) The Temporal server is stopped and restarted on the same database
// mid-campaign: workers reconnect, and the campaign completes.
func TestServerRestartedMidCampaign(t *testing.T) {
	srv := startServer(t, devserver.Options{DBFile: filepath.Join(t.TempDir(), "temporal.db")})
	testenv.Worker(t, srv, "campaign-e", nil)
	const trials, steps = 6, 200
	spec := testenv.MLPSpec(t, "restarted", trials, 3, steps, 20)
	run := startCampaign(t, srv.Client(), "campaign-e", spec)
	waitTrial(t, srv.Client(), workflows.TrialWorkflowID(run.GetID(), 1), 2*time.Minute, "a trial to run", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && s.Step > 0
	})
	if err := srv.Restart(testContext(t, 2*time.Minute)); err != nil {
		t.Fatalf("restarting the dev server: %v", err)
	}
	res := campaignResult(t, srv.Client().GetWorkflow(testContext(t, time.Minute), run.GetID(), ""), 5*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials {
		t.Fatalf("result %s %+v, want %d completed", res.State, res.CampaignCounts, trials)
	}
	checkAllTrainedOnce(t, trialReports(t, srv.Client(), spec.Name, trials), steps)
}

// (f) Misbehaving trainers: one that crashes once is retried and resumes
// from its checkpoint; one that always fails ends failed after bounded
// retries with the exit code in its status; one that writes garbage
// completes with the lines counted and skipped; one that ignores SIGTERM
// is SIGKILLed after the grace period when preempted, and resumes.
func TestMisbehavingTrainers(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	nodes := newNodeSet(4)
	testenv.Worker(t, srv, "campaign-f", nodes)
	c := srv.Client()

	t.Run("crash once", func(t *testing.T) {
		spec := testenv.MLPSpec(t, "crash", 1, 1, 100, 10, testenv.Fixed("fail_at_step", "35"))
		res := campaignResult(t, startCampaign(t, c, "campaign-f", spec), 2*time.Minute)
		r := trialReports(t, c, spec.Name, 1)[0]
		if res.Completed != 1 || r.Restarts != 1 {
			t.Fatalf("campaign %+v trial %+v: want completed after 1 restart", res.CampaignCounts, r)
		}
		checkAllTrainedOnce(t, []workflows.TrialReport{r}, 100)
	})

	t.Run("always fails", func(t *testing.T) {
		spec := testenv.MLPSpec(t, "broken", 2, 2, 10, 0)
		spec.Command = []string{"/bin/sh", "-c", "echo 'out of memory' >&2; exit 3"}
		spec.Budget.MaxFailures = 5
		spec.Trial.MaxRestarts = 1
		res := campaignResult(t, startCampaign(t, c, "campaign-f", spec), 2*time.Minute)
		if res.Failed != 2 || res.Completed != 0 {
			t.Fatalf("campaign %+v: want both trials failed", res.CampaignCounts)
		}
		for _, r := range trialReports(t, c, spec.Name, 2) {
			if r.State != workflows.TrialFailed || !strings.Contains(r.Error, "exit code 3") || !strings.Contains(r.Error, "trainer.log") {
				t.Errorf("trial %s: %s %q; want failed naming the exit code and the log", r.TrialID, r.State, r.Error)
			}
		}
	})

	t.Run("garbage reports", func(t *testing.T) {
		spec := testenv.MLPSpec(t, "garbage", 1, 1, 60, 10, testenv.Fixed("garbage_reports", "true"))
		campaignResult(t, startCampaign(t, c, "campaign-f", spec), 2*time.Minute)
		r := trialReports(t, c, spec.Name, 1)[0]
		s, err := trialStatus(t, c, r.WorkflowID)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != workflows.TrialCompleted || s.MalformedReports == 0 {
			t.Fatalf("trial %s %s with %d malformed lines; want completed with some skipped", r.TrialID, r.State, s.MalformedReports)
		}
		if _, ok := r.Metrics["val_loss"]; !ok {
			t.Errorf("the good lines still count: metrics %v", r.Metrics)
		}
	})

	t.Run("ignores SIGTERM", func(t *testing.T) {
		spec := testenv.MLPSpec(t, "stubborn", 1, 1, 500, 20, testenv.Fixed("ignore_sigterm", "true"))
		spec.Trial.GracePeriod = gleaner.Duration(time.Second)
		run := startCampaign(t, c, "campaign-f", spec)
		id := workflows.TrialWorkflowID(run.GetID(), 1)
		waitTrial(t, c, id, time.Minute, "the trial to checkpoint", func(s workflows.TrialStatus) bool {
			return s.State == workflows.TrialRunning && s.Step >= 30 && s.Checkpoint != ""
		})
		nodes.set(0)
		waitTrial(t, c, id, time.Minute, "the trial to be killed and paused", func(s workflows.TrialStatus) bool {
			return s.State == workflows.TrialPaused && s.Killed == 1
		})
		nodes.set(4)
		campaignResult(t, run, 3*time.Minute)
		checkAllTrainedOnce(t, trialReports(t, c, spec.Name, 1), 500)
	})
}
