package hpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// AlgorithmMOTPE is TPE for several objectives and constraints.
const AlgorithmMOTPE = "motpe"

// motpe is multi-objective TPE (Ozaki et al., "Multiobjective
// Tree-Structured Parzen Estimator for Computationally Expensive
// Optimization Problems", GECCO 2020), as Optuna 3.1's TPESampler runs it
// for several objectives (optuna/samplers/_tpe/sampler.py), and with
// constraints as its constraints_func does. It is TPE (tpe.go) with
// another split of the observations into l's and g's, and other weights
// in l:
//
//   - Below, the trials l models: ⌈γn⌉ of the n observations (at most
//     gamma_max). With constraints, when at most that many trials are
//     feasible, the ones of least total violation (every feasible one
//     first, older first among equals); otherwise only feasible trials.
//     Among those, whole non-dominated fronts in rank order while they fit
//     (Deb et al.'s sort), and the front that does not fit cut down by
//     greedy hypervolume subset selection (Guerreiro et al., "Greedy
//     Hypervolume Subset Selection in Low Dimensions", 2016: each step
//     takes the point that adds most hypervolume to those taken), with
//     Optuna's reference point, the front's worst values moved outward
//     by a tenth. With one objective the best values, older first among
//     equals, as TPE.
//   - Weights in l, with several objectives: a feasible trial's
//     hypervolume contribution to below (the volume only it dominates,
//     reference point as above) over the largest, plus ε so that none is
//     0; an infeasible one ε. With one objective TPE's age weights.
//   - g models the rest, with TPE's age weights, and, with the constant
//     liar, the trials outstanding as the newest.
//
// It then proposes as TPE does, through TPE's own estimators: of
// n_ei_candidates drawn from l, the one of highest l/g, per parameter or
// jointly (multivariate).
//
// Where it departs from Optuna 3.1: the constant liar is on by default,
// as for TPE, since Gleaner runs trials in parallel (Optuna's
// multi-objective TPE ignores the trials running; it counts them in g
// here); and, as Optuna's multi-objective TPE skips pruned trials, a
// stopped trial teaches nothing, also with one objective. A trial fed
// by TrialFinished alone (one value) teaches nothing when there are
// several objectives or any constraint. Warm-start History (one metric,
// no constraint values) is used with one objective and no constraints.
type motpe struct {
	cfg   Config
	goals Goals
	set   tpeParams
	// m is the model: the observations' rows and coordinates, the RNG and
	// the estimators, TPE's (tpe.go). Its metrics are unused (0); motpe
	// divides the observations itself and bounds them itself.
	m  *tpe
	st motpeState
	// Derived from st, rebuilt by Restore.
	loss [][]float64 // per observation: its values as minimised (max objectives negated)
	viol []float64   // per observation: its total constraint violation
	scr  motpeScratch
}

// motpeState is all motpe remembers; with the RNG state it is the
// snapshot. Rows are TPE's (tpeState). With the default bound of 3,000
// observations, 100,000 trials of 6 parameters and 2 objectives leave a
// snapshot of about 0.4 MB (TestMOTPESnapshotBoundedAt100k).
type motpeState struct {
	// RNG is the PCG's binary state (rand.PCG.MarshalBinary).
	RNG []byte `json:"rng"`
	window
	// Observed are the rows of the trials that completed with a value
	// for every objective, in the order they finished; Values their
	// values per objective (±Inf as ±MaxFloat64: JSON has no infinity).
	Observed [][]float64 `json:"observed,omitempty"`
	Values   [][]float64 `json:"values,omitempty"`
	// Violations, with constraints, are the observations' total
	// violations (Goals.Violation; one never reported, +Inf, as
	// MaxFloat64).
	Violations []float64 `json:"violations,omitempty"`
	// Pending are the rows of the trials outstanding, in the order of
	// window.Outstanding: the constant liar's lies.
	Pending [][]float64 `json:"pending,omitempty"`
	// Seq and PendingSeq are, from revision 5, the creation numbers of the
	// observations' and the liars' trials, as TPE's (tpe_age.go).
	Seq        []int `json:"seq,omitempty"`
	PendingSeq []int `json:"pending_seq,omitempty"`
}

