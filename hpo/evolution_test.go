package hpo

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestEvolutionSettingsErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		s    EvolutionSettings
		want string
	}{
		{EvolutionSettings{Population: 1}, "search.evolution.population: 1"},
		{EvolutionSettings{Population: 501}, "search.evolution.population: 501"},
		{EvolutionSettings{SampleSize: -1}, "search.evolution.sample_size: -1"},
		{EvolutionSettings{SampleSize: 21}, "search.evolution.sample_size: 21 must be in 1..population 20"},
		{EvolutionSettings{Population: 4, SampleSize: 5}, "search.evolution.sample_size: 5 must be in 1..population 4"},
	} {
		cfg := Config{Algorithm: AlgorithmEvolution, Space: testSpace(), MaxTrials: 5, MaxConcurrent: 1, Mode: "min", Settings: Settings{Evolution: &tc.s}}
		if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one with %q", tc.s, err, tc.want)
		}
	}
	for _, tc := range []struct {
		s         *EvolutionSettings
		pop, size int
	}{
		{nil, 20, 5},
		{&EvolutionSettings{Population: 3}, 3, 3},
		{&EvolutionSettings{Population: 50, SampleSize: 10}, 50, 10},
	} {
		if pop, size := tc.s.sizes(); pop != tc.pop || size != tc.size {
			t.Errorf("%+v: population %d, sample_size %d; want %d, %d", tc.s, pop, size, tc.pop, tc.size)
		}
	}
}

// evolutionWith returns an evolution searcher whose population holds
// members with these metrics, oldest first (trial IDs m1, m2, …).
func evolutionWith(t *testing.T, set EvolutionSettings, mode string, metrics ...float64) *evolution {
	t.Helper()
	cfg := Config{Algorithm: AlgorithmEvolution, Space: testSpace(), Seed: 1, MaxTrials: 100, MaxConcurrent: 1, Mode: mode, Settings: Settings{Evolution: &set}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := newEvolution(cfg)
	rng := rand.New(rand.NewPCG(2, 3))
	for i, m := range metrics {
		e.st.Population = append(e.st.Population, member{Trial: fmt.Sprintf("m%d", i+1), Params: cfg.Space.Sample(rng), result: result{Metric: m}})
	}
	return e
}

// The tournament's parent is the best of S members drawn without
// replacement. With S = 2 of 4 members, hand-counted over the 6 pairs:
// the best is in 3 of them, the second best wins 2 (with the third, with
// the worst), the third 1, the worst none.
func TestEvolutionTournamentPicksTheBestOfTheSample(t *testing.T) {
	for _, mode := range []string{"min", "max"} {
		metrics := []float64{3, 1, 4, 2} // min: m2 best, then m4, m1, m3
		want := map[string]float64{"m2": 3. / 6, "m4": 2. / 6, "m1": 1. / 6, "m3": 0}
		if mode == "max" {
			want = map[string]float64{"m3": 3. / 6, "m1": 2. / 6, "m4": 1. / 6, "m2": 0}
		}
		e := evolutionWith(t, EvolutionSettings{Population: 4, SampleSize: 2}, mode, metrics...)
		const draws = 60_000
		got := map[string]float64{}
		for range draws {
			got[e.tournament().Trial] += 1. / draws
		}
		for id, p := range want {
			if math.Abs(got[id]-p) > 0.01 {
				t.Errorf("%s: %s parent %.3f of the time, want %.3f", mode, id, got[id], p)
			}
		}
	}
	// S = P: always the best; a stopped member ranks below every completed
	// one, however good its metric.
	e := evolutionWith(t, EvolutionSettings{Population: 4, SampleSize: 4}, "min", 3, 1, 4, 2)
	e.st.Population[1].Stopped = true
	for range 100 {
		if got := e.tournament().Trial; got != "m4" {
			t.Fatalf("S = P, m2 stopped: parent %s, want m4, the best completed", got)
		}
	}
}

// A finished trial joins as the youngest member, and past P members the
// oldest dies, however good; failed trials and trials without a metric
// never join.
func TestEvolutionTheOldestDies(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmEvolution, Space: testSpace(), Seed: 3, MaxTrials: 10, MaxConcurrent: 1, Mode: "min",
		Settings: Settings{Evolution: &EvolutionSettings{Population: 3}}}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := s.(*evolution)
	e.Initial()
	for _, step := range []struct {
		end  func(id string) []Action
		want []string
	}{
		{func(id string) []Action { return e.TrialFinished(id, 0.1, OutcomeCompleted) }, []string{"t00001"}}, // the best of all
		{func(id string) []Action { return e.TrialFinished(id, 5, OutcomeCompleted) }, []string{"t00001", "t00002"}},
		{func(id string) []Action { return e.TrialFailed(id) }, []string{"t00001", "t00002"}},
		{func(id string) []Action { return e.TrialFinished(id, math.NaN(), OutcomeCompleted) }, []string{"t00001", "t00002"}},
		{func(id string) []Action { return e.TrialFinished(id, 7, OutcomeStopped) }, []string{"t00001", "t00002", "t00005"}},
		{func(id string) []Action { return e.TrialFinished(id, 6, OutcomeCompleted) }, []string{"t00002", "t00005", "t00006"}},
		{func(id string) []Action { return e.TrialFinished(id, 9, OutcomeCompleted) }, []string{"t00005", "t00006", "t00007"}},
	} {
		id := e.st.Outstanding[0]
		step.end(id)
		var got []string
		for _, m := range e.st.Population {
			got = append(got, m.Trial)
		}
		if !slices.Equal(got, step.want) {
			t.Errorf("after %s ended: population %v, want %v", id, got, step.want)
		}
	}
}

