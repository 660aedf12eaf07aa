package hpo

import (
	"fmt"
	"math"
	"slices"

	"github.com/gleaner-hpc/gleaner/internal/stats"
)

// AlgorithmMedian names the median stopping rule.
const AlgorithmMedian = "median"

// MedianSettings configure search.median.
type MedianSettings struct {
	// Sampler chooses the trials: random (default), quasirandom, grid,
	// tpe, evolution or local, with its own section's settings.
	Sampler string `json:"sampler,omitempty"`
	// Interval spaces the checkpoints at which trials are compared,
	// in the budget unit (search.budget_unit) (required).
	Interval float64 `json:"interval"`
	// Warmup: no trial is stopped before it has trained this many
	// (default 0).
	Warmup float64 `json:"warmup,omitempty"`
	// MinTrials is how many other trials must have reached a checkpoint
	// before the rule stops anyone there (default 5).
	MinTrials int `json:"min_trials,omitempty"`
}

// Validate checks the settings; errors name the field.
func (s *MedianSettings) Validate() error {
	switch {
	case !(s.Interval > 0) || math.IsInf(s.Interval, 0):
		return fmt.Errorf("interval: %v must be > 0 (budget units between checkpoints)", s.Interval)
	case s.Warmup < 0 || math.IsNaN(s.Warmup) || math.IsInf(s.Warmup, 0):
		return fmt.Errorf("warmup: %v must be ≥ 0", s.Warmup)
	case s.MinTrials < 0:
		return fmt.Errorf("min_trials: %d must be ≥ 0", s.MinTrials)
	}
	return nil
}

func init() {
	register(algorithm{
		name:    AlgorithmMedian,
		summary: "the median stopping rule: stop a trial whose best so far is worse than the median of the others at the same checkpoint",
		section: func(s Settings) (validator, bool) { return s.Median, s.Median != nil },
		sampler: func(s Settings) string {
			if s.Median == nil {
				return ""
			}
			return s.Median.Sampler
		},
		new: func(cfg Config) (Searcher, error) {
			set := cfg.Settings.Median
			if set == nil {
				return nil, fmt.Errorf("search.median.interval: missing (budget units between checkpoints)")
			}
			r := &medianRule{Interval: set.Interval, Warmup: set.Warmup, MinTrials: set.MinTrials, Trials: map[string]medianTrial{}}
			if r.MinTrials == 0 {
				r.MinTrials = 5
			}
			return newStopper(cfg, AlgorithmMedian, set.Sampler, r)
		},
	})
}

// Bounds on the median rule's state, so its snapshot stays small at any
// campaign size: the checkpoints past medianCheckpoints stop no one, and
// each checkpoint keeps the values of its last medianKeep trials.
const (
	medianCheckpoints = 100
	medianKeep        = 99
)

// medianRule is the median stopping rule (Golovin et al., "Google Vizier",
// KDD 2017), as Optuna's MedianPruner applies it: at each checkpoint
// (every interval samples) a trial's best value so far is recorded, and
// the trial stops if that is worse than the median of the values other
// trials recorded at the same checkpoint (once MinTrials have).
type medianRule struct {
	Interval  float64 `json:"interval"`
	Warmup    float64 `json:"warmup,omitempty"`
	MinTrials int     `json:"min_trials"`
	// Checkpoints hold, per checkpoint k (at (k+1)·interval samples), the
	// recent trials' best values there, oldest first.
	Checkpoints [][]float64 `json:"checkpoints,omitempty"`
	// Trials are the outstanding trials' best so far and checkpoints done.
	Trials map[string]medianTrial `json:"trials,omitempty"`
}

type medianTrial struct {
	Best float64 `json:"best"`
	Done int     `json:"done"` // checkpoints recorded
}

func (r *medianRule) observe(id string, samples, loss float64) bool {
	t, ok := r.Trials[id]
	if !ok || loss < t.Best {
		t.Best = loss
	}
	stop := false
	for ; t.Done < medianCheckpoints && samples >= float64(t.Done+1)*r.Interval; t.Done++ {
		k := t.Done
		for len(r.Checkpoints) <= k {
			r.Checkpoints = append(r.Checkpoints, nil)
		}
		others := r.Checkpoints[k]
		if !stop && samples >= r.Warmup && len(others) >= r.MinTrials && t.Best > stats.Median(others) {
			stop = true
		}
		r.Checkpoints[k] = append(others, t.Best)
		if len(r.Checkpoints[k]) > medianKeep {
			r.Checkpoints[k] = slices.Delete(r.Checkpoints[k], 0, 1)
		}
	}
	r.Trials[id] = t
	return stop
}

func (r *medianRule) forget(id string) { delete(r.Trials, id) }

func (r *medianRule) check() error {
	if len(r.Checkpoints) > medianCheckpoints {
		return fmt.Errorf("%d checkpoints, at most %d", len(r.Checkpoints), medianCheckpoints)
	}
	for k, c := range r.Checkpoints {
		if len(c) > medianKeep {
			return fmt.Errorf("checkpoint %d keeps %d values, at most %d", k, len(c), medianKeep)
		}
	}
	if r.Trials == nil {
		r.Trials = map[string]medianTrial{}
	}
	return nil
}
