package jpa

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gleaner-hpc/gleaner/curve"
)

// DefaultProbes are the node counts a trial is assumed to have measured
// when predictions are evaluated.
var DefaultProbes = []int{1, 2, 4}

// MinEvalCounts is the least number of distinct node counts a curve needs
// to be evaluated (some counts must remain to be predicted).
const MinEvalCounts = 4

// EvalCurve is the prediction error on one curve.
type EvalCurve struct {
	File       string  `json:"file"`
	LocalBatch int     `json:"local_bsz"`
	MAPE       float64 `json:"mape"` // a fraction, not a percentage
}

// EvalResult summarises an evaluation.
type EvalResult struct {
	Curves     []EvalCurve `json:"curves"`
	MedianMAPE float64     `json:"median_mape"`
	P90MAPE    float64     `json:"p90_mape"`
}

// ErrNothingToEvaluate: no curve has enough node counts beyond the probes.
var ErrNothingToEvaluate = errors.New("no curve to evaluate")

// Evaluate measures prediction error on real curves. For every curve with
// at least MinEvalCounts distinct node counts, the predictor sees only the
// probe counts as measurements and predicts the others over [1, max]; the
// curve's error is the mean absolute percentage error (a fraction)
//
//	MAPE = mean over unseen counts n of |x̂(n) − x(n)| / x(n).
//
// The prior library is prior if non-nil; otherwise it is leave-one-app-out:
// the complete curves of curves whose App differs from the evaluated one
// (on every cluster), so nothing of the evaluated application leaks in.
// The median and the 90th percentile (Hyndman–Fan type 7) summarise.
func Evaluate(curves, prior []curve.Scaling, probes []int, s *Settings) (EvalResult, error) {
	if len(probes) == 0 {
		probes = DefaultProbes
	}
	for _, p := range probes {
		if p < 1 {
			return EvalResult{}, fmt.Errorf("%w: probe %d, want ≥ 1", ErrInvalidQuery, p)
		}
	}
	var shared *Library
	if prior != nil {
		lib, err := LibraryFromScaling(prior, nil)
		if err != nil {
			return EvalResult{}, fmt.Errorf("prior library: %w", err)
		}
		shared = lib
	}
	perApp := map[string]*Library{}
	var res EvalResult
	var mapes []float64
	for _, c := range curves {
		if len(c.Points) < MinEvalCounts {
			continue
		}
		var obs []Observation
		var hidden []curve.ScalingPoint
		for _, p := range c.Points {
			if slices.Contains(probes, p.Nodes) {
				obs = append(obs, Observation{Nodes: p.Nodes, NodeType: c.Cluster, Throughput: p.SamplesPerS})
			} else {
				hidden = append(hidden, p)
			}
		}
		if len(obs) == 0 || len(hidden) == 0 {
			continue
		}
		lib := shared
		if lib == nil {
			lib = perApp[c.App]
			if lib == nil {
				app := c.App
				var err error
				lib, err = LibraryFromScaling(curves, func(o curve.Scaling) bool { return o.App != app })
				if err != nil {
					return EvalResult{}, fmt.Errorf("prior library for %s: %w", c.App, err)
				}
				perApp[c.App] = lib
			}
		}
		pred, err := Predict(obs, lib, Query{MinNodes: 1, MaxNodes: c.MaxNodes(), NodeType: c.Cluster, Model: c.App, Batch: c.LocalBatch}, s)
		if err != nil {
			return EvalResult{}, fmt.Errorf("%s: %w", c.Name(), err)
		}
		var sum float64
		for _, h := range hidden {
			p, _ := pred.At(h.Nodes)
			sum += math.Abs(p.Throughput-h.SamplesPerS) / h.SamplesPerS
		}
		m := sum / float64(len(hidden))
		res.Curves = append(res.Curves, EvalCurve{File: c.File, LocalBatch: c.LocalBatch, MAPE: m})
		mapes = append(mapes, m)
	}
	if len(mapes) == 0 {
		return EvalResult{}, ErrNothingToEvaluate
	}
	res.MedianMAPE = quantile(mapes, 0.5)
	res.P90MAPE = quantile(mapes, 0.9)
	return res, nil
}
