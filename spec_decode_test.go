package gleaner_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

const fullYAML = `
name: demo
kind: hpo
pool: gpu
command: [bin/train, --verbose]
workdir: /scratch
env: {OMP_NUM_THREADS: "1", MODE: fast}
space:
  - {name: lr, type: float, min: 1e-3, max: 0.5, log: true}
  - {name: hidden, type: int, min: 4, max: 64}
  - {name: batch, type: choice, choices: [16, 32, "64"]}
  - name: act
    type: choice
    choices: [relu]
search: {algorithm: random, seed: 18446744073709551615}
objective: {metric: val_loss, mode: min}
budget: {max_trials: 20, max_concurrent: 4, max_failures: 5}
resources: {min_nodes: 1, max_nodes: 4, node_type: cpu}
trial: {grace_period: 10s, max_restarts: 2, rescale_up_cost: 1m30s, rescale_down_cost: 500ms}
`

const fullJSON = `{
	"name": "demo", "kind": "hpo", "pool": "gpu",
	"command": ["bin/train", "--verbose"], "workdir": "/scratch",
	"env": {"OMP_NUM_THREADS": "1", "MODE": "fast"},
	"space": [
		{"name": "lr", "type": "float", "min": 0.001, "max": 0.5, "log": true},
		{"name": "hidden", "type": "int", "min": 4, "max": 64},
		{"name": "batch", "type": "choice", "choices": ["16", "32", "64"]},
		{"name": "act", "type": "choice", "choices": ["relu"]}
	],
	"search": {"algorithm": "random", "seed": 18446744073709551615},
	"objective": {"metric": "val_loss", "mode": "min"},
	"budget": {"max_trials": 20, "max_concurrent": 4, "max_failures": 5},
	"resources": {"min_nodes": 1, "max_nodes": 4, "node_type": "cpu"},
	"trial": {"grace_period": "10s", "max_restarts": 2, "rescale_up_cost": "1m30s", "rescale_down_cost": "500ms"}
}`

func fullSpec() gleaner.CampaignSpec {
	return gleaner.CampaignSpec{
		Name: "demo", Kind: "hpo", Pool: "gpu",
		Command: []string{"bin/train", "--verbose"}, WorkDir: "/scratch",
		Env: map[string]string{"OMP_NUM_THREADS": "1", "MODE": "fast"},
		Space: hpo.Space{
			{Name: "lr", Type: hpo.ParamFloat, Min: 0.001, Max: 0.5, Log: true},
			{Name: "hidden", Type: hpo.ParamInt, Min: 4, Max: 64},
			{Name: "batch", Type: hpo.ParamChoice, Choices: []string{"16", "32", "64"}},
			{Name: "act", Type: hpo.ParamChoice, Choices: []string{"relu"}},
		},
		Search:    gleaner.SearchSpec{Algorithm: "random", Seed: 1<<64 - 1},
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: 20, MaxConcurrent: 4, MaxFailures: 5},
		Resources: gleaner.Resources{MinNodes: 1, MaxNodes: 4, NodeType: "cpu"},
		Trial: gleaner.TrialPolicy{
			GracePeriod: gleaner.Duration(10 * time.Second), MaxRestarts: 2,
			RescaleUpCost: gleaner.Duration(90 * time.Second), RescaleDownCost: gleaner.Duration(500 * time.Millisecond),
		},
	}
}

func TestDecodeSpecFull(t *testing.T) {
	for _, tc := range []struct {
		format gleaner.Format
		data   string
	}{{gleaner.FormatYAML, fullYAML}, {gleaner.FormatJSON, fullJSON}, {gleaner.FormatYAML, fullJSON}} {
		got, err := gleaner.DecodeSpec([]byte(tc.data), tc.format)
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if want := fullSpec(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got\n%+v\nwant\n%+v", tc.format, got, want)
		}
	}
}

