package hpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func tpeConfig(seed uint64, maxTrials, maxConcurrent int, s *TPESettings) Config {
	return Config{Algorithm: AlgorithmTPE, Space: testSpace(), Seed: seed,
		MaxTrials: maxTrials, MaxConcurrent: maxConcurrent, Mode: "min", Settings: Settings{TPE: s}}
}

func TestHarnessTPE(t *testing.T) {
	yes, no := true, false
	for _, set := range []struct {
		name string
		s    *TPESettings
	}{
		{"defaults", nil},
		{"multivariate", &TPESettings{Multivariate: true, NStartupTrials: 4}},
		{"no-liar", &TPESettings{ConstantLiar: &no, NStartupTrials: 3, ConsiderEndpoints: true}},
		{"no-clip", &TPESettings{ConsiderMagicClip: &no, ConstantLiar: &yes, NStartupTrials: 2, GammaMax: 3}},
	} {
		for _, tc := range []struct{ maxTrials, maxConcurrent int }{
			{1, 1}, {5, 1}, {3, 8}, {40, 8}, {100, 7}, {60, 1},
		} {
			t.Run(fmt.Sprintf("%s/trials=%d,concurrent=%d", set.name, tc.maxTrials, tc.maxConcurrent), func(t *testing.T) {
				checkHarness(t, tpeConfig(42, tc.maxTrials, tc.maxConcurrent, set.s))
			})
		}
	}
}

// Spaces at the edges: a constant float, a single integer, one choice,
// ranges near float64's limits, an int too wide to be discrete, a
// constant on a log scale. The harness checks every proposal is inside.
func TestHarnessTPEEdgeSpaces(t *testing.T) {
	space := Space{
		{Name: "const", Type: ParamFloat, Min: 3, Max: 3},
		{Name: "logconst", Type: ParamFloat, Min: 2, Max: 2, Log: true},
		{Name: "one", Type: ParamInt, Min: 4, Max: 4},
		{Name: "only", Type: ParamChoice, Choices: []string{"x"}},
		{Name: "huge", Type: ParamFloat, Min: -1e308, Max: 1e308},
		{Name: "hugeint", Type: ParamInt, Min: -1e300, Max: 1e300},
		{Name: "wide", Type: ParamInt, Min: 0, Max: 1e6},
		{Name: "tiny", Type: ParamFloat, Min: 1e-300, Max: 1e-299, Log: true},
	}
	sc := func(p Params) curve {
		return curve{Len: 2, Score: math.Abs(p["huge"].Num/1e308) + math.Abs(p["wide"].Num-1e5)/1e6}
	}
	for _, s := range []*TPESettings{{NStartupTrials: 3}, {NStartupTrials: 3, Multivariate: true}} {
		cfg := Config{Algorithm: AlgorithmTPE, Space: space, Seed: 5, MaxTrials: 30, MaxConcurrent: 3, Mode: "max", Settings: Settings{TPE: s}}
		if _, created := run(t, cfg, sc); len(created) != 30 {
			t.Errorf("multivariate %v: %d trials, want 30", s.Multivariate, len(created))
		}
	}
}

// TPE samples for a stopping searcher: the trials ASHA stops reach it as
// stopped observations, ranked below the completed ones.
func TestHarnessTPEUnderASHA(t *testing.T) {
	cfg := tpeConfig(42, 60, 6, &TPESettings{NStartupTrials: 5})
	cfg.Algorithm = AlgorithmASHA
	cfg.Settings.ASHA = &ASHASettings{Sampler: AlgorithmTPE, MinBudget: 200, ReductionFactor: 2}
	sched, created := run(t, cfg, testScript)
	if len(created) != 60 {
		t.Errorf("created %d trials, want 60", len(created))
	}
	if !strings.Contains(sched, " stopped\n") {
		t.Error("ASHA stopped no trial")
	}
	if again, _ := run(t, cfg, testScript); again != sched {
		t.Error("same seed, different schedules")
	}
}

