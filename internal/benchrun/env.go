package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/worker"
)

// ModulePath is the module whose go-mlp example the benchmarks build.
const ModulePath = "github.com/gleaner-hpc/gleaner"

// TaskQueue is the task queue of the benchmarks' in-process worker.
const TaskQueue = "gleaner-bench"

// FastPool is the pool configuration of the benchmarks: quick polls and
// decisions, as an interactive deployment would use.
var FastPool = worker.InteractivePool

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
	// server, e.g. history.timerProcessorMaxTimeShift=10ms.
	ServerConfig []string
}

// env is a running dev server with an in-process worker and the go-mlp
// trainer built into a temporary directory.
type env struct {
	srv     *devserver.Server
	c       client.Client
	dir     string // temporary: trainer, database, data
	dataDir string
	trainer string
	w       sdkworker.Worker
	cleanup func()
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
	repo, err := RepoDir(o.RepoDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gleaner-bench-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, dataDir: filepath.Join(dir, "data"), cleanup: func() {}}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if err := os.MkdirAll(e.dataDir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "bench: building go-mlp from %s\n", repo)
	if e.trainer, err = buildTrainer(ctx, repo, dir); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "bench: starting the Temporal dev server (%s)\n", cli)
	var extra []string
	for _, kv := range o.ServerConfig {
		extra = append(extra, "--dynamic-config-value", kv)
	}
	e.srv, err = devserver.Start(ctx, devserver.Options{
		CLIPath:   cli,
		ExtraArgs: extra,
		DBFile:    filepath.Join(dir, "temporal.db"),
		Logger:    log.NewStructuredLogger(slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		return nil, err
	}
	e.c = e.srv.Client()

	cfg := worker.DefaultConfig()
	cfg.HostPort = e.srv.Address()
	cfg.Namespace = e.srv.Namespace()
	cfg.TaskQueue = TaskQueue
	cfg.DataDir = e.dataDir
	cfg.Nodes = worker.NodeSourceConfig{Kind: worker.NodeSourceStatic, Static: worker.StaticNodes{Nodes: o.Slots}, NoGPUs: true}
	cfg.StopTimeout = 5 * time.Second
	cfg.Pool = FastPool
	comps, cleanup, err := worker.Build(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("worker.Build: %w", err)
	}
	e.cleanup = cleanup
	if o.Source != nil {
		comps.ActivityDeps.Default = o.Source
	}
	if e.w, err = worker.New(e.c, cfg, comps); err != nil {
		return nil, fmt.Errorf("worker.New: %w", err)
	}
	if err := e.w.Start(); err != nil {
		e.w = nil
		return nil, fmt.Errorf("starting the in-process worker: %w", err)
	}
	return e, nil
}

// Close stops the worker and the server and removes the temporary
// directory.
func (e *env) Close() {
	if e.w != nil {
		e.w.Stop()
	}
	e.cleanup()
	if e.srv != nil {
		_ = e.srv.Stop()
	}
	_ = os.RemoveAll(e.dir)
}

// RepoDir returns dir, or when it is empty the directory of the gleaner
// module that `go list -m` finds from the working directory.
func RepoDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("finding the gleaner checkout (run from it, or pass --repo): go list -m: %w", err)
	}
	dir = strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "examples", "go-mlp")); err != nil {
		return "", fmt.Errorf("%s is not a gleaner checkout (run from one, or pass --repo): %w", dir, err)
	}
	return dir, nil
}

func buildTrainer(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, "go-mlp")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/go-mlp")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./examples/go-mlp in %s: %w\n%s", repo, err, out)
	}
	return bin, nil
}
