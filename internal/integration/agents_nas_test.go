package integration_test

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// stepTrainer reports 100 samples every 100 ms for 20 steps, its
// accuracy rising; it measures nothing of its speed.
const stepTrainer = `
i=0
while [ "$i" -lt 20 ]; do
  i=$((i+1))
  echo "{\"samples\": $((i*100)), \"metrics\": {\"val_accuracy\": 0.$((10+i))}}" >> "$GLEANER_REPORT_FILE"
  sleep 0.1 & wait $!
done
`

// Hardware-aware NAS on agent hosts: the worker has the throughput model
// and no nodes of its own, every trial runs on an agent (which has no
// model); each trial's reports still carry the architecture's predicted
// speed — the pool worker's, calibrated, sent with the assignment — so
// the campaign's front trades accuracy against it.
func TestHardwareAwareNASOnAgentHosts(t *testing.T) {
	modelFile, err := filepath.Abs("../../examples/pytorch-nas/throughput-model.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, devserver.Options{})
	data := filepath.Join(t.TempDir(), "shared")
	const tq, pool = "nas-agents", "nas-agents"
	startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: tq, Nodes: "none", DataDir: data,
		Args: []string{"--throughput-model", modelFile}})
	startWorkerProcess(t, srv, agentOpts(tq, pool, "h1", "127.0.0.1", data, 2))
	waitAgents(t, srv.Client(), pool, "h1")

	const trials = 4
	spec := gleaner.CampaignSpec{
		Name: pool, Pool: pool, Kind: "nas",
		Command: []string{"/bin/sh", "-c", stepTrainer},
		Space: hpo.Space{
			{Name: "arch", Type: hpo.ParamArch, Architecture: &nasCellSpace},
			testenv.Fixed("lr", "0.05"),
		},
		Search: gleaner.SearchSpec{Algorithm: "random"},
		Objectives: []gleaner.ObjectiveSpec{
			{Metric: "val_accuracy", Mode: "max"},
			{Metric: gleaner.MetricPredictedLatency, Mode: "min"},
		},
		Budget:    gleaner.Budget{MaxTrials: trials, MaxConcurrent: 2},
		Resources: gleaner.Resources{MinNodes: 1, MaxNodes: 1},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(5 * time.Second), MaxRestarts: 1, Mode: gleaner.TrialModeWorkflow},
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		t.Fatalf("spec: %v", err)
	}
	res := campaignResult(t, startCampaign(t, srv.Client(), tq, spec), 4*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials {
		t.Fatalf("result %s %+v, want %d trials completed", res.State, res.CampaignCounts, trials)
	}
	for _, r := range trialReports(t, srv.Client(), spec.Name, trials) {
		lat, tp := r.Metrics[gleaner.MetricPredictedLatency], r.Metrics[gleaner.MetricPredictedThroughput]
		if !(lat > 0) || math.IsInf(lat, 0) || math.Abs(lat*tp-1000) > 1 {
			t.Errorf("trial %s ran on an agent: %s %v, %s %v, want a positive prediction and its inverse (metrics %v)",
				r.TrialID, gleaner.MetricPredictedLatency, lat, gleaner.MetricPredictedThroughput, tp, r.Metrics)
		}
	}
	if f := res.Pareto; f == nil || len(f.Trials) == 0 || len(f.Trials[0].Values) != 2 || f.Trials[0].Infeasible {
		t.Fatalf("want a front of feasible trials with 2 values, got %+v", res.Pareto)
	}
}
