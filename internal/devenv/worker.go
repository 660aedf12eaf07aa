package devenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	sdkworker "go.temporal.io/sdk/worker"

	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// LocalStopTimeout is how long a worker from WorkerConfig lets running
// trainers finish when it stops: long enough for a trainer's SIGTERM,
// short enough not to hold up a test or a benchmark.
const LocalStopTimeout = 5 * time.Second

// WorkerConfig is the configuration of a worker on a local dev server:
// worker.DefaultConfig polling taskQueue, with its data in dataDir, slots
// local CPU slots without GPUs (static:SLOTS,gpus=none), LocalStopTimeout
// and worker.InteractivePool. StartWorker sets the connection's address and
// namespace.
func WorkerConfig(taskQueue, dataDir string, slots int) worker.Config {
	cfg := worker.DefaultConfig()
	cfg.TaskQueue = taskQueue
	cfg.DataDir = dataDir
	cfg.Nodes = worker.NodeSourceConfig{Kind: worker.NodeSourceStatic, Static: worker.StaticNodes{Nodes: slots}, NoGPUs: true}
	cfg.StopTimeout = LocalStopTimeout
	cfg.Pool = worker.InteractivePool
	return cfg
}

// RunTrialFunc is the activity that runs trainers (workflows.RunTrialActivityName).
type RunTrialFunc = func(context.Context, workflows.RunTrialInput) (workflows.RunTrialResult, error)

// WorkerOptions configure StartWorker.
type WorkerOptions struct {
	// Config is the worker's configuration, as `gleaner worker` would
	// read it from flags (WorkerConfig gives a local one); its address
	// and namespace are the server's. Its DataDir is created.
	Config worker.Config
	// Nodes, when not nil, replaces the node source Config.Nodes
	// describes: a scripted source of a test or a benchmark.
	Nodes activities.NodeSource
	// WrapRunTrial, when not nil, wraps the activity that runs trainers,
	// e.g. so that a shutdown stops them before the worker.
	WrapRunTrial func(RunTrialFunc) RunTrialFunc
}

// Worker is a running in-process worker.
type Worker struct {
	// Config is the configuration it runs with.
	Config worker.Config
	// Activities are its activities (nil for a worker without them): a
	// benchmark reads what they measured (NodeIdle).
	Activities *activities.Activities

	w       sdkworker.Worker
	cleanup func()
	stop    sync.Once
}

// StartWorker starts on srv, in this process, the worker `gleaner worker`
// runs (worker.Build's components) with o.Config. Stop stops it.
func StartWorker(ctx context.Context, srv *devserver.Server, o WorkerOptions) (*Worker, error) {
	cfg := o.Config
	cfg.HostPort, cfg.Namespace = srv.Address(), srv.Namespace()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("worker configuration:\n%w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("the worker's data directory: %w", err)
	}
	comps, cleanup, err := worker.Build(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("building the worker: %w", err)
	}
	if a := comps.ActivityDeps; a != nil {
		if o.Nodes != nil {
			a.Default = o.Nodes
		}
		if o.WrapRunTrial != nil {
			comps.RunTrial = o.WrapRunTrial(a.RunTrial)
		}
	}
	w, err := worker.New(srv.Client(), cfg, comps)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("building the worker: %w", err)
	}
	if err := w.Start(); err != nil {
		cleanup()
		return nil, fmt.Errorf("starting the worker on task queue %s: %w", cfg.TaskQueue, err)
	}
	return &Worker{Config: cfg, Activities: comps.ActivityDeps, w: w, cleanup: cleanup}, nil
}

// Stop stops polling at once, waits up to Config.StopTimeout for the
// activities in flight, then releases what worker.Build acquired. It is
// idempotent.
func (w *Worker) Stop() {
	w.stop.Do(func() {
		w.w.Stop()
		w.cleanup()
	})
}
