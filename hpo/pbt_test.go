package hpo

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pbtSearcher builds a PBT searcher over two floats x, y in [1, 100], so
// that perturbations stay inside.
func pbtSearcher(t *testing.T, maxTrials int, mode string, set PBTSettings) Searcher {
	t.Helper()
	zero := 0.0
	set.ResampleProbability = &zero
	cfg := Config{Algorithm: AlgorithmPBT, Seed: 1, MaxTrials: maxTrials, MaxConcurrent: 4, Mode: mode, Settings: Settings{PBT: &set},
		Space: Space{{Name: "x", Type: ParamFloat, Min: 1, Max: 100}, {Name: "y", Type: ParamFloat, Min: 1, Max: 100, Log: true}}}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// want checks that acts is exactly one action and returns it.
func want1[A Action](t *testing.T, what string, acts []Action) A {
	t.Helper()
	if len(acts) != 1 {
		t.Fatalf("%s: %v, want one %T", what, acts, *new(A))
	}
	a, ok := acts[0].(A)
	if !ok {
		t.Fatalf("%s: %v, want a %T", what, acts, *new(A))
	}
	return a
}

// Four members reach their first budget with metrics 1, 2, 3 and then 0
// (mode max): the first three continue (no one below them yet), the last
// ranks bottom and copies the top member t00003 — which is running again
// — From its checkpoint at 10, to 10 + interval, its parameters each
// ×0.8 or ×1.2.
func TestPBTExploitsTopIntoBottom(t *testing.T) {
	s := pbtSearcher(t, 100, "max", PBTSettings{Interval: 10, MaxBudget: 30})
	init := s.Initial()
	if len(init) != 4 {
		t.Fatalf("initial: %v, want 4 creates", init)
	}
	params := map[string]Params{}
	for _, a := range init {
		c := a.(Create)
		if c.Budget != 10 || c.From != "" || c.Stage != "gen 0" {
			t.Errorf("initial %#v, want budget 10, stage gen 0, no from", c)
		}
		params[c.ID] = c.Params
	}
	for i, m := range []float64{1, 2, 3} {
		id := trialID(i + 1)
		s.TrialReported(id, 10, m)
		c := want1[Continue](t, "end of "+id, s.TrialFinished(id, m, OutcomeCompleted))
		if c != (Continue{TrialID: id, Budget: 20, Stage: "gen 1"}) {
			t.Errorf("end of %s: %#v, want continue to 20 at gen 1", id, c)
		}
	}
	c := want1[Create](t, "end of t00004", s.TrialFinished("t00004", 0, OutcomeCompleted))
	if c.ID != "t00005" || c.From != "t00003" || c.Budget != 20 || c.Stage != "gen 1" {
		t.Errorf("end of t00004: %#v, want t00005 from t00003, budget 20, gen 1", c)
	}
	for _, n := range []string{"x", "y"} {
		r := c.Params[n].Num / params["t00003"][n].Num
		if math.Abs(r-0.8) > 1e-12 && math.Abs(r-1.2) > 1e-12 {
			t.Errorf("%s = %v from %v: ×%v, want ×0.8 or ×1.2", n, c.Params[n].Num, params["t00003"][n].Num, r)
		}
	}
	// The new trial is the member's: its end (as the best) continues it.
	if got := want1[Continue](t, "end of t00005", s.TrialFinished("t00005", 9, OutcomeCompleted)); got.TrialID != "t00005" || got.Budget != 30 || got.Stage != "gen 2" {
		t.Errorf("end of t00005: %#v, want continue to 30 at gen 2", got)
	}
	// max_budget ends members; the last one done shuts the search down.
	if got := s.TrialFinished("t00005", 9, OutcomeCompleted); len(got) != 0 {
		t.Errorf("t00005 at max_budget: %v, want nothing", got)
	}
	for _, id := range []string{"t00001", "t00002", "t00003"} {
		want1[Continue](t, "end of "+id, s.TrialFinished(id, 5, OutcomeCompleted))
	}
	if p := s.Progress(); p != 0.75 {
		t.Errorf("progress %v, want 0.75: three members at 20 of 30, one done", p)
	}
	s.TrialFinished("t00001", 5, OutcomeCompleted)
	s.TrialFinished("t00002", 5, OutcomeCompleted)
	end := want1[Shutdown](t, "last member done", s.TrialFinished("t00003", 5, OutcomeCompleted))
	if want := "all 4 members of the population trained max_budget 30; 5 trials (4 sampled, 1 by exploits) of max_trials 100"; end.Reason != want {
		t.Errorf("shutdown reason %q, want %q", end.Reason, want)
	}
	if p := s.Progress(); p != 1 {
		t.Errorf("progress %v after shutdown, want 1", p)
	}
	if got := s.TrialFinished("t00003", 5, OutcomeCompleted); len(got) != 0 {
		t.Errorf("an end seen twice: %v, want nothing", got)
	}
}

// finishAll ends t00001..t0000n with metrics, in order, and returns the
// last event's actions.
func finishAll(s Searcher, metrics ...float64) []Action {
	var acts []Action
	for i, m := range metrics {
		acts = s.TrialFinished(trialID(i+1), m, OutcomeCompleted)
	}
	return acts
}

// Mode orients the ranking: the same metrics make the member with 0 the
// bottom one under max, the top one under min.
func TestPBTModeOrientsRanking(t *testing.T) {
	s := pbtSearcher(t, 100, "min", PBTSettings{Interval: 10, MaxBudget: 30})
	s.Initial()
	want1[Continue](t, "min: the least metric last", finishAll(s, 1, 2, 3, 0))
	s = pbtSearcher(t, 100, "min", PBTSettings{Interval: 10, MaxBudget: 30})
	s.Initial()
	if c := want1[Create](t, "min: the greatest metric last", finishAll(s, 1, 2, 0, 3)); c.From != "t00003" {
		t.Errorf("min: %v, want a copy of t00003 (metric 0)", c)
	}
}

// A member without a metric ranks last and copies another; members
// without metrics are never copied (nor is anyone not strictly better).
func TestPBTNaNRanksLast(t *testing.T) {
	s := pbtSearcher(t, 100, "max", PBTSettings{Interval: 10, MaxBudget: 30})
	s.Initial()
	if c := want1[Create](t, "NaN last", finishAll(s, 2, 3, 1, math.NaN())); c.From != "t00002" {
		t.Errorf("%v, want a copy of t00002", c)
	}
	s = pbtSearcher(t, 100, "max", PBTSettings{Interval: 10, MaxBudget: 30})
	s.Initial()
	want1[Continue](t, "all NaN", finishAll(s, math.NaN(), math.NaN(), math.NaN(), math.NaN()))
	s = pbtSearcher(t, 100, "max", PBTSettings{Interval: 10, MaxBudget: 30})
	s.Initial()
	want1[Continue](t, "all tied", finishAll(s, 1, 1, 1, 1))
}

// Once max_trials trials exist, a member that would copy continues.
func TestPBTMaxTrialsTurnsExploitIntoContinue(t *testing.T) {
	s := pbtSearcher(t, 5, "max", PBTSettings{Interval: 10, MaxBudget: 40})
	s.Initial()
	want1[Create](t, "fifth trial", finishAll(s, 1, 2, 3, 0))
	// t00005 ranks bottom again, but no trial is left to create.
	if c := want1[Continue](t, "no sixth trial", s.TrialFinished("t00005", -1, OutcomeCompleted)); c.TrialID != "t00005" || c.Budget != 30 {
		t.Errorf("%v, want t00005 continued to 30", c)
	}
}

// A member whose trial fails or is stopped leaves; its slot is refilled
// by a copy of the best while max_trials allows (fresh before anyone has
// a score), then stays empty; the search still ends.
func TestPBTFailedMembersAreReplaced(t *testing.T) {
	s := pbtSearcher(t, 7, "max", PBTSettings{Interval: 10, MaxBudget: 20})
	s.Initial()
	if c := want1[Create](t, "first failure", s.TrialFailed("t00001")); c.ID != "t00005" || c.From != "" || c.Budget != 10 || c.Stage != "gen 0" {
		t.Errorf("first failure: %#v, want a fresh t00005", c)
	}
	want1[Continue](t, "t00002", s.TrialFinished("t00002", 2, OutcomeCompleted))
	if c := want1[Create](t, "stopped", s.TrialFinished("t00003", 1, OutcomeStopped)); c.ID != "t00006" || c.From != "t00002" || c.Budget != 20 {
		t.Errorf("a stop: %#v, want t00006 from t00002 to 20", c)
	}
	want1[Create](t, "third loss", s.TrialFailed("t00004"))
	if got := s.TrialFailed("t00005"); len(got) != 0 {
		t.Errorf("a failure after max_trials: %v, want nothing", got)
	}
	s.TrialFinished("t00002", 3, OutcomeCompleted)
	s.TrialFinished("t00006", 3, OutcomeCompleted)
	want1[Shutdown](t, "last", s.TrialFinished("t00007", 3, OutcomeCompleted))
}

// Enqueued points seed the first members, in order.
func TestPBTPointsSeedThePopulation(t *testing.T) {
	pts := []Params{
		{"lr": Float(0.01), "dropout": Float(0.1), "layers": Float(3), "width": Float(64), "opt": String("adam")},
		{"lr": Float(0.001), "dropout": Float(0.2), "layers": Float(2), "width": Float(128), "opt": String("sgd")},
	}
	cfg := pbtConfig(5, PBTSettings{Interval: 2, MaxBudget: 6})
	cfg.Points = pts
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	init := s.Initial()
	for i, p := range pts {
		if got := init[i].(Create).Params; paramsString(got) != paramsString(p) {
			t.Errorf("member %d: %v, want the enqueued %v", i, got, p)
		}
	}
	cfg.Points = slices.Repeat(pts, 3)
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "points") {
		t.Errorf("6 points for 5 members: %v, want an error naming points", err)
	}
}

