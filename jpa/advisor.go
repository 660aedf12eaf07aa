package jpa

import (
	"math"
	"slices"
	"sort"

	"github.com/gleaner-hpc/gleaner/curve"
)

// PriorExponent is the speedup n^PriorExponent assumed of a trial nothing
// is known of (nor of its campaign): mildly sublinear, as most
// data-parallel training is, so that unmeasured trials share nodes (and
// all get measured) rather than tie.
const PriorExponent = 0.9

// Advisor is the JPA's policy towards the allocator: from what has been
// measured of every trial of a pool, the curve the allocator sees for
// each. Production (activities.Allocate) and the simulator (sim.JPA) both
// follow it, so that what the simulator measures is what production
// does. It is pure and holds no state; the zero value uses every
// default.
//
// The policy: the library is Base plus each trial's measurements as a
// curve of its campaign (Group) on each node type, at most
// SiblingsPerGroup per campaign, model and type (Representatives); a trial's
// curve on a node type is Predict's, made optimistic on uncertain counts
// (Prediction.Optimistic with Explore); when nothing is known of the
// trial, its campaign or its architecture (or the prediction fails), it
// is the prior n^PriorExponent scaled to the pool's measured trials
// (PriorScale), so that it compares with measured curves under any
// allocator objective.
type Advisor struct {
	// Settings and Explore tune Predict and the optimism (nil: defaults).
	Settings *Settings
	Explore  *Explore
	// Base is the library of profiled models (a site's file); validated
	// by NewLibrary.
	Base []PriorCurve
	// Speeds are single-node throughputs of models on node types beyond
	// Base's (a GPU-ratio table: ParseGavel), for predicting a trial on a
	// type it was not measured on; nil: Base's alone.
	Speeds *TypeSpeeds
	// SiblingsPerGroup caps the library's curves per campaign, model and
	// node type (0: DefaultSiblingsPerGroup; negative: no cap).
	SiblingsPerGroup int
}

// TrialView is what the advisor knows of one trial.
type TrialView struct {
	// ID is the trial's one reference (production: its workflow id): the
	// library names its curves ID@type, and a prediction for it skips
	// them (Query.Self).
	ID string
	// Group is its campaign: trials of one group lend each other their
	// curves as siblings.
	Group string
	// Model and Batch name what it trains, if known (Query.Model, .Batch):
	// profiled curves of the model weigh more, and its node-type speeds
	// apply.
	Model string
	Batch int
	// MinNodes and MaxNodes bound its counts.
	MinNodes, MaxNodes int
	// Observations are its published throughput estimates, one per count
	// and node type.
	Observations []Observation
	// Prior and PriorSigma are its own predicted curve (Query.Prior),
	// e.g. from its architecture; empty: none.
	Prior      []Point
	PriorSigma float64
}

// Library is Base plus the trials' measured curves (Curves), with Speeds.
func (a Advisor) Library(trials []TrialView) (*Library, error) {
	lib, err := NewLibrary(append(slices.Clone(a.Base), a.Curves(trials)...))
	if err == nil && a.Speeds != nil {
		lib.Speeds().Merge(a.Speeds)
	}
	return lib, err
}

// Curves are the trials' measured curves the library keeps: one per
// trial and node type measured, named ID@type, at most SiblingsPerGroup
// per campaign, model and type.
func (a Advisor) Curves(trials []TrialView) []PriorCurve {
	var curves []PriorCurve
	for _, t := range trials {
		byType := map[string][]Point{}
		var order []string
		for _, o := range t.Observations {
			if o.Nodes <= 0 || !(o.Throughput > 0) || math.IsInf(o.Throughput, 0) {
				continue
			}
			if _, ok := byType[o.NodeType]; !ok {
				order = append(order, o.NodeType)
			}
			byType[o.NodeType] = append(byType[o.NodeType], Point{Nodes: o.Nodes, Throughput: o.Throughput})
		}
		for _, typ := range order {
			pts := byType[typ]
			sort.SliceStable(pts, func(i, j int) bool { return pts[i].Nodes < pts[j].Nodes })
			pts = slices.CompactFunc(pts, func(x, y Point) bool { return x.Nodes == y.Nodes })
			curves = append(curves, PriorCurve{Name: t.ID + "@" + typ, NodeType: typ, Group: t.Group, Model: t.Model, Batch: t.Batch, Points: pts})
		}
	}
	per := a.SiblingsPerGroup
	if per == 0 {
		per = DefaultSiblingsPerGroup
	}
	return Representatives(curves, per)
}

