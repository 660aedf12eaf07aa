package hpo

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// tpe is TPE search (Bergstra et al., "Algorithms for Hyper-Parameter
// Optimization", NeurIPS 2011, §4), with Optuna 3.x's TPESampler as the
// reference for its defaults and details. Until n_startup_trials trials
// have finished with a metric it samples the space at random. Then, for
// each trial it opens, it splits the n observations into the best
// ⌈γn⌉ (at most gamma_max) and the rest, fits a Parzen estimator l(x) to
// the first and g(x) to the second (parzen.go), draws n_ei_candidates
// candidates from l and proposes the one of highest l(x)/g(x): with
// γ = p(y < y*), expected improvement is proportional to
// (γ + (1−γ)·g(x)/l(x))⁻¹ (§4.1), so that candidate maximises it among them.
// Independent TPE scores a float's l and g as Optuna 3.1 does, its
// kernels by height rather than by mass (parzen.go says why).
//
// Independent (the default): one l/g pair per parameter, each parameter
// chosen on its own. Multivariate: one joint l/g over all parameters.
// With the constant liar the trials outstanding join g as if they had the
// worst metric, so that trials proposed while others run spread out.
//
// An architecture parameter (ParamArch) is not modelled: every proposal's
// architecture is a fresh sample of its space (Architectures.Sample), the
// other parameters modelled as usual. A Parzen estimator over
// architectures would need a kernel on their space (how likely one
// architecture is near another) that the Architectures interface does not
// give, and counts per architecture, as a categorical is modelled, would
// only propose again the few architectures already tried (in a space of
// millions, each is seen once). So TPE on such a space tunes the other
// parameters across random architectures; to search the architectures
// themselves use evolution or local, which move through their
// neighbourhoods. It keeps TPE's rows numeric and its snapshot free of
// architecture JSON.
//
// A trial's final metric is its observation. A stopped trial's (by a
// person, or by a stopping searcher sampling with TPE) ranks below every
// completed one, as Optuna ranks pruned trials; Optuna then ranks pruned
// trials by the step they reached, which would need the reports: they
// are not used. A failed trial, or one that ended without a metric,
// teaches nothing.
type tpe struct {
	cfg  Config
	set  tpeParams
	dims []dim
	pcg  *rand.PCG
	rng  *rand.Rand
	st   tpeState
	// Derived from st.Observed and st.Metrics, rebuilt by Restore.
	unit     [][]float64 // per dim, per observation: its coordinate (dim.toUnit)
	stopped  []bool      // per observation: its trial was stopped
	byMetric []int32     // the observations, best first (completed before stopped); older first among equals
	byValue  [][]int32   // independent mode, per numeric dim: the observations by coordinate; older first among equals
	on       [][]bool    // per conditional dim, per observation: it is active there (tpe_conditional.go); nil for the others
	cond     tpeConditions
	joint    []int // multivariate: the dims modelled jointly (all, on an unconditional space)
	jdims    []dim // and those dims
	scr      tpeScratch
}

// tpeState is all TPE remembers; with the RNG state it is the snapshot.
// A row is one trial's parameters in space order, a choice as its index,
// an architecture as 0 (not modelled, not kept):
// 10,000 observations of 6 parameters take about 0.9 MB of JSON
// (TestTPESnapshotSize).
type tpeState struct {
	// RNG is the PCG's binary state (rand.PCG.MarshalBinary).
	RNG []byte `json:"rng"`
	window
	// Observed are the rows of the trials that finished with a metric, in
	// the order they finished, and Metrics their metrics (±Inf as
	// ±MaxFloat64: JSON has no infinity).
	Observed [][]float64 `json:"observed,omitempty"`
	Metrics  []float64   `json:"metrics,omitempty"`
	// Stopped are the indices, ascending, of the observations whose trial
	// was stopped.
	Stopped []int32 `json:"stopped,omitempty"`
	// Pending are the rows of the trials outstanding, in the order of
	// window.Outstanding: the constant liar's lies.
	Pending [][]float64 `json:"pending,omitempty"`
	// Seq and PendingSeq are, from revision 5, the creation numbers of the
	// observations' and the liars' trials (tpe_age.go): the first trial
	// opened is 0, a warm start's history comes before it (negative).
	Seq        []int `json:"seq,omitempty"`
	PendingSeq []int `json:"pending_seq,omitempty"`
}

