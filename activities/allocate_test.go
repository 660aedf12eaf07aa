package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func poolTrial(id string, nodes ...string) workflows.PoolTrial {
	return workflows.PoolTrial{
		Registration: workflows.RegisterTrial{TrialID: id, CampaignID: "c", MinNodes: 1, MaxNodes: 4, RescaleUpCost: 20 * time.Second, RescaleDownCost: 10 * time.Second},
		Nodes:        nodes,
	}
}

// Every node taken back: the running trial is preempted to 0, with a reason.
func TestAllocateWithNoIdleNodePreempts(t *testing.T) {
	a := &Activities{}
	res, err := a.Allocate(context.Background(), workflows.AllocateInput{
		Pool: "p", Trials: []workflows.PoolTrial{poolTrial("a", "gone-1", "gone-2")},
	})
	require.NoError(t, err)
	require.Len(t, res.Assignments, 1)
	require.Empty(t, res.Assignments[0].Nodes)
	require.Equal(t, "pool-too-small", res.Assignments[0].Reason)
}

// Unmeasured trials share the nodes (the prior is sublinear), and a
// measured trial that scales takes more than one that does not.
func TestAllocateSharesUnmeasuredAndFavoursScaling(t *testing.T) {
	nodes := []cluster.Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}, {ID: "n4"}}
	a := &Activities{}
	res, err := a.Allocate(context.Background(), workflows.AllocateInput{Pool: "p", Nodes: nodes,
		Trials: []workflows.PoolTrial{poolTrial("a"), poolTrial("b")}})
	require.NoError(t, err)
	require.Len(t, res.Assignments[0].Nodes, 2)
	require.Len(t, res.Assignments[1].Nodes, 2)

	scales, flat := poolTrial("scales"), poolTrial("flat")
	for n := 1; n <= 2; n++ {
		scales.Profile = append(scales.Profile, workflows.ProfilePoint{Nodes: n, Throughput: 100 * float64(n)})
		flat.Profile = append(flat.Profile, workflows.ProfilePoint{Nodes: n, Throughput: 100})
	}
	res, err = a.Allocate(context.Background(), workflows.AllocateInput{Pool: "p", Nodes: nodes,
		Trials: []workflows.PoolTrial{scales, flat}})
	require.NoError(t, err)
	require.Greater(t, len(res.Assignments[0].Nodes), len(res.Assignments[1].Nodes))
	require.Equal(t, "optimal", res.Summary.Status)
	require.Equal(t, 4, res.Summary.NodesUsed)
}
