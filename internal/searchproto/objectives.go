package searchproto

// What a search's results are: one objective (a request's metric) or
// several (its values), and a value per constraint. A request's result
// must be the search's.

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// objectives is what a search's results carry: its objectives' and
// constraints' metric names, and what dominance means between results.
type objectives struct {
	names       []string // one per objective ("" for a config that names none)
	constraints []string
	goals       hpo.Goals
}

func objectivesOf(cfg hpo.Config) *objectives {
	o := &objectives{goals: cfg.Goals()}
	if len(cfg.Objectives) == 0 {
		o.names = []string{""}
	}
	for _, obj := range cfg.Objectives {
		o.names = append(o.names, obj.Metric)
	}
	for _, c := range cfg.Constraints {
		o.constraints = append(o.constraints, c.Metric)
	}
	return o
}

// several: the search has several objectives, so a result is values.
func (o *objectives) several() bool { return len(o.names) > 1 }

// vector: a result is a vector, compared by Pareto dominance and measured
// by hypervolume (several objectives, or any constraint).
func (o *objectives) vector() bool { return o.several() || len(o.constraints) > 0 }

// field is the field that carries a result of this search.
func (o *objectives) field() string {
	if o.several() {
		return "values"
	}
	return "metric"
}

// check refuses a reported or finished request whose result is not one
// of this search's: metric for one objective, values (one per objective)
// for several, and constraints exactly when the search has some.
func (o *objectives) check(r Request) error {
	if r.Event != EventReported && r.Event != EventFinished {
		return nil
	}
	switch {
	case o.several() && r.Values == nil:
		return fmt.Errorf("metric: this search has %d objectives (%s); send values", len(o.names), strings.Join(o.names, ", "))
	case !o.several() && r.Values != nil:
		return errors.New("values: this search has one objective; send metric")
	case o.several() && len(r.Values) != len(o.names):
		return fmt.Errorf("values: %s for %d objectives (%s)", count(len(r.Values), "value"), len(o.names), strings.Join(o.names, ", "))
	case len(o.constraints) == 0 && r.Constraints != nil:
		return errors.New("constraints: this search has no constraints")
	case len(o.constraints) > 0 && r.Constraints == nil:
		return fmt.Errorf("constraints: missing; one number per constraint (%s)", strings.Join(o.constraints, ", "))
	case len(r.Constraints) != len(o.constraints):
		return fmt.Errorf("constraints: %s for %s (%s)", count(len(r.Constraints), "value"), count(len(o.constraints), "constraint"), strings.Join(o.constraints, ", "))
	}
	return nil
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// result is a checked request's result as hpo takes it: NaN where it has
// no value.
func (o *objectives) result(r Request) hpo.Result {
	var res hpo.Result
	if o.several() {
		res.Values = floats(r.Values)
	} else {
		res.Values = floats([]*float64{r.Metric})
	}
	if len(o.constraints) > 0 {
		res.Constraints = floats(r.Constraints)
	}
	return res
}

func floats(xs []*float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.NaN()
		if x != nil {
			out[i] = *x
		}
	}
	return out
}

// numbers is floats' inverse: nil for NaN (JSON's null).
func numbers(xs []float64) []*float64 {
	if xs == nil {
		return nil
	}
	out := make([]*float64, len(xs))
	for i, x := range xs {
		if !math.IsNaN(x) {
			out[i] = &x
		}
	}
	return out
}
