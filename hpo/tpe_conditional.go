package hpo

import (
	"slices"
	"strconv"
)

// TPE on a conditional space fits each parameter on the trials where it
// is active, as Optuna 3.1's define-by-run TPESampler does
// (optuna/samplers/_tpe/sampler.py, sample_independent and
// _get_observation_pairs):
//
//   - the observations are split into l's and g's over all trials, as on
//     an unconditional space: ⌈γn⌉ of the n finished, n counting every
//     one, the liars in g;
//   - a conditional parameter's l and g then keep only the observations
//     (and liars) in which it is active, and weigh them by age among
//     those (Optuna's default_weights of the masked count), its prior
//     and its magic clip counting them alone; a parameter active in no
//     observation of l or of g has the prior alone there;
//   - a proposal chooses the parameters in space order, parents first,
//     as define-by-run suggests one at a time: a child is proposed only
//     if the value just chosen for its parent activates it, and an
//     inactive parameter is left out of the trial's params.
//
// Multivariate on a conditional space does what Optuna 3.1's
// multivariate=True (group=False) does: its intersection search space,
// the parameters present in every trial, is here the unconditional
// ones, modelled jointly; each conditional parameter is then proposed on
// its own as above (Optuna's fallback to sample_independent).
//
// Group (with multivariate) does what Optuna 3.1's multivariate=True,
// group=True does (_GroupDecomposedSearchSpace, sample_relative): the
// parameters are split into groups, disjoint, of those active in
// exactly the same observations (groups); each group is modelled
// jointly on the observations that have it, split over all trials and
// masked as a conditional parameter is above, weighed by age among them.
// A proposal still chooses parents first: a group is proposed when the
// first of its parameters that the values chosen so far activate is
// reached, so a group that a parent value just chosen activates comes
// after it; its parameters that turn out inactive are left out. Optuna
// samples every group before the trial suggests anything and keeps the
// values of those suggested, which gives the same distribution: no group
// depends on another's values. A parameter active in no observation is
// proposed on its own (Optuna leaves it out of every group and samples
// it with sample_independent).
//
// A row keeps an inactive parameter as 0 (as it keeps an architecture),
// so the rows, the liars and the snapshot stay as they were; whether a
// parameter is active in a row follows from its parents' values in the
// same row. On an unconditional space none of this runs, and TPE decides
// exactly as before (TestTPEUnconditionalKeepsItsDecisions).

// tpeConditions is how TPE tells, from a row, which parameters are
// active.
type tpeConditions struct {
	// parent is each dim's parent dim, −1 for an unconditional one.
	parent []int
	// allowed are, per conditional dim, the parent's row values that
	// activate it: a choice's indices, an int's integers.
	allowed [][]float64
}

func newTPEConditions(s Space) tpeConditions {
	c := tpeConditions{parent: make([]int, len(s)), allowed: make([][]float64, len(s))}
	for d, p := range s {
		c.parent[d] = -1
		if p.When == nil {
			continue
		}
		j := s.Index(p.When.Param)
		c.parent[d] = j
		for _, v := range p.When.Values {
			if s[j].Type == ParamChoice {
				c.allowed[d] = append(c.allowed[d], float64(slices.Index(s[j].Choices, v)))
			} else if x, err := strconv.ParseFloat(v, 64); err == nil {
				c.allowed[d] = append(c.allowed[d], x)
			}
		}
	}
	return c
}

// has reports whether dim d is conditional. A tpe built without
// newTPEConditions (motpe builds its own) has none.
func (c tpeConditions) has(d int) bool { return d < len(c.parent) && c.parent[d] >= 0 }

// conditional reports whether the space has a conditional parameter.
func (c tpeConditions) conditional() bool {
	return slices.ContainsFunc(c.parent, func(j int) bool { return j >= 0 })
}

// activeIn sets act[d] to whether dim d is active in row, given act for
// the dims before it (its parent among them), and returns it.
func (c tpeConditions) activeIn(d int, row []float64, act []bool) bool {
	act[d] = !c.has(d) || act[c.parent[d]] && slices.Contains(c.allowed[d], row[c.parent[d]])
	return act[d]
}

