package hpo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ReadConfigSpace reads a search space in ConfigSpace's JSON format (what
// ConfigSpace.read_and_write.json.write writes, json_format_version 0.2 to
// 0.4, ConfigSpace 0.4 to 0.6), so that published benchmark spaces
// (HPOBench, YAHPO, SMAC's examples) run as they are. It returns the
// space, parents before children, and its forbidden clauses.
//
// Supported:
//
//	uniform_float, uniform_int   float, int (log kept); q must be null
//	categorical                  choice (uniform: weights must be null)
//	ordinal                      choice, the sequence's order kept
//	constant                     a choice of one value
//	conditions EQ, IN            Param.When
//	conditions OR                of EQ and IN on one parent: their values
//	forbiddens EQUALS, IN, AND   Forbidden (AND of EQUALS and IN)
//
// Choices are strings: a string as it is, a number as strconv's shortest
// form writes it, a boolean as Python writes it (True, False), since the
// trainer's code read the space with Python. A condition's or clause's
// value is written the same way. Defaults are ignored (a searcher has no
// use for them). Anything else — normal_float and the other
// distributions, NEQ, GT, LT and AND conditions, a child with two
// conditions, forbidden relations, quantization — is an error naming the
// hyperparameter, condition or clause and what is not supported.
func ReadConfigSpace(data []byte) (Space, []Forbidden, error) {
	var cs csFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&cs); err != nil {
		return nil, nil, fmt.Errorf("configspace: %w", err)
	}
	if len(cs.Hyperparameters) == 0 {
		return nil, nil, fmt.Errorf("configspace: hyperparameters: none")
	}
	var space Space
	for i, h := range cs.Hyperparameters {
		p, err := h.param()
		if err != nil {
			return nil, nil, fmt.Errorf("configspace: hyperparameters[%d] (%s): %w", i, h.Name, err)
		}
		space = append(space, p)
	}
	conditioned := map[string]int{}
	for i, c := range cs.Conditions {
		cond, err := c.condition()
		if err != nil {
			return nil, nil, fmt.Errorf("configspace: conditions[%d] (child %s): %w", i, c.Child, err)
		}
		j := space.Index(c.Child)
		switch k, twice := conditioned[c.Child]; {
		case j < 0:
			return nil, nil, fmt.Errorf("configspace: conditions[%d]: child %q is not a hyperparameter", i, c.Child)
		case twice:
			return nil, nil, fmt.Errorf("configspace: conditions[%d] (child %s): a second condition (the first is conditions[%d]); a child of two conditions is not supported", i, c.Child, k)
		}
		conditioned[c.Child] = i
		space[j].When = cond
	}
	space, err := parentsFirst(space)
	if err != nil {
		return nil, nil, fmt.Errorf("configspace: %w", err)
	}
	var forbidden []Forbidden
	for i, f := range cs.Forbiddens {
		terms, err := f.terms()
		if err != nil {
			return nil, nil, fmt.Errorf("configspace: forbiddens[%d]: %w", i, err)
		}
		forbidden = append(forbidden, Forbidden{All: terms})
	}
	if err := space.Validate(); err != nil {
		return nil, nil, fmt.Errorf("configspace: %w", err)
	}
	if err := ValidateForbidden(space, forbidden); err != nil {
		return nil, nil, fmt.Errorf("configspace: %w", err)
	}
	return space, forbidden, nil
}

// csFile is ConfigSpace's JSON document.
type csFile struct {
	Hyperparameters []csHyper     `json:"hyperparameters"`
	Conditions      []csCondition `json:"conditions"`
	Forbiddens      []csForbidden `json:"forbiddens"`
}

type csHyper struct {
	Name     string       `json:"name"`
	Type     string       `json:"type"`
	Log      bool         `json:"log"`
	Lower    *json.Number `json:"lower"`
	Upper    *json.Number `json:"upper"`
	Q        any          `json:"q"`
	Choices  []any        `json:"choices"`
	Sequence []any        `json:"sequence"`
	Value    any          `json:"value"`
	Weights  any          `json:"weights"`
	Probs    any          `json:"probabilities"`
}

func (h csHyper) param() (Param, error) {
	p := Param{Name: h.Name}
	if h.Name == "" {
		return p, fmt.Errorf("name: empty")
	}
	switch h.Type {
	case "uniform_float", "uniform_int":
		if h.Q != nil {
			return p, fmt.Errorf("q: quantization (q = %v) is not supported", h.Q)
		}
		if h.Lower == nil || h.Upper == nil {
			return p, fmt.Errorf("lower and upper: both needed")
		}
		lo, err1 := h.Lower.Float64()
		hi, err2 := h.Upper.Float64()
		if err1 != nil || err2 != nil {
			return p, fmt.Errorf("lower %v, upper %v: not numbers", *h.Lower, *h.Upper)
		}
		p.Type, p.Min, p.Max, p.Log = ParamFloat, lo, hi, h.Log
		if h.Type == "uniform_int" {
			p.Type = ParamInt
		}
	case "categorical", "ordinal":
		if h.Weights != nil || h.Probs != nil {
			return p, fmt.Errorf("weights: non-uniform categorical weights are not supported")
		}
		vals := h.Choices
		if h.Type == "ordinal" {
			vals = h.Sequence
		}
		p.Type = ParamChoice
		for _, v := range vals {
			s, err := csString(v)
			if err != nil {
				return p, err
			}
			p.Choices = append(p.Choices, s)
		}
	case "constant":
		s, err := csString(h.Value)
		if err != nil {
			return p, fmt.Errorf("value: %w", err)
		}
		p.Type, p.Choices = ParamChoice, []string{s}
	default:
		return p, fmt.Errorf("type %q is not supported (only uniform_float, uniform_int, categorical, ordinal, constant)", h.Type)
	}
	return p, nil
}

