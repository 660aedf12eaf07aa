package allocator

import (
	"fmt"
	"math"
	"time"
)

const (
	defaultTimeLimit = 10 * time.Second
	defaultRelGap    = 1e-9
	// defaultRelGapTypes is compact's default gap on several node types:
	// there the LP bound alone certifies 10⁻⁶ (60 ms at 10,000 trials ×
	// 16,384 nodes), while 10⁻⁹ needs HiGHS to branch (4× the time) for
	// a millionth of the objective, far below the curves' own error.
	defaultRelGapTypes = 1e-6
)

func (s *Settings) withDefaults() Settings {
	out := Settings{}
	if s != nil {
		out = *s
	}
	if out.Formulation == "" {
		out.Formulation = FormulationCompact
	}
	if out.TimeLimit <= 0 {
		out.TimeLimit = defaultTimeLimit
	}
	if out.RelGap <= 0 {
		out.RelGap = defaultRelGap
	}
	return out
}

func (s *Settings) validate() error {
	switch {
	case s == nil:
		return nil
	case s.TimeLimit < 0:
		return fmt.Errorf("%w: settings: time limit %v must not be negative (0 means the default)", ErrInvalidProblem, s.TimeLimit)
	case math.IsNaN(s.RelGap) || math.IsInf(s.RelGap, 0) || s.RelGap < 0 || s.RelGap >= 1:
		return fmt.Errorf("%w: settings: relative gap %v must be in [0, 1) (0 means the default)", ErrInvalidProblem, s.RelGap)
	}
	return nil
}

// Solve validates p and decides an allocation with the formulation that s
// names (nil s: the compact formulation, see Settings). The problem is
// never modified. Errors wrap ErrInvalidProblem, ErrUnsupported or
// ErrSolver.
func Solve(p *Problem, s *Settings) (*Result, error) {
	start := time.Now()
	if err := s.validate(); err != nil {
		return nil, err
	}
	set := s.withDefaults()
	in, err := prepare(p)
	if err != nil {
		return nil, err
	}
	if (s == nil || s.RelGap == 0) && len(in.types) > 1 && set.Formulation == FormulationCompact {
		set.RelGap = defaultRelGapTypes
	}
	var (
		d      decision
		status = StatusHeuristic
	)
	switch set.Formulation {
	case FormulationCompact:
		d, status, err = solveCompact(in, set)
	case FormulationPaper:
		d, status, err = solvePaper(in, set)
	case FormulationGreedy:
		d = solveGreedy(in)
	case FormulationEqual:
		d = solveEqual(in)
	default:
		return nil, fmt.Errorf("%w: settings: formulation %q is not one of %s", ErrInvalidProblem, set.Formulation, FormulationNames())
	}
	if err != nil {
		return nil, err
	}
	return in.result(d, status, set.Formulation, start), nil
}

// Evaluate returns the objective value of giving each trial counts[j] nodes
// of type types[j] (types may be nil on a single-type pool). It is how
// callers and tests score any allocation on the same scale as Solve.
func Evaluate(p *Problem, counts []int, types []string) (float64, error) {
	in, err := prepare(p)
	if err != nil {
		return 0, err
	}
	if len(counts) != len(in.trials) {
		return 0, fmt.Errorf("%w: %d counts for %d trials", ErrInvalidProblem, len(counts), len(in.trials))
	}
	if types != nil && len(types) != len(counts) {
		return 0, fmt.Errorf("%w: %d types for %d trials", ErrInvalidProblem, len(types), len(counts))
	}
	d := newDecision(len(counts))
	used := make([]int, len(in.types))
	for j, k := range counts {
		if k == 0 {
			continue
		}
		typ := 0
		if types != nil {
			t, ok := in.typeIdx[types[j]]
			if !ok {
				return 0, fmt.Errorf("%w: trial %q: no node of type %q", ErrInvalidProblem, p.Trials[j].ID, types[j])
			}
			typ = t
		} else if len(in.types) != 1 {
			return 0, fmt.Errorf("%w: types are required on a pool of %d node types", ErrInvalidProblem, len(in.types))
		}
		c := in.trials[j].choice(typ)
		if c == nil || k < c.min || k > c.max() {
			return 0, fmt.Errorf("%w: trial %q: %d nodes of type %q is not an allowed choice", ErrInvalidProblem, p.Trials[j].ID, k, in.types[typ])
		}
		used[typ] += k
		d.counts[j], d.types[j] = k, typ
	}
	for t, u := range used {
		if u > in.capacity[t] {
			return 0, fmt.Errorf("%w: %d nodes of type %q used, %d idle", ErrInvalidProblem, u, in.types[t], in.capacity[t])
		}
	}
	return in.objective(d), nil
}
