package activities

import (
	"maps"
	"math"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// archPrediction is the model's single-node throughput of a NAS trial's
// architecture (samples/s), before calibration: what predictedMetrics
// scales. Zero without an ArchPrior, an architecture, or a usable
// prediction.
type archPrediction struct {
	arch       string
	throughput float64
}

func (a *Activities) archPrediction(arch string) archPrediction {
	if a.ArchPrior == nil || arch == "" {
		return archPrediction{}
	}
	c, err := a.ArchPrior.Curve(arch, 1)
	if err != nil || len(c) == 0 || !(c[0] > 0) || math.IsInf(c[0], 0) {
		return archPrediction{}
	}
	return archPrediction{arch: arch, throughput: c[0]}
}

// reportedPredictions are the predicted metrics a run's reports carry:
// this worker's own, calibrated as of the report, where it has a
// throughput model; else the ones the pool's worker computed when it
// gave the run its nodes (RunTrialInput.PredictedMetrics: an agent host
// has no model and no calibration).
func (a *Activities) reportedPredictions(p archPrediction, in workflows.RunTrialInput) map[string]float64 {
	if a.ArchPrior != nil {
		return a.predictedMetrics(p, in.NodeType)
	}
	return in.PredictedMetrics
}

// predictedMetrics are the metrics the worker predicts for a NAS trial
// from its architecture (gleaner.MetricPredictedThroughput and
// gleaner.MetricPredictedLatency) on one node of nodeType: the model's
// prediction scaled by the calibration of the model against the other
// architectures measured on nodeType (nas.Calibration; the model's own
// value until one is). Nil without a prediction.
func (a *Activities) predictedMetrics(p archPrediction, nodeType string) map[string]float64 {
	if p.throughput <= 0 {
		return nil
	}
	f, _ := a.calibration.Factor(nodeType, p.arch)
	tp := p.throughput * f
	return map[string]float64{
		gleaner.MetricPredictedThroughput: tp,
		gleaner.MetricPredictedLatency:    1000 / tp,
	}
}

// calibrate records a pool trial's measured throughput against its
// architecture's predicted curve (view.Prior, from archPrior), at the
// smallest count measured on each node type: the nearest to the single
// node predictedMetrics predicts.
func (a *Activities) calibrate(arch string, view jpa.TrialView) {
	if arch == "" || len(view.Prior) == 0 {
		return
	}
	low := map[string]jpa.Observation{}
	for _, o := range view.Observations {
		if q, ok := low[o.NodeType]; !ok || o.Nodes < q.Nodes {
			low[o.NodeType] = o
		}
	}
	for typ, o := range low {
		if o.Nodes >= 1 && o.Nodes <= len(view.Prior) {
			a.calibration.Observe(typ, arch, o.Throughput, view.Prior[o.Nodes-1].Throughput)
		}
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
