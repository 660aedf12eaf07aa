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
			{ID: "dip", MinNodes: 1, MaxNodes: 5, Curve: Curve{{1, 10}, {2, 2}, {4, 20}, {5, 20}}},
			// At: 1→9, 2→9.
			{ID: "flat", MinNodes: 1, MaxNodes: 2, Curve: Curve{{1, 9}, {2, 9}}},
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
		Trials:    []Trial{{ID: "t", MinNodes: 1, MaxNodes: 1, Curve: Curve{{1, 1}}}},
		Lookahead: time.Minute,
	}
	_, err := Solve(p, &Settings{Formulation: FormulationPaper})
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrUnsupported), "error %q does not wrap ErrUnsupported", err)
	require.ErrorContains(t, err, "single node type")
	require.ErrorContains(t, err, "a100")
}

// TestPaperTimeLimitWithoutSolution: HiGHS stopped before any incumbent
// reports a "solution" of zeros; the paper formulation must answer
// ErrSolver instead of decoding it (or, if HiGHS was quick, a valid result).
func TestPaperTimeLimitWithoutSolution(t *testing.T) {
	p := randomProblem(rand.New(rand.NewPCG(20, 256)), 20, 96, 1)
	res, err := Solve(p, &Settings{Formulation: FormulationPaper, TimeLimit: time.Nanosecond})
	if err != nil {
		require.ErrorIs(t, err, ErrSolver)
		return
	}
	checkResult(t, p, res)
}

func TestPaperEmptyPool(t *testing.T) {
	p := &Problem{
		Trials:    []Trial{{ID: "t", Nodes: []string{"gone"}, MinNodes: 1, MaxNodes: 2, Curve: Curve{{2, 5}}}},
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
