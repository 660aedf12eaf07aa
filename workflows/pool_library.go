package workflows

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"
)

// The pool's library of learned curves: what its trials measured, kept
// once they leave, so that later trials of the same model (in any
// campaign) and of the same campaign are predicted from it. It lives in
// PoolState, the durable store: it survives worker restarts and
// continue-as-new, and every worker's Allocate reads it.
//
// Bounds (so the state a pool carries across continue-as-new stays
// small): at most LibraryPerKey curves per key — (model, batch, node
// type) for a trial whose model is known, (campaign, node type) for one
// whose model is not — at most LibraryMaxCurves in all, each of at most
// LibraryMaxPoints counts. A curve is about 60 bytes of JSON per point
// plus 200 of names, so a full library is at most about 256 × (200 +
// 32 × 60) ≈ 540 KB in the continue-as-new input (and the QueryLibrary
// answer), typically (8 counts a curve) about 180 KB; it is not in the
// history otherwise (Allocate is a local activity: only its result is
// recorded).
const (
	// LibraryPerKey caps the curves kept per (model, batch, node type),
	// or per (campaign, node type) when the model is unknown.
	LibraryPerKey = 4
	// LibraryMaxCurves caps the library.
	LibraryMaxCurves = 256
	// LibraryMaxPoints caps the counts kept of one curve.
	LibraryMaxPoints = 32
)

// libraryKey is the bucket a curve is capped in.
type libraryKey struct {
	model    string
	batch    int
	campaign string // only when model is ""
	nodeType string
}

func keyOf(c LearnedCurve) libraryKey {
	if c.Model != "" {
		return libraryKey{model: c.Model, batch: c.Batch, nodeType: c.NodeType}
	}
	return libraryKey{campaign: c.Campaign, nodeType: c.NodeType}
}

// LearnedCurves are what a trial measured, one curve per node type with
// at least one valid point, in node-type order.
func LearnedCurves(t PoolTrial, at time.Time) []LearnedCurve {
	byType := map[string][]CurvePoint{}
	for _, p := range t.Profile {
		if p.Nodes > 0 && p.Throughput > 0 && !math.IsInf(p.Throughput, 0) {
			byType[p.NodeType] = append(byType[p.NodeType], CurvePoint{Nodes: p.Nodes, Throughput: p.Throughput})
		}
	}
	types := make([]string, 0, len(byType))
	for typ := range byType {
		types = append(types, typ)
	}
	sort.Strings(types)
	r := t.Registration
	out := make([]LearnedCurve, 0, len(types))
	for _, typ := range types {
		pts := byType[typ]
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].Nodes < pts[j].Nodes })
		pts = slices.CompactFunc(pts, func(a, b CurvePoint) bool { return a.Nodes == b.Nodes })
		out = append(out, LearnedCurve{Trial: r.TrialID, Campaign: r.CampaignID, Model: r.Model, Batch: r.Batch,
			NodeType: typ, Points: thinPoints(pts, LibraryMaxPoints), At: at})
	}
	return out
}

// thinPoints keeps at most n points (n ≥ 2): the first, the last and
// evenly spaced ones between.
func thinPoints(pts []CurvePoint, n int) []CurvePoint {
	if len(pts) <= n {
		return pts
	}
	out := make([]CurvePoint, 0, n)
	for i := range n {
		out = append(out, pts[i*(len(pts)-1)/(n-1)])
	}
	return out
}

// Learn adds curves to a library and applies its bounds. A curve replaces
// the library's curve of the same trial and node type (a trial that
// paused, resumed and left again). Past LibraryPerKey in a key, the curve
// with the fewest points goes, then the oldest; past LibraryMaxCurves,
// the oldest curve of the fullest key, so a library of many models keeps
// every model. The result is sorted by (Model, Batch, NodeType, Trial):
// deterministic, whatever the order things were learned in.
func Learn(lib []LearnedCurve, curves ...LearnedCurve) []LearnedCurve {
	for _, c := range curves {
		if len(c.Points) == 0 {
			continue
		}
		lib = slices.DeleteFunc(lib, func(x LearnedCurve) bool { return x.Trial == c.Trial && x.NodeType == c.NodeType })
		lib = append(lib, c)
		var same []int
		for i, x := range lib {
			if keyOf(x) == keyOf(c) {
				same = append(same, i)
			}
		}
		if len(same) > LibraryPerKey {
			worst := same[0]
			for _, i := range same[1:] {
				if less(lib[i], lib[worst]) {
					worst = i
				}
			}
			lib = slices.Delete(lib, worst, worst+1)
		}
	}
	for len(lib) > LibraryMaxCurves {
		count := map[libraryKey]int{}
		for _, x := range lib {
			count[keyOf(x)]++
		}
		victim := -1
		for i, x := range lib {
			if victim < 0 || count[keyOf(x)] > count[keyOf(lib[victim])] ||
				(count[keyOf(x)] == count[keyOf(lib[victim])] && older(x, lib[victim])) {
				victim = i
			}
		}
		lib = slices.Delete(lib, victim, victim+1)
	}
	slices.SortFunc(lib, func(a, b LearnedCurve) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Batch, b.Batch), cmp.Compare(a.NodeType, b.NodeType),
			cmp.Compare(a.Campaign, b.Campaign), cmp.Compare(a.Trial, b.Trial))
	})
	return lib
}

// less orders curves of one key by worth: fewer points, then older.
func less(a, b LearnedCurve) bool {
	if len(a.Points) != len(b.Points) {
		return len(a.Points) < len(b.Points)
	}
	return older(a, b)
}

func older(a, b LearnedCurve) bool {
	if !a.At.Equal(b.At) {
		return a.At.Before(b.At)
	}
	return a.Trial < b.Trial
}
