package searchbench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// The bench's defaults (gleaner bench search's flags): trials at once, and
// the σ of a trial's log-normal duration (Setup.CostSigma).
const (
	DefaultWorkers   = 8
	DefaultCostSigma = 0.3
)

// Setup is one benchmark run: a method (an algorithm with its settings)
// on an objective, with Workers trials in parallel, Trials in all.
type Setup struct {
	// Algorithm is one of Methods: an hpo algorithm, or a variant the
	// bench names (asha-promotion: asha with Settings of that variant).
	Algorithm string
	Settings  hpo.Settings
	Objective Objective
	Workers   int
	Trials    int
	Seed      uint64
	// CostSigma is the cost model: a trial's full budget takes exp(N(0,
	// σ²)) time units (default 0.3 from the CLI; 0: every trial takes 1).
	CostSigma float64
	// Durations, when set, replaces the cost model: it returns the seed's
	// stream of trial durations (a full budget's time), one drawn per
	// trial created, in order. bench search-multi draws SharedDurations,
	// which its Optuna script draws alike.
	Durations func(seed uint64) func() float64
}

// Step is the state of a run after one more trial ended (or paused at
// its budget: a trial continued later ends once per segment).
type Step struct {
	// Budget is the training spent so far, in full trial budgets (each
	// trial of a function counts 1; a learning-curve or stateful trial
	// the budget units it trained ÷ the objective's full budget). A unit
	// is counted once: a continued trial or one created from another's
	// checkpoint is charged only for what it trains on.
	Budget float64 `json:"budget"`
	// Best is the best result so far: a trial's result is its value when
	// it ended (finished, paused at its budget, or stopped by the
	// searcher).
	Best float64 `json:"best"`
	// Trials counts the trials that have ended at least once.
	Trials int `json:"trials"`
}

// Run drives the searcher through the simulated workers until it shuts
// down (or no trial is left running) and returns one Step per ended
// segment, in the order they ended. A trial of a learning-curve or
// stateful objective reports at every point of its curve, spaced in time
// by the budget units it trains; it ends early when the searcher stops
// it, and pauses at its budget (hpo.Create.Budget, hpo.Continue) until a
// Continue resumes it there. Trial durations come from a generator seeded
// apart from the searcher, so every algorithm meets the same cost stream.
// The objective is minimised (hpo mode "min"): an objective where more is
// better reports its negation (pbt-toy reports −Q).
func Run(s Setup) ([]Step, error) {
	cfg := hpo.Config{Algorithm: algorithmOf(s.Algorithm), Settings: s.Settings, Space: s.Objective.Space, Seed: s.Seed,
		MaxTrials: s.Trials, MaxConcurrent: s.Workers, Mode: "min", Revision: hpo.Revision} // a new campaign's rules
	searcher, err := hpo.NewSearcher(cfg)
	if err != nil {
		return nil, err
	}
	return simulate(s, searcher)
}

// Quartiles are the 25th, 50th and 75th percentiles.
type Quartiles struct {
	Q1, Median, Q3 float64
}

// quartiles of xs by linear interpolation (stats.Quantile).
func quartiles(xs []float64) Quartiles {
	return Quartiles{Q1: stats.Quantile(xs, 0.25), Median: stats.Quantile(xs, 0.5), Q3: stats.Quantile(xs, 0.75)}
}

// Curve is an algorithm's best result over seeds: Best[n-1] after n
// trials ended (afterTrials), ByBudget[b-1] once b full budgets were
// spent.
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

// Bench variants: an hpo algorithm under settings of another variant,
// named apart so that a table can show both.
const (
	ASHAPromotion      = "asha-promotion"
	HyperbandPromotion = "hyperband-promotion"
)

var variants = map[string]string{ASHAPromotion: hpo.AlgorithmASHA, HyperbandPromotion: hpo.AlgorithmHyperband}

// Methods lists what Setup.Algorithm may name: hpo's algorithms, then the
// bench variants.
func Methods() []string {
	return append(hpo.Algorithms(), ASHAPromotion, HyperbandPromotion)
}

// algorithmOf is the hpo algorithm a method runs.
func algorithmOf(method string) string {
	if a, ok := variants[method]; ok {
		return a
	}
	return method
}

