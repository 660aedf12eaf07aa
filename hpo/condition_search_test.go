package hpo

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// condScript scores condSpace's points: sgd with high momentum and two
// layers is best, so the searchers that learn have somewhere to go.
func condScript(p Params) curve {
	score := math.Abs(math.Log10(p["lr"].Num) + 2)
	if p["optimizer"].Str == "sgd" {
		score += 1 - p["momentum"].Num
	} else {
		score += 1 + 10*(0.999-p["beta1"].Num)
	}
	return curve{Len: 1 + int(p["n_layers"].Num), Score: score + math.Abs(p["n_layers"].Num-2)}
}

// condSearchers are the algorithms (with settings, as a spec's JSON) that
// search conditional spaces, stopping searchers through their samplers.
var condSearchers = []struct{ alg, settings string }{
	{AlgorithmRandom, `{}`},
	{AlgorithmQuasiRandom, `{}`},
	{AlgorithmGrid, `{"grid": {"resolution": 3}}`},
	{AlgorithmGrid, `{"grid": {"resolution": 2, "shuffle": false}}`},
	{AlgorithmEvolution, `{"evolution": {"population": 6, "sample_size": 3}}`},
	{AlgorithmLocal, `{"local": {"step": 0.25}}`},
	{AlgorithmASHA, `{"asha": {"min_budget": 200, "reduction_factor": 2, "sampler": "evolution"}, "evolution": {"population": 4}}`},
	{AlgorithmHyperband, `{"hyperband": {"min_budget": 100, "max_budget": 400, "reduction_factor": 2, "variant": "promotion", "sampler": "grid"}, "grid": {"resolution": 3}}`},
}

// Every searcher that supports conditional spaces proposes exactly the
// active parameters (the harness's Contains, and condWant's names), with
// and without a forbidden clause, snapshots surviving every event.
func TestSearchersConditional(t *testing.T) {
	forbid := []Forbidden{{All: []Condition{{"optimizer", []string{"sgd"}}, {"n_layers", []string{"3"}}}}}
	for _, tc := range condSearchers {
		var set Settings
		if err := json.Unmarshal([]byte(tc.settings), &set); err != nil {
			t.Fatal(err)
		}
		for _, f := range [][]Forbidden{nil, forbid} {
			t.Run(fmt.Sprintf("%s/%s/forbidden=%d", tc.alg, tc.settings, len(f)), func(t *testing.T) {
				cfg := Config{Algorithm: tc.alg, Space: condSpace(), Forbidden: f, Seed: 42, MaxTrials: 60, MaxConcurrent: 4, Mode: "min", Settings: set}
				sched, created := run(t, cfg, condScript)
				if again, _ := run(t, cfg, condScript); again != sched {
					t.Error("same seed, different schedules")
				}
				sets := map[string]bool{}
				for _, c := range created {
					checkCondParams(t, c.Params)
					if len(f) > 0 && f[0].Forbids(cfg.Space, c.Params) {
						t.Errorf("%s: forbidden %v", c.ID, c.Params)
					}
					sets[strings.Join(c.Params.Names(), ",")] = true
				}
				// The samplers see every set of active parameters (a grid
				// of resolution 2 has no n_layers = 2, and an unshuffled
				// one's first points all start alike); the learners see
				// some.
				want := 6
				if len(f) > 0 {
					want = 5 // sgd with three layers is forbidden
				}
				if strings.Contains(tc.settings, `"shuffle": false`) || !strings.Contains("random quasirandom grid", tc.alg) {
					want = min(want, 3)
				}
				if len(sets) < want {
					t.Errorf("%d sets of active parameters, want %d: %v", len(sets), want, sets)
				}
			})
		}
	}
}

// A conditional grid holds the active combinations only, each once: at
// resolution 3, (sgd: lr × momentum = 9, adam: lr × beta1 × beta2 = 18)
// × (1 layer: 1, 2: width_2 = 3, 3: width_2 × width_3 = 9) = 351.
func TestGridConditionalCombinations(t *testing.T) {
	for _, f := range [][]Forbidden{nil, {{All: []Condition{{"optimizer", []string{"sgd"}}, {"n_layers", []string{"3"}}}}}} {
		cfg := Config{Algorithm: AlgorithmGrid, Space: condSpace(), Forbidden: f, Seed: 1, MaxTrials: 1000, MaxConcurrent: 1000, Mode: "min",
			Settings: Settings{Grid: &GridSettings{Resolution: 3}}}
		s, err := NewSearcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, a := range s.Initial() {
			if c, ok := a.(Create); ok {
				checkCondParams(t, c.Params)
				b, _ := json.Marshal(c.Params)
				if seen[string(b)] {
					t.Errorf("grid point %s twice", b)
				}
				seen[string(b)] = true
			}
		}
		want := 351
		if f != nil {
			want -= 9 * 9 // sgd's 9 × three layers' 9
		}
		if len(seen) != want {
			t.Errorf("forbidden %v: %d grid points, want %d", f, len(seen), want)
		}
	}
}

func TestConditionalRefusedNamingTheAlgorithm(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmPBT, Space: condSpace(), MaxTrials: 10, MaxConcurrent: 2, Mode: "min",
		Settings: Settings{PBT: &PBTSettings{Interval: 100, MaxBudget: 400}}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "algorithm: pbt does not search a conditional space") {
		t.Errorf("pbt: %v", err)
	}
	cfg = Config{Algorithm: AlgorithmPBT, Space: testSpace(), MaxTrials: 10, MaxConcurrent: 2, Mode: "min",
		Forbidden: []Forbidden{{All: []Condition{{"opt", []string{"bad"}}}}},
		Settings:  Settings{PBT: &PBTSettings{Interval: 100, MaxBudget: 400}}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "algorithm: pbt does not search forbidden clauses") {
		t.Errorf("pbt with forbidden clauses: %v", err)
	}
	// Everything forbidden is refused up front.
	cfg = Config{Algorithm: AlgorithmRandom, Space: condSpace(), MaxTrials: 10, MaxConcurrent: 2, Mode: "min",
		Forbidden: []Forbidden{{All: []Condition{{"n_layers", []string{"1", "2", "3"}}}}}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "forbidden: every configuration drawn was forbidden") {
		t.Errorf("all forbidden: %v", err)
	}
	// A forbidden point is refused.
	cfg.Forbidden = []Forbidden{{All: []Condition{{"n_layers", []string{"3"}}}}}
	cfg.Points = []Params{{"optimizer": String("adam"), "lr": Float(0.1), "beta1": Float(0.9), "beta2": String("0.99"),
		"n_layers": Float(3), "width_2": Float(32), "width_3": Float(32)}}
	if _, err := NewSearcher(cfg); err == nil || err.Error() != "points[0]: forbidden by forbidden[0] (n_layers = 3)" {
		t.Errorf("forbidden point: %v", err)
	}
}
