package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Fault injection (issue #9): a real `gleaner worker` process and the Go
// example trainer, which keeps only its two newest checkpoints (so a
// resume point older than that is gone), with the worker SIGKILLed and the
// Temporal server restarted several times mid-campaign. Every trial must
// complete, none may count a restart because of a fault, and no trainer
// may train a step
// again beyond one checkpoint interval — checked against the trainers' own
// report lines around every fault.
//
// GLEANER_FAULTS=N injects N faults of each kind (default 2 kills and 2
// server restarts in CI; docs/benchmarks.md records a run with 10 each).
func TestFaultsLoseNothing(t *testing.T) {
	faults := 2
	if v := os.Getenv("GLEANER_FAULTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("GLEANER_FAULTS=%q: want a positive integer", v)
		}
		faults = n
	}
	srv := startServer(t, devserver.Options{DBFile: filepath.Join(t.TempDir(), "temporal.db")})
	w := startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: "faults"})
	const trials, stepMS, ckptEvery, reportEvery = 4, 20, 10, 5
	// Enough steps that every trial outlives the faults: a kill stops
	// training for about the heartbeat timeout, a server restart does not.
	steps := 1500 + 250*faults
	spec := testenv.MLPSpec(t, "faults", trials, trials, steps, stepMS)
	spec.Resources.MaxNodes = 1
	run := startCampaign(t, srv.Client(), "faults", spec)

	ids := make([]string, trials)
	for i := range ids {
		ids[i] = workflows.TrialWorkflowID(run.GetID(), i+1)
	}
	// progressed waits until every trial still running has trained 30
	// steps (three checkpoints) past where it was.
	progressed := func(what string) {
		from := map[string]int64{}
		for _, id := range ids {
			if s, err := trialStatus(t, srv.Client(), id); err == nil {
				from[id] = s.Step
			}
		}
		for _, id := range ids {
			waitTrial(t, srv.Client(), id, 3*time.Minute, what, func(s workflows.TrialStatus) bool {
				return s.State.Terminal() || (s.State == workflows.TrialRunning && s.Step >= from[id]+3*ckptEvery)
			})
		}
	}
	var at []time.Time // when each fault struck
	progressed("every trial to train before the first fault")
	for i := range 2 * faults {
		at = append(at, time.Now())
		if i%2 == 0 {
			t.Logf("fault %d: SIGKILL of the worker", i+1)
			w.Kill()
			w.Start()
		} else {
			t.Logf("fault %d: restart of the Temporal server", i+1)
			if err := srv.Restart(testContext(t, devserver.DefaultStartTimeout)); err != nil {
				t.Fatalf("restarting the dev server: %v", err)
			}
		}
		progressed(fmt.Sprintf("every trial to train after fault %d", i+1))
	}

	res := campaignResult(t, srv.Client().GetWorkflow(testContext(t, time.Minute), run.GetID(), ""), 10*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials || res.Failed != 0 {
		t.Fatalf("result %s %+v, want %d completed, none failed", res.State, res.CampaignCounts, trials)
	}
	reports := trialReports(t, srv.Client(), spec.Name, trials)
	checkAllTrainedOnce(t, reports, steps)
	restarts := checkNoRestarts(t, reports, fmt.Sprintf("after %d faults", 2*faults))
	worst := 0.0
	pause := make([]float64, len(at)) // per fault: the longest a trial went without a report
	for _, r := range reports {
		lines := reportLines(t, filepath.Join(w.DataDir(), spec.Name, r.TrialID))
		for i, f := range at {
			lost, ok := retrained(lines, f)
			if !ok {
				continue // the trial had not started, or had ended
			}
			pause[i] = max(pause[i], silence(lines, f))
			worst = max(worst, lost)
			if lost >= ckptEvery {
				t.Errorf("trial %s, fault %d: trained again from step %v after reaching step %v before it (checkpoint every %d)",
					r.TrialID, i+1, lostFrom(lines, f), lostFrom(lines, f)+lost, ckptEvery)
			}
		}
	}
	t.Logf("%d faults (%d worker kills, %d server restarts) on %d trials: %d failed, %d restarts; worst re-trained %v steps (report every %d, checkpoint every %d)",
		len(at), faults, faults, trials, res.Failed, restarts, worst, reportEvery, ckptEvery)
	var kills, outages []float64
	for i, p := range pause {
		if i%2 == 0 {
			kills = append(kills, p)
		} else {
			outages = append(outages, p)
		}
	}
	t.Logf("longest time without a report around a fault: worker kills %s s; server restarts %s s",
		fmtSeconds(kills), fmtSeconds(outages))
}

