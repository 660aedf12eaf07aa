package hpo

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ParamType is the type of one search dimension.
type ParamType string

const (
	ParamFloat  ParamType = "float"  // real in [min, max], log-uniform if log
	ParamInt    ParamType = "int"    // integer in [min, max], log-uniform if log
	ParamChoice ParamType = "choice" // one of choices
)

// Param is one dimension of a search space.
type Param struct {
	Name    string    `json:"name"`
	Type    ParamType `json:"type"`
	Min     float64   `json:"min,omitempty"`
	Max     float64   `json:"max,omitempty"`
	Log     bool      `json:"log,omitempty"`
	Choices []string  `json:"choices,omitempty"`
	// Architecture defines the space of a ParamArch dimension.
	Architecture *ArchSpec `json:"architecture,omitempty"`
	// When makes the parameter conditional: active only when its parent
	// has one of the condition's values (Condition); nil, always active.
	When *Condition `json:"when,omitempty"`
}

// Space is an ordered list of dimensions.
type Space []Param

// Validate checks the space; errors name the parameter and the field.
func (s Space) Validate() error {
	seen := map[string]bool{}
	index := make(map[string]int, len(s)) // first definitions, for conditions
	for i, p := range s {
		if _, ok := index[p.Name]; !ok {
			index[p.Name] = i
		}
	}
	for i, p := range s {
		if p.Name == "" {
			return fmt.Errorf("space[%d].name: empty", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("space: parameter %q defined twice", p.Name)
		}
		seen[p.Name] = true
		switch p.Type {
		case ParamFloat, ParamInt:
			if math.IsNaN(p.Min) || math.IsNaN(p.Max) || math.IsInf(p.Min, 0) || math.IsInf(p.Max, 0) {
				return fmt.Errorf("space: parameter %q: min and max must be finite", p.Name)
			}
			if p.Min > p.Max {
				return fmt.Errorf("space: parameter %q: min %v > max %v", p.Name, p.Min, p.Max)
			}
			if p.Log && p.Min <= 0 {
				return fmt.Errorf("space: parameter %q: log scale needs min > 0, got %v", p.Name, p.Min)
			}
			if p.Type == ParamInt && math.Ceil(p.Min) > math.Floor(p.Max) {
				return fmt.Errorf("space: parameter %q: no integer in [%v, %v]", p.Name, p.Min, p.Max)
			}
		case ParamChoice:
			if len(p.Choices) == 0 {
				return fmt.Errorf("space: parameter %q: choices: empty", p.Name)
			}
		case ParamArch:
			if err := p.validateArch(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("space: parameter %q: type %q is not one of float, int, choice, architecture", p.Name, p.Type)
		}
		if p.Architecture != nil && p.Type != ParamArch {
			return fmt.Errorf("space: parameter %q: architecture: only a parameter of type architecture has one", p.Name)
		}
		if p.When != nil {
			if err := s.validateWhen(i, index); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateArch checks an architecture parameter: exactly one section of
// its Architecture, nothing of the numbers' or choices' fields, and a space
// that package nas can construct (ErrNoArchitectures when it is not
// linked in).
func (p Param) validateArch() error {
	switch a := p.Architecture; {
	case a == nil || a.Cell == nil && a.Layers == nil:
		return fmt.Errorf("space: parameter %q: architecture: missing (one of cell, layers)", p.Name)
	case a.Cell != nil && a.Layers != nil:
		return fmt.Errorf("space: parameter %q: architecture: both cell and layers are set; exactly one of them defines the space", p.Name)
	case p.Min != 0 || p.Max != 0 || p.Log || len(p.Choices) > 0:
		return fmt.Errorf("space: parameter %q: min, max, log and choices do not apply to an architecture", p.Name)
	}
	_, err := p.Architectures()
	return err
}

// Value is one parameter value: a number (float or int) or a string (a
// choice, or an architecture's canonical JSON).
// It encodes to a bare JSON number or string.
type Value struct {
	Num   float64
	Str   string
	IsStr bool
}

// Float returns a numeric value.
func Float(v float64) Value { return Value{Num: v} }

// String returns a string value.
func String(s string) Value { return Value{Str: s, IsStr: true} }

func (v Value) MarshalJSON() ([]byte, error) {
	if v.IsStr {
		return json.Marshal(v.Str)
	}
	return json.Marshal(v.Num)
}

func (v *Value) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.IsStr = true
		return json.Unmarshal(b, &v.Str)
	}
	v.IsStr = false
	return json.Unmarshal(b, &v.Num)
}

func (v Value) String() string {
	if v.IsStr {
		return v.Str
	}
	return fmt.Sprintf("%g", v.Num)
}

// Params are one trial's parameter values by name.
type Params map[string]Value

// Names returns the parameter names, sorted.
func (p Params) Names() []string {
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Format lists the parameters for people, "name=value …" in name order,
// an architecture in its short form (DescribeValue), numbers rounded to
// digits significant digits (digits ≤ 0: as Value.String writes them).
// The campaign's trial summaries and the CLI's tables both show it.
func (p Params) Format(digits int) string {
	parts := make([]string, 0, len(p))
	for _, n := range p.Names() {
		v := DescribeValue(p[n])
		if !p[n].IsStr && digits > 0 {
			v = strconv.FormatFloat(p[n].Num, 'g', digits, 64)
		}
		parts = append(parts, n+"="+v)
	}
	return strings.Join(parts, " ")
}