// PriorScales price the prior of a trial nothing is known of, in the
// units of the pool's measured trials (samples/s), so that it compares
// with measured curves under any allocator objective.
type PriorScales struct {
	// Best prices its smallest run (MinNodes): the largest, over every measured
	// point of the pool's trials, of throughput / n^PriorExponent.
	// Optimism for the never-measured: a trial priced below the measured
	// ones would, on a saturated pool under a throughput objective, never
	// get a node, so never be measured, so never be corrected; priced as
	// the best trial measured, it gets a node and is measured within a
	// profiling interval, then valued at what it is.
	Best float64
	// Typical prices its nodes beyond its smallest run (MinNodes): the
	// median of the same ratios. Optimism stops there, so that a
	// profiling run is the trial's smallest, not a large hole's worth of
	// nodes spent on a trial that may be slow.
	Typical float64
}

// PriorScale is the scale of the prior for a trial nothing is known of
// (PriorScales), from the trials' measurements; both 1 when nothing is
// measured.
func PriorScale(trials []TrialView) PriorScales {
	var scales []float64
	for _, t := range trials {
		for _, o := range t.Observations {
			if o.Nodes > 0 && o.Throughput > 0 && !math.IsInf(o.Throughput, 0) {
				scales = append(scales, o.Throughput/math.Pow(float64(o.Nodes), PriorExponent))
			}
		}
	}
	if len(scales) == 0 {
		return PriorScales{Best: 1, Typical: 1}
	}
	sort.Float64s(scales)
	return PriorScales{Best: scales[len(scales)-1], Typical: scales[len(scales)/2]}
}

// Curve is the trial's curve for the allocator on node type typ ("": the
// type it was measured on), over [1, MaxNodes]; fromPrior says it is the
// prior (PriorAllocatorCurve with prior).
func (a Advisor) Curve(t TrialView, lib *Library, typ string, prior PriorScales) (c curve.Curve, fromPrior bool) {
	c, _, fromPrior = a.CurveAndPrediction(t, lib, typ, prior)
	return c, fromPrior
}

// CurveAndPrediction is Curve and the prediction it was made from (its
// median and uncertainty at each count, before Optimistic); pred is nil
// when the curve is the prior.
func (a Advisor) CurveAndPrediction(t TrialView, lib *Library, typ string, prior PriorScales) (c curve.Curve, pred *Prediction, fromPrior bool) {
	q := Query{MinNodes: t.MinNodes, MaxNodes: t.MaxNodes, NodeType: typ, Group: t.Group, Self: t.ID, Model: t.Model, Batch: t.Batch}
	if len(t.Prior) > 0 {
		q.Prior, q.PriorSigma = t.Prior, t.PriorSigma
	}
	if p, err := Predict(t.Observations, lib, q, a.Settings); err == nil {
		opt, _ := p.Optimistic(a.Explore)
		if c = opt.AllocatorCurve(false); usable(c, t.MaxNodes) {
			return c, &p, false
		}
	}
	// Nothing known (ErrNoData, ErrNoTypeRatio), or a failure on odd
	// input: the prior keeps the trial schedulable.
	return PriorAllocatorCurve(t.MinNodes, t.MaxNodes, prior), nil, true
}

// PriorAllocatorCurve is the prior over [1, maxNodes]: s.Best ×
// n^PriorExponent up to minNodes (the smallest run, its profiling run),
// every further node what it adds to s.Typical × n^PriorExponent. With
// nothing measured (both 1) it is n^PriorExponent.
func PriorAllocatorCurve(minNodes, maxNodes int, s PriorScales) curve.Curve {
	m := math.Pow(float64(max(minNodes, 1)), PriorExponent)
	c := make(curve.Curve, 0, max(maxNodes, 0))
	for n := 1; n <= maxNodes; n++ {
		x := math.Pow(float64(n), PriorExponent)
		if n <= minNodes {
			c = append(c, curve.Point{Nodes: n, Throughput: s.Best * x})
		} else {
			c = append(c, curve.Point{Nodes: n, Throughput: s.Best*m + s.Typical*(x-m)})
		}
	}
	return c
}

// usable: c reaches maxNodes and every throughput is finite, ≥ 0.
func usable(c curve.Curve, maxNodes int) bool {
	if len(c) == 0 || c[len(c)-1].Nodes < maxNodes {
		return false
	}
	for _, p := range c {
		if !(p.Throughput >= 0) || math.IsInf(p.Throughput, 0) {
			return false
		}
	}
	return true
}
