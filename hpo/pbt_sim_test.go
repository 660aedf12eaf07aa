package hpo

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

// The PBT tests drive the searcher through their own simulation, since
// PBT needs what the shared harness does not model: trials that pause at
// their Budget, Continue, and Create.From copying a checkpoint.

// pbtTrial is a simulated trial: it trains one budget unit per tick and
// checkpoints at every budget end.
type pbtTrial struct {
	id        string
	params    Params
	progress  float64
	budget    float64 // 0: the trainer runs to the driver's ownEnd
	steps     int     // units trained since it last started
	running   bool
	announced bool
	theta     [2]float64
	ckpt      *pbtCkpt // the latest budget end
	// ckpts are all its budget ends by progress, as the workers keep
	// them (activities' sealed checkpoints).
	ckpts map[float64]pbtCkpt
	// from and fromProgress: created From that checkpoint, copied when
	// it starts; wait is the ticks it waits for nodes before.
	from         *pbtTrial
	fromProgress float64
	wait         int
}

type pbtCkpt struct {
	progress float64
	theta    [2]float64
}

// pbtDriver runs a searcher to Shutdown over simulated trials, checking
// every action against the Searcher contract as it goes.
type pbtDriver struct {
	t   *testing.T
	cfg Config
	// start sets up a trial created from scratch; step trains one unit
	// and returns the metric; fails, if set, says the trial fails now.
	start  func(*pbtTrial)
	step   func(*pbtTrial) float64
	fails  func(*pbtTrial) bool
	ownEnd float64
	// twin: at every event, a searcher restored from the snapshot taken
	// just before it must answer the event with the same actions.
	twin bool
	// lag is how many ticks a trial created From another waits for nodes
	// before it starts and copies its checkpoint; its source may train on
	// meanwhile, past the budget end it was ranked at.
	lag int
	// slots, when > 0, is how many trials train per tick (a pool smaller
	// than the population): the others wait their turn.
	slots int
	// starts are the progress each Create and Continue starts from, in
	// the order the searcher asked for them.
	starts []float64

	s         Searcher
	trials    map[string]*pbtTrial
	running   []*pbtTrial
	pending   []*pbtTrial
	created   []Create
	continues int
	live      int // trials running or about to
	shutdown  bool
	best      float64
	log       strings.Builder
}

func newPBTDriver(t *testing.T, cfg Config, step func(*pbtTrial) float64) *pbtDriver {
	t.Helper()
	s, err := NewSearcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &pbtDriver{t: t, cfg: cfg, s: s, step: step, start: func(*pbtTrial) {}, trials: map[string]*pbtTrial{}, best: math.Inf(-1)}
}

// actionsString spells actions out field by field (Stage and From
// included), for comparing two searchers' answers.
func actionsString(acts []Action) string {
	var b strings.Builder
	for _, a := range acts {
		fmt.Fprintf(&b, "%#v; ", a)
	}
	return b.String()
}

func (d *pbtDriver) event(name string, ev func(Searcher) []Action) {
	t := d.t
	t.Helper()
	var twin Searcher
	if d.twin {
		snap, err := d.s.Snapshot()
		if err != nil {
			t.Fatalf("%s: snapshot: %v", name, err)
		}
		if twin, err = RestoreSearcher(d.cfg, snap); err != nil {
			t.Fatalf("%s: restore: %v", name, err)
		}
		if again, _ := twin.Snapshot(); !bytes.Equal(snap, again) {
			t.Fatalf("%s: snapshot changed by restore:\n%s\n%s", name, snap, again)
		}
	}
	acts := ev(d.s)
	if twin != nil {
		if got, want := actionsString(ev(twin)), actionsString(acts); got != want {
			t.Fatalf("%s: restored searcher answered\n%s\nwant\n%s", name, got, want)
		}
		a, _ := d.s.Snapshot()
		b, _ := twin.Snapshot()
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: restored searcher's state diverged:\n%s\n%s", name, a, b)
		}
	}
	if p := d.s.Progress(); !(p >= 0 && p <= 1) {
		t.Fatalf("%s: progress %v outside [0, 1]", name, p)
	}
	fmt.Fprintf(&d.log, "%s: %s\n", name, actionsString(acts))
	for _, a := range acts {
		d.apply(name, a)
	}
	if n := d.live; n > d.cfg.MaxConcurrent {
		t.Fatalf("%s: %d trials outstanding > max_concurrent %d", name, n, d.cfg.MaxConcurrent)
	}
}

