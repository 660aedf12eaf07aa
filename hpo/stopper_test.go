package hpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func ashaConfig(maxTrials, maxConcurrent int) Config {
	return Config{Algorithm: AlgorithmASHA, Space: testSpace(), Seed: 42, MaxTrials: maxTrials, MaxConcurrent: maxConcurrent, Mode: "min",
		Settings: Settings{ASHA: &ASHASettings{MinBudget: 200, ReductionFactor: 2}}}
}

func hyperbandConfig(maxTrials, maxConcurrent int) Config {
	return Config{Algorithm: AlgorithmHyperband, Space: testSpace(), Seed: 42, MaxTrials: maxTrials, MaxConcurrent: maxConcurrent, Mode: "min",
		Settings: Settings{Hyperband: &HyperbandSettings{MinBudget: 200, MaxBudget: 800, ReductionFactor: 2}}}
}

func medianConfig(maxTrials, maxConcurrent int) Config {
	return Config{Algorithm: AlgorithmMedian, Space: testSpace(), Seed: 42, MaxTrials: maxTrials, MaxConcurrent: maxConcurrent, Mode: "min",
		Settings: Settings{Median: &MedianSettings{Interval: 200, MinTrials: 2}}}
}

// The stopping searchers run through the harness: snapshots survive every
// event, the same seed gives the same schedule, and they do stop trials.
func TestHarnessStoppingSearchers(t *testing.T) {
	for name, mk := range map[string]func(int, int) Config{"asha": ashaConfig, "median": medianConfig, "hyperband": hyperbandConfig} {
		for _, tc := range []struct{ maxTrials, maxConcurrent int }{{1, 1}, {20, 1}, {40, 8}, {100, 7}} {
			t.Run(fmt.Sprintf("%s/trials=%d,concurrent=%d", name, tc.maxTrials, tc.maxConcurrent), func(t *testing.T) {
				sched := checkHarness(t, mk(tc.maxTrials, tc.maxConcurrent))
				if tc.maxTrials >= 20 && !strings.Contains(sched, " stopped\n") {
					t.Errorf("%d trials and none stopped", tc.maxTrials)
				}
			})
		}
	}
}

func TestASHARule(t *testing.T) {
	r := &ashaRule{MinBudget: 100, Eta: 3, Passed: map[string]int{}}
	steps := []struct {
		id      string
		samples float64
		loss    float64
		stop    bool
	}{
		{"a", 50, 9, false},  // below the first rung: not judged
		{"a", 100, 1, false}, // rung 0: the only one
		{"b", 120, 2, true},  // rung 0, 2 trials: only the best goes on
		{"c", 100, 0.5, false},
		{"d", 100, 0.7, true},   // 4 trials, top ⌊4/3⌋ = 1
		{"e", 100, 0.6, true},   // 5 trials: still only the best (0.5)
		{"f", 100, 0.65, true},  // 6 trials: top 2 = 0.5, 0.6
		{"a", 300, 0.9, false},  // rung 1 (300): the first there
		{"c", 1000, 0.4, false}, // rungs 1 and 2 at once: best at both
		{"e", 300, 0.45, true},  // rung 1: 3 trials, top 1 is c's 0.4
		{"c", 1000, 0.1, false}, // no new rung: nothing judged
		{"g", 10000, 5, true},   // stopped at the first rung it records
		{"h", math.Inf(1), 0, false},
	}
	for _, s := range steps {
		if s.id == "h" {
			continue
		}
		if got := r.observe(s.id, s.samples, s.loss); got != s.stop {
			t.Errorf("%s at %v samples, %v: stop %v, want %v", s.id, s.samples, s.loss, got, s.stop)
		}
	}
	if r.Rungs[0].N != 7 || len(r.Rungs) != 3 {
		t.Errorf("rungs %+v", r.Rungs)
	}
	r.MaxBudget = 300
	if stop := r.observe("z", 1e6, 100); !stop {
		t.Error("z: worst at rung 0, want stopped")
	}
	if len(r.Rungs) != 3 || r.Passed["z"] != 0 {
		t.Errorf("max_budget 300: z passed rung %d", r.Passed["z"])
	}
}

