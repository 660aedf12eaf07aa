package allocator_test

import (
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// Under the efficiency objective a node type that runs a trial k× faster
// is worth k× to it (curves in units of the trial's reference type), so
// each trial goes to the type that suits it: the trial 10× faster on a
// v100 gets the v100, the one 1.1× faster gets the k80, whatever the
// order of trials and nodes. Each type's curve divided by its own rate
// (the objective before) values both placements alike.
func TestEfficiencyPlacesTrialsOnTheTypesThatSuitThem(t *testing.T) {
	curve := func(x float64) allocator.Curve { return allocator.Curve{{Nodes: 1, Throughput: x}} }
	gains := allocator.Trial{ID: "gains", MinNodes: 1, MaxNodes: 1,
		CurvesByType: map[string]allocator.Curve{"k80": curve(100), "v100": curve(1000)}}
	same := allocator.Trial{ID: "same", MinNodes: 1, MaxNodes: 1,
		CurvesByType: map[string]allocator.Curve{"k80": curve(100), "v100": curve(110)}}
	for _, order := range []struct {
		trials []allocator.Trial
		nodes  []allocator.Node
	}{
		{[]allocator.Trial{gains, same}, []allocator.Node{{ID: "a", Type: "k80"}, {ID: "b", Type: "v100"}}},
		{[]allocator.Trial{same, gains}, []allocator.Node{{ID: "a", Type: "v100"}, {ID: "b", Type: "k80"}}},
		{[]allocator.Trial{gains, same}, []allocator.Node{{ID: "a", Type: "v100"}, {ID: "b", Type: "k80"}}},
		{[]allocator.Trial{same, gains}, []allocator.Node{{ID: "a", Type: "k80"}, {ID: "b", Type: "v100"}}},
	} {
		for _, f := range []allocator.Formulation{allocator.FormulationCompact, allocator.FormulationGreedy} {
			p := &allocator.Problem{Nodes: order.nodes, Trials: order.trials, Lookahead: time.Minute, Objective: allocator.ObjectiveEfficiency}
			res, err := allocator.Solve(p, &allocator.Settings{Formulation: f})
			if err != nil {
				t.Fatal(err)
			}
			for _, al := range res.Allocations {
				want := map[string]string{"gains": "v100", "same": "k80"}[al.TrialID]
				if al.NodeType != want || al.Count != 1 {
					t.Errorf("%s, trials %s first, nodes %v: %s on %d %q nodes, want 1 %s", f, order.trials[0].ID, order.nodes, al.TrialID, al.Count, al.NodeType, want)
				}
			}
		}
	}
}
