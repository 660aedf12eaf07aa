package allocator_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/internal/benchgen"
)

// BenchmarkSolveLarge times issue 14's size, 10,000 trials on 16,384
// nodes, of one node type and of four (benchgen's Types), with the
// default gap (1e-9) and with a relative gap of 1e-6.
func BenchmarkSolveLarge(b *testing.B) {
	curves := realCurves(b)
	for _, types := range []int{1, 4} {
		p, err := benchgen.Problem(benchgen.Config{Trials: 10000, Nodes: 16384, Curves: curves, Types: types}, 1)
		require.NoError(b, err)
		for _, run := range []struct {
			f   allocator.Formulation
			gap float64
		}{{allocator.FormulationCompact, 0}, {allocator.FormulationCompact, 1e-6}, {allocator.FormulationGreedy, 0}} {
			name := fmt.Sprintf("types=%d/%s", types, run.f)
			if run.gap > 0 {
				name += fmt.Sprintf("/gap=%g", run.gap)
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if _, err := allocator.Solve(p, &allocator.Settings{Formulation: run.f, TimeLimit: 10 * time.Second, RelGap: run.gap}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
