package searchbench

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// ErrFromUnsupported: a searcher created a trial from another's
// checkpoint (hpo.Create.From) on an objective that holds no training
// state (a test function, a learning-curve table).
var ErrFromUnsupported = errors.New("objective does not support Create.From")

// simTrial is one trial on the simulated workers, across its segments (a
// segment is what one Create or Continue trains).
type simTrial struct {
	id       string
	params   hpo.Params
	duration float64 // time its full budget takes
	// Where its training is: progress in budget units (cumulative, from
	// its From trial's checkpoint on), its state (stateful objectives)
	// and its last reported value (NaN: none yet).
	progress float64
	state    State
	metric   float64
	// checkpoint is where it last paused at a budget (nil: never), what
	// a trial created from it starts from.
	checkpoint *checkpoint
	// outcome is how its latest segment ended; paused: at its budget, so
	// a Continue may resume it; ended: it has ended at least once.
	outcome       hpo.Outcome
	paused, ended bool

	// The segment it trains now, while it is live.
	budget  float64
	base    float64 // progress when the segment started
	start   float64 // time when the segment started
	seq     int     // start order, which breaks ties in time
	pending []report
	stop    bool
}

type checkpoint struct {
	progress, metric float64
	state            State
}

// workers are the simulated asynchronous workers: they carry out one
// searcher's actions on one objective, on a clock of their own.
type workers struct {
	setup    Setup
	searcher hpo.Searcher
	cost     *rand.Rand
	draw     func() float64 // Setup.Durations's stream, if any
	now      float64
	seq      int
	trials   map[string]*simTrial // every trial created, by the searcher's id
	live     []*simTrial
	spent    float64 // in budget units
	best     float64
	ended    int // trials that have ended at least once
	steps    []Step
	shutdown bool
}

// simulate drives searcher on s's objective until it shuts down or no
// trial is live, and returns one Step per ended segment.
//
// A segment's reports are spaced in time by the budget units they train
// (a trial's full budget takes its duration), so a continued trial costs
// time only for what it trains on. Budget spent counts every trained unit
// once: a segment is charged from the progress it started at (a
// continued trial's pause, a From trial's source checkpoint) to the one
// it ended at. A trial created From another starts from that trial's
// latest pause at a budget (its progress, state and value), even when it
// has been continued since. Breaches of the contract (continuing a trial
// that is not paused, From a trial that never paused or on an objective
// without state, a Stop for a trial not running) are errors naming the
// algorithm and the trial.
func simulate(s Setup, searcher hpo.Searcher) ([]Step, error) {
	w := &workers{setup: s, searcher: searcher, cost: rand.New(rand.NewPCG(s.Seed, 0x5eed_c057)),
		trials: map[string]*simTrial{}, best: math.Inf(1)}
	if s.Durations != nil {
		w.draw = s.Durations(s.Seed)
	}
	if err := w.apply(searcher.Initial()); err != nil {
		return nil, err
	}
	for !w.shutdown && len(w.live) > 0 {
		t := w.live[0]
		for _, r := range w.live[1:] {
			if c := cmp.Compare(w.at(r), w.at(t)); c < 0 || c == 0 && r.seq < t.seq {
				t = r
			}
		}
		w.now = w.at(t)
		if len(t.pending) == 0 { // nothing to train: it is at its budget already
			if err := w.end(t); err != nil {
				return nil, err
			}
			continue
		}
		r := t.pending[0]
		t.pending = t.pending[1:]
		t.progress, t.metric, t.state = r.Samples, r.Value, r.state
		last := len(t.pending) == 0
		// A trainer run to its own end gives its last value as its result
		// only; one that pauses at a budget reports there first (what
		// its next segment or a From trial starts from).
		if !last || t.budget > 0 {
			if err := w.apply(w.searcher.TrialReported(t.id, t.progress, t.metric)); err != nil {
				return nil, err
			}
		}
		if last || t.stop {
			if err := w.end(t); err != nil {
				return nil, err
			}
		}
	}
	return w.steps, nil
}

// at is the time of t's next event: its next report, or its end when it
// has nothing left to train.
func (w *workers) at(t *simTrial) float64 {
	if len(t.pending) == 0 {
		return t.start
	}
	return t.start + t.duration*(t.pending[0].Samples-t.base)/w.setup.Objective.Budget()
}

// begin starts t's next segment, to budget (0: to its end).
func (w *workers) begin(t *simTrial, budget float64) error {
	w.seq++
	t.budget, t.base, t.start, t.seq, t.stop, t.paused = budget, t.progress, w.now, w.seq, false, false
	t.pending = w.setup.Objective.segment(t.params, t.progress, t.state, budget)
	w.live = append(w.live, t)
	return w.apply(w.searcher.TrialCreated(t.id))
}

