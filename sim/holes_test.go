package sim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two nodes: a idle [0, 100) and [400, 1000), b idle [0, 1000). Holes of
// 100, 600 and 1000 s; 2 nodes idle for 700 s, 1 for 300 s.
func TestHoleStatsByHand(t *testing.T) {
	tr := &Trace{
		Events: []Event{{Time: 0, Idle: []string{"a", "b"}}, {Time: 100, Busy: []string{"a"}}, {Time: 400, Idle: []string{"a"}}},
		Nodes:  []string{"a", "b"}, Size: 2, Start: 0, End: 1000,
	}
	st := tr.HoleStats()
	require.Equal(t, 3, st.Holes)
	require.Equal(t, []float64{100, 600, 1000, 1000}, []float64{st.LengthP10, st.LengthP50, st.LengthP90, st.LengthP99})
	require.InDelta(t, 1700.0/3, st.LengthMean, 1e-9)
	// 100 s is in [1, 10) min, 600 s and 1000 s in [10, 60) min.
	want := []float64{0, 100.0 / 1700, 1600.0 / 1700, 0, 0}
	require.Len(t, st.NodeSecondsByLength, len(want))
	for i := range want {
		require.InDelta(t, want[i], st.NodeSecondsByLength[i], 1e-12, "class %d", i)
	}
	require.Equal(t, []int{1, 2, 2, 2}, []int{st.IdleP10, st.IdleP50, st.IdleP90, st.IdleMax})
	require.InDelta(t, 1.7, st.IdleMean, 1e-12)
	require.InDelta(t, 1700, st.IdleNodeSeconds, 1e-9)
	require.InDelta(t, 0.85, st.MeanIdleFraction, 1e-12)
}

// The span before the first event counts, with nothing idle: one node
// idle over the second half of [0, 100) is a mean of 0.5.
func TestHoleStatsCountsTheStartBeforeTheFirstEvent(t *testing.T) {
	tr := &Trace{Events: []Event{{Time: 50, Idle: []string{"a"}}}, Nodes: []string{"a"}, Size: 1, Start: 0, End: 100}
	st := tr.HoleStats()
	require.InDelta(t, 0.5, st.IdleMean, 1e-12)
	require.Equal(t, []int{0, 0, 1, 1}, []int{st.IdleP10, st.IdleP50, st.IdleP90, st.IdleMax})
	require.InDelta(t, st.MeanIdleFraction, st.IdleMean/float64(tr.Size), 1e-12)
}

func TestHoleStatsEmpty(t *testing.T) {
	st := (&Trace{Size: 4, Start: 0, End: 10}).HoleStats()
	require.Zero(t, st.Holes)
	require.Zero(t, st.IdleMean)
	for _, s := range st.NodeSecondsByLength {
		require.False(t, math.IsNaN(s))
	}
}
