package activities

import (
	"context"
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

// predictions are the predicted metrics a run's reports carry: this
// worker's own, calibrated as of the report, where it has a throughput
// model; else the pool worker's (an agent host has no model and no
// calibration): the assignment's (RunTrialInput.PredictedMetrics), and
// from the run's end the pool's as of its latest allocation
// (finalPredictions).
func (r *runner) predictions() map[string]float64 {
	if r.a.ArchPrior != nil {
		return r.a.predictedMetrics(r.arch, r.in.NodeType)
	}
	return r.predicted
}

// finalPredictions asks the pool, once, for the trial's prediction as of
// its latest allocation (QueryPredicted): the calibration may have moved
// since the assignment, as the pool measured more architectures. The
// assignment's stays where the pool does not answer (a pool of an earlier
// build has no such query) or has none.
func (r *runner) finalPredictions() {
	if r.a.ArchPrior != nil || len(r.in.PredictedMetrics) == 0 || r.in.Rank != 0 || r.askedPool || r.a.Client == nil {
		return
	}
	r.askedPool = true
	ctx, cancel := context.WithTimeout(context.Background(), r.a.progressTimeout())
	defer cancel()
	v, err := r.a.Client.QueryWorkflow(ctx, workflows.PoolWorkflowID(r.in.Trial.Pool), "", workflows.QueryPredicted, r.wfID)
	var m map[string]float64
	if err == nil {
		err = v.Get(&m)
	}
	switch {
	case err != nil:
		r.log.Warn("asking the pool for the trial's latest predicted metrics; its assignment's stay", "trial", r.in.Trial.TrialID, "error", err)
	case len(m) > 0:
		r.predicted = m
	}
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
