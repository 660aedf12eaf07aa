package benchrun

// Temporal's floor: the same trials run by the least a Temporal program
// can do for them, on a dev server of its own. It is what any design with
// a Temporal call per trial costs on this machine, to read Gleaner's and
// Optuna's figures against.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
)

// FloorFigure is the floor's run: the same trainer, parameters and
// concurrency with nothing of Gleaner's (no pool, searcher, records,
// ledger or sweep).
type FloorFigure struct {
	// Mode is what one trial costs Temporal there: "activity" (a plain
	// workflow runs an activity per trial, as an inline campaign does) or
	// "workflow" (it starts a child workflow per trial, which runs one
	// activity).
	Mode      string `json:"mode"`
	Trials    int    `json:"trials"`
	Completed int    `json:"completed"`
	// Failed counts the trials whose trainer failed or reported no
	// val_loss (the Optuna script counts them the same way).
	Failed            int     `json:"failed"`
	WallSeconds       float64 `json:"wall_seconds"`
	TrialsPerSecond   float64 `json:"trials_per_second"`
	ServerCPUSeconds  float64 `json:"server_cpu_seconds"`
	WorkerCPUSeconds  float64 `json:"worker_cpu_seconds"`
	TrainerCPUSeconds float64 `json:"trainer_cpu_seconds"`
}

// describe is the floor's mode in words.
func (f FloorFigure) describe() string {
	if f.Mode == floorWorkflow {
		return "a child workflow per trial, each running one activity"
	}
	return "one workflow running an activity per trial, the next queued on the worker behind each"
}

// FloorMaxTrials bounds --vs-floor: the floor is one workflow without
// continue-as-new (5 to 9 history events a trial, under Temporal's limit
// of 51,200).
const FloorMaxTrials = 5000

const (
	floorActivity = "activity"
	floorWorkflow = "workflow"

	floorQueue        = "gleaner-bench-floor"
	floorWorkflowName = "BenchFloor"
	floorTrialName    = "BenchFloorTrial"
	floorRunName      = "BenchFloorRun"
)

// floorInput is the floor workflow's input.
type floorInput struct {
	Trials     int
	Concurrent int
	Children   bool
}

// floorCampaign keeps Concurrent trials training until Trials have
// ended, and returns how many completed (the others failed). Activities
// are pipelined as Gleaner's inline campaigns are: as many again are
// queued on the worker, each waiting for a slot (floorRunner.slots), so
// that the next trainer starts the moment one ends, without a round trip
// through the server. Child workflows are not
// (as Gleaner's trial workflows are not): fifty children queued besides
// cost the server more than the round trip (16.1 against 18.5 trials/s
// here).
func floorCampaign(ctx workflow.Context, in floorInput) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, floorActivityOptions)
	sel := workflow.NewSelector(ctx)
	started, inFlight, completed := 0, 0, 0
	limit := 2 * in.Concurrent
	if in.Children {
		limit = in.Concurrent
	}
	for started < in.Trials || inFlight > 0 {
		for inFlight < limit && started < in.Trials {
			var f workflow.Future
			if in.Children {
				cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: fmt.Sprintf("bench-floor-trial-%d", started)})
				f = workflow.ExecuteChildWorkflow(cctx, floorTrialName, started)
			} else {
				f = workflow.ExecuteActivity(ctx, floorRunName, started)
			}
			started++
			inFlight++
			sel.AddFuture(f, func(f workflow.Future) {
				inFlight--
				if f.Get(ctx, nil) == nil {
					completed++
				}
			})
		}
		sel.Select(ctx)
	}
	return completed, nil
}

var floorActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 24 * time.Hour, // a queued run waits for a slot first
	RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
}

// floorTrial is the child workflow of the "workflow" floor.
func floorTrial(ctx workflow.Context, i int) error {
	ctx = workflow.WithActivityOptions(ctx, floorActivityOptions)
	return workflow.ExecuteActivity(ctx, floorRunName, i).Get(ctx, nil)
}

// floorRunner runs trial i's trainer as scripts/campaign_optuna.py's
// run_trial does: the same files and environment, parameters drawn from
// the benchmark campaign's own space, and the trial's directory removed
// after; at most cap(slots) trainers at once.
type floorRunner struct {
	trainer, work string
	space         hpo.Space
	slots         chan struct{}
}

