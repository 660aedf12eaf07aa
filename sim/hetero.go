package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// Heterogeneous pools: nodes of several types (GPU models), and jobs whose
// true throughput depends on the type they run on (Job.CurvesByType). The
// allocator gives a trial nodes of one type and never migrates a running
// trial to another (docs/allocator.md), so a job's rate is its curve on
// the type of the nodes it holds.

// curveOn is the job's true curve on nodes of type typ, and whether it can
// run there: a job without CurvesByType runs on every type at Curve.
func (j *Job) curveOn(typ string) (allocator.Curve, bool) {
	if len(j.CurvesByType) == 0 {
		return j.Curve, true
	}
	c, ok := j.CurvesByType[typ]
	return c, ok
}

// Types lists the node types the job has a curve for, sorted; nil for a
// job without CurvesByType (it runs on any type).
func (j Job) Types() []string {
	if len(j.CurvesByType) == 0 {
		return nil
	}
	out := make([]string, 0, len(j.CurvesByType))
	for typ := range j.CurvesByType {
		out = append(out, typ)
	}
	sort.Strings(out)
	return out
}

// BestPlacement is BestScale over every type the job can run on: the
// type and count in [MinNodes, MaxNodes] with the most samples per
// node-second, and that rate (the first type in sorted order, then the
// smallest count, on ties). For a job without CurvesByType it is
// ("", BestScale()). Dedicated nodes (Metrics.DedicatedNodeSeconds) are
// the job's best type at its best scale.
func (j Job) BestPlacement() (typ string, k int, perNode float64) {
	if len(j.CurvesByType) == 0 {
		k, perNode = j.BestScale()
		return "", k, perNode
	}
	for _, t := range j.Types() {
		c := j.CurvesByType[t]
		for n := j.MinNodes; n <= j.MaxNodes; n++ {
			if r := c.At(n) / float64(n); r > perNode {
				typ, k, perNode = t, n, r
			}
		}
	}
	return typ, k, perNode
}

// ReferenceRate is the job's per-node throughput at MinNodes on its
// reference type, the one of its types where that is lowest (and
// positive): the unit in which allocator.ObjectiveEfficiency values a
// trial given these curves. Samples / ReferenceRate is the job's work in
// reference node-seconds (JobMetrics.Work), a quantity that, unlike
// samples, adds up across models. 0 when no type runs the job at MinNodes.
func (j Job) ReferenceRate() float64 {
	if len(j.CurvesByType) == 0 {
		return j.Curve.At(j.MinNodes) / float64(j.MinNodes)
	}
	ref := 0.0
	for _, c := range j.CurvesByType {
		if r := c.At(j.MinNodes) / float64(j.MinNodes); r > 0 && (ref == 0 || r < ref) {
			ref = r
		}
	}
	return ref
}

// TypeShare is one node type of a pool and its weight in the mix.
type TypeShare struct {
	Type  string
	Share float64
}

// ParseTypeMix parses a node-type mix "TYPE=WEIGHT,TYPE=WEIGHT,…" (e.g.
// "k80=1,p100=1,v100=2"): distinct non-empty types, weights positive and
// finite, in any unit (AssignNodeTypes normalises them).
func ParseTypeMix(s string) ([]TypeShare, error) {
	var mix []TypeShare
	for _, part := range strings.Split(s, ",") {
		typ, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		typ = strings.TrimSpace(typ)
		if !ok || typ == "" {
			return nil, fmt.Errorf("%q is not TYPE=WEIGHT", part)
		}
		share, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || !(share > 0) || math.IsInf(share, 0) {
			return nil, fmt.Errorf("%q: weight %q is not a positive number", part, w)
		}
		if slices.ContainsFunc(mix, func(m TypeShare) bool { return m.Type == typ }) {
			return nil, fmt.Errorf("type %q is given twice", typ)
		}
		mix = append(mix, TypeShare{Type: typ, Share: share})
	}
	return mix, nil
}

