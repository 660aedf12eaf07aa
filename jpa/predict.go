package jpa

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
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
	// siblings (same model, so the same normalised speedup).
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

// Settings tunes Predict. The zero value (or a nil *Settings) uses the
// defaults documented on each field; they were chosen by the leave-one-app-
// out evaluation documented in docs/jpa.md.
type Settings struct {
	// Neighbours is how many library curves vote at each count, the most
	// heavily weighted first; 0 means all of them.
	Neighbours int
	// Bandwidth h, in log-throughput units, of the Gaussian similarity
	// kernel exp(−d²/2h²) on the local shape distance d between the trial
	// and a library curve (see Predict); 0 means a flat kernel: every
	// library curve of a kind weighs the same. On the real scaling data,
	// matching shapes on three noisy probes picked the wrong neighbours
	// (median MAPE 0.145 at h = 0.5 against 0.095 flat), hence the default.
	Bandwidth float64
	// SameTypeWeight multiplies the weight of a library curve measured on
	// the node type of the observations (the interconnect shapes a curve as
	// much as the model does); 0 means 20.
	SameTypeWeight float64
	// SameGroupWeight multiplies the weight of a sibling curve (same
	// Query.Group): trials of one campaign train one model; 0 means 100.
	SameGroupWeight float64
	// SameModelWeight multiplies the weight of a library curve of the
	// same Query.Model (the same network profiled before, perhaps on
	// another cluster or batch size: seed 003's "similar model" at its
	// most similar); 0 means 50.
	SameModelWeight float64
	// TrendWeight λ is the share of the trial's own local trend (a power
	// law through its two measured counts nearest n) in the prediction
	// beyond or between its measurements, against 1−λ for the library's
	// shapes: a shrinkage of the noisy own trend towards the population;
	// 0 means 0.15, negative means none.
	TrendWeight float64
	// Growth is how fast the log-uncertainty grows with the log-distance
	// to the nearest measured count: σ² gains (Growth·|ln n − ln m|)²;
	// 0 means 0.15.
	Growth float64
	// NoiseFloor is the least relative standard deviation of a measured
	// point; 0 means 0.02.
	NoiseFloor float64
	// PriorWeight multiplies the weight of Query.Prior among the shapes
	// once the trial is measured; 0 means 20,000: ten same-type siblings'
	// (SameTypeWeight × SameGroupWeight each), so the trial's own
	// predicted shape outweighs a campaign's other networks.
	PriorWeight float64
}

func (s *Settings) withDefaults() Settings {
	var o Settings
	if s != nil {
		o = *s
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.SameTypeWeight, 20)
	def(&o.SameGroupWeight, 100)
	def(&o.SameModelWeight, 50)
	def(&o.TrendWeight, 0.15)
	if o.TrendWeight < 0 {
		o.TrendWeight = 0
	}
	def(&o.Growth, 0.15)
	def(&o.NoiseFloor, 0.02)
	def(&o.PriorWeight, 10*o.SameTypeWeight*o.SameGroupWeight)
	return o
}

func (s Settings) validate() error {
	switch {
	case s.Neighbours < 0:
		return fmt.Errorf("%w: Neighbours is %d, want ≥ 0", ErrInvalidSettings, s.Neighbours)
	case !(s.Bandwidth >= 0):
		return fmt.Errorf("%w: Bandwidth is %v, want ≥ 0", ErrInvalidSettings, s.Bandwidth)
	case !(s.SameTypeWeight > 0):
		return fmt.Errorf("%w: SameTypeWeight is %v, want > 0", ErrInvalidSettings, s.SameTypeWeight)
	case !(s.SameGroupWeight > 0):
		return fmt.Errorf("%w: SameGroupWeight is %v, want > 0", ErrInvalidSettings, s.SameGroupWeight)
	case !(s.SameModelWeight > 0):
		return fmt.Errorf("%w: SameModelWeight is %v, want > 0", ErrInvalidSettings, s.SameModelWeight)
	case !(s.TrendWeight < 1):
		return fmt.Errorf("%w: TrendWeight is %v, want < 1", ErrInvalidSettings, s.TrendWeight)
	case !(s.Growth >= 0):
		return fmt.Errorf("%w: Growth is %v, want ≥ 0", ErrInvalidSettings, s.Growth)
	case !(s.NoiseFloor >= 0):
		return fmt.Errorf("%w: NoiseFloor is %v, want ≥ 0", ErrInvalidSettings, s.NoiseFloor)
	case !(s.PriorWeight > 0) || math.IsInf(s.PriorWeight, 0):
		return fmt.Errorf("%w: PriorWeight is %v, want finite > 0", ErrInvalidSettings, s.PriorWeight)
	}
	return nil
}

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
}

