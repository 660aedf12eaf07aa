package allocator

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// closeRel reports whether got is within tol of want, relative to
// max(1, |want|).
func closeRel(want, got, tol float64) bool {
	return math.Abs(want-got) <= tol*math.Max(1, math.Abs(want))
}

func TestPaperMatchesBruteForce(t *testing.T) {
	const instances = 150
	for seed := range uint64(instances) {
		rng := rand.New(rand.NewPCG(seed, 0xbf7))
		trials, nodes := 1+rng.IntN(3), rng.IntN(7)
		p := randomProblem(rng, trials, nodes, 1)
		t.Run(fmt.Sprintf("seed=%d/%dx%d", seed, trials, nodes), func(t *testing.T) {
			in, err := prepare(p)
			require.NoError(t, err)
			want, wantVal := bruteForce(in)

			d, status, milpVal, err := solvePaperMILP(in, (*Settings)(nil).withDefaults())
			require.NoError(t, err)
			require.Equal(t, StatusOptimal, status)
			got := in.objective(d)
			require.Truef(t, closeRel(wantVal, got, 1e-6),
				"objective (-want +got):\n-%v (counts %v)\n+%v (counts %v)", wantVal, want.counts, got, d.counts)
			require.Truef(t, closeRel(got, milpVal, 1e-6),
				"MILP objective %v differs from in.objective %v of its decision %v", milpVal, got, d.counts)

			res, err := Solve(p, &Settings{Formulation: FormulationPaper})
			require.NoError(t, err)
			require.Truef(t, closeRel(wantVal, res.Objective, 1e-6),
				"Solve objective (-want +got):\n-%v\n+%v", wantVal, res.Objective)
		})
	}
}

// TestPaperNonConcaveCurve pins a curve whose best count lies between two
// measured points after a dip: a concave (LP-only) interpolation would miss
// it, the segment binaries must not.
func TestPaperNonConcaveCurve(t *testing.T) {
	p := &Problem{
		Nodes: []Node{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "e"}},
		Trials: []Trial{
			// At: 1→10, 2→2, 3→11, 4→20, 5→20.
			{ID: "dip", MinNodes: 1, MaxNodes: 5, Curve: Curve{{Nodes: 1, Throughput: 10}, {Nodes: 2, Throughput: 2}, {Nodes: 4, Throughput: 20}, {Nodes: 5, Throughput: 20}}},
			// At: 1→9, 2→9.
			{ID: "flat", MinNodes: 1, MaxNodes: 2, Curve: Curve{{Nodes: 1, Throughput: 9}, {Nodes: 2, Throughput: 9}}},
		},
		Lookahead: time.Second,
	}
	res, err := Solve(p, &Settings{Formulation: FormulationPaper})
	require.NoError(t, err)
	require.Equal(t, []int{4, 1}, res.Counts(), "4 + 1 nodes give 20 + 9 = 29")
	require.InDelta(t, 29.0, res.Objective, 1e-9)
	require.Equal(t, StatusOptimal, res.Status)
}

func TestPaperMultiTypeUnsupported(t *testing.T) {
	p := &Problem{
		Nodes:     []Node{{ID: "a", Type: "a100"}, {ID: "b", Type: "h100"}},
		Trials:    []Trial{{ID: "t", MinNodes: 1, MaxNodes: 1, Curve: Curve{{Nodes: 1, Throughput: 1}}}},
		Lookahead: time.Minute,
	}
	_, err := Solve(p, &Settings{Formulation: FormulationPaper})
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrUnsupported), "error %q does not wrap ErrUnsupported", err)
	require.ErrorContains(t, err, "single node type")
	require.ErrorContains(t, err, "a100")
}

// HiGHS, stopped before it has an incumbent, still reports a "solution"
// of zeros; satisfiedBy is what tells it apart from a real one.
func TestMILPSatisfiedBy(t *testing.T) {
	var m milp
	a, b := m.addBinary(1), m.addBinary(2)
	m.addRow(1, []int{a, b}, []float64{1, 1}, 1) // exactly one of a, b
	require.False(t, m.satisfiedBy([]float64{0, 0}, 1e-6), "zeros break the row")
	require.True(t, m.satisfiedBy([]float64{0, 1}, 1e-6))
	require.False(t, m.satisfiedBy([]float64{0.5, 0.5}, 1e-6), "fractional binaries")
	require.False(t, m.satisfiedBy([]float64{1}, 1e-6), "wrong length")
}

// With a time limit too short for HiGHS, compact still answers: the
// incumbent (greedy or the current allocation) is feasible, so it is
// returned as such, never an error.
func TestCompactTimeLimitFallsBackToIncumbent(t *testing.T) {
	for seed := range uint64(20) {
		p := randomProblem(rand.New(rand.NewPCG(seed, 77)), 8, 24, 1+int(seed%2))
		res, err := Solve(p, &Settings{TimeLimit: time.Nanosecond})
		require.NoError(t, err, "seed %d", seed)
		checkResult(t, p, res)
		greedy, err := Solve(p, &Settings{Formulation: FormulationGreedy})
		require.NoError(t, err)
		require.GreaterOrEqual(t, res.Objective, greedy.Objective-1e-9*math.Max(1, math.Abs(greedy.Objective)), "seed %d", seed)
	}
}

func TestPaperEmptyPool(t *testing.T) {
	p := &Problem{
		Trials:    []Trial{{ID: "t", Nodes: []string{"gone"}, MinNodes: 1, MaxNodes: 2, Curve: Curve{{Nodes: 2, Throughput: 5}}}},
		Lookahead: time.Minute,
	}
	res, err := Solve(p, &Settings{Formulation: FormulationPaper})
	require.NoError(t, err)
	require.Equal(t, []int{0}, res.Counts())
	require.Equal(t, ReasonPoolTooSmall, res.Allocations[0].Reason)
}

// BenchmarkPaper20x256 times the paper formulation at the size BFTrainer's
// authors quote (CBC: about 60 s for 20 trials × 256 nodes).
func BenchmarkPaper20x256(b *testing.B) {
	p := randomProblem(rand.New(rand.NewPCG(20, 256)), 20, 256, 1)
	for b.Loop() {
		res, err := Solve(p, &Settings{Formulation: FormulationPaper, TimeLimit: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.SolveTime.Milliseconds()), "solve-ms")
		b.Logf("status %s objective %.6g", res.Status, res.Objective)
	}
}
