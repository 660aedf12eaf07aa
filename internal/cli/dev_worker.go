package cli

import (
	"context"

	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// startWorker starts the worker, in this process, on nodes; it runs only
// the examples' trainers and spec's (docs/security.md). stop stops it,
// giving running trainers their grace period within --stop-timeout.
func (d *devRun) startWorker(ctx context.Context, srv *devserver.Server, nodes worker.NodeSourceConfig, spec gleaner.CampaignSpec, logger log.Logger) (taskQueue string, stop func(), err error) {
	o := d.o
	cfg := worker.DefaultConfig()
	cfg.DataDir = o.dataDir
	cfg.Nodes = nodes
	cfg.StopTimeout = o.stopTimeout
	cfg.Pool = worker.InteractivePool // nodes come and go within a second (the defaults poll every 5 s)
	cfg.Logger = logger
	// loadCampaign made the spec's trainer path absolute, or left the
	// examples' bin/go-mlp, which runs as this binary (d.exe).
	allowed := []string{spec.Command[0]}
	if d.exe != "" {
		// bin/go-mlp runs as this binary's example-trainer: allowed, so
		// any gleaner subcommand is (a dev server on this machine only).
		allowed = append(allowed, d.exe)
	}
	cfg.Trainers.AllowCommands = devenv.ExampleTrainers(".", allowed...)
	gate := newDevTrainerGate()
	wrap := func(run devenv.RunTrialFunc) devenv.RunTrialFunc {
		gated := gate.wrap(run)
		return func(ctx context.Context, in workflows.RunTrialInput) (workflows.RunTrialResult, error) {
			if t := in.Trial; d.exe != "" && devBuiltinTrainer(gleaner.CampaignSpec{Command: t.Command, WorkDir: t.WorkDir}) {
				in.Trial.Command = append([]string{d.exe, ExampleTrainerCommand}, t.Command[1:]...)
			}
			return gated(ctx, in)
		}
	}
	w, err := devenv.StartWorker(ctx, srv, devenv.WorkerOptions{Config: cfg, WrapRunTrial: wrap})
	if err != nil {
		return "", nil, err
	}
	d.say("worker polling task queue %s: nodes %s, data in %s", cfg.TaskQueue, nodes, cfg.DataDir)
	return cfg.TaskQueue, func() {
		if n := gate.close(); n > 0 {
			d.say("stopping %d running trainer(s): SIGTERM, then SIGKILL after the trial's grace period…", n)
		}
		stopped := make(chan struct{})
		go func() {
			// Stop stops polling at once and waits (up to --stop-timeout)
			// for the activities in flight, the trainers' among them.
			w.Stop()
			close(stopped)
		}()
		if !gate.wait(o.stopTimeout) {
			d.warn("trainers still running after --stop-timeout %v; they are killed as this process exits", o.stopTimeout)
		}
		<-stopped
		d.say("worker stopped")
	}, nil
}
