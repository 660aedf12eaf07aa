package gleaner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gleaner "github.com/gleaner-hpc/gleaner"
)

// The conditional examples validate, and the ConfigSpace file gives the
// space the YAML writes by hand.
func TestConditionalExamples(t *testing.T) {
	byHand, err := gleaner.LoadAndValidate("examples/python-minimal/conditional.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := gleaner.LoadAndValidate("examples/python-minimal/configspace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if fromFile.SpaceFile != "" {
		t.Errorf("space_file %q left after LoadSpec", fromFile.SpaceFile)
	}
	for _, s := range []gleaner.CampaignSpec{byHand, fromFile} {
		steps := s.Space[s.Space.Index("steps")]
		if steps.When == nil || steps.When.String() != "schedule = long" || len(s.Forbidden) != 1 {
			t.Errorf("%s: steps when %v, forbidden %v", s.Name, steps.When, s.Forbidden)
		}
		if s.SearchConfig().Forbidden == nil {
			t.Errorf("%s: the searcher's config lost the forbidden clauses", s.Name)
		}
	}
}

func TestSpaceFileErrorsNameTheFieldAndFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const head = "name: x\ncommand: [a]\nobjective: {metric: m}\nbudget: {max_trials: 2}\n"
	write("bad.json", `{"hyperparameters": [{"name": "x", "type": "normal_float", "mu": 0, "sigma": 1}]}`)
	for _, tc := range []struct{ spec, want string }{
		{head + "space_file: missing.json\n", "space_file: stat " + filepath.Join(dir, "missing.json")},
		{head + "space_file: bad.json\n", "space_file: " + filepath.Join(dir, "bad.json") + `: configspace: hyperparameters[0] (x): type "normal_float" is not supported`},
		{head + "space_file: bad.json\nspace: [{name: y, type: choice, choices: [a]}]\n", "space_file: bad.json, but the spec has space or forbidden too"},
		{head + "space: [{name: o, type: choice, choices: [a, b]}, {name: y, type: float, min: 0, max: 1, when: {param: o, values: [c]}}]\n",
			`space[1].when.values[0]: "c" is not one of "o"'s choices [a b]`},
		{head + "space: [{name: o, type: choice, choices: [a, b]}]\nforbidden: [{all: [{param: p, values: [a]}]}]\n",
			`forbidden[0].all[0].param: "p" is not a parameter of the space`},
		{head + "space: [{name: o, type: choice, choices: [a, b]}, {name: y, type: float, min: 0, max: 1, when: {param: o, values: [a]}}]\nsearch: {algorithm: pbt, pbt: {interval: 10, max_budget: 100}}\n",
			"algorithm: pbt does not search a conditional space"},
	} {
		_, err := gleaner.LoadAndValidate(write("spec.yaml", tc.spec))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", tc.spec, err, tc.want)
		}
	}
	// Decoded from data, the file is not read: validation says so.
	spec, err := gleaner.DecodeSpec([]byte(head+"space_file: bad.json\n"), gleaner.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "space_file: bad.json was not read") {
		t.Errorf("unread space_file: %v", err)
	}
}
