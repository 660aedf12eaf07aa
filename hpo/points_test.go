package hpo

import (
	"strings"
	"testing"
)

// Enqueued points are the first trials, in order, for every algorithm;
// then the algorithm proposes as it would have.
func TestPointsComeFirst(t *testing.T) {
	pts := []Params{
		{"lr": Float(0.01), "dropout": Float(0.1), "layers": Float(3), "width": Float(64), "opt": String("adam")},
		{"lr": Float(0.001), "dropout": Float(0.2), "layers": Float(2), "width": Float(128), "opt": String("sgd")},
	}
	for _, alg := range Algorithms() {
		cfg := Config{Algorithm: alg, Space: testSpace(), Seed: 5, MaxTrials: 6, MaxConcurrent: 3, Mode: "min", Points: pts}
		switch alg {
		case AlgorithmASHA:
			cfg.Settings.ASHA = &ASHASettings{MinBudget: 200}
		case AlgorithmHyperband:
			cfg.Settings.Hyperband = &HyperbandSettings{MinBudget: 200, MaxBudget: 800}
		case AlgorithmPBT:
			// Large enough that members copy others until max_trials exist.
			cfg.Settings.PBT = &PBTSettings{Interval: 200, MaxBudget: 2000}
		case AlgorithmMedian:
			cfg.Settings.Median = &MedianSettings{Interval: 200}
		}
		_, created := run(t, cfg, testScript)
		if len(created) != 6 {
			t.Errorf("%s: %d trials, want 6", alg, len(created))
			continue
		}
		for i, p := range pts {
			if paramsString(created[i].Params) != paramsString(p) {
				t.Errorf("%s: trial %d is %v, want the enqueued %v", alg, i+1, created[i].Params, p)
			}
		}
		if paramsString(created[2].Params) == paramsString(pts[0]) {
			t.Errorf("%s: the enqueued point again after the queue", alg)
		}
	}
	cfg := Config{Algorithm: AlgorithmRandom, Space: testSpace(), Seed: 5, MaxTrials: 6, MaxConcurrent: 3, Mode: "min",
		Points: []Params{{"lr": Float(7)}}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "points[0]") {
		t.Errorf("a point outside the space: %v, want an error naming points[0]", err)
	}
}

// Warm start: TPE learns from an earlier campaign's results at once (no
// random start-up trials left), the others ignore them, and entries
// outside the space are skipped.
func TestHistoryWarmStartsTPE(t *testing.T) {
	space := Space{{Name: "x", Type: ParamFloat, Min: 0, Max: 10}}
	var hist []Observation
	for i := range 20 {
		x := float64(i) / 2
		hist = append(hist, Observation{Params: Params{"x": Float(x)}, Metric: (x - 7) * (x - 7)})
	}
	hist = append(hist, Observation{Params: Params{"x": Float(99)}, Metric: -1e9}) // outside: ignored
	cfg := Config{Algorithm: AlgorithmTPE, Space: space, Seed: 3, MaxTrials: 8, MaxConcurrent: 8, Mode: "min",
		Settings: Settings{TPE: &TPESettings{NStartupTrials: 10}}, History: hist}
	near := func(cfg Config) int {
		s, err := NewSearcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range s.Initial() {
			if c, ok := a.(Create); ok && c.Params["x"].Num > 5 && c.Params["x"].Num < 9 {
				n++
			}
		}
		return n
	}
	warm := near(cfg)
	cfg.History = nil
	cold := near(cfg)
	if warm < 6 || warm <= cold {
		t.Errorf("first 8 proposals within 5..9 (the optimum 7): %d warm-started, %d cold; want the warm start to aim there", warm, cold)
	}
}
