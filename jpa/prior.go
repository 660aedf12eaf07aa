package jpa

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/gleaner-hpc/gleaner/curve"
	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// Point is a throughput at one node count: the curve package's point, one
// shape from the trainer's profile to the allocator.
type Point = curve.Point

// PriorCurve is a fully measured throughput curve that predictions for
// other trials may borrow the shape of: a profiled model from a benchmark
// (curve.Scaling) or a completed trial of a campaign.
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
func PriorFromScaling(s curve.Scaling) PriorCurve {
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
	logs   []logTable // per curve: ln throughput at every count of its range
	speeds *TypeSpeeds

	uslOnce sync.Once
	usl     uslPrior // the population prior; read through uslPrior()
}

// maxTableSpan bounds the counts a curve's logTable covers; a curve
// spanning more is interpolated on every lookup.
const maxTableSpan = 4096

// logTable is PriorCurve.logAt at every count of [lo, lo+len(v)), computed
// once: Predict looks each library curve up at every count of every query.
type logTable struct {
	curve *PriorCurve
	lo    int
	v     []float64
}

func newLogTable(c *PriorCurve) logTable {
	t := logTable{curve: c}
	if len(c.Points) == 0 {
		return t
	}
	lo, hi := c.Points[0].Nodes, c.Points[len(c.Points)-1].Nodes
	if hi-lo >= maxTableSpan {
		return t
	}
	t.lo, t.v = lo, make([]float64, hi-lo+1)
	for n := lo; n <= hi; n++ {
		t.v[n-lo], _ = c.logAt(n)
	}
	return t
}

// at is c.logAt(n).
func (t logTable) at(n int) (float64, bool) {
	if t.v == nil {
		return t.curve.logAt(n)
	}
	if n < t.lo || n-t.lo >= len(t.v) {
		return 0, false
	}
	return t.v[n-t.lo], true
}

// NewLibrary validates and indexes the curves (copied). Curves with fewer
// than two points carry no shape but still contribute single-node speeds.
func NewLibrary(curves []PriorCurve) (*Library, error) {
	l := &Library{speeds: NewTypeSpeeds(), curves: make([]PriorCurve, 0, len(curves))}
	for _, c := range curves {
		if err := c.validate(); err != nil {
			return nil, err
		}
		c.Points = append([]Point(nil), c.Points...)
		l.curves = append(l.curves, c)
		if x1, ok := c.at(1); ok {
			l.speeds.Set(speedKey(c.Model, c.Batch), c.NodeType, x1)
		}
	}
	l.logs = make([]logTable, len(l.curves))
	for i := range l.curves {
		l.logs[i] = newLogTable(&l.curves[i])
	}
	return l, nil
}

// uslPrior is the population prior of the USL fit (empirical Bayes): the
// median and scaled MAD of the coefficients of the curves with at least
// four points, floored so one cluster of look-alike curves cannot pin the
// fit; the default prior with fewer than three such curves. Fitting every
// curve is costly and only a trial whose counts no curve covers needs it,
// so it is computed on first use.
func (l *Library) uslPrior() uslPrior {
	if l == nil {
		return defaultUSLPrior
	}
	l.uslOnce.Do(func() {
		l.usl = defaultUSLPrior
		var alphas, betas []float64
		for _, c := range l.curves {
			if len(c.Points) < 4 {
				continue
			}
			ns, xs := splitPoints(c.Points)
			if u, _, ok := fitUSL(ns, xs, 0, defaultUSLPrior); ok {
				alphas = append(alphas, u.Alpha)
				betas = append(betas, u.Beta)
			}
		}
		if len(alphas) >= 3 {
			l.usl = uslPrior{
				Alpha: median(alphas), SigmaAlpha: math.Max(1.4826*mad(alphas), 0.05),
				Beta: median(betas), SigmaBeta: math.Max(1.4826*mad(betas), 0.002),
			}
		}
	})
	return l.usl
}

// LibraryFromScaling builds a library from measured scaling curves, keeping
// those for which keep returns true (nil keeps all).
func LibraryFromScaling(curves []curve.Scaling, keep func(curve.Scaling) bool) (*Library, error) {
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

// median and quantile are stats.Quantile, the interpolated sample
// quantile (Hyndman and Fan 1996, definition 7); median is its q = 0.5,
// not stats.Median, which rounds differently in the last bit.
func median(xs []float64) float64 { return stats.Quantile(xs, 0.5) }

func quantile(xs []float64, q float64) float64 { return stats.Quantile(xs, q) }

// mad is the median absolute deviation from the median.
func mad(xs []float64) float64 {
	m := median(xs)
	d := make([]float64, len(xs))
	for i, x := range xs {
		d[i] = math.Abs(x - m)
	}
	return median(d)
}

// DefaultSiblingsPerGroup is how many curves of one campaign and model on
// one node type a library built from running trials keeps
// (Representatives): with
// the sibling weight, a few dozen siblings pin the campaign's shape as
// well as hundreds do, and Predict's cost grows with the library.
const DefaultSiblingsPerGroup = 32

// Representatives keeps at most perGroup curves of each (Group, Model,
// NodeType) with a Group — those with the most points, ties to the
// earlier in curves — and every curve without a Group (profiled models),
// in the order given: a campaign that trains several models keeps each
// model's siblings (Query.sibling). perGroup ≤ 0 keeps everything.
func Representatives(curves []PriorCurve, perGroup int) []PriorCurve {
	if perGroup <= 0 {
		return curves
	}
	type key struct{ group, model, typ string }
	byKey := map[key][]int{}
	for i, c := range curves {
		if c.Group != "" {
			k := key{c.Group, c.Model, c.NodeType}
			byKey[k] = append(byKey[k], i)
		}
	}
	drop := map[int]bool{}
	for _, idx := range byKey {
		if len(idx) <= perGroup {
			continue
		}
		sort.SliceStable(idx, func(a, b int) bool { return len(curves[idx[a]].Points) > len(curves[idx[b]].Points) })
		for _, i := range idx[perGroup:] {
			drop[i] = true
		}
	}
	if len(drop) == 0 {
		return curves
	}
	out := make([]PriorCurve, 0, len(curves)-len(drop))
	for i, c := range curves {
		if !drop[i] {
			out = append(out, c)
		}
	}
	return out
}