// motpeScratch is one split's working memory.
type motpeScratch struct {
	order, front, below []int32
	pts                 [][]float64
}

func newMOTPE(cfg Config) *motpe {
	set := cfg.Settings.MOTPE.params()
	// The model is a TPE searcher of the same space and settings, without
	// warm start: motpe feeds it the observations.
	base := cfg
	base.Settings, base.History = Settings{TPE: cfg.Settings.MOTPE}, nil
	m := newTPE(base)
	// Optuna 3.1's joint scoring (revisionJointHeight) from the start:
	// no campaign ran motpe under older rules.
	m.set.jointHeight = true
	// motpe bounds the observations itself (forgetOldest below).
	m.set.maxObs = math.MaxInt32
	s := &motpe{cfg: cfg, goals: cfg.Goals(), set: set, m: m}
	if !cfg.MultiObjective() {
		for k, o := range cfg.History {
			if cfg.Space.Contains(o.Params) == nil && !math.IsNaN(o.Metric) && !o.Stopped {
				s.observe(m.row(o.Params), Scalar(o.Metric), k-len(cfg.History))
			}
		}
	}
	return s
}

func (s *motpe) Initial() []Action { return s.fill() }

func (s *motpe) TrialCreated(string) []Action { return nil }

func (s *motpe) TrialReported(string, float64, float64) []Action { return nil }

func (s *motpe) TrialReportedResult(string, float64, Result) []Action { return nil }

func (s *motpe) TrialFinished(id string, metric float64, o Outcome) []Action {
	return s.TrialFinishedResult(id, Scalar(metric), o)
}

func (s *motpe) TrialFinishedResult(id string, r Result, o Outcome) []Action {
	if o != OutcomeCompleted {
		r = Result{}
	}
	return s.end(id, r)
}

func (s *motpe) TrialFailed(id string) []Action { return s.end(id, Result{}) }

func (s *motpe) Progress() float64 { return s.st.progress(s.cfg) }

// end closes trial id and observes r if it has every objective's value.
func (s *motpe) end(id string, r Result) []Action {
	i := slices.Index(s.st.Outstanding, id)
	if i < 0 {
		return nil
	}
	row, seq := s.st.Pending[i], 0
	s.st.Pending = slices.Delete(s.st.Pending, i, i+1)
	if i < len(s.st.PendingSeq) {
		seq = s.st.PendingSeq[i]
		s.st.PendingSeq = slices.Delete(s.st.PendingSeq, i, i+1)
	}
	s.st.window.end(id)
	if len(r.Values) == len(s.goals.Modes) && r.Complete() {
		s.observe(row, r, seq)
	}
	return s.fill()
}

func (s *motpe) fill() []Action {
	return s.st.fill(s.cfg, func(int) (Params, bool) {
		p := s.propose()
		s.pend(p)
		return p, true
	}, s.pend)
}

// pend records the row of the trial being opened, window.Created its
// creation number.
func (s *motpe) pend(p Params) {
	s.st.Pending = append(s.st.Pending, s.m.row(p))
	if s.m.set.trialOrder {
		s.st.PendingSeq = append(s.st.PendingSeq, s.st.Created)
	}
}

// ageKeys is as TPE's (tpe_age.go), of motpe's observations and liars.
func (s *motpe) ageKeys(obs []int32, liars []int) []int {
	if !s.m.set.trialOrder || len(s.st.Seq) != len(s.st.Values) || len(s.st.PendingSeq) != len(s.st.Pending) {
		return nil
	}
	return seqKeys(s.m.scr.ageKey[:0], s.st.Seq, s.st.PendingSeq, obs, liars)
}

// propose returns the next trial's parameters: at random for the first
// n_startup_trials observations, then TPE's proposal from motpe's split.
func (s *motpe) propose() Params {
	m := s.m
	if len(s.st.Values) < s.set.nStartup {
		return s.cfg.Space.Sample(m.rng)
	}
	s.split()
	var row []float64
	if s.set.multivariate {
		row = m.proposeJoint()
	} else {
		row = make([]float64, len(m.dims))
		for d, dm := range m.dims {
			switch dm.kind {
			case dimConst:
				row[d] = dm.Min
			case dimChoice:
				row[d] = m.proposeChoice(d)
			default:
				row[d] = m.proposeNumeric(d)
			}
		}
	}
	p := m.params(row)
	for _, d := range s.cfg.Space {
		if d.Type == ParamArch {
			p[d.Name] = d.sample(m.rng)
		}
	}
	return p
}

