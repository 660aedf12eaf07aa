package hpo

import (
	"fmt"
	"math"
	"strings"
)

// Objective is one objective of a search: a metric and its direction.
type Objective struct {
	Metric string `json:"metric"`
	// Mode is "min" or "max".
	Mode string `json:"mode"`
}

// Constraint bounds a reported metric. A trial is feasible when every
// constraint holds; a trial that never reported a constrained metric is
// infeasible.
type Constraint struct {
	Metric string `json:"metric"`
	// Max and Min bound the metric; at least one is set.
	Max *float64 `json:"max,omitempty"`
	Min *float64 `json:"min,omitempty"`
}

// Validate checks the constraint; errors name the field.
func (c Constraint) Validate() error {
	switch {
	case c.Metric == "":
		return fmt.Errorf("metric: empty")
	case c.Max == nil && c.Min == nil:
		return fmt.Errorf("%s: give max, min or both", c.Metric)
	case c.Max != nil && !isFinite(*c.Max):
		return fmt.Errorf("%s: max: %v is not a finite number", c.Metric, *c.Max)
	case c.Min != nil && !isFinite(*c.Min):
		return fmt.Errorf("%s: min: %v is not a finite number", c.Metric, *c.Min)
	case c.Max != nil && c.Min != nil && *c.Min > *c.Max:
		return fmt.Errorf("%s: min %v > max %v", c.Metric, *c.Min, *c.Max)
	}
	return nil
}

// Violation is how far v lies outside the constraint: 0 inside, +Inf when v
// is NaN (not reported).
func (c Constraint) Violation(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(1)
	}
	d := 0.0
	if c.Max != nil && v > *c.Max {
		d += v - *c.Max
	}
	if c.Min != nil && v < *c.Min {
		d += *c.Min - v
	}
	return d
}

// Result is what a trial reported: one value per objective, in the
// Config's order (NaN: not reported), and one per constraint (NaN: not
// reported, which makes the trial infeasible).
type Result struct {
	Values      []float64 `json:"values"`
	Constraints []float64 `json:"constraints,omitempty"`
}

// Scalar returns a single-objective result.
func Scalar(v float64) Result { return Result{Values: []float64{v}} }

// Value is the first objective's value (NaN when there is none): what a
// single-objective searcher sees.
func (r Result) Value() float64 {
	if len(r.Values) == 0 {
		return math.NaN()
	}
	return r.Values[0]
}

// Complete reports whether every objective has a value.
func (r Result) Complete() bool {
	for _, v := range r.Values {
		if math.IsNaN(v) {
			return false
		}
	}
	return len(r.Values) > 0
}

// VectorSearcher is a Searcher that takes a trial's whole result: a value
// per objective and per constraint. The searchers for several objectives or
// constraints implement it; the campaign feeds every searcher through
// Report and Finish.
type VectorSearcher interface {
	Searcher
	// TrialReportedResult is TrialReported with the whole result.
	TrialReportedResult(id string, progress float64, r Result) []Action
	// TrialFinishedResult is TrialFinished with the whole result; its
	// values are NaN where the trial reported none.
	TrialFinishedResult(id string, r Result, outcome Outcome) []Action
}

// Report tells s that a running trial reported r after progress budget
// units: the whole result to a VectorSearcher, its first value to the
// others.
func Report(s Searcher, id string, progress float64, r Result) []Action {
	if v, ok := s.(VectorSearcher); ok {
		return v.TrialReportedResult(id, progress, r)
	}
	return s.TrialReported(id, progress, r.Value())
}

// Finish tells s that a trial ended with r (see TrialFinished).
func Finish(s Searcher, id string, r Result, outcome Outcome) []Action {
	if v, ok := s.(VectorSearcher); ok {
		return v.TrialFinishedResult(id, r, outcome)
	}
	return s.TrialFinished(id, r.Value(), outcome)
}

// Goals is the directions of a search and its constraints: what Pareto
// dominance between two results means.
type Goals struct {
	Modes       []string     `json:"modes"`
	Constraints []Constraint `json:"constraints,omitempty"`
}

// Goals returns the config's objectives' directions and constraints. A
// config with no Objectives has one objective in Mode.
func (c Config) Goals() Goals {
	g := Goals{Constraints: c.Constraints}
	if len(c.Objectives) == 0 {
		g.Modes = []string{c.Mode}
		return g
	}
	for _, o := range c.Objectives {
		g.Modes = append(g.Modes, o.Mode)
	}
	return g
}

// MultiObjective reports whether the config has several objectives or any
// constraint: only searchers registered as vector searchers take it.
func (c Config) MultiObjective() bool {
	return len(c.Objectives) > 1 || len(c.Constraints) > 0
}

// validateObjectives checks Objectives and Constraints; errors name the
// field.
func (c Config) validateObjectives() error {
	seen := map[string]bool{}
	for i, o := range c.Objectives {
		switch {
		case o.Metric == "":
			return fmt.Errorf("objectives[%d].metric: empty", i)
		case seen[o.Metric]:
			return fmt.Errorf("objectives[%d].metric: %q is already an objective", i, o.Metric)
		case o.Mode != "min" && o.Mode != "max":
			return fmt.Errorf("objectives[%d].mode: %q is not one of min, max", i, o.Mode)
		}
		seen[o.Metric] = true
	}
	if len(c.Objectives) > 0 && c.Mode != c.Objectives[0].Mode {
		return fmt.Errorf("mode: %q differs from objectives[0].mode %q", c.Mode, c.Objectives[0].Mode)
	}
	for i, k := range c.Constraints {
		if err := k.Validate(); err != nil {
			return fmt.Errorf("constraints[%d]: %w", i, err)
		}
	}
	if c.MultiObjective() {
		if a, _ := lookup(c.Algorithm); !a.vector {
			return fmt.Errorf("algorithm: %s takes one objective and no constraints; with several objectives or constraints use one of %s",
				c.Algorithm, strings.Join(VectorAlgorithms(), ", "))
		}
	}
	return nil
}

// VectorAlgorithms lists the algorithms that take several objectives and
// constraints.
func VectorAlgorithms() []string {
	var names []string
	for _, a := range registry {
		if a.vector {
			names = append(names, a.name)
		}
	}
	return names
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
