package hpo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// The simulation harness every searcher runs through: scripted learning
// curves drive a searcher by events only; after every event its snapshot
// must survive restore byte for byte, and the run continues on the
// restored searcher, so a lost field shows up as a diverging schedule.
//
// Simulated trials keep the Searcher contract's budgets: a trial created
// or continued with a Budget reports up to it and ends OutcomeCompleted
// there, paused at a checkpoint; a Continue resumes it from that progress
// (it reports on, never again what it reported before); a Create From
// starts at the From trial's latest budget end. A Continue of a trial not
// paused at its budget, a From naming a trial that never reached one, or
// a budget not past where the trial starts fails the test.

// curve is a scripted trial: it reports every tick (100 budget units),
// with metric Score·(1 + 1/step) at step (its progress/100), and ends
// after Len steps — unless it has a Budget, which it trains to and pauses
// at instead; Fail ends it as failed at step Len.
type curve struct {
	Len   int
	Score float64
	Fail  bool
}

// script derives a trial's curve from its parameters, so schedules
// depend on what the searcher sampled.
type script func(Params) curve

func testSpace() Space {
	return Space{
		{Name: "lr", Type: ParamFloat, Min: 1e-5, Max: 1, Log: true},
		{Name: "dropout", Type: ParamFloat, Min: 0, Max: 0.5},
		{Name: "layers", Type: ParamInt, Min: 1, Max: 8},
		{Name: "width", Type: ParamInt, Min: 16, Max: 1024, Log: true},
		{Name: "opt", Type: ParamChoice, Choices: []string{"sgd", "adam", "bad"}},
	}
}

func testScript(p Params) curve {
	return curve{
		Len:   1 + int(p["layers"].Num), // 2..9 ticks: trials end out of order
		Score: math.Abs(math.Log10(p["lr"].Num)+3) + p["dropout"].Num,
		Fail:  p["opt"].Str == "bad",
	}
}

// harnessUnit is the progress a simulated trial makes per tick.
const harnessUnit = 100

type simTrial struct {
	id       string
	c        curve
	steps    int     // progress/harnessUnit, cumulative (from From's, if any)
	budget   float64 // the progress it pauses at; 0: it runs to its curve's end
	started  bool    // TrialCreated was reported for its current run
	stopping bool    // a Stop came: it ends at its next tick
	last     float64
	// paused: its last run ended at its budget, so a Continue may resume
	// it; checkpoint is the steps at its latest budget end (−1: none), what
	// a Create From starts at.
	paused     bool
	checkpoint int
}

func (tr *simTrial) progress() float64 { return float64(tr.steps * harnessUnit) }

// atBudget: its progress has reached its budget (within rungSlack, as the
// trial workflow judges it: r·η^k may land an ulp above a whole number).
func (tr *simTrial) atBudget() bool {
	return tr.budget > 0 && tr.progress() >= tr.budget*(1-rungSlack)
}

