package allocator

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPropertiesAllFormulations checks the invariants every formulation
// must keep, on seeded random instances (multi-type ones included; a
// formulation that cannot express one answers ErrUnsupported and is
// skipped there).
func TestPropertiesAllFormulations(t *testing.T) {
	const instances = 200
	for seed := range uint64(instances) {
		rng := rand.New(rand.NewPCG(seed, 0x9e37))
		trials, nodes, types := 1+rng.IntN(8), rng.IntN(25), 1
		if rng.IntN(3) == 0 {
			types = 2 + rng.IntN(2)
		}
		p := randomProblem(rng, trials, nodes, types)
		name := fmt.Sprintf("seed=%d/%dx%dx%d", seed, trials, nodes, types)
		results := map[Formulation]*Result{}
		for _, f := range Formulations {
			t.Run(name+"/"+string(f), func(t *testing.T) {
				res, err := Solve(p, &Settings{Formulation: f, TimeLimit: 5 * time.Second})
				if errors.Is(err, ErrUnsupported) {
					t.Skip(err)
				}
				require.NoError(t, err)
				require.Equal(t, f, res.Formulation)
				checkResult(t, p, res)
				results[f] = res
			})
		}
		t.Run(name+"/optimal-dominates", func(t *testing.T) {
			checkOptimalDominates(t, results)
		})
	}
}

// checkOptimalDominates asserts that a proven optimum is at least as good
// as every other formulation's result, and that proven optima agree.
func checkOptimalDominates(t *testing.T, results map[Formulation]*Result) {
	t.Helper()
	for fo, opt := range results {
		if opt.Status != StatusOptimal {
			continue
		}
		for f, r := range results {
			require.Truef(t, r.Objective <= opt.Objective+1e-6*math.Max(1, math.Abs(opt.Objective)),
				"%s (%s) objective %v beats %s's proven optimum %v", f, r.Status, r.Objective, fo, opt.Objective)
			if r.Status == StatusOptimal {
				require.Truef(t, closeRel(opt.Objective, r.Objective, 1e-6),
					"proven optima differ (-%s +%s):\n-%v %v\n+%v %v", fo, f, opt.Objective, opt.Counts(), r.Objective, r.Counts())
			}
		}
	}
}

// checkFeasible asserts that a result is feasible for p: one allocation
// per trial, every count in {0} ∪ [min, max], node ids real idle nodes of
// the given type (one the trial has a curve for), no node given twice and
// no type's capacity exceeded. It returns the type given to each trial.
func checkFeasible(t *testing.T, p *Problem, res *Result) []string {
	t.Helper()
	require.Len(t, res.Allocations, len(p.Trials))
	node := make(map[string]Node, len(p.Nodes))
	capacity := map[string]int{}
	for _, n := range p.Nodes {
		node[n.ID] = n
		capacity[n.Type]++
	}
	used := map[string]int{}
	givenTo := map[string]string{}
	types := make([]string, len(p.Trials))
	for j, a := range res.Allocations {
		tr := &p.Trials[j]
		require.Equal(t, tr.ID, a.TrialID, "allocation %d", j)
		require.Len(t, a.Nodes, a.Count, "trial %q: Count and len(Nodes)", tr.ID)
		if a.Count == 0 {
			continue
		}
		require.True(t, a.Count >= tr.MinNodes && a.Count <= tr.MaxNodes,
			"trial %q: count %d outside {0} ∪ [%d, %d]", tr.ID, a.Count, tr.MinNodes, tr.MaxNodes)
		if len(tr.CurvesByType) > 0 {
			_, ok := tr.CurvesByType[a.NodeType]
			require.True(t, ok, "trial %q: given type %q it has no curve for", tr.ID, a.NodeType)
		}
		for _, id := range a.Nodes {
			n, ok := node[id]
			require.True(t, ok, "trial %q: node %q is not an idle node", tr.ID, id)
			require.Equal(t, a.NodeType, n.Type, "trial %q: node %q type (-want +got)", tr.ID, id)
			other, dup := givenTo[id]
			require.False(t, dup, "node %q given to trial %q and trial %q", id, other, tr.ID)
			givenTo[id] = tr.ID
		}
		used[a.NodeType] += a.Count
		types[j] = a.NodeType
	}
	for typ, u := range used {
		require.LessOrEqual(t, u, capacity[typ], "type %q: %d nodes given, %d idle", typ, u, capacity[typ])
	}
	return types
}

// checkResult asserts every invariant of a result for problem p:
// feasibility, no migration, longest-idle nodes kept, reasons exactly on
// the trials at 0, and Result.Objective equal to Evaluate's score.
func checkResult(t *testing.T, p *Problem, res *Result) {
	t.Helper()
	types := checkFeasible(t, p, res)
	node := make(map[string]Node, len(p.Nodes))
	for _, n := range p.Nodes {
		node[n.ID] = n
	}
	for j, a := range res.Allocations {
		tr := &p.Trials[j]
		if a.Count == 0 {
			require.NotEmpty(t, a.Reason, "trial %q got 0 nodes and no reason", tr.ID)
			continue
		}
		require.Empty(t, a.Reason, "trial %q got %d nodes and a reason", tr.ID, a.Count)
		checkNoMigration(t, tr, node, a)
	}
	want, err := Evaluate(p, res.Counts(), types)
	require.NoError(t, err)
	require.Truef(t, closeRel(want, res.Objective, 1e-9),
		"Result.Objective vs Evaluate (-want +got):\n-%v\n+%v", want, res.Objective)
}

// checkNoMigration asserts that a trial's new nodes are a superset or a
// subset of its current still-idle nodes, and that a shrinking trial keeps
// the nodes that stay idle longest.
func checkNoMigration(t *testing.T, tr *Trial, node map[string]Node, a Allocation) {
	t.Helper()
	var cur []string
	for _, id := range tr.Nodes {
		if _, ok := node[id]; ok {
			cur = append(cur, id)
		}
	}
	if len(cur) == 0 {
		return
	}
	got := slices.Clone(a.Nodes)
	slices.Sort(got)
	slices.Sort(cur)
	superset, subset := containsAll(got, cur), containsAll(cur, got)
	require.True(t, superset || subset,
		"trial %q migrated: held %v, given %v (neither superset nor subset)", tr.ID, cur, got)
	if !subset || len(got) == len(cur) {
		return
	}
	kept := map[string]bool{}
	for _, id := range got {
		kept[id] = true
	}
	for _, k := range got {
		for _, d := range cur {
			if kept[d] {
				continue
			}
			require.False(t, idlesLonger(node[d], node[k]),
				"trial %q shrank keeping %q (idle until %v) and releasing %q (idle until %v)",
				tr.ID, k, node[k].IdleUntil, d, node[d].IdleUntil)
		}
	}
}

// containsAll reports whether sorted a contains every element of sorted b.
func containsAll(a, b []string) bool {
	for _, x := range b {
		if _, ok := slices.BinarySearch(a, x); !ok {
			return false
		}
	}
	return true
}

// idlesLonger reports whether node a is expected to stay idle strictly
// longer than node b (an unknown IdleUntil is the latest).
func idlesLonger(a, b Node) bool {
	switch {
	case a.IdleUntil.IsZero():
		return !b.IdleUntil.IsZero()
	case b.IdleUntil.IsZero():
		return false
	default:
		return a.IdleUntil.After(b.IdleUntil)
	}
}
