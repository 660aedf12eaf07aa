package activities

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// curvePrior predicts every architecture but "unknown" at a fixed
// single-node throughput.
type curvePrior float64

func (p curvePrior) Curve(arch string, maxNodes int) ([]float64, error) {
	if arch == "unknown" {
		return nil, errors.New("not modelled")
	}
	out := make([]float64, maxNodes)
	for i := range out {
		out[i] = float64(p) * float64(i+1)
	}
	return out, nil
}

// A NAS trial's results carry its predicted throughput and latency even
// though its trainer reports neither; a metric the trainer reports under
// the same name wins.
func TestRunTrialAddsPredictedMetrics(t *testing.T) {
	env, a := runTrialEnv(t, &failingClient{})
	a.ArchPrior = curvePrior(400)
	in := runInput(`echo '{"samples": 10, "metrics": {"val_accuracy": 0.9}}' >> "$GLEANER_REPORT_FILE"`)
	in.Trial.ArchParam = "arch"
	in.Trial.Params = hpo.Params{"arch": hpo.String(`{"cell":"x"}`)}
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, map[string]float64{
		"val_accuracy":                    0.9,
		gleaner.MetricPredictedThroughput: 400,
		gleaner.MetricPredictedLatency:    2.5,
	}, res.Metrics)

	in.Trial.Command = []string{"/bin/sh", "-c", `echo '{"samples": 10, "metrics": {"predicted_ms_per_sample": 7}}' >> "$GLEANER_REPORT_FILE"`}
	in.Trial.TrialID = "t2"
	v, err = env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	require.NoError(t, v.Get(&res))
	require.Equal(t, 7.0, res.Metrics[gleaner.MetricPredictedLatency], "the trainer's own value wins")
}

func TestPredictedMetricsNeedModelAndArchitecture(t *testing.T) {
	a := &Activities{}
	in := workflows.TrialInput{ArchParam: "arch", Params: hpo.Params{"arch": hpo.String("{}")}}
	require.Nil(t, a.predictedMetrics(a.archPrediction(in.Arch()), ""), "no model")
	a.ArchPrior = curvePrior(100)
	require.Nil(t, a.predictedMetrics(a.archPrediction(workflows.TrialInput{Params: hpo.Params{"lr": hpo.Float(1)}}.Arch()), ""), "no architecture")
	in.Params["arch"] = hpo.String("unknown")
	require.Nil(t, a.predictedMetrics(a.archPrediction(in.Arch()), ""), "not modelled")
	require.Equal(t, map[string]float64{"loss": 1}, withPredicted(map[string]float64{"loss": 1}, nil))
}

// The pool's measurements calibrate the model: once other architectures
// are measured at half their predicted throughput on a node type, a
// trial's prediction there is halved; its own measurement never enters
// its own prediction, and another node type keeps the model's value.
func TestPredictedMetricsCalibratedByOtherArchitectures(t *testing.T) {
	a := &Activities{ArchPrior: curvePrior(400)}
	trial := func(arch string, obs ...jpa.Observation) workflows.PoolTrial {
		pt := workflows.PoolTrial{Registration: workflows.RegisterTrial{TrialID: arch, Arch: arch, MinNodes: 1, MaxNodes: 2}}
		for _, o := range obs {
			pt.Profile = append(pt.Profile, workflows.ProfilePoint{Nodes: o.Nodes, NodeType: o.NodeType, Throughput: o.Throughput})
		}
		return pt
	}
	predict := func(arch, nodeType string) float64 {
		in := workflows.TrialInput{ArchParam: "arch", Params: hpo.Params{"arch": hpo.String(arch)}}
		return a.predictedMetrics(a.archPrediction(in.Arch()), nodeType)[gleaner.MetricPredictedThroughput]
	}
	require.Equal(t, 400.0, predict("a", "cpu"), "nothing measured: the model's")
	for _, pt := range []workflows.PoolTrial{
		// a: 1 node at half the model's 400, 2 nodes at a third of its 800
		// (the smallest count measured is the one compared).
		trial("a", jpa.Observation{Nodes: 2, NodeType: "cpu", Throughput: 800.0 / 3}, jpa.Observation{Nodes: 1, NodeType: "cpu", Throughput: 200}),
		trial("b", jpa.Observation{Nodes: 2, NodeType: "cpu", Throughput: 400}),
		trial("c"),
	} {
		a.calibrate(pt.Registration.Arch, a.trialView(pt))
	}
	require.InDelta(t, 200, predict("c", "cpu"), 1e-9, "median of a's and b's ratios, 0.5")
	require.InDelta(t, 200, predict("a", "cpu"), 1e-9, "b's ratio alone")
	require.InDelta(t, 200, predict("b", "cpu"), 1e-9, "a's ratio alone")
	require.Equal(t, 400.0, predict("c", "gpu"), "another node type: the model's")
	m := a.predictedMetrics(a.archPrediction("c"), "cpu")
	require.InDelta(t, 5.0, m[gleaner.MetricPredictedLatency], 1e-9, "1000 / 200 samples/s")
}

