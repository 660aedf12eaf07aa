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
	harnessSettings[AlgorithmNSGA2] = []string{
		`{}`,
		`{"nsga2": {"population_size": 4}}`,
		`{"nsga2": {"population_size": 2, "mutation_prob": 0, "crossover_prob": 1, "swapping_prob": 0.3}}`,
	}
}

// zdt1 is Zitzler, Deb and Thiele's ZDT1 (2000) on n parameters x0..x{n-1}
// in [0, 1]: f1 = x0, f2 = g·(1 − √(f1/g)) with g = 1 + 9·Σ_{i≥1} x_i/(n−1),
// both minimised; its Pareto front is f2 = 1 − √f1 (g = 1).
func zdt1(n int) (Space, func(Params) Result) {
	var s Space
	for i := range n {
		s = append(s, Param{Name: fmt.Sprintf("x%d", i), Type: ParamFloat, Min: 0, Max: 1})
	}
	return s, func(p Params) Result {
		sum := 0.0
		for i := 1; i < n; i++ {
			sum += p[fmt.Sprintf("x%d", i)].Num
		}
		f1 := p["x0"].Num
		g := 1 + 9*sum/float64(n-1)
		return Result{Values: []float64{f1, g * (1 - math.Sqrt(f1/g))}}
	}
}

