package hpo

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
)

// AlgorithmNSGA2 names NSGA-II, the genetic algorithm for several
// objectives and constraints.
const AlgorithmNSGA2 = "nsga2"

// NSGA2Settings configure search.nsga2. A zero value (or a field left
// out) takes its default, Optuna 3.1's NSGAIISampler's.
type NSGA2Settings struct {
	// PopulationSize is P, the trials of a generation and the size of the
	// parent population (default 50, 2..500: the snapshot holds the
	// parents and the generation being filled).
	PopulationSize int `json:"population_size,omitempty"`
	// MutationProb is the probability that a child's parameter is drawn
	// afresh instead of inherited (default 1/n, n the parameters with more
	// than one value).
	MutationProb *float64 `json:"mutation_prob,omitempty"`
	// CrossoverProb is the probability that a child is bred from two
	// parents; otherwise it copies one parent drawn uniformly (default
	// 0.9).
	CrossoverProb *float64 `json:"crossover_prob,omitempty"`
	// SwappingProb is uniform crossover's probability of taking a
	// parameter from the first parent rather than the second (default
	// 0.5).
	SwappingProb *float64 `json:"swapping_prob,omitempty"`
}

const (
	defaultNSGA2Population = 50
	// maxNSGA2Population bounds the snapshot: up to 2P members of a few
	// hundred bytes each.
	maxNSGA2Population = 500
)

// Validate checks the settings; errors name the field.
func (s *NSGA2Settings) Validate() error {
	if s.PopulationSize != 0 && (s.PopulationSize < 2 || s.PopulationSize > maxNSGA2Population) {
		return fmt.Errorf("population_size: %d must be in 2..%d (0 is the default, %d)", s.PopulationSize, maxNSGA2Population, defaultNSGA2Population)
	}
	for _, f := range []struct {
		name string
		p    *float64
	}{{"mutation_prob", s.MutationProb}, {"crossover_prob", s.CrossoverProb}, {"swapping_prob", s.SwappingProb}} {
		if f.p != nil && !(*f.p >= 0 && *f.p <= 1) {
			return fmt.Errorf("%s: %v must be in [0, 1]", f.name, *f.p)
		}
	}
	return nil
}

// nsga2Rates are the settings with their defaults filled in for space s.
type nsga2Rates struct {
	population                    int
	mutation, crossover, swapping float64
}

func (s *NSGA2Settings) rates(space Space) nsga2Rates {
	if s == nil {
		s = &NSGA2Settings{}
	}
	n := 0
	for _, d := range space {
		if !d.single() {
			n++
		}
	}
	orDefault := func(p *float64, def float64) float64 {
		if p == nil {
			return def
		}
		return *p
	}
	return nsga2Rates{
		population: cmp.Or(s.PopulationSize, defaultNSGA2Population),
		mutation:   orDefault(s.MutationProb, 1/math.Max(1, float64(n))),
		crossover:  orDefault(s.CrossoverProb, 0.9),
		swapping:   orDefault(s.SwappingProb, 0.5),
	}
}

func init() {
	register(algorithm{
		name:        AlgorithmNSGA2,
		creates:     true,
		vector:      true,
		conditional: true,
		summary:     "NSGA-II (Deb et al. 2002), asynchronous as Optuna's NSGAIISampler: generations of population_size trials, the first random; each child is bred from the latest parent population (elite of non-dominated rank then crowding, under constrained domination) by binary tournaments, uniform crossover and resampling mutation",
		section:     func(s Settings) (validator, bool) { return s.NSGA2, s.NSGA2 != nil },
		new:         func(cfg Config) (Searcher, error) { return newNSGA2(cfg), nil },
	})
}

