package mlp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/trial"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func TestTrainsToCompletionAndLearns(t *testing.T) {
	d := newTrial(t)
	r := d.launch(map[string]any{"lr": 0.1, "hidden": 32, "batch": "64", "steps": 400}, 2, "")
	if code := r.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderr)
	}
	reps, bad := r.read()
	if bad != 0 {
		t.Errorf("%d malformed lines", bad)
	}
	for i, rep := range reps {
		if rep.Samples != float64(rep.Step*64) {
			t.Errorf("report %d: samples %v at step %d, want step×64", i, rep.Samples, rep.Step)
		}
		if i > 0 && rep.Step <= reps[i-1].Step {
			t.Errorf("report %d: step %d after %d", i, rep.Step, reps[i-1].Step)
		}
		for _, m := range []string{"loss", "val_loss", "accuracy"} {
			if _, ok := rep.Metrics[m]; !ok {
				t.Errorf("report %d lacks %s: %+v", i, m, rep)
			}
		}
	}
	want := rendezvousInfo{NodeRank: 0, NumHosts: 1, HostAddr: "127.0.0.1", WorldSize: 2, LocalNodes: 2, NodeOffset: 0, AllReduce: 3}
	if infos := r.rendezvous(); len(infos) != 1 || infos[0] != want {
		t.Errorf("rendezvous lines %+v, want one: %+v", infos, want)
	}
	first, last := reps[0], reps[len(reps)-1]
	if last.Step != 400 || last.Checkpoint == "" {
		t.Fatalf("last report %+v, want step 400 with a checkpoint", last)
	}
	if _, err := os.Stat(last.Checkpoint); err != nil {
		t.Errorf("final checkpoint: %v", err)
	}
	if !(last.Metrics["val_loss"] < 0.6*first.Metrics["val_loss"]) || !(last.Metrics["loss"] < first.Metrics["loss"]) {
		t.Errorf("loss did not fall: first %v, last %v", first.Metrics, last.Metrics)
	}
	if last.Metrics["accuracy"] < 0.7 {
		t.Errorf("accuracy %v after 400 steps, want ≥ 0.7 (chance is 1/3)", last.Metrics["accuracy"])
	}
	if ckpts, _ := filepath.Glob(filepath.Join(d.ckptDir(), "step-*.gob")); len(ckpts) != keepCkpts {
		t.Errorf("%d checkpoints kept, want %d: %v", len(ckpts), keepCkpts, ckpts)
	}
}

func TestSigtermCheckpointsAndResumeContinues(t *testing.T) {
	d := newTrial(t)
	params := map[string]any{"steps": 300, "step_ms": 10, "batch": 32, "checkpoint_every": 1000}
	r := d.launch(params, 2, "")
	r.waitForStep(30)
	r.signal(syscall.SIGTERM)
	if code := r.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0; stderr:\n%s", code, r.stderr)
	}
	reps, _ := r.read()
	ck := lastCheckpoint(t, reps)
	if reps[len(reps)-1].Checkpoint != ck.Checkpoint || ck.Step < 30 || ck.Step >= 300 || ck.Samples != float64(ck.Step*32) {
		t.Fatalf("stop checkpoint %+v: want the last line, 30 ≤ step < 300, samples = step×32", ck)
	}
	if _, err := os.Stat(ck.Checkpoint); err != nil {
		t.Fatal(err)
	}

	// Resume on a different node count: progress continues, never restarts.
	r2 := d.launch(params, 3, ck.Checkpoint)
	if code := r2.wait(20 * time.Second); code != 0 {
		t.Fatalf("resumed run: exit %d; stderr:\n%s", code, r2.stderr)
	}
	reps2, _ := r2.read()
	if len(reps2) == 0 {
		t.Fatal("resumed run reported nothing")
	}
	if first := reps2[0]; first.Step <= ck.Step || first.Step > ck.Step+10 || first.Samples != float64(first.Step*32) {
		t.Errorf("resumed run's first report %+v; want step in (%d, %d] and samples = step×32", first, ck.Step, ck.Step+10)
	}
	if last := reps2[len(reps2)-1]; last.Step != 300 || last.Samples != 300*32 || last.Checkpoint == "" {
		t.Errorf("resumed run's last report %+v, want step 300, samples 9600, a checkpoint", last)
	}
}

