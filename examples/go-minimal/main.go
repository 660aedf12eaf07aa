// Command go-minimal is a complete minimal Gleaner trainer in Go
// (docs/write-a-trainer.md): logistic regression on a synthetic two-class
// problem, trained by minibatch SGD, with nothing but package trial. It
// does what the trial protocol (docs/protocol.md) asks of every trainer:
// reads its assignment from the GLEANER_* environment, resumes from
// GLEANER_RESUME_FROM continuing its counters, reports step, samples and
// metrics, stops at GLEANER_BUDGET (else after `steps`), and on SIGTERM or
// at the end writes a checkpoint atomically, reports it and exits 0.
//
// The batch of step s depends only on (seed, s), so a resumed run trains
// exactly what an uninterrupted one would. Check it with
//
//	go build -o bin/go-minimal ./examples/go-minimal
//	gleaner trainer check -- bin/go-minimal
//
// Parameters: lr (0.5), batch (32), steps (200), seed (1), step_ms (20: a
// sleep per step, so a run lasts long enough to be stopped), report_every
// (5), checkpoint_every (50).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gleaner-hpc/gleaner/trial"
)

const (
	features = 8
	trainSet = 6400 // training examples: an epoch
)

// hyper are the parameters; a missing one keeps its default.
type hyper struct {
	LR              trial.Number `json:"lr"`
	Batch           trial.Number `json:"batch"`
	Steps           trial.Number `json:"steps"`
	Seed            trial.Number `json:"seed"`
	StepMS          trial.Number `json:"step_ms"`
	ReportEvery     trial.Number `json:"report_every"`
	CheckpointEvery trial.Number `json:"checkpoint_every"`
}

// state is what a checkpoint holds: the weights (bias last) and the
// cumulative counters.
type state struct {
	W       []float64 `json:"w"`
	Step    int64     `json:"step"`
	Samples float64   `json:"samples"`
}

// example is example i of the data set: features and a label from a fixed
// teacher.
func example(seed uint64, i int64) ([]float64, float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	x := make([]float64, features)
	teacher := 0.0
	for j := range x {
		x[j] = rng.NormFloat64()
		teacher += float64(j+1) * math.Pow(-1, float64(j)) * x[j]
	}
	if teacher+2*rng.NormFloat64() > 0 {
		return x, 1
	}
	return x, 0
}

// lossAndGrad is the batch's mean logistic loss and its gradient.
func lossAndGrad(w []float64, seed uint64, idx []int64) (float64, []float64) {
	grad := make([]float64, features+1)
	loss := 0.0
	for _, i := range idx {
		x, y := example(seed, i)
		z := w[features]
		for j, v := range x {
			z += w[j] * v
		}
		p := 1 / (1 + math.Exp(-max(min(z, 30), -30)))
		loss -= y*math.Log(p+1e-12) + (1-y)*math.Log(1-p+1e-12)
		for j, v := range x {
			grad[j] += (p - y) * v
		}
		grad[features] += p - y
	}
	n := float64(len(idx))
	for j := range grad {
		grad[j] /= n
	}
	return loss / n, grad
}

func run() error {
	trial.Stopping() // first: SIGTERM now asks us to stop instead of killing us
	env, err := trial.LoadEnv()
	if err != nil {
		return err // it names the GLEANER_* variable at fault
	}
	h := hyper{LR: 0.5, Batch: 32, Steps: 200, Seed: 1, StepMS: 20, ReportEvery: 5, CheckpointEvery: 50}
	if err := env.DecodeParams(&h); err != nil {
		return err
	}
	seed, batch := uint64(h.Seed), int64(h.Batch)

	st := state{W: make([]float64, features+1)}
	if env.Resuming() {
		if err := trial.LoadCheckpoint(env.ResumeFrom, func(r io.Reader) error { return json.NewDecoder(r).Decode(&st) }); err != nil {
			return fmt.Errorf("%s: %w", trial.EnvResumeFrom, err)
		}
	}
	val := make([]int64, 256) // held out: negative indices
	for i := range val {
		val[i] = -1 - int64(i)
	}
	rep, err := env.Reporter()
	if err != nil {
		return err
	}
	defer rep.Close()

	epoch := func() float64 { return st.Samples / trainSet }
	checkpoint := func(metrics map[string]float64) error {
		path, err := env.SaveCheckpoint(trial.CheckpointName(st.Step, ".json"), func(w io.Writer) error {
			return json.NewEncoder(w).Encode(st)
		})
		if err != nil {
			return err
		}
		if err := rep.Report(trial.Report{Samples: st.Samples, Step: st.Step, Epoch: epoch(), Metrics: metrics, Checkpoint: path}); err != nil {
			return err
		}
		return trial.PruneCheckpoints(env.CheckpointDir, "step-*.json", 2)
	}
	ended := func() bool {
		if env.Budget > 0 { // the budget, not `steps`, says where this run ends
			return env.BudgetReached(st.Samples, st.Step, epoch())
		}
		return st.Step >= int64(h.Steps)
	}

	for !ended() && !trial.StopRequested() {
		idx := make([]int64, batch)
		for k := range idx {
			idx[k] = (st.Step*batch + int64(k)) % trainSet
		}
		loss, grad := lossAndGrad(st.W, seed, idx)
		for j := range st.W {
			st.W[j] -= float64(h.LR) * grad[j]
		}
		st.Step, st.Samples = st.Step+1, st.Samples+float64(batch)
		time.Sleep(time.Duration(float64(h.StepMS) * float64(time.Millisecond)))
		if st.Step%int64(h.ReportEvery) == 0 {
			valLoss, _ := lossAndGrad(st.W, seed, val)
			if err := rep.Report(trial.Report{Samples: st.Samples, Step: st.Step, Epoch: epoch(),
				Metrics: map[string]float64{"loss": loss, "val_loss": valLoss}}); err != nil {
				return err
			}
		}
		if st.Step%int64(h.CheckpointEvery) == 0 {
			if err := checkpoint(nil); err != nil {
				return err
			}
		}
	}
	// Stopped, at the budget, or done: checkpoint, report, exit 0.
	valLoss, _ := lossAndGrad(st.W, seed, val)
	return checkpoint(map[string]float64{"val_loss": valLoss})
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "go-minimal:", err)
		os.Exit(1)
	}
}
