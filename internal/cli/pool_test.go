package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func TestWritePoolStatus(t *testing.T) {
	s := workflows.PoolStatus{Name: "p", PoolState: workflows.PoolState{
		Nodes: []cluster.Node{{ID: "g1", Type: "gpu"}, {ID: "g2", Type: "gpu"}, {ID: "c1", Type: "cpu"}},
		Trials: []workflows.PoolTrial{
			{Registration: workflows.RegisterTrial{TrialID: "wf-1", CampaignID: "c", MinNodes: 1, MaxNodes: 2}, Nodes: []string{"g1", "g2"}, NodeType: "gpu"},
			{Registration: workflows.RegisterTrial{TrialID: "wf-2", CampaignID: "d", MinNodes: 2, MaxNodes: 4, Weight: 2.5}, Reason: "no-capacity"},
		},
		Solves: 3, Epoch: 5,
		Last: workflows.SolveSummary{At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Formulation: "compact", Status: "optimal",
			SolveMillis: 1.25, Trials: 2, Nodes: 3, NodesUsed: 2, Changed: 1},
	}}
	var b bytes.Buffer
	writePoolStatus(&b, s)
	out := b.String()
	require.Contains(t, out, "pool      p\n")
	require.Contains(t, out, "nodes     3, 2 in use (cpu 1, gpu 2)")
	require.Contains(t, out, "trials    2 trials registered\n")
	require.Contains(t, out, "compact optimal in 1.2 ms")
	require.Contains(t, out, "2/3 nodes used, 2 trials, 1 changed (3 solves, epoch 5)")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, []string{"wf-1", "c", "1", "2", "1-2", "gpu", "-", "g1,g2"}, strings.Fields(lines[len(lines)-2]))
	require.Equal(t, []string{"wf-2", "d", "2.5", "0", "2-4", "-", "no-capacity", "-"}, strings.Fields(lines[len(lines)-1]), "the campaign's weight")

	require.NotContains(t, out, "library")
	s.LibraryCurves = 7
	b.Reset()
	writePoolStatus(&b, s)
	require.Contains(t, b.String(), "library   7 learned curves (gleaner pool library p)\n")

	b.Reset()
	writePoolStatus(&b, workflows.PoolStatus{Name: "empty"})
	require.Contains(t, b.String(), "no allocation yet")
	require.Equal(t, "a,b,+3", compactList([]string{"a", "b", "c", "d", "e"}, 2))
}

// The help's example passes a pool, not a campaign, as POOL.
func TestPoolStatusExampleNamesAPool(t *testing.T) {
	cmd := newPoolStatusCmd()
	require.Contains(t, cmd.Example, "gleaner pool status default --json")
	require.NotContains(t, cmd.Example, "go-mlp-spirals")
}