// AssignNodeTypes gives each of nodes a type of mix, in proportion to the
// weights (largest remainders: the counts differ from the exact shares
// by less than one node each), at random positions, the same for the
// same seed and node set whatever the order of nodes. Random rather than
// by id: a trace's ids carry the batch scheduler's placement (first fit
// hands out low ids first), which blocks of ids would tie to a type. The
// result is a Config.NodeTypes.
func AssignNodeTypes(nodes []string, mix []TypeShare, seed uint64) (map[string]string, error) {
	total := 0.0
	for _, m := range mix {
		if m.Type == "" || !(m.Share > 0) || math.IsInf(m.Share, 0) {
			return nil, fmt.Errorf("node types: %q with weight %v: want a named type and a positive finite weight", m.Type, m.Share)
		}
		total += m.Share
	}
	if len(mix) == 0 {
		return nil, errors.New("node types: empty mix")
	}
	ids := slices.Clone(nodes)
	sort.Strings(ids)
	ids = slices.Compact(ids)
	rand.New(rand.NewPCG(seed, 0x7e7e)).Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })

	// Hamilton's method: floors, then one more node to the largest
	// remainders (earlier types first on ties).
	counts := make([]int, len(mix))
	rem := make([]int, len(mix))
	left := len(ids)
	for i, m := range mix {
		exact := float64(len(ids)) * m.Share / total
		counts[i] = int(exact)
		left -= counts[i]
		rem[i] = i
	}
	sort.SliceStable(rem, func(a, b int) bool {
		ea, eb := float64(len(ids))*mix[rem[a]].Share/total, float64(len(ids))*mix[rem[b]].Share/total
		return ea-math.Floor(ea) > eb-math.Floor(eb)
	})
	for i := 0; i < left; i++ {
		counts[rem[i]]++
	}
	out := make(map[string]string, len(ids))
	next := 0
	for i, m := range mix {
		for _, id := range ids[next : next+counts[i]] {
			out[id] = m.Type
		}
		next += counts[i]
	}
	return out, nil
}

// TypeBlind is a type-blind allocator's view of jobs (a Config.Curves):
// it is told one curve per job, the same on every type the job can run
// on, while progress follows the job's true curve on the type it gets.
// as names that curve: "" (or "mean") the mean of the job's curves, at
// every node count any of them has a point at; a type, the job's curve
// on that type (an error if a typed job has none). A job without
// CurvesByType is told its Curve.
func TypeBlind(jobs []Job, as string) (CurveSource, error) {
	curves := make([]allocator.Curve, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		switch {
		case len(j.CurvesByType) == 0:
			curves[i] = j.Curve
		case as == "" || as == "mean":
			curves[i] = meanCurve(j.CurvesByType)
		default:
			c, ok := j.CurvesByType[as]
			if !ok {
				return nil, fmt.Errorf("type-blind as %q: job %q has no curve on that type (it has %v)", as, j.Name, j.Types())
			}
			curves[i] = c
		}
	}
	return func(job int, _ float64) allocator.Curve { return curves[job] }, nil
}

// meanCurve is the pointwise mean of curves at every node count any of
// them has a point at (each interpolated as allocator.Curve.At does).
func meanCurve(curves map[string]allocator.Curve) allocator.Curve {
	var ns []int
	for _, c := range curves {
		for _, p := range c {
			ns = append(ns, p.Nodes)
		}
	}
	sort.Ints(ns)
	ns = slices.Compact(ns)
	types := make([]string, 0, len(curves))
	for typ := range curves {
		types = append(types, typ)
	}
	sort.Strings(types) // a fixed summation order: the same bits every run
	out := make(allocator.Curve, len(ns))
	for i, n := range ns {
		sum := 0.0
		for _, typ := range types {
			sum += curves[typ].At(n)
		}
		out[i] = allocator.Point{Nodes: n, Throughput: sum / float64(len(types))}
	}
	return out
}