// The harness restores after every event and goes on with the restored
// searcher; a searcher never restored must make the same proposals, or
// Restore rebuilds something differently from how events build it.
func TestTPERestoreKeepsTheSchedule(t *testing.T) {
	for _, s := range []*TPESettings{nil, {Multivariate: true}} {
		cfg := tpeConfig(7, 60, 4, s)
		plain := drive(t, cfg, testObjective, false)
		restored := drive(t, cfg, testObjective, true)
		if a, b := fmt.Sprint(plain.rows), fmt.Sprint(restored.rows); a != b {
			t.Errorf("%+v: restored searcher diverged:\n%v\n%v", s, a, b)
		}
	}
}

func testObjective(p Params) float64 {
	c := testScript(p)
	if c.Fail {
		return math.NaN()
	}
	return c.Score
}

func TestTPESettingsErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		s    TPESettings
		want string
	}{
		{TPESettings{NStartupTrials: -1}, "search.tpe.n_startup_trials: -1"},
		{TPESettings{NEICandidates: -2}, "search.tpe.n_ei_candidates: -2"},
		{TPESettings{Gamma: 1.5}, "search.tpe.gamma: 1.5 must be in (0, 1]"},
		{TPESettings{Gamma: -0.1}, "search.tpe.gamma: -0.1"},
		{TPESettings{Gamma: math.NaN()}, "search.tpe.gamma: NaN"},
		{TPESettings{GammaMax: -1}, "search.tpe.gamma_max: -1"},
		{TPESettings{PriorWeight: -1}, "search.tpe.prior_weight: -1"},
		{TPESettings{PriorWeight: math.Inf(1)}, "search.tpe.prior_weight: +Inf"},
		{TPESettings{Group: true}, "search.tpe.group: true needs multivariate: true"},
	} {
		s := tc.s
		_, err := NewSearcher(tpeConfig(1, 5, 1, &s))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.s, err, tc.want)
		}
	}
	cfg := tpeConfig(1, 5, 1, &TPESettings{Gamma: 1, GammaMax: 1, PriorWeight: 0.5, NEICandidates: 1, NStartupTrials: 1})
	if _, err := NewSearcher(cfg); err != nil {
		t.Errorf("valid settings: %v", err)
	}
	cfg.Algorithm = AlgorithmRandom
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "search.tpe:") {
		t.Errorf("tpe settings with random search: error %v, want one naming search.tpe", err)
	}
}

func TestTPESettingsDefaults(t *testing.T) {
	yes, no := true, false
	want := tpeParams{nStartup: 10, nCandidates: 24, gammaMax: 25, maxObs: 3000, gamma: 0.1, priorWeight: 1, magicClip: true, liar: true}
	if got := (*TPESettings)(nil).params(); got != want {
		t.Errorf("nil settings: %+v, want %+v", got, want)
	}
	if got := (&TPESettings{}).params(); got != want {
		t.Errorf("zero settings: %+v, want %+v", got, want)
	}
	got := (&TPESettings{NStartupTrials: 3, Gamma: 0.25, ConsiderMagicClip: &no, ConstantLiar: &no, Multivariate: true, ConsiderEndpoints: true}).params()
	want = tpeParams{nStartup: 3, nCandidates: 24, gammaMax: 25, maxObs: 3000, gamma: 0.25, priorWeight: 1, endpoints: true, multivariate: true}
	if got != want {
		t.Errorf("set settings: %+v, want %+v", got, want)
	}
	if got := (&TPESettings{ConstantLiar: &yes}).params(); !got.liar {
		t.Error("constant_liar: true ignored")
	}
}

