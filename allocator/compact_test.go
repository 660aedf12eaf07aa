package allocator_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/benchgen"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
)

func realCurves(tb testing.TB) []dataset.ScalingCurve {
	tb.Helper()
	curves, err := dataset.LoadScaling(data.Prefix + data.Scaling)
	require.NoError(tb, err)
	return curves
}

func relClose(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// The reductions in solveCompact (dominance, incumbent, Lagrangian fixing)
// must never cut off the optimum: compare with the full model on HiGHS, on
// instances from real curves where nodes are scarce and where they abound.
func TestCompactEqualsFullMCKPOnRealCurves(t *testing.T) {
	curves := realCurves(t)
	sizes := []struct{ trials, nodes int }{{8, 16}, {30, 64}, {60, 96}, {120, 512}, {300, 700}}
	for _, size := range sizes {
		for seed := uint64(1); seed <= 8; seed++ {
			p, err := benchgen.Problem(benchgen.Config{Trials: size.trials, Nodes: size.nodes, Curves: curves}, seed)
			require.NoError(t, err)
			want, status, err := allocator.SolveNaiveMCKP(p, time.Minute)
			require.NoError(t, err)
			require.Equal(t, allocator.StatusOptimal, status)
			got, err := allocator.Solve(p, nil)
			require.NoError(t, err)
			require.Equal(t, allocator.StatusOptimal, got.Status)
			require.True(t, relClose(want, got.Objective), "%d×%d seed %d: full MCKP %v, compact %v", size.trials, size.nodes, seed, want, got.Objective)
			for _, f := range []allocator.Formulation{allocator.FormulationGreedy, allocator.FormulationEqual} {
				base, err := allocator.Solve(p, &allocator.Settings{Formulation: f})
				require.NoError(t, err)
				require.LessOrEqual(t, base.Objective, got.Objective*(1+1e-12)+1e-9, "%s beats compact on %d×%d seed %d", f, size.trials, size.nodes, seed)
			}
		}
	}
}

// Efficiency and weighted objectives, and a pool of two node types, go
// through the same reductions (with subgradient prices on two types).
func TestCompactEqualsFullMCKPObjectivesAndTypes(t *testing.T) {
	curves := realCurves(t)
	for seed := uint64(1); seed <= 12; seed++ {
		p, err := benchgen.Problem(benchgen.Config{Trials: 40, Nodes: 80, Curves: curves}, seed)
		require.NoError(t, err)
		switch seed % 3 {
		case 0:
			p.Objective = allocator.ObjectiveEfficiency
		case 1:
			p.Objective = allocator.ObjectiveWeighted
			for j := range p.Trials {
				p.Trials[j].Weight = float64(1 + j%4)
			}
		}
		if seed%2 == 0 {
			splitTypes(p)
		}
		want, _, err := allocator.SolveNaiveMCKP(p, time.Minute)
		require.NoError(t, err)
		got, err := allocator.Solve(p, nil)
		require.NoError(t, err)
		require.True(t, relClose(want, got.Objective), "seed %d (%s): full MCKP %v, compact %v", seed, p.Objective, want, got.Objective)
	}
}

// Four node types with every trial's real curve on each (benchgen's
// --types 4): the cutting-plane prices, the LP rounding and the core in
// reduced costs against the full model on HiGHS.
func TestCompactEqualsFullMCKPFourTypes(t *testing.T) {
	curves := realCurves(t)
	for _, size := range []struct{ trials, nodes int }{{12, 32}, {40, 128}, {150, 512}} {
		for seed := uint64(1); seed <= 4; seed++ {
			p, err := benchgen.Problem(benchgen.Config{Trials: size.trials, Nodes: size.nodes, Curves: curves, Types: 4}, seed)
			require.NoError(t, err)
			want, status, err := allocator.SolveNaiveMCKP(p, time.Minute)
			require.NoError(t, err)
			require.Equal(t, allocator.StatusOptimal, status)
			got, err := allocator.Solve(p, nil)
			require.NoError(t, err)
			require.Equal(t, allocator.StatusOptimal, got.Status)
			require.True(t, relClose(want, got.Objective), "%d×%d seed %d: full MCKP %v, compact %v", size.trials, size.nodes, seed, want, got.Objective)
		}
	}
}

// splitTypes makes every third node a "v100" and gives each trial a curve
// per type (the v100 one 1.7× faster), keeping current nodes consistent.
func splitTypes(p *allocator.Problem) {
	typeOf := map[string]string{}
	for i := range p.Nodes {
		if i%3 == 0 {
			p.Nodes[i].Type = "v100"
		} else {
			p.Nodes[i].Type = "k80"
		}
		typeOf[p.Nodes[i].ID] = p.Nodes[i].Type
	}
	for j := range p.Trials {
		t := &p.Trials[j]
		fast := make(allocator.Curve, len(t.Curve))
		for i, pt := range t.Curve {
			fast[i] = allocator.Point{Nodes: pt.Nodes, Throughput: 1.7 * pt.Throughput}
		}
		t.CurvesByType = map[string]allocator.Curve{"k80": t.Curve, "v100": fast}
		t.Curve = nil
		// Keep only current nodes of the first held node's type.
		var keep []string
		first := ""
		for _, id := range t.Nodes {
			typ, ok := typeOf[id]
			if !ok {
				keep = append(keep, id) // departed
				continue
			}
			if first == "" {
				first = typ
			}
			if typ == first {
				keep = append(keep, id)
			}
		}
		t.Nodes = keep
	}
}

func benchSolve(b *testing.B, trials, nodes int, f allocator.Formulation) {
	curves := realCurves(b)
	p, err := benchgen.Problem(benchgen.Config{Trials: trials, Nodes: nodes, Curves: curves}, 1)
	require.NoError(b, err)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := allocator.Solve(p, &allocator.Settings{Formulation: f, TimeLimit: time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSolve(b *testing.B) {
	for _, size := range []struct{ trials, nodes int }{{20, 256}, {100, 512}, {1000, 4096}} {
		for _, f := range []allocator.Formulation{allocator.FormulationCompact, allocator.FormulationGreedy, allocator.FormulationEqual} {
			b.Run(fmt.Sprintf("%s/%dx%d", f, size.trials, size.nodes), func(b *testing.B) { benchSolve(b, size.trials, size.nodes, f) })
		}
	}
	b.Run("paper/20x256", func(b *testing.B) { benchSolve(b, 20, 256, allocator.FormulationPaper) })
}

// BenchmarkFullMCKP times the compact model without reductions, the
// baseline that the reductions are measured against.
func BenchmarkFullMCKP(b *testing.B) {
	curves := realCurves(b)
	p, err := benchgen.Problem(benchgen.Config{Trials: 1000, Nodes: 4096, Curves: curves}, 1)
	require.NoError(b, err)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := allocator.SolveNaiveMCKP(p, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// A benchgen instance (4 trials × 16 nodes, seed 3) on which HiGHS, with
// symmetry detection on, proved a 0.7% worse paper solution optimal.
func TestPaperSymmetryRegression(t *testing.T) {
	p, err := benchgen.Problem(benchgen.Config{Trials: 4, Nodes: 16, Curves: realCurves(t)}, 3)
	require.NoError(t, err)
	compact, err := allocator.Solve(p, nil)
	require.NoError(t, err)
	paper, err := allocator.Solve(p, &allocator.Settings{Formulation: allocator.FormulationPaper, TimeLimit: time.Minute})
	require.NoError(t, err)
	require.Equal(t, allocator.StatusOptimal, paper.Status)
	require.True(t, relClose(compact.Objective, paper.Objective), "compact %v %v, paper %v %v",
		compact.Objective, compact.Counts(), paper.Objective, paper.Counts())
}
