package searchbench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// scripted is a searcher a test writes: its hooks return the actions,
// and it records every event it hears.
type scripted struct {
	initial    []hpo.Action
	onReported func(id string, progress, metric float64) []hpo.Action
	onFinished func(id string, metric float64, o hpo.Outcome) []hpo.Action
	log        []string
	reports    map[string][]Point
}

func (s *scripted) Initial() []hpo.Action { return s.initial }
func (s *scripted) TrialCreated(id string) []hpo.Action {
	s.log = append(s.log, "created "+id)
	return nil
}
func (s *scripted) TrialReported(id string, progress, metric float64) []hpo.Action {
	if s.reports == nil {
		s.reports = map[string][]Point{}
	}
	s.reports[id] = append(s.reports[id], Point{Samples: progress, Value: metric})
	if s.onReported == nil {
		return nil
	}
	return s.onReported(id, progress, metric)
}
func (s *scripted) TrialFinished(id string, metric float64, o hpo.Outcome) []hpo.Action {
	s.log = append(s.log, fmt.Sprintf("finished %s %s", id, o))
	if s.onFinished == nil {
		return nil
	}
	return s.onFinished(id, metric, o)
}
func (s *scripted) TrialFailed(id string) []hpo.Action { return nil }
func (s *scripted) Progress() float64                  { return 0 }
func (s *scripted) Snapshot() ([]byte, error)          { return nil, nil }
func (s *scripted) Restore([]byte) error               { return nil }

func toyParams(h0, h1 float64) hpo.Params {
	return hpo.Params{"h0": hpo.Float(h0), "h1": hpo.Float(h1)}
}

// toyLoss is −Q(θ) after the toy problem's gradient steps: θi after k
// steps with hi is 0.9·(1 − 0.02·hi)^k, and successive segments multiply.
func toyLoss(theta0, theta1 float64) float64 { return theta0*theta0 + theta1*theta1 - 1.2 }

func toyTheta(segments ...[2]float64) float64 { // {h, steps} per segment
	theta := 0.9
	for _, s := range segments {
		theta *= math.Pow(1-0.02*s[0], s[1])
	}
	return theta
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }

// The toy problem's metric after k steps is the closed form, at every k,
// and its optimum is h = (1, 1) run to the full budget.
func TestPBTToyClosedForm(t *testing.T) {
	o := pbtToy()
	if err := o.Space.Validate(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		h0, h1 := rng.Float64(), rng.Float64()
		pts := o.Points(toyParams(h0, h1))
		if len(pts) != 40 {
			t.Fatalf("h = (%v, %v): %d reports, want 40", h0, h1, len(pts))
		}
		for k, p := range pts {
			steps := float64(k + 1)
			want := toyLoss(toyTheta([2]float64{h0, steps}), toyTheta([2]float64{h1, steps}))
			if p.Samples != steps || !near(p.Value, want) {
				t.Fatalf("h = (%v, %v), step %v: %+v, want %v", h0, h1, steps, p, want)
			}
		}
	}
	pts := o.Points(toyParams(1, 1))
	if got := pts[len(pts)-1].Value; !near(got, o.Optimum) || math.Abs(o.Optimum+0.8781889) > 1e-7 {
		t.Errorf("h = (1, 1) after 40 steps: %v, optimum %v, want ≈ −0.8781889", got, o.Optimum)
	}
}

