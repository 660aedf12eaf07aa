package hpo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
)

// promoter is the promotion variant of ASHA and of Hyperband (Li et al.,
// "A System for Massively Parallel Hyperparameter Tuning", MLSys 2020,
// Algorithm 2). A bracket is a ladder of rungs k = 0..K with budgets
// b_0 < … < b_K = R. A trial is created with Budget b_0 and pauses there
// (it ends OutcomeCompleted holding no nodes, its checkpoint kept), and
// its metric is recorded at rung 0. Whenever a slot is free (fewer than
// MaxConcurrent trials outstanding), get_job runs:
//
//	for k = K−1 down to 0:
//	    candidates = the top ⌊n_k/η⌋ of the n_k trials recorded at rung k
//	    if one of them is not yet promoted: Continue the best such to b_{k+1}
//	otherwise create a trial at rung 0 (its parameters from the sampler)
//
// With several brackets (Hyperband) the promotion is looked for in all of
// them, and the one to the largest budget is taken (the lowest bracket
// index among equals): Algorithm 2's highest-rung-first, across brackets
// whose rungs share the budgets R/η^j. A new trial's bracket is chosen as
// the stopping Hyperband chooses it (nextBracket).
//
// A trial that ends OutcomeCompleted at b_k is recorded at rung k with
// its metric (the contract: a trial with a Budget ends completed when it
// reaches it; a trainer that ends by itself sooner cannot be told apart,
// the reports being throttled, and is recorded as if it had). Failed or
// stopped trials, and completed ones without a metric, are recorded
// nowhere: they can never be promoted. The rung K records only a count.
//
// Creates stop at MaxTrials (continues do not count); promotions go on
// while any is possible, and the search shuts down when nothing is
// outstanding and nothing can be promoted or created.
//
// The sampler (random, quasirandom, grid or tpe, as a stopper's) proposes
// every new trial: it is run with the campaign's MaxTrials and
// MaxConcurrent, and its proposals wait in Proposed until a slot goes to a
// new trial. It hears of a trial's first run only, the run to the
// bracket's first rung: TrialFinished with the metric there (or the
// failure, or the stop). So TPE learns from every trial at one budget,
// as soon as that trial pauses; a metric at a higher budget exists only
// for the promoted few, each at its own budget, and comes too late (TPE
// keeps one observation per trial). That first metric is told as
// OutcomeStopped (an intermediate metric, ranked below complete ones)
// unless the first rung is R: Hyperband's bracket 0 gives complete
// results, which rank above every other bracket's; the other brackets'
// first rungs, R/η^s, differ, and TPE ranks their metrics together.
//
// From revisionRungRank a TPE sampler learns instead from the rung each
// trial was judged at last: its first-rung metric is told as rungKey (by
// the rung's level), and each time a continued trial pauses higher the
// sampler's observation of it is replaced (rungLearner) by its rungKey
// there, or by its metric, complete, at R. TPE so ranks trials as Optuna
// ranks pruned ones: the furthest rung reached first, then the metric
// there. On curves that cross, a first-rung metric favours fast starters
// that plateau high (issue 30; docs/search.md). From revisionOneRung a
// TPE sampler is fed each trial's result at each rung it pauses at
// (rungFeed) and fitted on one rung's results, as BOHB.
type promoter struct {
	cfg     Config
	name    string // asha or hyperband: the snapshot's type
	sampler Searcher
	eta     float64
	// ladders are, per bracket, its rungs' budgets, ascending, the last R.
	ladders [][]float64
	// weights are the brackets' shares of new trials (nil: one bracket).
	weights []float64
	// expected is the budget the search should spend in all: Progress's
	// denominator.
	expected float64
	// levels are the rungs' distinct budgets, ascending, when the sampler
	// is told each trial's result at the highest rung it reached
	// (revisionRungRank); nil before.
	levels []float64
	// feed: the sampler is fed by rung (revisionOneRung), each result at
	// each rung a trial pauses at; nil otherwise.
	feed *rungFeed
	st   promoterState
}

