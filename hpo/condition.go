package hpo

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Condition makes a parameter conditional (Param.When): it is active, and
// has a value in a trial's params, only when its parent Param is active
// and has one of Values. Otherwise it is absent from the trial's params
// and from its params file.
//
// The parent is a choice or an int parameter defined earlier in the space
// (parents before children, so a chain of conditions resolves in one pass
// in space order). Values are written as strings: a choice's choices as
// they are; an int's integers in any form strconv.ParseFloat reads ("2",
// "2.0", "1e3"), matched by numeric equality. A float parent is refused
// (a continuous value equals a given one with probability 0), and so is
// an architecture.
type Condition struct {
	Param  string   `json:"param"`
	Values []string `json:"values"`
}

func (c Condition) String() string {
	if len(c.Values) == 1 {
		return c.Param + " = " + c.Values[0]
	}
	return c.Param + " in [" + strings.Join(c.Values, ", ") + "]"
}

// holds reports whether parent value v is one of c's values; parent is
// the parameter c names, valid with c (Space.Validate).
func (c Condition) holds(parent Param, v Value) bool {
	if parent.Type == ParamChoice {
		return v.IsStr && slices.Contains(c.Values, v.Str)
	}
	if v.IsStr {
		return false
	}
	for _, s := range c.Values {
		if x, err := strconv.ParseFloat(s, 64); err == nil && x == v.Num {
			return true
		}
	}
	return false
}

// validateWhen checks parameter i's condition against the parameters
// defined before it (index: every parameter's position by name); errors
// name space[i].when.
func (s Space) validateWhen(i int, index map[string]int) error {
	if s[i].When.Param == "" {
		return fmt.Errorf("space[%d].when.param: empty (the name of the parameter %q depends on)", i, s[i].Name)
	}
	if j, ok := index[s[i].When.Param]; ok && j == i {
		return fmt.Errorf("space[%d].when.param: %q cannot depend on itself", i, s[i].Name)
	} else if ok && j > i {
		return fmt.Errorf("space[%d].when.param: %q is defined after %q; define a parent before the parameters that depend on it",
			i, s[i].When.Param, s[i].Name)
	}
	return s.checkCondition(*s[i].When, index, fmt.Sprintf("space[%d].when", i))
}