// differences lists the parameters in which a and b differ.
func differences(s Space, a, b Params) []string {
	var out []string
	for _, d := range s {
		if a[d.Name] != b[d.Name] {
			out = append(out, d.Name)
		}
	}
	return out
}

// The first P trials are random samples; each later one is its parent
// with exactly one parameter changed, drawn uniformly among those with
// more than one value (never the constant ones); an integer moves at
// least one, a choice to another, an architecture one bit.
func TestEvolutionChildIsOneMutation(t *testing.T) {
	space := append(archSpace(),
		Param{Name: "const", Type: ParamFloat, Min: 2, Max: 2},
		Param{Name: "one", Type: ParamChoice, Choices: []string{"x"}},
		Param{Name: "single", Type: ParamInt, Min: 3.5, Max: 4.5})
	cfg := Config{Algorithm: AlgorithmEvolution, Space: space, Seed: 5, MaxTrials: 3000, MaxConcurrent: 1, Mode: "min",
		Settings: Settings{Evolution: &EvolutionSettings{Population: 4, SampleSize: 4}}}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := s.(*evolution)
	changed := map[string]int{}
	acts := e.Initial()
	for n := 1; len(acts) > 0; n++ {
		c, ok := acts[0].(Create)
		if !ok {
			break
		}
		if n > 4 {
			parent := e.tournament() // S = P: the best, whatever the draw
			diff := differences(space, parent.Params, c.Params)
			if len(diff) != 1 {
				t.Fatalf("trial %d %v: differs from the best member %v in %v, want one parameter", n, c.Params, parent.Params, diff)
			}
			changed[diff[0]]++
			switch name := diff[0]; name {
			case "layers", "width":
				if math.Abs(c.Params[name].Num-parent.Params[name].Num) < 1 {
					t.Fatalf("trial %d: %s moved from %v to %v", n, name, parent.Params[name], c.Params[name])
				}
			case "arch":
				if d := ones(c.Params["arch"].Str) - ones(parent.Params["arch"].Str); d != 1 && d != -1 {
					t.Fatalf("trial %d: arch %v from %v, not one bit flipped", n, c.Params["arch"], parent.Params["arch"])
				}
			}
		} else if n > 1 && len(e.st.Population) > 0 {
			if diff := differences(space, e.st.Population[0].Params, c.Params); len(diff) < 3 {
				t.Fatalf("trial %d of the random start differs from trial 1 in %v only", n, diff)
			}
		}
		// Random metrics: the best keeps changing.
		acts = e.TrialFinished(c.ID, float64((n*7919)%1009), OutcomeCompleted)
	}
	for _, name := range []string{"lr", "dropout", "layers", "width", "opt", "arch"} {
		if n := changed[name]; n < 400 || n > 600 { // 2,996 children over 6 parameters
			t.Errorf("%s mutated %d times of 2,996, want about 500 (uniform over the 6 mutable parameters)", name, n)
		}
	}
	if len(changed) != 6 {
		t.Errorf("mutated %v, want only the 6 mutable parameters", changed)
	}
}