func (d *pbtDriver) apply(name string, a Action) {
	t := d.t
	t.Helper()
	if d.shutdown {
		t.Fatalf("%s: %v after shutdown", name, a)
	}
	switch a := a.(type) {
	case Create:
		if d.trials[a.ID] != nil {
			t.Fatalf("%s: trial %s created twice", name, a.ID)
		}
		if err := d.cfg.Space.Contains(a.Params); err != nil {
			t.Fatalf("%s: %s: %v", name, a.ID, err)
		}
		tr := &pbtTrial{id: a.ID, params: a.Params, budget: a.Budget, running: true}
		if a.From != "" {
			src := d.trials[a.From]
			if src == nil || src.ckpt == nil {
				t.Fatalf("%s: %s from %s, which has not reached a budget", name, a.ID, a.From)
			}
			if _, ok := src.ckpts[a.FromProgress]; !ok {
				t.Fatalf("%s: %s from %s at %v, which is not one of its budget ends", name, a.ID, a.From, a.FromProgress)
			}
			tr.from, tr.fromProgress, tr.wait = src, a.FromProgress, d.lag
			tr.progress = a.FromProgress
		} else {
			d.start(tr)
		}
		if a.Budget != 0 && !(a.Budget > tr.progress) {
			t.Fatalf("%s: %s budget %v, not past its start %v", name, a.ID, a.Budget, tr.progress)
		}
		d.trials[a.ID] = tr
		d.starts = append(d.starts, a.FromProgress)
		d.created = append(d.created, a)
		d.pending = append(d.pending, tr)
		d.live++
	case Continue:
		tr := d.trials[a.TrialID]
		if tr == nil || tr.running || tr.ckpt == nil || tr.ckpt.progress != tr.progress {
			t.Fatalf("%s: continue of %s, which is not paused at a budget", name, a.TrialID)
		}
		if !(a.Budget > tr.progress) {
			t.Fatalf("%s: continue %s to %v, not past its progress %v", name, a.TrialID, a.Budget, tr.progress)
		}
		tr.budget, tr.running, tr.announced, tr.steps = a.Budget, true, false, 0
		d.starts = append(d.starts, tr.progress)
		d.continues++
		d.live++
		if !slices.Contains(d.running, tr) {
			d.pending = append(d.pending, tr)
		}
	case Shutdown:
		if n := d.live; n > 0 {
			t.Fatalf("%s: shutdown with %d trials running", name, n)
		}
		d.shutdown = true
	default:
		t.Fatalf("%s: unexpected action %v", name, a)
	}
}

// run drives the search to Shutdown and returns the schedule.
func (d *pbtDriver) run() string {
	t := d.t
	t.Helper()
	d.event("initial", Searcher.Initial)
	for tick := 0; !d.shutdown; tick++ {
		var waiting []*pbtTrial
		for _, tr := range d.pending {
			if tr.wait > 0 {
				tr.wait--
				waiting = append(waiting, tr)
				continue
			}
			if tr.from != nil && tr.steps == 0 && !tr.announced {
				// It starts: the worker copies the checkpoint it names.
				ck := tr.from.ckpts[tr.fromProgress]
				tr.progress, tr.theta = ck.progress, ck.theta
			}
			d.running = append(d.running, tr)
		}
		d.pending = waiting
		if len(d.running) == 0 && len(d.pending) > 0 {
			continue
		}
		if len(d.running) == 0 || tick > 100_000 {
			t.Fatalf("tick %d: %d running and no shutdown", tick, len(d.running))
		}
		for _, tr := range d.running {
			if !tr.announced {
				tr.announced = true
				d.event("created "+tr.id, func(s Searcher) []Action { return s.TrialCreated(tr.id) })
			}
		}
		for n, tr := range d.running {
			if d.slots > 0 && n >= d.slots {
				break
			}
			if d.fails != nil && d.fails(tr) {
				tr.running = false
				d.live--
				d.event("failed "+tr.id, func(s Searcher) []Action { return s.TrialFailed(tr.id) })
				continue
			}
			tr.progress++
			tr.steps++
			if tr.steps == 1 && tr.budget > 0 && tr.progress > tr.budget {
				t.Fatalf("%s's first report at %v, past its budget %v: it trained nothing with its own parameters", tr.id, tr.progress, tr.budget)
			}
			m := d.step(tr)
			d.best = max(d.best, m)
			d.event(fmt.Sprintf("report %s %g %.4g", tr.id, tr.progress, m), func(s Searcher) []Action { return s.TrialReported(tr.id, tr.progress, m) })
			end := tr.budget
			if end == 0 {
				end = d.ownEnd
			}
			if tr.progress >= end {
				tr.running = false
				d.live--
				tr.ckpt = &pbtCkpt{progress: tr.progress, theta: tr.theta}
				if tr.ckpts == nil {
					tr.ckpts = map[float64]pbtCkpt{}
				}
				tr.ckpts[tr.progress] = *tr.ckpt
				d.event(fmt.Sprintf("finished %s", tr.id), func(s Searcher) []Action { return s.TrialFinished(tr.id, m, OutcomeCompleted) })
			}
		}
		d.running = slices.DeleteFunc(d.running, func(tr *pbtTrial) bool { return !tr.running })
	}
	if p := d.s.Progress(); p != 1 {
		t.Errorf("progress at shutdown %v, want 1", p)
	}
	return d.log.String()
}

