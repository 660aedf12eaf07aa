package activities

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/jpa"
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

// archCurves is an ArchPrior by table: each architecture's curve.
type archCurves map[string][]float64

func (c archCurves) Curve(arch string, maxNodes int) ([]float64, error) {
	x, ok := c[arch]
	if !ok || len(x) < maxNodes {
		return nil, fmt.Errorf("no curve of %q to %d nodes", arch, maxNodes)
	}
	return x[:maxNodes], nil
}

// Two NAS trials nothing is measured of: without a throughput model both
// look alike (n^0.9) and share the nodes; with one, the architecture
// predicted to lose from a second node gets one and the one predicted to
// scale to three nodes gets three. An architecture the model cannot
// price falls back to n^0.9.
func TestAllocateStartsNASTrialsFromTheirArchitecture(t *testing.T) {
	nodes := []cluster.Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}, {ID: "n4"}}
	small, large := poolTrial("small"), poolTrial("large")
	small.Registration.Arch, large.Registration.Arch = "small-cell", "large-cell"
	in := workflows.AllocateInput{Pool: "p", Nodes: nodes, Trials: []workflows.PoolTrial{small, large}}
	count := func(a *Activities) (int, int) {
		t.Helper()
		res, err := a.Allocate(context.Background(), in)
		require.NoError(t, err)
		return len(res.Assignments[0].Nodes), len(res.Assignments[1].Nodes)
	}
	s, l := count(&Activities{})
	require.Equal(t, [2]int{2, 2}, [2]int{s, l}, "without a model")

	model := archCurves{"small-cell": {1000, 600, 500, 450}, "large-cell": {100, 195, 285, 290}}
	s, l = count(&Activities{ArchPrior: model, ArchPriorSigma: 0.1})
	require.Equal(t, [2]int{1, 3}, [2]int{s, l}, "with the architectures' curves")

	in.Trials[0].Registration.Arch = "unknown-cell"
	s, l = count(&Activities{ArchPrior: model, ArchPriorSigma: 0.1})
	require.Equal(t, 4, s+l)
	require.GreaterOrEqual(t, s, 1, "an architecture the model cannot price is still scheduled")
}

// Two campaigns share a pool: with equal weights their trials (the same
// measured curve) split the nodes evenly; a campaign of weight 3 gets
// the nodes where 3× its speedup gain beats the other's.
func TestAllocateHonoursCampaignWeights(t *testing.T) {
	nodes := []cluster.Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}, {ID: "n4"}}
	trial := func(id, campaign string, weight float64) workflows.PoolTrial {
		pt := poolTrial(id)
		pt.Registration.CampaignID, pt.Registration.Weight = campaign, weight
		for n, x := range []float64{100, 170, 220, 250} {
			pt.Profile = append(pt.Profile, workflows.ProfilePoint{Nodes: n + 1, Throughput: x})
		}
		return pt
	}
	counts := func(wHeavy float64) (int, int) {
		t.Helper()
		res, err := (&Activities{}).Allocate(context.Background(), workflows.AllocateInput{Pool: "p", Nodes: nodes,
			Trials: []workflows.PoolTrial{trial("heavy", "a", wHeavy), trial("light", "b", 0)}})
		require.NoError(t, err)
		return len(res.Assignments[0].Nodes), len(res.Assignments[1].Nodes)
	}
	h, l := counts(0)
	require.Equal(t, [2]int{2, 2}, [2]int{h, l}, "equal weights")
	h, l = counts(3)
	require.Equal(t, [2]int{3, 1}, [2]int{h, l}, "weight 3 against 1: 3·(2.2−1.7) > 1.7−1")
}

// A campaign that names its model (resources.model) has its trials
// predicted from that model's profiled curve before they are measured:
// a flat profiled curve keeps the unmeasured trial on one node where the
// n^0.9 prior would spread it.
func TestAllocateUsesTheCampaignsModel(t *testing.T) {
	nodes := []cluster.Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}, {ID: "n4"}}
	flat := jpa.PriorCurve{Name: "flatnet__site.csv@bsz=32", Model: "flatnet", Batch: 32,
		Points: []jpa.Point{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 101}, {Nodes: 4, Throughput: 102}}}
	a := &Activities{Library: []jpa.PriorCurve{flat}}
	count := func(model string) int {
		t.Helper()
		tr := poolTrial("x")
		tr.Registration.Model, tr.Registration.Batch = model, 32
		other := poolTrial("y")
		other.Registration.CampaignID = "another"
		for n, x := range []float64{100, 190, 270, 340} {
			other.Profile = append(other.Profile, workflows.ProfilePoint{Nodes: n + 1, Throughput: x})
		}
		res, err := a.Allocate(context.Background(), workflows.AllocateInput{Pool: "p", Nodes: nodes, Trials: []workflows.PoolTrial{tr, other}})
		require.NoError(t, err)
		return len(res.Assignments[0].Nodes)
	}
	require.Equal(t, 1, count("flatnet"), "a flat model keeps one node")
	require.Equal(t, 2, count(""), "unknown model: n^0.9, and the nodes are shared")
}
