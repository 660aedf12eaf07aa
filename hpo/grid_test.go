package hpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func boolPtr(b bool) *bool { return &b }

func TestHarnessGridAndQuasiRandom(t *testing.T) {
	for _, alg := range []string{AlgorithmGrid, AlgorithmQuasiRandom} {
		for _, tc := range []struct{ maxTrials, maxConcurrent int }{{1, 1}, {5, 1}, {40, 8}, {100, 7}} {
			t.Run(fmt.Sprintf("%s/trials=%d,concurrent=%d", alg, tc.maxTrials, tc.maxConcurrent), func(t *testing.T) {
				checkHarness(t, Config{Algorithm: alg, Space: testSpace(), MaxTrials: tc.maxTrials, MaxConcurrent: tc.maxConcurrent, Mode: "min"})
			})
		}
	}
}

// A grid smaller than max_trials is visited whole, each point once, and
// the search ends when its last trial does.
func TestGridVisitsEveryPointOnceThenEnds(t *testing.T) {
	space := Space{
		{Name: "lr", Type: ParamFloat, Min: 1e-4, Max: 1e-1, Log: true},
		{Name: "layers", Type: ParamInt, Min: 1, Max: 3},
		{Name: "opt", Type: ParamChoice, Choices: []string{"sgd", "adam"}},
	}
	for _, shuffle := range []bool{false, true} {
		cfg := Config{Algorithm: AlgorithmGrid, Space: space, Seed: 3, MaxTrials: 100, MaxConcurrent: 4, Mode: "min",
			Settings: Settings{Grid: &GridSettings{Resolution: 4, Shuffle: boolPtr(shuffle)}}}
		_, created := run(t, cfg, func(Params) curve { return curve{Len: 2, Score: 1} })
		if len(created) != 4*3*2 {
			t.Fatalf("shuffle %v: %d trials, want the grid's 24", shuffle, len(created))
		}
		seen := map[string]bool{}
		lrs := map[float64]bool{}
		for _, c := range created {
			key := paramsString(c.Params)
			if seen[key] {
				t.Errorf("shuffle %v: %s visited twice", shuffle, key)
			}
			seen[key] = true
			lrs[c.Params["lr"].Num] = true
		}
		want := []float64{1e-4, 1e-3, 1e-2, 1e-1}
		for _, lr := range want {
			found := false
			for got := range lrs {
				if math.Abs(got-lr) <= 1e-12*lr {
					found = true
				}
			}
			if !found {
				t.Errorf("shuffle %v: lr %v not on the grid %v (log spacing, both ends)", shuffle, lr, lrs)
			}
		}
		if !shuffle && created[0].Params["lr"].Num != 1e-4 || !shuffle && created[1].Params["opt"].Str != "adam" {
			t.Errorf("unshuffled grid starts %v, %v: want lexicographic order, last parameter fastest", created[0], created[1])
		}
	}
}

func TestGridSettingsErrorsNameTheField(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmGrid, Space: testSpace(), Seed: 1, MaxTrials: 1, MaxConcurrent: 1, Mode: "min",
		Settings: Settings{Grid: &GridSettings{Resolution: 1}}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "search.grid.resolution") {
		t.Errorf("resolution 1: %v, want an error naming search.grid.resolution", err)
	}
	cfg.Settings = Settings{QuasiRandom: &QuasiRandomSettings{}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "search.quasirandom: settings of algorithm quasirandom, but search.algorithm is grid") {
		t.Errorf("another algorithm's section: %v", err)
	}
	cfg.Algorithm, cfg.Settings = AlgorithmGrid, Settings{}
	cfg.Space = Space{}
	for i := range 60 {
		cfg.Space = append(cfg.Space, Param{Name: fmt.Sprintf("x%d", i), Type: ParamFloat, Min: 0, Max: 1})
	}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "2^53") {
		t.Errorf("a grid of 5^60 points: %v, want an error", err)
	}
}

// The Halton points are stratified: 72 = 2³·3² consecutive points put one
// in each of the 8×9 boxes of the unit square (the scrambling permutes
// digits, which keeps that), where 72 random points leave about
// 72·(71/72)^72 ≈ 26 empty. Deterministic: fixed seeds.
func TestQuasiRandomIsStratified(t *testing.T) {
	space := Space{{Name: "x", Type: ParamFloat, Min: 0, Max: 1}, {Name: "y", Type: ParamFloat, Min: 0, Max: 1}}
	emptyBoxes := func(pts []Params) int {
		var boxes [8][9]bool
		for _, p := range pts {
			boxes[int(p["x"].Num*8)][min(int(p["y"].Num*9+1e-9), 8)] = true // 1/3 is not exact in binary
		}
		n := 0
		for _, row := range boxes {
			for _, b := range row {
				if !b {
					n++
				}
			}
		}
		return n
	}
	for seed := uint64(1); seed <= 5; seed++ {
		q := newQuasiRandom(Config{Algorithm: AlgorithmQuasiRandom, Space: space, Seed: seed, MaxTrials: 72, MaxConcurrent: 72, Mode: "min"})
		var halton []Params
		for _, a := range q.Initial() {
			if c, ok := a.(Create); ok {
				halton = append(halton, c.Params)
			}
		}
		rng := rand.New(newPCG(seed))
		var random []Params
		for range 72 {
			random = append(random, space.Sample(rng))
		}
		if h, r := emptyBoxes(halton), emptyBoxes(random); h != 0 || r < 10 {
			t.Errorf("seed %d: %d empty boxes with Halton (want 0), %d with random", seed, h, r)
		}
	}
}

func TestRadicalInverse(t *testing.T) {
	var got []float64
	for n := 1; n <= 7; n++ {
		got = append(got, radicalInverse(n, 2, nil))
	}
	if want := []float64{0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875}; !slices.Equal(got, want) {
		t.Errorf("base 2: %v, want %v", got, want)
	}
	if p := []int{prime(0), prime(1), prime(2), prime(9)}; !slices.Equal(p, []int{2, 3, 5, 29}) {
		t.Errorf("primes %v", p)
	}
}
