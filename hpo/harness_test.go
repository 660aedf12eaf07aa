package hpo

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// The simulation harness every searcher runs through: scripted learning
// curves drive a searcher by events only; after every event its snapshot
// must survive restore byte for byte, and the run continues on the
// restored searcher, so a lost field shows up as a diverging schedule.

// curve is a scripted trial: it reports every tick, ends after Len
// reports, with metric Score·(1 + 1/step); Fail ends it as failed.
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

type simTrial struct {
	id       string
	c        curve
	steps    int
	stopping bool // a Stop came: it ends at its next tick
	last     float64
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
		running     []*simTrial
		outstanding = map[string]bool{}
		ids         = map[string]bool{}
		shutdown    bool
		stops       int
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
				if ids[a.ID] {
					t.Fatalf("%s: trial id %s created twice", event, a.ID)
				}
				if err := cfg.Space.Contains(a.Params); err != nil {
					t.Fatalf("%s: %s: %v", event, a.ID, err)
				}
				ids[a.ID] = true
				outstanding[a.ID] = true
				created = append(created, a)
				running = append(running, &simTrial{id: a.ID, c: sc(a.Params)})
			case Stop:
				i := slices.IndexFunc(running, func(tr *simTrial) bool { return tr.id == a.TrialID })
				if i < 0 || !outstanding[a.TrialID] {
					t.Fatalf("%s: stop of %s, which is not running", event, a.TrialID)
				}
				if running[i].stopping {
					t.Fatalf("%s: %s stopped twice", event, a.TrialID)
				}
				stops++
				running[i].stopping = true
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

	apply("initial", s.Initial())
	for tick := 0; !shutdown && tick < 10_000; tick++ {
		if len(running) == 0 {
			t.Fatalf("tick %d: nothing running and no shutdown", tick)
		}
		for _, tr := range running {
			if tr.steps == 0 {
				apply("created "+tr.id, s.TrialCreated(tr.id))
			}
		}
		var next []*simTrial
		for _, tr := range running {
			if tr.stopping {
				delete(outstanding, tr.id)
				apply(fmt.Sprintf("stopped %s %.6g", tr.id, tr.last), s.TrialFinished(tr.id, tr.last, OutcomeStopped))
				continue
			}
			tr.steps++
			metric := tr.c.Score * (1 + 1/float64(tr.steps))
			tr.last = metric
			switch {
			case tr.steps < tr.c.Len:
				apply(fmt.Sprintf("report %s %d %.6g", tr.id, tr.steps, metric), s.TrialReported(tr.id, float64(tr.steps*100), metric))
				next = append(next, tr)
			case tr.c.Fail:
				delete(outstanding, tr.id)
				apply("failed "+tr.id, s.TrialFailed(tr.id))
			default:
				delete(outstanding, tr.id)
				apply(fmt.Sprintf("finished %s %.6g", tr.id, metric), s.TrialFinished(tr.id, metric, OutcomeCompleted))
			}
		}
		// Trials created by this tick's events start next tick.
		running = next
		for _, c := range created {
			if outstanding[c.ID] && !containsTrial(running, c.ID) {
				running = append(running, &simTrial{id: c.ID, c: sc(c.Params)})
			}
		}
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
	return log.String(), created
}

func containsTrial(ts []*simTrial, id string) bool {
	for _, t := range ts {
		if t.id == id {
			return true
		}
	}
	return false
}

// checkHarness runs cfg (seed 42) through the harness and checks what every
// searcher owes: max_trials created, the same schedule for the same seed,
// another for seed 43 (once there is more than one trial to tell them
// apart). It returns the schedule.
func checkHarness(t *testing.T, cfg Config) string {
	t.Helper()
	cfg.Seed = 42
	sched, created := run(t, cfg, testScript)
	if len(created) != cfg.MaxTrials {
		t.Errorf("created %d trials, want max_trials %d", len(created), cfg.MaxTrials)
	}
	if again, _ := run(t, cfg, testScript); sched != again {
		t.Errorf("same seed, different schedules:\n%s\n---\n%s", sched, again)
	}
	cfg.Seed = 43
	if other, _ := run(t, cfg, testScript); cfg.MaxTrials > 1 && sched == other {
		t.Error("seeds 42 and 43 gave the same schedule")
	}
	return sched
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
