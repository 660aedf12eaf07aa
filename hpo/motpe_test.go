package hpo

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func init() {
	harnessSettings[AlgorithmMOTPE] = []string{
		`{"motpe": {"n_startup_trials": 5}}`,
		`{"motpe": {"n_startup_trials": 5, "multivariate": true, "constant_liar": false}}`,
	}
}

// motpeOraclePoints are 30 results of two minimised objectives (numpy's
// RandomState(7).rand(30, 2) rounded to 2 places, point 5 a copy of 3),
// on which Optuna 3.1's _split_observation_pairs and
// _calculate_weights_below_for_multi_objective gave the below sets and
// weights of TestMOTPESplitAsOptuna.
var motpeOraclePoints = [][]float64{
	{0.08, 0.78}, {0.44, 0.72}, {0.98, 0.54}, {0.5, 0.07}, {0.27, 0.5}, {0.5, 0.07}, {0.38, 0.07}, {0.29, 0.91},
	{0.21, 0.45}, {0.93, 0.02}, {0.6, 0.95}, {0.23, 0.55}, {0.91, 0.13}, {0.52, 0.75}, {0.67, 0.47}, {0.2, 0.49},
	{0.37, 0.48}, {0.37, 0.84}, {0.77, 0.31}, {0.57, 0.28}, {0.45, 0.35}, {0.66, 0.37}, {0.46, 0.72}, {0.41, 0.91},
	{0.18, 0.74}, {0.42, 0.43}, {0.63, 0.52}, {0.41, 0.0}, {0.09, 0.71}, {0.52, 0.7},
}

// Violations of x + y > 0.6 (0.6 − x − y where it does not hold): 26
// feasible.
func motpeOracleViolations() []float64 {
	v := make([]float64, len(motpeOraclePoints))
	for i, p := range motpeOraclePoints {
		if s := p[0] + p[1]; s <= 0.6 {
			v[i] = math.Round((0.6-s)*100) / 100
		}
	}
	return v
}

// The below sets and l's weights match Optuna 3.1's on a hand-made
// example: whole fronts, the last cut by greedy hypervolume subset
// selection, weights by hypervolume contribution (ε for points of later
// fronts, which add none), and with constraints feasible trials first.
func TestMOTPESplitAsOptuna(t *testing.T) {
	const e11 = 8.77192982379194e-11
	for _, tc := range []struct {
		name        string
		constrained bool
		nb          int
		below       []int32
		weights     []float64 // per below, in below's order
	}{
		{"nb=3", false, 3, []int32{8, 6, 28}, []float64{1, 0.3266968325944189, 0.1927601810137385}},
		{"nb=10", false, 10, []int32{0, 6, 8, 15, 27, 28, 3, 4, 11, 20},
			[]float64{0.06842105271329425, 1, 0.5964912281055713, 0.1929824562111402, 0.8596491228193298, 0.6754385965196974, e11, e11, e11, e11}},
		{"nb=17", false, 17, []int32{0, 6, 8, 15, 27, 28, 3, 4, 5, 9, 11, 16, 20, 24, 25, 19, 1},
			append([]float64{0.020386826998944507, 0.29796131732101167, 0.17511761633101983, 0.057501306872516485, 1, 0.18034500786250834},
				slices.Repeat([]float64{2.613695765744548e-11}, 11)...)},
		{"constrained/nb=5", true, 5, []int32{8, 9, 19, 20, 28},
			[]float64{1, 0.38750000000981616, 0.4038461538557084, 0.19230769232063624, 0.1365384615522986}},
		// 26 feasible: every one, then the least violation (trial 3, ε).
		{"constrained/nb=27", true, 27, []int32{0, 1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 28, 29}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &motpe{goals: Goals{Modes: []string{"min", "min"}}}
			s.loss = motpeOraclePoints
			s.viol = make([]float64, len(s.loss))
			if tc.constrained {
				s.viol = motpeOracleViolations()
			}
			got := slices.Clone(s.selectBelow(tc.nb))
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tc.below))) {
				t.Fatalf("below (-want +got):\n- %v\n+ %v", tc.below, got)
			}
			if tc.weights == nil {
				return
			}
			w := s.contributionWeights(tc.below, nil)
			for k, i := range tc.below {
				if d := math.Abs(w[k] - tc.weights[k]); d > 1e-9*tc.weights[k]+1e-13 {
					t.Errorf("weight of %d: %v, want Optuna's %v", i, w[k], tc.weights[k])
				}
			}
		})
	}
}