// active says which dims are active in row; nil on an unconditional
// space (every one is).
func (c tpeConditions) active(row []float64) []bool {
	if !c.conditional() {
		return nil
	}
	act := make([]bool, len(c.parent))
	for d := range act {
		c.activeIn(d, row, act)
	}
	return act
}

// tpeSplit is the observations as one parameter's l and g see them.
type tpeSplit struct {
	below   []int32   // the observations l models, oldest first
	inBelow []bool    // per observation (of all the split divided)
	wl, wg  []float64 // weights in l (per below), in g (per observation; 0 in l, and where the parameter is inactive)
	wLiar   []float64 // of the liars in g
	liars   [][]float64
	// on says, per observation, whether the parameter is active in it;
	// nil: in every one.
	on []bool
	// ng is how many observations and liars g models.
	ng int
}

// skip reports whether observation i is not one of g's.
func (sp *tpeSplit) skip(i int32) bool { return sp.inBelow[i] || sp.on != nil && !sp.on[i] }

// splitFor is the split dim d's l and g see: split's own for an
// unconditional dim, else split's restricted to the observations and
// liars in which d is active, weighed by age among them.
func (t *tpe) splitFor(d int) *tpeSplit {
	all := &t.scr.tpeSplit
	on := t.on[d]
	if on == nil {
		// Derived here, not by split: motpe sets the scratch's split itself.
		all.on, all.ng = nil, len(all.wg)-len(all.below)+len(all.liars)
		return all
	}
	return t.splitOn(on, func(j int) bool { return t.scr.liarOn[j][d] })
}

// splitOn is split's restricted to the observations on marks (nil: all)
// and the liars liarIn accepts, weighed by age among them, as Optuna's
// masks restrict its below and above.
func (t *tpe) splitOn(on []bool, liarIn func(j int) bool) *tpeSplit {
	all := &t.scr.tpeSplit
	sp := &t.scr.cond
	sp.on, sp.inBelow = on, all.inBelow
	n := len(all.inBelow)
	sp.below = sp.below[:0]
	for _, i := range all.below {
		if on == nil || on[i] {
			sp.below = append(sp.below, i)
		}
	}
	s := &t.scr
	sp.wl = s.ageWeights(sp.wl[:0], len(sp.below), t.ageKeys(sp.below, nil))
	sp.liars = sp.liars[:0]
	s.ageObs, s.ageLiars = s.ageObs[:0], s.ageLiars[:0]
	for j, r := range all.liars {
		if liarIn(j) {
			sp.liars = append(sp.liars, r)
			s.ageLiars = append(s.ageLiars, j)
		}
	}
	for i := range n {
		if !sp.skip(int32(i)) {
			s.ageObs = append(s.ageObs, int32(i))
		}
	}
	sp.ng = len(s.ageObs) + len(s.ageLiars)
	s.weighG(sp, n, t.ageKeys(s.ageObs, s.ageLiars))
	return sp
}

// splitLiars records which parameters are active in each liar, for
// splitFor.
func (t *tpe) splitLiars() {
	s := &t.scr
	s.liarOn = s.liarOn[:0]
	for _, r := range s.liars {
		s.liarOn = append(s.liarOn, t.cond.active(r))
	}
}

// reindexActive derives on from the observations.
func (t *tpe) reindexActive() {
	t.on = make([][]bool, len(t.dims))
	for d := range t.dims {
		if t.cond.has(d) {
			t.on[d] = make([]bool, 0, len(t.st.Observed))
		}
	}
	for _, r := range t.st.Observed {
		t.observeActive(r)
	}
}

// observeActive appends a new observation's row to on.
func (t *tpe) observeActive(row []float64) {
	act := t.cond.active(row)
	for d := range t.on {
		if t.cond.has(d) {
			t.on[d] = append(t.on[d], act[d])
		}
	}
}

// jointDims are the dims multivariate TPE models jointly: the
// unconditional ones (Optuna's intersection search space), by index.
func (t *tpe) jointDims() ([]int, []dim) {
	var idx []int
	var dims []dim
	for d, dm := range t.dims {
		if !t.cond.has(d) {
			idx, dims = append(idx, d), append(dims, dm)
		}
	}
	return idx, dims
}

