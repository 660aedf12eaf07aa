package searchbench

import (
	"fmt"
	"math"
	"slices"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Problem is a benchmark with several objectives, and constraints: a
// trial's result at its parameters, the objectives' directions, and the
// fixed reference point its hypervolume is measured from.
type Problem struct {
	Name string
	// Doc says what it is and where it comes from, its constraints
	// included.
	Doc         string
	Space       hpo.Space
	Objectives  []hpo.Objective
	Constraints []hpo.Constraint
	// Ref is the hypervolume's reference point, a value per objective in
	// the objectives' own directions.
	Ref []float64
	// FrontHV is the hypervolume of the problem's Pareto front at Ref:
	// what no run can pass.
	FrontHV float64
	// F is a trial's result: a value per objective and per constraint.
	F func(hpo.Params) hpo.Result
}

// Goals are the problem's directions and constraints.
func (p Problem) Goals() hpo.Goals {
	g := hpo.Goals{Constraints: p.Constraints}
	for _, o := range p.Objectives {
		g.Modes = append(g.Modes, o.Mode)
	}
	return g
}

// MultiSetup is one run of a method on a problem with several objectives:
// Workers trials in parallel, Trials in all, each trial's duration drawn
// from SharedDurations(Seed, CostSigma).
type MultiSetup struct {
	Algorithm string
	Settings  hpo.Settings
	Problem   Problem
	Workers   int
	Trials    int
	Seed      uint64
	CostSigma float64
}

// MOTPEMultivariate is the multi bench's name for motpe with one joint
// l/g over all parameters (search.motpe.multivariate: true), so that a
// table can show it beside motpe's per-parameter default.
const MOTPEMultivariate = "motpe-mv"

// MultiMethods lists what MultiSetup.Algorithm may name: hpo's algorithms
// that take several objectives, then MOTPEMultivariate.
func MultiMethods() []string {
	return append(hpo.VectorAlgorithms(), MOTPEMultivariate)
}

// MultiSettings are the settings the multi bench gives method when the
// caller gives none.
func MultiSettings(method string) hpo.Settings {
	if method == MOTPEMultivariate {
		return hpo.Settings{MOTPE: &hpo.TPESettings{Multivariate: true}}
	}
	return hpo.Settings{}
}

// RunMulti drives the searcher through the simulated workers (simulate,
// as Run does) and returns the hypervolume at the problem's Ref after
// each ended trial, in the order they ended. The searcher sees a trial's
// whole result (hpo.Finish): a searcher for several objectives its vector
// and constraints, the others the first value.
func RunMulti(s MultiSetup) ([]float64, error) {
	p := s.Problem
	alg := s.Algorithm
	if alg == MOTPEMultivariate {
		alg = hpo.AlgorithmMOTPE
	}
	cfg := hpo.Config{Algorithm: alg, Settings: s.Settings, Space: p.Space, Seed: s.Seed,
		MaxTrials: s.Trials, MaxConcurrent: s.Workers, Mode: p.Objectives[0].Mode,
		Objectives: p.Objectives, Constraints: p.Constraints, Revision: hpo.Revision} // a new campaign's rules
	inner, err := hpo.NewSearcher(cfg)
	if err != nil {
		return nil, err
	}
	return runMulti(s, inner)
}

// runMulti is RunMulti with its searcher.
func runMulti(s MultiSetup, inner hpo.Searcher) ([]float64, error) {
	p := s.Problem
	feed := &vectorFeed{Searcher: inner, problem: p, front: NewHypervolumeTracker(p), params: map[string]hpo.Params{}}
	// The workers minimise a scalar that nobody reads: the feed tells the
	// searcher the whole result and keeps the hypervolume.
	scalar := Objective{Name: p.Name, Space: p.Space, F: func(hpo.Params) float64 { return 0 }}
	setup := Setup{Algorithm: s.Algorithm, Objective: scalar, Workers: s.Workers, Trials: s.Trials, Seed: s.Seed,
		Durations: func(seed uint64) func() float64 { return SharedDurations(seed, s.CostSigma) }}
	if _, err := simulate(setup, feed); err != nil {
		return nil, err
	}
	return feed.hv, nil
}

// vectorFeed stands between the simulated workers and a searcher: it
// learns each trial's parameters from the searcher's Create actions,
// answers a trial's end with the problem's whole result, and keeps the
// hypervolume after every ended trial.
type vectorFeed struct {
	hpo.Searcher
	problem Problem
	params  map[string]hpo.Params
	front   HypervolumeTracker
	hv      []float64
}

func (f *vectorFeed) seen(acts []hpo.Action) []hpo.Action {
	for _, a := range acts {
		if c, ok := a.(hpo.Create); ok {
			f.params[c.ID] = c.Params
		}
	}
	return acts
}

func (f *vectorFeed) Initial() []hpo.Action { return f.seen(f.Searcher.Initial()) }

func (f *vectorFeed) TrialCreated(id string) []hpo.Action {
	return f.seen(f.Searcher.TrialCreated(id))
}

func (f *vectorFeed) TrialReported(id string, progress, _ float64) []hpo.Action {
	return f.seen(hpo.Report(f.Searcher, id, progress, f.problem.F(f.params[id])))
}

func (f *vectorFeed) TrialFinished(id string, _ float64, outcome hpo.Outcome) []hpo.Action {
	r := f.problem.F(f.params[id])
	f.hv = append(f.hv, f.front.Add(r))
	return f.seen(hpo.Finish(f.Searcher, id, r, outcome))
}

func (f *vectorFeed) TrialFailed(id string) []hpo.Action { return f.seen(f.Searcher.TrialFailed(id)) }

// HypervolumeTracker is the hypervolume of the results added so far, at
// a fixed reference point: Goals.Hypervolume, recomputed only when a
// result joins the front.
type HypervolumeTracker struct {
	Goals hpo.Goals
	Ref   []float64
	front []hpo.Result
	hv    float64
}

// NewHypervolumeTracker starts an empty tracker for p.
func NewHypervolumeTracker(p Problem) HypervolumeTracker {
	return HypervolumeTracker{Goals: p.Goals(), Ref: p.Ref}
}

// Add adds r and returns the hypervolume of all results added.
func (t *HypervolumeTracker) Add(r hpo.Result) float64 {
	if len(r.Values) != len(t.Goals.Modes) || !r.Complete() || !t.Goals.Feasible(r) || !t.inside(r) {
		return t.hv
	}
	for _, q := range t.front {
		if t.Goals.Dominates(q, r) || slices.Equal(q.Values, r.Values) {
			return t.hv
		}
	}
	t.front = slices.DeleteFunc(t.front, func(q hpo.Result) bool { return t.Goals.Dominates(r, q) })
	t.front = append(t.front, r)
	t.hv = t.Goals.Hypervolume(t.front, t.Ref)
	return t.hv
}

// inside reports whether r is strictly better than Ref in every
// objective: only such a result adds volume.
func (t *HypervolumeTracker) inside(r hpo.Result) bool {
	for i, m := range t.Goals.Modes {
		v, ref := r.Values[i], t.Ref[i]
		if m == "max" && v <= ref || m != "max" && v >= ref {
			return false
		}
	}
	return true
}

// Hypervolumes returns the hypervolume after each of results in turn.
func (p Problem) Hypervolumes(results []hpo.Result) []float64 {
	t := NewHypervolumeTracker(p)
	out := make([]float64, len(results))
	for i, r := range results {
		out[i] = t.Add(r)
	}
	return out
}

// HVCurve is a method's hypervolume over seeds: HV[n-1] after n trials
// ended.
type HVCurve struct {
	Method  string      `json:"method"`
	Problem string      `json:"problem"`
	Workers int         `json:"workers"`
	Seeds   int         `json:"seeds"`
	HV      []Quartiles `json:"hv"`
	// Runs are every seed's hypervolume after each ended trial, for the
	// win probabilities.
	Runs [][]float64 `json:"-"`
}

// At returns the quartiles after n trials (the last if fewer ran).
func (c HVCurve) At(n int) Quartiles { return clampAt(c.HV, n) }

// Finals returns every seed's hypervolume after n trials (its last if
// fewer ran; 0 if none).
func (c HVCurve) Finals(n int) []float64 {
	out := make([]float64, len(c.Runs))
	for i, r := range c.Runs {
		if len(r) > 0 {
			out[i] = r[min(n, len(r))-1]
		}
	}
	return out
}

// NewHVCurve summarises runs (a hypervolume per ended trial, per seed) up
// to trials.
func NewHVCurve(method, problem string, workers, trials int, runs [][]float64) HVCurve {
	c := HVCurve{Method: method, Problem: problem, Workers: workers, Seeds: len(runs), Runs: runs}
	for n := 1; n <= trials; n++ {
		c.HV = append(c.HV, quartiles(c.Finals(n)))
	}
	return c
}

// MeasureMulti runs setup for seeds seed0..seed0+seeds−1.
func MeasureMulti(setup MultiSetup, seed0 uint64, seeds int) (HVCurve, error) {
	var runs [][]float64
	for i := range seeds {
		setup.Seed = seed0 + uint64(i)
		hv, err := RunMulti(setup)
		if err != nil {
			return HVCurve{}, fmt.Errorf("%s on %s, seed %d: %w", setup.Algorithm, setup.Problem.Name, setup.Seed, err)
		}
		runs = append(runs, hv)
	}
	return NewHVCurve(setup.Algorithm, setup.Problem.Name, setup.Workers, setup.Trials, runs), nil
}

// WinProbability is the chance that a draw from a beats a draw from b,
// ties counting half: P(A > B) + ½·P(A = B) over every pair (Vargha and
// Delaney's A, the Mann–Whitney U over |a|·|b|). 0.5: neither is better.
func WinProbability(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	wins := 0.0
	for _, x := range a {
		for _, y := range b {
			switch {
			case x > y:
				wins++
			case x == y:
				wins += 0.5
			}
		}
	}
	return wins / float64(len(a)*len(b))
}

// SharedDurations is the multi bench's cost stream for a seed, drawn alike
// by scripts/multi_vs_optuna.py: the k-th trial created takes exp(σ·z_k)
// time units, z_k a standard normal by Box and Muller's transform, z =
// √(−2 ln(1−u₁))·cos(2π·u₂), of two uniforms u = ⌊x/2¹¹⌋·2⁻⁵³ of
// consecutive outputs x of SplitMix64 (Steele, Lea and Flood, OOPSLA 2014)
// seeded with seed. σ = 0: every trial takes 1.
func SharedDurations(seed uint64, sigma float64) func() float64 {
	state := seed
	next := func() float64 {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		return float64(z>>11) * 0x1p-53
	}
	return func() float64 {
		u1, u2 := next(), next()
		if sigma == 0 {
			return 1
		}
		return math.Exp(sigma * math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2))
	}
}