// nsga2 is NSGA-II (K. Deb, A. Pratap, S. Agarwal, T. Meyarivan, "A Fast
// and Elitist Multiobjective Genetic Algorithm: NSGA-II", IEEE Trans.
// Evol. Comp. 6(2), 2002; constrained domination from its section V),
// made asynchronous as Optuna 3.1's NSGAIISampler makes it:
//
//   - trials come in generations of P; the first (cfg.Points first) are
//     random samples of the space;
//   - a generation is complete once P of its trials have finished with a
//     value per objective; the parents of the next are then the elite of
//     the old parents and that generation: whole fronts of non-dominated
//     rank (Goals.Ranks, constrained domination) while they fit, the
//     front that does not fit cut by crowding distance, largest first
//     (Goals.Crowding);
//   - every trial proposed meanwhile (whenever the window has a slot, so
//     workers never wait for a generation) is a child of the latest
//     parents: with probability crossover_prob, uniform crossover of two
//     parents, each the winner of a binary tournament (two members drawn
//     with replacement, the first if it dominates the second, else the
//     second; the second parent drawn from the others), a parameter from
//     the first parent with probability swapping_prob; else a copy of one
//     parent drawn uniformly. Then each parameter is, with probability
//     mutation_prob, dropped and drawn afresh from the space (Optuna's
//     resampling mutation). In a conditional space a child keeps the
//     inherited values of its active parameters only and draws the active
//     ones it lacks (Space.Complete). A child that a forbidden clause
//     rules out is bred again (up to maxForbiddenTries times, then a random
//     sample is drawn instead, as random search draws it).
//
// Optuna keeps every trial and recomputes the parents from all of them, so
// a trial that finishes after its generation was closed rejoins that
// generation's selection. Here the snapshot holds only the parents, the
// generation being filled and the outstanding trials — O(P +
// max_concurrent) at any campaign length — and such a straggler joins the
// generation being filled instead.
//
// A failed trial, or one that ended without a value for every objective,
// joins no generation (Optuna's failed trials). A stopped trial joins with
// the result it reported last. A trial without a constrained metric is
// infeasible (Goals).
type nsga2 struct {
	cfg   Config
	goals Goals
	rates nsga2Rates
	pcg   *rand.PCG
	rng   *rand.Rand
	st    nsga2State
}

// nsga2State is all NSGA-II remembers; with the RNG state it is the
// snapshot.
type nsga2State struct {
	// RNG is the PCG's binary state (rand.PCG.MarshalBinary).
	RNG []byte `json:"rng"`
	window
	// Generation is the parents' generation: 0 before the first generation
	// is complete (no parents), g once generation g−1 is.
	Generation int `json:"generation"`
	// Parents are the parent population, in selection order.
	Parents []paretoMember `json:"parents,omitempty"`
	// Filling are the finished members of the generation being filled, in
	// the order they finished (fewer than P).
	Filling []paretoMember `json:"filling,omitempty"`
	// Pending are the outstanding trials' parameters, in the order of
	// window.Outstanding.
	Pending []Params `json:"pending,omitempty"`
}

// paretoMember is a finished trial as NSGA-II keeps it: its parameters,
// its values (finite: ±Inf kept as ±MaxFloat64, JSON has no infinity) and
// its total constraint violation (Goals.Violation; +Inf, a constrained
// metric not reported, kept as MaxFloat64), all constrained domination
// needs.
type paretoMember struct {
	Trial     string    `json:"trial"`
	Params    Params    `json:"params"`
	Values    []float64 `json:"values"`
	Violation float64   `json:"violation,omitempty"`
}

// newParetoMember is trial id's end with r under g; false when it teaches
// nothing (a value missing).
func newParetoMember(g Goals, id string, p Params, r Result) (paretoMember, bool) {
	if len(r.Values) < len(g.Modes) {
		return paretoMember{}, false
	}
	vals := make([]float64, len(g.Modes))
	for i := range vals {
		if math.IsNaN(r.Values[i]) {
			return paretoMember{}, false
		}
		vals[i] = clamp(r.Values[i], -math.MaxFloat64, math.MaxFloat64)
	}
	return paretoMember{Trial: id, Params: p, Values: vals, Violation: math.Min(g.Violation(r), math.MaxFloat64)}, true
}

// violationGoals is g with its constraints folded into one, the total
// violation a paretoMember keeps: the same constrained domination.
func violationGoals(g Goals) Goals {
	zero := 0.0
	return Goals{Modes: g.Modes, Constraints: []Constraint{{Metric: "violation", Max: &zero}}}
}

// result is m as vg (violationGoals) ranks it.
func (m paretoMember) result() Result {
	return Result{Values: m.Values, Constraints: []float64{m.Violation}}
}

func (m paretoMember) check(s Space, objectives int) error {
	if len(m.Values) != objectives {
		return fmt.Errorf("trial %s: %d values for %d objectives", m.Trial, len(m.Values), objectives)
	}
	for _, v := range append(slices.Clone(m.Values), m.Violation) {
		if !isFinite(v) {
			return fmt.Errorf("trial %s: value %v is not finite", m.Trial, v)
		}
	}
	if m.Violation < 0 {
		return fmt.Errorf("trial %s: violation %v < 0", m.Trial, m.Violation)
	}
	return s.Contains(m.Params)
}

