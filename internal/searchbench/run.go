package searchbench

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Setup is one benchmark run: an algorithm with its settings on an
// objective, with Workers trials in parallel, Trials in all.
type Setup struct {
	Algorithm string
	Settings  hpo.Settings
	Objective Objective
	Workers   int
	Trials    int
	Seed      uint64
	// CostSigma is the cost model: a trial's full budget takes exp(N(0,
	// σ²)) time units (default 0.3 from the CLI; 0: every trial takes 1).
	CostSigma float64
}

// Step is the state of a run after one more trial ended.
type Step struct {
	// Budget is the training spent so far, in full trial budgets (each
	// trial of a function counts 1; a learning-curve trial its samples
	// ÷ the table's budget).
	Budget float64 `json:"budget"`
	// Best is the best result so far: a trial's result is its value when
	// it ended (finished, or stopped by the searcher).
	Best float64 `json:"best"`
}

// Run drives the searcher through the simulated workers until it shuts
// down and returns one Step per ended trial, in the order trials ended.
// A trial of a learning-curve objective reports at every point of its
// curve, spaced in time by its samples, and ends early when the searcher
// stops it. Trial durations come from a generator seeded apart from the
// searcher, so every algorithm meets the same cost stream.
func Run(s Setup) ([]Step, error) {
	cfg := hpo.Config{Algorithm: s.Algorithm, Settings: s.Settings, Space: s.Objective.Space, Seed: s.Seed,
		MaxTrials: s.Trials, MaxConcurrent: s.Workers, Mode: "min"}
	searcher, err := hpo.NewSearcher(cfg)
	if err != nil {
		return nil, err
	}
	cost := rand.New(rand.NewPCG(s.Seed, 0x5eed_c057))
	type running struct {
		id       string
		curve    []Point
		next     int     // index of the next report
		start    float64 // time it started
		duration float64 // time its full budget takes
		seq      int
		stop     bool
	}
	var (
		now      float64
		live     []*running
		seq      int
		spent    float64
		best     = math.Inf(1)
		steps    []Step
		shutdown bool
	)
	at := func(r *running) float64 { return r.start + r.duration*r.curve[r.next].Samples/s.Objective.Budget() }
	var apply func(acts []hpo.Action) error
	apply = func(acts []hpo.Action) error {
		for _, a := range acts {
			switch a := a.(type) {
			case hpo.Create:
				d := 1.0
				if s.CostSigma != 0 {
					d = math.Exp(s.CostSigma * cost.NormFloat64())
				}
				seq++
				live = append(live, &running{id: a.ID, curve: s.Objective.Points(a.Params), start: now, duration: d, seq: seq})
				if err := apply(searcher.TrialCreated(a.ID)); err != nil {
					return err
				}
			case hpo.Stop:
				i := slices.IndexFunc(live, func(r *running) bool { return r.id == a.TrialID })
				if i < 0 {
					return fmt.Errorf("%s stopped %s, which is not running", s.Algorithm, a.TrialID)
				}
				live[i].stop = true
			case hpo.Shutdown:
				shutdown = true
			}
		}
		return nil
	}
	if err := apply(searcher.Initial()); err != nil {
		return nil, err
	}
	for !shutdown && len(live) > 0 {
		i := 0
		for j, r := range live {
			if c := cmp.Compare(at(r), at(live[i])); c < 0 || c == 0 && r.seq < live[i].seq {
				i = j
			}
		}
		r := live[i]
		now = at(r)
		p := r.curve[r.next]
		r.next++
		var acts []hpo.Action
		last := r.next == len(r.curve)
		if !last {
			acts = searcher.TrialReported(r.id, p.Samples, p.Value)
			if err := apply(acts); err != nil {
				return nil, err
			}
		}
		if last || r.stop {
			live = slices.DeleteFunc(live, func(x *running) bool { return x == r })
			spent += p.Samples / s.Objective.Budget()
			best = min(best, p.Value)
			steps = append(steps, Step{Budget: spent, Best: best})
			outcome := hpo.OutcomeCompleted
			if !last {
				outcome = hpo.OutcomeStopped
			}
			if err := apply(searcher.TrialFinished(r.id, p.Value, outcome)); err != nil {
				return nil, err
			}
		}
	}
	return steps, nil
}

// Quartiles are the 25th, 50th and 75th percentiles.
type Quartiles struct {
	Q1, Median, Q3 float64
}

