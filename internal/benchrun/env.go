package benchrun

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
)

// TaskQueue is the task queue of the benchmarks' in-process worker.
const TaskQueue = "gleaner-bench"

// envOptions configure a benchmark environment.
type envOptions struct {
	// Slots is the number of local CPU slots of the worker.
	Slots int
	// Source replaces the worker's static node source when set.
	Source activities.NodeSource
	// RepoDir is the gleaner checkout (default: found with go list -m).
	RepoDir string
	// Log receives progress lines and the SDK's warnings.
	Log io.Writer
	// ServerConfig are dynamic config values (KEY=VALUE) for the dev
	// server, the value in JSON, e.g. history.timerProcessorMaxTimeShift="10ms".
	ServerConfig []string
	// ServerLog, when set, receives the dev server's output (appended),
	// so that a server that dies mid-run leaves its last words.
	ServerLog string
}

// env is a dev environment (internal/devenv) in a temporary directory: a
// dev server on a database there, an in-process worker and the go-mlp
// trainer.
type env struct {
	srv     *devserver.Server
	c       client.Client
	dir     string // temporary: trainer, database, data
	dataDir string
	trainer string
	repo    string // the gleaner checkout
	w       *devenv.Worker
	log     *os.File // the server's output (envOptions.ServerLog), or nil
}

// setup checks for the temporal CLI, builds go-mlp, starts the server
// and the worker. Close releases everything.
func setup(ctx context.Context, o envOptions) (_ *env, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	cli, err := devserver.FindCLI()
	if err != nil {
		return nil, fmt.Errorf("the benchmark needs a Temporal dev server: %w", err)
	}
	repo, err := devenv.RepoDir(o.RepoDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gleaner-bench-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, dataDir: filepath.Join(dir, "data"), trainer: filepath.Join(dir, "go-mlp"), repo: repo}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	fmt.Fprintf(o.Log, "bench: building go-mlp from %s\n", repo)
	if err := devenv.BuildTrainer(ctx, repo, e.trainer, nil); err != nil {
		return nil, fmt.Errorf("in %s: %w", repo, err)
	}
	fmt.Fprintf(o.Log, "bench: starting the Temporal dev server (%s)\n", cli)
	var serverLog io.Writer
	if o.ServerLog != "" {
		f, err := os.OpenFile(o.ServerLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("--server-log: %w", err)
		}
		e.log, serverLog = f, f
	}
	e.srv, err = devserver.Start(ctx, devserver.Options{
		CLIPath:       cli,
		DynamicConfig: o.ServerConfig,
		DBFile:        filepath.Join(dir, "temporal.db"),
		Logger:        log.NewStructuredLogger(slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		Output:        serverLog,
	})
	if err != nil {
		return nil, err
	}
	e.c = e.srv.Client()
	// The worker's pools decide quickly (worker.InteractivePool), as an
	// interactive deployment's would.
	cfg := devenv.WorkerConfig(TaskQueue, e.dataDir, o.Slots)
	e.w, err = devenv.StartWorker(ctx, e.srv, devenv.WorkerOptions{Config: cfg, Nodes: o.Source})
	return e, err
}

// Close stops the worker and the server and removes the temporary
// directory.
func (e *env) Close() {
	e.stop()
	_ = os.RemoveAll(e.dir)
}

// stop stops the worker and the server; the temporary directory stays.
func (e *env) stop() {
	if e.w != nil {
		e.w.Stop()
		e.w = nil
	}
	if e.srv != nil {
		_ = e.srv.Stop()
		e.srv = nil
	}
	if e.log != nil {
		_ = e.log.Close()
		e.log = nil
	}
}