// A trial pauses at its budget, a Continue resumes it where it paused
// (costing time for the new part only), and a Create.From starts from the
// source's state with its own parameters; budget counts each step once.
func TestBudgetContinueAndFrom(t *testing.T) {
	finished := map[string]int{}
	s := &scripted{
		initial: []hpo.Action{
			hpo.Create{ID: "a", Params: toyParams(1, 0), Budget: 10},
			hpo.Create{ID: "b", Params: toyParams(0, 1), Budget: 10, Stage: "gen 0"},
		},
		onFinished: func(id string, _ float64, _ hpo.Outcome) []hpo.Action {
			finished[id]++
			switch {
			case id == "a" && finished[id] == 1:
				return []hpo.Action{hpo.Continue{TrialID: "a", Budget: 30}}
			case id == "b":
				return []hpo.Action{hpo.Create{ID: "c", Params: toyParams(1, 1), From: "b", Budget: 35, Stage: "gen 1"}}
			}
			return nil
		},
	}
	steps, err := simulate(Setup{Algorithm: "scripted", Objective: pbtToy()}, s)
	if err != nil {
		t.Fatal(err)
	}
	// a pauses at 10 and b at 10 (time 0.25); a continued to 30 ends at
	// 0.25 + 20/40 = 0.75, before c (25 steps from b's 10) at 0.875: a
	// continued trial's time counts from where it paused.
	wantLog := []string{"created a", "created b", "finished a completed", "created a", "finished b completed", "created c",
		"finished a completed", "finished c completed"}
	if !slices.Equal(s.log, wantLog) {
		t.Errorf("events:\n got %q\nwant %q", s.log, wantLog)
	}
	for id, want := range map[string][2]float64{"a": {1, 30}, "b": {1, 10}, "c": {11, 35}} {
		r := s.reports[id]
		for i, p := range r {
			if p.Samples != want[0]+float64(i) {
				t.Fatalf("%s reports at %v, want one every step from %v to %v", id, r, want[0], want[1])
			}
		}
		if len(r) == 0 || r[len(r)-1].Samples != want[1] {
			t.Fatalf("%s reports %v, want up to %v", id, r, want[1])
		}
	}
	last := func(id string) float64 { r := s.reports[id]; return r[len(r)-1].Value }
	if want := toyLoss(toyTheta([2]float64{1, 30}), 0.9); !near(last("a"), want) {
		t.Errorf("a after 10 + 20 steps at h = (1, 0): %v, want %v", last("a"), want)
	}
	// c: b's θ after 10 steps at (0, 1), then 25 at (1, 1).
	if want := toyLoss(toyTheta([2]float64{0, 10}, [2]float64{1, 25}), toyTheta([2]float64{1, 10}, [2]float64{1, 25})); !near(last("c"), want) {
		t.Errorf("c from b: %v, want %v", last("c"), want)
	}
	wantSteps := []Step{
		{Budget: 10.0 / 40, Trials: 1}, {Budget: 20.0 / 40, Trials: 2}, {Budget: 40.0 / 40, Trials: 2}, {Budget: 65.0 / 40, Trials: 3},
	}
	for i := range steps {
		if i < len(wantSteps) {
			wantSteps[i].Best = steps[i].Best
		}
	}
	if !slices.Equal(steps, wantSteps) {
		t.Errorf("steps:\n got %+v\nwant %+v", steps, wantSteps)
	}
	if best := steps[len(steps)-1].Best; best != min(last("a"), last("b"), last("c")) {
		t.Errorf("best %v of a %v, b %v, c %v", best, last("a"), last("b"), last("c"))
	}
}

