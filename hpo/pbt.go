package hpo

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// AlgorithmPBT names Population Based Training.
const AlgorithmPBT = "pbt"

// PBTSettings configure search.pbt. Interval and MaxBudget are required;
// a zero (nil) value of the others takes its default.
type PBTSettings struct {
	// Population is how many members train at once (default: the
	// campaign's max_concurrent, or max_trials if fewer). The members
	// train concurrently, so it must fit in max_concurrent; each starts
	// as one trial, so it must fit in max_trials too.
	Population int `json:"population,omitempty"`
	// Interval is how many budget units (search.budget_unit) a member
	// trains between two exploit/explore decisions (required, > 0).
	Interval float64 `json:"interval"`
	// MaxBudget is a member's total budget in budget units (required,
	// ≥ interval): a member that has trained this much is done.
	MaxBudget float64 `json:"max_budget"`
	// Quantile is truncation selection's fraction, in (0, 0.5] (default
	// 0.25, Ray Tune's quantile_fraction; the paper's truncation
	// selection uses 0.2): a member ranked in the bottom Quantile of the
	// population copies one in the top Quantile.
	Quantile float64 `json:"quantile,omitempty"`
	// ResampleProbability is, per parameter, the chance that explore
	// draws the value afresh from the space instead of perturbing it
	// (default 0.25, Ray Tune's; 0: numbers are always perturbed and
	// choices always kept).
	ResampleProbability *float64 `json:"resample_probability,omitempty"`
	// Perturb are the factors explore multiplies a number by, one drawn
	// uniformly per parameter (default [0.8, 1.2], the paper's).
	Perturb []float64 `json:"perturb,omitempty"`
	// Synch makes the population move in step (Ray Tune's synch): a
	// member that reaches a budget end waits, holding no nodes, until
	// every member has reached it; then all are ranked at that same
	// progress and decide together. Without it (the default) each member
	// decides at its own budget end against the others' latest scores,
	// which favours the members that got nodes first when the population
	// is larger than what the pool runs at once.
	Synch bool `json:"synch,omitempty"`
}

// Validate checks the settings; errors name the field.
func (s *PBTSettings) Validate() error {
	switch {
	case s.Population < 0:
		return fmt.Errorf("population: %d must be at least 1 (0 is the default, max_concurrent)", s.Population)
	case !(s.Interval > 0) || math.IsInf(s.Interval, 0):
		return fmt.Errorf("interval: %v must be > 0 (budget units a member trains between exploit/explore decisions)", s.Interval)
	case !(s.MaxBudget >= s.Interval) || math.IsInf(s.MaxBudget, 0):
		return fmt.Errorf("max_budget: %v must be ≥ interval %v (a member's total budget in budget units)", s.MaxBudget, s.Interval)
	case s.Quantile != 0 && !(s.Quantile > 0 && s.Quantile <= 0.5):
		return fmt.Errorf("quantile: %v must be in (0, 0.5] (0 is the default, 0.25)", s.Quantile)
	case s.ResampleProbability != nil && !(*s.ResampleProbability >= 0 && *s.ResampleProbability <= 1):
		return fmt.Errorf("resample_probability: %v must be in [0, 1]", *s.ResampleProbability)
	}
	for i, f := range s.Perturb {
		if !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("perturb[%d]: %v must be a positive finite factor", i, f)
		}
	}
	return nil
}

func init() {
	register(algorithm{
		name:    AlgorithmPBT,
		summary: "Population Based Training (Jaderberg et al. 2017): members train in intervals; one in the bottom quantile then copies a top member's checkpoint and perturbs its parameters",
		section: func(s Settings) (validator, bool) { return s.PBT, s.PBT != nil },
		new:     func(cfg Config) (Searcher, error) { return newPBT(cfg) },
	})
}