// Prediction is a trial's predicted curve over [MinNodes, MaxNodes].
type Prediction struct {
	NodeType string
	// Points has one entry per count MinNodes..MaxNodes, in order.
	Points []PredictedPoint
	// Neighbours names the library curves that lent their shape, most
	// similar first, with "usl" for the trial's own fit.
	Neighbours []string
}

// At returns the point for n; ok is false outside [MinNodes, MaxNodes].
func (p Prediction) At(n int) (PredictedPoint, bool) {
	if len(p.Points) == 0 || n < p.Points[0].Nodes || n > p.Points[len(p.Points)-1].Nodes {
		return PredictedPoint{}, false
	}
	return p.Points[n-p.Points[0].Nodes], true
}

// candidate is one library curve lending its shape.
type candidate struct {
	name  string
	k     float64                     // node-type and campaign multiplier
	tab   *logTable                   // a library curve's shape, or
	fn    func(n int) (float64, bool) // the trial's own fit
	resid []float64                   // ln observed − ln shape at each observed count (NaN if uncovered)
	full  bool                        // no NaN in resid
}

// logAt is the candidate's ln throughput at n; false outside its range.
func (c *candidate) logAt(n int) (float64, bool) {
	if c.tab != nil && c.tab.v != nil {
		i := n - c.tab.lo
		if i < 0 || i >= len(c.tab.v) {
			return 0, false
		}
		return c.tab.v[i], true
	}
	if c.tab != nil {
		return c.tab.curve.logAt(n)
	}
	return c.fn(n)
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
			p.Measured, p.SiblingMeasured = false, false // both on the measured type
		}
	}
	return pred, nil
}

// obsPoint is one distinct observed count, in log space.
type obsPoint struct {
	n      int
	lnN    float64 // ln n
	x      float64 // the throughput, exactly as measured for one observation
	logX   float64
	relSig float64
}

// pickObservations keeps the valid observations of one node type (want if
// measured, else the type with most distinct counts), one per count (the
// log-mean of duplicates), sorted by count.
func pickObservations(obs []Observation, want string) (string, []obsPoint) {
	byType := map[string]map[int][]Observation{}
	for _, o := range obs {
		if o.Nodes <= 0 || !(o.Throughput > 0) || math.IsInf(o.Throughput, 0) || math.IsNaN(o.Sigma) || math.IsInf(o.Sigma, 0) {
			continue
		}
		m, ok := byType[o.NodeType]
		if !ok {
			m = map[int][]Observation{}
			byType[o.NodeType] = m
		}
		m[o.Nodes] = append(m[o.Nodes], o)
	}
	base := want
	if _, ok := byType[want]; !ok {
		types := make([]string, 0, len(byType))
		for t := range byType {
			types = append(types, t)
		}
		sort.Strings(types)
		best := -1
		for _, t := range types {
			if len(byType[t]) > best {
				base, best = t, len(byType[t])
			}
		}
	}
	var pts []obsPoint
	for n, os := range byType[base] {
		var lx, rs float64
		for _, o := range os {
			lx += math.Log(o.Throughput)
			rs += math.Min(math.Abs(o.Sigma)/o.Throughput, 1)
		}
		p := obsPoint{n: n, lnN: math.Log(float64(n)), logX: lx / float64(len(os)), relSig: rs / float64(len(os))}
		p.x = math.Exp(p.logX)
		if len(os) == 1 {
			p.x = os[0].Throughput
		}
		pts = append(pts, p)
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].n < pts[j].n })
	return base, pts
}

