package allocator

import (
	"slices"
	"strings"
	"testing"
)

func TestParseFormulation(t *testing.T) {
	for in, want := range map[string]Formulation{
		"":        FormulationCompact,
		"compact": FormulationCompact,
		"paper":   FormulationPaper,
		"greedy":  FormulationGreedy,
		"equal":   FormulationEqual,
	} {
		got, err := ParseFormulation(in)
		if err != nil || got != want {
			t.Errorf("ParseFormulation(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"cbc":     `"cbc" is not one of compact, paper, greedy, equal`,
		" paper ": `" paper " is not one of compact, paper, greedy, equal`,
	} {
		if _, err := ParseFormulation(in); err == nil || err.Error() != want {
			t.Errorf("ParseFormulation(%q) error %v, want %q", in, err, want)
		}
	}
}

func TestParseFormulations(t *testing.T) {
	got, err := ParseFormulations("greedy, compact,equal")
	if want := []Formulation{FormulationGreedy, FormulationCompact, FormulationEqual}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseFormulations = %v, %v; want %v", got, err, want)
	}
	for in, want := range map[string]string{
		"compact,cbc":     `"cbc" is not one of compact, paper, greedy, equal`,
		"paper,paper":     `"paper" is given twice`,
		"compact,,greedy": `"compact,,greedy" names an empty formulation; want some of compact, paper, greedy, equal`,
		"":                `"" names an empty formulation`,
	} {
		if _, err := ParseFormulations(in); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseFormulations(%q) error %v, want %q", in, err, want)
		}
	}
}