// paretoRun drives cfg's searcher with results from eval, keeping up to
// max_concurrent trials in flight and finishing the oldest first; after
// every event the snapshot must survive restore byte for byte, and the
// run goes on with the restored searcher (unless fast: the benchmarks'
// thousands of events). It returns the schedule (every
// event and its actions) and every trial's parameters and result, in the
// order they finished.
func paretoRun(t *testing.T, cfg Config, eval func(Params) Result, fast bool) (string, []Params, []Result) {
	t.Helper()
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var (
		log      strings.Builder
		queue    []Create
		params   []Params
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
		if fast {
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
		params, results = append(params, c.Params), append(results, res)
		apply(fmt.Sprintf("finished %s %v", c.ID, res), Finish(s, c.ID, res, OutcomeCompleted))
	}
	if !shutdown {
		t.Fatal("no shutdown")
	}
	return log.String(), params, results
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// On ZDT1 (6 parameters, 2 objectives), the fronts NSGA-II finds in 500
// trials have a larger hypervolume at (1.1, 1.1) than random search's,
// over seeds 1..10 (medians; random search is the space's own Sample, as
// the random searcher draws it).
func TestNSGA2BeatsRandomOnZDT1(t *testing.T) {
	space, eval := zdt1(6)
	goals := Goals{Modes: []string{"min", "min"}}
	ref := []float64{1.1, 1.1}
	var nsga, rnd []float64
	for seed := uint64(1); seed <= 10; seed++ {
		cfg := Config{Algorithm: AlgorithmNSGA2, Space: space, Seed: seed, MaxTrials: 500, MaxConcurrent: 4, Mode: "min",
			Objectives: []Objective{{"f1", "min"}, {"f2", "min"}}}
		_, _, rs := paretoRun(t, cfg, eval, true)
		nsga = append(nsga, goals.Hypervolume(rs, ref))
		rng := rand.New(newPCG(seed))
		rs = rs[:0]
		for range 500 {
			rs = append(rs, eval(space.Sample(rng)))
		}
		rnd = append(rnd, goals.Hypervolume(rs, ref))
	}
	t.Logf("hypervolume at (1.1, 1.1), 500 trials, seeds 1..10: nsga2 median %.4f %v; random median %.4f %v", median(nsga), nsga, median(rnd), rnd)
	if median(nsga) <= median(rnd) {
		t.Errorf("nsga2's median hypervolume %.4f, not above random's %.4f", median(nsga), median(rnd))
	}
}

// With a constraint that rules out half the space (x0 + x1 ≤ 1 on ZDT1),
// the front of a search is all feasible, and so are the parents it ends
// with: constrained domination puts every feasible trial above every
// infeasible one.
func TestNSGA2ConstrainedFrontIsFeasible(t *testing.T) {
	space, eval := zdt1(6)
	one := 1.0
	cfg := Config{Algorithm: AlgorithmNSGA2, Space: space, Seed: 3, MaxTrials: 300, MaxConcurrent: 3, Mode: "min",
		Objectives:  []Objective{{"f1", "min"}, {"f2", "min"}},
		Constraints: []Constraint{{Metric: "c", Max: &one}},
		Settings:    Settings{NSGA2: &NSGA2Settings{PopulationSize: 20}}}
	withC := func(p Params) Result {
		r := eval(p)
		r.Constraints = []float64{p["x0"].Num + p["x1"].Num}
		return r
	}
	_, _, rs := paretoRun(t, cfg, withC, false)
	g := cfg.Goals()
	infeasible := 0
	for _, r := range rs {
		if !g.Feasible(r) {
			infeasible++
		}
	}
	front := g.Front(rs)
	for _, i := range front {
		if !g.Feasible(rs[i]) {
			t.Errorf("front member %d %v infeasible", i, rs[i])
		}
	}
	// The parents at the end, replayed to the same state.
	s, _ := NewSearcher(cfg)
	st := replayNSGA2(t, s.(*nsga2), withC)
	for _, m := range st.Parents {
		if m.Violation != 0 {
			t.Errorf("parent %s infeasible: violation %v", m.Trial, m.Violation)
		}
	}
	t.Logf("%d of %d trials infeasible; front %d, parents %d (generation %d)", infeasible, len(rs), len(front), len(st.Parents), st.Generation)
	if infeasible == 0 || len(st.Parents) != 20 {
		t.Errorf("%d infeasible trials, %d parents; want some, and 20", infeasible, len(st.Parents))
	}
}

// replayNSGA2 runs n to its end, one trial at a time, and returns its state.
func replayNSGA2(t *testing.T, n *nsga2, eval func(Params) Result) nsga2State {
	t.Helper()
	queue := n.Initial()
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		if c, ok := a.(Create); ok {
			queue = append(queue, n.TrialFinishedResult(c.ID, eval(c.Params), OutcomeCompleted)...)
		}
	}
	return n.st
}

// The same events give the same actions, fed as vectors with constraints
// (the harness checks the scalar feed).
func TestNSGA2ReplaysTheSameSchedule(t *testing.T) {
	space, eval := zdt1(3)
	one := 0.8
	cfg := Config{Algorithm: AlgorithmNSGA2, Space: space, Seed: 9, MaxTrials: 60, MaxConcurrent: 5, Mode: "min",
		Objectives:  []Objective{{"f1", "min"}, {"f2", "max"}},
		Constraints: []Constraint{{Metric: "c", Max: &one}},
		Settings:    Settings{NSGA2: &NSGA2Settings{PopulationSize: 8}}}
	evalC := func(p Params) Result {
		r := eval(p)
		if p["x2"].Num < 0.1 {
			r.Values[1] = math.NaN() // a value missing: joins no generation
		}
		if p["x1"].Num > 0.3 {
			r.Constraints = []float64{p["x1"].Num} // else unreported: infeasible
		}
		return r
	}
	a, _, _ := paretoRun(t, cfg, evalC, false)
	b, _, _ := paretoRun(t, cfg, evalC, false)
	if a != b {
		t.Errorf("same events, different schedules:\n%s\n---\n%s", a, b)
	}
	cfg.Seed = 10
	if c, _, _ := paretoRun(t, cfg, evalC, false); c == a {
		t.Error("seeds 9 and 10 gave the same schedule")
	}
}

// Elite selection by hand: the front first, then the next front cut by
// crowding distance (its extremes, infinitely crowded, kept first); an
// infeasible member only after every feasible one.
func TestNSGA2EliteByHand(t *testing.T) {
	vg := violationGoals(Goals{Modes: []string{"min", "min"}})
	m := func(id string, f1, f2, viol float64) paretoMember {
		return paretoMember{Trial: id, Values: []float64{f1, f2}, Violation: viol}
	}
	ms := []paretoMember{
		m("bad", 0, 0, 0.5), // infeasible: last
		m("a", 0, 3, 0),     // front 0
		m("b", 3, 0, 0),     // front 0
		m("c", 1, 8, 0),     // front 1 (a dominates it), extreme
		m("d", 2, 6, 0),     // front 1, crowded
		m("e", 2.2, 5.8, 0), // front 1
		m("f", 6, 4, 0),     // front 1, extreme
		m("g", 7, 9, 0),     // front 2
		m("h", 0, 0, 0.25),  // infeasible, less violation
	}
	var got []string
	for _, x := range eliteOf(vg, ms, 5) {
		got = append(got, x.Trial)
	}
	// Front 1 by f1: c d e f, spans 5 (f1) and 4 (f2): d's distance
	// (2.2−1)/5 + (8−5.8)/4 = 0.79, e's (6−2)/5 + (6−4)/4 = 1.3.
	want := []string{"a", "b", "c", "f", "e"}
	if !slices.Equal(got, want) {
		t.Errorf("elite of 5 = %v, want %v", got, want)
	}
	got = got[:0]
	for _, x := range eliteOf(vg, ms, 8) {
		got = append(got, x.Trial)
	}
	if len(got) != 8 || got[7] != "h" {
		t.Errorf("elite of 8 = %v, want every feasible one, then h (bad violates more)", got)
	}
}

func TestNSGA2SettingsErrorsNameTheField(t *testing.T) {
	bad, big := -0.1, 1.5
	for _, tc := range []struct {
		set  NSGA2Settings
		want string
	}{
		{NSGA2Settings{PopulationSize: 1}, "population_size"},
		{NSGA2Settings{PopulationSize: 501}, "population_size"},
		{NSGA2Settings{MutationProb: &bad}, "mutation_prob"},
		{NSGA2Settings{CrossoverProb: &big}, "crossover_prob"},
		{NSGA2Settings{SwappingProb: &bad}, "swapping_prob"},
	} {
		cfg := Config{Algorithm: AlgorithmNSGA2, Space: testSpace(), MaxTrials: 4, MaxConcurrent: 1, Mode: "min", Settings: Settings{NSGA2: &tc.set}}
		if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "search.nsga2."+tc.want) {
			t.Errorf("%+v: error %v, want one naming search.nsga2.%s", tc.set, err, tc.want)
		}
	}
}