// quartiles of xs (sorted in place), by linear interpolation.
func quartiles(xs []float64) Quartiles {
	sort.Float64s(xs)
	at := func(q float64) float64 {
		if len(xs) == 0 {
			return math.NaN()
		}
		pos := q * float64(len(xs)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(xs)-1)
		return xs[lo] + (pos-float64(lo))*(xs[hi]-xs[lo])
	}
	return Quartiles{Q1: at(0.25), Median: at(0.5), Q3: at(0.75)}
}

// Curve is an algorithm's best result over seeds: Best[n-1] after n
// ended trials, ByBudget[b-1] once b full budgets were spent.
type Curve struct {
	Algorithm string      `json:"algorithm"`
	Objective string      `json:"objective"`
	Workers   int         `json:"workers"`
	Seeds     int         `json:"seeds"`
	Best      []Quartiles `json:"best"`
	ByBudget  []Quartiles `json:"by_budget"`
	// Runs are every seed's steps, for the budget questions the quartiles
	// do not answer.
	Runs [][]Step `json:"-"`
}

// At returns the quartiles after n trials (the last if fewer ran).
func (c Curve) At(n int) Quartiles { return clampAt(c.Best, n) }

// AtBudget returns the quartiles once b full budgets were spent.
func (c Curve) AtBudget(b int) Quartiles { return clampAt(c.ByBudget, b) }

func clampAt(qs []Quartiles, n int) Quartiles {
	if len(qs) == 0 || n < 1 {
		return Quartiles{math.NaN(), math.NaN(), math.NaN()}
	}
	return qs[min(n, len(qs))-1]
}

// BudgetToReach is, per seed, the budget spent when the best result
// first reached target (+Inf if never), sorted.
func (c Curve) BudgetToReach(target float64) []float64 {
	var out []float64
	for _, r := range c.Runs {
		b := math.Inf(1)
		for _, s := range r {
			if s.Best <= target {
				b = s.Budget
				break
			}
		}
		out = append(out, b)
	}
	sort.Float64s(out)
	return out
}

// DefaultSettings are the settings the benchmark gives alg on o when the
// caller gives none: the stopping searchers' budgets follow the
// objective's (ASHA: rungs at R/27, R/9, R/3 and R with η = 3; Hyperband:
// brackets from R/27 to R; median: ten checkpoints).
func DefaultSettings(alg string, o Objective) hpo.Settings {
	switch alg {
	case hpo.AlgorithmASHA:
		return hpo.Settings{ASHA: &hpo.ASHASettings{MinBudget: o.Budget() / 27, ReductionFactor: 3, MaxBudget: o.Budget()}}
	case hpo.AlgorithmHyperband:
		return hpo.Settings{Hyperband: &hpo.HyperbandSettings{MinBudget: o.Budget() / 27, MaxBudget: o.Budget(), ReductionFactor: 3}}
	case hpo.AlgorithmMedian:
		return hpo.Settings{Median: &hpo.MedianSettings{Interval: o.Budget() / 10}}
	}
	return hpo.Settings{}
}

// Measure runs setup for seeds seed0..seed0+seeds−1 and summarises the
// curves. A run that ends early (a grid smaller than Trials) carries its
// last best on.
func Measure(setup Setup, seed0 uint64, seeds int) (Curve, error) {
	c := Curve{Algorithm: setup.Algorithm, Objective: setup.Objective.Name, Workers: setup.Workers, Seeds: seeds}
	for i := range seeds {
		setup.Seed = seed0 + uint64(i)
		run, err := Run(setup)
		if err != nil {
			return c, fmt.Errorf("%s on %s, seed %d: %w", setup.Algorithm, setup.Objective.Name, setup.Seed, err)
		}
		c.Runs = append(c.Runs, run)
	}
	for n := range setup.Trials {
		var at []float64
		for _, r := range c.Runs {
			if len(r) > 0 {
				at = append(at, r[min(n, len(r)-1)].Best)
			}
		}
		c.Best = append(c.Best, quartiles(at))
	}
	for b := 1; b <= setup.Trials; b++ {
		var at []float64
		for _, r := range c.Runs {
			v := math.Inf(1)
			for _, s := range r {
				if s.Budget > float64(b)+1e-9 {
					break
				}
				v = s.Best
			}
			at = append(at, v)
		}
		c.ByBudget = append(c.ByBudget, quartiles(at))
	}
	return c, nil
}
