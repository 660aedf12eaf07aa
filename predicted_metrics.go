package gleaner

// Metrics a NAS trial need not report: the worker predicts them from the
// trial's architecture with its throughput model (docs/nas.md, worker
// --throughput-model) before the trainer has run a step, and adds them to
// every report of the trial, so an objective or a constraint may name
// them from the first trial on (hardware-aware NAS: accuracy × speed).
// They are the predictions for one node of the type the trial runs on, at
// the model's batch; a worker without a model, or an architecture the
// model does not cover, adds none (the trial then lacks them, as any
// unreported metric).
const (
	// MetricPredictedThroughput is the predicted training throughput on
	// one node, in samples per second.
	MetricPredictedThroughput = "predicted_samples_per_second"
	// MetricPredictedLatency is the predicted training time per sample on
	// one node, in milliseconds (1000 / the predicted throughput).
	MetricPredictedLatency = "predicted_ms_per_sample"
)

// PredictedMetric reports whether name is one of the metrics a worker
// predicts from a trial's architecture.
func PredictedMetric(name string) bool {
	return name == MetricPredictedThroughput || name == MetricPredictedLatency
}