// run drives cfg's searcher to Shutdown (or maxTicks) and returns the
// schedule: every event and the actions it produced, one per line.
func run(t *testing.T, cfg Config, sc script) (schedule string, created []Create) {
	t.Helper()
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var (
		log         strings.Builder
		trials      = map[string]*simTrial{}
		running     []*simTrial
		starting    []*simTrial // created or continued by this tick's events: they start next tick
		outstanding = map[string]bool{}
		shutdown    bool
		stops       int
		continues   int
	)
	apply := func(event string, acts []Action) {
		fmt.Fprintf(&log, "%s:", event)
		for _, a := range acts {
			if shutdown {
				t.Fatalf("%s: action %v after shutdown", event, a)
			}
			fmt.Fprintf(&log, " %v;", a)
			switch a := a.(type) {
			case Create:
				if trials[a.ID] != nil {
					t.Fatalf("%s: trial id %s created twice", event, a.ID)
				}
				if err := cfg.Space.Contains(a.Params); err != nil {
					t.Fatalf("%s: %s: %v", event, a.ID, err)
				}
				tr := &simTrial{id: a.ID, c: sc(a.Params), budget: a.Budget, checkpoint: -1}
				if a.From != "" {
					from := trials[a.From]
					if from == nil || from.checkpoint < 0 {
						t.Fatalf("%s: %s from %s, which has never ended at a budget", event, a.ID, a.From)
					}
					tr.steps = from.checkpoint
				}
				if a.Budget < 0 || a.Budget > 0 && tr.atBudget() {
					t.Fatalf("%s: %s budget %g, not past its start %g", event, a.ID, a.Budget, tr.progress())
				}
				trials[a.ID] = tr
				outstanding[a.ID] = true
				created = append(created, a)
				starting = append(starting, tr)
			case Continue:
				tr := trials[a.TrialID]
				if tr == nil || outstanding[a.TrialID] || !tr.paused {
					t.Fatalf("%s: continue of %s, which is not paused at its budget", event, a.TrialID)
				}
				tr.budget = a.Budget
				if tr.atBudget() {
					t.Fatalf("%s: continue of %s to budget %g, not past its progress %g", event, a.TrialID, a.Budget, tr.progress())
				}
				tr.paused, tr.started = false, false
				continues++
				outstanding[a.TrialID] = true
				starting = append(starting, tr)
			case Stop:
				tr := trials[a.TrialID]
				if tr == nil || !outstanding[a.TrialID] {
					t.Fatalf("%s: stop of %s, which is not running", event, a.TrialID)
				}
				if tr.stopping {
					t.Fatalf("%s: %s stopped twice", event, a.TrialID)
				}
				stops++
				tr.stopping = true
			case Shutdown:
				if len(outstanding) > 0 {
					t.Fatalf("%s: shutdown with %d trials outstanding", event, len(outstanding))
				}
				shutdown = true
			default:
				t.Fatalf("%s: unknown action %T", event, a)
			}
		}
		log.WriteString("\n")
		if len(outstanding) > cfg.MaxConcurrent {
			t.Fatalf("%s: %d trials outstanding > max_concurrent %d", event, len(outstanding), cfg.MaxConcurrent)
		}
		if p := s.Progress(); !(p >= 0 && p <= 1) {
			t.Fatalf("%s: progress %v outside [0, 1]", event, p)
		}
		// Snapshot → restore → snapshot is the identity, and the run goes
		// on with the restored searcher.
		snap, err := s.Snapshot()
		if err != nil {
			t.Fatalf("%s: snapshot: %v", event, err)
		}
		r, err := RestoreSearcher(cfg, snap)
		if err != nil {
			t.Fatalf("%s: restore: %v", event, err)
		}
		again, err := r.Snapshot()
		if err != nil {
			t.Fatalf("%s: snapshot after restore: %v", event, err)
		}
		if !bytes.Equal(snap, again) {
			t.Fatalf("%s: snapshot changed by restore:\n%s\n%s", event, snap, again)
		}
		s = r
	}
	end := func(tr *simTrial) { delete(outstanding, tr.id); tr.stopping = false }

	apply("initial", s.Initial())
	for tick := 0; !shutdown && tick < 10_000; tick++ {
		running, starting = append(running, starting...), nil
		if len(running) == 0 {
			t.Fatalf("tick %d: nothing running and no shutdown", tick)
		}
		for _, tr := range running {
			if !tr.started {
				tr.started = true
				apply("created "+tr.id, s.TrialCreated(tr.id))
			}
		}
		var next []*simTrial
		for _, tr := range running {
			if tr.stopping {
				end(tr)
				apply(fmt.Sprintf("stopped %s %.6g", tr.id, tr.last), s.TrialFinished(tr.id, tr.last, OutcomeStopped))
				continue
			}
			tr.steps++
			metric := tr.c.Score * (1 + 1/float64(tr.steps))
			tr.last = metric
			switch {
			case tr.c.Fail && tr.steps >= tr.c.Len:
				end(tr)
				apply("failed "+tr.id, s.TrialFailed(tr.id))
			case tr.atBudget():
				end(tr)
				tr.paused, tr.checkpoint = true, tr.steps
				apply(fmt.Sprintf("paused %s %d %.6g", tr.id, tr.steps, metric), s.TrialFinished(tr.id, metric, OutcomeCompleted))
			case tr.budget == 0 && tr.steps >= tr.c.Len:
				end(tr)
				apply(fmt.Sprintf("finished %s %.6g", tr.id, metric), s.TrialFinished(tr.id, metric, OutcomeCompleted))
			default:
				apply(fmt.Sprintf("report %s %d %.6g", tr.id, tr.steps, metric), s.TrialReported(tr.id, tr.progress(), metric))
				next = append(next, tr)
			}
		}
		running = next
	}
	if !shutdown {
		t.Fatal("no shutdown")
	}
	if got := s.Progress(); got != 1 {
		t.Errorf("progress at shutdown = %v, want 1", got)
	}
	if stops > 0 {
		fmt.Fprintf(&log, "%d stopped\n", stops)
	}
	if continues > 0 {
		fmt.Fprintf(&log, "%d continued\n", continues)
	}
	return log.String(), created
}