func TestTPERestoreRejects(t *testing.T) {
	cfg := tpeConfig(1, 20, 2, nil)
	s, _ := NewSearcher(cfg)
	s.Initial()
	s.TrialFinished("t00001", 0.5, OutcomeCompleted)
	good, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreSearcher(cfg, good); err != nil {
		t.Fatalf("restore of a good snapshot: %v", err)
	}
	// Rows have 5 values: lr, dropout, layers, width, opt (as an index).
	state := strings.TrimSuffix(strings.SplitN(string(good), `"state":`, 2)[1], "}")
	for _, tc := range []struct{ name, snap string }{
		{"not json", `not json`},
		{"other type", `{"type":"random","state":` + state + `}`},
		{"bad rng", `{"type":"tpe","state":{"rng":"AAAA","created":0,"ended":0}}`},
		{"pending missing", strings.Replace(string(good), `"pending":`, `"x":`, 1)},
		{"metric missing", strings.Replace(string(good), `"metrics":[0.5]`, `"metrics":[]`, 1)},
		{"lr outside", replaceRow(t, good, "observed", []float64{2, 0.1, 1, 16, 0})},
		{"layers not integer", replaceRow(t, good, "observed", []float64{0.1, 0.1, 1.5, 16, 0})},
		{"choice index outside", replaceRow(t, good, "pending", []float64{0.1, 0.1, 1, 16, 3})},
		{"short row", replaceRow(t, good, "observed", []float64{0.1, 0.1, 1, 16})},
		{"stopped outside", strings.Replace(string(good), `"metrics":`, `"stopped":[4],"metrics":`, 1)},
	} {
		if _, err := RestoreSearcher(cfg, []byte(tc.snap)); err == nil {
			t.Errorf("%s: RestoreSearcher(%s): no error", tc.name, tc.snap)
		}
	}
}

// replaceRow puts row as the first row of field in snapshot.
func replaceRow(t *testing.T, snapshot []byte, field string, row []float64) string {
	t.Helper()
	s := string(snapshot)
	i := strings.Index(s, `"`+field+`":[[`)
	if i < 0 {
		t.Fatalf("no %s in %s", field, s)
	}
	i += len(field) + 4
	j := i + strings.Index(s[i:], "]")
	return s[:i] + strings.Trim(fmt.Sprint(row), "[]") + s[j:]
}