// A rung written as R/η^k is reached by the report at R/η^k samples even
// where r·η^k rounds an ulp above it (here 2700/81·27 = 900.0000000000001).
func TestASHARungsSurviveRounding(t *testing.T) {
	r := &ashaRule{MinBudget: 2700.0 / 81, Eta: 3, MaxBudget: 2700, Passed: map[string]int{}}
	if r.budget(3) <= 900 {
		t.Skipf("r·η³ = %v: no rounding to guard against on this platform", r.budget(3))
	}
	r.observe("a", 900, 1)
	if r.Passed["a"] != 3 {
		t.Errorf("a report at 900 samples passed rung %d, want 3 (900 samples)", r.Passed["a"])
	}
	r.observe("b", 2700, 1)
	if r.Passed["b"] != 4 {
		t.Errorf("a report at 2700 samples passed rung %d, want 4 (max_budget)", r.Passed["b"])
	}
}

// shaOracle is Optuna's SuccessiveHalvingPruner.prune (3.1) restated
// by brute force: every value recorded at a rung is kept, whatever became
// of its trial (running, stopped or completed), and a trial's value goes
// on from a rung when it is no worse than the max(⌊n/η⌋, 1)-th best of
// the n values recorded there, its own included. Rungs are reached
// within rungSlack: Gleaner's samples are reals where Optuna's steps are
// integers.
type shaOracle struct {
	min, eta, max float64
	rung          map[string]int // rungs the trial has completed
	values        [][]float64
}

func (o *shaOracle) prune(id string, samples, loss float64) bool {
	for k := o.rung[id]; ; k++ {
		at := o.min * math.Pow(o.eta, float64(k))
		if samples < at*(1-rungSlack) || o.max > 0 && at > o.max*(1+rungSlack) {
			return false
		}
		for len(o.values) <= k {
			o.values = append(o.values, nil)
		}
		o.values[k] = append(o.values[k], loss)
		o.rung[id] = k + 1
		competing := slices.Sorted(slices.Values(o.values[k]))
		idx := max(int(float64(len(competing))/o.eta), 1) - 1
		if loss > competing[idx] {
			return true
		}
	}
}