// poolQueries answers QueryPredicted with latest (an error when nil),
// recording the questions and the progress signals.
type poolQueries struct {
	client.Client
	mu       sync.Mutex
	latest   map[string]float64
	asked    []string // the pool workflow id and the trial id of each
	progress []workflows.Progress
}

func (c *poolQueries) SignalWorkflow(_ context.Context, _, _, _ string, arg interface{}) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.progress = append(c.progress, arg.(workflows.Progress))
	return nil
}

func (c *poolQueries) QueryWorkflow(_ context.Context, wfID, _, query string, args ...interface{}) (converter.EncodedValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, wfID+" "+query+" "+args[0].(string))
	if c.latest == nil {
		return nil, errors.New("unknown queryType gleaner.predicted")
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(c.latest)
	if err != nil {
		return nil, err
	}
	return client.NewValue(p), nil
}

// A run on an agent host (a worker without a throughput model) reports
// the predictions its assignment carried from the pool's worker, and at
// its end the pool's latest (the calibration moves as the pool measures
// more architectures); the assignment's where the pool does not answer.
// A worker with a model of its own reports its own, as of the report.
func TestRunTrialOnAgentReportsAssignedPredictions(t *testing.T) {
	c := &poolQueries{latest: map[string]float64{gleaner.MetricPredictedThroughput: 200, gleaner.MetricPredictedLatency: 5}}
	env, a := runTrialEnv(t, c)
	in := runInput(`echo '{"samples": 10, "metrics": {"val_accuracy": 0.9}}' >> "$GLEANER_REPORT_FILE"`)
	in.Trial.ArchParam, in.Trial.Pool = "arch", "p"
	in.Trial.Params = hpo.Params{"arch": hpo.String(`{"cell":"x"}`)}
	in.PredictedMetrics = map[string]float64{gleaner.MetricPredictedThroughput: 250, gleaner.MetricPredictedLatency: 4}
	run := func(id string) map[string]float64 {
		in.Trial.TrialID = id
		v, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
		require.NoError(t, err)
		var res workflows.RunTrialResult
		require.NoError(t, v.Get(&res))
		return res.Metrics
	}
	require.Equal(t, map[string]float64{"val_accuracy": 0.9, gleaner.MetricPredictedThroughput: 200, gleaner.MetricPredictedLatency: 5}, run("t1"),
		"no model here: the pool's latest")
	require.Equal(t, []string{workflows.PoolWorkflowID("p") + " " + workflows.QueryPredicted + " default-test-workflow-id"}, c.asked,
		"asked once, at the end: a run shorter than predictionRefresh")

	c.latest = nil
	require.Equal(t, map[string]float64{"val_accuracy": 0.9, gleaner.MetricPredictedThroughput: 250, gleaner.MetricPredictedLatency: 4}, run("t2"),
		"the pool does not answer: the assignment's")

	a.ArchPrior = curvePrior(400)
	c.asked = nil
	require.Equal(t, 400.0, run("t3")[gleaner.MetricPredictedThroughput], "a model here: its own")
	require.Empty(t, c.asked, "nothing to ask")
}