// checkCondition checks that c names a choice or int parameter of s (its
// position in index) and values of it; errors name field.
func (s Space) checkCondition(c Condition, index map[string]int, field string) error {
	j, ok := index[c.Param]
	switch {
	case c.Param == "":
		return fmt.Errorf("%s.param: empty", field)
	case !ok:
		return fmt.Errorf("%s.param: %q is not a parameter of the space", field, c.Param)
	case s[j].Type != ParamChoice && s[j].Type != ParamInt:
		return fmt.Errorf("%s.param: %q is of type %s; only a choice or an int parameter can be named", field, c.Param, s[j].Type)
	case len(c.Values) == 0:
		return fmt.Errorf("%s.values: empty (values of %q)", field, c.Param)
	}
	parent := s[j]
	for k, v := range c.Values {
		if parent.Type == ParamChoice {
			if !slices.Contains(parent.Choices, v) {
				return fmt.Errorf("%s.values[%d]: %q is not one of %q's choices %v", field, k, v, c.Param, parent.Choices)
			}
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if lo, hi := math.Ceil(parent.Min), math.Floor(parent.Max); err != nil || x != math.Trunc(x) || x < lo || x > hi {
			return fmt.Errorf("%s.values[%d]: %q is not an integer of %q's range [%v, %v]", field, k, v, c.Param, lo, hi)
		}
	}
	return nil
}

// Conditional reports whether any parameter of s has a condition.
func (s Space) Conditional() bool {
	return slices.ContainsFunc(s, func(p Param) bool { return p.When != nil })
}

// Index is the position of the parameter named name, or -1.
func (s Space) Index(name string) int {
	return slices.IndexFunc(s, func(p Param) bool { return p.Name == name })
}

// Active says, for each parameter of the valid space s in order, whether
// it is active in p: it has no condition, or its parent is active and p
// gives the parent one of the condition's values. A parent that p lacks
// makes its children inactive.
func (s Space) Active(p Params) []bool {
	active := make([]bool, len(s))
	var index map[string]int
	for i, d := range s {
		if d.When == nil {
			active[i] = true
			continue
		}
		if index == nil {
			index = make(map[string]int, len(s))
			for j, e := range s {
				index[e.Name] = j
			}
		}
		j, ok := index[d.When.Param]
		if !ok || j >= i || !active[j] {
			continue
		}
		v, ok := p[d.When.Param]
		active[i] = ok && d.When.holds(s[j], v)
	}
	return active
}

// IsActive reports whether parameter i of the valid space s is active in
// p (Active's i-th entry), following its chain of parents.
func (s Space) IsActive(i int, p Params) bool {
	for {
		c := s[i].When
		if c == nil {
			return true
		}
		j := s.Index(c.Param)
		if j < 0 || j >= i {
			return false
		}
		v, ok := p[c.Param]
		if !ok || !c.holds(s[j], v) {
			return false
		}
		i = j
	}
}

// Prune returns p without the parameters that are inactive in it (and
// without names that are not the space's): what a searcher that draws or
// moves a full vector proposes. p itself is not changed.
func (s Space) Prune(p Params) Params {
	active := s.Active(p)
	out := make(Params, len(p))
	for i, d := range s {
		if v, ok := p[d.Name]; ok && active[i] {
			out[d.Name] = v
		}
	}
	return out
}

// Complete returns p with exactly the parameters active in it: the values
// p gives active parameters are kept, the active ones it lacks are drawn
// from rng as Sample draws them (in space order, so a newly drawn parent
// decides its children), and inactive ones are dropped. Evolution and
// local search call it after changing a parent. p itself is not changed;
// on an unconditional space with p complete it draws nothing.
func (s Space) Complete(rng *rand.Rand, p Params) Params {
	out := make(Params, len(s))
	for i, d := range s {
		if d.When != nil && !s.IsActive(i, out) {
			continue
		}
		if v, ok := p[d.Name]; ok {
			out[d.Name] = v
		} else {
			out[d.Name] = d.sample(rng)
		}
	}
	return out
}

// Forbidden is a clause ruling configurations out (ConfigSpace's
// forbidden clauses): a configuration is forbidden when every term of All
// holds, a term holding when its parameter is active and has one of the
// term's values. A term on an inactive parameter does not hold, so a
// clause never forbids a configuration in which one of its parameters is
// absent. A term's parameter is a choice or an int parameter, its values
// written as a Condition's are.
type Forbidden struct {
	All []Condition `json:"all"`
}

func (f Forbidden) String() string {
	terms := make([]string, len(f.All))
	for i, c := range f.All {
		terms[i] = c.String()
	}
	return strings.Join(terms, " and ")
}

// Forbids reports whether f rules out p over the valid space s.
func (f Forbidden) Forbids(s Space, p Params) bool {
	for _, c := range f.All {
		i := s.Index(c.Param)
		if i < 0 {
			return false
		}
		v, ok := p[c.Param]
		if !ok || !c.holds(s[i], v) {
			return false
		}
	}
	return len(f.All) > 0
}

// ValidateForbidden checks forbidden clauses against the valid space s;
// errors name forbidden[i].all[k].
func ValidateForbidden(s Space, forbidden []Forbidden) error {
	index := make(map[string]int, len(s))
	for j, p := range s {
		index[p.Name] = j
	}
	for i, f := range forbidden {
		if len(f.All) == 0 {
			return fmt.Errorf("forbidden[%d].all: empty", i)
		}
		for k, c := range f.All {
			if err := s.checkCondition(c, index, fmt.Sprintf("forbidden[%d].all[%d]", i, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Allowed reports whether no clause of forbidden rules out p.
func Allowed(s Space, forbidden []Forbidden, p Params) bool {
	return !slices.ContainsFunc(forbidden, func(f Forbidden) bool { return f.Forbids(s, p) })
}

// ErrAllForbidden: a searcher drew maxForbiddenTries configurations and
// every one was forbidden.
var ErrAllForbidden = fmt.Errorf("every configuration drawn was forbidden")

// maxForbiddenTries bounds the draws of rejection sampling.
const maxForbiddenTries = 1000

// SampleAllowed draws from s as Sample does until a configuration that no
// clause of forbidden rules out, at most 1000 times; after that it returns
// the last draw and ErrAllForbidden. Without clauses it is Sample.
func (s Space) SampleAllowed(rng *rand.Rand, forbidden []Forbidden) (Params, error) {
	var p Params
	for range maxForbiddenTries {
		if p = s.Sample(rng); Allowed(s, forbidden, p) {
			return p, nil
		}
	}
	return p, fmt.Errorf("%w (%d draws)", ErrAllForbidden, maxForbiddenTries)
}

// supportsConditional reports whether algorithm name, with settings s,
// handles conditional spaces and forbidden clauses: random, quasirandom,
// grid, TPE, evolution and local search do, and a stopping searcher (median,
// ASHA, Hyperband) whose sampler does, since it leaves parameters to its
// sampler. The others (PBT, which perturbs every parameter of a member)
// are refused a conditional space rather than handed params they would
// mishandle.
func supportsConditional(name string, s Settings) bool {
	a, ok := lookup(name)
	if !ok {
		return false
	}
	if a.sampler != nil {
		sampler := cmp.Or(a.sampler(s), AlgorithmRandom)
		b, ok := lookup(sampler)
		return ok && b.sampler == nil && b.conditional
	}
	return a.conditional
}

// validateConditional checks the forbidden clauses, that the algorithm
// supports a conditional space or forbidden clauses when there are, and
// that a configuration is allowed at all; errors name the field.
func (c Config) validateConditional() error {
	if err := ValidateForbidden(c.Space, c.Forbidden); err != nil {
		return err
	}
	var what string
	switch {
	case c.Space.Conditional():
		what = "a conditional space (a parameter with when)"
	case len(c.Forbidden) > 0:
		what = "forbidden clauses"
	default:
		return nil
	}
	if !supportsConditional(c.Algorithm, c.Settings) {
		var ok []string
		for _, a := range registry {
			if a.conditional {
				ok = append(ok, a.name)
			}
		}
		return fmt.Errorf("algorithm: %s does not search %s; use one of %s (or a stopping searcher sampling with one)",
			c.Algorithm, what, strings.Join(ok, ", "))
	}
	for i, p := range c.Points {
		if k := slices.IndexFunc(c.Forbidden, func(f Forbidden) bool { return f.Forbids(c.Space, p) }); k >= 0 {
			return fmt.Errorf("points[%d]: forbidden by forbidden[%d] (%s)", i, k, c.Forbidden[k])
		}
	}
	// Seeded, so that validation is deterministic.
	if _, err := c.Space.SampleAllowed(rand.New(rand.NewPCG(1, 2)), c.Forbidden); err != nil {
		return fmt.Errorf("forbidden: %w: the clauses leave (almost) nothing of the space", err)
	}
	return nil
}