// eliteOf returns the best n of ms under vg (paretoOrder): whole
// non-dominated fronts while they fit, then the next front's members of
// largest crowding distance (the earlier in ms among equals). Deb et
// al.'s selection of P_{t+1} from R_t.
func eliteOf(vg Goals, ms []paretoMember, n int) []paretoMember {
	rs := make([]Result, len(ms))
	for i, m := range ms {
		rs[i] = m.result()
	}
	order := paretoOrder(vg, rs)
	return permute(ms, order[:min(n, len(order))])
}

// paretoOrder returns the indices of rs best first under vg: by
// non-dominated rank, then by crowding distance within the rank, larger
// first, then by index.
func paretoOrder(vg Goals, rs []Result) []int {
	order, _ := paretoRanked(vg, rs)
	return order
}

// paretoRanked is paretoOrder with each result's rank.
func paretoRanked(vg Goals, rs []Result) (order, ranks []int) {
	ranks = vg.Ranks(rs)
	crowd := make([]float64, len(rs))
	for r := 0; ; r++ {
		var front []int
		for i, k := range ranks {
			if k == r {
				front = append(front, i)
			}
		}
		if len(front) == 0 {
			break
		}
		fr := make([]Result, len(front))
		for j, i := range front {
			fr[j] = rs[i]
		}
		for j, d := range vg.Crowding(fr) {
			crowd[front[j]] = d
		}
	}
	order = make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(ranks[a], ranks[b]), cmp.Compare(crowd[b], crowd[a]))
	})
	return order, ranks
}

// permute returns xs[order[0]], xs[order[1]], ….
func permute[T any](xs []T, order []int) []T {
	out := make([]T, len(order))
	for i, j := range order {
		out[i] = xs[j]
	}
	return out
}

func newNSGA2(cfg Config) *nsga2 {
	pcg := newPCG(cfg.Seed)
	return &nsga2{cfg: cfg, goals: cfg.Goals(), rates: cfg.Settings.NSGA2.rates(cfg.Space), pcg: pcg, rng: rand.New(pcg)}
}

func (n *nsga2) Initial() []Action { return n.fill() }

func (n *nsga2) TrialCreated(string) []Action { return nil }

func (n *nsga2) TrialReported(string, float64, float64) []Action { return nil }

func (n *nsga2) TrialReportedResult(string, float64, Result) []Action { return nil }

func (n *nsga2) TrialFinished(id string, metric float64, o Outcome) []Action {
	return n.TrialFinishedResult(id, Scalar(metric), o)
}

func (n *nsga2) TrialFinishedResult(id string, r Result, _ Outcome) []Action {
	i := slices.Index(n.st.Outstanding, id)
	if i < 0 {
		return nil
	}
	p := n.st.Pending[i]
	n.st.Pending = slices.Delete(n.st.Pending, i, i+1)
	n.st.window.end(id)
	if m, ok := newParetoMember(n.goals, id, p, r); ok {
		n.st.Filling = append(n.st.Filling, m)
		if len(n.st.Filling) >= n.rates.population {
			n.st.Parents = eliteOf(violationGoals(n.goals), slices.Concat(n.st.Filling, n.st.Parents), n.rates.population)
			n.st.Filling = nil
			n.st.Generation++
		}
	}
	return n.fill()
}

func (n *nsga2) TrialFailed(id string) []Action {
	return n.TrialFinishedResult(id, Result{}, OutcomeStopped)
}

func (n *nsga2) fill() []Action {
	acts := n.st.fill(n.cfg, func(int) (Params, bool) {
		p, ok := n.propose()
		if ok {
			n.st.Pending = append(n.st.Pending, p)
		}
		return p, ok
	}, func(p Params) { n.st.Pending = append(n.st.Pending, p) })
	for i, a := range acts {
		if c, ok := a.(Create); ok {
			c.Stage = fmt.Sprintf("generation %d", n.st.Generation)
			acts[i] = c
		}
	}
	return acts
}