// split sets the model's scratch (tpeScratch) as TPE's split does, from
// motpe's division of the observations (see motpe) and its weights.
func (s *motpe) split() {
	sc := &s.m.scr
	n := len(s.loss)
	nb := min(int(math.Ceil(s.set.gamma*float64(n))), s.set.gammaMax, n)
	sc.below = append(sc.below[:0], s.selectBelow(nb)...)
	slices.Sort(sc.below)
	sc.inBelow = slices.Grow(sc.inBelow[:0], n)[:n]
	clear(sc.inBelow)
	for _, i := range sc.below {
		sc.inBelow[i] = true
	}
	sc.wl = sc.wl[:0]
	if len(s.goals.Modes) > 1 {
		sc.wl = s.contributionWeights(sc.below, sc.wl)
	} else {
		sc.wl = sc.ageWeights(sc.wl, len(sc.below), s.ageKeys(sc.below, nil))
	}
	sc.liars = nil
	sc.ageObs, sc.ageLiars = sc.ageObs[:0], sc.ageLiars[:0]
	if s.set.liar {
		sc.liars = s.st.Pending
		for j := range sc.liars {
			sc.ageLiars = append(sc.ageLiars, j)
		}
	}
	for i, below := range sc.inBelow {
		if !below {
			sc.ageObs = append(sc.ageObs, int32(i))
		}
	}
	sc.weighG(&sc.tpeSplit, n, s.ageKeys(sc.ageObs, sc.ageLiars))
}

// observe records a finished trial's row and complete result, and past
// the bound forgets the oldest observations l would not model.
func (s *motpe) observe(row []float64, r Result, seq int) {
	vals := make([]float64, len(r.Values))
	for k, v := range r.Values {
		vals[k] = clamp(v, -math.MaxFloat64, math.MaxFloat64)
	}
	s.st.Observed = append(s.st.Observed, row)
	s.st.Values = append(s.st.Values, vals)
	if len(s.goals.Constraints) > 0 {
		s.st.Violations = append(s.st.Violations, math.Min(s.goals.Violation(r), math.MaxFloat64))
	}
	if s.m.set.trialOrder {
		s.st.Seq = append(s.st.Seq, seq)
	}
	s.derive(len(s.st.Values) - 1)
	s.m.observe(row, 0, false, seq)
	if keep := max(s.set.maxObs, s.set.gammaMax+1); len(s.st.Values) > keep+keep/10 {
		s.forgetOldest(keep)
	}
}

// derive appends observation i's loss and violation.
func (s *motpe) derive(i int) {
	s.loss = append(s.loss, s.goals.minimised(Result{Values: s.st.Values[i]}))
	v := 0.0
	if s.st.Violations != nil {
		v = s.st.Violations[i]
	}
	s.viol = append(s.viol, v)
}

// forgetOldest keeps keep observations: every one l would model now with
// gamma_max of them, then the newest; the others leave. An observation
// that leaves is dominated by gamma_max kept ones (or violates more), so
// l would not have modelled it again. It runs when a tenth more than
// keep have gathered, so its cost is spread over that many observations.
func (s *motpe) forgetOldest(keep int) {
	n := len(s.st.Values)
	elite := make([]bool, n)
	for _, i := range s.selectBelow(min(s.set.gammaMax, n)) {
		elite[i] = true
	}
	drop := make([]bool, n)
	for i, left := 0, n-keep; i < n && left > 0; i++ {
		if !elite[i] {
			drop[i], left = true, left-1
		}
	}
	st := &s.st
	var observed, values [][]float64
	var viol []float64
	var seq []int
	for i := range n {
		if drop[i] {
			continue
		}
		observed, values = append(observed, st.Observed[i]), append(values, st.Values[i])
		if st.Violations != nil {
			viol = append(viol, st.Violations[i])
		}
		if len(st.Seq) == n {
			seq = append(seq, st.Seq[i])
		}
	}
	st.Observed, st.Values, st.Violations, st.Seq = observed, values, viol, seq
	s.rebuild()
}

