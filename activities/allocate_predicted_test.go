package activities

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Every assignment carries the curve the allocator used: at most
// MaxPredicted counts over [min, max], both ends and the count given
// among them, the trial's measurements marked and exact.
func TestAllocateReportsThePredictionUsed(t *testing.T) {
	var nodes []cluster.Node
	for i := range 23 {
		nodes = append(nodes, cluster.Node{ID: fmt.Sprintf("n%02d", i)})
	}
	wide := poolTrial("wide")
	wide.Registration.MinNodes, wide.Registration.MaxNodes = 2, 40
	wide.Profile = []workflows.ProfilePoint{{Nodes: 2, Throughput: 200}, {Nodes: 4, Throughput: 390}}
	narrow := poolTrial("narrow") // 1..4: every count
	a := &Activities{}
	res, err := a.Allocate(context.Background(), workflows.AllocateInput{Pool: "p", Nodes: nodes,
		Trials: []workflows.PoolTrial{wide, narrow}})
	require.NoError(t, err)
	require.Len(t, res.Assignments, 2)

	w := res.Assignments[0]
	require.Equal(t, "wide", w.TrialID)
	require.LessOrEqual(t, len(w.Predicted), workflows.MaxPredicted)
	require.Equal(t, 2, w.Predicted[0].Nodes)
	require.Equal(t, 40, w.Predicted[len(w.Predicted)-1].Nodes)
	counts := make([]int, len(w.Predicted))
	for i, p := range w.Predicted {
		counts[i] = p.Nodes
		require.Greater(t, p.Throughput, 0.0, "at %d", p.Nodes)
		if p.Measured {
			require.Zero(t, p.Sigma, "a measured count is the measurement")
		} else {
			require.Greater(t, p.Sigma, 0.0, "the JPA's uncertainty at %d, where nothing was measured", p.Nodes)
		}
	}
	// Farther from what was measured, less certain.
	require.Greater(t, w.Predicted[len(w.Predicted)-1].Sigma, w.Predicted[2].Sigma)
	require.True(t, slices.IsSorted(counts) && len(slices.Compact(slices.Clone(counts))) == len(counts), "counts %v", counts)
	require.Contains(t, counts, len(w.Nodes), "the count given is among the counts")
	require.True(t, w.Predicted[0].Measured)
	require.Equal(t, 200.0, w.Predicted[0].Throughput, "a measured count is the measurement")

	n := res.Assignments[1]
	require.Equal(t, []int{1, 2, 3, 4}, func() []int {
		var c []int
		for _, p := range n.Predicted {
			c = append(c, p.Nodes)
			require.False(t, p.Measured)
			require.Greater(t, p.Sigma, 0.0, "predicted from its sibling, with the uncertainty of that")
		}
		return c
	}())

	// The same prediction again is left out: the pool keeps it.
	wide.Predicted, narrow.Predicted = w.Predicted, n.Predicted
	wide.Nodes, narrow.Nodes = w.Nodes, n.Nodes
	res, err = a.Allocate(context.Background(), workflows.AllocateInput{Pool: "p", Nodes: nodes,
		Trials: []workflows.PoolTrial{wide, narrow}})
	require.NoError(t, err)
	require.Nil(t, res.Assignments[0].Predicted)
	require.Nil(t, res.Assignments[1].Predicted)
}

// Many trials share a budget of points: each gets fewer, at least 4.
func TestAllocateBoundsThePredictions(t *testing.T) {
	var trials []workflows.PoolTrial
	for i := range 1000 {
		tr := poolTrial(fmt.Sprintf("t%04d", i))
		tr.Registration.MaxNodes = 64
		trials = append(trials, tr)
	}
	a := &Activities{}
	res, err := a.Allocate(context.Background(), workflows.AllocateInput{Pool: "p", Nodes: []cluster.Node{{ID: "n1"}}, Trials: trials})
	require.NoError(t, err)
	total := 0
	for _, as := range res.Assignments {
		require.GreaterOrEqual(t, len(as.Predicted), 4)
		total += len(as.Predicted)
	}
	require.LessOrEqual(t, total, 8192)
}

func TestSpreadAndRound(t *testing.T) {
	require.Equal(t, []int{3}, spread(3, 3, 16))
	require.Equal(t, []int{1, 2, 3}, spread(1, 3, 16))
	s := spread(1, 1000, 16)
	require.Len(t, s, 16)
	require.Equal(t, 1, s[0])
	require.Equal(t, 1000, s[15])
	require.Equal(t, 1235.0, round4(1234.5678))
	require.Equal(t, 0.0001235, round4(0.00012345678))
	require.Equal(t, 0.0, round4(0))
}