func TestTPESnapshotIsTypeTagged(t *testing.T) {
	s, _ := NewSearcher(tpeConfig(1, 2, 1, nil))
	s.Initial()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"tpe","state":{"rng":`
	if !strings.HasPrefix(string(snap), want) {
		t.Errorf("snapshot %s: want %s...", snap, want)
	}
}

// Failed trials and trials without a metric are no observations; a
// stopped trial's metric is one, ranked below the completed ones.
func TestTPEObservations(t *testing.T) {
	s := newTPE(tpeConfig(1, 10, 5, nil))
	s.Initial()
	s.TrialFailed("t00001")
	s.TrialFinished("t00002", math.NaN(), OutcomeCompleted)
	s.TrialFinished("t00003", 0.1, OutcomeStopped)
	s.TrialFinished("t00004", 0.3, OutcomeCompleted)
	s.TrialFinished("t00005", math.Inf(1), OutcomeCompleted)
	s.TrialFinished("t00005", 0.2, OutcomeCompleted) // ended already
	if got, want := s.st.Metrics, []float64{0.1, 0.3, math.MaxFloat64}; !slices.Equal(got, want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	if got, want := s.byMetric, []int32{1, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("ranking %v, want %v (completed 0.3, completed +Inf, stopped 0.1)", got, want)
	}
	if len(s.st.Pending) != len(s.st.Outstanding) {
		t.Errorf("%d pending rows for %d outstanding", len(s.st.Pending), len(s.st.Outstanding))
	}
	if _, err := s.Snapshot(); err != nil {
		t.Errorf("snapshot with an infinite metric: %v", err)
	}
}

// optuna31Trials are the trials both Optuna 3.1 oracles below were
// computed on: 30 finished (x, lr, k, h, opt; their metrics) and 2
// running.
func optuna31Trials() (space Space, rows [][]float64, metrics []float64, running [][]float64) {
	space = Space{
		{Name: "x", Type: ParamFloat, Min: -5, Max: 10},
		{Name: "lr", Type: ParamFloat, Min: 1e-5, Max: 1, Log: true},
		{Name: "k", Type: ParamInt, Min: 1, Max: 100},
		{Name: "h", Type: ParamInt, Min: 1, Max: 2000, Log: true},
		{Name: "opt", Type: ParamChoice, Choices: []string{"a", "b", "c", "d"}},
	}
	rows = [][]float64{ // x, lr, k, h, opt; metric
		{8.852, 0.000643, 42, 594, 1}, {6.916, 0.0313, 20, 859, 1}, {-3.772, 0.000317, 51, 296, 3},
		{8.127, 0.0444, 84, 1108, 2}, {4.134, 2.32e-05, 7, 242, 3}, {-2.526, 0.000513, 10, 1170, 3},
		{1.325, 0.646, 69, 632, 0}, {6.469, 0.00733, 13, 1148, 2}, {0.102, 0.000563, 47, 1672, 3},
		{3.698, 0.00191, 75, 1397, 0}, {9.17, 0.00235, 8, 371, 0}, {-4.09, 0.0322, 65, 212, 3},
		{-0.731, 0.000849, 28, 1192, 2}, {-4.662, 0.00203, 5, 1309, 1}, {4.164, 0.00294, 12, 385, 1},
		{6.523, 4.43e-05, 56, 763, 1}, {0.968, 0.384, 54, 200, 3}, {-3.791, 0.00176, 9, 1122, 2},
		{8.251, 0.125, 31, 1459, 2}, {5.596, 0.856, 86, 129, 3}, {9.366, 5.68e-05, 71, 1156, 1},
		{-2.731, 0.0196, 55, 123, 0}, {2.274, 0.00882, 90, 1268, 2}, {-0.771, 5.35e-05, 73, 422, 2},
		{4.147, 0.000392, 16, 1017, 1}, {5.357, 0.00378, 29, 1394, 0}, {1.85, 0.226, 78, 1089, 3},
		{0.971, 0.000935, 98, 876, 3}, {4.514, 2.05e-05, 96, 1592, 0}, {9.77, 0.0016, 91, 644, 0},
	}
	metrics = []float64{3.401, 0.526, 0.002, 1.513, 1.015, 3.636, 0.255, 8.743, 6.141, 1.486,
		2.523, 3.474, 3.642, 1.228, 8.489, 9.931, 4.66, 4.838, 0.859, 1.022,
		3.426, 2.648, 8.289, 1.614, 0.231, 9.51, 5.283, 1.466, 5.432, 0.27}
	running = [][]float64{{2.922, 0.781, 6, 954, 0}, {5.443, 0.000202, 18, 1200, 2}}
	return space, rows, metrics, running
}

// Independent TPE's l and g against Optuna 3.1's, frozen: TPESampler(
// constant_liar=True)'s split and _ParzenEstimator.log_pdf on the same 30
// finished trials and 2 running (/usr/bin/python3, python3-optuna 3.1.0),
// at a few points of each parameter: a float, a log float (kernels scored
// by height, Optuna 3.1's float value), a linear int (cell masses), a log
// int (a float to Optuna) and a choice. The ints are distinct so that
// numpy's order among equal centres cannot matter; 29 trials in g put the
// oldest on default_weights' ramp.
func TestTPEModelsAsOptuna31(t *testing.T) {
	space, rows, metrics, running := optuna31Trials()
	want := []struct{ at, logL, logG []float64 }{
		{[]float64{-5, -1.5, 0.25, 4, 9.99},
			[]float64{-0.800739968159694, -0.649664926535163, -0.616083980304965, -0.660387048311029, -1.28220711264813},
			[]float64{-2.65960271144615, -2.48543273155431, -2.32687373854044, -2.27396615417126, -2.72474550085398}},
		{[]float64{1e-05, 0.0003, 0.02, 1},
			[]float64{-1.15077852453359, -0.624799367051081, -0.777398724384725, -0.858575922912164},
			[]float64{-3.00105791621042, -2.60137642106628, -2.47634337511579, -2.49644193786332}},
		{[]float64{1, 17, 50, 99, 100},
			[]float64{-5.03744089341432, -4.80720533762409, -4.2912118751712, -5.39083365574459, -5.43252502738057},
			[]float64{-5.15892641947807, -4.68892959210512, -4.80091832105953, -4.62593549852541, -4.79154863329224}},
		{[]float64{1, 3, 40, 700, 2000},
			[]float64{-1.41137984421172, -1.32302401792296, -0.917845423291599, -0.449711461891379, -0.581086759919487},
			[]float64{-3.3795935005685, -3.32437137049606, -3.04020121180144, -2.07604925366426, -2.26029128699938}},
		{[]float64{0, 1, 2, 3},
			[]float64{-1.26851132546351, -1.26851132546351, -1.85629799036563, -1.26851132546351},
			[]float64{-1.35744723424406, -1.74127767615335, -1.27785289045503, -1.24218713480999}},
	}
	tp := newTPE(Config{Algorithm: AlgorithmTPE, Space: space, Seed: 1, MaxTrials: 40, MaxConcurrent: 2, Mode: "min"})
	for i, r := range rows {
		tp.observe(r, metrics[i], false, i)
	}
	tp.st.Pending = running
	tp.split()
	if got := tp.scr.below; !slices.Equal(got, []int32{2, 6, 24}) {
		t.Fatalf("l models observations %v, want Optuna's [2 6 24]", got)
	}
	s := &tp.scr
	for d, dm := range tp.dims {
		var l, g func(x float64) float64
		if dm.kind == dimChoice {
			tp.fitChoice(d)
			l, g = func(x float64) float64 { return s.pl[int(x)] }, func(x float64) float64 { return s.pg[int(x)] }
		} else {
			tp.fitNumeric(d)
			l, g = func(x float64) float64 { return s.l.value(dm.toUnit(x)) }, func(x float64) float64 { return s.g.value(dm.toUnit(x)) }
		}
		for k, x := range want[d].at {
			if got := math.Log(l(x)); !near(got, want[d].logL[k], 1e-9) {
				t.Errorf("%s = %v: log l %.15g, Optuna %.15g", dm.Name, x, got, want[d].logL[k])
			}
			if got := math.Log(g(x)); !near(got, want[d].logG[k], 1e-9) {
				t.Errorf("%s = %v: log g %.15g, Optuna %.15g", dm.Name, x, got, want[d].logG[k])
			}
		}
	}
}

// 10,000 observations of 6 parameters: the snapshot, a Temporal payload,
// stays well under 2 MB (about 0.9 MB).
// 100,000 finished trials: TPE keeps max_observations (3,000; a tenth more
// gather between trims) of them — every one of the best gamma_max, then
// the newest — so its snapshot stays under 512 KB; l is unchanged by the
// bound.
func TestTPESnapshotBoundedAt100k(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmTPE, Space: benchSpace(), Seed: 1, MaxTrials: 200_000, MaxConcurrent: 8, Mode: "min"}
	s := newTPE(cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	best := math.Inf(1)
	for i := range 100_000 {
		p := cfg.Space.Sample(rng)
		y := testScript(p).Score + p["momentum"].Num + float64(i%7)
		best = min(best, y)
		s.observe(s.row(p), y, false, i)
	}
	if n := len(s.st.Metrics); n < 3000 || n > 3300 {
		t.Fatalf("%d observations kept, want 3,000 and at most a tenth more gathering", n)
	}
	if got := s.st.Metrics[s.byMetric[0]]; got != best {
		t.Errorf("the best kept is %v, want the best seen %v", got, best)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot after 100,000 observations: %d bytes", len(snap))
	if len(snap) > 512<<10 {
		t.Errorf("snapshot %d bytes, want at most 512 KB", len(snap))
	}
}

func TestTPESnapshotSize(t *testing.T) {
	s := tenThousand(t, &TPESettings{MaxObservations: 20_000})
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot of %d observations: %d bytes", len(s.st.Metrics), len(snap))
	if len(snap) > 1<<20 {
		t.Errorf("snapshot of 10,000 observations is %d bytes, want at most 1 MiB", len(snap))
	}
	r, err := RestoreSearcher(s.cfg, snap)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := r.Snapshot(); string(again) != string(snap) {
		t.Error("snapshot changed by restore")
	}
}

func benchSpace() Space {
	return append(testSpace(), Param{Name: "momentum", Type: ParamFloat, Min: 0.5, Max: 0.99})
}

// tenThousand is a TPE searcher that has seen 10,000 random trials of
// benchSpace finish and has 8 outstanding.
func tenThousand(tb testing.TB, s *TPESettings) *tpe {
	tb.Helper()
	cfg := Config{Algorithm: AlgorithmTPE, Space: benchSpace(), Seed: 1, MaxTrials: 20_000, MaxConcurrent: 8, Mode: "min",
		Settings: Settings{TPE: s}}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	t := newTPE(cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10_000 {
		p := cfg.Space.Sample(rng)
		y := testScript(p).Score + p["momentum"].Num
		t.observe(t.row(p), y, p["opt"].Str == "bad", i)
	}
	// reindex as Restore would, and check it orders as observe did.
	byMetric := slices.Clone(t.byMetric)
	t.reindex()
	if !slices.Equal(byMetric, t.byMetric) {
		tb.Fatal("reindex orders the observations differently from observe")
	}
	t.st.Created, t.st.Ended = 10_008, 10_000
	for i := range 8 {
		t.st.Outstanding = append(t.st.Outstanding, trialID(10_001+i))
		t.st.Pending = append(t.st.Pending, t.row(cfg.Space.Sample(rng)))
	}
	return t
}

// BenchmarkTPESuggest10k is the cost of one proposal after 10,000
// trials of 6 parameters, with 8 outstanding.
func BenchmarkTPESuggest10k(b *testing.B) {
	for _, s := range []struct {
		name string
		s    *TPESettings
	}{{"independent", nil}, {"multivariate", &TPESettings{Multivariate: true}}} {
		b.Run(s.name, func(b *testing.B) {
			t := tenThousand(b, s.s)
			b.ResetTimer()
			for range b.N {
				if row := t.propose(); len(row) != len(t.dims) {
					b.Fatal(row)
				}
			}
		})
	}
}

// drive runs a searcher against an objective with MaxConcurrent workers:
// the oldest outstanding trial finishes first (creation order), so the
// run is deterministic. A NaN objective fails the trial. With restore,
// the searcher is snapshotted and restored after every event.
type driven struct {
	losses []float64 // per trial in creation order
	rows   []Params
}

func drive(t testing.TB, cfg Config, f func(Params) float64, restore bool) driven {
	t.Helper()
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out   driven
		queue []Create
	)
	take := func(acts []Action) {
		for _, a := range acts {
			if c, ok := a.(Create); ok {
				queue = append(queue, c)
				out.rows = append(out.rows, c.Params)
			}
		}
		if restore {
			snap, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if s, err = RestoreSearcher(cfg, snap); err != nil {
				t.Fatal(err)
			}
		}
	}
	take(s.Initial())
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		y := f(c.Params)
		out.losses = append(out.losses, y)
		if math.IsNaN(y) {
			take(s.TrialFailed(c.ID))
		} else {
			take(s.TrialFinished(c.ID, y, OutcomeCompleted))
		}
	}
	return out
}

func bestOf(losses []float64) float64 {
	best := math.Inf(1)
	for _, y := range losses {
		if y < best {
			best = y
		}
	}
	return best
}

// branin is Branin-Hoo on [−5, 10]×[0, 15]; its minimum is 0.397887.
func branin(p Params) float64 {
	x, y := p["x"].Num, p["y"].Num
	b, c, t := 5.1/(4*math.Pi*math.Pi), 5/math.Pi, 1/(8*math.Pi)
	return (y-b*x*x+c*x-6)*(y-b*x*x+c*x-6) + 10*(1-t)*math.Cos(x) + 10
}

// TPE must find better points than random search in 100 trials, on the
// median of 11 seeds (the same seeds for both), alone and with 8 trials in
// parallel. The margins are wide: random search's median regret is
// several times TPE's.
func TestTPEBeatsRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("100-trial searches")
	}
	for _, fn := range []struct {
		name  string
		space Space
		f     func(Params) float64
		min   float64
	}{
		{"branin", Space{{Name: "x", Type: ParamFloat, Min: -5, Max: 10}, {Name: "y", Type: ParamFloat, Min: 0, Max: 15}}, branin, 0.397887},
		{"quadratic", Space{{Name: "x", Type: ParamFloat, Min: -10, Max: 10}}, func(p Params) float64 {
			return (p["x"].Num - 2.5) * (p["x"].Num - 2.5)
		}, 0},
	} {
		for _, par := range []int{1, 8} {
			for _, mv := range []bool{false, true} {
				name := fmt.Sprintf("%s/concurrent=%d/multivariate=%v", fn.name, par, mv)
				t.Run(name, func(t *testing.T) {
					regret := func(alg string) float64 {
						var r []float64
						for seed := range uint64(11) {
							cfg := Config{Algorithm: alg, Space: fn.space, Seed: seed + 1, MaxTrials: 100, MaxConcurrent: par, Mode: "min"}
							if alg == AlgorithmTPE {
								cfg.Settings.TPE = &TPESettings{Multivariate: mv}
							}
							r = append(r, bestOf(drive(t, cfg, fn.f, false).losses)-fn.min)
						}
						slices.Sort(r)
						return r[len(r)/2]
					}
					tpe, random := regret(AlgorithmTPE), regret(AlgorithmRandom)
					t.Logf("median regret after 100 trials: tpe %.3g, random %.3g", tpe, random)
					if !(tpe < random/3) {
						t.Errorf("median regret: tpe %.3g, not a third of random's %.3g", tpe, random)
					}
				})
			}
		}
	}
}

// With the constant liar, the trials proposed while others run spread
// out: proposals made from the same observations (the slots of failed
// trials refilled) differ, and spread more than without the liar.
func TestTPELiarSpreads(t *testing.T) {
	no := false
	space := Space{{Name: "x", Type: ParamFloat, Min: -10, Max: 10}}
	spread := func(s *TPESettings, seed uint64) (xs []float64) {
		cfg := Config{Algorithm: AlgorithmTPE, Space: space, Seed: seed, MaxTrials: 100, MaxConcurrent: 8, Mode: "min", Settings: Settings{TPE: s}}
		tp := newTPE(cfg)
		var out []Create
		collect := func(acts []Action) {
			for _, a := range acts {
				out = append(out, a.(Create))
			}
		}
		collect(tp.Initial())
		// Finish ten (the startup), then fail the seven outstanding: the
		// eight proposals after the tenth observation see no other.
		for i := 0; len(tp.st.Metrics) < 10; i++ {
			x := out[i].Params["x"].Num
			collect(tp.TrialFinished(out[i].ID, (x-2.5)*(x-2.5), OutcomeCompleted))
		}
		first := len(out) - 1 // the first proposal after the startup
		for _, id := range slices.Clone(tp.st.Outstanding[:7]) {
			collect(tp.TrialFailed(id))
		}
		for _, c := range out[first:] {
			xs = append(xs, c.Params["x"].Num)
		}
		if len(xs) != 8 {
			t.Fatalf("%d proposals after the startup, want 8", len(xs))
		}
		return xs
	}
	var liar, honest float64
	for seed := range uint64(10) {
		l, h := spread(nil, seed+1), spread(&TPESettings{ConstantLiar: &no}, seed+1)
		if slices.Min(l) == slices.Max(l) {
			t.Errorf("seed %d: the 8 proposals with the liar are all %v", seed+1, l[0])
		}
		liar += stddev(l)
		honest += stddev(h)
	}
	t.Logf("mean spread of 8 proposals: with the liar %.3g, without %.3g", liar/10, honest/10)
	if !(liar > 1.5*honest) {
		t.Errorf("spread with the liar %.3g, not clearly above without %.3g", liar/10, honest/10)
	}
}

func stddev(xs []float64) float64 {
	var m, v float64
	for _, x := range xs {
		m += x / float64(len(xs))
	}
	for _, x := range xs {
		v += (x - m) * (x - m) / float64(len(xs))
	}
	return math.Sqrt(v)
}