// promoterState is the snapshot. Its size is bounded by the brackets'
// rungs (ashaKeep records each), MaxConcurrent and the sampler's own.
type promoterState struct {
	// Variant tells this snapshot from the stopping variant's, whose type
	// tag is the same.
	Variant string `json:"variant"`
	// Sampler is the sampler's snapshot.
	Sampler json.RawMessage `json:"sampler"`
	window
	// Proposed are the sampler's trials not created yet, in its order.
	Proposed []Create `json:"proposed,omitempty"`
	// Running says, per outstanding trial, which rung its run is for.
	Running map[string]promoRun `json:"running,omitempty"`
	// Rungs are, per bracket, its rungs, lowest first.
	Rungs [][]promoRung `json:"rungs"`
	// Credit is the brackets' round-robin credit (nextBracket); nil with
	// one bracket.
	Credit []float64 `json:"credit,omitempty"`
	// Spent sums the budget of the runs ended (each run's b_k − b_{k−1}).
	Spent float64 `json:"spent"`
}

// promoRun is an outstanding trial's run: to rung Rung of bracket
// Bracket. First: the trial's first run, which the sampler hears of.
type promoRun struct {
	Bracket int  `json:"bracket"`
	Rung    int  `json:"rung"`
	First   bool `json:"first,omitempty"`
	// Told is the metric the sampler holds for a continued trial: its
	// rungKey at the rung below (revisionRungRank).
	Told float64 `json:"told,omitempty"`
}

// promoRung is a rung: N trials recorded there, and the best ashaKeep of
// them, best first (the older first among equals).
type promoRung struct {
	N   int           `json:"n"`
	Top []promoRecord `json:"top,omitempty"`
}

// promoRecord is a trial paused at a rung: its metric there, oriented so
// that lower is better (±Inf as ±MaxFloat64: JSON has no infinity), and
// whether it has been continued to the next rung. It is written as
// [id, value], or [id, value, true] once promoted: a rung keeps up to
// ashaKeep of them, and at about 35 bytes rather than 60 as an object,
// Hyperband's six rungs of 1,024 plus a TPE sampler stay under 512 KB.
type promoRecord struct {
	ID       string
	Value    float64
	Promoted bool
}

func (r promoRecord) MarshalJSON() ([]byte, error) {
	if r.Promoted {
		return json.Marshal([]any{r.ID, r.Value, true})
	}
	return json.Marshal([]any{r.ID, r.Value})
}

func (r *promoRecord) UnmarshalJSON(b []byte) error {
	var fields []json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if len(fields) != 2 && len(fields) != 3 {
		return fmt.Errorf("record %s: want [id, value] or [id, value, true]", b)
	}
	*r = promoRecord{Promoted: len(fields) == 3}
	if err := json.Unmarshal(fields[0], &r.ID); err != nil {
		return fmt.Errorf("record %s: id: %w", b, err)
	}
	if err := json.Unmarshal(fields[1], &r.Value); err != nil {
		return fmt.Errorf("record %s: value: %w", b, err)
	}
	if r.Promoted && string(fields[2]) != "true" {
		return fmt.Errorf("record %s: want [id, value] or [id, value, true]", b)
	}
	return nil
}

// newPromoter makes the promotion variant named name: sampler as a
// stopper's (its own settings section applies), rungs as ladders, new
// trials spread over the brackets by weights (nil with one bracket).
func newPromoter(cfg Config, name, sampler string, eta float64, ladders [][]float64, weights []float64) (*promoter, error) {
	s, err := newStopper(cfg, name, sampler, nil) // only for its sampler
	if err != nil {
		return nil, err
	}
	p := &promoter{cfg: cfg, name: name, sampler: s.sampler, eta: eta, ladders: ladders}
	if len(ladders) > 1 {
		p.weights = weights
	}
	total := 0.0
	for _, w := range p.weights {
		total += w
	}
	for b, ladder := range ladders {
		share := 1.0
		if p.weights != nil {
			share = p.weights[b] / total
		}
		// About n/η^k of n trials reach rung k, each spending b_k − b_{k−1} there.
		prev := 0.0
		for k, budget := range ladder {
			p.expected += share * float64(cfg.MaxTrials) * (budget - prev) / math.Pow(eta, float64(k))
			prev = budget
		}
	}
	if _, ok := p.sampler.(rungLearner); ok && cfg.Revision >= revisionRungRank {
		p.levels = budgetLevels(slices.Concat(ladders...))
	}
	if t, ok := p.sampler.(*tpe); ok && cfg.Revision >= revisionOneRung {
		p.feed = newRungFeed(t)
		p.sampler = p.feed
	}
	p.st = p.fresh()
	return p, nil
}

