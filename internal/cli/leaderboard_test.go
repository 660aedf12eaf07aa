package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func TestWriteLeaderboard(t *testing.T) {
	l := []workflows.LeaderboardEntry{
		{TrialID: "t00002", Score: 0.5, State: workflows.TrialRunning, Samples: 2e6, Restarts: 1, Params: hpo.Params{"lr": hpo.Float(0.1), "hidden": hpo.Float(16)}},
		{TrialID: "t00001", Score: 0.75, State: workflows.TrialCompleted, Samples: 900},
		{TrialID: "t00003", Score: 1.5, State: workflows.TrialStopped, Samples: 20000},
	}
	var b bytes.Buffer
	writeLeaderboard(&b, topN(l, 2))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, []string{"RANK", "TRIAL", "SCORE", "STATE", "SAMPLES", "RESTARTS", "PARAMS"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"1", "t00002", "0.5", "running", "2.0M", "1", "hidden=16", "lr=0.1"}, strings.Fields(lines[1]))
	require.Equal(t, []string{"2", "t00001", "0.75", "completed", "900", "0"}, strings.Fields(lines[2]))

	require.Len(t, topN(l, 0), 3)
	require.Len(t, topN(l, 10), 3)
	require.Equal(t, "20.0k", formatCount(20000))
	require.Equal(t, "1.5G", formatCount(1.5e9))
}

// `gleaner dev` and `submit --wait` print the leaderboard in one format:
// dev's is writeLeaderboard's table under its heading.
func TestDevPrintsTheLeaderboardAsSubmitDoes(t *testing.T) {
	l := []workflows.LeaderboardEntry{
		{TrialID: "t00002", Number: 2, Score: 0.5, State: workflows.TrialAtRung, Stage: "rung 0", Samples: 900},
		{TrialID: "t00001", Number: 1, Score: 0.75, State: workflows.TrialCompleted, Stage: "rung 1", Samples: 2700},
	}
	var table, dev bytes.Buffer
	writeLeaderboard(&table, l)
	devWriteLeaderboard(&dev, workflows.CampaignResult{Leaderboard: l}, gleaner.CampaignSpec{Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"}})
	require.Equal(t, "\nleaderboard (top 2, lowest val_loss first):\n"+table.String(), dev.String())
}
