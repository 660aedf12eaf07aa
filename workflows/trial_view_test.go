package workflows

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// viewCampaign is a campaign, outside any workflow, with n trials in
// flight, t00001… (running as their reports said).
func viewCampaign(mode string, n int) *campaign {
	c := parkedCampaign(mode)
	c.spec.Name, c.wfID = "view", CampaignWorkflowID("view")
	c.spec.Budget = gleaner.Budget{MaxTrials: 24, MaxConcurrent: 4, MaxFailures: 24}
	c.searcher = &recordingSearcher{}
	for i := 1; i <= n; i++ {
		c.st.InFlight = append(c.st.InFlight, InFlightTrial{TrialID: fmt.Sprintf("t%05d", i), Number: i,
			WorkflowID: TrialWorkflowID(c.wfID, i), Params: hpo.Params{"lr": hpo.Float(0.1)}, State: TrialRunning, Started: true})
	}
	return c
}

// Right after a pause the campaign's trials are paused, not running:
// the status counts them so, and the UI's details say it in its words.
func TestPausedCampaignCountsItsTrialsPaused(t *testing.T) {
	c := viewCampaign("min", 4)
	c.st.Paused = true
	s := c.status()
	require.Equal(t, 0, s.Running, "running")
	require.Equal(t, 4, s.Paused, "paused")
	require.Contains(t, c.details(), "· 0 running · 4 paused")
	for _, b := range s.Trials {
		require.Equal(t, TrialPaused, b.State, b.TrialID)
	}
}

// A trial waiting for nodes (or preempted to 0 nodes) is pending, not
// running.
func TestTrialsWaitingForNodesArePending(t *testing.T) {
	c := viewCampaign("min", 3)
	c.st.InFlight[1].State = TrialPending
	c.st.InFlight[2].State = TrialPaused // preempted to 0 nodes
	s := c.status()
	require.Equal(t, 1, s.Running)
	require.Equal(t, 2, s.Waiting)
	require.Contains(t, c.details(), "· 1 running · 2 pending (waiting for nodes)")
}

// "best" is the best value any trial reported: a running trial whose
// latest value is worse does not make it worse (seen: 0.680963 →
// 0.723682 on a min objective), and the leaderboard ranks by it.
func TestBestNeverGetsWorse(t *testing.T) {
	for _, mode := range []string{"min", "max"} {
		c := viewCampaign(mode, 2)
		worse := func(v float64) float64 {
			if mode == "min" {
				return v + 0.1
			}
			return v - 0.1
		}
		c.rank(c.st.InFlight[0], 0.680963, TrialRunning)
		c.rank(c.st.InFlight[1], worse(0.680963), TrialRunning)
		c.rank(c.st.InFlight[0], worse(worse(0.680963)), TrialRunning)
		b := c.status().Best
		require.NotNil(t, b)
		require.Equal(t, 0.680963, b.Score, mode)
		require.Equal(t, "t00001", b.TrialID, mode)
		lb := c.leaderboard()
		require.Equal(t, "t00001", lb[0].TrialID, mode)
		require.Equal(t, 0.680963, lb[0].Score, mode)
		require.Equal(t, worse(worse(0.680963)), lb[0].Latest, mode)
		// The best trial fails: the best it reported stays the best.
		c.endTrial(nil, c.st.InFlight[0].WorkflowID, TrialReport{TrialID: "t00001", State: TrialFailed, Final: true})
		b = c.status().Best
		require.Equal(t, 0.680963, b.Score, mode)
		require.Equal(t, TrialFailed, b.State, mode)
	}
}

// An ASHA campaign's trials that reached their rung's budget are parked
// while their searcher may promote them; once the campaign has ended,
// those below the top budget are stopped at their rung (with it), not
// "paused at their budget", and those at the top completed.
func TestEndedASHACampaignShowsTrialsStoppedAtTheirRung(t *testing.T) {
	c := viewCampaign("min", 0)
	c.st.TopBudget = 9
	for i := 1; i <= 24; i++ {
		id := fmt.Sprintf("t%05d", i)
		budget, stage := 1.0, "rung 0"
		if i == 24 {
			budget, stage = 9, "rung 2"
		}
		c.park(ParkedTrial{TrialID: id, Number: i, Segment: 1, Score: float64(i), Scored: true, Stage: stage, Budget: budget})
		c.rank(InFlightTrial{TrialID: id, Number: i, Stage: stage}, float64(i), TrialCompleted)
	}
	running := c.status()
	require.Equal(t, 24, running.Parked)
	require.Contains(t, c.details(), "· 0 running · 24 parked at their budget")
	require.Equal(t, TrialParked, c.leaderboard()[0].State)

	c.finished, c.st.End = true, CampaignCompleted
	s := c.status()
	require.Equal(t, 0, s.Parked)
	require.Equal(t, 23, s.AtRung)
	d := c.details()
	require.Contains(t, d, "· 0 running · 23 stopped at their rung")
	require.NotContains(t, d, "paused")
	lb := c.leaderboard()
	require.Equal(t, TrialAtRung, lb[0].State)
	require.Equal(t, "rung 0", lb[0].Stage)
	require.Equal(t, TrialCompleted, lb[23].State, "the trial at the top budget completed")
	for _, b := range s.Trials {
		if b.TrialID == "t00001" {
			require.Equal(t, TrialBrief{TrialID: "t00001", WorkflowID: TrialWorkflowID(c.wfID, 1), State: TrialAtRung, Stage: "rung 0"}, b)
		}
	}
	require.True(t, strings.Contains(d, "stopped-at-rung (rung 0)"), d)
}