// motpeZDT1 is Zitzler, Deb and Thiele's ZDT1 (2000) on n parameters
// x0..x{n-1} in [0, 1]: f1 = x0, f2 = g·(1 − √(f1/g)) with
// g = 1 + 9·Σ_{i≥1} x_i/(n−1), both minimised; its Pareto front is
// f2 = 1 − √f1. With constrained, one constraint value, x0 + x1, to keep
// at most 1: half the space.
func motpeZDT1(n int, constrained bool) (Config, func(Params) Result) {
	cfg := Config{Algorithm: AlgorithmMOTPE, Mode: "min", Objectives: []Objective{{"f1", "min"}, {"f2", "min"}}}
	for i := range n {
		cfg.Space = append(cfg.Space, Param{Name: fmt.Sprintf("x%d", i), Type: ParamFloat, Min: 0, Max: 1})
	}
	if constrained {
		one := 1.0
		cfg.Constraints = []Constraint{{Metric: "x0+x1", Max: &one}}
	}
	return cfg, func(p Params) Result {
		sum := 0.0
		for i := 1; i < n; i++ {
			sum += p[fmt.Sprintf("x%d", i)].Num
		}
		f1 := p["x0"].Num
		g := 1 + 9*sum/float64(n-1)
		r := Result{Values: []float64{f1, g * (1 - math.Sqrt(f1/g))}}
		if constrained {
			r.Constraints = []float64{p["x0"].Num + p["x1"].Num}
		}
		return r
	}
}

// motpeRun drives cfg's searcher with results from eval, keeping up to
// max_concurrent trials in flight and finishing the oldest first. With
// restore, after every event the snapshot must survive restore byte for
// byte and the run goes on with the restored searcher. It returns the
// schedule (every event and its actions) and the results in the order
// the trials finished.
func motpeRun(t testing.TB, cfg Config, eval func(Params) Result, restore bool) (string, []Result) {
	t.Helper()
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var (
		log      strings.Builder
		queue    []Create
		results  []Result
		shutdown bool
	)
	apply := func(event string, acts []Action) {
		fmt.Fprintf(&log, "%s:", event)
		for _, a := range acts {
			fmt.Fprintf(&log, " %v;", a)
			switch a := a.(type) {
			case Create:
				if err := cfg.Space.Contains(a.Params); err != nil {
					t.Fatalf("%s: %s: %v", event, a.ID, err)
				}
				queue = append(queue, a)
			case Shutdown:
				shutdown = true
			default:
				t.Fatalf("%s: unexpected action %v", event, a)
			}
		}
		log.WriteString("\n")
		if !restore {
			return
		}
		snap, err := s.Snapshot()
		if err != nil {
			t.Fatalf("%s: snapshot: %v", event, err)
		}
		r, err := RestoreSearcher(cfg, snap)
		if err != nil {
			t.Fatalf("%s: restore: %v", event, err)
		}
		if again, _ := r.Snapshot(); !bytes.Equal(snap, again) {
			t.Fatalf("%s: snapshot changed by restore:\n%s\n%s", event, snap, again)
		}
		s = r
	}
	apply("initial", s.Initial())
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		apply("created "+c.ID, s.TrialCreated(c.ID))
		res := eval(c.Params)
		results = append(results, res)
		apply(fmt.Sprintf("finished %s %v", c.ID, res), Finish(s, c.ID, res, OutcomeCompleted))
	}
	if !shutdown {
		t.Fatal("no shutdown")
	}
	return log.String(), results
}

func motpeMedian(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// motpeZDT1Hypervolumes are the hypervolumes at (1.1, 1.1) of motpe's and
// random search's 100 trials on ZDT1 (6 parameters, sequential), seeds
// 1..10; random search is the space's own Sample, as random draws it.
func motpeZDT1Hypervolumes(t testing.TB, constrained bool, set *TPESettings) (mo, rnd []float64) {
	cfg, eval := motpeZDT1(6, constrained)
	cfg.MaxTrials, cfg.MaxConcurrent, cfg.Settings.MOTPE = 100, 1, set
	ref := []float64{1.1, 1.1}
	for seed := uint64(1); seed <= 10; seed++ {
		cfg.Seed = seed
		_, rs := motpeRun(t, cfg, eval, false)
		mo = append(mo, cfg.Goals().Hypervolume(rs, ref))
		rng := rand.New(newPCG(seed))
		rs = rs[:0]
		for range 100 {
			rs = append(rs, eval(cfg.Space.Sample(rng)))
		}
		rnd = append(rnd, cfg.Goals().Hypervolume(rs, ref))
	}
	return mo, rnd
}

// On ZDT1 (6 parameters, 2 objectives) the fronts motpe finds in 100
// trials have a larger hypervolume at (1.1, 1.1) than random search's,
// over seeds 1..10 (medians).
func TestMOTPEBeatsRandomOnZDT1(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  *TPESettings
	}{{"independent", nil}, {"multivariate", &TPESettings{Multivariate: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			mo, rnd := motpeZDT1Hypervolumes(t, false, tc.set)
			t.Logf("hypervolume at (1.1, 1.1), 100 trials, seeds 1..10: motpe median %.4f %.4f; random median %.4f %.4f",
				motpeMedian(mo), mo, motpeMedian(rnd), rnd)
			if motpeMedian(mo) <= motpeMedian(rnd) {
				t.Errorf("motpe's median hypervolume %.4f, not above random's %.4f", motpeMedian(mo), motpeMedian(rnd))
			}
		})
	}
}

