// Command go-mlp is Gleaner's example Go trainer: a small multilayer
// perceptron classifying interleaved 2-D spirals it generates itself,
// trained by minibatch SGD with momentum, data-parallel over GLEANER_NODES
// workers. It speaks the trial protocol (docs/protocol.md) through package
// trial: parameters from the params file, progress and metrics to the
// report file, a checkpoint every checkpoint_every steps and on SIGTERM,
// exact resumption from GLEANER_RESUME_FROM.
//
//	go build -o bin/go-mlp ./examples/go-mlp
//
// Exit status: 0 when the budget is done or after a graceful stop; 1 for a
// bad environment or checkpoint; 2 for bad parameters; 3 for the test-only
// fail_at_step.
package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gleaner-hpc/gleaner/trial"
)

const (
	exitOK       = 0
	exitEnv      = 1
	exitParams   = 2
	exitInjected = 3

	classes    = 3
	perClass   = 1000 // spiral points per class
	valSize    = 600
	dataSeed   = 7 // the data set is the same for every trial
	keepCkpts  = 2
	ckptSuffix = ".gob"
)

func main() {
	stop := trial.Stopping() // before anything slow, so SIGTERM never kills us mid-write
	env, err := trial.LoadEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-mlp:", err)
		os.Exit(exitEnv)
	}
	os.Exit(run(env, stop, os.Stderr))
}

func run(env trial.Env, stop <-chan struct{}, log io.Writer) int {
	h := defaultHyper()
	if err := env.DecodeParams(&h); err != nil {
		fmt.Fprintln(log, "go-mlp:", err)
		return exitParams
	}
	if err := h.validate(); err != nil {
		fmt.Fprintf(log, "go-mlp: %s: %v\n", trial.EnvParamsFile, err)
		return exitParams
	}

	all := spiral(classes, perClass, 0.2, dataSeed)
	train, val := all.splitAt(all.len()-valSize, dataSeed)
	model := mlp{in: 2, hidden: h.Hidden.Int(), classes: classes}
	tr := newTrainer(model, train, float64(h.LR), float64(h.Momentum), h.Batch.Int(), env.Nodes, uint64(h.Seed))
	steps := h.budget(train.len())

	var step, samples int64
	if env.Resuming() {
		var s *state
		err := trial.LoadCheckpoint(env.ResumeFrom, func(r io.Reader) (err error) {
			s, err = decodeState(r)
			return err
		})
		if err == nil {
			err = tr.restore(s)
		}
		if err != nil {
			fmt.Fprintf(log, "go-mlp: %s: %v\n", trial.EnvResumeFrom, err)
			return exitEnv
		}
		step, samples = s.Step, s.Samples
	}

	rep, err := env.Reporter()
	if err != nil {
		fmt.Fprintf(log, "go-mlp: %s: %v\n", trial.EnvReportFile, err)
		return exitEnv
	}
	defer rep.Close()
	garbage := garbageWriter{path: env.ReportFile}

	fmt.Fprintf(log, "go-mlp: trial %q on %d node(s) %v: %d hidden, batch %d, lr %g, steps %d→%d\n",
		env.TrialID, env.Nodes, env.Hosts, model.hidden, tr.batch, float64(h.LR), step, steps)

	progress := func(checkpoint string, trainLoss float64) trial.Report {
		valLoss, acc := model.evaluate(tr.weights, val)
		m := map[string]float64{"val_loss": valLoss, "accuracy": acc}
		if trainLoss >= 0 {
			m["loss"] = trainLoss
		}
		return trial.Report{
			Samples: float64(samples), Step: step, Epoch: float64(samples) / float64(train.len()),
			Metrics: m, Checkpoint: checkpoint,
		}
	}
	checkpoint := func(trainLoss float64) error {
		path, err := env.SaveCheckpoint(trial.CheckpointName(step, ckptSuffix), tr.snapshot(step, samples).encode)
		if err != nil {
			return err
		}
		if err := rep.Report(progress(path, trainLoss)); err != nil {
			return err
		}
		// Only now, with the new checkpoint reported, may older ones go.
		return trial.PruneCheckpoints(env.CheckpointDir, "step-*"+ckptSuffix, keepCkpts)
	}
	stopped := func() bool {
		if h.IgnoreSigterm {
			return false
		}
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}

	var lossSum float64
	var lossN int
	meanLoss := func() float64 {
		if lossN == 0 {
			return -1
		}
		l := lossSum / float64(lossN)
		lossSum, lossN = 0, 0
		return l
	}
	for step < steps {
		if stopped() {
			if err := checkpoint(meanLoss()); err != nil {
				fmt.Fprintln(log, "go-mlp: checkpoint on stop:", err)
				return exitEnv
			}
			fmt.Fprintf(log, "go-mlp: stopped at step %d, checkpoint written\n", step)
			return exitOK
		}
		lossSum += tr.step()
		lossN++
		step++
		samples += int64(tr.batch)

		if h.FailAtStep > 0 && step == int64(h.FailAtStep) && !env.Resuming() {
			fmt.Fprintf(log, "go-mlp: failing at step %d as fail_at_step asks\n", step)
			return exitInjected
		}
		if step%int64(h.CheckpointEvery) == 0 && step < steps {
			if err := checkpoint(meanLoss()); err != nil {
				fmt.Fprintln(log, "go-mlp: checkpoint:", err)
				return exitEnv
			}
		} else if step%int64(h.ReportEvery) == 0 && step < steps {
			if h.GarbageReports {
				garbage.write()
			}
			if err := rep.Report(progress("", meanLoss())); err != nil {
				fmt.Fprintln(log, "go-mlp:", err)
				return exitEnv
			}
		}
		if h.StepMS > 0 {
			cut := stop
			if h.IgnoreSigterm {
				cut = nil // a trainer that ignores SIGTERM keeps its pace too
			}
			select { // a stop cuts the sleep short
			case <-cut:
			case <-time.After(time.Duration(float64(h.StepMS) * float64(time.Millisecond))):
			}
		}
	}
	if err := checkpoint(meanLoss()); err != nil {
		fmt.Fprintln(log, "go-mlp: final checkpoint:", err)
		return exitEnv
	}
	fmt.Fprintf(log, "go-mlp: done at step %d\n", step)
	return exitOK
}

// garbageWriter appends malformed lines for the garbage_reports test mode:
// the reader must count and skip them.
type garbageWriter struct {
	path string
	n    int
}

func (g *garbageWriter) write() {
	lines := []string{
		"this is not json",
		`{"samples": -5, "step": 1}`,
		`{"step": "ten", "metrics": {"loss": 1}}`,
		`[1, 2, 3]`,
		`{"samples": 1, "metrics": {"loss": NaN}}`,
		`{"step": 3`,
		string(make([]byte, trial.MaxReportLine+10)), // NULs, over the line limit
	}
	f, err := os.OpenFile(g.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.Write([]byte(lines[g.n%len(lines)] + "\n"))
	g.n++
}
