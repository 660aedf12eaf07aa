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
// its own as above (Optuna's fallback to sample_independent). Optuna's
// group=True, one joint model per set of parameters that appear
// together, is not done.
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
	sp := &t.scr.cond
	sp.on, sp.inBelow = on, all.inBelow
	sp.below = sp.below[:0]
	for _, i := range all.below {
		if on[i] {
			sp.below = append(sp.below, i)
		}
	}
	sp.wl = sp.wl[:0]
	for b := range sp.below {
		sp.wl = append(sp.wl, defaultWeight(b, len(sp.below)))
	}
	sp.liars = sp.liars[:0]
	for j, r := range all.liars {
		if t.scr.liarOn[j][d] {
			sp.liars = append(sp.liars, r)
		}
	}
	na := len(sp.liars)
	for i := range on {
		if !sp.skip(int32(i)) {
			na++
		}
	}
	sp.ng = na
	sp.wg = resize(sp.wg, len(on))
	pos := 0
	for i := range on {
		sp.wg[i] = 0
		if !sp.skip(int32(i)) {
			sp.wg[i] = defaultWeight(pos, na)
			pos++
		}
	}
	sp.wLiar = sp.wLiar[:0]
	for j := range sp.liars {
		sp.wLiar = append(sp.wLiar, defaultWeight(pos+j, na))
	}
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