// fresh is the state before the first trial.
func (p *promoter) fresh() promoterState {
	st := promoterState{Variant: VariantPromotion, Running: map[string]promoRun{}}
	for _, ladder := range p.ladders {
		st.Rungs = append(st.Rungs, make([]promoRung, len(ladder)))
	}
	if p.weights != nil {
		st.Credit = make([]float64, len(p.weights))
	}
	return st
}

// loss orients a metric so that lower is better.
func (p *promoter) loss(metric float64) float64 {
	if p.cfg.Mode == "max" {
		metric = -metric
	}
	return clamp(metric, -math.MaxFloat64, math.MaxFloat64)
}

func (p *promoter) Initial() []Action {
	p.propose(p.sampler.Initial())
	return p.fill()
}

func (p *promoter) TrialCreated(id string) []Action {
	if run, ok := p.st.Running[id]; ok && run.First {
		p.propose(p.sampler.TrialCreated(id))
	}
	return nil
}

func (p *promoter) TrialReported(id string, progress, metric float64) []Action {
	if run, ok := p.st.Running[id]; ok && run.First {
		p.propose(p.sampler.TrialReported(id, progress, metric))
	}
	return nil
}

func (p *promoter) TrialFinished(id string, metric float64, outcome Outcome) []Action {
	run, ok := p.ended(id)
	if !ok {
		return nil
	}
	paused := outcome == OutcomeCompleted && !math.IsNaN(metric)
	if p.feed != nil && paused {
		p.feed.result(id, levelOf(p.levels, p.ladders[run.Bracket][run.Rung]), p.loss(metric))
		if run.Rung == len(p.ladders[run.Bracket])-1 {
			p.feed.result(id, levelComplete, p.loss(metric))
		}
	}
	switch {
	case run.First:
		told, m := outcome, metric
		if len(p.ladders[run.Bracket]) > 1 {
			told = OutcomeStopped // a metric at the first rung, below R
			if p.feed == nil && p.levels != nil && paused {
				m = p.told(run, metric)
			}
		}
		p.propose(p.sampler.TrialFinished(id, m, told))
	case p.feed == nil && p.levels != nil && paused:
		// A continued trial paused higher: the sampler ranks it there.
		top := run.Rung == len(p.ladders[run.Bracket])-1
		m := metric
		if !top {
			m = p.told(run, metric)
		}
		p.sampler.(rungLearner).relearn(run.Told, m, !top)
	}
	if paused {
		p.record(run, id, p.loss(metric))
	}
	return p.fill()
}

// told is the metric the sampler is told for a trial paused below the
// top at run's rung with metric: its rungKey there.
func (p *promoter) told(run promoRun, metric float64) float64 {
	return toldKey(p.cfg.Mode, levelOf(p.levels, p.ladders[run.Bracket][run.Rung]), p.loss(metric))
}

func (p *promoter) TrialFailed(id string) []Action {
	run, ok := p.ended(id)
	if !ok {
		return nil
	}
	if run.First {
		p.propose(p.sampler.TrialFailed(id))
	}
	return p.fill()
}

// ended closes trial id's run; false for a trial not outstanding.
func (p *promoter) ended(id string) (promoRun, bool) {
	run, ok := p.st.Running[id]
	if !ok || !p.st.end(id) {
		return promoRun{}, false
	}
	delete(p.st.Running, id)
	ladder := p.ladders[run.Bracket]
	p.st.Spent += ladder[run.Rung]
	if run.Rung > 0 {
		p.st.Spent -= ladder[run.Rung-1]
	}
	return run, true
}

