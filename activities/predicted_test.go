package activities

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
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
	require.Nil(t, a.predictedMetrics(in), "no model")
	a.ArchPrior = curvePrior(100)
	require.Nil(t, a.predictedMetrics(workflows.TrialInput{Params: hpo.Params{"lr": hpo.Float(1)}}), "no architecture")
	in.Params["arch"] = hpo.String("unknown")
	require.Nil(t, a.predictedMetrics(in), "not modelled")
	require.Equal(t, map[string]float64{"loss": 1}, withPredicted(map[string]float64{"loss": 1}, nil))
}
