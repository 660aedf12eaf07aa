package sim

import (
	"testing"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/jpa"
)

// The JPA on mixed pools, as production runs it (jpa.Advisor per node
// type, the efficiency objective): learning each job's curve on the
// types it ran on, with and without a GPU-ratio table (a worker's
// --gpu-ratios: Gavel's own, as a site would have), against the oracle
// told every type's curve and the oracle told one curve for all types
// (type-blind). Work rate (reference node-seconds per second) on the
// saturated pools of TestTypeAwareBeatsTypeBlindOnWorkRate. Asserted
// (simulated, deterministic): with the ratios the JPA does at least as
// well as the type-blind oracle on every instance and reaches 95 % of the
// type-aware oracle on average. First run: without ratios 0.845–1.001 of
// the oracle (below type-blind on one instance of eight), with them
// 0.946–1.009, mean 0.982.
func TestJPAOnMixedPools(t *testing.T) {
	gavel := loadGavel(t)
	f, err := data.Open(data.Prefix + data.Gavel)
	if err != nil {
		t.Fatal(err)
	}
	speeds, err := jpa.ParseGavel(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	var n int
	for _, mix := range heteroMixes {
		for seed := uint64(1); seed <= 2; seed++ {
			in := heteroInstance{mix: mix, seed: seed, saturated: true}
			events, types, workload := heteroPool(t, gavel, in)
			run := func(cfg Config) Metrics {
				cfg.NodeTypes, cfg.Objective = types, allocator.ObjectiveEfficiency
				res, err := Run(events, workload, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return res.Metrics
			}
			learn := func(speeds *jpa.TypeSpeeds) Metrics {
				a, err := NewJPA(workload, JPAOptions{Seed: seed, Speeds: speeds})
				if err != nil {
					t.Fatal(err)
				}
				return run(a.Attach(Config{}))
			}
			mean, err := TypeBlind(workload, "mean")
			if err != nil {
				t.Fatal(err)
			}
			oracle, blind := run(Config{}), run(Config{Curves: mean})
			jpaAlone, jpaRatios := learn(nil), learn(speeds)
			t.Logf("%-34s work rate: oracle %6.2f, type-blind %6.2f, jpa %6.2f (%.3f of the oracle's), jpa with GPU ratios %6.2f (%.3f)",
				in, oracle.WorkRate, blind.WorkRate, jpaAlone.WorkRate, jpaAlone.WorkRate/oracle.WorkRate, jpaRatios.WorkRate, jpaRatios.WorkRate/oracle.WorkRate)
			if jpaRatios.WorkRate < blind.WorkRate {
				t.Errorf("%s: the JPA with GPU ratios trains %.2f reference nodes' work, less than the type-blind oracle's %.2f", in, jpaRatios.WorkRate, blind.WorkRate)
			}
			sum += jpaRatios.WorkRate / oracle.WorkRate
			n++
		}
	}
	t.Logf("the JPA with GPU ratios: %.3f of the type-aware oracle's work rate (mean of %d instances)", sum/float64(n), n)
	if sum/float64(n) < 0.95 {
		t.Errorf("the JPA with GPU ratios reaches %.3f of the oracle's work rate on average, want ≥ 0.95", sum/float64(n))
	}
}