// propose keeps the sampler's new trials for later; a sampler only
// creates, and its Shutdown is the promoter's to decide.
func (p *promoter) propose(acts []Action) {
	for _, a := range acts {
		if c, ok := a.(Create); ok {
			p.st.Proposed = append(p.st.Proposed, c)
		}
	}
}

// record puts trial id, paused at run's rung with loss v, among the
// rung's best.
func (p *promoter) record(run promoRun, id string, v float64) {
	g := &p.st.Rungs[run.Bracket][run.Rung]
	g.N++
	if run.Rung == len(p.ladders[run.Bracket])-1 {
		return // the top rung promotes no one
	}
	i := sort.Search(len(g.Top), func(j int) bool { return g.Top[j].Value > v })
	g.Top = slices.Insert(g.Top, i, promoRecord{ID: id, Value: v})
	if len(g.Top) > ashaKeep {
		g.Top = g.Top[:ashaKeep]
	}
}

// fill gives every free slot a job, as get_job: a promotion if there is
// one, else a new trial; it shuts the search down when no slot is taken
// and neither is possible.
func (p *promoter) fill() []Action {
	if p.st.Shutdown {
		return nil
	}
	var acts []Action
	for len(p.st.Outstanding) < p.cfg.MaxConcurrent {
		if b, k, i, ok := p.promotion(); ok {
			acts = append(acts, p.promote(b, k, i))
			continue
		}
		if p.st.Created >= p.cfg.MaxTrials || len(p.st.Proposed) == 0 {
			break // max_trials reached, or the sampler has no more (a grid done)
		}
		acts = append(acts, p.create())
	}
	if len(p.st.Outstanding) == 0 {
		p.st.Shutdown = true
		acts = append(acts, Shutdown{})
	}
	return acts
}

// promotion finds the promotion get_job makes: per bracket, from the rung
// below the top down, the first rung with a candidate; across brackets,
// the one to the largest budget (the lowest bracket among equals).
func (p *promoter) promotion() (b, k, i int, ok bool) {
	best := 0.0
	for bb, rungs := range p.st.Rungs {
		for kk := len(rungs) - 2; kk >= 0; kk-- {
			ii := p.candidate(rungs[kk])
			if ii < 0 {
				continue
			}
			if to := p.ladders[bb][kk+1]; !ok || to > best {
				b, k, i, ok, best = bb, kk, ii, true, to
			}
			break
		}
	}
	return b, k, i, ok
}

// candidate is the index of the best record in g's top ⌊n/η⌋ not yet
// promoted, or −1.
func (p *promoter) candidate(g promoRung) int {
	top := min(int(float64(g.N)/p.eta), len(g.Top))
	for i := range top {
		if !g.Top[i].Promoted {
			return i
		}
	}
	return -1
}

// promote continues record i of rung k of bracket b to rung k+1.
func (p *promoter) promote(b, k, i int) Action {
	rec := &p.st.Rungs[b][k].Top[i]
	rec.Promoted = true
	p.st.reopen(rec.ID)
	run := promoRun{Bracket: b, Rung: k + 1}
	if p.levels != nil {
		run.Told = toldKey(p.cfg.Mode, levelOf(p.levels, p.ladders[b][k]), rec.Value)
	}
	p.st.Running[rec.ID] = run
	return Continue{TrialID: rec.ID, Budget: p.ladders[b][k+1], Stage: p.stage(b, k+1)}
}

// create opens the sampler's next trial at rung 0 of the next bracket.
func (p *promoter) create() Action {
	c := p.st.Proposed[0]
	p.st.Proposed = slices.Delete(p.st.Proposed, 0, 1)
	b := 0
	if p.weights != nil {
		b = nextBracket(p.weights, p.st.Credit)
	}
	p.st.Created++
	p.st.Outstanding = append(p.st.Outstanding, c.ID)
	p.st.Running[c.ID] = promoRun{Bracket: b, First: true}
	return Create{ID: c.ID, Params: c.Params, Budget: p.ladders[b][0], Stage: p.stage(b, 0)}
}