// Explore: integers move at least a step and stay inside; log and plain
// floats are multiplied; choices stay unless resampled.
func TestPBTExplore(t *testing.T) {
	one := 1.0
	cfg := pbtConfig(3, PBTSettings{Interval: 1, MaxBudget: 1})
	p, err := newPBT(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.resample = 0
	src := Params{"lr": Float(0.01), "dropout": Float(0.5), "layers": Float(1), "width": Float(1024), "opt": String("sgd")}
	for range 50 {
		got := p.explore(src)
		if err := cfg.Space.Contains(got); err != nil {
			t.Fatal(err)
		}
		if l := got["layers"].Num; l != 1 && l != 2 {
			t.Errorf("layers 1 explored to %v, want 1 (clamped) or 2", l)
		}
		if w := got["width"].Num; w != 1024 && w != math.Round(1024*0.8) {
			t.Errorf("width 1024 explored to %v, want 1024 (clamped) or 819", w)
		}
		if r := got["lr"].Num / 0.01; math.Abs(r-0.8) > 1e-9 && math.Abs(r-1.2) > 1e-9 {
			t.Errorf("lr 0.01 explored to %v", got["lr"].Num)
		}
		if got["opt"].Str != "sgd" {
			t.Errorf("opt resampled with probability 0: %v", got["opt"])
		}
	}
	cfg.Settings.PBT.ResampleProbability = &one
	if p, err = newPBT(cfg); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 50 {
		seen[p.explore(src)["opt"].Str] = true
	}
	if len(seen) != 3 {
		t.Errorf("choices resampled with probability 1: %v, want all three", seen)
	}
}

func TestPBTSettingsErrorsNameTheField(t *testing.T) {
	neg, big := -0.1, 1.5
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Settings.PBT = nil }, "search.pbt.interval"},
		{func(c *Config) { c.Settings.PBT.Interval = 0 }, "search.pbt.interval"},
		{func(c *Config) { c.Settings.PBT.Interval = math.NaN() }, "search.pbt.interval"},
		{func(c *Config) { c.Settings.PBT.MaxBudget = 1 }, "search.pbt.max_budget"},
		{func(c *Config) { c.Settings.PBT.MaxBudget = math.Inf(1) }, "search.pbt.max_budget"},
		{func(c *Config) { c.Settings.PBT.Population = -1 }, "search.pbt.population"},
		{func(c *Config) { c.Settings.PBT.Population = 6 }, "search.pbt.population"},
		{func(c *Config) { c.MaxTrials = 3; c.Settings.PBT.Population = 4 }, "search.pbt.population"},
		{func(c *Config) { c.Settings.PBT.Quantile = 0.6 }, "search.pbt.quantile"},
		{func(c *Config) { c.Settings.PBT.Quantile = -0.1 }, "search.pbt.quantile"},
		{func(c *Config) { c.Settings.PBT.ResampleProbability = &neg }, "search.pbt.resample_probability"},
		{func(c *Config) { c.Settings.PBT.ResampleProbability = &big }, "search.pbt.resample_probability"},
		{func(c *Config) { c.Settings.PBT.Perturb = []float64{0.8, 0} }, "search.pbt.perturb[1]"},
		{func(c *Config) { c.Algorithm = AlgorithmRandom }, "search.pbt"},
	} {
		cfg := pbtConfig(1, PBTSettings{Interval: 2, MaxBudget: 8})
		tc.edit(&cfg)
		if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %s", err, tc.want)
		}
	}
	// Defaults: population = max_concurrent, or max_trials if fewer.
	for _, tc := range []struct{ trials, concurrent, want int }{{40, 5, 5}, {3, 5, 3}} {
		cfg := pbtConfig(1, PBTSettings{Interval: 2, MaxBudget: 8})
		cfg.MaxTrials, cfg.MaxConcurrent = tc.trials, tc.concurrent
		s, err := NewSearcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.Initial()); got != tc.want {
			t.Errorf("max_trials %d, max_concurrent %d: population %d, want %d", tc.trials, tc.concurrent, got, tc.want)
		}
	}
}

// The snapshot holds the population, not the history: after 5,000
// trials it is as small as after the first few.
func TestPBTSnapshotBounded(t *testing.T) {
	cfg := pbtConfig(9, PBTSettings{Population: 4, Interval: 1, MaxBudget: 10_000})
	cfg.MaxTrials = 5000
	var sizes []int
	var d *pbtDriver
	d = newPBTDriver(t, cfg, func(tr *pbtTrial) float64 {
		if int(tr.progress)%1000 == 0 {
			snap, _ := d.s.Snapshot()
			sizes = append(sizes, len(snap))
		}
		// Rankings that keep changing, so members keep copying.
		n, _ := strconv.Atoi(tr.id[1:])
		return math.Mod(tr.progress*0.618+float64(n)*0.377, 1)
	})
	d.run()
	if len(d.created) != cfg.MaxTrials {
		t.Errorf("created %d trials, want %d", len(d.created), cfg.MaxTrials)
	}
	if n := slices.Max(sizes); n > 2*sizes[0] || n > 4<<10 {
		t.Errorf("snapshot sizes %v bytes: want O(population)", sizes)
	}
}