// tpeGroup is one group of group mode: parameters active in exactly the
// same observations.
type tpeGroup struct {
	idx  []int // its dims, in space order
	dims []dim
	// on is, per observation, whether the group is active there; nil: in
	// every one.
	on []bool
}

// groups decomposes the space as Optuna 3.1's _GroupDecomposedSearchSpace
// decomposes a study's: two parameters are in the same group if and only
// if every observation has both or neither (Optuna refines its groups
// trial by trial, splitting each by which of its parameters a trial has,
// which ends in these classes). Observations are the trials that ended
// with a metric, complete or stopped (Optuna's include_pruned); the
// groups are in the order of their first dims. A dim active in no
// observation is in none.
func (t *tpe) groups() []tpeGroup {
	var gs []tpeGroup
	for d, dm := range t.dims {
		var on []bool
		if d < len(t.on) {
			on = t.on[d]
		}
		if on != nil && !slices.Contains(on, true) {
			continue
		}
		if !slices.Contains(on, false) {
			on = nil // active in every observation, as an unconditional dim
		}
		k := slices.IndexFunc(gs, func(g tpeGroup) bool { return slices.Equal(g.on, on) })
		if k < 0 {
			k = len(gs)
			gs = append(gs, tpeGroup{on: on})
		}
		gs[k].idx, gs[k].dims = append(gs[k].idx, d), append(gs[k].dims, dm)
	}
	return gs
}

// proposeGroups is group mode's row on a conditional space: the space in
// order, parents first, each group proposed jointly when the first of its
// dims is active, the dims in no group each on its own.
func (t *tpe) proposeGroups() []float64 {
	t.splitLiars()
	gs := t.groups()
	of := make([]int, len(t.dims))
	for d := range of {
		of[d] = -1
	}
	for k, g := range gs {
		for _, d := range g.idx {
			of[d] = k
		}
	}
	done := make([]bool, len(gs))
	row := make([]float64, len(t.dims))
	act := make([]bool, len(t.dims))
	for d := range t.dims {
		if !t.cond.activeIn(d, row, act) {
			row[d] = 0 // a group's value for a dim it does not activate
			continue
		}
		if k := of[d]; k >= 0 {
			if !done[k] {
				done[k] = true
				vals := t.proposeGroup(gs[k])
				for j, e := range gs[k].idx {
					if e >= d { // the group's dims before d are inactive
						row[e] = vals[j]
					}
				}
			}
			continue
		}
		row[d] = t.proposeDim(d)
	}
	return row
}

// proposeGroup is group g's values, from its joint l and g fitted to the
// observations that have it and the liars in which all its dims are
// active. (Optuna masks by the group's first parameter by name; a liar
// that has only some of a group's parameters would give it NaNs.)
func (t *tpe) proposeGroup(g tpeGroup) []float64 {
	sp := t.splitOn(g.on, func(j int) bool {
		return !slices.ContainsFunc(g.idx, func(d int) bool { return !t.scr.liarOn[j][d] })
	})
	return t.proposeJointOn(sp, g.idx, g.dims)
}

// allowedProposal proposes until Allowed accepts the proposal, at most
// maxTPEForbiddenTries times, then samples as random search does.
func (t *tpe) allowedProposal(propose func() Params) Params {
	if len(t.cfg.Forbidden) == 0 {
		return propose()
	}
	for range maxTPEForbiddenTries {
		if p := propose(); Allowed(t.cfg.Space, t.cfg.Forbidden, p) {
			return p
		}
	}
	// Validate checked that sampling finds an allowed configuration.
	p, _ := t.cfg.Space.SampleAllowed(t.rng, t.cfg.Forbidden)
	return p
}

// maxTPEForbiddenTries bounds TPE's proposals of forbidden
// configurations before it falls back to random sampling: each costs a
// fit of every parameter, and a model that proposed a forbidden point
// several times will mostly propose it again.
const maxTPEForbiddenTries = 10