// ErrNoGrid: grid search on a space with an architecture parameter,
// whose values hpo cannot enumerate.
var ErrNoGrid = errors.New("an architecture parameter has no grid")

// CanRun says why method cannot run on o (nil: it can): PBT creates
// trials from others' checkpoints, which only a stateful objective has;
// grid search enumerates the space, which an architecture parameter
// forbids; an algorithm that does not search conditional spaces is
// refused one (hpo.Config.Validate says so, naming it).
func CanRun(method string, o Objective) error {
	if o.Space.Conditional() {
		cfg := hpo.Config{Algorithm: algorithmOf(method), Settings: DefaultSettings(method, o), Space: o.Space,
			MaxTrials: 1, MaxConcurrent: 1, Mode: "min"}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("%s on %s: %w", method, o.Name, err)
		}
	}
	switch algorithmOf(method) {
	case hpo.AlgorithmPBT:
		if !o.Stateful() {
			return fmt.Errorf("%s on %s: %w (PBT copies trials' training state)", method, o.Name, ErrFromUnsupported)
		}
	case hpo.AlgorithmGrid:
		if slices.ContainsFunc(o.Space, func(d hpo.Param) bool { return d.Type == hpo.ParamArch }) {
			return fmt.Errorf("%s on %s: %w", method, o.Name, ErrNoGrid)
		}
	}
	return nil
}

// Regularized evolution's population P and tournament size S in the
// bench: hpo's defaults, said here so a table can cite them. Real et al.
// used P = 100, S = 25 over NAS-Bench-101's 423k cells; in a run of 100
// to 150 trials a population of 100 would hardly evolve. With these,
// evolution beats random search on nas-cell from 100 trials on
// (TestEvolutionVsRandomOnNASCell). (On the first, one-seed table no pair
// of P ∈ {5…50} and S ∈ {2…25} did: its losses were mostly seed noise.)
const (
	evolutionPopulation = 20
	evolutionSampleSize = 5
)

// DefaultSettings are the settings the benchmark gives method on o when
// the caller gives none; the budgets follow the objective's full budget R.
// ASHA, stopping or promotion: rungs at R/27, R/9, R/3 and R with η = 3;
// Hyperband, stopping or promotion: brackets from R/27 to R; median: ten
// checkpoints; PBT: a member exploits and explores every R/10 up to R,
// with hpo's defaults otherwise (a population of the workers, truncation
// at the quarter); evolution: P = 20, S = 5 (evolutionPopulation).
func DefaultSettings(method string, o Objective) hpo.Settings {
	r := o.Budget()
	switch method {
	case hpo.AlgorithmASHA, ASHAPromotion:
		set := &hpo.ASHASettings{MinBudget: r / 27, ReductionFactor: 3, MaxBudget: r}
		if method == ASHAPromotion {
			set.Variant = hpo.VariantPromotion
		}
		return hpo.Settings{ASHA: set}
	case hpo.AlgorithmHyperband, HyperbandPromotion:
		set := &hpo.HyperbandSettings{MinBudget: r / 27, MaxBudget: r, ReductionFactor: 3}
		if method == HyperbandPromotion {
			set.Variant = hpo.VariantPromotion
		}
		return hpo.Settings{Hyperband: set}
	case hpo.AlgorithmMedian:
		return hpo.Settings{Median: &hpo.MedianSettings{Interval: r / 10}}
	case hpo.AlgorithmPBT:
		return hpo.Settings{PBT: &hpo.PBTSettings{Interval: r / 10, MaxBudget: r}}
	case hpo.AlgorithmEvolution:
		return hpo.Settings{Evolution: &hpo.EvolutionSettings{Population: evolutionPopulation, SampleSize: evolutionSampleSize}}
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
	for n := 1; n <= setup.Trials; n++ {
		var at []float64
		for _, r := range c.Runs {
			if len(r) > 0 {
				at = append(at, afterTrials(r, n))
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

// afterTrials is a run's best after n trials ended: at its last step
// before an (n+1)-th trial first ended, so the segments a continued trial
// trains in the meantime count (the run's last best if fewer ended).
func afterTrials(run []Step, n int) float64 {
	i := max(sort.Search(len(run), func(i int) bool { return run[i].Trials > n })-1, 0)
	return run[i].Best
}
