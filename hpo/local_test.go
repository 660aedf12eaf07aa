package hpo

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestLocalSettingsErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		s    LocalSettings
		want string
	}{
		{LocalSettings{Step: -0.1}, "search.local.step: -0.1"},
		{LocalSettings{Step: 0.6}, "search.local.step: 0.6"},
		{LocalSettings{Step: math.NaN()}, "search.local.step: NaN"},
		{LocalSettings{MaxVisited: -1}, "search.local.max_visited: -1"},
		{LocalSettings{MaxVisited: 40_001}, "search.local.max_visited: 40001"},
	} {
		cfg := Config{Algorithm: AlgorithmLocal, Space: testSpace(), MaxTrials: 5, MaxConcurrent: 1, Mode: "min", Settings: Settings{Local: &tc.s}}
		if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one with %q", tc.s, err, tc.want)
		}
	}
}

// A number's neighbours are step of its (log) range away, clamped to the
// range; an integer's move at least one; a constant has none.
func TestLocalNumberNeighbors(t *testing.T) {
	for _, tc := range []struct {
		d    Param
		v    float64
		want []float64
	}{
		{Param{Type: ParamFloat, Min: 0, Max: 10}, 5, []float64{4, 6}},
		{Param{Type: ParamFloat, Min: 0, Max: 10}, 0.5, []float64{0, 1.5}},
		{Param{Type: ParamFloat, Min: 0, Max: 10}, 10, []float64{9}},
		{Param{Type: ParamFloat, Min: 1e-4, Max: 1, Log: true}, 1e-2, []float64{1e-2 * math.Pow(10, -0.4), 1e-2 * math.Pow(10, 0.4)}},
		{Param{Type: ParamFloat, Min: 2, Max: 2}, 2, nil},
		{Param{Type: ParamInt, Min: 1, Max: 8}, 1, []float64{2}},
		{Param{Type: ParamInt, Min: 1, Max: 8}, 4, []float64{3, 5}},
		{Param{Type: ParamInt, Min: 0, Max: 100}, 50, []float64{40, 60}},
		{Param{Type: ParamInt, Min: 4, Max: 4}, 4, nil},
		{Param{Type: ParamInt, Min: -1e300, Max: 1e300}, 0, []float64{-2e299, 2e299}},
	} {
		var got []float64
		for _, v := range tc.d.neighbors(Float(tc.v), 0.1) {
			got = append(got, v.Num)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%+v at %v: neighbours %v, want %v", tc.d, tc.v, got, tc.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9*math.Abs(tc.want[i]) {
				t.Errorf("%+v at %v: neighbours %v, want %v", tc.d, tc.v, got, tc.want)
			}
		}
	}
}

// By hand, on x ∈ 0..10 with loss |x − 7|, one trial at a time from the
// enqueued x = 3: 3's neighbours are 2 and 4, in random order; 2 is
// worse, 4 better, so the climb moves to 4 as soon as 4 has been tried,
// then to 5 (3 is visited), 6, 7; 7's neighbours 6 (visited) and 8 are no
// better: a local optimum, and the next trial is a random point of a new
// climb, one not visited.
func TestLocalMovesToAnImprovingNeighbourAndRestartsAtAnOptimum(t *testing.T) {
	firsts := map[float64]bool{}
	for seed := range uint64(10) {
		cfg := Config{Algorithm: AlgorithmLocal, Space: Space{{Name: "x", Type: ParamInt, Min: 0, Max: 10}}, Seed: seed,
			MaxTrials: 20, MaxConcurrent: 1, Mode: "min", Points: []Params{{"x": Float(3)}}}
		s, err := NewSearcher(cfg)
		if err != nil {
			t.Fatal(err)
		}
		l := s.(*local)
		var xs []float64
		acts := l.Initial()
		for len(xs) == 0 || xs[len(xs)-1] != 8 {
			c := acts[0].(Create)
			x := c.Params["x"].Num
			xs = append(xs, x)
			acts = l.TrialFinished(c.ID, math.Abs(x-7), OutcomeCompleted)
		}
		want := []float64{3, 4, 5, 6, 7, 8}
		if xs[1] == 2 {
			want = slices.Insert(want, 1, 2)
		}
		firsts[xs[1]] = true
		if !slices.Equal(xs, want) {
			t.Fatalf("seed %d: trials at %v, want %v", seed, xs, want)
		}
		restart := acts[0].(Create).Params["x"].Num
		if l.st.Climb != 1 || l.st.Center != nil || l.st.Pending[0].Climb != 1 || slices.Contains(xs, restart) {
			t.Errorf("seed %d: after the optimum, climb %d, centre %+v, next trial at %v; want climb 1 from a random point not visited",
				seed, l.st.Climb, l.st.Center, restart)
		}
	}
	if len(firsts) != 2 {
		t.Errorf("over 10 seeds the climb always tried %v first", firsts)
	}
}