func pbtConfig(seed uint64, set PBTSettings) Config {
	return Config{Algorithm: AlgorithmPBT, Space: testSpace(), Seed: seed, MaxTrials: 40, MaxConcurrent: 5, Mode: "min", Settings: Settings{PBT: &set}}
}

// pbtScript is testSpace's learning curve: it improves with progress and
// depends on the parameters; opt "bad" fails two units into a start.
func pbtScript(tr *pbtTrial) float64 {
	p := tr.params
	return math.Abs(math.Log10(p["lr"].Num)+3) + p["dropout"].Num + p["layers"].Num/10 + 5/tr.progress
}

func pbtRun(t *testing.T, cfg Config) *pbtDriver {
	t.Helper()
	d := newPBTDriver(t, cfg, pbtScript)
	d.fails = func(tr *pbtTrial) bool { return tr.params["opt"].Str == "bad" && tr.steps == 2 }
	d.twin = true
	d.run()
	return d
}

// Every event, through a searcher restored from the snapshot before it,
// gives the same actions and state; the same seed gives the same
// schedule, another seed another; max_trials bounds the trials created.
func TestPBTSchedule(t *testing.T) {
	for _, set := range []PBTSettings{
		{Interval: 3, MaxBudget: 15},
		{Population: 4, Interval: 2, MaxBudget: 9, Quantile: 0.5},
		{Population: 1, Interval: 5, MaxBudget: 5},
		{Interval: 3, MaxBudget: 15, Synch: true},
		{Population: 4, Interval: 2, MaxBudget: 9, Quantile: 0.5, Synch: true},
	} {
		t.Run(fmt.Sprintf("%+v", set), func(t *testing.T) {
			a := pbtRun(t, pbtConfig(42, set))
			if len(a.created) > a.cfg.MaxTrials {
				t.Errorf("created %d trials > max_trials %d", len(a.created), a.cfg.MaxTrials)
			}
			if b := pbtRun(t, pbtConfig(42, set)); a.log.String() != b.log.String() {
				t.Errorf("same seed, different schedules:\n%s\n---\n%s", a.log.String(), b.log.String())
			}
			if c := pbtRun(t, pbtConfig(43, set)); a.log.String() == c.log.String() {
				t.Error("seeds 42 and 43 gave the same schedule")
			}
			t.Logf("%d trials created, %d continues", len(a.created), a.continues)
		})
	}
}

// An exploit names the budget end it ranked (From at FromProgress) and
// its budget counts on from there, so a trial that waits for nodes while
// its source trains on still starts at that checkpoint and trains a full
// interval with its own parameters: its first report is one unit past
// FromProgress, never past its budget (the driver fails the run if it
// is). Its first budget end is FromProgress + interval.
func TestPBTExploitStartsAtTheCheckpointItRanked(t *testing.T) {
	set := PBTSettings{Population: 4, Interval: 3, MaxBudget: 30, Quantile: 0.5}
	d := newPBTDriver(t, pbtConfig(7, set), pbtScript)
	d.lag = 2 * int(set.Interval) // its source reaches two more budget ends meanwhile
	d.twin = true
	d.run()
	exploits := 0
	for _, c := range d.created {
		if c.From == "" {
			continue
		}
		exploits++
		src := d.trials[c.From]
		if _, ok := src.ckpts[c.FromProgress]; !ok || c.Budget != min(c.FromProgress+set.Interval, set.MaxBudget) {
			t.Errorf("%s from %s at %v, budget %v: want one of %s's budget ends and one interval on", c.ID, c.From, c.FromProgress, c.Budget, c.From)
		}
		if tr := d.trials[c.ID]; tr.ckpts[c.Budget].progress != c.Budget {
			t.Errorf("%s reached no budget end at %v (its budget ends: %v)", c.ID, c.Budget, slices.Sorted(maps.Keys(tr.ckpts)))
		}
		if src.ckpt.progress <= c.FromProgress {
			continue
		}
		t.Logf("%s from %s at %v, though %s reached %v", c.ID, c.From, c.FromProgress, c.From, src.ckpt.progress)
	}
	if exploits == 0 {
		t.Fatal("no exploit: nothing checked")
	}
}

