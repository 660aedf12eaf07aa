package jpa

import (
	"fmt"
	"math"
)

// Predictions without observations of the trial: from its Query.Prior or
// from its sibling curves alone.

// priorCurve validates q.Prior; nil when there is none.
func (q Query) priorCurve() (*PriorCurve, error) {
	if len(q.Prior) == 0 {
		if q.PriorSigma != 0 {
			return nil, fmt.Errorf("%w: PriorSigma is %v without a Prior", ErrInvalidQuery, q.PriorSigma)
		}
		return nil, nil
	}
	if !(q.PriorSigma >= 0) || math.IsInf(q.PriorSigma, 0) {
		return nil, fmt.Errorf("%w: PriorSigma is %v, want finite ≥ 0", ErrInvalidQuery, q.PriorSigma)
	}
	c := &PriorCurve{Name: "prior", NodeType: q.NodeType, Points: q.Prior}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: Prior: %w", ErrInvalidQuery, err)
	}
	return c, nil
}

// predictFromPrior is the prediction of a trial with no measurement and a
// Query.Prior: the prior itself, interpolated in ln n between its counts
// and scaled linearly beyond them, with its own uncertainty plus the
// growth term of a count nothing was measured at.
func predictFromPrior(c *PriorCurve, q Query, target string, set Settings) Prediction {
	sig := q.PriorSigma
	if sig == 0 {
		sig = DefaultPriorSigma
	}
	pred := Prediction{NodeType: target, Neighbours: []string{c.Name}}
	first, last := c.Points[0], c.Points[len(c.Points)-1]
	for n := q.MinNodes; n <= q.MaxNodes; n++ {
		l, ok := c.logAt(n)
		if !ok {
			end := first
			if n > last.Nodes {
				end = last
			}
			l = math.Log(end.Throughput) + math.Log(float64(n)) - math.Log(float64(end.Nodes))
		}
		p := PredictedPoint{Nodes: n, Throughput: math.Exp(l)}
		p.SigmaLog = math.Sqrt(sig*sig + set.Growth*set.Growth)
		p.Sigma = p.Throughput * p.SigmaLog
		pred.Points = append(pred.Points, p)
	}
	return pred
}

// predictFromSiblings predicts a trial with no measurement from curves of
// its campaign on the target type (log-mean per count) — trials of one
// campaign train one model, so a sibling's throughput is the best guess —
// or, with no sibling, from profiles of the same model on that type.
func predictFromSiblings(lib *Library, q Query, target string, set Settings) (Prediction, error) {
	// Siblings of the same campaign first; failing those, profiles of the
	// same model on the target type.
	var sibs []int // indices into lib.curves
	for _, same := range []func(PriorCurve) bool{
		q.sibling,
		func(c PriorCurve) bool { return q.Model != "" && c.Model == q.Model },
	} {
		if lib == nil || len(sibs) > 0 {
			break
		}
		for i, c := range lib.curves {
			if same(c) && c.NodeType == target && !q.isSelf(c) {
				sibs = append(sibs, i)
			}
		}
	}
	if len(sibs) == 0 {
		return Prediction{}, ErrNoData
	}
	pred := Prediction{NodeType: target, FromSiblings: true}
	for _, i := range sibs {
		pred.Neighbours = append(pred.Neighbours, lib.curves[i].Name)
	}
	// SiblingMeasured stays false: steering a trial nothing is measured
	// of away from its siblings' counts did worse in the simulator than
	// letting its optimism go where the allocator values it most
	// (jpa/oracle throughput 0.89 against 0.92 on sim's contested
	// real-curve scenario). Optimism now goes to its smallest count only
	// (FromSiblings), its profiling run, as the prior's does
	// (PriorScales): on BFTrainer's seven-network workload a fresh job's
	// optimism at its largest count (σ_log ≈ 0.16) drew a hole's worth of
	// nodes from running jobs for every new job (docs/jpa.md).
	logs := make([]float64, 0, len(sibs))
	for n := q.MinNodes; n <= q.MaxNodes; n++ {
		logs = logs[:0]
		for _, i := range sibs {
			if l, ok := lib.logs[i].at(n); ok {
				logs = append(logs, l)
				continue
			}
			c := lib.curves[i]
			// Beyond the sibling's range: linear scaling from its nearest
			// end, with the growth term below saying how little it is worth.
			end := c.Points[0]
			if n > end.Nodes {
				end = c.Points[len(c.Points)-1]
			}
			logs = append(logs, math.Log(end.Throughput)+math.Log(float64(n))-math.Log(float64(end.Nodes)))
		}
		var m, v float64
		for _, l := range logs {
			m += l
		}
		m /= float64(len(logs))
		for _, l := range logs {
			v += (l - m) * (l - m)
		}
		p := PredictedPoint{Nodes: n, Throughput: math.Exp(m)}
		p.SigmaLog = math.Sqrt(v/float64(len(logs)) + 4*set.NoiseFloor*set.NoiseFloor + set.Growth*set.Growth)
		p.Sigma = p.Throughput * p.SigmaLog
		pred.Points = append(pred.Points, p)
	}
	return pred, nil
}