// tpeScratch is one proposal's working memory, kept to spare the garbage
// collector.
type tpeScratch struct {
	tpeSplit              // split's: every observation, the liars when the liar is on
	cond         tpeSplit // splitFor's, for a conditional dim
	liarOn       [][]bool // per liar, its active dims (conditional spaces)
	lk, gk, sk   []kernel
	seen         []float64
	counts       []float64
	pl, pg       []float64
	l, g         mixture1
	colsL, colsG [][]float64
	wgJoint      []float64
	jl, jg       jointMixture
	ageKey       []int   // per member of l or g, its creation number (ageKeys)
	ageOrder     []int   // ageWeights': the members oldest first
	ageObs       []int32 // split's: the observations g models
	ageLiars     []int   // and the liars
	ageW         []float64
}

func newTPE(cfg Config) *tpe {
	pcg := newPCG(cfg.Seed)
	t := &tpe{cfg: cfg, set: cfg.Settings.TPE.params(), pcg: pcg, rng: rand.New(pcg)}
	t.set.jointHeight = cfg.Revision >= revisionJointHeight
	t.set.trialOrder = cfg.Revision >= revisionTrialOrder
	for _, p := range cfg.Space {
		t.dims = append(t.dims, newDim(p))
	}
	t.cond = newTPEConditions(cfg.Space)
	t.joint, t.jdims = t.jointDims()
	t.reindex()
	// Warm start: earlier campaigns' results are observations like its
	// own (a restored snapshot replaces them with the ones it kept).
	for k, o := range cfg.History {
		if cfg.Space.Contains(o.Params) == nil && !math.IsNaN(o.Metric) {
			t.observe(t.row(o.Params), o.Metric, o.Stopped, k-len(cfg.History))
		}
	}
	return t
}

func (t *tpe) Initial() []Action { return t.fill() }

func (t *tpe) TrialCreated(string) []Action { return nil }

func (t *tpe) TrialReported(string, float64, float64) []Action { return nil }

func (t *tpe) TrialFinished(id string, metric float64, o Outcome) []Action {
	return t.end(id, metric, o == OutcomeStopped)
}

func (t *tpe) TrialFailed(id string) []Action { return t.end(id, math.NaN(), false) }

func (t *tpe) end(id string, metric float64, stopped bool) []Action {
	i := slices.Index(t.st.Outstanding, id)
	if i < 0 {
		return nil
	}
	row, seq := t.st.Pending[i], 0
	t.st.Pending = slices.Delete(t.st.Pending, i, i+1)
	if i < len(t.st.PendingSeq) {
		seq = t.st.PendingSeq[i]
		t.st.PendingSeq = slices.Delete(t.st.PendingSeq, i, i+1)
	}
	t.st.window.end(id)
	if !math.IsNaN(metric) {
		t.observe(row, metric, stopped, seq)
	}
	return t.fill()
}

func (t *tpe) fill() []Action {
	return t.st.fill(t.cfg, func(int) (Params, bool) {
		p := t.propose()
		t.pend(t.row(p))
		return p, true
	}, func(p Params) { t.pend(t.row(p)) })
}

// pend records the row of the trial being opened, window.Created its
// creation number.
func (t *tpe) pend(row []float64) {
	t.st.Pending = append(t.st.Pending, row)
	if t.set.trialOrder {
		t.st.PendingSeq = append(t.st.PendingSeq, t.st.Created)
	}
}

func (t *tpe) Progress() float64 { return t.st.progress(t.cfg) }

