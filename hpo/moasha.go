package hpo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Multi-objective ASHA (R. Schmucker, M. Donini, V. Perrone, C.
// Archambeau, "Multi-objective Asynchronous Successive Halving", 2021):
// ASHA whose rungs compare results of several objectives and constraints.
// It is ASHA's own mode, chosen by a config with several objectives or
// constraints (Config.MultiObjective), with ASHA's settings and either
// variant; only the step that compares the results at a rung differs.
// The rungs' budgets, the walk of a report up them (ashaRule.climb), the
// promotions' get_job (promoter) and the sampler's feeding are ASHA's.
//
// At a rung the results are ordered by non-dominated rank under
// constrained domination (Goals.Ranks), then by crowding distance within
// the rank, larger first (Goals.Crowding): MO-ASHA's NSGA-II selection,
// the order NSGA-II's elite takes (paretoOrder). A trial goes on past a
// rung (stopping) or is promoted from it (promotion) when it lies in the
// top max(⌊n/η⌋, 1) of that order, n the trials recorded there. With one
// objective and no constraint the order is ASHA's.
//
// A rung keeps the best moKeep results in that order (ASHA keeps
// ashaKeep values): the order is exact while a rung has recorded up to
// moKeep·η trials; beyond, a newcomer is ranked among the kept best only,
// which favours it, as ASHA's cut does. Recording a result costs
// O(M·moKeep), or O(M·moKeep²) when it dominates a kept one (rungPoints.add).
//
// The sampler is random (the default), quasirandom or nsga2: one that
// takes several objectives. A report without a value for every objective
// is not judged.

// moKeep bounds the results a rung keeps under several objectives.
const moKeep = 256

// rungPoint is a result recorded at a rung: its values (finite: ±Inf as
// ±MaxFloat64) and its total constraint violation (+Inf as MaxFloat64),
// what constrained domination needs.
type rungPoint struct {
	Values    []float64 `json:"values"`
	Violation float64   `json:"violation,omitempty"`
	// Rank is its non-dominated rank among the rung's kept results.
	Rank int `json:"rank,omitempty"`
}

// newRungPoint is r under g; false when a value is missing.
func newRungPoint(g Goals, r Result) (rungPoint, bool) {
	m, ok := newParetoMember(g, "", nil, r)
	return rungPoint{Values: m.Values, Violation: m.Violation}, ok
}

func (p rungPoint) result() Result {
	return Result{Values: p.Values, Constraints: []float64{p.Violation}}
}

func (p rungPoint) check(objectives int) error {
	if p.Rank < 0 {
		return fmt.Errorf("rank %d", p.Rank)
	}
	return paretoMember{Values: p.Values, Violation: p.Violation, Params: Params{}}.check(nil, objectives)
}

// rungPoints are a rung's kept results, best first.
type rungPoints []rungPoint

// add records p and returns the new order as indices into the old points
// with p last (len(ps)): the kept ones, best first, at most moKeep.
//
// When p dominates no kept result, no other result's rank changes and only
// p's front is reordered (by its new crowding distances): O(M·moKeep).
// Otherwise the rung is ordered afresh (paretoRanked): O(M·moKeep²). Both
// give paretoOrder's order of the kept results and p.
func (ps *rungPoints) add(vg Goals, p rungPoint) []int {
	all := append(slices.Clone(*ps), p)
	n := len(*ps)
	pr, fresh := p.result(), false
	all[n].Rank = 0
	for _, q := range *ps {
		qr := q.result()
		if vg.Dominates(pr, qr) {
			fresh = true
			break
		}
		if vg.Dominates(qr, pr) {
			all[n].Rank = max(all[n].Rank, q.Rank+1)
		}
	}
	var order []int
	if fresh {
		rs := make([]Result, len(all))
		for i, x := range all {
			rs[i] = x.result()
		}
		var ranks []int
		order, ranks = paretoRanked(vg, rs)
		for i, r := range ranks {
			all[i].Rank = r
		}
	} else {
		r := all[n].Rank
		var front []int
		var fr []Result
		for i, x := range all {
			if x.Rank == r {
				front, fr = append(front, i), append(fr, x.result())
			}
		}
		crowd := vg.Crowding(fr)
		byCrowd := make([]int, len(front))
		for j := range byCrowd {
			byCrowd[j] = j
		}
		slices.SortStableFunc(byCrowd, func(a, b int) int { return cmp.Compare(crowd[b], crowd[a]) })
		for i := range n {
			if all[i].Rank < r {
				order = append(order, i)
			}
		}
		for _, j := range byCrowd {
			order = append(order, front[j])
		}
		for i := range n {
			if all[i].Rank > r {
				order = append(order, i)
			}
		}
	}
	if len(order) > moKeep {
		order = order[:moKeep]
	}
	*ps = permute(all, order)
	return order
}

// moRule is the stopping variant's rule under several objectives: ASHA's
// rungs, each holding rungPoints instead of values.
type moRule struct {
	ashaRule
	// Fronts are, per rung, how many trials reached it and the best
	// results recorded there.
	Fronts []moRung `json:"fronts,omitempty"`
	goals  Goals
	vg     Goals
}

type moRung struct {
	N      int        `json:"n"`
	Points rungPoints `json:"points,omitempty"`
}

func newMORule(cfg Config, r *ashaRule) *moRule {
	g := cfg.Goals()
	return &moRule{ashaRule: *r, goals: g, vg: violationGoals(g)}
}

// observeResult takes a report and says whether to stop the trial: it
// fell out of the top max(⌊n/η⌋, 1) at a rung it newly reached.
func (r *moRule) observeResult(id string, samples float64, res Result) bool {
	p, ok := newRungPoint(r.goals, res)
	if !ok {
		return false
	}
	return r.climb(id, samples, func(k int) bool {
		for len(r.Fronts) <= k {
			r.Fronts = append(r.Fronts, moRung{})
		}
		g := &r.Fronts[k]
		g.N++
		n := len(g.Points)
		at := slices.Index(g.Points.add(r.vg, p), n) // −1: not even kept
		return at < 0 || at >= top(g.N, r.Eta)
	})
}

// observe is a scalar report, a result of one value (the loss oriented
// back to the first objective's mode).
func (r *moRule) observe(id string, samples, loss float64) bool {
	if r.goals.Modes[0] == "max" {
		loss = -loss
	}
	return r.observeResult(id, samples, Scalar(loss))
}

func (r *moRule) check() error {
	if err := r.ashaRule.check(); err != nil {
		return err
	}
	for k, g := range r.Fronts {
		if len(g.Points) > min(g.N, moKeep) {
			return fmt.Errorf("rung %d: %d results kept of %d", k, len(g.Points), g.N)
		}
		for _, p := range g.Points {
			if err := p.check(len(r.goals.Modes)); err != nil {
				return fmt.Errorf("rung %d: %w", k, err)
			}
		}
	}
	return nil
}

// vectorRule is a rule that judges whole results (moRule).
type vectorRule interface {
	observeResult(id string, samples float64, r Result) bool
}

// TrialReportedResult is TrialReported with the whole result: a rule that
// judges results (moRule) gets it, the others its first value.
func (s *stopper) TrialReportedResult(id string, samples float64, r Result) []Action {
	vr, ok := s.rule.(vectorRule)
	if !ok {
		return s.TrialReported(id, samples, r.Value())
	}
	acts := Report(s.sampler, id, samples, r)
	if slices.Contains(s.stopped, id) {
		return acts
	}
	if vr.observeResult(id, samples, r) {
		s.stopped = append(s.stopped, id)
		acts = append(acts, Stop{TrialID: id})
	}
	return acts
}

// TrialFinishedResult is TrialFinished with the whole result, which the
// sampler gets when the rule judges results.
func (s *stopper) TrialFinishedResult(id string, r Result, outcome Outcome) []Action {
	if _, ok := s.rule.(vectorRule); !ok {
		return s.TrialFinished(id, r.Value(), outcome)
	}
	s.ended(id)
	return Finish(s.sampler, id, r, outcome)
}

// moPromoter is the promotion variant under several objectives: ASHA's
// promoter, whose rungs' records it orders by paretoOrder. Each record's
// Value is its place in that order (0 the best), so the promoter's
// get_job reads a rung as it reads ASHA's; the results themselves are
// kept beside, in the same order.
type moPromoter struct {
	*promoter
	goals, vg Goals
	// fronts are, per bracket and rung, the records' results, in the
	// order of the rung's records.
	fronts [][]rungPoints
}

// moPromoterState is the snapshot: the promoter's state and the rungs'
// results.
type moPromoterState struct {
	Promoter json.RawMessage `json:"promoter"`
	Fronts   [][]rungPoints  `json:"fronts"`
}

func newMOPromoter(p *promoter) *moPromoter {
	g := p.cfg.Goals()
	m := &moPromoter{promoter: p, goals: g, vg: violationGoals(g)}
	m.fronts = m.fresh()
	return m
}

func (m *moPromoter) fresh() [][]rungPoints {
	out := make([][]rungPoints, len(m.ladders))
	for b, ladder := range m.ladders {
		out[b] = make([]rungPoints, len(ladder))
	}
	return out
}

func (m *moPromoter) TrialReportedResult(id string, progress float64, r Result) []Action {
	if run, ok := m.st.Running[id]; ok && run.First {
		m.propose(Report(m.sampler, id, progress, r))
	}
	return nil
}

func (m *moPromoter) TrialFinished(id string, metric float64, outcome Outcome) []Action {
	return m.TrialFinishedResult(id, Scalar(metric), outcome)
}

// TrialFinishedResult records a trial paused at its rung with its result,
// as the promoter records a metric; the sampler hears of its first run.
func (m *moPromoter) TrialFinishedResult(id string, r Result, outcome Outcome) []Action {
	run, ok := m.ended(id)
	if !ok {
		return nil
	}
	if run.First {
		told := outcome
		if len(m.ladders[run.Bracket]) > 1 {
			told = OutcomeStopped // a result at the first rung, below R
		}
		m.propose(Finish(m.sampler, id, r, told))
	}
	if p, ok := newRungPoint(m.goals, r); ok && outcome == OutcomeCompleted {
		m.record(run, id, p)
	}
	return m.fill()
}

// record puts trial id, paused at run's rung with result p, in the rung's
// order.
func (m *moPromoter) record(run promoRun, id string, p rungPoint) {
	g := &m.st.Rungs[run.Bracket][run.Rung]
	g.N++
	if run.Rung == len(m.ladders[run.Bracket])-1 {
		return // the top rung promotes no one
	}
	order := m.fronts[run.Bracket][run.Rung].add(m.vg, p)
	g.Top = permute(append(g.Top, promoRecord{ID: id}), order)
	for i := range g.Top {
		g.Top[i].Value = float64(i)
	}
}

func (m *moPromoter) Snapshot() ([]byte, error) {
	inner, err := m.promoter.Snapshot()
	if err != nil {
		return nil, err
	}
	var env envelope
	if err := json.Unmarshal(inner, &env); err != nil {
		return nil, fmt.Errorf("snapshot %s searcher: %w", m.name, err)
	}
	return marshalSnapshot(m.name, moPromoterState{Promoter: env.State, Fronts: m.fronts})
}

func (m *moPromoter) Restore(snapshot []byte) error {
	var st moPromoterState
	if err := unmarshalSnapshot(m.name, snapshot, &st); err != nil {
		return err
	}
	if st.Promoter == nil {
		return fmt.Errorf("restore %s searcher: no promoter state (a snapshot of one objective?)", m.name)
	}
	inner, err := json.Marshal(envelope{Type: m.name, State: st.Promoter})
	if err != nil {
		return fmt.Errorf("restore %s searcher: %w", m.name, err)
	}
	if err := m.check(st.Fronts); err != nil {
		return fmt.Errorf("restore %s searcher: %w", m.name, err)
	}
	if err := m.promoter.Restore(inner); err != nil {
		return err
	}
	for b, rungs := range m.st.Rungs {
		for k, g := range rungs {
			if len(g.Top) != len(st.Fronts[b][k]) {
				return fmt.Errorf("restore %s searcher: bracket %d, rung %d: %d records, %d results", m.name, b, k, len(g.Top), len(st.Fronts[b][k]))
			}
		}
	}
	m.fronts = st.Fronts
	return nil
}

// check validates restored fronts' shape and values against the config.
func (m *moPromoter) check(fronts [][]rungPoints) error {
	if len(fronts) != len(m.ladders) {
		return fmt.Errorf("fronts: %d brackets, the config has %d", len(fronts), len(m.ladders))
	}
	for b, rungs := range fronts {
		if len(rungs) != len(m.ladders[b]) {
			return fmt.Errorf("fronts: bracket %d: %d rungs, the config has %d", b, len(rungs), len(m.ladders[b]))
		}
		for k, ps := range rungs {
			if len(ps) > moKeep {
				return fmt.Errorf("fronts: bracket %d, rung %d: %d results, more than %d", b, k, len(ps), moKeep)
			}
			for _, p := range ps {
				if err := p.check(len(m.goals.Modes)); err != nil {
					return fmt.Errorf("fronts: bracket %d, rung %d: %w", b, k, err)
				}
			}
		}
	}
	return nil
}

// newMOASHA is ASHA under several objectives or constraints (its
// settings set, r its rule's settings).
func newMOASHA(cfg Config, set *ASHASettings, r *ashaRule) (Searcher, error) {
	sampler := cmp.Or(set.Sampler, AlgorithmRandom)
	if a, ok := lookup(sampler); ok && !a.vector {
		var ok []string
		for _, a := range registry {
			if a.vector && a.creates {
				ok = append(ok, a.name)
			}
		}
		return nil, fmt.Errorf("search.asha.sampler: %s takes one objective and no constraints; with several objectives or constraints use one of %s",
			sampler, strings.Join(ok, ", "))
	}
	if set.Variant == VariantPromotion {
		p, err := newPromoter(cfg, AlgorithmASHA, set.Sampler, r.Eta, [][]float64{ashaLadder(r)}, nil)
		if err != nil {
			return nil, err
		}
		return newMOPromoter(p), nil
	}
	return newStopper(cfg, AlgorithmASHA, set.Sampler, newMORule(cfg, r))
}