// A curve trial continued resumes at the curve point after its pause, and
// a Continue past the curve's end or at a budget it reached already ends
// at once, charging nothing.
func TestContinueFollowsTheCurve(t *testing.T) {
	o := goMLP()
	p := hpo.Params{"lr": hpo.Float(0.3), "hidden": hpo.Float(16), "batch": hpo.String("32"), "momentum": hpo.String("0.9")}
	n := 0
	s := &scripted{
		initial: []hpo.Action{hpo.Create{ID: "a", Params: p, Budget: 2000}},
		onFinished: func(id string, _ float64, _ hpo.Outcome) []hpo.Action {
			n++
			switch n {
			case 1:
				return []hpo.Action{hpo.Continue{TrialID: "a", Budget: 3000}} // reached already (3840 ≥ 3000)
			case 2:
				return []hpo.Action{hpo.Continue{TrialID: "a", Budget: o.FullBudget}}
			}
			return nil
		},
	}
	steps, err := simulate(Setup{Algorithm: "scripted", Objective: o}, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.reports["a"], o.Points(p); !slices.Equal(got, want) {
		t.Errorf("a's reports over three segments:\n got %v\nwant the curve %v", got, want)
	}
	if len(steps) != 3 || steps[0].Budget != 3840/o.FullBudget || steps[1].Budget != steps[0].Budget || steps[2].Budget != 1 {
		t.Errorf("steps %+v: want 3840 samples, none more, then the rest of the full budget", steps)
	}
}

// Contract breaches are errors that name the algorithm and the trial.
func TestSimulatorRefuses(t *testing.T) {
	toy := toyParams(0.5, 0.5)
	mlp := hpo.Params{"lr": hpo.Float(0.3), "hidden": hpo.Float(16), "batch": hpo.String("32"), "momentum": hpo.String("0.9")}
	after := func(id string, acts ...hpo.Action) func(string, float64, hpo.Outcome) []hpo.Action {
		return func(got string, _ float64, _ hpo.Outcome) []hpo.Action {
			if got == id {
				return acts
			}
			return nil
		}
	}
	for _, tc := range []struct {
		name     string
		o        Objective
		s        *scripted
		want     string
		sentinel error
	}{
		{"continue a running trial", pbtToy(), &scripted{
			initial:    []hpo.Action{hpo.Create{ID: "a", Params: toy, Budget: 10}, hpo.Create{ID: "b", Params: toy, Budget: 5}},
			onFinished: after("b", hpo.Continue{TrialID: "a", Budget: 20}),
		}, "scripted continued trial a, which has not ended at a budget (it is running)", nil},
		{"continue a trial run to its end", pbtToy(), &scripted{
			initial:    []hpo.Action{hpo.Create{ID: "a", Params: toy}},
			onFinished: after("a", hpo.Continue{TrialID: "a", Budget: 50}),
		}, "scripted continued trial a, which has not ended at a budget (it ran without a budget, to its end)", nil},
		{"continue a stopped trial", pbtToy(), &scripted{
			initial: []hpo.Action{hpo.Create{ID: "a", Params: toy, Budget: 10}},
			onReported: func(id string, progress, _ float64) []hpo.Action {
				if progress == 3 {
					return []hpo.Action{hpo.Stop{TrialID: id}}
				}
				return nil
			},
			onFinished: after("a", hpo.Continue{TrialID: "a", Budget: 20}),
		}, "scripted continued trial a, which has not ended at a budget (it was stopped)", nil},
		{"continue an unknown trial", pbtToy(), &scripted{
			initial: []hpo.Action{hpo.Continue{TrialID: "z", Budget: 20}},
		}, "scripted continued trial z, which it never created", nil},
		{"from a running trial that never paused", pbtToy(), &scripted{
			initial:    []hpo.Action{hpo.Create{ID: "a", Params: toy}, hpo.Create{ID: "b", Params: toy, Budget: 5}},
			onFinished: after("b", hpo.Create{ID: "c", Params: toy, From: "a"}),
		}, "scripted created trial c from a, which has not reached a budget (it is running)", nil},
		{"from on a learning-curve objective", goMLP(), &scripted{
			initial:    []hpo.Action{hpo.Create{ID: "a", Params: mlp, Budget: 1920}},
			onFinished: after("a", hpo.Create{ID: "b", Params: mlp, From: "a", Budget: 3840}),
		}, "scripted created trial b from a: objective does not support Create.From: go-mlp's learning curves", ErrFromUnsupported},
		{"from on a test function", branin(), &scripted{
			initial:    []hpo.Action{hpo.Create{ID: "a", Params: point(1, 1), Budget: 1}},
			onFinished: after("a", hpo.Create{ID: "b", Params: point(2, 2), From: "a"}),
		}, "objective does not support Create.From: branin's", ErrFromUnsupported},
		{"a trial created twice", pbtToy(), &scripted{
			initial: []hpo.Action{hpo.Create{ID: "a", Params: toy, Budget: 10}, hpo.Create{ID: "a", Params: toy}},
		}, "scripted created trial a twice", nil},
		{"stop a paused trial", pbtToy(), &scripted{
			initial:    []hpo.Action{hpo.Create{ID: "a", Params: toy, Budget: 10}},
			onFinished: after("a", hpo.Stop{TrialID: "a"}),
		}, "scripted stopped a, which is not running", nil},
	} {
		_, err := simulate(Setup{Algorithm: "scripted", Objective: tc.o}, tc.s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to say %q", tc.name, err, tc.want)
		}
		if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
			t.Errorf("%s: %v is not %v", tc.name, err, tc.sentinel)
		}
	}
}

// randomScript pauses, continues, stops and copies trials at random, and
// counts what they trained from what they reported: every budgeted
// segment reports every point it trains through.
type randomScript struct {
	scripted
	rng      *rand.Rand
	o        Objective
	trials   int
	budget   map[string]float64 // the latest segment's budget
	last     map[string]float64 // the latest reported progress
	first    map[string]float64 // the progress it started from
	pausedAt map[string]float64 // where it last paused at its budget
	created  int
	running  int
}

func newRandomScript(o Objective, seed uint64, trials int) *randomScript {
	r := &randomScript{rng: rand.New(rand.NewPCG(seed, 7)), o: o, trials: trials, budget: map[string]float64{},
		last: map[string]float64{}, first: map[string]float64{}, pausedAt: map[string]float64{}}
	for range 3 {
		r.initial = append(r.initial, r.create()...)
	}
	r.onReported = func(id string, progress, _ float64) []hpo.Action {
		if progress <= r.last[id] {
			panic(fmt.Sprintf("%s reported %v after %v", id, progress, r.last[id]))
		}
		r.last[id] = progress
		if r.rng.Float64() < 0.03 {
			return []hpo.Action{hpo.Stop{TrialID: id}}
		}
		return nil
	}
	r.onFinished = func(id string, _ float64, o hpo.Outcome) []hpo.Action {
		r.running--
		if o == hpo.OutcomeCompleted && r.last[id] >= r.budget[id]*(1-1e-9) {
			r.pausedAt[id] = r.last[id]
		}
		var acts []hpo.Action
		for r.running < 3 {
			a := r.next()
			if a == nil {
				break
			}
			acts = append(acts, a...)
		}
		return acts
	}
	return r
}