// pbt is Population Based Training (Jaderberg et al., "Population Based
// Training of Neural Networks", arXiv:1711.09846, 2017): asynchronous,
// exploit by truncation selection and explore by perturbing or
// resampling, as in the paper and Ray Tune's PopulationBasedTraining.
//
// A population of members trains concurrently. Member i starts as a
// trial with parameters sampled from the space (cfg.Points first) and a
// budget of one interval; each trial it runs is its current trial, and
// the member is the lineage of those. Whenever a member's trial reaches
// its budget (ends with OutcomeCompleted), with metric m at progress p,
// the member's score becomes m and it decides, on its own, against the
// latest scores of the others:
//
//   - exploit: if it ranks in the bottom q of the n members with a score
//     (k = min(⌈q·n⌉, ⌊n/2⌋) of them; a done member's last score stands,
//     and no metric ranks last), it copies a member drawn uniformly from
//     the top k, strictly better than itself and with budget left: a new
//     trial starts From the source's latest budget end p_src (its weights
//     and counters: FromProgress = p_src, the checkpoint whose score
//     ranked it, even if the source has trained on by the time the new
//     trial starts) and trains to p_src + interval (at most MaxBudget);
//     the member goes on as that trial;
//   - explore: that trial's parameters are the source's, each numeric one
//     multiplied by a factor drawn from Perturb (0.8 or 1.2: integers
//     rounded, moved at least one step, and clamped; log parameters too,
//     since a factor is a step in log space) or, with ResampleProbability,
//     resampled from the space; choices are resampled with that
//     probability and kept otherwise; an architecture is always kept: the
//     checkpoint holds weights of the source's network, which fit no other;
//   - otherwise it goes on: Continue to p + interval with its parameters.
//
// With Synch (Ray Tune's synch), a member reaching a budget end waits
// there, its trial paused, until no member is training; then every member
// waiting decides as above, all ranked at the same progress. Without it a
// member whose trial waited for nodes would be ranked at generation g
// against others' scores at g + 3 and copy a member generations ahead:
// its own lineage, however promising, is lost to a head start.
//
// A member that has trained MaxBudget is done; the search shuts down when
// every member is done, and says so (Shutdown.Reason). Trials are labelled "gen g", g = the intervals
// trained before the trial's start.
//
// A member whose trial fails or is stopped leaves the population. So that
// failures do not wither it, its slot is refilled at once while
// max_trials allows: by an exploit of a top member (the population's best
// weights, perturbed) when one has a score and budget left, else by a
// fresh sample from the space at generation 0. Once max_trials trials
// exist, an emptied slot stays empty and a member that would exploit goes
// on instead (a Continue creates no trial).
//
// It does not use window.fill: PBT's trials are not a stream filling
// max_concurrent slots up to max_trials, but a fixed population whose
// trials are created (exploit) or continued at budget ends, and the
// search ends when members are done, not when max_trials is spent. It
// keeps window's counters (Created, Outstanding, Ended) and its end and
// reopen.
type pbt struct {
	cfg       Config
	pop       int
	interval  float64
	maxBudget float64
	quantile  float64
	resample  float64
	perturb   []float64
	synch     bool
	pcg       *rand.PCG
	rng       *rand.Rand
	st        pbtState
}

// pbtState is the snapshot: the RNG, the trial counters, and one record
// per member slot, so it is O(population) at any campaign length.
type pbtState struct {
	// RNG is the PCG's binary state (rand.PCG.MarshalBinary).
	RNG []byte `json:"rng"`
	window
	// Fresh counts members sampled from the space (cfg.Points first).
	Fresh int `json:"fresh"`
	// Members are the population's slots, nil before Initial.
	Members []pbtMember `json:"members"`
}

// pbtMember is one slot of the population.
type pbtMember struct {
	// Trial is the member's current trial and Params its parameters; it
	// trains from progress Start to Budget.
	Trial  string  `json:"trial,omitempty"`
	Params Params  `json:"params,omitempty"`
	Start  float64 `json:"start,omitempty"`
	Budget float64 `json:"budget,omitempty"`
	// Reported is the current trial's latest reported progress.
	Reported float64 `json:"reported,omitempty"`
	// Last is the member's latest budget end, nil before the first.
	Last *pbtCheckpoint `json:"last,omitempty"`
	// Done: it has trained MaxBudget. Left: it failed or was stopped and
	// nothing took its slot. Waiting (Synch): it is paused at its budget
	// end Last until every member has reached one; its trial is not
	// outstanding meanwhile.
	Done    bool `json:"done,omitempty"`
	Left    bool `json:"left,omitempty"`
	Waiting bool `json:"waiting,omitempty"`
}

// pbtCheckpoint is a budget end: a trial paused at a checkpoint that a
// new trial can start From.
type pbtCheckpoint struct {
	Trial    string  `json:"trial"`
	Params   Params  `json:"params"`
	Progress float64 `json:"progress"`
	// Metric is the objective there; nil when there was none (NaN) or it
	// was infinite: such a member ranks last.
	Metric *float64 `json:"metric,omitempty"`
}

func (m *pbtMember) live() bool { return !m.Done && !m.Left }

