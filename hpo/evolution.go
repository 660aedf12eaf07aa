package hpo

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// AlgorithmEvolution names regularized (aging) evolution.
const AlgorithmEvolution = "evolution"

// EvolutionSettings configure search.evolution. A zero value takes its
// default.
type EvolutionSettings struct {
	// Population is P, how many of the latest results the population
	// holds, and how many random trials start it (default 20, at most 500
	// so that the snapshot, which holds the population, stays small). Real
	// et al. search tens of thousands of models with populations of
	// hundreds; a campaign of 100–300 trials that spent hundreds on its
	// random start would never evolve, so the default spends a tenth to a
	// fifth of such a campaign on it.
	Population int `json:"population,omitempty"`
	// SampleSize is S, how many members a tournament draws; the best of
	// them is the parent (default 5, at most Population). S/P is the
	// selection pressure: S = P always mutates the best member (greedy),
	// S = 1 a random one.
	SampleSize int `json:"sample_size,omitempty"`
}

const (
	defaultPopulation = 20
	defaultSampleSize = 5
	// maxPopulation bounds the snapshot: a member's parameters, with an
	// architecture's JSON, take a few hundred bytes.
	maxPopulation = 500
	// mutationSigma is the standard deviation of a number's mutation, in
	// the unit of its (log) range.
	mutationSigma = 0.1
)

// Validate checks the settings; errors name the field.
func (s *EvolutionSettings) Validate() error {
	pop := cmp.Or(s.Population, defaultPopulation)
	switch {
	case s.Population != 0 && (s.Population < 2 || s.Population > maxPopulation):
		return fmt.Errorf("population: %d must be in 2..%d (0 is the default, %d)", s.Population, maxPopulation, defaultPopulation)
	case s.SampleSize < 0 || s.SampleSize > pop:
		return fmt.Errorf("sample_size: %d must be in 1..population %d (0 is the default, %d)", s.SampleSize, pop, defaultSampleSize)
	}
	return nil
}

// sizes are the settings with their defaults filled in.
func (s *EvolutionSettings) sizes() (population, sampleSize int) {
	if s == nil {
		s = &EvolutionSettings{}
	}
	population = cmp.Or(s.Population, defaultPopulation)
	return population, min(cmp.Or(s.SampleSize, defaultSampleSize), population)
}

func init() {
	register(algorithm{
		name:        AlgorithmEvolution,
		creates:     true,
		conditional: true,
		summary:     "regularized evolution (Real et al. 2019): random trials start a population of the latest results; each new trial mutates one parameter (an architecture through its space) of the best of sample_size members drawn at random",
		section:     func(s Settings) (validator, bool) { return s.Evolution, s.Evolution != nil },
		new:         func(cfg Config) (Searcher, error) { return newEvolution(cfg), nil },
	})
}

// evolution is regularized evolution, also called aging evolution (E.
// Real, A. Aggarwal, Y. Huang, Q. V. Le, "Regularized Evolution for Image
// Classifier Architecture Search", AAAI 2019, Algorithm 1), made
// asynchronous as the paper's workers are:
//
//   - the first P trials (cfg.Points first) are random samples of the
//     space, the initial population;
//   - then each new trial, proposed whenever the window has a slot, is a
//     child: S members drawn uniformly from the population, without
//     replacement (Algorithm 1 draws with replacement; for S ≪ P they
//     hardly differ, and without, S = P means the best member), the best
//     of them the parent (the first drawn among equals), and the child the
//     parent with one parameter mutated;
//   - a trial that finishes with a metric joins the population as its
//     youngest member, and when the population exceeds P its oldest member
//     dies, however good (the aging that regularizes: a member survives
//     only through its descendants, so a lucky noisy result does not rule
//     for ever). A child is proposed from the members there are: with
//     fewer than P (trials still running), from those; with none (every
//     result so far failed), it is a random sample.
//
// Mutation picks one parameter uniformly among those with more than one
// value (an architecture space counts as one parameter, so with k other
// parameters it changes in 1/(k+1) of the children) and changes it: an
// architecture by Architectures.Mutate (one edit in its space); a choice
// to another choice, uniformly; a number by a Gaussian step of σ = 0.1 of
// its (log) range (toUnit's coordinates, truncated to the range), an
// integer moved at least one. Real et al. mutate architectures only; on a
// space without one this is an evolutionary hyperparameter search, and
// numbers are perturbed rather than resampled so that a child stays near
// its good parent.
//
// A failed trial, or one that ended without a metric, never joins. A
// stopped trial (by a person, or by the stopping searcher sampling with
// evolution) joins with its last metric but ranks below every completed
// member, as TPE ranks it. The snapshot holds the population and the
// outstanding trials' parameters: O(P + max_concurrent) at any campaign
// length.
type evolution struct {
	cfg         Config
	pop, sample int
	archs       []Architectures // per dimension, for architectures
	pcg         *rand.PCG
	rng         *rand.Rand
	st          evolutionState
}