func (r *randomScript) create() []hpo.Action {
	if r.created >= r.trials {
		return nil
	}
	r.created++
	id := fmt.Sprintf("t%d", r.created)
	c := hpo.Create{ID: id, Params: r.o.Space.Sample(r.rng), Budget: r.step()}
	if r.o.Stateful() && len(r.pausedAt) > 0 && r.rng.IntN(2) == 0 {
		c.From = r.pick()
		r.first[id], r.last[id] = r.pausedAt[c.From], r.pausedAt[c.From]
		c.Budget += r.first[id]
	}
	r.budget[id] = c.Budget
	r.running++
	return []hpo.Action{c}
}

func (r *randomScript) step() float64 { return r.o.Budget() * (0.05 + 0.4*r.rng.Float64()) }

func (r *randomScript) pick() string {
	ids := make([]string, 0, len(r.pausedAt))
	for id := range r.pausedAt {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids[r.rng.IntN(len(ids))]
}

// next continues a paused trial or creates one; nil when done.
func (r *randomScript) next() []hpo.Action {
	if len(r.pausedAt) > 0 && (r.created >= r.trials || r.rng.IntN(2) == 0) {
		id := r.pick()
		b := r.pausedAt[id] + r.step()
		delete(r.pausedAt, id)
		r.budget[id] = b
		r.running++
		return []hpo.Action{hpo.Continue{TrialID: id, Budget: b}}
	}
	return r.create()
}

// Budget spent is every trained unit exactly once, however trials were
// paused, continued, stopped and copied, on every kind of objective.
func TestBudgetCountsEachUnitOnce(t *testing.T) {
	for _, o := range []Objective{pbtToy(), goMLP(), branin()} {
		for seed := range uint64(20) {
			r := newRandomScript(o, seed, 15)
			steps, err := simulate(Setup{Algorithm: "random-script", Objective: o, Seed: seed, CostSigma: 0.3}, r)
			if err != nil {
				t.Fatalf("%s seed %d: %v", o.Name, seed, err)
			}
			var trained float64
			for id, last := range r.last {
				trained += last - r.first[id]
			}
			if got := steps[len(steps)-1].Budget * o.Budget(); math.Abs(got-trained) > 1e-9*trained {
				t.Errorf("%s seed %d: spent %v budget units, trials trained %v", o.Name, seed, got, trained)
			}
			for i := 1; i < len(steps); i++ {
				if steps[i].Budget < steps[i-1].Budget || steps[i].Best > steps[i-1].Best || steps[i].Trials < steps[i-1].Trials {
					t.Fatalf("%s seed %d: step %+v after %+v", o.Name, seed, steps[i], steps[i-1])
				}
			}
		}
	}
}

// Every bench method runs on the toy problem and on the learning curves
// (PBT on the toy problem only), and none reports better than the optimum.
func TestBenchMethodsRun(t *testing.T) {
	for _, o := range []Objective{pbtToy(), goMLP()} {
		for _, m := range Methods() {
			if err := CanRun(m, o); err != nil {
				if m != hpo.AlgorithmPBT || o.Stateful() || !errors.Is(err, ErrFromUnsupported) {
					t.Errorf("%s on %s: %v", m, o.Name, err)
				}
				continue
			}
			run, err := Run(Setup{Algorithm: m, Settings: DefaultSettings(m, o), Objective: o, Workers: 8, Trials: 40, Seed: 1, CostSigma: 0.3})
			if err != nil {
				t.Errorf("%s on %s: %v", m, o.Name, err)
				continue
			}
			if len(run) == 0 || run[len(run)-1].Best < o.Optimum-1e-12 {
				t.Errorf("%s on %s: %d steps, best below the optimum %v: %+v", m, o.Name, len(run), o.Optimum, run)
			}
		}
	}
	if err := CanRun(hpo.AlgorithmPBT, goMLP()); !errors.Is(err, ErrFromUnsupported) {
		t.Errorf("pbt on go-mlp: %v, want ErrFromUnsupported", err)
	}
}
