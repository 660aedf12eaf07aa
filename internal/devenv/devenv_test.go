package devenv_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/worker"
)

func TestWorkerConfigIsALocalWorker(t *testing.T) {
	cfg := devenv.WorkerConfig("q", t.TempDir(), 3)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("WorkerConfig is not valid: %v", err)
	}
	if got, want := cfg.Nodes.String(), "static:3,gpus=none"; got != want {
		t.Errorf("nodes %s, want %s", got, want)
	}
	if cfg.TaskQueue != "q" || cfg.StopTimeout != devenv.LocalStopTimeout || cfg.Pool != worker.InteractivePool {
		t.Errorf("task queue %q, stop timeout %v, pool %+v; want q, %v, worker.InteractivePool",
			cfg.TaskQueue, cfg.StopTimeout, cfg.Pool, devenv.LocalStopTimeout)
	}
}

// TestStartWorker is the builder's contract with its three callers: the
// worker polls its task queue on the server it was given, in a data
// directory it created, with the trainer activity wrapped when asked; a
// configuration `gleaner worker` would reject starts nothing.
func TestStartWorker(t *testing.T) {
	srv := testenv.DevServer(t, devserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("polls", func(t *testing.T) {
		cfg := devenv.WorkerConfig("devenv-polls", filepath.Join(t.TempDir(), "new", "data"), 2)
		cfg.HostPort = "elsewhere:1"
		wrapped := 0
		w, err := devenv.StartWorker(ctx, srv, devenv.WorkerOptions{Config: cfg, WrapRunTrial: func(run devenv.RunTrialFunc) devenv.RunTrialFunc {
			wrapped++
			return run
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if w.Config.HostPort != srv.Address() || w.Config.Namespace != srv.Namespace() {
			t.Errorf("worker on %s/%s, want the server's %s/%s", w.Config.HostPort, w.Config.Namespace, srv.Address(), srv.Namespace())
		}
		if st, err := os.Stat(cfg.DataDir); err != nil || !st.IsDir() {
			t.Errorf("data directory %s: %v, want it created", cfg.DataDir, err)
		}
		if wrapped != 1 {
			t.Errorf("WrapRunTrial called %d times, want once", wrapped)
		}
		if _, err := srv.WaitForPoller(ctx, "devenv-polls", nil); err != nil {
			t.Fatal(err)
		}
		w.Stop()
		w.Stop() // idempotent: the callers' deferred and explicit stops meet
	})

	t.Run("invalid", func(t *testing.T) {
		cfg := devenv.WorkerConfig("devenv-invalid", t.TempDir(), 1)
		cfg.Pool.Formulation = "bogus"
		w, err := devenv.StartWorker(ctx, srv, devenv.WorkerOptions{Config: cfg})
		if err == nil {
			w.Stop()
			t.Fatal("StartWorker with formulation bogus succeeded, want an error")
		}
		if !strings.Contains(err.Error(), "worker configuration") || !strings.Contains(err.Error(), "formulation") {
			t.Errorf("err = %v, want one naming the worker configuration's formulation", err)
		}
	})
}

func TestBuildTrainer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "go-mlp")
	if err := devenv.BuildTrainer(ctx, "", bin, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("%s: %v, want an executable", bin, err)
	}

	// Outside a gleaner checkout the build fails, and says what it ran.
	err := devenv.BuildTrainer(ctx, t.TempDir(), bin, nil)
	if err == nil || !strings.Contains(err.Error(), "go build -o "+bin+" "+devenv.TrainerPackage) {
		t.Fatalf("BuildTrainer outside a checkout: err = %v, want one naming the go build command", err)
	}
}

// gleaner dev allows the examples' trainers and its campaign's command,
// resolved as the launcher resolves them, and nothing else.
func TestExampleTrainers(t *testing.T) {
	dir := t.TempDir()
	got := devenv.ExampleTrainers(dir, "bin/custom", "/opt/x/../y/train")
	for _, want := range []string{filepath.Join(dir, "bin", "go-mlp"), filepath.Join(dir, "examples", "go-mlp", "bin", "go-mlp"), "/usr/bin/python3", filepath.Join(dir, "bin", "custom"), "/opt/y/train"} {
		if !slices.Contains(got, want) {
			t.Errorf("ExampleTrainers = %q, want it to contain %q", got, want)
		}
	}
	cfg := devenv.WorkerConfig("q", t.TempDir(), 1)
	cfg.Trainers.AllowCommands = got
	p, err := cfg.Trainers.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if p.Commands.AllowsAny() || p.Commands.Allows("/usr/bin/curl") || !p.Commands.Allows(filepath.Join(dir, "bin", "go-mlp")) {
		t.Errorf("the dev allow-list %q allows the wrong commands", got)
	}
}
