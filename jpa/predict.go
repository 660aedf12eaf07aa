package jpa

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

var (
	// ErrInvalidSettings wraps a bad Settings or Config field.
	ErrInvalidSettings = errors.New("invalid jpa settings")
	// ErrInvalidQuery wraps a bad Query field.
	ErrInvalidQuery = errors.New("invalid jpa query")
	// ErrNoData: nothing measured for the trial and no sibling curve to
	// borrow from.
	ErrNoData = errors.New("no observation or sibling curve to predict from")
	// ErrNoTypeRatio: the trial was measured on other node types only and
	// no single-node throughput ratio links them to Query.NodeType.
	ErrNoTypeRatio = errors.New("no throughput ratio between node types")
)

// Observation is a measured throughput of the trial being predicted: an
// Estimate from a Profiler, or a point supplied by hand.
type Observation struct {
	Nodes      int
	NodeType   string
	Throughput float64 // samples per second
	// Sigma is the standard error of Throughput; 0 means unknown (the
	// Settings.NoiseFloor is used).
	Sigma float64
}

// Query says what to predict.
type Query struct {
	// MinNodes and MaxNodes bound the counts predicted (1 ≤ Min ≤ Max).
	MinNodes, MaxNodes int
	// NodeType is the type asked about; "" means the type of the
	// observations (the one with most distinct counts if several).
	NodeType string
	// Model and Batch name the trained model for single-node throughput
	// ratios across node types; optional.
	Model string
	Batch int
	// Group is the trial's campaign: library curves of the same Group are
	// siblings (same model, so the same normalised speedup) — unless both
	// name their Model and the models differ (sibling).
	Group string
	// Self names the trial's own curve in the library, if it is there
	// (a pool's library holds every measured trial): curves named Self or
	// "Self@…" are skipped, since its measurements are observations.
	Self string
	// Prior is an outside prediction of this trial's throughput on the
	// queried type (samples/s; counts strictly increasing, throughputs
	// positive), such as nas.ThroughputModel's curve from its
	// architecture: about this trial itself, where a library curve is
	// about another. With no observation it is the prediction (before
	// siblings, which in a NAS campaign train other networks); with
	// observations it lends its shape like a library curve, weighted
	// Settings.PriorWeight. Empty: none.
	Prior []Point
	// PriorSigma is the Prior's log-uncertainty (its relative error);
	// 0 means 0.25.
	PriorSigma float64
}

// DefaultPriorSigma is Query.PriorSigma's default: the relative error of
// an architecture-based throughput prediction on held-out networks is
// about 0.1 at the median with wide tails (docs/nas.md).
const DefaultPriorSigma = 0.25

func (q Query) isSelf(c PriorCurve) bool {
	return q.Self != "" && (c.Name == q.Self || strings.HasPrefix(c.Name, q.Self+"@"))
}

// sibling reports whether library curve c is one of the trial's
// siblings: a curve of its campaign (Group) that trains the same model,
// as far as either knows (a Model left empty matches any). A campaign
// that trains several models (a workload mixing networks, each job
// naming its own) does not lend one model's shape to another at a
// sibling's weight: such a curve counts as any other campaign's.
func (q Query) sibling(c PriorCurve) bool {
	return q.Group != "" && c.Group == q.Group && (q.Model == "" || c.Model == "" || c.Model == q.Model)
}

// PredictedPoint is the prediction at one node count.
type PredictedPoint struct {
	Nodes      int
	Throughput float64 // samples per second (median of a log-normal)
	// Sigma is the standard deviation of Throughput, Throughput·σ_log
	// (delta method on the log-normal).
	Sigma float64
	// SigmaLog is the standard deviation of ln Throughput.
	SigmaLog float64
	// Measured is true where Throughput is the trial's own measurement.
	Measured bool
	// SiblingMeasured is true where an aligned sibling (a library curve
	// of the trial's Group on its node type that shares a measured count
	// with the trial) measured the count: the campaign has explored it,
	// so Optimistic leaves it be. Always false for a trial with no
	// observation.
	SiblingMeasured bool
	// NearMeasured is true where a count the trial or an aligned sibling
	// measured is so near that extrapolating from it is uncertain by no
	// more than that measurement's own noise (Growth·δ(n) ≤ σ_m, see
	// Predict; a SiblingMeasured count is one): trying the count would
	// tell little that the measurement did not, so Optimistic leaves it
	// be. Always false for a trial with no observation.
	NearMeasured bool
}

// Prediction is a trial's predicted curve over [MinNodes, MaxNodes].
type Prediction struct {
	NodeType string
	// Points has one entry per count MinNodes..MaxNodes, in order.
	Points []PredictedPoint
	// Neighbours names the library curves that lent their shape, most
	// similar first, with "usl" for the trial's own fit.
	Neighbours []string
	// FromSiblings is true for a trial with no observation predicted from
	// its siblings (or from profiles of its model): Optimistic then
	// explores its smallest count only, its profiling run.
	FromSiblings bool
}

// At returns the point for n; ok is false outside [MinNodes, MaxNodes].
func (p Prediction) At(n int) (PredictedPoint, bool) {
	if len(p.Points) == 0 || n < p.Points[0].Nodes || n > p.Points[len(p.Points)-1].Nodes {
		return PredictedPoint{}, false
	}
	return p.Points[n-p.Points[0].Nodes], true
}

