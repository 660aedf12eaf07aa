package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func sampleStatus() workflows.CampaignStatus {
	return workflows.CampaignStatus{
		Campaign: "c", State: workflows.CampaignRunning,
		CampaignCounts: workflows.CampaignCounts{Created: 9, Completed: 4, Stopped: 1, Failed: 0},
		Running:        4, Pending: 1, MaxTrials: 10, MaxConcurrent: 4, MaxFailures: 10,
		Progress: 0.5, Objective: "val_loss", Mode: "min",
		Best: &workflows.LeaderboardEntry{TrialID: "t00003", Number: 3, Score: 0.25, State: workflows.TrialCompleted,
			Samples: 12345, Params: hpo.Params{"lr": hpo.Float(0.0123456), "act": hpo.String("relu")}},
	}
}

func TestProgressLine(t *testing.T) {
	p := client.Progress{Status: sampleStatus(), Pool: &workflows.PoolStatus{PoolState: workflows.PoolState{
		Nodes:  []cluster.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}},
		Trials: []workflows.PoolTrial{{Nodes: []string{"a", "b"}}, {Nodes: []string{"c"}}, {}},
	}}}
	require.Equal(t, "[##########----------] 5/10 trials  4 running, 1 pending (queued to start)  nodes 3/4 in use  best 0.25 (t00003)  running", progressLine(p))

	p.Pool, p.Status.Best, p.Status.Failed = nil, nil, 2
	require.Equal(t, "[##############------] 7/10 trials  4 running, 1 pending (queued to start)  failed 2  running", progressLine(p))
}

// Nodes in use are counted once each and only among the pool's nodes
// (seen: `nodes 5/4`); paused trials are not running.
func TestProgressLineNeverShowsMoreNodesInUseThanThePoolHas(t *testing.T) {
	s := sampleStatus()
	s.Running, s.Paused, s.Pending = 0, 4, 0
	p := client.Progress{Status: s, Pool: &workflows.PoolStatus{PoolState: workflows.PoolState{
		Nodes:  []cluster.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}},
		Trials: []workflows.PoolTrial{{Nodes: []string{"a", "b", "e"}}, {Nodes: []string{"b", "c"}}},
	}}}
	line := progressLine(p)
	require.Contains(t, line, "  0 running, 4 paused  nodes 3/4 in use  ")
}

func TestWriteStatus(t *testing.T) {
	var b bytes.Buffer
	writeStatus(&b, sampleStatus(), "http://ui/c")
	out := b.String()
	for _, want := range []string{
		"state     running",
		"5/10 ended (4 completed, 1 stopped, 0 failed), 4 running, 1 pending (queued to start), 9 created",
		"best      val_loss min 0.25 by t00003 (completed, 12.3k samples): act=relu lr=0.01235",
		"progress  50%", "ui        http://ui/c",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "mode ", "a status from before the trial mode was kept")
	b.Reset()
	s := sampleStatus()
	s.TrialMode = "inline, pipelined 2 deep"
	writeStatus(&b, s, "")
	require.Contains(t, b.String(), "mode      inline, pipelined (2 deep: the next trials queued behind each running one on its nodes)\n")
	b.Reset()
	s.TrialMode = "workflow"
	writeStatus(&b, s, "")
	require.Contains(t, b.String(), "mode      a workflow per trial\n")
	b.Reset()
	s.Best = nil
	writeStatus(&b, s, "")
	require.Contains(t, b.String(), "best      none yet")
	require.NotContains(t, b.String(), "ui ")
}

func TestIsTerminal(t *testing.T) {
	require.False(t, isTerminal(&bytes.Buffer{}))
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	require.False(t, isTerminal(f), "a regular file")
	require.False(t, strings.ContainsAny(progressLine(client.Progress{Status: sampleStatus()}), "\r\x1b"))
}