// With a constraint that rules out half the space (x0 + x1 ≤ 1), motpe's
// front is feasible, it proposes feasible trials more often than random
// search does, and its feasible front's hypervolume beats random's.
func TestMOTPEConstrainedZDT1(t *testing.T) {
	cfg, eval := motpeZDT1(6, true)
	cfg.MaxTrials, cfg.MaxConcurrent, cfg.Seed = 100, 4, 3
	_, rs := motpeRun(t, cfg, eval, true)
	g := cfg.Goals()
	feasible := 0
	for i, r := range rs {
		if g.Feasible(r) && i >= 10 {
			feasible++
		}
	}
	for _, i := range g.Front(rs) {
		if !g.Feasible(rs[i]) {
			t.Errorf("front member %d is infeasible: %v", i, rs[i])
		}
	}
	// Random search: x0 + x1 ≤ 1 holds for half its trials.
	if feasible < 60 {
		t.Errorf("%d of the 90 trials after the random start are feasible, want most", feasible)
	}
	mo, rnd := motpeZDT1Hypervolumes(t, true, nil)
	t.Logf("feasible after the start: %d of 90; hypervolume: motpe median %.4f %.4f; random median %.4f %.4f",
		feasible, motpeMedian(mo), mo, motpeMedian(rnd), rnd)
	if motpeMedian(mo) <= motpeMedian(rnd) {
		t.Errorf("motpe's median hypervolume %.4f, not above random's %.4f", motpeMedian(mo), motpeMedian(rnd))
	}
}

// The same events give the same actions, a snapshot survives restore
// after every event (motpeRun), and a restored searcher goes on as the
// one it was taken from: the runs with and without restores agree.
func TestMOTPEDeterministicAndRestores(t *testing.T) {
	for _, constrained := range []bool{false, true} {
		cfg, eval := motpeZDT1(3, constrained)
		cfg.MaxTrials, cfg.MaxConcurrent, cfg.Seed = 40, 4, 9
		cfg.Settings.MOTPE = &TPESettings{NStartupTrials: 5}
		a, _ := motpeRun(t, cfg, eval, true)
		b, _ := motpeRun(t, cfg, eval, false)
		if a != b {
			t.Fatalf("constrained=%v: schedules differ with and without restores:\n%s\n%s", constrained, a, b)
		}
		cfg.Seed = 10
		if c, _ := motpeRun(t, cfg, eval, false); c == a {
			t.Errorf("constrained=%v: seeds 9 and 10 gave the same schedule", constrained)
		}
	}
}

// With one objective and no constraint, motpe proposes what TPE does: the
// same split, weights, estimators and RNG draws.
func TestMOTPEOneObjectiveIsTPE(t *testing.T) {
	for _, js := range []*TPESettings{{NStartupTrials: 5}, {NStartupTrials: 5, Multivariate: true}} {
		cfg := Config{Algorithm: AlgorithmTPE, Space: testSpace(), Seed: 4, MaxTrials: 60, MaxConcurrent: 3, Mode: "max",
			Settings: Settings{TPE: js}, Revision: Revision}
		want, _ := run(t, cfg, testScript)
		cfg.Algorithm, cfg.Settings = AlgorithmMOTPE, Settings{MOTPE: js}
		got, _ := run(t, cfg, testScript)
		if got != want {
			t.Errorf("multivariate=%v: motpe's schedule differs from TPE's:\n%s\n%s", js.Multivariate, got, want)
		}
	}
}