// Asynchronous: with two trials at once, a neighbour of an old centre
// that finishes better than the new centre still moves the climb.
func TestLocalOldCentresNeighboursCount(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmLocal, Space: Space{{Name: "x", Type: ParamInt, Min: 0, Max: 20}}, Seed: 1,
		MaxTrials: 20, MaxConcurrent: 2, Mode: "min", Points: []Params{{"x": Float(10)}}}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*local)
	x := func(acts []Action) float64 { return acts[0].(Create).Params["x"].Num }
	l.Initial() // t00001 at 10, t00002 a random start candidate
	first := x(l.TrialFinished("t00001", 5, OutcomeCompleted))
	if l.st.Center.Trial != "t00001" || math.Abs(first-10) != 2 { // step 0.1 of 21 integers
		t.Fatalf("centre %v, then %v; want t00001 (x = 10), then a neighbour, 8 or 12", l.st.Center.Trial, first)
	}
	second := x(l.TrialFinished("t00002", 50, OutcomeCompleted)) // worse: no move
	if second != 20-first || l.st.Center.Trial != "t00001" {
		t.Fatalf("after a worse start candidate: centre %s, next %v; want t00001, then %v", l.st.Center.Trial, second, 20-first)
	}
	l.TrialFinished("t00003", 4, OutcomeCompleted) // better: the centre moves to it
	if l.st.Center.Trial != "t00003" {
		t.Fatalf("centre %s, want t00003", l.st.Center.Trial)
	}
	l.TrialFinished("t00004", 3, OutcomeCompleted) // the old centre's other neighbour, better still
	if l.st.Center.Trial != "t00004" || l.st.Center.Params["x"].Num != second {
		t.Errorf("centre %+v, want t00004 (x = %v): an old centre's neighbour counts", l.st.Center, second)
	}
}

// While a climb's last trials run, free slots start the next climb, whose
// best result is its first centre.
func TestLocalRestartFromTheNextClimbsBest(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmLocal, Space: Space{{Name: "x", Type: ParamInt, Min: 0, Max: 20}}, Seed: 1,
		MaxTrials: 20, MaxConcurrent: 3, Mode: "max", Points: []Params{{"x": Float(0)}}}
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*local)
	l.Initial()                                    // t00001 at 0; t00002, t00003 start candidates
	l.TrialFinished("t00001", 9, OutcomeCompleted) // the centre; its one neighbour, 2, is t00004
	l.TrialFinished("t00002", 1, OutcomeCompleted) // no move; t00005 starts the next climb
	l.TrialFinished("t00003", 2, OutcomeCompleted) // no move; t00006 too
	if got := l.st.Pending; len(got) != 3 || got[0].Climb != 0 || got[1].Climb != 1 || got[2].Climb != 1 {
		t.Fatalf("pending %+v, want t00004 of climb 0, t00005 and t00006 of climb 1", got)
	}
	l.TrialFinished("t00006", 4, OutcomeCompleted)
	l.TrialFinished("t00005", 6, OutcomeCompleted)
	if l.st.Next == nil || l.st.Next.Trial != "t00005" || l.st.Climb != 0 {
		t.Fatalf("next %+v in climb %d, want t00005, the next climb's best so far, in climb 0", l.st.Next, l.st.Climb)
	}
	l.TrialFinished("t00004", 8, OutcomeCompleted) // no better: 0 is a local optimum
	if l.st.Climb != 1 || l.st.Center == nil || l.st.Center.Trial != "t00005" || l.st.Next != nil {
		t.Errorf("climb %d, centre %+v, next %+v; want climb 1 from t00005", l.st.Climb, l.st.Center, l.st.Next)
	}
}