// checkHarness runs cfg (seed 42) through the harness and checks what every
// searcher that fills max_trials owes: max_trials created, and what
// checkSchedule checks. It returns the schedule.
func checkHarness(t *testing.T, cfg Config) string {
	t.Helper()
	sched, created := checkSchedule(t, cfg)
	if len(created) != cfg.MaxTrials {
		t.Errorf("created %d trials, want max_trials %d", len(created), cfg.MaxTrials)
	}
	return sched
}

// checkSchedule runs cfg (seed 42) through the harness and checks what
// every searcher owes: at most max_trials created, the same schedule for
// the same seed, another for seed 43 (once there is more than one trial to
// tell them apart).
func checkSchedule(t *testing.T, cfg Config) (string, []Create) {
	t.Helper()
	cfg.Seed = 42
	sched, created := run(t, cfg, testScript)
	if len(created) > cfg.MaxTrials {
		t.Errorf("created %d trials, more than max_trials %d", len(created), cfg.MaxTrials)
	}
	if again, _ := run(t, cfg, testScript); sched != again {
		t.Errorf("same seed, different schedules:\n%s\n---\n%s", sched, again)
	}
	cfg.Seed = 43
	if other, _ := run(t, cfg, testScript); cfg.MaxTrials > 1 && sched == other {
		t.Error("seeds 42 and 43 gave the same schedule")
	}
	return sched, created
}

// harnessSettings are, per registered algorithm, the settings sections
// (as a spec's JSON) it runs through the harness with: every variant of
// it. They are decoded, not written as Go, so that an entry may name a
// section this build does not have yet.
var harnessSettings = map[string][]string{
	AlgorithmRandom:      {`{}`},
	AlgorithmGrid:        {`{}`, `{"grid": {"resolution": 2}}`},
	AlgorithmQuasiRandom: {`{}`},
	AlgorithmTPE:         {`{"tpe": {"n_startup_trials": 5}}`},
	AlgorithmMedian:      {`{"median": {"interval": 200, "min_trials": 2}}`},
	AlgorithmASHA: {
		`{"asha": {"min_budget": 200, "reduction_factor": 2}}`,
		`{"asha": {"min_budget": 200, "reduction_factor": 2, "max_budget": 800, "variant": "promotion"}}`,
		`{"asha": {"min_budget": 200, "reduction_factor": 3, "max_budget": 1000, "variant": "promotion", "sampler": "tpe"}, "tpe": {"n_startup_trials": 5}}`,
		`{"asha": {"min_budget": 100, "reduction_factor": 2, "max_budget": 400, "variant": "promotion", "sampler": "grid"}, "grid": {"resolution": 2}}`,
	},
	AlgorithmHyperband: {
		`{"hyperband": {"min_budget": 200, "max_budget": 800, "reduction_factor": 2}}`,
		`{"hyperband": {"min_budget": 200, "max_budget": 800, "reduction_factor": 2, "variant": "promotion"}}`,
		`{"hyperband": {"min_budget": 100, "max_budget": 900, "reduction_factor": 3, "variant": "promotion", "sampler": "quasirandom"}}`,
	},
	"pbt": {`{"pbt": {"interval": 200, "max_budget": 800}}`, `{"pbt": {"interval": 300, "max_budget": 1000, "quantile": 0.5}}`},

	// As samplers of stopping searchers: evolution_test.go, local_test.go.
	AlgorithmEvolution: {`{}`, `{"evolution": {"population": 4, "sample_size": 2}}`},
	AlgorithmLocal:     {`{}`, `{"local": {"step": 0.25, "max_visited": 30}}`},
}

