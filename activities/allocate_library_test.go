package activities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// A pool's learned curve is a profiled model to the JPA: a trial of that
// model in another campaign, never measured, gets its curve, not the
// prior; a trial of the learned curve's own campaign gets it as a
// sibling's; a trial still measuring is not its own neighbour.
func TestAllocateUsesLearnedCurves(t *testing.T) {
	learned := workflows.LearnedCurve{Trial: "c1-t1", Campaign: "c1", Model: "resnet", Batch: 32, NodeType: "gpu",
		Points: []workflows.CurvePoint{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 60}, {Nodes: 4, Throughput: 40}}, At: time.Unix(1, 0)}
	trial := func(id, campaign, model string) workflows.PoolTrial {
		return workflows.PoolTrial{Registration: workflows.RegisterTrial{TrialID: id, CampaignID: campaign, Model: model, MinNodes: 1, MaxNodes: 4}}
	}
	in := workflows.AllocateInput{Library: []workflows.LearnedCurve{learned}, Trials: []workflows.PoolTrial{
		trial("c2-t1", "c2", "resnet"), // same model, another campaign
		trial("c1-t2", "c1", ""),       // same campaign, model unknown
		trial("c3-t1", "c3", "other"),  // nothing known
	}}
	a := &Activities{}
	views := make([]jpa.TrialView, len(in.Trials))
	for i, tr := range in.Trials {
		views[i] = a.trialView(tr)
	}
	adv := a.advisor(in)
	lib, err := adv.Library(views)
	require.NoError(t, err)
	scale := jpa.PriorScale(views)
	for i, wantPrior := range []bool{false, false, true} {
		c, fromPrior := adv.Curve(views[i], lib, "gpu", scale)
		require.Equal(t, wantPrior, fromPrior, in.Trials[i].Registration.TrialID)
		if !wantPrior {
			// One node: the learned throughput, perhaps made optimistic
			// (a count this trial has not explored).
			require.InDelta(t, 110, c[0].Throughput, 10, "one node: the learned throughput (%v)", c)
			require.Less(t, c[3].Throughput, c[0].Throughput, "four nodes: slower, as learned (%v)", c)
		}
	}

	// The learned curve of a trial that registered again and measured on
	// that type gives way to its live measurements.
	live := trial("c1-t1", "c1", "resnet")
	live.Profile = []workflows.ProfilePoint{{Nodes: 1, NodeType: "gpu", Throughput: 90}}
	require.Empty(t, LearnedPriors(in.Library, []workflows.PoolTrial{live}))
	live.Profile[0].NodeType = "cpu"
	require.Len(t, LearnedPriors(in.Library, []workflows.PoolTrial{live}), 1)
	// A curve that is not one (a hand-edited state) is left out.
	bad := learned
	bad.Points = []workflows.CurvePoint{{Nodes: 2, Throughput: 1}, {Nodes: 1, Throughput: 2}}
	require.Empty(t, LearnedPriors([]workflows.LearnedCurve{bad}, nil))
}