// With a budget the trainer stops where its counter reaches it, within a
// step, checkpoints, reports and exits 0; a later run with a larger budget
// continues from that checkpoint, retraining nothing, and stops at the new
// budget; a run whose checkpoint is already at its budget trains nothing.
func TestBudgetStopsAndContinues(t *testing.T) {
	const batch = 32
	trainSize := float64(classes*perClass - valSize)
	cases := []struct {
		unit          string
		first, second float64
		counter       func(trial.Report) float64
		perStep       float64 // how far one step moves the counter
	}{
		{trial.BudgetSamples, 1000, 2500, func(r trial.Report) float64 { return r.Samples }, batch},
		{trial.BudgetSteps, 45, 100, func(r trial.Report) float64 { return float64(r.Step) }, 1},
		{trial.BudgetEpochs, 0.5, 1.25, func(r trial.Report) float64 { return r.Epoch }, batch / trainSize},
	}
	for _, c := range cases {
		t.Run(c.unit, func(t *testing.T) {
			// Without the budget it would train for 100000 steps.
			params := map[string]any{"steps": 100000, "batch": batch, "hidden": 16, "report_every": 10, "checkpoint_every": 1000}
			d := newTrial(t)
			atBudget := func(r *launchRun, budget float64, resumed *trial.Report) trial.Report {
				t.Helper()
				if code := r.wait(20 * time.Second); code != 0 {
					t.Fatalf("exit %d, want 0; stderr:\n%s", code, r.stderr)
				}
				if !strings.Contains(r.stderr.String(), "budget reached") {
					t.Errorf("stderr %q does not say the budget was reached", r.stderr)
				}
				reps, bad := r.read()
				if bad != 0 || len(reps) == 0 {
					t.Fatalf("%d reports, %d malformed", len(reps), bad)
				}
				for i, rep := range reps {
					if rep.Samples != float64(rep.Step*batch) || rep.Epoch != rep.Samples/trainSize {
						t.Errorf("report %d: %+v; want samples = step×%d, epoch = samples/%v", i, rep, batch, trainSize)
					}
				}
				if resumed != nil { // continues from the checkpoint: nothing retrained
					if first := reps[0]; first.Step <= resumed.Step || first.Step > resumed.Step+10 {
						t.Errorf("first report after resuming at step %d: %+v; want step in (%d, %d]", resumed.Step, first, resumed.Step, resumed.Step+10)
					}
				}
				last := reps[len(reps)-1]
				if last.Checkpoint == "" || last.Metrics["val_loss"] == 0 {
					t.Fatalf("last report %+v, want the checkpoint with the final metrics", last)
				}
				if _, err := os.Stat(last.Checkpoint); err != nil {
					t.Fatal(err)
				}
				// At the budget, and by less than one step past it.
				if got := c.counter(last); got < budget || got >= budget+c.perStep {
					t.Errorf("stopped at %s %v, want in [%v, %v)", c.unit, got, budget, budget+c.perStep)
				}
				return last
			}

			ck := atBudget(d.launchBudget(params, 2, "", c.first, c.unit), c.first, nil)
			ck2 := atBudget(d.launchBudget(params, 3, ck.Checkpoint, c.second, c.unit), c.second, &ck)

			// Its checkpoint is at the budget already: it trains nothing.
			again := d.launchBudget(params, 1, ck2.Checkpoint, c.second, c.unit)
			if code := again.wait(20 * time.Second); code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, again.stderr)
			}
			reps, _ := again.read()
			if len(reps) != 1 || reps[0].Step != ck2.Step || reps[0].Checkpoint == "" {
				t.Errorf("run at its budget reported %+v, want one checkpoint at step %d", reps, ck2.Step)
			}
		})
	}
}

