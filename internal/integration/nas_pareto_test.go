package integration_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/nas"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Hardware-aware NAS of real PyTorch trainers: NSGA-II over cell
// architectures with two objectives, validation accuracy (max) and the
// training time per sample the worker predicts for the architecture
// (min), which train.py never reports. Every trial carries its prediction
// from its first report: the throughput model's, scaled by how far the
// model was from what the pool measured of the other architectures
// (nas.Calibration), so the front trades accuracy against speed from the
// first generation on. The front's predicted latencies, the model's
// uncalibrated ones and the trainer's own measurement of the same
// quantity (measured_ms_per_sample) are logged side by side (timings are
// not asserted: docs/benchmarks.md records a measured run). On the
// worker's own nodes, and on an agent host (which has no model: the pool
// worker's prediction travels with each assignment).
func TestHardwareAwareNASCampaign(t *testing.T) {
	py := nasPython(t)
	modelFile, err := filepath.Abs("../../examples/pytorch-nas/throughput-model.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("worker", func(t *testing.T) {
		srv := startServer(t, devserver.Options{})
		const tq = "nas-pareto"
		cfg := devenv.WorkerConfig(tq, filepath.Join(t.TempDir(), "data"), 4)
		cfg.Pool, cfg.ThroughputModel = testenv.FastPool, modelFile
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		w, err := devenv.StartWorker(ctx, srv, devenv.WorkerOptions{Config: cfg})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		hardwareAwareNAS(t, srv, tq, py, modelFile)
	})
	t.Run("agent", func(t *testing.T) {
		srv := startServer(t, devserver.Options{})
		const tq = "nas-pareto-agent"
		data := filepath.Join(t.TempDir(), "shared")
		startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: tq, Nodes: "none", DataDir: data,
			Args: []string{"--throughput-model", modelFile, "--pool-poll", testenv.FastPool.Poll.String(),
				"--allocate-debounce", testenv.FastPool.Debounce.String(), "--allocate-period", testenv.FastPool.AllocatePeriod.String()}})
		startWorkerProcess(t, srv, agentOpts(tq, tq, "h1", "127.0.0.1", data, 4))
		waitAgents(t, srv.Client(), tq, "h1")
		hardwareAwareNAS(t, srv, tq, py, modelFile)
	})
}