// A generation's children come from its parents only once P trials of it
// finished with values; before that every trial is random, and failed or
// valueless trials count for nothing.
func TestNSGA2GenerationsWaitForPopulation(t *testing.T) {
	cfg := Config{Algorithm: AlgorithmNSGA2, Space: testSpace(), Seed: 2, MaxTrials: 30, MaxConcurrent: 1, Mode: "min",
		Settings: Settings{NSGA2: &NSGA2Settings{PopulationSize: 3}}}
	s, _ := NewSearcher(cfg)
	n := s.(*nsga2)
	acts := n.Initial()
	next := func(acts []Action) Create {
		t.Helper()
		if len(acts) != 1 {
			t.Fatalf("actions %v, want one create", acts)
		}
		return acts[0].(Create)
	}
	c := next(acts)
	c = next(n.TrialFailed(c.ID))
	c = next(n.TrialFinished(c.ID, math.NaN(), OutcomeCompleted))
	c = next(n.TrialFinished(c.ID, 1, OutcomeCompleted))
	c = next(n.TrialFinished(c.ID, 2, OutcomeStopped))
	if n.st.Generation != 0 || len(n.st.Filling) != 2 || c.Stage != "generation 0" {
		t.Fatalf("after 2 results: generation %d, filling %d, stage %q; want 0, 2, generation 0", n.st.Generation, len(n.st.Filling), c.Stage)
	}
	c = next(n.TrialFinished(c.ID, 0.5, OutcomeCompleted))
	if n.st.Generation != 1 || len(n.st.Parents) != 3 || len(n.st.Filling) != 0 || c.Stage != "generation 1" {
		t.Fatalf("after 3 results: generation %d, parents %d, filling %d, stage %q; want 1, 3, 0, generation 1", n.st.Generation, len(n.st.Parents), len(n.st.Filling), c.Stage)
	}
}

// In a conditional space with a forbidden clause, NSGA-II's children hold
// exactly their active parameters and none is forbidden (the harness
// checks Contains on every create).
func TestNSGA2Conditional(t *testing.T) {
	forbid := []Forbidden{{All: []Condition{{"optimizer", []string{"sgd"}}, {"n_layers", []string{"3"}}}}}
	cfg := Config{Algorithm: AlgorithmNSGA2, Space: condSpace(), Forbidden: forbid, Seed: 42, MaxTrials: 80, MaxConcurrent: 4, Mode: "min",
		Settings: Settings{NSGA2: &NSGA2Settings{PopulationSize: 6}}}
	sched, created := run(t, cfg, condScript)
	if again, _ := run(t, cfg, condScript); again != sched {
		t.Error("same seed, different schedules")
	}
	sets := map[string]bool{}
	for _, c := range created {
		checkCondParams(t, c.Params)
		if forbid[0].Forbids(cfg.Space, c.Params) {
			t.Errorf("%s: forbidden %v", c.ID, c.Params)
		}
		sets[strings.Join(c.Params.Names(), ",")] = true
	}
	if len(sets) < 3 {
		t.Errorf("%d sets of active parameters, want at least 3: %v", len(sets), sets)
	}
}
