package activities

import (
	"maps"
	"math"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// predictedMetrics are the metrics the worker predicts for a NAS trial
// from its architecture (gleaner.MetricPredictedThroughput and
// gleaner.MetricPredictedLatency), nil without an ArchPrior, an
// architecture, or a usable prediction.
func (a *Activities) predictedMetrics(in workflows.TrialInput) map[string]float64 {
	arch := in.Arch()
	if a.ArchPrior == nil || arch == "" {
		return nil
	}
	c, err := a.ArchPrior.Curve(arch, 1)
	if err != nil || len(c) == 0 || !(c[0] > 0) || math.IsInf(c[0], 0) {
		return nil
	}
	return map[string]float64{
		gleaner.MetricPredictedThroughput: c[0],
		gleaner.MetricPredictedLatency:    1000 / c[0],
	}
}

// withPredicted returns the trainer's metrics with the predicted ones
// added; a metric the trainer reported under the same name wins. metrics
// itself is not changed.
func withPredicted(metrics, predicted map[string]float64) map[string]float64 {
	if len(predicted) == 0 {
		return metrics
	}
	out := make(map[string]float64, len(metrics)+len(predicted))
	maps.Copy(out, predicted)
	maps.Copy(out, metrics)
	return out
}
