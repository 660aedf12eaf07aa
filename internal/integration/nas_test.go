package integration_test

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/nas"
	"github.com/gleaner-hpc/gleaner/trial"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// nasPython returns an interpreter that can import torch and sklearn
// (testenv.Python).
func nasPython(t *testing.T) string { return testenv.Python(t, "torch", "sklearn.datasets") }

// nasCellSpace is the test's architecture space: NAS-Bench-201's cell
// without avg_pool_3x3 (4⁶ = 4,096 cells), the network 2 stages of one
// cell at 8 then 16 channels.
var nasCellSpace = hpo.ArchSpec{Cell: &hpo.CellSpace{
	Nodes: 4, Ops: []string{"none", "skip_connect", "conv_1x1", "conv_3x3"}, Stacks: 2, Cells: 1, Channels: 8,
}}

// A NAS campaign of real PyTorch trainers: regularized evolution over
// cell architectures, each trial examples/pytorch-nas/train.py training
// its cell on digits for 2 epochs. The first population is random; every
// later trial is one mutation of an earlier trial's architecture (with
// the other parameters fixed, the architecture is the only thing
// evolution can mutate). Every trial reports its network's size as
// metrics, and the leaderboard prints architectures in NAS-Bench-201's
// notation.
func TestNASEvolutionCampaign(t *testing.T) {
	py := nasPython(t)
	script, err := filepath.Abs("../../examples/pytorch-nas/train.py")
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, devserver.Options{})
	cfg := testenv.Worker(t, srv, "nas-evolution", nil)
	const trials, population = 8, 4
	spec := gleaner.CampaignSpec{
		Name:    "nas-evolution",
		Kind:    "nas",
		Pool:    "nas-evolution",
		Command: []string{py, script},
		Env:     map[string]string{"OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"},
		Space: hpo.Space{
			{Name: "arch", Type: hpo.ParamArch, Architecture: &nasCellSpace},
			testenv.Fixed("lr", "0.05"),
			testenv.Fixed("epochs", "2"),
		},
		Search: gleaner.SearchSpec{
			Algorithm: hpo.AlgorithmEvolution,
			Settings:  hpo.Settings{Evolution: &hpo.EvolutionSettings{Population: population, SampleSize: 2}},
		},
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: trials, MaxConcurrent: 2},
		Resources: gleaner.Resources{MinNodes: 1, MaxNodes: 1},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(5 * time.Second), MaxRestarts: 1},
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		t.Fatalf("spec: %v", err)
	}
	started := time.Now()
	res := campaignResult(t, startCampaign(t, srv.Client(), "nas-evolution", spec), 4*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials || res.Failed != 0 {
		t.Fatalf("result %s %+v, want %d trials completed", res.State, res.CampaignCounts, trials)
	}
	took := time.Since(started)

	space, err := spec.Space[0].Architectures()
	if err != nil {
		t.Fatal(err)
	}
	var archs []string // by trial number
	mutations, oneEdge := 0, 0
	for _, r := range trialReports(t, srv.Client(), spec.Name, trials) {
		if r.State != workflows.TrialCompleted || r.Restarts != 0 {
			t.Errorf("trial %s: %s after %d restarts (%s)", r.TrialID, r.State, r.Restarts, r.Error)
		}
		arch := r.Params["arch"].Str
		if canon, err := space.Canonical(arch); err != nil || canon != arch {
			t.Errorf("trial %s: arch %s is not canonical (canonical %s, %v)", r.TrialID, arch, canon, err)
		}
		if r.Number > population {
			// A child: one mutation (Architectures.Mutate, one of the
			// parent's neighbours) of a trial that finished before it.
			parents := slices.IndexFunc(archs, func(p string) bool { return slices.Contains(space.Neighbors(p), arch) })
			if parents < 0 {
				t.Errorf("trial %s (number %d): arch %s is no earlier trial's neighbour", r.TrialID, r.Number, nas.Hash(arch))
			} else {
				mutations++
			}
			if slices.ContainsFunc(archs, func(p string) bool { return edgesChanged(t, p, arch) == 1 }) {
				oneEdge++
			}
		}
		archs = append(archs, arch)
		seen := reportedMetrics(t, filepath.Join(cfg.DataDir, spec.Name, r.TrialID))
		for _, m := range []string{"val_loss", "params", "flops"} {
			if !seen[m] {
				t.Errorf("trial %s never reported metric %s (reported: %v)", r.TrialID, m, seen)
			}
		}
	}
	if oneEdge == 0 {
		t.Errorf("no trial after the first population differs from an earlier one in exactly one edge (%d mutations)", mutations)
	}

	v, err := srv.Client().QueryWorkflow(testContext(t, time.Minute), workflows.CampaignWorkflowID(spec.Name), "", workflows.QueryLeaderboard)
	if err != nil {
		t.Fatal(err)
	}
	var board []workflows.LeaderboardEntry
	if err := v.Get(&board); err != nil {
		t.Fatal(err)
	}
	if len(board) == 0 {
		t.Fatal("the leaderboard is empty")
	}
	best := board[0].Params["arch"]
	shown := hpo.DescribeValue(best)
	if !strings.HasPrefix(shown, "|") || !strings.HasSuffix(shown, "| ("+nas.Hash(best.Str)+")") || strings.Count(shown, "~") != 6 {
		t.Errorf("leaderboard's best arch shows as %q, want NAS-Bench-201's |op~j|+… notation (6 edges) and its hash %s", shown, nas.Hash(best.Str))
	}
	slices.Sort(archs)
	t.Logf("%d trials (%d architectures) in %v, %d children of which %d one edge from an earlier trial; best %s val_loss %.4g",
		trials, len(slices.Compact(archs)), took.Round(100*time.Millisecond), mutations, oneEdge, shown, board[0].Score)
}

// edgesChanged is how many edges two cells' JSON differ in (both of one
// space: the same nodes).
func edgesChanged(t *testing.T, a, b string) int {
	t.Helper()
	pa, err := nas.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := nas.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, row := range pa.Cell.Edges {
		for j, op := range row {
			if pb.Cell.Edges[i][j] != op {
				n++
			}
		}
	}
	return n
}

// reportedMetrics is the set of metric names the trainer of the trial in
// dir reported, over all its runs' report lines.
func reportedMetrics(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatalf("trial directory: %v", err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		f, err := os.Open(filepath.Join(dir, "runs", e.Name(), "report.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			r, err := trial.ParseReport(sc.Bytes())
			if err != nil {
				continue // a rendezvous line
			}
			for m := range r.Metrics {
				seen[m] = true
			}
		}
		f.Close()
	}
	return seen
}