// end ends t's segment: it trained to its end or its budget (completed),
// or a Stop cut it short (stopped).
func (w *workers) end(t *simTrial) error {
	w.live = slices.DeleteFunc(w.live, func(x *simTrial) bool { return x == t })
	w.spent += t.progress - t.base
	if !math.IsNaN(t.metric) {
		w.best = min(w.best, t.metric)
	}
	if !t.ended {
		t.ended = true
		w.ended++
	}
	w.steps = append(w.steps, Step{Budget: w.spent / w.setup.Objective.Budget(), Best: w.best, Trials: w.ended})
	t.outcome = hpo.OutcomeCompleted
	if len(t.pending) > 0 {
		t.outcome = hpo.OutcomeStopped
	}
	if t.outcome == hpo.OutcomeCompleted && t.budget > 0 && t.progress >= t.budget*(1-budgetSlack) {
		t.paused = true
		t.checkpoint = &checkpoint{progress: t.progress, metric: t.metric, state: t.state}
	}
	t.pending = nil
	return w.apply(w.searcher.TrialFinished(t.id, t.metric, t.outcome))
}

func (w *workers) apply(acts []hpo.Action) error {
	alg := w.setup.Algorithm
	for _, a := range acts {
		if w.shutdown {
			return fmt.Errorf("%s asked for %v after shutting down", alg, a)
		}
		switch a := a.(type) {
		case hpo.Create:
			if _, ok := w.trials[a.ID]; ok {
				return fmt.Errorf("%s created trial %s twice", alg, a.ID)
			}
			d := 1.0
			switch {
			case w.draw != nil:
				d = w.draw()
			case w.setup.CostSigma != 0:
				d = math.Exp(w.setup.CostSigma * w.cost.NormFloat64())
			}
			t := &simTrial{id: a.ID, params: a.Params, duration: d, metric: math.NaN(), state: w.setup.Objective.initial()}
			if a.From != "" {
				src, err := w.source(a)
				if err != nil {
					return err
				}
				t.progress, t.metric, t.state = src.progress, src.metric, src.state
			}
			w.trials[a.ID] = t
			if err := w.begin(t, a.Budget); err != nil {
				return err
			}
		case hpo.Continue:
			t, ok := w.trials[a.TrialID]
			switch {
			case !ok:
				return fmt.Errorf("%s continued trial %s, which it never created", alg, a.TrialID)
			case !t.paused:
				return fmt.Errorf("%s continued trial %s, which has not ended at a budget (%s)", alg, a.TrialID, w.why(t))
			}
			if err := w.begin(t, a.Budget); err != nil {
				return err
			}
		case hpo.Stop:
			if !slices.ContainsFunc(w.live, func(t *simTrial) bool { return t.id == a.TrialID }) {
				return fmt.Errorf("%s stopped %s, which is not running", alg, a.TrialID)
			}
			w.trials[a.TrialID].stop = true
		case hpo.Shutdown:
			w.shutdown = true
		}
	}
	return nil
}

// source is the checkpoint a Create.From starts from: its source's latest
// pause at a budget (the source may have been continued since).
func (w *workers) source(a hpo.Create) (*checkpoint, error) {
	o, alg := w.setup.Objective, w.setup.Algorithm
	if !o.Stateful() {
		kind := "a test function's results carry"
		if o.Curve != nil {
			kind = "learning curves (one per parameter setting) carry"
		}
		return nil, fmt.Errorf("%s created trial %s from %s: %w: %s's %s no training state across parameters",
			alg, a.ID, a.From, ErrFromUnsupported, o.Name, kind)
	}
	src, ok := w.trials[a.From]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s created trial %s from %s, which it never created", alg, a.ID, a.From)
	case src.checkpoint == nil:
		return nil, fmt.Errorf("%s created trial %s from %s, which has not reached a budget (%s)", alg, a.ID, a.From, w.why(src))
	}
	return src.checkpoint, nil
}

// why says where a trial that cannot be continued is.
func (w *workers) why(t *simTrial) string {
	switch {
	case slices.Contains(w.live, t):
		return "it is running"
	case t.outcome == hpo.OutcomeStopped:
		return "it was stopped"
	case t.budget == 0:
		return "it ran without a budget, to its end"
	}
	return fmt.Sprintf("it ended by itself at progress %g, before its budget %g", t.progress, t.budget)
}