// A result without every objective, a stopped trial and a failed one
// teach nothing; a trial that never reported a constrained metric is an
// infeasible observation.
func TestMOTPEWhatItObserves(t *testing.T) {
	cfg, _ := motpeZDT1(2, true)
	cfg.MaxTrials, cfg.MaxConcurrent = 10, 5
	s := newMOTPE(cfg)
	s.Initial()
	s.TrialFinishedResult("t00001", Result{Values: []float64{1}}, OutcomeCompleted)
	s.TrialFinished("t00002", 0.5, OutcomeCompleted)
	s.TrialFinishedResult("t00003", Result{Values: []float64{1, 2}, Constraints: []float64{0.5}}, OutcomeStopped)
	s.TrialFailed("t00004")
	s.TrialFinishedResult("t00005", Result{Values: []float64{1, 2}}, OutcomeCompleted)
	if len(s.st.Values) != 1 || s.viol[0] != math.MaxFloat64 || s.st.Violations[0] != math.MaxFloat64 {
		t.Fatalf("observed %v with violations %v, want one infeasible observation", s.st.Values, s.st.Violations)
	}
	if s.st.Ended != 5 || len(s.st.Outstanding) != 5 {
		t.Errorf("ended %d, outstanding %v: want 5 ended and 5 more opened", s.st.Ended, s.st.Outstanding)
	}
}

// 100,000 finished trials: motpe keeps max_observations (3,000; a tenth
// more gather between trims) of them — every one l would model, then the
// newest — so its snapshot stays under 512 KB, and the front it keeps is
// the front of all it saw.
func TestMOTPESnapshotBoundedAt100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 observations")
	}
	cfg, eval := motpeZDT1(6, false)
	cfg.MaxTrials, cfg.MaxConcurrent, cfg.Seed = 200_000, 8, 1
	s := newMOTPE(cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	var front []Result // of every result seen, kept as they come
	for i := range 100_000 {
		p := cfg.Space.Sample(rng)
		r := eval(p)
		if !slices.ContainsFunc(front, func(f Result) bool { return cfg.Goals().Dominates(f, r) }) {
			front = slices.DeleteFunc(front, func(f Result) bool { return cfg.Goals().Dominates(r, f) })
			front = append(front, r)
		}
		s.observe(s.m.row(p), r, i)
	}
	s.st.Created, s.st.Ended = 100_000, 100_000
	if n := len(s.st.Values); n < 3000 || n > 3300 {
		t.Fatalf("%d observations kept, want 3,000 and at most a tenth more gathering", n)
	}
	g := cfg.Goals()
	kept := make([]Result, len(s.st.Values))
	for i, v := range s.st.Values {
		kept[i] = Result{Values: v}
	}
	ref := []float64{1.1, 10}
	if got, want := g.Hypervolume(kept, ref), g.Hypervolume(front, ref); got < want*(1-1e-12) {
		t.Errorf("the kept observations' hypervolume %v, below the front's of all seen %v", got, want)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot after 100,000 observations: %d bytes", len(snap))
	if len(snap) > 512<<10 {
		t.Errorf("snapshot %d bytes, want at most 512 KB", len(snap))
	}
	if _, err := RestoreSearcher(cfg, snap); err != nil {
		t.Fatal(err)
	}
}

func TestMOTPEValidation(t *testing.T) {
	cfg, _ := motpeZDT1(2, false)
	cfg.MaxTrials, cfg.MaxConcurrent = 10, 1
	cfg.Settings.MOTPE = &TPESettings{Gamma: 2}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "search.motpe.gamma") {
		t.Errorf("gamma 2: %v, want an error naming search.motpe.gamma", err)
	}
	cfg.Settings = Settings{TPE: &TPESettings{}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "search.tpe") {
		t.Errorf("a tpe section for motpe: %v, want an error naming search.tpe", err)
	}
	// Until TPE fits each parameter on the trials where it is active.
	cfg.Settings = Settings{}
	cfg.Space = append(cfg.Space, Param{Name: "c", Type: ParamChoice, Choices: []string{"a", "b"}},
		Param{Name: "y", Type: ParamFloat, Min: 0, Max: 1, When: &Condition{Param: "c", Values: []string{"a"}}})
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "algorithm: motpe") {
		t.Errorf("a conditional space: %v, want an error naming the algorithm", err)
	}
}

func TestMOTPERestoreRejects(t *testing.T) {
	cfg, eval := motpeZDT1(2, true)
	cfg.MaxTrials, cfg.MaxConcurrent, cfg.Seed = 12, 1, 1
	s, _ := NewSearcher(cfg)
	acts := s.Initial()
	for range 3 {
		c := acts[0].(Create)
		acts = Finish(s, c.ID, eval(c.Params), OutcomeCompleted)
	}
	snap, _ := s.Snapshot()
	for _, tc := range []struct{ from, to, want string }{
		{`"violations":[`, `"violations":[-1,`, "violations: 4 for 3"},
		{`"values":[[`, `"values":[[1],[`, "values: 4 for 3"},
	} {
		bad := strings.Replace(string(snap), tc.from, tc.to, 1)
		if _, err := RestoreSearcher(cfg, []byte(bad)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.to, err, tc.want)
		}
	}
}