func newPBT(cfg Config) (*pbt, error) {
	set := cfg.Settings.PBT
	if set == nil {
		return nil, fmt.Errorf("search.pbt.interval: missing (budget units a member trains between exploit/explore decisions)")
	}
	pop := cmp.Or(set.Population, min(cfg.MaxConcurrent, cfg.MaxTrials))
	switch {
	case pop > cfg.MaxConcurrent:
		return nil, fmt.Errorf("search.pbt.population: %d must be ≤ max_concurrent %d (the members train concurrently)", pop, cfg.MaxConcurrent)
	case pop > cfg.MaxTrials:
		return nil, fmt.Errorf("search.pbt.population: %d must be ≤ max_trials %d (each member starts as a trial)", pop, cfg.MaxTrials)
	case len(cfg.Points) > pop:
		return nil, fmt.Errorf("points: %d enqueued, more than search.pbt.population %d (each point seeds one member)", len(cfg.Points), pop)
	}
	p := &pbt{
		cfg:       cfg,
		pop:       pop,
		interval:  set.Interval,
		maxBudget: set.MaxBudget,
		quantile:  cmp.Or(set.Quantile, 0.25),
		resample:  0.25,
		perturb:   set.Perturb,
		synch:     set.Synch,
	}
	if set.ResampleProbability != nil {
		p.resample = *set.ResampleProbability
	}
	if len(p.perturb) == 0 {
		p.perturb = []float64{0.8, 1.2}
	}
	p.pcg = newPCG(cfg.Seed)
	p.rng = rand.New(p.pcg)
	return p, nil
}

func (p *pbt) Initial() []Action {
	if p.st.Members != nil {
		return nil
	}
	p.st.Members = make([]pbtMember, p.pop)
	acts := make([]Action, 0, p.pop)
	for i := range p.st.Members {
		acts = append(acts, p.fresh(i))
	}
	return acts
}

func (p *pbt) TrialCreated(string) []Action { return nil }

func (p *pbt) TrialReported(id string, progress, _ float64) []Action {
	if i := p.member(id); i >= 0 && progress > p.st.Members[i].Reported {
		p.st.Members[i].Reported = progress
	}
	return nil
}

func (p *pbt) TrialFinished(id string, metric float64, outcome Outcome) []Action {
	i := p.member(id)
	if i < 0 {
		return nil
	}
	p.st.end(id)
	var acts []Action
	if outcome == OutcomeCompleted {
		acts = p.budgetEnd(i, metric)
	} else {
		acts = p.leave(i)
	}
	acts = append(acts, p.release()...)
	return append(acts, p.shutdown()...)
}

func (p *pbt) TrialFailed(id string) []Action {
	i := p.member(id)
	if i < 0 {
		return nil
	}
	p.st.end(id)
	acts := append(p.leave(i), p.release()...)
	return append(acts, p.shutdown()...)
}

// release (Synch) lets the members waiting at their budget ends decide,
// once no member is training: all ranked together, at the same progress.
func (p *pbt) release() []Action {
	if !p.synch || slices.ContainsFunc(p.st.Members, func(m pbtMember) bool { return m.live() && !m.Waiting }) {
		return nil
	}
	var acts []Action
	for i := range p.st.Members {
		if m := &p.st.Members[i]; m.live() && m.Waiting {
			m.Waiting = false
			acts = append(acts, p.decide(i)...)
		}
	}
	return acts
}

// member is the slot whose current trial id is outstanding, or -1.
func (p *pbt) member(id string) int {
	if !p.st.isOutstanding(id) {
		return -1
	}
	return slices.IndexFunc(p.st.Members, func(m pbtMember) bool { return m.live() && m.Trial == id })
}

// budgetEnd records member i's trial reaching its budget and decides.
func (p *pbt) budgetEnd(i int, metric float64) []Action {
	m := &p.st.Members[i]
	m.Last = &pbtCheckpoint{Trial: m.Trial, Params: m.Params, Progress: m.Budget, Metric: finite(metric)}
	if p.finished(m.Budget) {
		m.Done = true
		return nil
	}
	if p.synch {
		m.Waiting = true // release decides
		return nil
	}
	return p.decide(i)
}

// decide exploits or continues member i, paused at its budget end Last.
func (p *pbt) decide(i int) []Action {
	m := &p.st.Members[i]
	if p.st.Created < p.cfg.MaxTrials {
		ranked := p.ranked()
		k := p.selected(len(ranked))
		if slices.Index(ranked, i) >= len(ranked)-k {
			if src, ok := p.source(ranked[:k], m.Last.Metric); ok {
				return []Action{p.exploit(i, src)}
			}
		}
	}
	m.Start = m.Last.Progress
	m.Budget = p.next(m.Start)
	m.Reported = m.Start
	p.st.reopen(m.Trial)
	return []Action{Continue{TrialID: m.Trial, Budget: m.Budget, Stage: p.stage(m.Start)}}
}

// leave ends member i, whose trial failed or was stopped, and refills its
// slot while max_trials allows.
func (p *pbt) leave(i int) []Action {
	p.st.Members[i] = pbtMember{Left: true}
	if p.st.Created >= p.cfg.MaxTrials {
		return nil
	}
	// The top quantile, or the best member while too few have a score.
	ranked := p.ranked()
	top := min(max(p.selected(len(ranked)), 1), len(ranked))
	if src, ok := p.source(ranked[:top], nil); ok {
		return []Action{p.exploit(i, src)}
	}
	return []Action{p.fresh(i)}
}