// A number's mutation is a Gaussian step of 0.1 of its (log) range,
// inside it: most steps are small, none leaves the range.
func TestEvolutionMutateNumber(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	lr := Param{Name: "lr", Type: ParamFloat, Min: 1e-5, Max: 1, Log: true}
	var within int
	for range 10_000 {
		v := lr.mutateNumber(rng, Float(1e-3))
		if v.Num < 1e-5 || v.Num > 1 {
			t.Fatalf("%v outside the range", v)
		}
		if math.Abs(math.Log10(v.Num)+3) <= 0.5 { // one σ: 0.1 of 5 decades
			within++
		}
	}
	if within < 6500 || within > 7100 {
		t.Errorf("%d of 10,000 steps within one σ, want about 6,830", within)
	}
	n := Param{Name: "n", Type: ParamInt, Min: 1, Max: 3}
	for range 100 {
		if v := n.mutateNumber(rng, Float(3)); v.Num != 2 && v.Num != 1 {
			t.Fatalf("int 3 of 1..3 mutated to %v", v)
		}
	}
}

// evolution as the sampler of a stopping searcher: every trial's first
// metric reaches it (as stopped ones), and the harness passes.
func TestHarnessEvolutionAsSampler(t *testing.T) {
	for _, js := range []string{
		`{"asha": {"min_budget": 200, "reduction_factor": 2, "max_budget": 800, "variant": "promotion", "sampler": "evolution"}, "evolution": {"population": 5}}`,
		`{"median": {"interval": 200, "min_trials": 2, "sampler": "evolution"}, "evolution": {"population": 5, "sample_size": 2}}`,
	} {
		var set Settings
		if err := json.Unmarshal([]byte(js), &set); err != nil {
			t.Fatal(err)
		}
		alg := AlgorithmASHA
		if set.Median != nil {
			alg = AlgorithmMedian
		}
		checkSchedule(t, Config{Algorithm: alg, Space: testSpace(), MaxTrials: 40, MaxConcurrent: 4, Mode: "min", Settings: set})
	}
}

