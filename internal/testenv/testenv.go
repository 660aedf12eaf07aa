package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/worker"
)

var (
	mu     sync.Mutex
	binDir string // set while Run runs m
	mlp    struct {
		once sync.Once
		path string
		err  error
	}
)

// Run runs m's tests and then removes what GoMLP built. A package whose
// tests call GoMLP (or MLPSpec) runs its tests through it:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
func Run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gleaner-testenv-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	mu.Lock()
	binDir = dir
	mu.Unlock()
	defer os.RemoveAll(dir)
	return m.Run()
}

// GoMLP builds the Go example trainer (examples/go-mlp) once per test
// process and returns its path.
func GoMLP(t testing.TB) string {
	t.Helper()
	mu.Lock()
	dir := binDir
	mu.Unlock()
	if dir == "" {
		t.Fatal("testenv.GoMLP: the package's TestMain must run its tests through testenv.Run")
	}
	mlp.once.Do(func() {
		mlp.path = filepath.Join(dir, "go-mlp")
		mlp.err = devenv.BuildTrainer(context.Background(), "", mlp.path, nil)
	})
	if mlp.err != nil {
		t.Fatal(mlp.err)
	}
	return mlp.path
}

// Fixed is a search dimension with one value: how a spec passes a
// constant parameter to every trial.
func Fixed(name, value string) hpo.Param {
	return hpo.Param{Name: name, Type: hpo.ParamChoice, Choices: []string{value}}
}

// MLPSpec is a campaign, in pool name, of go-mlp trials (GoMLP) of
// `steps` steps, each stepMS long, reporting every 5 steps and
// checkpointing every 10; extra dimensions are appended to its space.
func MLPSpec(t testing.TB, name string, trials, concurrent, steps, stepMS int, extra ...hpo.Param) gleaner.CampaignSpec {
	t.Helper()
	space := hpo.Space{
		{Name: "lr", Type: hpo.ParamFloat, Min: 0.01, Max: 0.5, Log: true},
		{Name: "hidden", Type: hpo.ParamInt, Min: 4, Max: 32},
		Fixed("batch", "32"),
		Fixed("steps", fmt.Sprint(steps)),
		Fixed("step_ms", fmt.Sprint(stepMS)),
		Fixed("report_every", "5"),
		Fixed("checkpoint_every", "10"),
	}
	return gleaner.CampaignSpec{
		Name:      name,
		Pool:      name,
		Command:   []string{GoMLP(t)},
		Space:     append(space, extra...),
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: trials, MaxConcurrent: concurrent},
		Resources: gleaner.Resources{MinNodes: 1, MaxNodes: 2},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(5 * time.Second), MaxRestarts: 2},
	}
}

// FastPool makes the pools a Worker starts poll and decide quickly.
var FastPool = worker.PoolSettings{Poll: 500 * time.Millisecond, Debounce: 200 * time.Millisecond, AllocatePeriod: 5 * time.Second}

// Worker runs, in the test process, the worker `gleaner worker` would run
// on srv's taskQueue (devenv.StartWorker), with four CPU slots
// (static:4,gpus=none), its data under t's temp dir and FastPool. A
// non-nil nodes replaces the static node source. The worker is stopped
// when t ends. Worker returns its configuration.
func Worker(t testing.TB, srv *devserver.Server, taskQueue string, nodes activities.NodeSource) worker.Config {
	t.Helper()
	cfg := devenv.WorkerConfig(taskQueue, filepath.Join(t.TempDir(), "data"), 4)
	cfg.Pool = FastPool
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := devenv.StartWorker(ctx, srv, devenv.WorkerOptions{Config: cfg, Nodes: nodes})
	if err != nil {
		t.Fatalf("the in-process worker: %v", err)
	}
	t.Cleanup(w.Stop)
	return w.Config
}
