package hpo

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Sample draws one point of the space from rng: floats uniform on [min,
// max] (log-uniform when log), integers uniform on the integers of [min,
// max] (log-uniform when log: a log-uniform real on [lo−½, hi+½] rounded,
// as Optuna does, so every integer has mass proportional to its share of
// the log range), choices uniform, architectures as their space samples
// them (Architectures.Sample). A conditional parameter is drawn only when
// active given its parent, drawn before it, and is absent otherwise; an
// unconditional space draws every parameter, in space order. The space
// must be valid.
func (s Space) Sample(rng *rand.Rand) Params {
	p := make(Params, len(s))
	for i, d := range s {
		if d.When == nil || s.IsActive(i, p) {
			p[d.Name] = d.sample(rng)
		}
	}
	return p
}

func (d Param) sample(rng *rand.Rand) Value {
	switch d.Type {
	case ParamChoice:
		return String(d.Choices[rng.IntN(len(d.Choices))])
	case ParamArch:
		return String(d.mustArchitectures().Sample(rng))
	case ParamInt:
		lo, hi := math.Ceil(d.Min), math.Floor(d.Max)
		if d.Log {
			v := math.Round(logUniform(rng, lo-0.5, hi+0.5))
			return Float(clamp(v, lo, hi))
		}
		if n := hi - lo + 1; n <= 1<<62 {
			return Float(lo + float64(rng.Int64N(int64(n))))
		}
		// Beyond int64 (and float64's integers): a real, floored.
		return Float(clamp(math.Floor(lo+rng.Float64()*(hi-lo+1)), lo, hi))
	default: // ParamFloat
		if d.Log {
			return Float(clamp(logUniform(rng, d.Min, d.Max), d.Min, d.Max))
		}
		// min/2 + u·max/2 … avoids overflow of max−min for huge ranges.
		u := rng.Float64()
		v := 2 * (d.Min/2 + u*(d.Max/2-d.Min/2))
		return Float(clamp(v, d.Min, d.Max))
	}
}

func logUniform(rng *rand.Rand, lo, hi float64) float64 {
	a, b := math.Log(lo), math.Log(hi)
	return math.Exp(a + rng.Float64()*(b-a))
}

func clamp(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

// mustArchitectures is the space of architecture parameter d, which
// Space.Validate has checked can be constructed: an error here is the
// caller's bug (an unvalidated space).
func (d Param) mustArchitectures() Architectures {
	a, err := d.Architectures()
	if err != nil {
		panic(fmt.Sprintf("hpo: sampling an invalid space: %v", err))
	}
	return a
}

// Contains checks that p has exactly the space's parameters, each of its
// type and inside its bounds; errors name the parameter.
//
// An architecture must be in its canonical form (Architectures.Canonical),
// not merely valid: every architecture a searcher creates or learns from
// is then canonical, so that two values are the same architecture exactly
// when their strings are equal (what evolution's and local search's
// bookkeeping and the leaderboard compare). A valid but non-canonical one
// (an enqueued point written by hand) is rejected with its canonical form
// to write instead.
//
// In a conditional space p has exactly the parameters active in it
// (Space.Active): an inactive one with a value, or a name that is not the
// space's, is an error naming it, as is an active one missing.
func (s Space) Contains(p Params) error {
	if !s.Conditional() && len(p) != len(s) {
		return fmt.Errorf("params: %d values for %d parameters", len(p), len(s))
	}
	active := s.Active(p)
	for i, d := range s {
		v, ok := p[d.Name]
		switch {
		case !active[i] && ok:
			return fmt.Errorf("params: %q has a value, but is inactive (active when %s)", d.Name, d.When)
		case !active[i]:
			continue
		case !ok && d.When != nil:
			return fmt.Errorf("params: %q missing (active, as %s)", d.Name, d.When)
		case !ok:
			return fmt.Errorf("params: %q missing", d.Name)
		}
		switch d.Type {
		case ParamChoice:
			if !v.IsStr || !contains(d.Choices, v.Str) {
				return fmt.Errorf("params: %q = %v is not one of %v", d.Name, v, d.Choices)
			}
		case ParamArch:
			if err := d.containsArch(v); err != nil {
				return err
			}
		default:
			if v.IsStr || math.IsNaN(v.Num) || v.Num < d.Min || v.Num > d.Max {
				return fmt.Errorf("params: %q = %v is not in [%v, %v]", d.Name, v, d.Min, d.Max)
			}
			if d.Type == ParamInt && v.Num != math.Trunc(v.Num) {
				return fmt.Errorf("params: %q = %v is not an integer", d.Name, v)
			}
		}
	}
	for _, n := range p.Names() {
		if s.Conditional() && s.Index(n) < 0 {
			return fmt.Errorf("params: %q is not a parameter of the space", n)
		}
	}
	return nil
}

// containsArch checks an architecture value: a string, valid, canonical.
func (d Param) containsArch(v Value) error {
	if !v.IsStr {
		return fmt.Errorf("params: %q = %v is not an architecture (a string holding its JSON)", d.Name, v)
	}
	a, err := d.Architectures()
	if err != nil {
		return err
	}
	c, err := a.Canonical(v.Str)
	if err != nil {
		return fmt.Errorf("params: %q: %w", d.Name, err)
	}
	if c != v.Str {
		return fmt.Errorf("params: %q: architecture not in canonical form; write it as %s", d.Name, c)
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
