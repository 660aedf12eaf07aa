package jpa

import (
	"math"
	"slices"
	"sort"
)

// Shape transfer: the candidate curves a prediction borrows the shape of,
// how each is aligned to the trial's observations, and the weighted vote
// at each node count (see Predict).

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
		if q.sibling(c) {
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
// trial's aligned siblings: its sibling candidates on its node type,
// which share a measured count with the trial (a curve that does not
// cannot be aligned, so its counts say nothing of the trial's shape).
func alignedSiblingCounts(cands []candidate, q Query, typ string) []int {
	if q.Group == "" {
		return nil
	}
	var out []int
	for i := range cands {
		if c := cands[i].tab.curve; q.sibling(*c) && c.NodeType == typ {
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
	dist = math.Min(dist, sibDist)
	sl := math.Sqrt(spread*spread + set.Growth*set.Growth*dist*dist + noise*noise)
	x := math.Exp(mean)
	return PredictedPoint{Nodes: n, Throughput: x, SigmaLog: sl, Sigma: x * sl,
		SiblingMeasured: sibDist == 0, NearMeasured: set.Growth*dist <= noise}, votes
}