// Every registered algorithm, in every variant, runs through the harness:
// snapshots survive every event and the same seed gives the same schedule,
// with trials that pause at budgets, continue and start from others'
// checkpoints where the algorithm asks for that.
func TestHarnessEveryAlgorithm(t *testing.T) {
	for _, alg := range Algorithms() {
		sets, ok := harnessSettings[alg]
		if !ok {
			t.Errorf("%s: no harness settings; add its variants to harnessSettings", alg)
			continue
		}
		for _, js := range sets {
			var set Settings
			if err := json.Unmarshal([]byte(js), &set); err != nil {
				t.Fatalf("%s: %s: %v", alg, js, err)
			}
			for _, tc := range []struct{ maxTrials, maxConcurrent int }{{1, 1}, {20, 1}, {40, 8}, {100, 7}} {
				t.Run(fmt.Sprintf("%s/%s/trials=%d,concurrent=%d", alg, js, tc.maxTrials, tc.maxConcurrent), func(t *testing.T) {
					checkSchedule(t, Config{Algorithm: alg, Space: testSpace(), MaxTrials: tc.maxTrials, MaxConcurrent: tc.maxConcurrent, Mode: "min", Settings: set})
				})
			}
		}
	}
}

func TestHarnessRandom(t *testing.T) {
	for _, tc := range []struct{ maxTrials, maxConcurrent int }{
		{1, 1}, {5, 1}, {3, 8}, {40, 8}, {100, 7},
	} {
		t.Run(fmt.Sprintf("trials=%d,concurrent=%d", tc.maxTrials, tc.maxConcurrent), func(t *testing.T) {
			checkHarness(t, Config{Algorithm: AlgorithmRandom, Space: testSpace(), MaxTrials: tc.maxTrials, MaxConcurrent: tc.maxConcurrent, Mode: "min"})
		})
	}
}

// The window refills as trials end: with max_concurrent 8, every event
// that ends a trial while budget remains creates exactly one.
func TestRandomSlidingWindow(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmRandom, Space: testSpace(), Seed: 7, MaxTrials: 10, MaxConcurrent: 3, Mode: "max"}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	acts := s.Initial()
	if len(acts) != 3 {
		t.Fatalf("initial: %d actions, want 3 creates", len(acts))
	}
	if got := s.TrialReported("t00001", 10, 0.5); len(got) != 0 {
		t.Errorf("report: %v, want nothing", got)
	}
	got := s.TrialFailed("t00002")
	if len(got) != 1 || got[0].(Create).ID != "t00004" {
		t.Errorf("after a failure: %v, want create t00004", got)
	}
	if got := s.TrialFailed("t00002"); len(got) != 0 {
		t.Errorf("second end of t00002: %v, want nothing", got)
	}
	if got := s.TrialFinished("nope", math.NaN(), OutcomeStopped); len(got) != 0 {
		t.Errorf("end of an unknown trial: %v, want nothing", got)
	}
}

func TestNewSearcherErrorsNameTheField(t *testing.T) {
	ok := Config{Algorithm: AlgorithmRandom, Space: testSpace(), Seed: 1, MaxTrials: 1, MaxConcurrent: 1, Mode: "min"}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Algorithm = "nope" }, "algorithm"},
		{func(c *Config) { c.MaxTrials = 0 }, "max_trials"},
		{func(c *Config) { c.MaxConcurrent = -1 }, "max_concurrent"},
		{func(c *Config) { c.Mode = "up" }, "mode"},
		{func(c *Config) { c.Space = Space{{Name: "x", Type: ParamFloat, Min: 2, Max: 1}} }, `"x"`},
	} {
		cfg := ok
		tc.edit(&cfg)
		if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %s", err, tc.want)
		}
	}
}

func TestRestoreRejects(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmRandom, Space: testSpace(), Seed: 1, MaxTrials: 5, MaxConcurrent: 2, Mode: "min"}
	for _, snap := range []string{
		`not json`,
		`{"type":"asha","state":{}}`,
		`{"type":"random","state":{"rng":"AAAA","created":0,"ended":0}}`,
		`{"type":"random","state":{"rng":"cGNnOgAAAAAAAAABAAAAAAAAAAI=","created":9,"ended":9}}`,
	} {
		if _, err := RestoreSearcher(cfg, []byte(snap)); err == nil {
			t.Errorf("RestoreSearcher(%s): no error", snap)
		}
	}
}

func TestSnapshotIsTypeTagged(t *testing.T) {
	s, _ := NewSearcher(Config{Algorithm: AlgorithmRandom, Space: testSpace(), Seed: 1, MaxTrials: 2, MaxConcurrent: 1, Mode: "min"})
	s.Initial()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(snap, []byte(`{"type":"random","state":{"rng":`)) {
		t.Errorf("snapshot %s: want {\"type\":\"random\",\"state\":{\"rng\":...", snap)
	}
}