// rebuild derives loss and viol, and the model's observations, from st.
func (s *motpe) rebuild() {
	s.loss, s.viol = nil, nil
	for i := range s.st.Values {
		s.derive(i)
	}
	s.m.st = tpeState{Observed: slices.Clone(s.st.Observed), Metrics: make([]float64, len(s.st.Observed))}
	s.m.reindex()
}

func (s *motpe) Snapshot() ([]byte, error) {
	b, err := s.m.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot motpe searcher: rng: %w", err)
	}
	st := s.st
	st.RNG = b
	return marshalSnapshot(AlgorithmMOTPE, st)
}

func (s *motpe) Restore(snapshot []byte) error {
	var st motpeState
	if err := unmarshalSnapshot(AlgorithmMOTPE, snapshot, &st); err != nil {
		return err
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("restore motpe searcher: rng: %w", err)
	}
	if err := s.checkState(st); err != nil {
		return fmt.Errorf("restore motpe searcher: %w", err)
	}
	st.RNG = nil
	s.st = st
	s.m.pcg, s.m.rng = pcg, rand.New(pcg)
	s.rebuild()
	return nil
}

func (s *motpe) checkState(st motpeState) error {
	if err := st.check(s.cfg); err != nil {
		return err
	}
	nc := len(s.goals.Constraints)
	switch {
	case len(st.Pending) != len(st.Outstanding):
		return fmt.Errorf("pending: %d rows for %d trials outstanding", len(st.Pending), len(st.Outstanding))
	case len(st.Values) != len(st.Observed):
		return fmt.Errorf("values: %d for %d observed rows", len(st.Values), len(st.Observed))
	case len(st.Seq) != 0 && len(st.Seq) != len(st.Observed):
		return fmt.Errorf("seq: %d for %d observed rows", len(st.Seq), len(st.Observed))
	case len(st.PendingSeq) != 0 && len(st.PendingSeq) != len(st.Pending):
		return fmt.Errorf("pending_seq: %d for %d pending rows", len(st.PendingSeq), len(st.Pending))
	case len(st.Values) > st.Ended:
		return fmt.Errorf("observed: %d rows for %d trials ended", len(st.Observed), st.Ended)
	case nc > 0 && len(st.Violations) != len(st.Observed):
		return fmt.Errorf("violations: %d for %d observed rows", len(st.Violations), len(st.Observed))
	case nc == 0 && st.Violations != nil:
		return fmt.Errorf("violations: %d, but the search has no constraints", len(st.Violations))
	}
	for i, v := range st.Values {
		if len(v) != len(s.goals.Modes) {
			return fmt.Errorf("values[%d]: %d values for %d objectives", i, len(v), len(s.goals.Modes))
		}
		for _, x := range v {
			if !isFinite(x) {
				return fmt.Errorf("values[%d]: %v is not finite", i, x)
			}
		}
	}
	for i, v := range st.Violations {
		if !(v >= 0 && v <= math.MaxFloat64) {
			return fmt.Errorf("violations[%d]: %v is not a finite violation (at least 0)", i, v)
		}
	}
	for i, r := range st.Observed {
		if err := s.m.checkRow(r); err != nil {
			return fmt.Errorf("observed[%d]: %w", i, err)
		}
	}
	for i, r := range st.Pending {
		if err := s.m.checkRow(r); err != nil {
			return fmt.Errorf("pending[%d]: %w", i, err)
		}
	}
	return nil
}

func init() {
	register(algorithm{
		name:    AlgorithmMOTPE,
		creates: true,
		vector:  true,
		summary: "multi-objective TPE (Ozaki et al. 2020, as Optuna 3.1's TPESampler): l models the best non-dominated fronts, cut by hypervolume and weighted by hypervolume contribution; feasible trials first",
		section: func(s Settings) (validator, bool) { return s.MOTPE, s.MOTPE != nil },
		new:     func(cfg Config) (Searcher, error) { return newMOTPE(cfg), nil },
	})
}