// With a pool of 2 for a population of 6, members that get nodes first
// run generations ahead of the others. Without synch a member that waited
// is ranked at generation 1 against scores of generation 4 and copies a
// member far ahead; with synch every member waits at each budget end
// until all have reached it, so every decision, exploit or continue, is
// taken in generation order, at the same progress as the others'.
func TestPBTSynchRanksAtEqualProgress(t *testing.T) {
	inOrder := func(d *pbtDriver) bool { return slices.IsSorted(d.starts) }
	for _, synch := range []bool{false, true} {
		cfg := pbtConfig(5, PBTSettings{Population: 6, Interval: 3, MaxBudget: 24, Quantile: 0.5, Synch: synch})
		cfg.MaxConcurrent = 6
		d := newPBTDriver(t, cfg, pbtScript)
		d.slots, d.twin = 2, true
		d.run()
		if got := inOrder(d); got != synch {
			t.Errorf("synch %v: decisions in generation order %v, want %v (starts %v)", synch, got, synch, d.starts)
		}
		if synch && len(d.created) == 6 {
			t.Error("synch: no exploit, nothing checked")
		}
	}
}

// Jaderberg et al.'s toy problem (their Fig. 2): maximise Q(θ) = 1.2 −
// θ₀² − θ₁² when training only follows the surrogate Q̂(θ|h) = 1.2 −
// (h₀θ₀² + h₁θ₁²), one gradient-ascent step of size 0.01 per budget unit
// from θ = (0.9, 0.9). Good h are large ones; a member that copies θ
// keeps what the best lineage has trained.

func toyStart(tr *pbtTrial) { tr.theta = [2]float64{0.9, 0.9} }

func toyStep(tr *pbtTrial) float64 {
	h := [2]float64{tr.params["h0"].Num, tr.params["h1"].Num}
	for i := range tr.theta {
		tr.theta[i] += 0.01 * (-2 * h[i] * tr.theta[i]) // ∂Q̂/∂θᵢ = −2hᵢθᵢ
	}
	return 1.2 - tr.theta[0]*tr.theta[0] - tr.theta[1]*tr.theta[1]
}

// toyBest is the best Q a search reached on the toy problem.
func toyBest(t *testing.T, alg string, seed uint64, set Settings, trials, ownEnd int) float64 {
	t.Helper()
	cfg := Config{Algorithm: alg, Seed: seed, MaxTrials: trials, MaxConcurrent: 4, Mode: "max", Settings: set,
		Space: Space{{Name: "h0", Type: ParamFloat, Min: 0, Max: 1}, {Name: "h1", Type: ParamFloat, Min: 0, Max: 1}}}
	d := newPBTDriver(t, cfg, toyStep)
	d.start, d.ownEnd = toyStart, float64(ownEnd)
	d.run()
	return d.best
}

// PBT beats random search given the same total budget (four trainings of
// max_budget steps), in the median over seeds. Both start from the same
// four samples (the same seed); PBT's best lineage then gains from
// copying θ and perturbing h, so the best h = (1, 1), Q = 1.2 −
// 2·0.81·0.98²⁰⁰ ≈ 1.17, bounds both.
func TestPBTToyBeatsRandom(t *testing.T) {
	const maxBudget, interval, seeds = 100, 4, 15
	var pbtQ, randQ []float64
	for seed := uint64(1); seed <= seeds; seed++ {
		pbtQ = append(pbtQ, toyBest(t, AlgorithmPBT, seed, Settings{PBT: &PBTSettings{Population: 4, Interval: interval, MaxBudget: maxBudget}}, 1000, 0))
		randQ = append(randQ, toyBest(t, AlgorithmRandom, seed, Settings{}, 4, maxBudget))
	}
	slices.Sort(pbtQ)
	slices.Sort(randQ)
	t.Logf("best Q over %d seeds, sorted:\n  pbt    %.4f\n  random %.4f", seeds, pbtQ, randQ)
	if pbtQ[seeds/2] <= randQ[seeds/2] {
		t.Errorf("median best Q: pbt %.4f, random %.4f; want pbt higher", pbtQ[seeds/2], randQ[seeds/2])
	}
}