// silence is the longest gap between two report lines that spans f.
func silence(lines []reportLine, f time.Time) float64 {
	at := float64(f.UnixNano()) / 1e9
	last, next := -1.0, -1.0
	for _, l := range lines {
		if l.Time < at {
			last = max(last, l.Time)
		} else if next < 0 || l.Time < next {
			next = l.Time
		}
	}
	if last < 0 || next < 0 {
		return 0
	}
	return next - last
}

func fmtSeconds(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += strconv.FormatFloat(x, 'f', 1, 64)
	}
	return s
}

// reportLine is what the fault check reads of a trainer's report line.
type reportLine struct {
	Step int64   `json:"step"`
	Time float64 `json:"time"`
}

// reportLines reads every run's report lines of the trial in dir, in run
// order.
func reportLines(t *testing.T, dir string) []reportLine {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatalf("trial directory: %v", err)
	}
	var runs []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			runs = append(runs, n)
		}
	}
	sort.Ints(runs)
	var lines []reportLine
	for _, n := range runs {
		f, err := os.Open(filepath.Join(dir, "runs", strconv.Itoa(n), "report.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var l reportLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Time > 0 {
				lines = append(lines, l)
			}
		}
		f.Close()
	}
	return lines
}

// retrained is how far below the last step reported before the fault at
// f the first step reported after it lies: steps trained twice (the
// trainer reports every few steps, so this is exact to a report interval).
func retrained(lines []reportLine, f time.Time) (float64, bool) {
	at := float64(f.UnixNano()) / 1e9
	before, after := int64(-1), int64(-1)
	for _, l := range lines {
		if l.Time < at {
			before = max(before, l.Step)
		} else if after < 0 || l.Step < after {
			after = l.Step
		}
	}
	if before < 0 || after < 0 {
		return 0, false
	}
	return max(0, float64(before-after)), true
}

func lostFrom(lines []reportLine, f time.Time) float64 {
	at := float64(f.UnixNano()) / 1e9
	after := int64(-1)
	for _, l := range lines {
		if l.Time >= at && (after < 0 || l.Step < after) {
			after = l.Step
		}
	}
	return float64(after)
}

