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
	// CostSigma is the cost model: a trial takes exp(N(0, σ²)) time units
	// (default 0.3; 0: every trial takes 1, so trials finish in creation
	// order per wave).
	CostSigma float64
}

// Run drives the searcher through the simulated workers until it shuts
// down and returns the best value seen after each finished trial, in the
// order trials finished. Trial durations come from a generator seeded
// apart from the searcher, so every algorithm meets the same cost stream.
func Run(s Setup) ([]float64, error) {
	cfg := hpo.Config{Algorithm: s.Algorithm, Settings: s.Settings, Space: s.Objective.Space, Seed: s.Seed,
		MaxTrials: s.Trials, MaxConcurrent: s.Workers, Mode: "min"}
	searcher, err := hpo.NewSearcher(cfg)
	if err != nil {
		return nil, err
	}
	cost := rand.New(rand.NewPCG(s.Seed, 0x5eed_c057))
	type running struct {
		id     string
		params hpo.Params
		end    float64
		seq    int
	}
	var (
		now      float64
		queue    []running
		seq      int
		best     = math.Inf(1)
		curve    []float64
		shutdown bool
	)
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
				queue = append(queue, running{id: a.ID, params: a.Params, end: now + d, seq: seq})
				if err := apply(searcher.TrialCreated(a.ID)); err != nil {
					return err
				}
			case hpo.Stop:
				return fmt.Errorf("%s stopped trial %s: this benchmark runs only searchers that create", s.Algorithm, a.TrialID)
			case hpo.Shutdown:
				shutdown = true
			}
		}
		return nil
	}
	if err := apply(searcher.Initial()); err != nil {
		return nil, err
	}
	for !shutdown && len(queue) > 0 {
		i := 0
		for j, r := range queue {
			if c := cmp.Compare(r.end, queue[i].end); c < 0 || c == 0 && r.seq < queue[i].seq {
				i = j
			}
		}
		r := queue[i]
		queue = slices.Delete(queue, i, i+1)
		now = r.end
		v := s.Objective.F(r.params)
		best = min(best, v)
		curve = append(curve, best)
		if err := apply(searcher.TrialFinished(r.id, v, hpo.OutcomeCompleted)); err != nil {
			return nil, err
		}
	}
	return curve, nil
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

// Curve is an algorithm's best value after n finished trials, over
// seeds: Best[n-1] are the quartiles after n trials.
type Curve struct {
	Algorithm string      `json:"algorithm"`
	Objective string      `json:"objective"`
	Workers   int         `json:"workers"`
	Seeds     int         `json:"seeds"`
	Best      []Quartiles `json:"best"`
}

// At returns the quartiles after n trials (the last if fewer ran).
func (c Curve) At(n int) Quartiles {
	if len(c.Best) == 0 {
		return Quartiles{math.NaN(), math.NaN(), math.NaN()}
	}
	return c.Best[min(n, len(c.Best))-1]
}

// Measure runs setup for seeds seed0..seed0+seeds−1 and summarises the
// curves. A run that ends early (a grid smaller than Trials) carries its
// last best on.
func Measure(setup Setup, seed0 uint64, seeds int) (Curve, error) {
	c := Curve{Algorithm: setup.Algorithm, Objective: setup.Objective.Name, Workers: setup.Workers, Seeds: seeds}
	runs := make([][]float64, seeds)
	for i := range seeds {
		setup.Seed = seed0 + uint64(i)
		curve, err := Run(setup)
		if err != nil {
			return c, fmt.Errorf("%s on %s, seed %d: %w", setup.Algorithm, setup.Objective.Name, setup.Seed, err)
		}
		runs[i] = curve
	}
	for n := range setup.Trials {
		var at []float64
		for _, r := range runs {
			if len(r) > 0 {
				at = append(at, r[min(n, len(r)-1)])
			}
		}
		c.Best = append(c.Best, quartiles(at))
	}
	return c, nil
}