// ClassifyTrial's table: every state a person is shown, from a trial's
// own state and what its campaign knows.
func TestClassifyTrial(t *testing.T) {
	for _, tc := range []struct {
		own  TrialState
		f    TrialFacts
		want TrialState
	}{
		{TrialRunning, TrialFacts{Campaign: CampaignRunning, InFlight: true}, TrialRunning},
		{TrialPending, TrialFacts{Campaign: CampaignRunning, InFlight: true}, TrialPending},
		{TrialPaused, TrialFacts{Campaign: CampaignRunning, InFlight: true}, TrialPending},
		{TrialRunning, TrialFacts{Campaign: CampaignPaused, InFlight: true}, TrialPaused},
		{TrialRunning, TrialFacts{Campaign: CampaignStopping, InFlight: true}, TrialRunning},
		{TrialCompleted, TrialFacts{Campaign: CampaignRunning, Parked: true}, TrialParked},
		{TrialCompleted, TrialFacts{Campaign: CampaignPaused, Parked: true}, TrialParked},
		{TrialCompleted, TrialFacts{Campaign: CampaignRunning, Parked: true, SearchDone: true}, TrialAtRung},
		{TrialCompleted, TrialFacts{Campaign: CampaignCompleted, Parked: true}, TrialAtRung},
		{TrialCompleted, TrialFacts{Campaign: CampaignCompleted, Parked: true, Final: true}, TrialCompleted},
		{TrialCompleted, TrialFacts{Campaign: CampaignRunning, Parked: true, Final: true}, TrialParked},
		{TrialCompleted, TrialFacts{Campaign: CampaignRunning}, TrialCompleted},
		{TrialStopped, TrialFacts{Campaign: CampaignPaused}, TrialStopped},
		{TrialFailed, TrialFacts{Campaign: CampaignPaused, InFlight: true}, TrialFailed},
	} {
		require.Equal(t, tc.want, ClassifyTrial(tc.own, tc.f), "%s %+v", tc.own, tc.f)
	}
}

// An inline campaign's memo snapshot stays under MemoSnapshotMax however
// many trials are parked (their briefs go first, in-flight ones stay),
// and its counts stay whole: Temporal fails a workflow task whose memo is
// over 32 KB.
func TestSnapshotWithManyParkedTrialsIsCapped(t *testing.T) {
	c := viewCampaign("min", 4)
	for i := 5; i < 5+MaxParked; i++ {
		c.park(ParkedTrial{TrialID: fmt.Sprintf("t%05d", i), Number: i, Segment: 1, Score: float64(i), Scored: true, Stage: "rung 0", Budget: 1})
	}
	c.st.TopBudget = 9
	s := c.status()
	require.Len(t, s.Trials, 4+MaxParked)
	snap := capSnapshot(CampaignSnapshot{Status: s}, MemoSnapshotMax)
	require.LessOrEqual(t, jsonSize(snap), MemoSnapshotMax)
	require.Equal(t, MaxParked, snap.Status.Parked)
	require.GreaterOrEqual(t, len(snap.Status.Trials), 4)
	for _, b := range snap.Status.Trials[:4] {
		require.Equal(t, TrialRunning, b.State, "in-flight briefs are kept")
	}
}

// A run recorded before "best-never-worse" keeps ranking by the latest
// value, so that its replay upserts GleanerBestScore as it did.
func TestLegacyRunRanksByTheLatestValue(t *testing.T) {
	c := viewCampaign("min", 1)
	c.legacyBest = true
	c.rank(c.st.InFlight[0], 0.5, TrialRunning)
	c.rank(c.st.InFlight[0], 0.7, TrialRunning)
	require.Equal(t, 0.7, c.best().Score)
	require.Nil(t, c.st.Best)
}

// A trial parked or stopped at its rung without ever reporting the
// objective is flagged as a completed one is (`trials` says so).
func TestParkedTrialsWithoutTheObjectiveAreFlagged(t *testing.T) {
	for _, s := range []TrialState{TrialCompleted, TrialParked, TrialAtRung} {
		require.True(t, EndedWithoutObjective(s, false, nil), s)
		require.False(t, EndedWithoutObjective(s, true, nil), s)
	}
	require.False(t, EndedWithoutObjective(TrialRunning, false, nil))
}
