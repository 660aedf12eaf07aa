package jpa

import (
	"math"
	"slices"
	"sort"

	"github.com/gleaner-hpc/gleaner/allocator"
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
// SiblingsPerGroup per campaign and type (Representatives); a trial's
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
	// SiblingsPerGroup caps the library's curves per campaign and node
	// type (0: DefaultSiblingsPerGroup; negative: no cap).
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
// per campaign and type.
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
			curves = append(curves, PriorCurve{Name: t.ID + "@" + typ, NodeType: typ, Group: t.Group, Points: pts})
		}
	}
	per := a.SiblingsPerGroup
	if per == 0 {
		per = DefaultSiblingsPerGroup
	}
	return Representatives(curves, per)
}

// PriorScale is the scale of the prior for a trial nothing is known of:
// the median over every measured point of the trials of
// throughput / n^PriorExponent (1 when nothing is measured).
func PriorScale(trials []TrialView) float64 {
	var scales []float64
	for _, t := range trials {
		for _, o := range t.Observations {
			if o.Nodes > 0 && o.Throughput > 0 && !math.IsInf(o.Throughput, 0) {
				scales = append(scales, o.Throughput/math.Pow(float64(o.Nodes), PriorExponent))
			}
		}
	}
	if len(scales) == 0 {
		return 1
	}
	sort.Float64s(scales)
	return scales[len(scales)/2]
}

// Curve is the trial's curve for the allocator on node type typ ("": the
// type it was measured on), over [1, MaxNodes]; fromPrior says it is the
// n^PriorExponent prior scaled by priorScale.
func (a Advisor) Curve(t TrialView, lib *Library, typ string, priorScale float64) (c allocator.Curve, fromPrior bool) {
	q := Query{MinNodes: t.MinNodes, MaxNodes: t.MaxNodes, NodeType: typ, Group: t.Group, Self: t.ID, Model: t.Model, Batch: t.Batch}
	if len(t.Prior) > 0 {
		q.Prior, q.PriorSigma = t.Prior, t.PriorSigma
	}
	if pred, err := Predict(t.Observations, lib, q, a.Settings); err == nil {
		opt, _ := pred.Optimistic(a.Explore)
		if c = opt.AllocatorCurve(false); usable(c, t.MaxNodes) {
			return c, false
		}
	}
	// Nothing known (ErrNoData, ErrNoTypeRatio), or a failure on odd
	// input: the prior keeps the trial schedulable.
	return PriorAllocatorCurve(t.MaxNodes, priorScale), true
}

// PriorAllocatorCurve is scale × n^PriorExponent over [1, maxNodes].
func PriorAllocatorCurve(maxNodes int, scale float64) allocator.Curve {
	c := make(allocator.Curve, 0, max(maxNodes, 0))
	for n := 1; n <= maxNodes; n++ {
		c = append(c, allocator.Point{Nodes: n, Throughput: scale * math.Pow(float64(n), PriorExponent)})
	}
	return c
}

// usable: c reaches maxNodes and every throughput is finite, ≥ 0.
func usable(c allocator.Curve, maxNodes int) bool {
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
