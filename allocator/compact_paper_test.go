package allocator

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCompactEqualsPaper: on one node type with no migration, the compact
// MCKP is the paper MILP with the node variables projected out, so both
// must prove the same optimum (docs/allocator.md). 200 seeded instances up
// to 8 trials × 24 nodes, with running trials, departed nodes, noisy
// non-monotone curves and all three objectives.
func TestCompactEqualsPaper(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
		trials, nodes := 1+rng.IntN(8), 1+rng.IntN(24)
		p := randomProblem(rng, trials, nodes, 1)
		name := fmt.Sprintf("seed=%d/%dx%d/%s", seed, trials, nodes, p.objective())
		paper, err := Solve(p, &Settings{Formulation: FormulationPaper, TimeLimit: time.Minute})
		require.NoError(t, err, name)
		compact, err := Solve(p, nil)
		require.NoError(t, err, name)
		require.Equal(t, StatusOptimal, paper.Status, name)
		require.Equal(t, StatusOptimal, compact.Status, name)
		require.Truef(t, closeRel(paper.Objective, compact.Objective, 1e-6),
			"%s: objectives differ (-paper +compact):\n-%v %v\n+%v %v", name, paper.Objective, paper.Counts(), compact.Objective, compact.Counts())
	}
}

// TestCompactEqualsBruteForce covers what paper cannot: pools of up to
// three node types (one type per trial, a capacity per type, subgradient
// prices), on 500 tiny seeded instances.
func TestCompactEqualsBruteForce(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 0xb007e))
		p := randomProblem(rng, 1+rng.IntN(4), rng.IntN(9), 1+rng.IntN(3))
		in, err := prepare(p)
		require.NoError(t, err)
		_, want := bruteForce(in)
		got, err := Solve(p, nil)
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, StatusOptimal, got.Status, "seed %d", seed)
		require.Truef(t, closeRel(want, got.Objective, 1e-6), "seed %d: brute force %v, compact %v %v", seed, want, got.Objective, got.Counts())
	}
}

func TestSettingsAndCurveAmbiguityRejected(t *testing.T) {
	p := &Problem{
		Nodes:     []Node{{ID: "n1"}},
		Trials:    []Trial{{ID: "t1", MinNodes: 1, MaxNodes: 1, Curve: Curve{{Nodes: 1, Throughput: 5}}}},
		Lookahead: time.Minute,
	}
	for _, s := range []*Settings{{TimeLimit: -time.Second}, {RelGap: math.NaN()}, {RelGap: 1}} {
		_, err := Solve(p, s)
		require.ErrorIs(t, err, ErrInvalidProblem)
		require.ErrorContains(t, err, "settings:")
	}
	p.Trials[0].CurvesByType = map[string]Curve{"": {{Nodes: 1, Throughput: 5}}}
	require.ErrorContains(t, p.Validate(), `trial "t1": curve and curves_by_type are both set`)
}