// Predict predicts a trial's throughput at every count of [q.MinNodes,
// q.MaxNodes] from its observations and a library of prior curves.
//
// Method: shape transfer from profiled curves (model similarity, Thanapol
// et al., ACIIDS'23), shrunk towards the trial's own trend. Every library
// curve c is a candidate shape L_c(n) = ln X_c(n) (interpolated in ln n,
// never extrapolated). Its residuals r_i = ln x_i − L_c(n_i) at the
// observed counts n_i absorb a pure rescaling (another batch size, a
// faster GPU); the candidate predicts
//
//	ln x̂_c(n) = L_c(n) + r_c(n)
//
// with r_c(n) the residuals interpolated linearly in ln n between the
// observed counts around n and held constant beyond them, so it passes
// through every measurement and lends only its normalised speedup. Weights
// are w_c = k_c·exp(−d_c(n)²/2h²): k_c multiplies by SameTypeWeight and
// SameGroupWeight; d_c(n) = |r_a − r_b| compares growth between the two
// observed counts a, b nearest n (flat kernel when h = 0). The population
// estimate is the weighted mean m(n) of ln x̂_c(n); the prediction is
//
//	ln x̂(n) = (1−λ)·m(n) + λ·t(n)
//
// with t(n) the trial's own power law through a, b and λ = TrendWeight.
// Where no library curve covers n, a USL fitted to the observations by
// MAP, with the library's population of USL coefficients as the prior
// (fitUSL), takes the place of the library shapes. The uncertainty is
//
//	σ²_log(n) = Σ w_c (ln x̂_c(n) − m(n))² / Σ w_c + (g·δ(n))² + σ²_m
//
// where δ(n) is the log-distance to the nearest measured count, g =
// Settings.Growth, and σ_m the relative noise of that measurement: it
// grows away from measurements and where neighbours disagree. Measured
// counts are returned exactly, with their own noise.
//
// A query about a node type the trial was not measured on predicts on the
// measured type, then scales by the single-node throughput ratio of the
// library (TypeSpeeds.Ratio) and adds its log-uncertainty. A trial with no
// observation is its Query.Prior when it has one, else predicted from its
// siblings (same Group and node type); once measured, its Prior is one
// more candidate shape, weighted Settings.PriorWeight.
func Predict(obs []Observation, lib *Library, q Query, s *Settings) (Prediction, error) {
	set := s.withDefaults()
	if err := set.validate(); err != nil {
		return Prediction{}, err
	}
	if q.MinNodes < 1 || q.MaxNodes < q.MinNodes {
		return Prediction{}, fmt.Errorf("%w: MinNodes %d, MaxNodes %d: want 1 ≤ MinNodes ≤ MaxNodes", ErrInvalidQuery, q.MinNodes, q.MaxNodes)
	}
	prior, err := q.priorCurve()
	if err != nil {
		return Prediction{}, err
	}
	baseType, pts := pickObservations(obs, q.NodeType)
	target := q.NodeType
	if target == "" {
		target = baseType
	}
	if len(pts) == 0 {
		if prior != nil {
			return predictFromPrior(prior, q, target, set), nil
		}
		return predictFromSiblings(lib, q, target, set)
	}
	pred := Prediction{NodeType: target}
	cands := candidates(pts, lib, q, baseType, set)
	if prior != nil && (q.NodeType == "" || q.NodeType == baseType) {
		// The trial's own predicted shape, on the type it was measured on
		// (across types the library's speed ratios take over as usual).
		t := newLogTable(prior)
		c := candidate{name: prior.Name, k: set.PriorWeight, tab: &t}
		if setResiduals(&c, pts) {
			cands = append(cands, c)
		}
	}
	sibCounts := alignedSiblingCounts(cands, q, baseType)
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].k > cands[j].k })
	for _, c := range cands[:min(len(cands), 5)] {
		pred.Neighbours = append(pred.Neighbours, c.name)
	}
	// The trial's own USL fit stands in where no library curve covers a
	// count; fitted only if some count needs it.
	var fallback *candidate
	ownFit := func() *candidate {
		if fallback != nil {
			return fallback
		}
		ns := make([]int, len(pts))
		xs := make([]float64, len(pts))
		for i, p := range pts {
			ns[i], xs[i] = p.n, p.x
		}
		u, _, _ := fitUSL(ns, xs, q.MaxNodes, lib.uslPrior())
		fallback = &candidate{name: "usl", k: 1, fn: func(n int) (float64, bool) {
			x := u.At(float64(n))
			return math.Log(x), x > 0
		}}
		setResiduals(fallback, pts)
		return fallback
	}
	pred.Points = make([]PredictedPoint, 0, q.MaxNodes-q.MinNodes+1)
	var votes []vote
	for n := q.MinNodes; n <= q.MaxNodes; n++ {
		var p PredictedPoint
		p, votes = predictAt(n, pts, cands, sibCounts, ownFit, set, votes[:0])
		pred.Points = append(pred.Points, p)
	}
	if target != baseType {
		ratio, sig, ok := lib.Speeds().Ratio(speedKey(q.Model, q.Batch), baseType, target)
		if !ok && q.Batch > 0 {
			ratio, sig, ok = lib.Speeds().Ratio(q.Model, baseType, target)
		}
		if !ok {
			return Prediction{}, fmt.Errorf("%w: measured on %q, asked about %q", ErrNoTypeRatio, baseType, target)
		}
		for i := range pred.Points {
			p := &pred.Points[i]
			p.Throughput *= ratio
			p.SigmaLog = math.Hypot(p.SigmaLog, sig)
			p.Sigma = p.Throughput * p.SigmaLog
			p.Measured, p.SiblingMeasured, p.NearMeasured = false, false, false // all on the measured type
		}
	}
	return pred, nil
}