// propose returns the next trial's parameters: a row of the model's, its
// active architectures sampled; one that forbidden clauses allow.
func (t *tpe) propose() Params {
	if len(t.st.Metrics) < t.set.nStartup {
		// Without clauses, Sample.
		p, _ := t.cfg.Space.SampleAllowed(t.rng, t.cfg.Forbidden)
		return p
	}
	return t.allowedProposal(func() Params {
		row := t.proposeRow()
		p, act := t.params(row), t.cond.active(row)
		for d, dm := range t.cfg.Space {
			if dm.Type == ParamArch && (act == nil || act[d]) {
				p[dm.Name] = dm.sample(t.rng)
			}
		}
		return p
	})
}

// proposeRow returns the row the model proposes: in space order, so that
// a parent's value decides whether its children are proposed (an
// inactive one is kept as 0).
func (t *tpe) proposeRow() []float64 {
	t.split()
	if t.set.group && t.cond.conditional() {
		return t.proposeGroups()
	}
	var row []float64
	if t.set.multivariate {
		if row = t.proposeJoint(); len(t.joint) == len(t.dims) {
			return row
		}
	} else {
		row = make([]float64, len(t.dims))
	}
	if t.cond.conditional() {
		t.splitLiars()
	}
	act := make([]bool, len(t.dims))
	for d := range t.dims {
		if !t.cond.activeIn(d, row, act) || t.set.multivariate && !t.cond.has(d) {
			continue
		}
		row[d] = t.proposeDim(d)
	}
	return row
}

// proposeDim is dimension d's value from its own l and g (a constant's
// only value).
func (t *tpe) proposeDim(d int) float64 {
	switch t.dims[d].kind {
	case dimConst:
		return t.dims[d].Min
	case dimChoice:
		return t.proposeChoice(d)
	default:
		return t.proposeNumeric(d)
	}
}

// split divides the observations as TPE does: l models the best ⌈γn⌉
// (at most gamma_max), g the others and, with the constant liar, the
// trials outstanding. Within l and within g an observation weighs by its
// age (tpe_age.go).
func (t *tpe) split() {
	s := &t.scr
	n := len(t.st.Metrics)
	nb := min(int(math.Ceil(t.set.gamma*float64(n))), t.set.gammaMax, n)
	s.below = append(s.below[:0], t.byMetric[:nb]...)
	slices.Sort(s.below)
	s.inBelow = slices.Grow(s.inBelow[:0], n)[:n]
	clear(s.inBelow)
	for _, i := range s.below {
		s.inBelow[i] = true
	}
	s.wl = s.ageWeights(s.wl[:0], nb, t.ageKeys(s.below, nil))
	s.liars = nil
	s.ageObs, s.ageLiars = s.ageObs[:0], s.ageLiars[:0]
	if t.set.liar {
		s.liars = t.st.Pending
		for j := range s.liars {
			s.ageLiars = append(s.ageLiars, j)
		}
	}
	for i, below := range s.inBelow {
		if !below {
			s.ageObs = append(s.ageObs, int32(i))
		}
	}
	s.weighG(&s.tpeSplit, n, t.ageKeys(s.ageObs, s.ageLiars))
}

// proposeNumeric is independent TPE's value of numeric dim d: of
// n_ei_candidates drawn from l, the one of highest l/g.
func (t *tpe) proposeNumeric(d int) float64 {
	s, dm := &t.scr, t.dims[d]
	t.fitNumeric(d)
	var best, bestScore float64
	s.seen = s.seen[:0]
	for c := range t.set.nCandidates {
		x := dm.fromUnit(s.l.sample(t.rng))
		if dm.Type == ParamInt {
			// An integer drawn again scores the same: skip the work.
			if slices.Contains(s.seen, x) {
				continue
			}
			s.seen = append(s.seen, x)
		}
		u := dm.toUnit(x)
		if score := s.l.value(u) / s.g.value(u); c == 0 || score > bestScore {
			best, bestScore = x, score
		}
	}
	return best
}