func candidates(pts []obsPoint, lib *Library, q Query, baseType string, set Settings) []candidate {
	if lib == nil {
		return nil
	}
	var out []candidate
	for i, c := range lib.curves {
		if len(c.Points) < 2 || q.isSelf(c) {
			continue
		}
		cand := candidate{name: c.Name, k: 1, tab: &lib.logs[i]}
		if c.NodeType == baseType {
			cand.k *= set.SameTypeWeight
		}
		if q.Group != "" && c.Group == q.Group {
			cand.k *= set.SameGroupWeight
		}
		if q.Model != "" && c.Model == q.Model {
			cand.k *= set.SameModelWeight
		}
		if setResiduals(&cand, pts) {
			out = append(out, cand)
		}
	}
	return out
}

// setResiduals fills c.resid; false if c covers no observed count.
func setResiduals(c *candidate, pts []obsPoint) bool {
	c.resid = make([]float64, len(pts))
	covered := 0
	for i, p := range pts {
		l, ok := c.logAt(p.n)
		if !ok || math.IsInf(l, 0) || math.IsNaN(l) {
			c.resid[i] = math.NaN()
			continue
		}
		c.resid[i] = p.logX - l
		covered++
	}
	c.full = covered == len(pts)
	return covered > 0
}

// residualAt interpolates a candidate's residuals linearly in ln n between
// the covered observed counts around n, constant beyond them; ln is ln n.
func residualAt(n int, ln float64, pts []obsPoint, resid []float64) float64 {
	lo, hi := -1, -1
	for i, p := range pts {
		if math.IsNaN(resid[i]) {
			continue
		}
		if p.n <= n {
			lo = i
		}
		if p.n >= n && hi < 0 {
			hi = i
		}
	}
	switch {
	case lo < 0:
		return resid[hi]
	case hi < 0 || lo == hi:
		return resid[lo]
	}
	a, b := pts[lo].lnN, pts[hi].lnN
	t := (ln - a) / (b - a)
	return (1-t)*resid[lo] + t*resid[hi]
}

// nearestPair returns the indices of the two observed counts that bracket
// n, or the last two below it, or the first two above it; b < 0 if there
// is only one observation.
func nearestPair(n int, pts []obsPoint) (a, b int) {
	if len(pts) < 2 {
		return 0, -1
	}
	for i := 0; i+1 < len(pts); i++ {
		if pts[i+1].n >= n {
			return i, i + 1
		}
	}
	return len(pts) - 2, len(pts) - 1
}

// vote is one curve's say on ln throughput at a count, with its weight.
type vote struct{ v, w float64 }

