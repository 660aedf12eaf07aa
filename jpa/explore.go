package jpa

import (
	"math"

	"github.com/gleaner-hpc/gleaner/curve"
)

// Explore tunes optimism. The zero value (or a nil *Explore) uses the
// defaults documented on each field.
type Explore struct {
	// C is the optimism multiplier of the upper-confidence value
	// x̂(n) + C·σ(n) (UCB, Auer et al., Machine Learning 47, 2002); 0
	// means 1, negative means no optimism.
	C float64
	// MaxUnmeasured is how many unmeasured counts of one trial may carry
	// optimism at a time; 0 means 1. Bounding it keeps one uncertain
	// trial from drawing nodes on many speculative counts at once.
	MaxUnmeasured int
}

func (e *Explore) withDefaults() Explore {
	var o Explore
	if e != nil {
		o = *e
	}
	if o.C == 0 {
		o.C = 1
	}
	if o.MaxUnmeasured <= 0 {
		o.MaxUnmeasured = 1
	}
	return o
}

// Optimistic returns a copy of p in which the unexplored counts most
// worth trying carry their upper-confidence value x̂(n) + C·σ(n): those
// neither the trial nor an aligned sibling of its campaign measured, nor
// lie so near such a count that the extrapolation is within its noise
// (PredictedPoint.Measured, SiblingMeasured, NearMeasured), whose upper
// value beats the best measured throughput (so trying them could pay),
// the largest upper values first, at most MaxUnmeasured of them; for a
// trial nothing is measured of, predicted from its siblings
// (Prediction.FromSiblings), its smallest count only: its profiling run,
// not a hole's worth of nodes. Every other count keeps its prediction,
// so the allocator explores a bounded number of counts per trial, each
// once per campaign, and otherwise exploits. It also returns the counts
// made optimistic.
func (p Prediction) Optimistic(e *Explore) (Prediction, []int) {
	set := e.withDefaults()
	out := p
	out.Points = append([]PredictedPoint(nil), p.Points...)
	if set.C < 0 {
		return out, nil
	}
	best := 0.0
	for _, pt := range p.Points {
		if pt.Measured {
			best = math.Max(best, pt.Throughput)
		}
	}
	var chosen []int
	for len(chosen) < set.MaxUnmeasured {
		pick, pickU := -1, best
		for i, pt := range out.Points {
			if pt.Measured || pt.SiblingMeasured || pt.NearMeasured || (p.FromSiblings && i > 0) || containsInt(chosen, i) {
				continue
			}
			if u := pt.Throughput + set.C*pt.Sigma; u > pickU && !math.IsInf(u, 0) {
				pick, pickU = i, u
			}
		}
		if pick < 0 {
			break
		}
		out.Points[pick].Throughput = pickU
		chosen = append(chosen, pick)
	}
	counts := make([]int, len(chosen))
	for i, c := range chosen {
		counts[i] = out.Points[c].Nodes
	}
	return out, counts
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// AllocatorCurve converts the prediction into the allocator's curve: one
// point per count of [MinNodes, MaxNodes], strictly increasing, through
// the allocator's implicit (0, 0), reaching MaxNodes. With optimistic, the
// default exploration (Optimistic(nil)) is applied first. Throughputs that
// are not finite and non-negative become 0.
func (p Prediction) AllocatorCurve(optimistic bool) curve.Curve {
	if optimistic {
		p, _ = p.Optimistic(nil)
	}
	c := make(curve.Curve, 0, len(p.Points))
	for _, pt := range p.Points {
		x := pt.Throughput
		if !(x >= 0) || math.IsInf(x, 0) {
			x = 0
		}
		c = append(c, curve.Point{Nodes: pt.Nodes, Throughput: x})
	}
	return c
}