// fitNumeric fits scr.l and scr.g to numeric dim d's coordinates of the
// observations split divided.
func (t *tpe) fitNumeric(d int) {
	s, sp, dm, col := &t.scr, t.splitFor(d), t.dims[d], t.unit[d]
	s.lk = s.lk[:0]
	for b, i := range sp.below {
		s.lk = append(s.lk, kernel{col[i], sp.wl[b]})
	}
	slices.SortStableFunc(s.lk, cmpMu)
	// g's observations are in coordinate order already; merge the liars in.
	s.sk = s.sk[:0]
	for j, r := range sp.liars {
		s.sk = append(s.sk, kernel{dm.toUnit(r[d]), sp.wLiar[j]})
	}
	slices.SortStableFunc(s.sk, cmpMu)
	s.gk = s.gk[:0]
	j := 0
	for _, i := range t.byValue[d] {
		if sp.skip(i) {
			continue
		}
		for ; j < len(s.sk) && s.sk[j].mu < col[i]; j++ {
			s.gk = append(s.gk, s.sk[j])
		}
		s.gk = append(s.gk, kernel{col[i], sp.wg[i]})
	}
	s.gk = append(s.gk, s.sk[j:]...)
	step := 0.0
	if dm.kind == dimDiscrete {
		step = 1 / float64(dm.cells)
	}
	s.l.fit(s.lk, dm.form(), step, t.set)
	s.g.fit(s.gk, dm.form(), step, t.set)
}

func cmpMu(a, b kernel) int { return cmp.Compare(a.mu, b.mu) }

// proposeChoice is independent TPE's value (index) of choice dim d: of
// n_ei_candidates drawn from l, the one of highest l/g.
func (t *tpe) proposeChoice(d int) float64 {
	s := &t.scr
	t.fitChoice(d)
	s.counts = s.counts[:0] // now l's cumulative probabilities
	var cum float64
	for _, p := range s.pl {
		cum += p
		s.counts = append(s.counts, cum)
	}
	var best, bestScore float64
	for k := range t.set.nCandidates {
		v := pick(s.counts, t.rng.Float64())
		if score := s.pl[v] / s.pg[v]; k == 0 || score > bestScore {
			best, bestScore = float64(v), score
		}
	}
	return best
}

// fitChoice sets scr.pl and scr.pg to l's and g's probabilities of choice
// dim d's values, from the observations split divided.
func (t *tpe) fitChoice(d int) {
	s, sp, col := &t.scr, t.splitFor(d), t.unit[d]
	c := len(t.dims[d].Choices)
	s.counts = resize(s.counts, c)
	clear(s.counts)
	var wl, wg float64
	for b, i := range sp.below {
		s.counts[int(col[i])] += sp.wl[b]
		wl += sp.wl[b]
	}
	s.pl = choiceProbs(s.counts, wl, len(sp.below), t.set.priorWeight, s.pl)
	clear(s.counts)
	for i, w := range sp.wg { // 0 for the observations in l and those without d
		s.counts[int(col[i])] += w
		wg += w
	}
	for j, r := range sp.liars {
		s.counts[int(r[d])] += sp.wLiar[j]
		wg += sp.wLiar[j]
	}
	s.pg = choiceProbs(s.counts, wg, sp.ng, t.set.priorWeight, s.pg)
}

// proposeJoint is multivariate TPE's row: of n_ei_candidates drawn from
// the joint l, the one of highest l/g; the dims it does not model jointly
// (conditional ones) are left 0.
func (t *tpe) proposeJoint() []float64 {
	if t.jdims == nil { // a tpe that newTPE did not build (motpe's)
		t.joint, t.jdims = t.jointDims()
	}
	all := &t.scr.tpeSplit
	all.on = nil
	best := t.proposeJointOn(all, t.joint, t.jdims)
	if len(t.jdims) == len(t.dims) {
		return best
	}
	row := make([]float64, len(t.dims))
	for k, d := range t.joint {
		row[d] = best[k]
	}
	return row
}