// ignore_budget makes a trainer that does not cooperate (Gleaner stops it
// once its reports cross the budget): it trains to its own end.
func TestIgnoreBudgetTrainsToTheEnd(t *testing.T) {
	r := newTrial(t).launchBudget(map[string]any{"steps": 50, "ignore_budget": true}, 1, "", 640, trial.BudgetSamples)
	if code := r.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderr)
	}
	reps, _ := r.read()
	if last := reps[len(reps)-1]; last.Step != 50 || last.Checkpoint == "" {
		t.Errorf("last report %+v, want step 50 with a checkpoint, past the budget of 640 samples", last)
	}
}

func TestResumeIsExact(t *testing.T) {
	params := func(steps int) map[string]any {
		return map[string]any{"steps": steps, "hidden": 16, "checkpoint_every": 1000}
	}
	whole := newTrial(t).launch(params(200), 2, "")
	if code := whole.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, whole.stderr)
	}
	a, _ := whole.read()
	b := resumedHalfway(t, params)
	wantLast, gotLast := a[len(a)-1], b[len(b)-1]
	if gotLast.Step != 200 || gotLast.Samples != wantLast.Samples || gotLast.Metrics["val_loss"] != wantLast.Metrics["val_loss"] {
		t.Errorf("100 + 100 steps ended at %+v; 200 steps at %+v: want identical progress and val_loss", gotLast, wantLast)
	}
}

func TestFailAtStepFailsOnlyTheFirstRun(t *testing.T) {
	d := newTrial(t)
	params := map[string]any{"steps": 60, "fail_at_step": 25, "checkpoint_every": 10}
	r := d.launch(params, 1, "")
	if code := r.wait(20 * time.Second); code != exitInjected {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInjected, r.stderr)
	}
	reps, _ := r.read()
	ck := lastCheckpoint(t, reps)
	if ck.Step != 20 {
		t.Fatalf("last checkpoint at step %d, want 20", ck.Step)
	}
	retry := d.launch(params, 1, ck.Checkpoint)
	if code := retry.wait(20 * time.Second); code != 0 {
		t.Fatalf("retry: exit %d; stderr:\n%s", code, retry.stderr)
	}
	reps, _ = retry.read()
	if last := reps[len(reps)-1]; last.Step != 60 {
		t.Errorf("retry ended at %+v, want step 60", last)
	}
}

func TestGarbageReportsAreInterleaved(t *testing.T) {
	d := newTrial(t)
	r := d.launch(map[string]any{"steps": 100, "garbage_reports": true, "checkpoint_every": 50}, 2, "")
	if code := r.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, r.stderr)
	}
	reps, bad := r.read()
	// Steps 10..90 report (50 checkpoints instead); each plain report is
	// preceded by one garbage line.
	if bad != 8 || len(reps) != 10 {
		t.Errorf("%d good and %d malformed lines, want 10 and 8", len(reps), bad)
	}
	if last := reps[len(reps)-1]; last.Step != 100 || last.Checkpoint == "" {
		t.Errorf("last report %+v", last)
	}
}

func TestIgnoreSigtermNeedsSIGKILL(t *testing.T) {
	d := newTrial(t)
	r := d.launch(map[string]any{"steps": 100000, "step_ms": 5, "ignore_sigterm": "true"}, 1, "")
	r.waitForStep(10)
	r.signal(syscall.SIGTERM)
	select {
	case <-r.done:
		t.Fatalf("exited after SIGTERM despite ignore_sigterm: %v", r.err)
	case <-time.After(time.Second):
	}
	r.signal(syscall.SIGKILL)
	if code := r.wait(10 * time.Second); code != -1 {
		t.Errorf("exit %d, want -1 (killed)", code)
	}
}