// A trial whose trainer finishes while the Temporal server is down — the
// result cannot reach it, and the outage outlasts the activity's heartbeat
// timeout, so the server gives that attempt up and schedules another — is
// recorded as finished when the server is back: the trainer is not
// launched again, and no restart is counted.
//
// The outage strikes the run going when the server stops, whichever it
// is: on a loaded machine a heartbeat can miss before the outage and the
// trial relaunch (the suite saw run 2 going while the test waited for run
// 1 to finish, until its deadline ran out).
func TestTrialFinishedDuringOutageIsNotTrainedAgain(t *testing.T) {
	srv := startServer(t, devserver.Options{DBFile: filepath.Join(t.TempDir(), "temporal.db")})
	cfg := testenv.Worker(t, srv, "outage", nil)
	const steps = 150
	spec := testenv.MLPSpec(t, "outage", 1, 1, steps, 20)
	run := startCampaign(t, srv.Client(), "outage", spec)
	var before workflows.TrialStatus
	waitTrial(t, srv.Client(), workflows.TrialWorkflowID(run.GetID(), 1), 2*time.Minute, "the trial to train", func(s workflows.TrialStatus) bool {
		before = s
		return s.State == workflows.TrialRunning && s.Step >= 20
	})
	trialDir := filepath.Join(cfg.DataDir, spec.Name, "t00001")
	outageRun := 0 // the run going when the server stopped
	stoppedInOutage := false
	// The outage (the trainer finishing, the heartbeat timeout) and the
	// restart, within the server's own start deadline on a loaded machine.
	err := srv.RestartAfter(testContext(t, 2*time.Minute+devserver.DefaultStartTimeout), func(ctx context.Context) error {
		// No run starts while the server is down: the newest is the one
		// the outage strikes.
		if outageRun = newestRunDir(filepath.Join(trialDir, "runs")); outageRun == 0 {
			return fmt.Errorf("no run directory in %s when the server stopped", trialDir)
		}
		// The trainer finishes, or the worker stops it at a checkpoint:
		// the SDK cancels a run whose heartbeat fails, and on a loaded
		// machine that can come before the trainer's last step.
		runDir := filepath.Join(trialDir, "runs", strconv.Itoa(outageRun))
		finished := func() (bool, error) {
			b, err := os.ReadFile(filepath.Join(runDir, "run.json"))
			if err == nil && strings.Contains(string(b), `"finished":true`) {
				return true, nil
			}
			log, _ := os.ReadFile(filepath.Join(runDir, "trainer.log"))
			stoppedInOutage = strings.Contains(string(log), "go-mlp: stopped at step")
			return stoppedInOutage, nil
		}
		// The trainer has a few seconds of training left; a loaded
		// machine gets two minutes.
		fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := waitUntil(fctx, finished); err != nil {
			ledger, _ := os.ReadFile(filepath.Join(runDir, "run.json"))
			log, _ := os.ReadFile(filepath.Join(runDir, "trainer.log"))
			return fmt.Errorf("the trainer of run %d did not finish while the server was down: %w\nrun.json: %s\ntrainer.log (tail):\n%s",
				outageRun, err, ledger, log[max(0, len(log)-1500):])
		}
		// The outage's length is the fault being injected, not a wait
		// for something to happen.
		select {
		case <-time.After(workflows.TrialHeartbeatTimeout + 5*time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	res := campaignResult(t, srv.Client().GetWorkflow(testContext(t, time.Minute), run.GetID(), ""), 3*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != 1 {
		t.Fatalf("result %s %+v, want the trial completed", res.State, res.CampaignCounts)
	}
	reports := trialReports(t, srv.Client(), spec.Name, 1)
	checkAllTrainedOnce(t, reports, steps)
	if r := reports[0]; r.Restarts != before.Restarts {
		t.Errorf("trial %s: %d restarts after the outage, %d before it; want none counted for the outage", r.TrialID, r.Restarts, before.Restarts)
	}
	if outageRun > 1 {
		t.Logf("the outage struck run %d (%d restarts and %d rescales before it)", outageRun, before.Restarts, before.Rescales)
	}
	if stoppedInOutage {
		// Not the case this test is for, but one that must hold too: the
		// run resumed from its checkpoint (all samples once, above) with no
		// restart counted. Said loudly, so a machine where it always
		// happens is noticed.
		t.Logf("the worker stopped run %d's trainer at a checkpoint when its heartbeat failed, before it finished: checked it resumed, not that a finish is kept", outageRun)
		return
	}
	if n := newestRunDir(filepath.Join(trialDir, "runs")); n != outageRun {
		t.Errorf("the trainer was launched again after the outage: run %d, after run %d finished during it", n, outageRun)
	}
	log := filepath.Join(trialDir, "runs", strconv.Itoa(outageRun), "trainer.log")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if launches := strings.Count(string(b), "go-mlp: trial "); launches != 1 {
		t.Errorf("run %d's trainer was launched %d times, want once (%s)", outageRun, launches, log)
	}
}

// newestRunDir is the highest run number among dir's run directories (0
// when there is none).
func newestRunDir(dir string) int {
	entries, _ := os.ReadDir(dir)
	newest := 0
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > newest {
			newest = n
		}
	}
	return newest
}