// hardwareAwareNAS runs the campaign on pool tq (its worker started with
// the throughput model modelFile) and checks and logs its front.
func hardwareAwareNAS(t *testing.T, srv *devserver.Server, tq, py, modelFile string) {
	script, err := filepath.Abs("../../examples/pytorch-nas/train.py")
	if err != nil {
		t.Fatal(err)
	}
	model, err := worker.LoadThroughputModel(modelFile)
	if err != nil {
		t.Fatal(err)
	}
	const trials, population = 8, 4
	spec := gleaner.CampaignSpec{
		Name:    tq,
		Kind:    "nas",
		Pool:    tq,
		Command: []string{py, script},
		Env:     map[string]string{"OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"},
		Space: hpo.Space{
			{Name: "arch", Type: hpo.ParamArch, Architecture: &nasCellSpace},
			testenv.Fixed("lr", "0.05"),
			testenv.Fixed("epochs", "100"),
			testenv.Fixed("report_every", "44"), // two epochs: evaluation costs less of what the pool measures
		},
		Search: gleaner.SearchSpec{
			Algorithm: "nsga2",
			Settings:  hpo.Settings{NSGA2: &hpo.NSGA2Settings{PopulationSize: population}},
		},
		Objectives: []gleaner.ObjectiveSpec{
			{Metric: "val_accuracy", Mode: "max"},
			{Metric: gleaner.MetricPredictedLatency, Mode: "min"},
		},
		Budget:    gleaner.Budget{MaxTrials: trials, MaxConcurrent: 2},
		Resources: gleaner.Resources{MinNodes: 1, MaxNodes: 1},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(5 * time.Second), MaxRestarts: 1},
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		t.Fatalf("spec: %v", err)
	}
	res := campaignResult(t, startCampaign(t, srv.Client(), tq, spec), 5*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials || res.Failed != 0 {
		t.Fatalf("result %s %+v, want %d trials completed", res.State, res.CampaignCounts, trials)
	}
	metrics := map[string]map[string]float64{} // by trial id: the final report's
	for _, r := range trialReports(t, srv.Client(), spec.Name, trials) {
		metrics[r.TrialID] = r.Metrics
		if got := r.Metrics[gleaner.MetricPredictedLatency]; !(got > 0) || math.IsInf(got, 0) {
			t.Errorf("trial %s: %s %v, want a positive prediction", r.TrialID, gleaner.MetricPredictedLatency, got)
		}
		mustPredict(t, model, r.Params["arch"].Str)
	}
	f := res.Pareto
	if f == nil || len(f.Trials) == 0 {
		t.Fatalf("no Pareto front in the result: %+v", res)
	}
	// What the pool measured of each trial's throughput (the JPA's
	// profile, kept in the pool's library once the trial left): the
	// quantity the prediction predicts, evaluation and reports included.
	v, err := srv.Client().QueryWorkflow(context.Background(), workflows.PoolWorkflowID(tq), "", workflows.QueryLibrary)
	if err != nil {
		t.Fatalf("querying the pool's library: %v", err)
	}
	var lib workflows.PoolLibrary
	if err := v.Get(&lib); err != nil {
		t.Fatal(err)
	}
	poolMs := map[string]float64{} // by trial id: 1000 / samples/s on one node
	for _, e := range f.Trials {
		var n int
		if _, err := fmt.Sscanf(e.TrialID, "t%d", &n); err != nil {
			t.Fatalf("front trial id %q: %v", e.TrialID, err)
		}
		id := gleaner.TrialWorkflowID(gleaner.CampaignWorkflowID(spec.Name), n)
		for _, c := range lib.Curves {
			if c.Trial == id && len(c.Points) > 0 && c.Points[0].Nodes == 1 {
				poolMs[e.TrialID] = 1000 / c.Points[0].Throughput
			}
		}
	}
	t.Logf("the pool's library: %d curves, %d of the front's trials", len(lib.Curves), len(poolMs))
	var errs, raw, poolErrs []float64
	for _, e := range f.Trials {
		if len(e.Values) != 2 || e.Infeasible {
			t.Fatalf("front trial %s: values %v infeasible %v, want 2 feasible values", e.TrialID, e.Values, e.Infeasible)
		}
		pred := metrics[e.TrialID][gleaner.MetricPredictedLatency]
		if math.Abs(e.Values[1]-pred) > 1e-9*pred {
			t.Errorf("front trial %s: latency %v, want its final report's prediction %v", e.TrialID, e.Values[1], pred)
		}
		model := 1000 / mustPredict(t, model, e.Params["arch"].Str)
		if m, ok := metrics[e.TrialID]["measured_ms_per_sample"]; ok && m > 0 {
			errs = append(errs, math.Abs(pred-m)/m)
			raw = append(raw, math.Abs(model-m)/m)
			t.Logf("front: %s %s val_accuracy %.3f predicted %.4f ms/sample (model alone %.4f) measured %.4f (train.py's steps), %.4f (the pool's)",
				e.TrialID, nas.Hash(e.Params["arch"].Str), e.Values[0], pred, model, m, poolMs[e.TrialID])
		}
		if m := poolMs[e.TrialID]; m > 0 {
			poolErrs = append(poolErrs, math.Abs(pred-m)/m)
		}
	}
	if f.Hypervolume <= 0 || len(f.ReferencePoint) != 2 {
		t.Errorf("front hypervolume %v at %v, want > 0 at a derived 2-value reference point", f.Hypervolume, f.ReferencePoint)
	}
	if len(errs) > 0 {
		t.Logf("%d front trials: predicted vs measured ms/sample, median relative error %.1f%%, max %.1f%% (the model alone: %.1f%%, %.1f%%)",
			len(errs), 100*median(errs), 100*slices.Max(errs), 100*median(raw), 100*slices.Max(raw))
	}
	if len(poolErrs) > 0 {
		t.Logf("%d front trials: predicted vs the pool's measured ms/sample, median relative error %.1f%%, max %.1f%%",
			len(poolErrs), 100*median(poolErrs), 100*slices.Max(poolErrs))
	}
}

// median of xs (not changed), the mean of the middle two for an even count.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 0 {
		return (s[m-1] + s[m]) / 2
	}
	return s[m]
}

func mustPredict(t *testing.T, m *nas.ThroughputModel, arch string) float64 {
	t.Helper()
	v, err := m.Predict(arch)
	if err != nil {
		t.Fatalf("predicting %s: %v", arch, err)
	}
	return v
}