func TestBadInputExitsWithAClearError(t *testing.T) {
	t.Run("environment", func(t *testing.T) {
		cmd := exec.Command(trainerBinary(t))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitEnv || !strings.Contains(string(out), trial.EnvParamsFile) {
			t.Errorf("exit %v, output %q; want %d naming %s", err, out, exitEnv, trial.EnvParamsFile)
		}
	})
	t.Run("params", func(t *testing.T) {
		r := newTrial(t).launch(map[string]any{"hidden": 0}, 1, "")
		if code := r.wait(10 * time.Second); code != exitParams || !strings.Contains(r.stderr.String(), "hidden") {
			t.Errorf("exit %d, stderr %q; want %d naming hidden", code, r.stderr, exitParams)
		}
	})
	t.Run("checkpoint of another shape", func(t *testing.T) {
		d := newTrial(t)
		r := d.launch(map[string]any{"hidden": 8, "steps": 10}, 1, "")
		if code := r.wait(10 * time.Second); code != 0 {
			t.Fatalf("exit %d: %s", code, r.stderr)
		}
		reps, _ := r.read()
		r2 := d.launch(map[string]any{"hidden": 9, "steps": 20}, 1, lastCheckpoint(t, reps).Checkpoint)
		if code := r2.wait(10 * time.Second); code != exitEnv || !strings.Contains(r2.stderr.String(), trial.EnvResumeFrom) {
			t.Errorf("exit %d, stderr %q; want %d naming %s", code, r2.stderr, exitEnv, trial.EnvResumeFrom)
		}
	})
}

func TestCampaignSpecIsValid(t *testing.T) {
	raw, err := os.ReadFile("../campaign.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var spec gleaner.CampaignSpec
	if err := dec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Command, []string{"bin/go-mlp"}) || spec.Objective.Metric != "val_loss" {
		t.Errorf("spec = %+v", spec)
	}
	// Every parameter the space draws must be one the trainer reads.
	h := defaultHyper()
	for _, p := range spec.Space {
		probe, _ := json.Marshal(map[string]any{p.Name: "nonsense"})
		if err := json.Unmarshal(probe, &h); err == nil {
			t.Errorf("space parameter %q is not a trainer parameter", p.Name)
		}
	}
	// And every point of the space must be a valid set of parameters.
	sampledParams(t, spec.Space)
}

// Gradients of the hand-written backward pass against central differences.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	m := mlp{in: 2, hidden: 5, classes: 3}
	rng := rand.New(rand.NewPCG(3, 4))
	w := m.init(rng)
	for i := range w {
		w[i] += 0.1 * rng.NormFloat64() // non-zero biases too
	}
	s := m.scratch()
	x, y := []float64{0.3, -0.7}, 2
	g := make([]float64, m.size())
	m.accumulate(w, g, x, y, s)
	const h = 1e-6
	for i := range w {
		orig := w[i]
		w[i] = orig + h
		up := m.forward(w, x, y, s)
		w[i] = orig - h
		down := m.forward(w, x, y, s)
		w[i] = orig
		if num := (up - down) / (2 * h); math.Abs(num-g[i]) > 1e-6*(1+math.Abs(num)) {
			t.Errorf("weight %d: backward %v, finite difference %v", i, g[i], num)
		}
	}
}

// Data parallelism changes who computes what, not the update.
func TestAllreduceMatchesOneWorker(t *testing.T) {
	data := spiral(3, 100, 0.2, 1)
	m := mlp{in: 2, hidden: 8, classes: 3}
	checkWorkersMatch(t, m, 4)
	if w := newTrainer(m, data, 0.1, 0.9, 2, allNodes(8), 5).span.count; w != 2 {
		t.Errorf("%d workers for a batch of 2", w)
	}
}

// checkWorkersMatch trains m for 5 steps on one worker and on workers,
// and requires the same losses and weights (to rounding).
func checkWorkersMatch(t *testing.T, m mlp, workers int) {
	t.Helper()
	data := spiral(3, 100, 0.2, 1)
	one := newTrainer(m, data, 0.1, 0.9, 30, allNodes(1), 5)
	many := newTrainer(m, data, 0.1, 0.9, 30, allNodes(workers), 5)
	for range 5 {
		l1, _ := one.step(nil)
		ln, _ := many.step(nil)
		if math.Abs(l1-ln) > 1e-12 {
			t.Fatalf("loss %v on one worker, %v on %d", l1, ln, workers)
		}
	}
	for i := range one.weights {
		if math.Abs(one.weights[i]-many.weights[i]) > 1e-12 {
			t.Fatalf("weight %d: %v on one worker, %v on %d", i, one.weights[i], many.weights[i], workers)
		}
	}
}
