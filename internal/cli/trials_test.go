package cli

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func TestWriteTrials(t *testing.T) {
	trials := []workflows.TrialStatus{
		{TrialID: "t00001", TrialProgress: workflows.TrialProgress{State: workflows.TrialRunning, Nodes: []string{"a", "b"},
			Samples: 1280, Restarts: 1, Rescales: 2, Checkpoint: "/data/c/t00001/checkpoints/step-40.gob",
			Metrics: map[string]float64{"val_loss": 0.5, "loss": 0.4}}},
		{TrialID: "t00002", TrialProgress: workflows.TrialProgress{State: workflows.TrialPending, Metrics: map[string]float64{"val_loss": math.NaN()}}},
		{TrialID: "t00003", TrialProgress: workflows.TrialProgress{State: workflows.TrialFailed, Error: "trainer exited 1\nstack…"}},
	}
	var b bytes.Buffer
	writeTrials(&b, trials, "val_loss")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, []string{"TRIAL", "STATE", "NODES", "SAMPLES", "RESTARTS", "RESCALES", "CHECKPOINT", "VAL_LOSS"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"t00001", "running", "2", "1280", "1", "2", "step-40.gob", "0.5"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"t00002", "pending", "0", "0", "0", "0", "-", "-"}, strings.Fields(lines[2]))
	require.Contains(t, lines[3], "failed (trainer exited 1)")
	require.NotContains(t, b.String(), "stack")
}

// The list says "the newest N of M" only when --limit cut it, naming the
// range; a list short because the server's search lags says so instead
// (seen: "the newest 9 of 12" over t00001–t00009).
func TestTrialsNoteSaysWhichTrialsAreListed(t *testing.T) {
	ids := func(from, to int) []workflows.TrialStatus {
		var out []workflows.TrialStatus
		for i := from; i <= to; i++ {
			out = append(out, workflows.TrialStatus{TrialID: fmt.Sprintf("t%05d", i)})
		}
		return out
	}
	require.Equal(t, "(the newest 9 of 12 trials, t00004 to t00012; --limit 0 shows all)", trialsNote(ids(4, 12), 9, 12, false))
	require.Equal(t, "(9 of 12 trials: the server's search does not list the others yet; ask again in a moment)",
		trialsNote(ids(1, 9), 1000, 12, false))
	require.Empty(t, trialsNote(ids(1, 12), 1000, 12, false))
	require.Empty(t, trialsNote(ids(1, 12), 0, 12, false))
}

// ASHA trials show their state as the campaign classifies them (parked,
// stopped at their rung: not "completed") and a STAGE column.
func TestTrialsShowTheCampaignsStatesAndStages(t *testing.T) {
	trials := []workflows.TrialStatus{
		{TrialID: "t00001", TrialProgress: workflows.TrialProgress{State: workflows.TrialCompleted, ObjectiveSeen: true}},
		{TrialID: "t00002", TrialProgress: workflows.TrialProgress{State: workflows.TrialCompleted, ObjectiveSeen: true}},
		{TrialID: "t00003", TrialProgress: workflows.TrialProgress{State: workflows.TrialRunning}},
		{TrialID: "t00004", TrialProgress: workflows.TrialProgress{State: workflows.TrialStopped, ObjectiveSeen: true}},
	}
	client.ClassifyTrials(trials, workflows.CampaignStatus{Trials: []workflows.TrialBrief{
		{TrialID: "t00001", State: workflows.TrialAtRung, Stage: "rung 0"},
		{TrialID: "t00002", State: workflows.TrialCompleted, Stage: "rung 2"},
		{TrialID: "t00003", State: workflows.TrialPaused, Stage: "rung 1"},
	}})
	var b bytes.Buffer
	writeTrials(&b, trials, "loss")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Equal(t, []string{"TRIAL", "STATE", "STAGE", "NODES"}, strings.Fields(lines[0])[:4])
	require.Equal(t, []string{"t00001", "stopped-at-rung", "rung", "0"}, strings.Fields(lines[1])[:4])
	require.Equal(t, []string{"t00002", "completed", "rung", "2"}, strings.Fields(lines[2])[:4])
	require.Equal(t, []string{"t00003", "paused", "rung", "1"}, strings.Fields(lines[3])[:4])
	require.Equal(t, []string{"t00004", "stopped", "-"}, strings.Fields(lines[4])[:3])
}
