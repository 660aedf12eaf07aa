package allocator

import (
	"fmt"
	"slices"
	"strings"
)

// ParseFormulation reads one formulation's name; the empty name is the
// default, FormulationCompact. The error of any other name lists the
// known ones; a caller prefixes the field it read, e.g. "--policy: ".
func ParseFormulation(name string) (Formulation, error) {
	if name == "" {
		return FormulationCompact, nil
	}
	f := Formulation(name)
	if !slices.Contains(Formulations, f) {
		return "", fmt.Errorf("%q is not one of %s", name, FormulationNames())
	}
	return f, nil
}

// ParseFormulations reads a comma-separated list of formulations (space
// around a name ignored), each named once; an empty name in it is an
// error, not the default.
func ParseFormulations(list string) ([]Formulation, error) {
	var out []Formulation
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("%q names an empty formulation; want some of %s", list, FormulationNames())
		}
		f, err := ParseFormulation(part)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, f) {
			return nil, fmt.Errorf("%q is given twice", f)
		}
		out = append(out, f)
	}
	return out, nil
}

// FormulationNames lists the formulations, the default first, for errors
// and help texts: "compact, paper, greedy, equal".
func FormulationNames() string {
	names := make([]string, len(Formulations))
	for i, f := range Formulations {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}
