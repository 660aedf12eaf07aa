package jpa

import (
	"fmt"
	"math"
	"sort"

	"github.com/gleaner-hpc/gleaner/internal/dataset"
)

// Point is a throughput at one node count.
type Point struct {
	Nodes      int
	Throughput float64 // samples per second
}

// PriorCurve is a fully measured throughput curve that predictions for
// other trials may borrow the shape of: a profiled model from a benchmark
// (dataset.ScalingCurve) or a completed trial of a campaign.
type PriorCurve struct {
	// Name identifies the curve in reports, e.g. "cifar10__aws.csv@bsz=64".
	Name string
	// Model is the application or model, e.g. "cifar10"; curves of the
	// same Model and Batch share single-node throughput ratios across
	// node types.
	Model string
	// Batch is the per-GPU batch size; 0 when unknown.
	Batch int
	// NodeType is the node type (cluster, GPU model) it was measured on.
	NodeType string
	// Group is the campaign of a completed trial; "" for profiled models.
	// Trials of one campaign usually train one model, so a curve of the
	// same Group is a sibling and weighs more (Settings.SameGroupWeight).
	Group string
	// Points are sorted by strictly increasing Nodes, all positive.
	Points []Point
}

// validate checks the invariants Points must satisfy.
func (c PriorCurve) validate() error {
	if len(c.Points) == 0 {
		return fmt.Errorf("prior curve %q: Points is empty", c.Name)
	}
	for i, p := range c.Points {
		if p.Nodes <= 0 {
			return fmt.Errorf("prior curve %q: Points[%d].Nodes is %d, want > 0", c.Name, i, p.Nodes)
		}
		if !(p.Throughput > 0) || math.IsInf(p.Throughput, 0) {
			return fmt.Errorf("prior curve %q: Points[%d].Throughput is %v, want finite > 0", c.Name, i, p.Throughput)
		}
		if i > 0 && p.Nodes <= c.Points[i-1].Nodes {
			return fmt.Errorf("prior curve %q: Points[%d].Nodes is %d, not above %d", c.Name, i, p.Nodes, c.Points[i-1].Nodes)
		}
	}
	return nil
}

// logAt interpolates log throughput linearly in log n between measured
// points (a power law between neighbours, which is how speedup curves
// bend); ok is false outside the measured range.
func (c PriorCurve) logAt(n int) (float64, bool) {
	pts := c.Points
	if len(pts) == 0 || n < pts[0].Nodes || n > pts[len(pts)-1].Nodes {
		return 0, false
	}
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Nodes >= n })
	if pts[i].Nodes == n {
		return math.Log(pts[i].Throughput), true
	}
	a, b := pts[i-1], pts[i]
	t := (math.Log(float64(n)) - math.Log(float64(a.Nodes))) / (math.Log(float64(b.Nodes)) - math.Log(float64(a.Nodes)))
	return (1-t)*math.Log(a.Throughput) + t*math.Log(b.Throughput), true
}

// at returns the throughput at n if n is a measured point.
func (c PriorCurve) at(n int) (float64, bool) {
	for _, p := range c.Points {
		if p.Nodes == n {
			return p.Throughput, true
		}
	}
	return 0, false
}

// PriorFromScaling converts a measured scaling curve into a prior curve.
func PriorFromScaling(s dataset.ScalingCurve) PriorCurve {
	c := PriorCurve{Name: s.Name(), Model: s.App, Batch: s.LocalBatch, NodeType: s.Cluster}
	for _, p := range s.Points {
		c.Points = append(c.Points, Point{Nodes: p.Nodes, Throughput: p.SamplesPerS})
	}
	return c
}

// Library is a set of prior curves plus what can be learnt from them:
// single-node throughput per (model, batch, node type), for ratios across
// node types, and the population of USL coefficients, the prior of a
// regularised fit. Build it once; it is read-only while predicting and safe
// for concurrent reads.
type Library struct {
	curves []PriorCurve
	speeds *TypeSpeeds
	usl    uslPrior
}

// NewLibrary validates and indexes the curves (copied). Curves with fewer
// than two points carry no shape but still contribute single-node speeds.
func NewLibrary(curves []PriorCurve) (*Library, error) {
	l := &Library{speeds: NewTypeSpeeds(), usl: defaultUSLPrior}
	var alphas, betas []float64
	for _, c := range curves {
		if err := c.validate(); err != nil {
			return nil, err
		}
		c.Points = append([]Point(nil), c.Points...)
		l.curves = append(l.curves, c)
		if x1, ok := c.at(1); ok {
			l.speeds.Set(speedKey(c.Model, c.Batch), c.NodeType, x1)
		}
		if len(c.Points) >= 4 {
			ns, xs := splitPoints(c.Points)
			u, _, ok := fitUSL(ns, xs, 0, defaultUSLPrior)
			if ok {
				alphas = append(alphas, u.Alpha)
				betas = append(betas, u.Beta)
			}
		}
	}
	if len(alphas) >= 3 {
		// Population prior (empirical Bayes): median and scaled MAD of the
		// coefficients of the profiled curves, floored so one cluster of
		// look-alike curves cannot pin the fit.
		l.usl = uslPrior{
			Alpha: median(alphas), SigmaAlpha: math.Max(1.4826*mad(alphas), 0.05),
			Beta: median(betas), SigmaBeta: math.Max(1.4826*mad(betas), 0.002),
		}
	}
	return l, nil
}

// LibraryFromScaling builds a library from measured scaling curves, keeping
// those for which keep returns true (nil keeps all).
func LibraryFromScaling(curves []dataset.ScalingCurve, keep func(dataset.ScalingCurve) bool) (*Library, error) {
	var pcs []PriorCurve
	for _, s := range curves {
		if keep == nil || keep(s) {
			pcs = append(pcs, PriorFromScaling(s))
		}
	}
	return NewLibrary(pcs)
}

// Len is the number of curves.
func (l *Library) Len() int {
	if l == nil {
		return 0
	}
	return len(l.curves)
}

// Curves returns a copy of the curves.
func (l *Library) Curves() []PriorCurve {
	if l == nil {
		return nil
	}
	return append([]PriorCurve(nil), l.curves...)
}

// Speeds returns the single-node throughputs learnt from the curves.
func (l *Library) Speeds() *TypeSpeeds {
	if l == nil {
		return NewTypeSpeeds()
	}
	return l.speeds
}

func splitPoints(pts []Point) ([]int, []float64) {
	ns := make([]int, len(pts))
	xs := make([]float64, len(pts))
	for i, p := range pts {
		ns[i], xs[i] = p.Nodes, p.Throughput
	}
	return ns, xs
}

func median(xs []float64) float64 {
	return quantile(xs, 0.5)
}

// quantile is the linearly interpolated sample quantile (Hyndman and Fan
// 1996, definition 7, the default of R and NumPy); NaN for no data.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// mad is the median absolute deviation from the median.
func mad(xs []float64) float64 {
	m := median(xs)
	d := make([]float64, len(xs))
	for i, x := range xs {
		d[i] = math.Abs(x - m)
	}
	return median(d)
}
