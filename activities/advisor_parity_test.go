package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/sim"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Production (Allocate) and the simulator (sim.JPA) follow one JPA
// policy, jpa.Advisor: fed the same measurements they give every trial
// the same curve, and the allocator, on the same nodes and objective, the
// same allocation. The simulator measures its jobs (exactly, here) and
// publishes estimates as a trial workflow sends them to its pool; the
// pool's trials are built from those estimates.
func TestProductionAndSimulatorAllocateAlike(t *testing.T) {
	curve := func(x1, alpha float64) allocator.Curve {
		var c allocator.Curve
		for n := 1; n <= 4; n++ {
			c = append(c, allocator.Point{Nodes: n, Throughput: x1 * float64(n) / (1 + alpha*float64(n-1))})
		}
		return c
	}
	jobs := []sim.Job{
		{Name: "c1-t1", Model: "c1", MinNodes: 1, MaxNodes: 4, RescaleUp: 20, RescaleDown: 10, TotalSamples: 1e12, Curve: curve(100, 0.1)},
		{Name: "c1-t2", Model: "c1", MinNodes: 1, MaxNodes: 4, RescaleUp: 20, RescaleDown: 10, TotalSamples: 1e12, Curve: curve(100, 0.1)},
		{Name: "c2-t1", Model: "c2", MinNodes: 1, MaxNodes: 4, RescaleUp: 20, RescaleDown: 10, TotalSamples: 1e12, Curve: curve(40, 0.6)},
		{Name: "c3-t1", Model: "c3", MinNodes: 1, MaxNodes: 4, RescaleUp: 20, RescaleDown: 10, TotalSamples: 1e12, Curve: curve(70, 0.3)},
	}
	jp, err := sim.NewJPA(jobs, sim.JPAOptions{Noise: -1, Seed: 1})
	require.NoError(t, err)
	// c1-t1 ran on 1 then 2 nodes, c2-t1 on 3; c1-t2 and c3-t1 never ran
	// (c1-t2 has a measured sibling, c3-t1 nothing: the prior).
	measure := func(job, nodes int, from, to float64) {
		jp.Measure(job, nodes, "", from, to, jobs[job].Curve.At(nodes)*(to-from))
	}
	measure(0, 1, 0, 600)
	measure(0, 2, 600, 1200)
	measure(2, 3, 0, 1200)

	nodes := []cluster.Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}, {ID: "n4"}, {ID: "n5"}, {ID: "n6"}}
	in := workflows.AllocateInput{Pool: "p", Nodes: nodes, Lookahead: 5 * time.Minute}
	simProblem := allocator.Problem{Lookahead: 5 * time.Minute, Objective: allocator.ObjectiveEfficiency}
	for _, n := range nodes {
		simProblem.Nodes = append(simProblem.Nodes, allocator.Node{ID: n.ID})
	}
	for i, j := range jobs {
		pt := workflows.PoolTrial{Registration: workflows.RegisterTrial{
			TrialID: j.Name, CampaignID: j.Model, MinNodes: j.MinNodes, MaxNodes: j.MaxNodes,
			RescaleUpCost: time.Duration(j.RescaleUp) * time.Second, RescaleDownCost: time.Duration(j.RescaleDown) * time.Second,
		}}
		for _, o := range jp.Published(i) {
			pt.Profile = append(pt.Profile, workflows.ProfilePoint{Nodes: o.Nodes, NodeType: o.NodeType, Throughput: o.Throughput, Spread: o.Sigma})
		}
		in.Trials = append(in.Trials, pt)
		simProblem.Trials = append(simProblem.Trials, allocator.Trial{
			ID: j.Name, MinNodes: j.MinNodes, MaxNodes: j.MaxNodes, RescaleUpCost: j.RescaleUp, RescaleDownCost: j.RescaleDown,
			CurvesByType: map[string]allocator.Curve{"": jp.Curve(i, 1200)},
		})
	}
	require.Len(t, in.Trials[0].Profile, 2, "c1-t1 measured at 1 and 2 nodes")
	require.Empty(t, in.Trials[1].Profile)

	// The same curve for every trial.
	a := &Activities{}
	adv := a.advisor(workflows.AllocateInput{})
	views := make([]jpa.TrialView, len(in.Trials))
	for i, pt := range in.Trials {
		views[i] = a.trialView(pt)
	}
	lib, err := adv.Library(views)
	require.NoError(t, err)
	scale := jpa.PriorScale(views)
	for i, pt := range in.Trials {
		tr, _ := problemTrial(pt, views[i], adv, lib, scale, []string{""})
		got := tr.CurvesByType[""]
		require.InDeltaSlice(t, throughputs(simProblem.Trials[i].CurvesByType[""]), throughputs(got), 1e-9, "trial %s", jobs[i].Name)
	}

	// The same allocation.
	res, err := a.Allocate(context.Background(), in)
	require.NoError(t, err)
	want, err := allocator.Solve(&simProblem, &allocator.Settings{TimeLimit: 10 * time.Second})
	require.NoError(t, err)
	counts := func(ids []string, nodes [][]string) map[string]int {
		m := map[string]int{}
		for i, id := range ids {
			m[id] = len(nodes[i])
		}
		return m
	}
	var pIDs, sIDs []string
	var pNodes, sNodes [][]string
	for _, as := range res.Assignments {
		pIDs, pNodes = append(pIDs, as.TrialID), append(pNodes, as.Nodes)
	}
	for _, al := range want.Allocations {
		sIDs, sNodes = append(sIDs, al.TrialID), append(sNodes, al.Nodes)
	}
	require.Equal(t, counts(sIDs, sNodes), counts(pIDs, pNodes))
	require.Equal(t, 6, res.Summary.NodesUsed)
}

func throughputs(c allocator.Curve) []float64 {
	out := make([]float64, len(c))
	for i, p := range c {
		out[i] = p.Throughput
	}
	return out
}