// While it reports, a run on an agent host asks the pool again every
// predictionRefresh: the reports after a question carry the answer.
func TestRunTrialOnAgentRefreshesPredictions(t *testing.T) {
	defer func(d time.Duration) { predictionRefresh = d }(predictionRefresh)
	predictionRefresh = 0
	c := &poolQueries{latest: map[string]float64{gleaner.MetricPredictedThroughput: 200, gleaner.MetricPredictedLatency: 5}}
	env, _ := runTrialEnv(t, c)
	in := runInput(`for i in 1 2 3 4 5; do echo "{\"samples\": $i}" >> "$GLEANER_REPORT_FILE"; sleep 0.1; done`)
	in.Trial.ArchParam = "arch"
	in.Trial.Params = hpo.Params{"arch": hpo.String(`{"cell":"x"}`)}
	in.PredictedMetrics = map[string]float64{gleaner.MetricPredictedThroughput: 250, gleaner.MetricPredictedLatency: 4}
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	c.mu.Lock()
	defer c.mu.Unlock()
	var seen []float64
	for _, p := range c.progress[:len(c.progress)-1] { // all but the final report
		seen = append(seen, p.Metrics[gleaner.MetricPredictedThroughput])
	}
	require.Equal(t, 250.0, seen[0], "the first report: the assignment's")
	require.Contains(t, seen, 200.0, "a report before the end carries the pool's newer one")
	require.Greater(t, len(c.asked), 1)
}

// Allocate gives each NAS trial it gives nodes the calibrated prediction
// on the type given (a's calibrated by b's measurement), rounded to 4
// digits, and leaves it out where the
// pool already keeps the same; a trial without nodes or an architecture
// gets none.
func TestAllocateCarriesPredictedMetrics(t *testing.T) {
	a := &Activities{ArchPrior: curvePrior(300)}
	in := workflows.AllocateInput{Pool: "p", Nodes: []gleaner.Node{{ID: "n1", Type: "cpu"}, {ID: "n2", Type: "cpu"}}}
	for _, id := range []string{"a", "b"} {
		in.Trials = append(in.Trials, workflows.PoolTrial{Registration: workflows.RegisterTrial{TrialID: id, Arch: "arch-" + id, MinNodes: 1, MaxNodes: 1}})
	}
	// b measured at 2/3 of its prediction: a's calibrated to 200.
	in.Trials[1].Profile = []workflows.ProfilePoint{{Nodes: 1, NodeType: "cpu", Throughput: 200}}
	in.Trials = append(in.Trials, workflows.PoolTrial{Registration: workflows.RegisterTrial{TrialID: "plain", MinNodes: 1, MaxNodes: 1}})
	res, err := a.Allocate(context.Background(), in)
	require.NoError(t, err)
	got := map[string]workflows.TrialAssignment{}
	for _, ta := range res.Assignments {
		got[ta.TrialID] = ta
	}
	want := map[string]map[string]float64{
		"a": {gleaner.MetricPredictedThroughput: 200, gleaner.MetricPredictedLatency: 5},
		// b's own measurement never enters its own prediction.
		"b": {gleaner.MetricPredictedThroughput: 300, gleaner.MetricPredictedLatency: 3.333},
	}
	given := 0
	for id, w := range want {
		if len(got[id].Nodes) == 0 {
			require.Nil(t, got[id].PredictedMetrics, "%s has no nodes", id)
			continue
		}
		given++
		require.Equal(t, w, got[id].PredictedMetrics, id)
	}
	require.Positive(t, given)
	require.Nil(t, got["plain"].PredictedMetrics, "no architecture")

	for i := range in.Trials {
		in.Trials[i].PredictedMetrics = got[in.Trials[i].Registration.TrialID].PredictedMetrics
	}
	res, err = a.Allocate(context.Background(), in)
	require.NoError(t, err)
	for _, ta := range res.Assignments {
		require.Nil(t, ta.PredictedMetrics, "%s: unchanged, the pool keeps it", ta.TrialID)
	}
}