// evolutionState is all evolution remembers; with the RNG state it is the
// snapshot.
type evolutionState struct {
	// RNG is the PCG's binary state (rand.PCG.MarshalBinary).
	RNG []byte `json:"rng"`
	window
	// Population are the members, oldest first.
	Population []member `json:"population,omitempty"`
	// Pending are the outstanding trials' parameters, in the order of
	// window.Outstanding.
	Pending []Params `json:"pending,omitempty"`
}

// member is a finished trial as evolution and local search keep it.
type member struct {
	Trial  string `json:"trial"`
	Params Params `json:"params"`
	result
}

// result is a finished trial's metric, as evolution and local search rank
// it: completed above stopped, then by the metric in the mode's direction.
type result struct {
	// Metric is finite (±Inf kept as ±MaxFloat64: JSON has no infinity).
	Metric  float64 `json:"metric"`
	Stopped bool    `json:"stopped,omitempty"`
}

// newResult is a trial's end as a result; false when it teaches nothing
// (no metric).
func newResult(metric float64, stopped bool) (result, bool) {
	if math.IsNaN(metric) {
		return result{}, false
	}
	return result{Metric: clamp(metric, -math.MaxFloat64, math.MaxFloat64), Stopped: stopped}, true
}

// beats reports whether r ranks strictly above o.
func (r result) beats(o result, mode string) bool {
	switch {
	case r.Stopped != o.Stopped:
		return !r.Stopped
	case mode == "max":
		return r.Metric > o.Metric
	}
	return r.Metric < o.Metric
}

func (r result) check() error {
	if math.IsNaN(r.Metric) || math.IsInf(r.Metric, 0) {
		return fmt.Errorf("metric %v is not finite", r.Metric)
	}
	return nil
}

// spaceArchs resolves the architecture spaces of a valid space's
// dimensions (nil for the others).
func spaceArchs(s Space) []Architectures {
	archs := make([]Architectures, len(s))
	for i, d := range s {
		if d.Type == ParamArch {
			archs[i] = d.mustArchitectures()
		}
	}
	return archs
}

func newEvolution(cfg Config) *evolution {
	pcg := newPCG(cfg.Seed)
	e := &evolution{cfg: cfg, archs: spaceArchs(cfg.Space), pcg: pcg, rng: rand.New(pcg)}
	e.pop, e.sample = cfg.Settings.Evolution.sizes()
	return e
}

func (e *evolution) Initial() []Action { return e.fill() }

func (e *evolution) TrialCreated(string) []Action { return nil }

func (e *evolution) TrialReported(string, float64, float64) []Action { return nil }

func (e *evolution) TrialFinished(id string, metric float64, o Outcome) []Action {
	return e.end(id, metric, o == OutcomeStopped)
}

func (e *evolution) TrialFailed(id string) []Action { return e.end(id, math.NaN(), false) }

func (e *evolution) end(id string, metric float64, stopped bool) []Action {
	i := slices.Index(e.st.Outstanding, id)
	if i < 0 {
		return nil
	}
	params := e.st.Pending[i]
	e.st.Pending = slices.Delete(e.st.Pending, i, i+1)
	e.st.window.end(id)
	if r, ok := newResult(metric, stopped); ok {
		e.st.Population = append(e.st.Population, member{Trial: id, Params: params, result: r})
		if len(e.st.Population) > e.pop {
			e.st.Population = slices.Delete(e.st.Population, 0, 1) // the oldest dies
		}
	}
	return e.fill()
}

func (e *evolution) fill() []Action {
	return e.st.fill(e.cfg, func(n int) (Params, bool) {
		p, ok := e.propose(n)
		if ok {
			e.st.Pending = append(e.st.Pending, p)
		}
		return p, ok
	}, func(p Params) { e.st.Pending = append(e.st.Pending, p) })
}

// propose returns the parameters of the searcher's own n-th trial; false
// when forbidden clauses left nothing to propose.
//
// With forbidden clauses, a child that one rules out is mutated again
// from its parent (up to maxForbiddenTries times, then a random sample).
func (e *evolution) propose(n int) (Params, bool) {
	if n+len(e.cfg.Points) >= e.pop && len(e.st.Population) > 0 {
		parent := e.tournament().Params
		for range maxForbiddenTries {
			if child := e.mutate(parent); Allowed(e.cfg.Space, e.cfg.Forbidden, child) {
				return child, true
			}
		}
	}
	p, err := e.cfg.Space.SampleAllowed(e.rng, e.cfg.Forbidden)
	return p, err == nil
}