// The spec comes back as written: defaults are the caller's to apply.
func TestDecodeSpecKeepsZeroFields(t *testing.T) {
	got, err := gleaner.DecodeSpec([]byte("name: x\nbudget: {max_trials: 3}\nenv: {}\nspace: []\n"), gleaner.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	want := gleaner.CampaignSpec{Name: "x", Budget: gleaner.Budget{MaxTrials: 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v (empty lists and maps decode as nil)", got, want)
	}
}

func TestDecodeSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format gleaner.Format
		data   string
		want   []string // substrings of the error
	}{
		{"unknown top-level field", gleaner.FormatYAML, "name: x\nbudgett: {}\n",
			[]string{"line 2, column 1", "budgett: unknown field", "budget, command"}},
		{"unknown nested field", gleaner.FormatYAML, "name: x\nbudget:\n  max_trial: 3\n",
			[]string{"line 3, column 3", "budget.max_trial: unknown field", "budget has max_concurrent, max_failures, max_trials"}},
		{"unknown field in a parameter", gleaner.FormatYAML, "space:\n  - {name: lr, type: float, mn: 0}\n",
			[]string{"line 2", "space[0].mn: unknown field"}},
		{"unknown field JSON", gleaner.FormatJSON, "{\n  \"name\": \"x\",\n  \"Budget\": {}\n}",
			[]string{"line 3, column 3", "Budget: unknown field"}},
		{"field set twice", gleaner.FormatYAML, "name: x\nname: y\n", []string{"line 2", "name: set twice"}},
		{"field set twice JSON", gleaner.FormatJSON, `{"name": "x", "name": "y"}`, []string{"name: set twice"}},
		{"env key twice", gleaner.FormatJSON, `{"env": {"A": "1", "A": "2"}}`, []string{"env.A: set twice"}},
		{"string for int", gleaner.FormatYAML, "budget: {max_trials: many}\n",
			[]string{"line 1, column 22", "budget.max_trials: \"many\" is not an integer"}},
		{"float for int", gleaner.FormatJSON, `{"budget": {"max_trials": 2.5}}`, []string{"budget.max_trials: 2.5 is not an integer"}},
		{"quoted int JSON", gleaner.FormatJSON, `{"budget": {"max_trials": "3"}}`, []string{"budget.max_trials: \"3\" is not an integer"}},
		{"int overflow", gleaner.FormatJSON, `{"budget": {"max_trials": 99999999999999999999}}`, []string{"budget.max_trials:"}},
		{"negative seed", gleaner.FormatYAML, "search: {seed: -1}\n", []string{"search.seed: -1 is not an integer from 0"}},
		{"number for string JSON", gleaner.FormatJSON, `{"name": 7}`, []string{"name: 7 is not a string"}},
		{"number in choices JSON", gleaner.FormatJSON, `{"space": [{"name": "b", "type": "choice", "choices": [16]}]}`,
			[]string{"space[0].choices[0]: 16 is not a string"}},
		{"null in choices", gleaner.FormatYAML, "space:\n  - {name: b, type: choice, choices: [a, ~]}\n",
			[]string{"space[0].choices[1]: null is not allowed"}},
		{"list for string", gleaner.FormatYAML, "name: [a, b]\n", []string{"name: a list is not a string"}},
		{"string for list", gleaner.FormatYAML, "command: bin/train --fast\n", []string{"command: \"bin/train --fast\" is not a list"}},
		{"string for mapping", gleaner.FormatYAML, "budget: 3\n", []string{"budget: budget is not a mapping of fields: 3 is"}},
		{"bad duration", gleaner.FormatYAML, "trial: {grace_period: 30}\n",
			[]string{"trial.grace_period:", `"30" is not a duration like 30s or 5m`}},
		{"duration as number JSON", gleaner.FormatJSON, `{"trial": {"grace_period": 30}}`, []string{"trial.grace_period: 30 is not a string"}},
		{"bool for float", gleaner.FormatYAML, "space: [{name: a, type: float, min: true}]\n", []string{"space[0].min: true is not a number"}},
		{"infinite float", gleaner.FormatYAML, "space: [{name: a, type: float, max: .inf}]\n", []string{"space[0].max: .inf is not a finite number"}},
		{"number for bool", gleaner.FormatYAML, "space: [{name: a, type: float, log: 1}]\n", []string{"space[0].log: 1 is not true or false"}},
		{"top level list", gleaner.FormatYAML, "- a\n", []string{"the spec is not a mapping of fields: a list is"}},
		{"empty YAML", gleaner.FormatYAML, "# nothing\n", []string{"the spec is empty"}},
		{"null YAML", gleaner.FormatYAML, "~\n", []string{"the spec is empty"}},
		{"empty JSON", gleaner.FormatJSON, " \n", []string{"the spec is empty"}},
		{"second YAML document", gleaner.FormatYAML, "name: a\n---\nname: b\n", []string{"line 2", "a second YAML document"}},
		{"trailing JSON", gleaner.FormatJSON, "{\"name\": \"a\"}\n{\"name\": \"b\"}", []string{"line 2, column 1", "trailing data after the spec"}},
		{"trailing garbage JSON", gleaner.FormatJSON, `{"name": "a"} x`, []string{"line 1, column 15"}},
		{"YAML syntax", gleaner.FormatYAML, "name: a\n  budget: b: c\n", []string{"line 2", "invalid YAML"}},
		{"JSON syntax", gleaner.FormatJSON, "{\n\"name\": \"a\",,\n}", []string{"line 2", "invalid JSON"}},
		{"truncated JSON", gleaner.FormatJSON, `{"name": "a"`, []string{"invalid JSON: unexpected end of input"}},
		{"YAML merge key", gleaner.FormatYAML, "base: &b {max_trials: 3}\nbudget: {<<: *b}\n", []string{"base: unknown field"}},
		{"alias cycle", gleaner.FormatYAML, "command: &a [*a]\n", []string{"command[0]: a list is not a string"}},
		{"alias cycle in a field", gleaner.FormatYAML, "space: &s [{name: x, type: choice, choices: *s}]\n", []string{"space[0].choices[0]: a mapping is not a string"}},
		{"billion laughs", gleaner.FormatYAML, laughs(), []string{"more than 65536 values"}},
		{"alias of a long string", gleaner.FormatYAML, longAliases(),
			[]string{"line 2, column 15", "command[1]: the spec's values add up to more than 1048576 bytes"}},
		{"over the size limit YAML", gleaner.FormatYAML, oversized(), []string{"the spec is 1048577 bytes, over the limit of 1048576 bytes"}},
		{"over the size limit JSON", gleaner.FormatJSON, oversized(), []string{"the spec is 1048577 bytes, over the limit of 1048576 bytes"}},
		{"over the size limit as JSON", gleaner.FormatYAML, growsAsJSON(), []string{"the spec as JSON is 1572", "over the limit of 1048576 bytes"}},
		{"JSON nested too deep", gleaner.FormatJSON, `{"command": ` + strings.Repeat("[", 200),
			[]string{"line 1, column 112", "nested more than 100 deep"}},
		{"unknown format", "toml", "name = 'x'", []string{`spec format "toml" is not one of yaml, json`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gleaner.DecodeSpec([]byte(tc.data), tc.format)
			if err == nil {
				t.Fatalf("decoded %q without error", tc.data)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// laughs is a YAML bomb: 300 parameters, each an alias of one with 300
// choices, each an alias.
func laughs() string {
	var b strings.Builder
	b.WriteString("workdir: &s x\nspace:\n  - &p {name: x, type: choice, choices: [")
	for j := 0; j < 300; j++ {
		b.WriteString("*s, ")
	}
	b.WriteString("x]}\n")
	for i := 0; i < 300; i++ {
		b.WriteString("  - *p\n")
	}
	return b.String()
}

// longAliases is a small file whose aliases of a long string make a spec
// larger than MaxSpecBytes.
func longAliases() string {
	return "workdir: &s " + strings.Repeat("w", gleaner.MaxSpecBytes/3) + "\ncommand: [*s, *s, *s, *s]\n"
}

// oversized is a valid spec padded to one byte over MaxSpecBytes.
func oversized() string {
	spec := `{"name": "x", "command": ["t"], "objective": {"metric": "m"}, "budget": {"max_trials": 1}}`
	return spec + strings.Repeat(" ", gleaner.MaxSpecBytes+1-len(spec))
}

// growsAsJSON is a YAML spec under MaxSpecBytes whose JSON is over it:
// the 4-byte escape \x01 is 6 bytes in JSON.
func growsAsJSON() string {
	return `name: "` + strings.Repeat(`\x01`, 262000) + "\"\n"
}

// A spec of exactly MaxSpecBytes is not too large.
func TestDecodeSpecAtTheSizeLimit(t *testing.T) {
	spec := oversized()[:gleaner.MaxSpecBytes]
	for _, f := range []gleaner.Format{gleaner.FormatJSON, gleaner.FormatYAML} {
		if _, err := gleaner.DecodeSpec([]byte(spec), f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestLoadSpecNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nbudget:\n  max_trial: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := gleaner.LoadSpec(bad)
	var de *gleaner.DecodeError
	if !errors.As(err, &de) || de.Line != 3 || de.Field != "budget.max_trial" {
		t.Fatalf("error %v (%#v), want a DecodeError at line 3 naming budget.max_trial", err, de)
	}
	if want := bad + ":3:3: budget.max_trial: unknown field"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start %q", err, want)
	}

	invalid := filepath.Join(dir, "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"name": "x", "command": ["t"], "objective": {"metric": "m"}, "budget": {"max_trials": 0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gleaner.LoadSpec(invalid); err != nil {
		t.Fatalf("LoadSpec does not validate: %v", err)
	}
	_, err = gleaner.LoadAndValidate(invalid)
	if err == nil || err.Error() != invalid+": budget.max_trials: 0 must be at least 1" {
		t.Errorf("LoadAndValidate: %v", err)
	}

	for _, p := range []string{filepath.Join(dir, "spec.toml"), filepath.Join(dir, "spec")} {
		if _, err := gleaner.LoadSpec(p); err == nil || !strings.Contains(err.Error(), "want .yaml, .yml or .json") {
			t.Errorf("LoadSpec(%s): %v", p, err)
		}
	}
	if _, err := gleaner.LoadSpec(filepath.Join(dir, "missing.yml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestFormatFromPath(t *testing.T) {
	for path, want := range map[string]gleaner.Format{
		"a.yaml": gleaner.FormatYAML, "dir.d/b.YML": gleaner.FormatYAML, "c.Json": gleaner.FormatJSON,
	} {
		if got, err := gleaner.FormatFromPath(path); err != nil || got != want {
			t.Errorf("FormatFromPath(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
}

// Both example campaigns are written twice, in YAML and JSON: the two
// must load, validate and be the same spec.
func TestExampleSpecsYAMLEqualsJSON(t *testing.T) {
	for _, dir := range []string{"examples/go-mlp", "examples/pytorch"} {
		fromYAML, err := gleaner.LoadAndValidate(filepath.Join(dir, "campaign.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := gleaner.LoadAndValidate(filepath.Join(dir, "campaign.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromYAML, fromJSON) {
			t.Errorf("%s: campaign.yaml and campaign.json differ:\n%+v\n%+v", dir, fromYAML, fromJSON)
		}
	}
}

// FuzzDecodeSpec: decoding never panics, and whatever decodes survives
// JSON encode → decode unchanged (decode ∘ encode = identity).
func FuzzDecodeSpec(f *testing.F) {
	f.Add([]byte(fullYAML), false)
	f.Add([]byte(fullJSON), true)
	// Too large, or made too large by aliases or escapes: generated here,
	// not kept in testdata.
	f.Add([]byte(oversized()), true)
	f.Add([]byte(oversized()), false)
	f.Add([]byte(longAliases()), false)
	f.Add([]byte(growsAsJSON()), false)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		format := gleaner.FormatYAML
		if isJSON {
			format = gleaner.FormatJSON
		}
		spec, err := gleaner.DecodeSpec(data, format)
		if err != nil {
			return
		}
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("encoding %+v: %v", spec, err)
		}
		again, err := gleaner.DecodeSpec(raw, gleaner.FormatJSON)
		if err != nil {
			t.Fatalf("decoding its own encoding %s: %v", raw, err)
		}
		if !reflect.DeepEqual(spec, again) {
			t.Fatalf("round trip changed the spec:\n%+v\n%+v\nvia %s", spec, again, raw)
		}
		// The defaults and validation must not panic on anything decoded.
		_ = spec.WithDefaults().Validate()
	})
}

// An algorithm's settings section decodes strictly with the spec and is
// validated with it, naming the field.
func TestSearchSettingsSections(t *testing.T) {
	base := "name: s\ncommand: [t]\nobjective: {metric: loss}\nbudget: {max_trials: 4}\nspace:\n  - {name: lr, type: float, min: 0.001, max: 0.1, log: true}\n"
	spec, err := gleaner.DecodeAndValidate([]byte(base+"search: {algorithm: grid, grid: {resolution: 3, shuffle: false}}\n"), gleaner.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if g := spec.Search.Grid; g == nil || g.Resolution != 3 || g.Shuffle == nil || *g.Shuffle {
		t.Errorf("search.grid = %+v", g)
	}
	spec, err = gleaner.DecodeAndValidate([]byte(base+"search:\n  points:\n    - {lr: 0.01}\n    - {lr: 0.05}\n"), gleaner.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Search.Points) != 2 || spec.Search.Points[1]["lr"].Num != 0.05 {
		t.Errorf("search.points = %v", spec.Search.Points)
	}
	for _, tc := range []struct{ search, want string }{
		{"search: {algorithm: grid, grid: {resolutoin: 3}}\n", "search.grid.resolutoin: unknown field"},
		{"search: {points: [{lr: 5}]}\n", `points[0]: params: "lr" = 5 is not in [0.001, 0.1]`},
		{"search: {warm_start: [s]}\n", `search.warm_start[0]: "s" is this campaign`},
		{"search: {warm_start: [\"a b\"]}\n", "search.warm_start[0]"},
		{"search: {points: [{lr: [1]}]}\n", "search.points[0].lr: a list is not a number or a string"},
		{"search: {points: [{lr: 0.01, x: 1}]}\n", "points[0]: params: 2 values for 1 parameters"},
		{"search: {algorithm: grid, grid: {resolution: 1}}\n", "search.grid.resolution: 1 must be in 2..1000"},
		{"search: {algorithm: random, grid: {resolution: 3}}\n", "search.grid: settings of algorithm grid, but search.algorithm is random"},
		{"search: {algorithm: hyperopt}\n", `search.algorithm: "hyperopt" is not one of`},
	} {
		_, err := gleaner.DecodeAndValidate([]byte(base+tc.search), gleaner.FormatYAML)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", strings.TrimSpace(tc.search), err, tc.want)
		}
	}
}

// The search examples load and validate.
func TestSearchExampleSpecs(t *testing.T) {
	spec, err := gleaner.LoadAndValidate("examples/go-mlp/asha.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Search.Algorithm != "asha" || spec.Search.ASHA == nil || spec.Search.ASHA.Sampler != "tpe" || spec.Search.TPE == nil ||
		spec.Search.ASHA.Variant != hpo.VariantPromotion {
		t.Errorf("search %+v", spec.Search)
	}
	spec, err = gleaner.LoadAndValidate("examples/go-mlp/pbt.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Search.Algorithm != "pbt" || spec.Search.PBT == nil || spec.Search.PBT.Population != 8 {
		t.Errorf("search %+v", spec.Search)
	}
	if _, err := hpo.NewSearcher(spec.SearchConfig()); err != nil {
		t.Errorf("pbt.yaml's searcher: %v", err)
	}
}

// A grid cannot enumerate architectures: the spec says so when it is
// validated, not when the campaign starts.
func TestGridOverAnArchitectureIsInvalid(t *testing.T) {
	spec := gleaner.CampaignSpec{
		Name: "g", Pool: "p", Kind: "nas", Command: []string{"x"},
		Space:     hpo.Space{{Name: "arch", Type: hpo.ParamArch, Architecture: &hpo.ArchSpec{Cell: &hpo.CellSpace{}}}},
		Search:    gleaner.SearchSpec{Algorithm: "grid"},
		Objective: gleaner.ObjectiveSpec{Metric: "loss"},
		Budget:    gleaner.Budget{MaxTrials: 4},
	}
	err := spec.WithDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), "arch") {
		t.Fatalf("grid over an architecture: %v", err)
	}
	t.Log(err)
}

// resources.weight is decoded and validated: finite and not negative.
func TestResourcesWeight(t *testing.T) {
	spec, err := gleaner.DecodeSpec([]byte("name: w\ncommand: [t]\nobjective: {metric: m}\nbudget: {max_trials: 2}\nresources: {weight: 2.5}\n"), gleaner.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Resources.Weight != 2.5 {
		t.Fatalf("weight %v, want 2.5", spec.Resources.Weight)
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []float64{-1, math.Inf(1), math.NaN()} {
		spec.Resources.Weight = w
		if err := spec.WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "resources.weight") {
			t.Errorf("weight %v: %v, want an error naming resources.weight", w, err)
		}
	}
}