// The visited set keeps the newest max_visited hashes: 8 bytes each in
// the snapshot.
func TestLocalVisitedIsBounded(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmLocal, Space: testSpace(), Seed: 2, MaxTrials: 50, MaxConcurrent: 1, Mode: "min",
		Settings: Settings{Local: &LocalSettings{MaxVisited: 5}}}
	out := drive(t, cfg, func(p Params) float64 { return testScript(p).Score }, true)
	s, _ := NewSearcher(cfg)
	l := s.(*local)
	for acts := l.Initial(); len(acts) > 0; {
		c, ok := acts[0].(Create)
		if !ok {
			break
		}
		acts = l.TrialFinished(c.ID, testScript(c.Params).Score, OutcomeCompleted)
	}
	if len(out.rows) != 50 || len(l.visited) != 5 || len(l.seen) != 5 {
		t.Fatalf("%d trials, %d visited (%d in the set), want 50 and 5", len(out.rows), len(l.visited), len(l.seen))
	}
	snap, _ := l.Snapshot()
	var env struct {
		State struct {
			Visited []byte `json:"visited"`
		} `json:"state"`
	}
	if err := json.Unmarshal(snap, &env); err != nil || len(env.State.Visited) != 40 {
		t.Errorf("snapshot's visited: %d bytes (%v), want 40", len(env.State.Visited), err)
	}
}

func TestLocalRestoreRejects(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmLocal, Space: testSpace(), Seed: 1, MaxTrials: 10, MaxConcurrent: 2, Mode: "min",
		Settings: Settings{Local: &LocalSettings{MaxVisited: 3}}}
	s, _ := NewSearcher(cfg)
	acts := s.Initial()
	s.TrialFinished(acts[0].(Create).ID, 1, OutcomeCompleted)
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreSearcher(cfg, snap); err != nil {
		t.Fatalf("its own snapshot: %v", err)
	}
	for name, edit := range map[string]func(map[string]any){
		"climb":         func(m map[string]any) { m["climb"] = 5.0 },
		"pending":       func(m map[string]any) { m["pending"] = []any{} },
		"visited odd":   func(m map[string]any) { m["visited"] = "AAAA" },
		"visited many":  func(m map[string]any) { m["visited"] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" }, // 4 hashes
		"visited twice": func(m map[string]any) { m["visited"] = "AAAAAAAAAAAAAAAAAAAAAA==" },
		"move dim":      func(m map[string]any) { m["moves"] = []any{map[string]any{"dim": 9, "value": 1}} },
		"move value":    func(m map[string]any) { m["moves"] = []any{map[string]any{"dim": 0, "value": 9}} },
		"centre": func(m map[string]any) {
			m["center"] = map[string]any{"trial": "t1", "metric": 1, "params": map[string]any{"lr": 7}}
		},
	} {
		var env struct {
			Type  string         `json:"type"`
			State map[string]any `json:"state"`
		}
		if err := json.Unmarshal(snap, &env); err != nil {
			t.Fatal(err)
		}
		edit(env.State)
		b, _ := json.Marshal(env)
		if _, err := RestoreSearcher(cfg, b); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
}

// local as the sampler of a stopping searcher passes the harness.
func TestHarnessLocalAsSampler(t *testing.T) {
	var set Settings
	js := `{"hyperband": {"min_budget": 200, "max_budget": 800, "reduction_factor": 2, "variant": "promotion", "sampler": "local"}, "local": {"step": 0.2}}`
	if err := json.Unmarshal([]byte(js), &set); err != nil {
		t.Fatal(err)
	}
	checkSchedule(t, Config{Algorithm: AlgorithmHyperband, Space: testSpace(), MaxTrials: 40, MaxConcurrent: 4, Mode: "min", Settings: set})
}

// Local search finds fitter architectures than random search in 200
// trials, in the median over 30 NK landscapes, alone and with 8 trials at
// once.
func TestLocalBeatsRandom(t *testing.T) {
	for _, par := range []int{1, 8} {
		median, wins := nasMedians(t, par, AlgorithmLocal)
		t.Logf("concurrent %d: median best fitness local %.4f, random %.4f; local better on %d of 30", par, median[AlgorithmLocal], median[AlgorithmRandom], wins[AlgorithmLocal])
		if !(median[AlgorithmLocal] > median[AlgorithmRandom]+0.02) || wins[AlgorithmLocal] < 20 {
			t.Errorf("concurrent %d: local's median %.4f, random's %.4f, local better on %d of 30; want it 0.02 better, on 20 or more",
				par, median[AlgorithmLocal], median[AlgorithmRandom], wins[AlgorithmLocal])
		}
	}
}