// alignedSiblingCounts is the sorted distinct counts measured by the
// trial's aligned siblings: candidates of its Group on its node type,
// which share a measured count with the trial (a curve that does not
// cannot be aligned, so its counts say nothing of the trial's shape).
func alignedSiblingCounts(cands []candidate, q Query, typ string) []int {
	if q.Group == "" {
		return nil
	}
	var out []int
	for i := range cands {
		if c := cands[i].tab.curve; c.Group == q.Group && c.NodeType == typ {
			for _, p := range c.Points {
				out = append(out, p.Nodes)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// logDistance is the least |ln n − ln m| over the sorted counts ms (+Inf
// if there are none).
func logDistance(n int, ms []int) float64 {
	i, _ := slices.BinarySearch(ms, n)
	d := math.Inf(1)
	for _, j := range []int{i - 1, i} {
		if j >= 0 && j < len(ms) {
			d = math.Min(d, math.Abs(math.Log(float64(n))-math.Log(float64(ms[j]))))
		}
	}
	return d
}

// predictAt predicts count n; votes is scratch space, returned for reuse.
// sibCounts are the counts the trial's aligned siblings measured; fallback yields
// the trial's own fit (computed on first call).
func predictAt(n int, pts []obsPoint, cands []candidate, sibCounts []int, fallback func() *candidate, set Settings, votes []vote) (PredictedPoint, []vote) {
	ln := math.Log(float64(n))
	nearest, dist := 0, math.Inf(1)
	for i, p := range pts {
		if d := math.Abs(ln - p.lnN); d < dist {
			nearest, dist = i, d
		}
	}
	noise := math.Max(pts[nearest].relSig, set.NoiseFloor)
	if dist == 0 {
		x := pts[nearest].x
		return PredictedPoint{Nodes: n, Throughput: x, SigmaLog: noise, Sigma: x * noise, Measured: true}, votes
	}
	a, b := nearestPair(n, pts)
	// For a candidate covering every observed count, residualAt reduces
	// to one interpolation between the same two counts: found once.
	lo, hi := -1, -1
	for i, p := range pts {
		if p.n <= n {
			lo = i
		}
		if p.n >= n && hi < 0 {
			hi = i
		}
	}
	t := 0.0
	if lo >= 0 && hi >= 0 && lo != hi {
		t = (ln - pts[lo].lnN) / (pts[hi].lnN - pts[lo].lnN)
	}
	for i := range cands {
		c := &cands[i]
		l, ok := c.logAt(n)
		if !ok {
			continue
		}
		w := c.k
		if set.Bandwidth > 0 && b >= 0 && !math.IsNaN(c.resid[a]) && !math.IsNaN(c.resid[b]) {
			d := c.resid[a] - c.resid[b]
			w *= math.Exp(-d * d / (2 * set.Bandwidth * set.Bandwidth))
		}
		if !(w > 0) {
			continue
		}
		var r float64
		switch {
		case !c.full:
			r = residualAt(n, ln, pts, c.resid)
		case lo < 0:
			r = c.resid[hi]
		case hi < 0 || lo == hi:
			r = c.resid[lo]
		default:
			r = (1-t)*c.resid[lo] + t*c.resid[hi]
		}
		votes = append(votes, vote{l + r, w})
	}
	spreadFloor := 0.0
	if len(votes) == 0 {
		// No library curve covers n: the trial's own USL fit stands in,
		// with a spread that says how little two or three points pin it.
		if fb := fallback(); fb != nil {
			if l, ok := fb.logAt(n); ok {
				votes = append(votes, vote{l + residualAt(n, ln, pts, fb.resid), 1})
			}
		}
		if len(votes) == 0 {
			votes = append(votes, vote{pts[nearest].logX + ln - pts[nearest].lnN, 1})
		}
		spreadFloor = 0.2
	}
	if set.Neighbours > 0 && len(votes) > set.Neighbours {
		sort.SliceStable(votes, func(i, j int) bool { return votes[i].w > votes[j].w })
		votes = votes[:set.Neighbours]
	}
	var sw, sm float64
	for _, v := range votes {
		sw += v.w
		sm += v.w * v.v
	}
	mean := sm / sw
	var spread float64
	for _, v := range votes {
		spread += v.w * (v.v - mean) * (v.v - mean)
	}
	spread = math.Max(math.Sqrt(spread/sw), spreadFloor)
	if set.TrendWeight > 0 && b >= 0 {
		slope := (pts[b].logX - pts[a].logX) / (pts[b].lnN - pts[a].lnN)
		trend := pts[b].logX + slope*(ln-pts[b].lnN)
		mean = (1-set.TrendWeight)*mean + set.TrendWeight*trend
	}
	// Where siblings measured n or near it, the campaign's shape is known
	// there, and how far this trial may stray from it is the siblings'
	// spread: the extrapolation term runs from the nearest count the
	// trial or an aligned sibling measured.
	sibDist := logDistance(n, sibCounts)
	siblingMeasured := sibDist == 0
	dist = math.Min(dist, sibDist)
	sl := math.Sqrt(spread*spread + set.Growth*set.Growth*dist*dist + noise*noise)
	x := math.Exp(mean)
	return PredictedPoint{Nodes: n, Throughput: x, SigmaLog: sl, Sigma: x * sl, SiblingMeasured: siblingMeasured}, votes
}

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
		func(c PriorCurve) bool { return q.Group != "" && c.Group == q.Group },
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
	pred := Prediction{NodeType: target}
	for _, i := range sibs {
		pred.Neighbours = append(pred.Neighbours, lib.curves[i].Name)
	}
	// SiblingMeasured stays false: a trial nothing is measured of explores
	// wherever it starts, and letting its optimism go to the count the
	// allocator values most served better in the simulator than steering
	// it away from its siblings' counts (jpa/oracle throughput 0.92
	// against 0.89 on sim's contested real-curve scenario).
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
