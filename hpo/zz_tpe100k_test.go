package hpo

import (
	"math/rand/v2"
	"testing"
)

func TestZZPromotionTPE100k(t *testing.T) {
	for _, set := range []Settings{
		{Hyperband: &HyperbandSettings{MinBudget: 100, MaxBudget: 2700, Variant: VariantPromotion, Sampler: "tpe"}},
		{ASHA: &ASHASettings{MinBudget: 100, MaxBudget: 2700, Variant: VariantPromotion, Sampler: "tpe"}},
	} {
		alg := AlgorithmASHA
		if set.Hyperband != nil {
			alg = AlgorithmHyperband
		}
		cfg := Config{Algorithm: alg, Space: testSpace(), Seed: 1, MaxTrials: 100_000, MaxConcurrent: 8, Mode: "min", Settings: set}
		s, err := NewSearcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		type job struct{ id string; b float64 }
		var q []job
		take := func(acts []Action) {
			for _, a := range acts {
				switch a := a.(type) {
				case Create:
					q = append(q, job{a.ID, a.Budget})
				case Continue:
					q = append(q, job{a.TrialID, a.Budget})
				}
			}
		}
		take(s.Initial())
		for len(q) > 0 {
			j := q[0]
			q = q[1:]
			take(s.TrialFinished(j.id, rng.Float64()+270/j.b, OutcomeCompleted))
		}
		snap, _ := s.Snapshot()
		t.Logf("%s+tpe: %d bytes", alg, len(snap))
	}
}