// budgetSlack is the relative rounding allowed when progress sums of
// intervals meet max_budget.
const budgetSlack = 1e-9

func (p *pbt) finished(progress float64) bool { return progress >= p.maxBudget*(1-budgetSlack) }

// next is the budget of a trial starting at progress: one interval on, at
// most max_budget.
func (p *pbt) next(progress float64) float64 {
	if b := progress + p.interval; !p.finished(b) {
		return b
	}
	return p.maxBudget
}

func (p *pbt) stage(progress float64) string {
	return fmt.Sprintf("gen %d", int(math.Round(progress/p.interval)))
}

// shutdown ends the search once every member is done or has left.
func (p *pbt) shutdown() []Action {
	if p.st.Shutdown || slices.ContainsFunc(p.st.Members, func(m pbtMember) bool { return m.live() }) {
		return nil
	}
	p.st.Shutdown = true
	return []Action{Shutdown{Reason: p.endReason()}}
}

// endReason says why the search ended: every member trained max_budget
// or left; how many trials that took, against max_trials.
func (p *pbt) endReason() string {
	done := 0
	for _, m := range p.st.Members {
		if m.Done {
			done++
		}
	}
	why := fmt.Sprintf("all %d members of the population trained max_budget %g", p.pop, p.maxBudget)
	if left := p.pop - done; left > 0 {
		why = fmt.Sprintf("%d of %d members trained max_budget %g, %d left after a failure or stop", done, p.pop, p.maxBudget, left)
	}
	exploits := p.st.Created - p.st.Fresh
	return fmt.Sprintf("%s; %d trials (%d sampled, %d by exploits) of max_trials %d", why, p.st.Created, p.st.Fresh, exploits, p.cfg.MaxTrials)
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// Progress is the fraction of the members' total budget trained: a live
// member counts its current trial's progress, a member done or gone its
// whole budget. It can step back when a fresh member replaces one that
// failed.
func (p *pbt) Progress() float64 {
	if p.st.Shutdown {
		return 1
	}
	trained := 0.0
	for _, m := range p.st.Members {
		if !m.live() {
			trained += p.maxBudget
			continue
		}
		trained += clamp(max(m.Start, m.Reported), 0, p.maxBudget)
	}
	return clamp(trained/(float64(p.pop)*p.maxBudget), 0, 1)
}

func (p *pbt) Snapshot() ([]byte, error) {
	b, err := p.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot pbt searcher: rng: %w", err)
	}
	st := p.st
	st.RNG = b
	return marshalSnapshot(AlgorithmPBT, st)
}

func (p *pbt) Restore(snapshot []byte) error {
	var st pbtState
	if err := unmarshalSnapshot(AlgorithmPBT, snapshot, &st); err != nil {
		return err
	}
	if err := p.pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("restore pbt searcher: rng: %w", err)
	}
	if err := st.check(p.cfg, p.pop); err != nil {
		return fmt.Errorf("restore pbt searcher: %w", err)
	}
	st.RNG = nil
	p.st = st
	return nil
}

// check validates a restored state: the counters, and every outstanding
// trial the current trial of exactly one live member.
func (st *pbtState) check(cfg Config, pop int) error {
	if err := st.window.check(cfg); err != nil {
		return err
	}
	if st.Members == nil && st.Created > 0 || st.Members != nil && len(st.Members) != pop || st.Fresh > st.Created {
		return fmt.Errorf("%d members for a population of %d, %d fresh of %d created", len(st.Members), pop, st.Fresh, st.Created)
	}
	live := map[string]bool{}
	for i, m := range st.Members {
		switch {
		case m.Done && (m.Left || m.Last == nil):
			return fmt.Errorf("member %d: done, but left %v or without a budget end", i, m.Left)
		case m.Waiting && (!m.live() || m.Last == nil || st.isOutstanding(m.Trial)):
			return fmt.Errorf("member %d: waiting, but not live, without a budget end, or its trial %q outstanding", i, m.Trial)
		case !m.live() || m.Waiting:
		case !st.isOutstanding(m.Trial) || live[m.Trial]:
			return fmt.Errorf("member %d: trial %q is not outstanding or is another member's too", i, m.Trial)
		default:
			live[m.Trial] = true
		}
	}
	if len(live) != len(st.Outstanding) || st.Shutdown && len(live) > 0 {
		return fmt.Errorf("%d live members, %d trials outstanding, shutdown %v", len(live), len(st.Outstanding), st.Shutdown)
	}
	return nil
}