func TestEvolutionRestoreRejects(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmEvolution, Space: testSpace(), Seed: 1, MaxTrials: 10, MaxConcurrent: 2, Mode: "min",
		Settings: Settings{Evolution: &EvolutionSettings{Population: 2}}}
	s, _ := NewSearcher(cfg)
	s.Initial()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreSearcher(cfg, snap); err != nil {
		t.Fatalf("its own snapshot: %v", err)
	}
	mem := func(metric any, params map[string]any) map[string]any {
		return map[string]any{"trial": "t1", "metric": metric, "params": params}
	}
	good := map[string]any{"lr": 0.01, "dropout": 0.1, "layers": 3, "width": 64, "opt": "adam"}
	outside := map[string]any{"lr": 7.0, "dropout": 0.1, "layers": 3, "width": 64, "opt": "adam"}
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		ok   bool
	}{
		{"a good member", func(m map[string]any) { m["population"] = []any{mem(1, good)} }, true},
		{"pending short", func(m map[string]any) { m["pending"] = m["pending"].([]any)[:1] }, false},
		{"population large", func(m map[string]any) { m["population"] = []any{mem(1, good), mem(2, good), mem(3, good)} }, false},
		{"metric", func(m map[string]any) { m["population"] = []any{mem("x", good)} }, false},
		{"params outside", func(m map[string]any) { m["population"] = []any{mem(1, outside)} }, false},
	} {
		var env struct {
			Type  string         `json:"type"`
			State map[string]any `json:"state"`
		}
		if err := json.Unmarshal(snap, &env); err != nil {
			t.Fatal(err)
		}
		tc.edit(env.State)
		b, _ := json.Marshal(env)
		if _, err := RestoreSearcher(cfg, b); (err == nil) != tc.ok {
			t.Errorf("%s: restore error %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// nkLandscape is Kauffman's NK landscape on n bits: bit i contributes
// table[i][bits i..i+k (cyclic)], values uniform on [0, 1), averaged.
// Rugged for k > 0 (k = 0: one optimum). fitness averages it over an
// architecture and its reversal, which the fake takes as the same: so it
// is a function of architectures, and a bit flip changes at most 2(k+1)
// of its terms, local like a real space's edits.
type nkLandscape struct {
	n, k  int
	table [][]float64
}

func newNK(n, k int, seed uint64) nkLandscape {
	rng := rand.New(rand.NewPCG(seed, 0x6e6b))
	m := nkLandscape{n: n, k: k}
	for range n {
		row := make([]float64, 1<<(k+1))
		for j := range row {
			row[j] = rng.Float64()
		}
		m.table = append(m.table, row)
	}
	return m
}

func (m nkLandscape) value(bits []int) float64 {
	var s float64
	for i := range m.n {
		idx := 0
		for j := 0; j <= m.k; j++ {
			idx = idx<<1 | bits[(i+j)%m.n]
		}
		s += m.table[i][idx]
	}
	return s / float64(m.n)
}

func (m nkLandscape) fitness(arch string) float64 {
	bits := bitArchs{m.n}.must(arch)
	rev := slices.Clone(bits)
	slices.Reverse(rev)
	return (m.value(bits) + m.value(rev)) / 2
}

// nasMedians runs each algorithm for 200 trials on 30 NK landscapes of
// 20 bits (k = 2), one seed each, and returns its median best fitness and
// the seeds on which it beat random search.
func nasMedians(t *testing.T, concurrent int, algs ...string) (median map[string]float64, wins map[string]int) {
	t.Helper()
	const seeds, n, k = 30, 20, 2
	best := map[string][]float64{}
	for seed := range uint64(seeds) {
		m := newNK(n, k, seed+100)
		f := func(p Params) float64 { return -m.fitness(p["arch"].Str) }
		for _, alg := range append([]string{AlgorithmRandom}, algs...) {
			cfg := Config{Algorithm: alg, Space: Space{bitsParam("arch", n)}, Seed: seed + 1, MaxTrials: 200, MaxConcurrent: concurrent, Mode: "min"}
			best[alg] = append(best[alg], -bestOf(drive(t, cfg, f, false).losses))
		}
	}
	median, wins = map[string]float64{}, map[string]int{}
	for alg, b := range best {
		for i := range b {
			if b[i] > best[AlgorithmRandom][i] {
				wins[alg]++
			}
		}
		sorted := slices.Sorted(slices.Values(b))
		median[alg] = sorted[len(sorted)/2]
	}
	return median, wins
}

// Regularized evolution finds fitter architectures than random search in
// 200 trials, in the median over 30 NK landscapes, alone and with 8
// trials at once.
func TestEvolutionBeatsRandom(t *testing.T) {
	for _, par := range []int{1, 8} {
		median, wins := nasMedians(t, par, AlgorithmEvolution)
		t.Logf("concurrent %d: median best fitness evolution %.4f, random %.4f; evolution better on %d of 30", par, median[AlgorithmEvolution], median[AlgorithmRandom], wins[AlgorithmEvolution])
		if !(median[AlgorithmEvolution] > median[AlgorithmRandom]+0.02) || wins[AlgorithmEvolution] < 20 {
			t.Errorf("concurrent %d: evolution's median %.4f, random's %.4f, evolution better on %d of 30; want it 0.02 better, on 20 or more",
				par, median[AlgorithmEvolution], median[AlgorithmRandom], wins[AlgorithmEvolution])
		}
	}
}
