package cli

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