func (r floorRunner) run(ctx context.Context, i int) error {
	d := filepath.Join(r.work, fmt.Sprintf("t%06d", i))
	ckpt := filepath.Join(d, "checkpoints")
	if err := os.MkdirAll(ckpt, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(d)
	params, err := json.Marshal(r.space.Sample(rand.New(rand.NewPCG(uint64(i), 1))))
	if err != nil {
		return err
	}
	pf, hf, rf := filepath.Join(d, "params.json"), filepath.Join(d, "hostfile"), filepath.Join(d, "report.jsonl")
	for _, f := range []struct {
		path string
		b    []byte
	}{{pf, params}, {hf, []byte("local/0\n")}, {rf, nil}} {
		if err := os.WriteFile(f.path, f.b, 0o644); err != nil {
			return err
		}
	}
	logFile, err := os.Create(filepath.Join(d, "trainer.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	// Everything is ready: the trainer starts the moment a slot frees.
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.slots }()
	cmd := exec.CommandContext(ctx, r.trainer)
	cmd.Dir, cmd.Stdout, cmd.Stderr = d, logFile, logFile
	cmd.Env = append(os.Environ(), "GLEANER_TRIAL_ID="+fmt.Sprintf("t%06d", i), "GLEANER_CAMPAIGN_ID=floor",
		"GLEANER_PARAMS_FILE="+pf, "GLEANER_NODES=1", "GLEANER_HOSTFILE="+hf, "GLEANER_CHECKPOINT_DIR="+ckpt,
		"GLEANER_RESUME_FROM=", "GLEANER_REPORT_FILE="+rf, "GLEANER_BUDGET=", "GLEANER_BUDGET_UNIT=")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("trial %d: trainer: %w", i, err)
	}
	return reportsObjective(rf, i)
}

// reportsObjective reads a trainer's report as the Optuna script does:
// the trial fails unless a line carries metrics.val_loss.
func reportsObjective(reportFile string, i int) error {
	b, err := os.ReadFile(reportFile)
	if err != nil {
		return err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var r struct {
			Metrics map[string]float64 `json:"metrics"`
		}
		if json.Unmarshal(line, &r) == nil {
			if _, ok := r.Metrics["val_loss"]; ok {
				return nil
			}
		}
	}
	return fmt.Errorf("trial %d: the trainer reported no val_loss (%s)", i, reportFile)
}

// runFloor runs the floor of o's campaign (an activity per trial when
// o.Inline, else a child workflow per trial) on a dev server of its own
// with its database in dir, and measures it as the campaign was measured.
func runFloor(ctx context.Context, o CampaignOptions, dir, trainer string, stepMS float64) (*FloorFigure, error) {
	f := &FloorFigure{Mode: floorWorkflow, Trials: o.Trials}
	if o.Inline {
		f.Mode = floorActivity
	}
	fmt.Fprintf(o.Log, "bench: the same trials at Temporal's floor (%s), on a dev server of its own\n", f.describe())
	work := filepath.Join(dir, "floor")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	srv, err := devserver.Start(ctx, devserver.Options{
		DynamicConfig:    o.ServerConfig,
		DBFile:           filepath.Join(work, "temporal.db"),
		SearchAttributes: map[string]string{},
		Logger:           log.NewStructuredLogger(slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		return nil, fmt.Errorf("the floor's dev server: %w", err)
	}
	defer srv.Stop()
	w := worker.New(srv.Client(), floorQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(floorCampaign, workflow.RegisterOptions{Name: floorWorkflowName})
	w.RegisterWorkflowWithOptions(floorTrial, workflow.RegisterOptions{Name: floorTrialName})
	r := floorRunner{trainer: trainer, work: work, space: campaignSpec(trainer, o, stepMS).Space, slots: make(chan struct{}, o.Concurrent)}
	w.RegisterActivityWithOptions(r.run, activity.RegisterOptions{Name: floorRunName})
	if err := w.Start(); err != nil {
		return nil, err
	}
	defer w.Stop()

	start := time.Now()
	server0, _ := cpuTimes(srv.PID())
	worker0, trainers0 := cpuTimes(os.Getpid())
	run, err := srv.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "bench-floor", TaskQueue: floorQueue},
		floorWorkflowName, floorInput{Trials: o.Trials, Concurrent: o.Concurrent, Children: !o.Inline})
	if err != nil {
		return nil, fmt.Errorf("starting the floor's workflow: %w", err)
	}
	err = run.Get(ctx, &f.Completed)
	wall := time.Since(start)
	server1, _ := cpuTimes(srv.PID())
	worker1, trainers1 := cpuTimes(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("the floor's workflow: %w", err)
	}
	f.Failed = f.Trials - f.Completed
	f.WallSeconds = wall.Seconds()
	f.TrialsPerSecond = float64(f.Trials) / f.WallSeconds // ended, as Gleaner and Optuna count
	f.ServerCPUSeconds, f.WorkerCPUSeconds, f.TrainerCPUSeconds = server1-server0, worker1-worker0, trainers1-trainers0
	return f, nil
}
