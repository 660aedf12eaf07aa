package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/activities"
	wf "github.com/gleaner-hpc/gleaner/workflows"
)

// flatPrior predicts every architecture at 250 samples/s a node.
type flatPrior struct{}

func (flatPrior) Curve(_ string, maxNodes int) ([]float64, error) {
	out := make([]float64, maxNodes)
	for i := range out {
		out[i] = 250 * float64(i+1)
	}
	return out, nil
}

// A NAS trial's assignment carries the pool worker's predicted metrics
// for its architecture (what a run on an agent host reports), and the
// pool answers QueryPredicted with them; a trial without an
// architecture's carries none.
func TestPoolAssignmentCarriesPredictedMetrics(t *testing.T) {
	e := newPoolEnvWith(t, &activities.Activities{ArchPrior: flatPrior{}}, "nas", "plain")
	e.nodes.set("n1", "n2")
	nas := reg("nas", 1, 1)
	nas.Arch = `{"cell":"x"}`
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, nas) })
	e.at(time.Second, func() { e.SignalWorkflow(wf.SignalRegisterTrial, reg("plain", 1, 1)) })
	var asked, unknown map[string]float64
	e.at(4*time.Second, func() {
		v, err := e.QueryWorkflow(wf.QueryPredicted, "nas")
		require.NoError(t, err)
		require.NoError(t, v.Get(&asked))
		v, err = e.QueryWorkflow(wf.QueryPredicted, "gone")
		require.NoError(t, err)
		require.NoError(t, v.Get(&unknown))
	})
	e.endAt(5 * time.Second)
	e.ExecuteWorkflow(wf.PoolWorkflowName, poolInput())
	got, plain := e.last("nas"), e.last("plain")
	require.Len(t, got.Nodes, 1)
	require.Equal(t, map[string]float64{gleaner.MetricPredictedThroughput: 250, gleaner.MetricPredictedLatency: 4}, got.PredictedMetrics)
	require.Equal(t, got.PredictedMetrics, asked, "QueryPredicted answers the pool's")
	require.Nil(t, unknown, "a trial the pool does not have: none")
	require.Len(t, plain.Nodes, 1)
	require.Nil(t, plain.PredictedMetrics)
	kept := e.carried(t)
	for _, tr := range kept.State.Trials {
		if tr.Registration.TrialID == "nas" {
			require.Equal(t, got.PredictedMetrics, tr.PredictedMetrics, "the pool keeps it across continue-as-new")
		}
	}
}