// tournament draws min(S, |population|) members without replacement and
// returns the best, the first drawn among equals.
func (e *evolution) tournament() member {
	pop := e.st.Population
	idx := make([]int, len(pop))
	for i := range idx {
		idx[i] = i
	}
	best := -1
	for k := range min(e.sample, len(pop)) {
		j := k + e.rng.IntN(len(pop)-k) // a partial Fisher–Yates shuffle
		idx[k], idx[j] = idx[j], idx[k]
		if best < 0 || pop[idx[k]].beats(pop[best].result, e.cfg.Mode) {
			best = idx[k]
		}
	}
	return pop[best]
}

// mutate returns parent with one parameter, drawn uniformly among its
// active ones with more than one value, changed (see evolution); parent
// itself when every parameter has a single value. In a conditional space
// the change may switch children on or off: those it activates are drawn
// as Sample draws them, those it deactivates dropped (Space.Complete).
func (e *evolution) mutate(parent Params) Params {
	var mutable []int
	for i, d := range e.cfg.Space {
		if _, active := parent[d.Name]; active && !d.single() {
			mutable = append(mutable, i)
		}
	}
	child := maps.Clone(parent)
	if len(mutable) == 0 {
		return child
	}
	i := mutable[e.rng.IntN(len(mutable))]
	d, v := e.cfg.Space[i], parent[e.cfg.Space[i].Name]
	switch d.Type {
	case ParamArch:
		child[d.Name] = String(e.archs[i].Mutate(e.rng, v.Str))
	case ParamChoice:
		k := e.rng.IntN(len(d.Choices) - 1)
		if k >= slices.Index(d.Choices, v.Str) {
			k++ // every choice but the parent's, uniformly
		}
		child[d.Name] = String(d.Choices[k])
	default:
		child[d.Name] = d.mutateNumber(e.rng, v)
	}
	if e.cfg.Space.Conditional() {
		return e.cfg.Space.Complete(e.rng, child)
	}
	return child
}

// mutateNumber moves number v of d by a Gaussian step of mutationSigma in
// toUnit's coordinates, truncated to the range; an integer that would not
// move goes one step the draw's way (the other at the range's end).
func (d Param) mutateNumber(rng *rand.Rand, v Value) Value {
	u := d.toUnit(v)
	w := truncNormal(rng, u, mutationSigma)
	x := d.fromUnit(w)
	if d.Type != ParamInt || x.Num != v.Num {
		return x
	}
	step := 1.0
	if w < u {
		step = -1
	}
	if lo, hi := math.Ceil(d.Min), math.Floor(d.Max); v.Num+step < lo || v.Num+step > hi {
		step = -step
	}
	return Float(v.Num + step)
}

func (e *evolution) Progress() float64 { return e.st.progress(e.cfg) }

func (e *evolution) Snapshot() ([]byte, error) {
	b, err := e.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot evolution searcher: rng: %w", err)
	}
	st := e.st
	st.RNG = b
	return marshalSnapshot(AlgorithmEvolution, st)
}

func (e *evolution) Restore(snapshot []byte) error {
	var st evolutionState
	if err := unmarshalSnapshot(AlgorithmEvolution, snapshot, &st); err != nil {
		return err
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("restore evolution searcher: rng: %w", err)
	}
	if err := e.check(st); err != nil {
		return fmt.Errorf("restore evolution searcher: %w", err)
	}
	st.RNG = nil
	e.pcg, e.rng, e.st = pcg, rand.New(pcg), st
	return nil
}

// check validates a restored state against the config.
func (e *evolution) check(st evolutionState) error {
	if err := st.window.check(e.cfg); err != nil {
		return err
	}
	switch {
	case len(st.Pending) != len(st.Outstanding):
		return fmt.Errorf("pending: %d for %d trials outstanding", len(st.Pending), len(st.Outstanding))
	case len(st.Population) > e.pop:
		return fmt.Errorf("population: %d members, more than %d", len(st.Population), e.pop)
	}
	for i, m := range st.Population {
		if err := m.check(e.cfg.Space); err != nil {
			return fmt.Errorf("population[%d]: %w", i, err)
		}
	}
	for i, p := range st.Pending {
		if err := e.cfg.Space.Contains(p); err != nil {
			return fmt.Errorf("pending[%d]: %w", i, err)
		}
	}
	return nil
}

func (m member) check(s Space) error {
	if err := m.result.check(); err != nil {
		return err
	}
	return s.Contains(m.Params)
}