// csString writes a JSON value of a choice or condition as a string (see
// ReadConfigSpace).
func csString(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return "", fmt.Errorf("value %v: %w", v, err)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case bool:
		if v {
			return "True", nil
		}
		return "False", nil
	}
	return "", fmt.Errorf("value %v: not a string, number or boolean", v)
}

func csStrings(vs []any) ([]string, error) {
	out := make([]string, len(vs))
	for i, v := range vs {
		s, err := csString(v)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

type csCondition struct {
	Child      string        `json:"child"`
	Parent     string        `json:"parent"`
	Type       string        `json:"type"`
	Value      any           `json:"value"`
	Values     []any         `json:"values"`
	Conditions []csCondition `json:"conditions"`
}

// condition is c as a Condition: EQ, IN, or OR of those on one parent.
func (c csCondition) condition() (*Condition, error) {
	switch c.Type {
	case "EQ":
		s, err := csString(c.Value)
		if err != nil {
			return nil, err
		}
		return &Condition{Param: c.Parent, Values: []string{s}}, nil
	case "IN":
		vs, err := csStrings(c.Values)
		if err != nil {
			return nil, err
		}
		return &Condition{Param: c.Parent, Values: vs}, nil
	case "OR":
		var out *Condition
		for k, sub := range c.Conditions {
			if sub.Type != "EQ" && sub.Type != "IN" {
				return nil, fmt.Errorf("OR of a %s condition (conditions[%d]) is not supported (only OR of EQ and IN on one parent)", sub.Type, k)
			}
			s, err := sub.condition()
			if err != nil {
				return nil, err
			}
			switch {
			case out == nil:
				out = s
			case s.Param != out.Param:
				return nil, fmt.Errorf("OR of conditions on two parents (%s, %s) is not supported", out.Param, s.Param)
			default:
				for _, v := range s.Values {
					if !slices.Contains(out.Values, v) {
						out.Values = append(out.Values, v)
					}
				}
			}
		}
		if out == nil {
			return nil, fmt.Errorf("OR: no conditions")
		}
		return out, nil
	}
	return nil, fmt.Errorf("condition type %q is not supported (only EQ, IN, and OR of those on one parent)", c.Type)
}

type csForbidden struct {
	Name    string        `json:"name"`
	Type    string        `json:"type"`
	Value   any           `json:"value"`
	Values  []any         `json:"values"`
	Clauses []csForbidden `json:"clauses"`
}

// terms is f as a Forbidden's terms: EQUALS, IN, or AND of those.
func (f csForbidden) terms() ([]Condition, error) {
	switch f.Type {
	case "EQUALS":
		s, err := csString(f.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		return []Condition{{Param: f.Name, Values: []string{s}}}, nil
	case "IN":
		vs, err := csStrings(f.Values)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		return []Condition{{Param: f.Name, Values: vs}}, nil
	case "AND":
		var out []Condition
		for k, c := range f.Clauses {
			if c.Type == "AND" {
				return nil, fmt.Errorf("clauses[%d]: AND inside AND is not supported", k)
			}
			t, err := c.terms()
			if err != nil {
				return nil, fmt.Errorf("clauses[%d]: %w", k, err)
			}
			out = append(out, t...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("forbidden type %q is not supported (only EQUALS, IN, and AND of those)", f.Type)
}

// parentsFirst orders s so that every parent comes before its children,
// otherwise keeping s's order (ConfigSpace writes its hyperparameters in
// name order, a child possibly first).
func parentsFirst(s Space) (Space, error) {
	out := make(Space, 0, len(s))
	placed := map[string]bool{}
	for len(out) < len(s) {
		n := len(out)
		for _, p := range s {
			if !placed[p.Name] && (p.When == nil || placed[p.When.Param]) {
				out = append(out, p)
				placed[p.Name] = true
			}
		}
		if len(out) == n {
			var stuck []string
			for _, p := range s {
				if !placed[p.Name] {
					stuck = append(stuck, p.Name)
				}
			}
			return nil, fmt.Errorf("conditions: %s depend on a missing parent or on each other", strings.Join(stuck, ", "))
		}
	}
	return out, nil
}
