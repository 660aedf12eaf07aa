package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// BenchmarkRun replays a day of 200 churning nodes with 300 jobs (random
// concave curves up to 8 nodes, arrivals over the first half) under each
// policy, with the true curves and learning them through the JPA. It
// needs no shared data; the real-trace timings are in docs/benchmarks.md.
func BenchmarkRun(b *testing.B) {
	const day = 24 * 3600
	events := Churn(200, 0, day, 1800, 1800, 21)
	jobs := randomJobs(rand.New(rand.NewPCG(21, 1)), 300, day/2)
	for _, policy := range []allocator.Formulation{allocator.FormulationCompact, allocator.FormulationGreedy, allocator.FormulationEqual} {
		for _, curves := range []string{"oracle", "jpa"} {
			b.Run(fmt.Sprintf("%s/%s", policy, curves), func(b *testing.B) {
				var decisions int
				for b.Loop() {
					cfg := Config{Policy: policy}
					if curves == "jpa" {
						a, err := NewJPA(jobs, JPAOptions{Seed: 1})
						if err != nil {
							b.Fatal(err)
						}
						cfg = a.Attach(cfg)
					}
					res, err := Run(events, jobs, cfg)
					if err != nil {
						b.Fatal(err)
					}
					decisions = res.Metrics.Decisions
				}
				b.ReportMetric(float64(decisions), "decisions")
			})
		}
	}
}