// proposeJointOn is the values of dims (indices idx) that the joint l
// and g fitted to sp propose: of n_ei_candidates drawn from l, the one of
// highest l/g.
func (t *tpe) proposeJointOn(sp *tpeSplit, idx []int, dims []dim) []float64 {
	s := &t.scr
	t.fitJoint(sp, idx, dims)
	nd := len(dims)
	u, x, best := make([]float64, nd), make([]float64, nd), make([]float64, nd)
	var bestScore float64
	for c := range t.set.nCandidates {
		s.jl.sample(t.rng, u)
		for d, dm := range dims {
			x[d] = dm.fromUnit(u[d])
			u[d] = dm.toUnit(x[d])
		}
		if score := s.jl.logDensity(u) - s.jg.logDensity(u); c == 0 || score > bestScore {
			copy(best, x)
			bestScore = score
		}
	}
	return best
}

// fitJoint fits scr.jl and scr.jg over dims (indices idx) to the
// observations and liars of split sp.
func (t *tpe) fitJoint(sp *tpeSplit, idx []int, dims []dim) {
	s := &t.scr
	nd := len(dims)
	s.colsL, s.colsG = resizeRows(s.colsL, nd), resizeRows(s.colsG, nd)
	for k, dm := range dims {
		d := idx[k]
		col := t.unit[d]
		s.colsL[k] = s.colsL[k][:0]
		for _, i := range sp.below {
			s.colsL[k] = append(s.colsL[k], col[i])
		}
		s.colsG[k] = s.colsG[k][:0]
		for i, v := range col {
			if !sp.skip(int32(i)) {
				s.colsG[k] = append(s.colsG[k], v)
			}
		}
		for _, r := range sp.liars {
			s.colsG[k] = append(s.colsG[k], dm.toUnit(r[d]))
		}
	}
	s.wgJoint = s.wgJoint[:0]
	for i, w := range sp.wg {
		if !sp.skip(int32(i)) {
			s.wgJoint = append(s.wgJoint, w)
		}
	}
	s.wgJoint = append(s.wgJoint, sp.wLiar...)
	s.jl.fit(dims, s.colsL, sp.wl, t.set)
	s.jg.fit(dims, s.colsG, s.wgJoint, t.set)
}

// params is a row as Params, its architectures and inactive parameters
// left out.
func (t *tpe) params(row []float64) Params {
	p := make(Params, len(t.dims))
	act := t.cond.active(row)
	for d, dm := range t.dims {
		switch {
		case dm.Type == ParamArch, act != nil && !act[d]:
		case dm.kind == dimChoice:
			p[dm.Name] = String(dm.Choices[int(row[d])])
		default:
			p[dm.Name] = Float(row[d])
		}
	}
	return p
}

// row is Params (inside the space) as a row, an absent (inactive)
// parameter as 0.
func (t *tpe) row(p Params) []float64 {
	r := make([]float64, len(t.dims))
	for d, dm := range t.dims {
		_, ok := p[dm.Name]
		switch {
		case dm.Type == ParamArch, !ok:
		case dm.kind == dimChoice:
			r[d] = float64(slices.Index(dm.Choices, p[dm.Name].Str))
		default:
			r[d] = p[dm.Name].Num
		}
	}
	return r
}

// checkRow checks a restored row: one value per parameter, inside the
// space (0 for an architecture and for an inactive parameter).
func (t *tpe) checkRow(r []float64) error {
	if len(r) != len(t.dims) {
		return fmt.Errorf("%d values for %d parameters", len(r), len(t.dims))
	}
	modelled := make(Space, 0, len(t.dims))
	act := t.cond.active(r)
	for d, dm := range t.dims {
		v := r[d]
		switch {
		case act != nil && !act[d]:
			if v != 0 {
				return fmt.Errorf("%q: %v for an inactive parameter (%s does not hold), which is kept as 0", dm.Name, v, dm.When)
			}
			continue
		case dm.Type == ParamArch:
			if v != 0 {
				return fmt.Errorf("%q: %v for an architecture, which is kept as 0", dm.Name, v)
			}
			continue
		case dm.kind == dimChoice && !(v >= 0 && v < float64(len(dm.Choices)) && v == math.Trunc(v)):
			return fmt.Errorf("%q: choice index %v is not an integer in [0, %d)", dm.Name, v, len(dm.Choices))
		}
		modelled = append(modelled, dm.Param)
	}
	return modelled.Contains(t.params(r))
}
