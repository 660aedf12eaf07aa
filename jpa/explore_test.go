package jpa

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 32: a count next to one the trial or an aligned sibling measured
// is known to within that measurement's noise; optimism there (x̂ + σ,
// σ mostly the noise) only made the allocator chase noise on nearly
// linear curves. Farther counts, where extrapolation is the larger
// uncertainty, keep it.
func TestOptimismSkipsCountsNearAMeasurement(t *testing.T) {
	u := USL{X1: 100, Alpha: 0.01}
	sib := PriorCurve{Name: "sib", Group: "c"}
	for _, n := range []int{1, 16, 64} {
		sib.Points = append(sib.Points, Point{Nodes: n, Throughput: u.At(float64(n))})
	}
	lib, err := NewLibrary([]PriorCurve{sib})
	require.NoError(t, err)
	x16 := u.At(16)
	obs := []Observation{{Nodes: 16, Throughput: x16, Sigma: 0.05 * x16}} // σ_m = 5 %
	pred, err := Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 64, Group: "c", Self: "me"}, nil)
	require.NoError(t, err)
	at := func(n int) PredictedPoint { pt, _ := pred.At(n); return pt }
	// Growth·δ ≤ 0.05: within a factor e^(1/3) ≈ 1.4 of 16 or 64.
	for _, n := range []int{12, 15, 17, 22, 46, 63, 64} {
		assert.True(t, at(n).NearMeasured, "count %d: Growth·δ = %.3f", n, 0.15*math.Min(math.Abs(math.Log(float64(n)/16)), math.Log(64/float64(n))))
	}
	for _, n := range []int{4, 8, 24, 32, 40} {
		assert.False(t, at(n).NearMeasured, "count %d", n)
	}
	opt, explored := pred.Optimistic(nil)
	require.Len(t, explored, 1)
	assert.False(t, at(explored[0]).NearMeasured, "explored %d", explored[0])
	// The largest upper value among the far counts: 45, the largest
	// below 64·e^(−1/3) ≈ 45.9.
	assert.Equal(t, 45, explored[0])
	e, _ := opt.At(45)
	assert.InDelta(t, at(45).Throughput+at(45).Sigma, e.Throughput, 1e-9)
}

// A trial nothing is measured of, predicted from its siblings, explores
// its smallest count: its profiling run, as the prior's optimism does
// (PriorScales). Before, its optimism went to its largest count, where a
// nearly linear curve's upper value is the largest, and drew a hole's
// worth of nodes from running jobs to every new job.
func TestUnmeasuredTrialExploresItsProfilingRun(t *testing.T) {
	sib := uslCurve("sib", "", USL{X1: 100, Alpha: 0.01}, 8)
	sib.Group = "c"
	lib, err := NewLibrary([]PriorCurve{sib})
	require.NoError(t, err)
	pred, err := Predict(nil, lib, Query{MinNodes: 2, MaxNodes: 8, Group: "c", Self: "me"}, nil)
	require.NoError(t, err)
	require.True(t, pred.FromSiblings)
	opt, explored := pred.Optimistic(nil)
	assert.Equal(t, []int{2}, explored)
	for i, pt := range pred.Points {
		want := pt.Throughput
		if pt.Nodes == 2 {
			want += pt.Sigma
		}
		assert.InDelta(t, want, opt.Points[i].Throughput, 1e-9, "count %d", pt.Nodes)
	}
	_, explored = pred.Optimistic(&Explore{MaxUnmeasured: 4})
	assert.Equal(t, []int{2}, explored, "however many counts may be optimistic")

	// Measured once, it is predicted from its own point and explores
	// beyond it as any measured trial.
	measured, err := Predict([]Observation{{Nodes: 2, Throughput: sib.Points[1].Throughput}}, lib,
		Query{MinNodes: 2, MaxNodes: 8, Group: "c", Self: "me"}, nil)
	require.NoError(t, err)
	assert.False(t, measured.FromSiblings)
}
