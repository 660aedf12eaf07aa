package activities

import (
	"context"
	"maps"
	"math"
	"sync/atomic"
	"time"

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

// predictionRefresh is how often a run on an agent host asks the pool
// for its trial's latest prediction while it reports.
var predictionRefresh = time.Minute

// poolPrediction is a run's copy of the pool worker's prediction for its
// trial, where the run's worker has no throughput model (an agent host):
// the assignment's (RunTrialInput.PredictedMetrics), refreshed from the
// pool (QueryPredicted) at most every predictionRefresh by the goroutine
// that sends progress, and once more when the run ends. The map is
// replaced whole, never changed.
type poolPrediction struct {
	cur   atomic.Pointer[map[string]float64]
	asked time.Time // the sender's last question
	final bool      // the run's end asked
}

// predictions are the predicted metrics a run's reports carry: this
// worker's own, calibrated as of the report, where it has a throughput
// model; else the pool worker's (an agent host has no model and no
// calibration), as of the pool's allocation that gave the trial its nodes
// or of a later one (poolPrediction).
func (r *runner) predictions() map[string]float64 {
	if r.a.ArchPrior != nil {
		return r.a.predictedMetrics(r.arch, r.in.NodeType)
	}
	if m := r.pool.cur.Load(); m != nil {
		return *m
	}
	return nil
}

// asksPool: the run reports the pool worker's prediction (an agent host's
// rank 0 of a trial the pool priced) and can ask for a newer one.
func (r *runner) asksPool() bool {
	return r.a.ArchPrior == nil && len(r.in.PredictedMetrics) > 0 && r.in.Rank == 0 && r.a.Client != nil
}

// refreshPredictions asks the pool for a newer prediction when the last
// question is predictionRefresh old (the progress sender's goroutine).
func (r *runner) refreshPredictions(ctx context.Context) {
	if !r.asksPool() || r.a.now().Sub(r.pool.asked) < predictionRefresh {
		return
	}
	r.pool.asked = r.a.now()
	r.askPool(ctx)
}

// finalPredictions asks the pool, once, when the run ends: its final
// report is what the searchers and the front use.
func (r *runner) finalPredictions() {
	if !r.asksPool() || r.pool.final {
		return
	}
	r.pool.final = true
	r.askPool(context.Background())
}

// askPool asks the pool for the trial's prediction as of its latest
// allocation (QueryPredicted): the calibration moves as the pool measures
// more architectures. The one held stays where the pool does not answer
// (a pool of an earlier build has no such query) or has none.
func (r *runner) askPool(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.a.progressTimeout())
	defer cancel()
	v, err := r.a.Client.QueryWorkflow(ctx, workflows.PoolWorkflowID(r.in.Trial.Pool), "", workflows.QueryPredicted, r.wfID)
	var m map[string]float64
	if err == nil {
		err = v.Get(&m)
	}
	switch {
	case err != nil:
		r.log.Warn("asking the pool for the trial's latest predicted metrics; the ones held stay", "trial", r.in.Trial.TrialID, "error", err)
	case len(m) > 0:
		r.pool.cur.Store(&m)
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