// stage labels a run for people: "rung k", "bracket s, rung k".
func (p *promoter) stage(b, k int) string {
	if p.weights == nil {
		return fmt.Sprintf("rung %d", k)
	}
	return fmt.Sprintf("bracket %d, rung %d", b, k)
}

// Progress is the budget spent by the runs ended over the budget the
// search should spend: max_trials times Σ_k (b_k − b_{k−1})/η^k, the
// brackets' shares weighed in.
func (p *promoter) Progress() float64 {
	if p.st.Shutdown {
		return 1
	}
	return clamp(p.st.Spent/p.expected, 0, 1)
}

func (p *promoter) Snapshot() ([]byte, error) {
	inner, err := p.sampler.Snapshot()
	if err != nil {
		return nil, err
	}
	st := p.st
	st.Sampler = inner
	return marshalSnapshot(p.name, st)
}

func (p *promoter) Restore(snapshot []byte) error {
	var st promoterState
	if err := unmarshalSnapshot(p.name, snapshot, &st); err != nil {
		return err
	}
	if st.Variant != VariantPromotion {
		return fmt.Errorf("restore %s searcher: the snapshot is of variant %q, the config's is %s", p.name, st.Variant, VariantPromotion)
	}
	if err := p.sampler.Restore(st.Sampler); err != nil {
		return fmt.Errorf("restore %s searcher: %w", p.name, err)
	}
	if st.Running == nil {
		st.Running = map[string]promoRun{}
	}
	if err := p.check(st); err != nil {
		return fmt.Errorf("restore %s searcher: %w", p.name, err)
	}
	st.Sampler = nil
	p.st = st
	return nil
}

// check validates a restored state against the config.
func (p *promoter) check(st promoterState) error {
	if err := st.check(p.cfg); err != nil {
		return err
	}
	switch {
	case st.Created+len(st.Proposed) > p.cfg.MaxTrials:
		return fmt.Errorf("%d trials created and %d proposed, more than max_trials %d", st.Created, len(st.Proposed), p.cfg.MaxTrials)
	case len(st.Rungs) != len(p.ladders):
		return fmt.Errorf("%d brackets, the config has %d", len(st.Rungs), len(p.ladders))
	case len(st.Credit) != len(p.weights):
		return fmt.Errorf("%d credits for %d bracket weights", len(st.Credit), len(p.weights))
	case !(st.Spent >= 0) || math.IsInf(st.Spent, 0):
		return fmt.Errorf("spent: %v", st.Spent)
	}
	for b, rungs := range st.Rungs {
		if len(rungs) != len(p.ladders[b]) {
			return fmt.Errorf("bracket %d: %d rungs, the config has %d", b, len(rungs), len(p.ladders[b]))
		}
		for k, g := range rungs {
			sorted := slices.IsSortedFunc(g.Top, func(x, y promoRecord) int { return cmp.Compare(x.Value, y.Value) })
			if len(g.Top) > min(g.N, ashaKeep) || !sorted || k == len(rungs)-1 && len(g.Top) > 0 {
				return fmt.Errorf("bracket %d, rung %d: %d records kept of %d, sorted %v", b, k, len(g.Top), g.N, sorted)
			}
		}
	}
	if len(st.Running) != len(st.Outstanding) {
		return fmt.Errorf("%d runs for %d trials outstanding", len(st.Running), len(st.Outstanding))
	}
	for _, id := range st.Outstanding {
		run, ok := st.Running[id]
		if !ok || run.Bracket < 0 || run.Bracket >= len(p.ladders) || run.Rung < 0 || run.Rung >= len(p.ladders[run.Bracket]) {
			return fmt.Errorf("trial %s outstanding: run %+v (known %v)", id, run, ok)
		}
	}
	return nil
}