// propose returns a new trial's parameters: a random sample before the
// first generation is complete, else a child of the parents; false when
// forbidden clauses left nothing to propose.
func (n *nsga2) propose() (Params, bool) {
	if len(n.st.Parents) > 0 {
		for range maxForbiddenTries {
			if child := n.breed(); Allowed(n.cfg.Space, n.cfg.Forbidden, child) {
				return child, true
			}
		}
	}
	p, err := n.cfg.Space.SampleAllowed(n.rng, n.cfg.Forbidden)
	return p, err == nil
}

// breed returns a child of the parents: crossover or a copy, then
// mutation.
func (n *nsga2) breed() Params {
	pop := n.st.Parents
	var child Params
	if n.rng.Float64() < n.rates.crossover {
		a := n.tournament(-1)
		b := n.tournament(a)
		child = n.crossover(pop[a].Params, pop[b].Params)
	} else {
		child = maps.Clone(pop[n.rng.IntN(len(pop))].Params)
	}
	for _, d := range n.cfg.Space { // space order: the draws are deterministic
		if _, ok := child[d.Name]; ok && !d.single() && n.rng.Float64() < n.rates.mutation {
			delete(child, d.Name) // drawn afresh by Complete
		}
	}
	return n.cfg.Space.Complete(n.rng, child)
}

// tournament is a binary tournament among the parents but not: two
// members drawn uniformly with replacement, the first if it dominates the
// second, else the second (Optuna's _select_parent).
func (n *nsga2) tournament(not int) int {
	pop := n.st.Parents
	draw := func() int {
		if not < 0 || len(pop) == 1 {
			return n.rng.IntN(len(pop))
		}
		i := n.rng.IntN(len(pop) - 1)
		if i >= not {
			i++
		}
		return i
	}
	a, b := draw(), draw()
	if violationGoals(n.goals).Dominates(pop[a].result(), pop[b].result()) {
		return a
	}
	return b
}

// crossover is uniform crossover (Syswerda 1989): each parameter from a
// with probability swapping_prob, else from b; from the other when the
// chosen parent lacks it (a conditional parameter inactive there).
func (n *nsga2) crossover(a, b Params) Params {
	child := Params{}
	for _, d := range n.cfg.Space {
		va, okA := a[d.Name]
		vb, okB := b[d.Name]
		fromA := n.rng.Float64() < n.rates.swapping
		switch {
		case okA && (fromA || !okB):
			child[d.Name] = va
		case okB:
			child[d.Name] = vb
		}
	}
	return child
}

func (n *nsga2) Progress() float64 { return n.st.progress(n.cfg) }

func (n *nsga2) Snapshot() ([]byte, error) {
	b, err := n.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot nsga2 searcher: rng: %w", err)
	}
	st := n.st
	st.RNG = b
	return marshalSnapshot(AlgorithmNSGA2, st)
}

func (n *nsga2) Restore(snapshot []byte) error {
	var st nsga2State
	if err := unmarshalSnapshot(AlgorithmNSGA2, snapshot, &st); err != nil {
		return err
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("restore nsga2 searcher: rng: %w", err)
	}
	if err := n.check(st); err != nil {
		return fmt.Errorf("restore nsga2 searcher: %w", err)
	}
	st.RNG = nil
	n.pcg, n.rng, n.st = pcg, rand.New(pcg), st
	return nil
}

// check validates a restored state against the config.
func (n *nsga2) check(st nsga2State) error {
	if err := st.window.check(n.cfg); err != nil {
		return err
	}
	switch {
	case len(st.Pending) != len(st.Outstanding):
		return fmt.Errorf("pending: %d for %d trials outstanding", len(st.Pending), len(st.Outstanding))
	case len(st.Parents) > n.rates.population || len(st.Filling) >= n.rates.population:
		return fmt.Errorf("%d parents and %d filling, population_size %d", len(st.Parents), len(st.Filling), n.rates.population)
	case st.Generation < 0 || (st.Generation == 0) != (len(st.Parents) == 0):
		return fmt.Errorf("generation %d with %d parents", st.Generation, len(st.Parents))
	}
	for i, m := range slices.Concat(st.Parents, st.Filling) {
		if err := m.check(n.cfg.Space, len(n.goals.Modes)); err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
	}
	for i, p := range st.Pending {
		if err := n.cfg.Space.Contains(p); err != nil {
			return fmt.Errorf("pending[%d]: %w", i, err)
		}
	}
	return nil
}
