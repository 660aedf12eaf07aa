package sim

import (
	"math"
	"sort"

	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// HoleLengthBuckets are the upper bounds (seconds, exclusive) of the hole
// length classes of HoleStats.NodeSecondsByLength; the last class is
// everything longer.
var HoleLengthBuckets = []float64{60, 600, 3600, 6 * 3600}

// HoleStats describe a trace's idle capacity: how long holes last (one
// hole is one node's idle interval) and how many nodes are idle at once
// (the size of the pool an elastic workload gets).
type HoleStats struct {
	Holes int `json:"holes"`
	// Length quantiles of the holes, in seconds (nearest rank), and
	// their mean.
	LengthP10  float64 `json:"length_s_p10"`
	LengthP50  float64 `json:"length_s_p50"`
	LengthP90  float64 `json:"length_s_p90"`
	LengthP99  float64 `json:"length_s_p99"`
	LengthMean float64 `json:"length_s_mean"`
	// NodeSecondsByLength is the share of the idle node-seconds in holes
	// of each length class (HoleLengthBuckets: < 1 min, 1–10 min,
	// 10–60 min, 1–6 h, ≥ 6 h); it sums to 1 (all 0 with no hole).
	NodeSecondsByLength []float64 `json:"node_s_share_by_length"`
	// Idle-node count over [Start, End): quantiles weighted by time (the
	// count the machine shows at a uniformly random instant), mean and
	// maximum.
	IdleP10  int     `json:"idle_nodes_p10"`
	IdleP50  int     `json:"idle_nodes_p50"`
	IdleP90  int     `json:"idle_nodes_p90"`
	IdleMean float64 `json:"idle_nodes_mean"`
	IdleMax  int     `json:"idle_nodes_max"`
	// IdleNodeSeconds and MeanIdleFraction are the Trace's.
	IdleNodeSeconds  float64 `json:"idle_node_s"`
	MeanIdleFraction float64 `json:"mean_idle_fraction"`
}

// HoleStats measures tr's holes (Holes) and idle-node count over its
// span.
func (tr *Trace) HoleStats() HoleStats {
	st := HoleStats{NodeSecondsByLength: make([]float64, len(HoleLengthBuckets)+1)}
	holes := tr.Holes()
	lengths := make([]float64, len(holes))
	var total float64
	for i, h := range holes {
		d := h.End - h.Start
		lengths[i] = d
		total += d
		st.NodeSecondsByLength[sort.SearchFloat64s(HoleLengthBuckets, math.Nextafter(d, math.Inf(1)))] += d
	}
	st.Holes = len(holes)
	if total > 0 {
		for i := range st.NodeSecondsByLength {
			st.NodeSecondsByLength[i] /= total
		}
	}
	if len(lengths) > 0 { // no quantiles of nothing: they stay 0 (JSON has no NaN)
		st.LengthP10, st.LengthP50 = stats.NearestRank(lengths, 0.1), stats.NearestRank(lengths, 0.5)
		st.LengthP90, st.LengthP99 = stats.NearestRank(lengths, 0.9), stats.NearestRank(lengths, 0.99)
	}
	st.LengthMean = ratio(total, float64(len(lengths)))

	// The idle count is a step function of the events: weigh each level
	// by how long it holds.
	type level struct {
		n int
		d float64
	}
	var levels []level
	// Nothing is idle before the first event.
	first := tr.End
	if len(tr.Events) > 0 {
		first = math.Min(tr.Events[0].Time, tr.End)
	}
	if first > tr.Start {
		levels = append(levels, level{0, first - tr.Start})
	}
	idle := 0
	for i, ev := range tr.Events {
		idle += len(ev.Idle) - len(ev.Busy)
		to := tr.End
		if i+1 < len(tr.Events) {
			to = math.Min(tr.Events[i+1].Time, tr.End)
		}
		from := math.Max(ev.Time, tr.Start)
		if to > from {
			levels = append(levels, level{idle, to - from})
		}
	}
	sort.Slice(levels, func(a, b int) bool { return levels[a].n < levels[b].n })
	if len(levels) > 0 {
		st.IdleMax = levels[len(levels)-1].n
	}
	var span, integral float64
	for _, l := range levels {
		span += l.d
		integral += float64(l.n) * l.d
	}
	st.IdleMean = ratio(integral, span)
	quantile := func(p float64) int {
		var acc float64
		for _, l := range levels {
			acc += l.d
			if acc >= p/100*span {
				return l.n
			}
		}
		return 0
	}
	st.IdleP10, st.IdleP50, st.IdleP90 = quantile(10), quantile(50), quantile(90)
	st.IdleNodeSeconds = tr.IdleNodeSeconds()
	st.MeanIdleFraction = tr.MeanIdleFraction()
	return st
}
