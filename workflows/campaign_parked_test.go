package workflows

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// parkedCampaign is a campaign, outside any workflow, that parks trials.
func parkedCampaign(mode string) *campaign {
	return &campaign{
		spec:   gleaner.CampaignSpec{Objective: gleaner.ObjectiveSpec{Metric: "loss", Mode: mode}},
		logger: nopLogger{},
	}
}

type nopLogger struct{}

func (nopLogger) Info(string, ...interface{}) {}
func (nopLogger) Warn(string, ...interface{}) {}

// Parked trials stay bounded: past MaxParked the worst-scoring (unscored
// first) is forgotten, and the state they add to continue-as-new stays
// far under Temporal's payload limit with realistic entries.
func TestParkedTrialsAreBounded(t *testing.T) {
	for _, mode := range []string{"min", "max"} {
		c := parkedCampaign(mode)
		for i := range MaxParked + 100 {
			p := ParkedTrial{
				TrialID: fmt.Sprintf("t%05d", i+1), Number: i + 1, Segment: 1, Score: float64(i), Scored: i != 7,
				Params: hpo.Params{"lr": hpo.Float(0.0123456789), "hidden": hpo.Float(64), "batch": hpo.String("128")},
				Resume: TrialResume{Owner: "0195f8a6-4b8e-7d5c-9a7e-3c2b1a0f9e8d", Samples: 1e6, Step: 7812, Epoch: 12.5,
					Checkpoint: "/scratch/gleaner/data/a-campaign-name/t00042/checkpoints/step-000000007812.gob", Runs: 3},
			}
			c.park(p)
		}
		require.Len(t, c.st.Parked, MaxParked)
		kept := map[int]bool{}
		for _, p := range c.st.Parked {
			kept[p.Number] = true
		}
		require.False(t, kept[8], "%s: the unscored trial goes first", mode)
		if mode == "min" {
			require.True(t, kept[1] && !kept[MaxParked+100], "min: the highest losses are forgotten")
		} else {
			require.True(t, !kept[1] && kept[MaxParked+100], "max: the lowest scores are forgotten")
		}
		b, err := json.Marshal(c.st)
		require.NoError(t, err)
		require.Less(t, len(b), 256<<10, "%d bytes of campaign state for %d parked trials", len(b), MaxParked)
	}
}

// A Continue of a trial that is not parked comes back to the searcher as
// a failure; one that is parked is queued as its next segment.
func TestContinueNeedsAParkedTrial(t *testing.T) {
	c := parkedCampaign("min")
	c.park(ParkedTrial{TrialID: "t00001", Number: 1, Segment: 1, Score: 0.5, Scored: true, Resume: TrialResume{Samples: 100, Runs: 1}})
	s := &recordingSearcher{}
	c.searcher = s
	c.continueTrial(nil, hpo.Continue{TrialID: "t00002", Budget: 300})
	require.Equal(t, []string{"failed t00002"}, s.events)
	require.Empty(t, c.st.Pending)
	c.continueTrial(nil, hpo.Continue{TrialID: "t00001", Budget: 300, Stage: "rung 1"})
	require.Len(t, c.st.Pending, 1)
	require.Empty(t, c.st.Parked)
	p := c.st.Pending[0]
	require.Equal(t, 300.0, p.Budget)
	require.Equal(t, "rung 1", p.Stage)
	require.NotNil(t, p.Continue)
	require.Equal(t, 1, p.Continue.Number)
}

// recordingSearcher records the events it hears and asks for nothing.
type recordingSearcher struct{ events []string }

func (s *recordingSearcher) Initial() []hpo.Action               { return nil }
func (s *recordingSearcher) TrialCreated(id string) []hpo.Action { return nil }
func (s *recordingSearcher) TrialReported(string, float64, float64) []hpo.Action {
	return nil
}
func (s *recordingSearcher) TrialFinished(id string, _ float64, _ hpo.Outcome) []hpo.Action {
	s.events = append(s.events, "finished "+id)
	return nil
}
func (s *recordingSearcher) TrialFailed(id string) []hpo.Action {
	s.events = append(s.events, "failed "+id)
	return nil
}
func (s *recordingSearcher) Progress() float64         { return 0 }
func (s *recordingSearcher) Snapshot() ([]byte, error) { return nil, nil }
func (s *recordingSearcher) Restore([]byte) error      { return nil }