// Through the searcher, in both modes, ASHA stops exactly the trials
// Optuna's pruner would on seeded asynchronous workloads: reports at
// random strides (some jumping several rungs at once), coarse losses (so
// ties are common), trials ending stopped or completed while others run.
func TestASHAMatchesOptunaPruner(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		min, eta float64
		max      float64
		seed     uint64
	}{
		{"min", 100, 3, 0, 1},
		{"min", 100, 3, 2700, 2},
		{"max", 100, 3, 2700, 3},
		{"min", 2700.0 / 81, 3, 2700, 4}, // rungs an ulp above whole numbers
		{"max", 50, 2, 1600, 5},
		{"min", 10, 4, 0, 6},
	} {
		t.Run(fmt.Sprintf("%s,r=%g,eta=%g,R=%g", tc.mode, tc.min, tc.eta, tc.max), func(t *testing.T) {
			cfg := ashaConfig(400, 8)
			cfg.Mode = tc.mode
			cfg.Settings.ASHA = &ASHASettings{MinBudget: tc.min, ReductionFactor: tc.eta, MaxBudget: tc.max}
			s, err := NewSearcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			o := &shaOracle{min: tc.min, eta: tc.eta, max: tc.max, rung: map[string]int{}}
			rng := rand.New(rand.NewPCG(tc.seed, 7))
			full := 30 * tc.min * tc.eta
			type running struct {
				samples, quality float64
			}
			trials := map[string]*running{}
			var ids []string // outstanding, in creation order: map order would not be seeded
			apply := func(acts []Action) {
				for _, a := range acts {
					if c, ok := a.(Create); ok {
						trials[c.ID] = &running{quality: float64(rng.IntN(8))}
						ids = append(ids, c.ID)
					}
				}
			}
			apply(s.Initial())
			stops := 0
			for len(ids) > 0 {
				i := rng.IntN(len(ids))
				id := ids[i]
				tr := trials[id]
				tr.samples += tc.min * []float64{0.5, 1, 3, 10}[rng.IntN(4)] / tc.eta
				// Coarse losses that improve with training, so values tie and curves cross.
				loss := math.Round(tr.quality+8/math.Sqrt(1+tr.samples/tc.min)*float64(1+rng.IntN(2))) / 2
				metric := loss
				if tc.mode == "max" {
					metric = -loss
				}
				want := o.prune(id, tr.samples, loss)
				acts := s.TrialReported(id, tr.samples, metric)
				got := slices.Contains(acts, Action(Stop{TrialID: id}))
				if got != want {
					t.Fatalf("%s at %v samples, loss %v: stop %v, Optuna's pruner %v (rungs %v)", id, tr.samples, loss, got, want, o.values)
				}
				outcome := OutcomeStopped
				switch {
				case got:
					stops++
				case tr.samples >= full:
					outcome = OutcomeCompleted
				default:
					continue
				}
				ids = slices.Delete(ids, i, i+1)
				apply(s.TrialFinished(id, metric, outcome))
			}
			if stops < 100 {
				t.Errorf("%d of 400 trials stopped: the workload does not exercise the rule", stops)
			}
		})
	}
}

func TestMedianRule(t *testing.T) {
	r := &medianRule{Interval: 100, MinTrials: 2, Trials: map[string]medianTrial{}}
	for _, s := range []struct {
		id            string
		samples, loss float64
		stop          bool
	}{
		{"a", 100, 1, false},
		{"b", 100, 2, false}, // one other: too few
		{"c", 150, 3, true},  // others 1, 2: median 1.5 < 3
		{"d", 100, 0.5, false},
		{"a", 250, 4, false},   // best so far stays 1; checkpoint 2 has no one else
		{"b", 200, 1.5, false}, // checkpoint 2: others [1]: too few
		{"e", 250, 3, true},    // checkpoint 1: median of 1,2,3,0.5 = 1.5 < 3
	} {
		if got := r.observe(s.id, s.samples, s.loss); got != s.stop {
			t.Errorf("%s at %v, %v: stop %v, want %v", s.id, s.samples, s.loss, got, s.stop)
		}
	}
	r.Warmup = 1000
	if r.observe("f", 100, 100) {
		t.Error("stopped within warmup")
	}
}

// mode max: higher is better, so the lowest accuracy is stopped.
func TestStoppersFollowTheMode(t *testing.T) {
	cfg := ashaConfig(10, 3)
	cfg.Mode = "max"
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Initial()
	if acts := s.TrialReported("t00001", 200, 0.9); len(acts) != 0 {
		t.Fatalf("%v", acts)
	}
	if acts := s.TrialReported("t00002", 200, 0.1); len(acts) != 1 || acts[0] != (Stop{TrialID: "t00002"}) {
		t.Errorf("accuracy 0.1 under max: %v, want stop t00002", acts)
	}
	if acts := s.TrialReported("t00002", 400, 0.95); len(acts) != 0 {
		t.Errorf("a report after the stop: %v, want nothing", acts)
	}
}

func TestStopperSettingsErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		set  Settings
		alg  string
		want string
	}{
		{Settings{}, AlgorithmASHA, "search.asha.min_budget: missing"},
		{Settings{ASHA: &ASHASettings{}}, AlgorithmASHA, "search.asha.min_budget: 0 must be > 0"},
		{Settings{ASHA: &ASHASettings{MinBudget: 10, ReductionFactor: 1}}, AlgorithmASHA, "search.asha.reduction_factor"},
		{Settings{ASHA: &ASHASettings{MinBudget: 10, MaxBudget: 5}}, AlgorithmASHA, "search.asha.max_budget"},
		{Settings{ASHA: &ASHASettings{MinBudget: 10, Sampler: "asha"}}, AlgorithmASHA, `search.asha.sampler: "asha" is not one of`},
		{Settings{ASHA: &ASHASettings{MinBudget: 10}, Grid: &GridSettings{Resolution: 3}}, AlgorithmASHA, "search.grid: settings of algorithm grid, but search.algorithm is asha (sampling with random)"},
		{Settings{Median: &MedianSettings{}}, AlgorithmMedian, "search.median.interval"},
		{Settings{}, AlgorithmHyperband, "search.hyperband.min_budget: missing"},
		{Settings{Hyperband: &HyperbandSettings{MinBudget: 10, MaxBudget: 5}}, AlgorithmHyperband, "search.hyperband.max_budget"},
		{Settings{Median: &MedianSettings{Interval: 1, MinTrials: -1}}, AlgorithmMedian, "search.median.min_trials"},
	} {
		cfg := Config{Algorithm: tc.alg, Space: testSpace(), Seed: 1, MaxTrials: 2, MaxConcurrent: 1, Mode: "min", Settings: tc.set}
		if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.set, err, tc.want)
		}
	}
	// The sampler's own section applies.
	cfg := Config{Algorithm: AlgorithmASHA, Space: testSpace(), Seed: 1, MaxTrials: 30, MaxConcurrent: 30, Mode: "min",
		Settings: Settings{ASHA: &ASHASettings{MinBudget: 10, Sampler: AlgorithmGrid}, Grid: &GridSettings{Resolution: 2}}}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Initial()); n != 30 {
		t.Errorf("grid sampler with resolution 2: %d actions", n)
	}
}

// The ASHA rule's state stays bounded however many trials reach a rung.
func TestASHAStateIsBounded(t *testing.T) {
	r := &ashaRule{MinBudget: 1, Eta: 3, Passed: map[string]int{}}
	for i := range 100_000 {
		id := fmt.Sprint(i)
		r.observe(id, 1, float64((i*7919)%100_003))
		r.forget(id)
	}
	if len(r.Rungs[0].Best) != ashaKeep || r.Rungs[0].N != 100_000 || len(r.Passed) != 0 {
		t.Errorf("after 100,000 trials: %d values kept, n %d, %d passed", len(r.Rungs[0].Best), r.Rungs[0].N, len(r.Passed))
	}
}

// Hyperband's brackets: first rungs R/η^s, trials spread in proportion to
// n_s = ⌈(S+1)/(s+1)·η^s⌉, the bracket s = 0 never stopping anyone.
func TestHyperbandBrackets(t *testing.T) {
	r := newHyperbandRule(&HyperbandSettings{MinBudget: 100, MaxBudget: 2700, ReductionFactor: 3})
	var firsts []float64
	for _, b := range r.Brackets {
		firsts = append(firsts, b.MinBudget)
	}
	if fmt.Sprint(firsts) != "[2700 900 300 100]" || fmt.Sprint(r.Weights) != "[4 6 12 27]" {
		t.Fatalf("brackets %v, weights %v", firsts, r.Weights)
	}
	count := make([]int, len(r.Brackets))
	for i := range 490 {
		count[r.bracket(fmt.Sprint(i))]++
	}
	if fmt.Sprint(count) != "[40 60 120 270]" {
		t.Errorf("490 trials over the brackets: %v, want in proportion 4:6:12:27", count)
	}
	for i := range 50 {
		id := fmt.Sprint(i)
		if r.Of[id] == 0 && r.observe(id, 1e9, float64(1000-i)) {
			t.Fatalf("trial %s in the bracket without stopping was stopped", id)
		}
	}
}
