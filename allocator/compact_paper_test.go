package allocator

import (
	"fmt"
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
