package hpo

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// moCurve is a scripted trial under several objectives: at step s (its
// progress/100) it reports final·(1 + 1/s) per objective, the constraint
// values as they are, and it ends at step 8 unless its budget pauses it
// sooner.
func moCurve(final Result, step int) Result {
	r := Result{Values: make([]float64, len(final.Values)), Constraints: final.Constraints}
	for i, v := range final.Values {
		r.Values[i] = v * (1 + 1/float64(step))
	}
	return r
}

// moRun drives an ASHA search of several objectives, as the harness does
// one objective: every running trial makes a step (100 budget units) per
// tick, reports, pauses at its budget or ends at step 8; a Continue
// resumes a paused trial; a Continue must take a trial from the top
// max(⌊n/η⌋, 1) of the n results paused at its rung (the test's own
// ordering, by rank and crowding under cfg.Goals; by rank only where
// equal results make crowding depend on their order). After every event the snapshot must survive
// restore byte for byte and the run goes on with the restored searcher
// (unless fast). It returns the schedule, each trial's final result, and
// how many trials were continued from each rung (by budget).
func moRun(t *testing.T, cfg Config, final func(Params) Result, fast bool) (string, map[string]Result, map[float64]int) {
	t.Helper()
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type trial struct {
		id            string
		final         Result
		steps, budget int
		stopping      bool
		started       bool
	}
	var (
		log       strings.Builder
		trials    = map[string]*trial{}
		running   []*trial
		starting  []*trial // created or continued by this tick's events: they run from the next
		shutdown  bool
		continued = map[float64]int{}
		finals    = map[string]Result{}
		live      = map[string]bool{}  // created or continued, not ended
		paused    = map[int][]string{} // per step, the trials that paused there
		pausedAt  = map[string]Result{}
		goals     = cfg.Goals()
	)
	// above counts the results paused at step that rank strictly above id's.
	above := func(step int, id string) int {
		ids := paused[step]
		rs := make([]Result, len(ids))
		for i, x := range ids {
			rs[i] = pausedAt[fmt.Sprint(x, step)]
		}
		ranks := goals.Ranks(rs)
		me := slices.Index(ids, id)
		var front []Result
		at := 0 // id's place in its front
		for i, r := range ranks {
			if r == ranks[me] {
				if i == me {
					at = len(front)
				}
				front = append(front, rs[i])
			}
		}
		crowd := goals.Crowding(front)
		mine, n := crowd[at], 0
		for _, r := range ranks {
			if r < ranks[me] {
				n++
			}
		}
		dup := false // crowding among equal results depends on their order
		for i, r := range front {
			dup = dup || i != at && slices.Equal(r.Values, rs[me].Values)
		}
		for _, d := range crowd {
			if d > mine && !dup {
				n++
			}
		}
		return n
	}
	apply := func(event string, acts []Action) {
		fmt.Fprintf(&log, "%s:", event)
		for _, a := range acts {
			if shutdown {
				t.Fatalf("%s: %v after shutdown", event, a)
			}
			fmt.Fprintf(&log, " %v;", a)
			switch a := a.(type) {
			case Create:
				if err := cfg.Space.Contains(a.Params); err != nil {
					t.Fatalf("%s: %s: %v", event, a.ID, err)
				}
				tr := &trial{id: a.ID, final: final(a.Params), budget: int(a.Budget) / 100}
				trials[a.ID], finals[a.ID], live[a.ID] = tr, tr.final, true
				starting = append(starting, tr)
			case Continue:
				tr := trials[a.TrialID]
				if tr == nil || live[a.TrialID] || tr.steps != tr.budget {
					t.Fatalf("%s: continue of %s, not paused at its budget", event, a.TrialID)
				}
				continued[float64(tr.budget*100)]++
				if eta := cfg.Settings.ASHA.ReductionFactor; above(tr.steps, tr.id) >= max(int(float64(len(paused[tr.steps]))/eta), 1) {
					t.Errorf("%s: continue of %s, below the top 1/η of the %d paused at %d", event, tr.id, len(paused[tr.steps]), tr.steps*100)
				}
				tr.budget, tr.started, live[a.TrialID] = int(a.Budget)/100, false, true
				starting = append(starting, tr)
			case Stop:
				tr := trials[a.TrialID]
				if tr == nil || !live[a.TrialID] || tr.stopping {
					t.Fatalf("%s: stop of %s", event, a.TrialID)
				}
				tr.stopping = true
			case Shutdown:
				if len(live) > 0 {
					t.Fatalf("%s: shutdown with %d running", event, len(live))
				}
				shutdown = true
			}
		}
		log.WriteString("\n")
		if n := len(live); n > cfg.MaxConcurrent {
			t.Fatalf("%s: %d running > max_concurrent %d", event, n, cfg.MaxConcurrent)
		}
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
	for tick := 0; !shutdown; tick++ {
		running, starting = append(running, starting...), nil
		if tick > 100_000 || len(running) == 0 {
			t.Fatalf("tick %d: %d running, no shutdown", tick, len(running))
		}
		for _, tr := range running {
			if !tr.started {
				tr.started = true
				apply("created "+tr.id, s.TrialCreated(tr.id))
			}
		}
		var next []*trial
		for _, tr := range running {
			if tr.stopping {
				tr.stopping = false
				delete(live, tr.id)
				apply("stopped "+tr.id, Finish(s, tr.id, moCurve(tr.final, max(tr.steps, 1)), OutcomeStopped))
				continue
			}
			tr.steps++
			r := moCurve(tr.final, tr.steps)
			if tr.steps == tr.budget || tr.budget == 0 && tr.steps == 8 {
				delete(live, tr.id)
				if tr.steps == tr.budget {
					paused[tr.steps] = append(paused[tr.steps], tr.id)
					pausedAt[fmt.Sprint(tr.id, tr.steps)] = r
				}
				apply(fmt.Sprintf("ended %s %d %v", tr.id, tr.steps, r.Values), Finish(s, tr.id, r, OutcomeCompleted))
				continue
			}
			apply(fmt.Sprintf("report %s %d %v", tr.id, tr.steps, r.Values), Report(s, tr.id, float64(tr.steps*100), r))
			next = append(next, tr)
		}
		running = next
	}
	return log.String(), finals, continued
}

// moProblem is ZDT1 on 3 parameters, with, when constrained, x0 + x1 ≤ 1.
func moProblem(constrained bool) (Space, []Objective, []Constraint, func(Params) Result) {
	space, eval := zdt1(3)
	var cons []Constraint
	f := eval
	if constrained {
		one := 1.0
		cons = []Constraint{{Metric: "c", Max: &one}}
		f = func(p Params) Result {
			r := eval(p)
			r.Constraints = []float64{p["x0"].Num + p["x1"].Num}
			return r
		}
	}
	return space, []Objective{{"f1", "min"}, {"f2", "min"}}, cons, f
}

// Both variants, with both samplers, constrained or not, at several
// concurrencies: snapshots survive every event, the same seed gives the
// same schedule and another seed another; promotion continues only
// trials in the top 1/η of their rung (moRun checks).
func TestMOASHAHarness(t *testing.T) {
	for _, set := range []ASHASettings{
		{MinBudget: 100, ReductionFactor: 2},
		{MinBudget: 100, ReductionFactor: 2, MaxBudget: 400, Variant: VariantStopping, Sampler: AlgorithmNSGA2},
		{MinBudget: 100, ReductionFactor: 3, MaxBudget: 900, Variant: VariantPromotion},
		{MinBudget: 100, ReductionFactor: 2, MaxBudget: 800, Variant: VariantPromotion, Sampler: AlgorithmNSGA2},
	} {
		for _, constrained := range []bool{false, true} {
			for _, tc := range []struct{ trials, concurrent int }{{1, 1}, {20, 1}, {60, 7}} {
				t.Run(fmt.Sprintf("%+v/constrained=%v/%d,%d", set, constrained, tc.trials, tc.concurrent), func(t *testing.T) {
					space, objs, cons, eval := moProblem(constrained)
					cfg := Config{Algorithm: AlgorithmASHA, Space: space, Seed: 42, MaxTrials: tc.trials, MaxConcurrent: tc.concurrent, Mode: "min",
						Objectives: objs, Constraints: cons, Settings: Settings{ASHA: &set, NSGA2: &NSGA2Settings{PopulationSize: 6}}}
					if set.Sampler == "" {
						cfg.Settings.NSGA2 = nil
					}
					sched, finals, _ := moRun(t, cfg, eval, false)
					if again, _, _ := moRun(t, cfg, eval, false); again != sched {
						t.Errorf("same seed, different schedules:\n%s\n---\n%s", sched, again)
					}
					cfg.Seed = 43
					if other, _, _ := moRun(t, cfg, eval, false); tc.trials > 1 && other == sched {
						t.Error("seeds 42 and 43 gave the same schedule")
					}
					if len(finals) != tc.trials {
						t.Errorf("%d trials created, want %d", len(finals), tc.trials)
					}
				})
			}
		}
	}
}

// ASHA's snapshot under several objectives stays under 512 KB after
// 100,000 trials, as TestSnapshotsBoundedAt100kTrials checks one
// objective's (fed results of two objectives and a constraint; rungs
// keep moKeep results each).
func TestMOASHASnapshotBoundedAt100kTrials(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 trials per variant")
	}
	one := 1.0
	for _, set := range []ASHASettings{
		{MinBudget: 100, MaxBudget: 2700},
		{MinBudget: 100, MaxBudget: 2700, Variant: VariantPromotion},
	} {
		t.Run(cmpOr(set.Variant, VariantStopping), func(t *testing.T) {
			cfg := Config{Algorithm: AlgorithmASHA, Space: testSpace(), Seed: 1, MaxTrials: 100_000, MaxConcurrent: 8, Mode: "min",
				Objectives:  []Objective{{"a", "min"}, {"b", "max"}},
				Constraints: []Constraint{{Metric: "c", Max: &one}},
				Settings:    Settings{ASHA: &set}}
			s, err := NewSearcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			type job struct {
				id     string
				budget float64
			}
			var (
				queue          []job
				created, conts int
				shutdown       bool
				quality        = map[string][3]float64{}
				paused         = map[string]float64{}
			)
			take := func(acts []Action) {
				for _, a := range acts {
					switch a := a.(type) {
					case Create:
						queue = append(queue, job{a.ID, a.Budget})
						quality[a.ID] = [3]float64{rng.Float64(), rng.Float64(), 2 * rng.Float64()}
						created++
					case Continue:
						queue = append(queue, job{a.TrialID, a.Budget})
						conts++
					case Shutdown:
						shutdown = true
					}
				}
			}
			result := func(q [3]float64, k float64) Result {
				return Result{Values: []float64{q[0] + 1/k, q[1] - 1/k}, Constraints: []float64{q[2]}}
			}
			take(s.Initial())
			for len(queue) > 0 {
				j := queue[0]
				queue = queue[1:]
				take(s.TrialCreated(j.id))
				q := quality[j.id]
				r, stopped := result(q, 1), false
				for k := 1; k <= 10 && !stopped; k++ {
					at := float64(270 * k)
					if at <= paused[j.id] {
						continue
					}
					if j.budget > 0 && at >= j.budget {
						break
					}
					r = result(q, float64(k))
					acts := Report(s, j.id, at, r)
					stopped = slices.Contains(acts, Action(Stop{TrialID: j.id}))
					take(acts)
				}
				outcome := OutcomeCompleted
				switch {
				case stopped:
					outcome = OutcomeStopped
				case j.budget > 0:
					r = result(q, j.budget/270)
					paused[j.id] = j.budget
				}
				take(Finish(s, j.id, r, outcome))
			}
			snap, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d trials, %d continued, snapshot %d bytes", created, conts, len(snap))
			if created != 100_000 || !shutdown || len(snap) > 512<<10 {
				t.Errorf("%d trials created, shutdown %v, snapshot %d bytes; want 100,000, true and at most 512 KB", created, shutdown, len(snap))
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// A rung's incremental order (rungPoints.add) is paretoOrder's, while
// the results fit: each kept result's rank is its non-dominated rank
// among them, and they are sorted by rank, then crowding distance,
// larger first (seeded random results of two and three objectives, some
// infeasible).
func TestRungPointsAddMatchesParetoOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range []int{2, 3} {
		vg := violationGoals(Goals{Modes: slices.Repeat([]string{"min"}, m)})
		var ps rungPoints
		for n := range 200 {
			v := make([]float64, m)
			for i := range v {
				v[i] = rng.Float64()
			}
			p := rungPoint{Values: v}
			if rng.IntN(5) == 0 {
				p.Violation = float64(rng.IntN(3))
			}
			ps.add(vg, p)
			rs := make([]Result, len(ps))
			for i, x := range ps {
				rs[i] = x.result()
			}
			ranks := vg.Ranks(rs)
			crowd := make([]float64, len(rs))
			for r := 0; r <= slices.Max(ranks); r++ {
				var front []int
				var fr []Result
				for i, k := range ranks {
					if k == r {
						front, fr = append(front, i), append(fr, rs[i])
					}
				}
				for j, d := range vg.Crowding(fr) {
					crowd[front[j]] = d
				}
			}
			for i := range ps {
				if ps[i].Rank != ranks[i] {
					t.Fatalf("%d objectives, after %d results: place %d has rank %d, want %d", m, n+1, i, ps[i].Rank, ranks[i])
				}
				if i > 0 && ranks[i] == ranks[i-1] && crowd[i] > crowd[i-1] {
					t.Fatalf("%d objectives, after %d results: place %d crowding %v above place %d's %v", m, n+1, i, crowd[i], i-1, crowd[i-1])
				}
				if i > 0 && ranks[i] < ranks[i-1] {
					t.Fatalf("%d objectives, after %d results: ranks out of order at %d", m, n+1, i)
				}
			}
		}
	}
}

// Under several objectives ASHA refuses a sampler of one objective,
// naming the setting, and a snapshot of the other kind.
func TestMOASHARefuses(t *testing.T) {
	space, objs, _, _ := moProblem(false)
	cfg := Config{Algorithm: AlgorithmASHA, Space: space, MaxTrials: 4, MaxConcurrent: 1, Mode: "min", Objectives: objs,
		Settings: Settings{ASHA: &ASHASettings{MinBudget: 100, Sampler: AlgorithmTPE}}}
	if _, err := NewSearcher(cfg); err == nil || !strings.Contains(err.Error(), "search.asha.sampler: tpe takes one objective") {
		t.Errorf("tpe sampler: %v", err)
	}
	cfg.Settings.ASHA = &ASHASettings{MinBudget: 100, MaxBudget: 400, Variant: VariantPromotion}
	one := cfg
	one.Objectives = nil
	s, _ := NewSearcher(one)
	s.Initial()
	snap, _ := s.Snapshot()
	if _, err := RestoreSearcher(cfg, snap); err == nil {
		t.Error("a promotion snapshot of one objective restored under two")
	}
}
