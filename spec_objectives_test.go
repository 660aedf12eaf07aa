package gleaner_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// vectorAlgorithm is an algorithm that takes several objectives and no
// settings (random), or "" when this build has none.
func vectorAlgorithm() string {
	if v := hpo.VectorAlgorithms(); slices.Contains(v, hpo.AlgorithmRandom) {
		return hpo.AlgorithmRandom // needs no settings
	}
	return ""
}

const objectivesBase = "name: s\ncommand: [t]\nbudget: {max_trials: 4}\nspace:\n  - {name: lr, type: float, min: 0.001, max: 0.1, log: true}\n"

// Several objectives, constraints and a reference point decode into the
// spec and into the searcher's config; one objective stays as it was.
func TestSpecObjectives(t *testing.T) {
	alg := vectorAlgorithm()
	if alg == "" {
		t.Skip("no algorithm of this build takes several objectives yet")
	}
	spec, err := gleaner.DecodeAndValidate([]byte(objectivesBase+"search: {algorithm: "+alg+"}\n"+
		"objectives: [{metric: loss}, {metric: acc, mode: max}]\n"+
		"constraints: [{metric: latency_ms, max: 20}, {metric: params, min: 1, max: 5e6}]\n"+
		"reference_point: [1, 0.5]\n"), gleaner.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	want := []hpo.Objective{{Metric: "loss", Mode: "min"}, {Metric: "acc", Mode: "max"}}
	if got := spec.ObjectiveList(); !reflect.DeepEqual(got, want) {
		t.Errorf("objectives %v, want %v", got, want)
	}
	cfg := spec.SearchConfig()
	if !reflect.DeepEqual(cfg.Objectives, want) || cfg.Mode != "min" || len(cfg.Constraints) != 2 ||
		*cfg.Constraints[0].Max != 20 || *cfg.Constraints[1].Min != 1 || !cfg.MultiObjective() {
		t.Errorf("search config %+v", cfg)
	}
	if !spec.MultiObjective() || spec.PrimaryObjective().Metric != "loss" || !reflect.DeepEqual(spec.ReferencePoint, []float64{1, 0.5}) {
		t.Errorf("spec %+v", spec)
	}
	if spec.Objective != (gleaner.ObjectiveSpec{}) {
		t.Errorf("objective %+v set from objectives", spec.Objective)
	}
}

// A single objective's spec and search config are as before objectives
// existed.
func TestSpecOneObjective(t *testing.T) {
	spec, err := gleaner.DecodeAndValidate([]byte(objectivesBase+"objective: {metric: loss, mode: max}\n"), gleaner.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	cfg := spec.SearchConfig()
	if cfg.Objectives != nil || cfg.Constraints != nil || cfg.Mode != "max" || spec.MultiObjective() {
		t.Errorf("search config %+v", cfg)
	}
	if got := spec.ObjectiveList(); !reflect.DeepEqual(got, []hpo.Objective{{Metric: "loss", Mode: "max"}}) {
		t.Errorf("objectives %v", got)
	}
}

// Every mistake in objectives, constraints and reference_point is an
// error naming the field.
func TestSpecObjectivesErrors(t *testing.T) {
	alg := vectorAlgorithm()
	search := ""
	if alg != "" {
		search = "search: {algorithm: " + alg + "}\n"
	}
	two := "objectives: [{metric: loss}, {metric: acc, mode: max}]\n"
	cases := []struct{ spec, want string }{
		{"objective: {metric: loss}\nobjectives: [{metric: a}, {metric: b}]\n", "objectives: objective is set too: give objective (one) or objectives (two or more), not both"},
		{"objective: {mode: max}\nobjectives: [{metric: a}, {metric: b}]\n", "objectives: objective is set too"},
		{"objectives: [{metric: a}]\n", "objectives: one objective: write it as objective: {metric: a}"},
		{"objectives: [{metric: a}, {mode: max}]\n", "objectives[1].metric: empty"},
		{"objectives: [{metric: a}, {metric: b, mode: up}]\n", `objectives[1].mode: "up" is not one of min, max`},
		{"objectives: [{metric: a}, {metric: a, mode: max}]\n", `objectives[1].metric: "a" is objectives[0] already`},
		{"objectives: [{metric: a, mode: max, weight: 2}, {metric: b}]\n", "objectives[0].weight: unknown field"},
		{"objectives: {metric: a}\n", "objectives: a mapping is not a list"},
		{two + "constraints: [{max: 3}]\n", "constraints[0].metric: empty"},
		{two + "constraints: [{metric: lat}]\n", "constraints[0]: lat has no bound: give max, min or both"},
		{two + "constraints: [{metric: lat, min: 5, max: 3}]\n", "constraints[0]: min 5 > max 3"},
		{two + "constraints: [{metric: lat, max: .inf}]\n", "constraints[0].max"},
		{two + "constraints: [{metric: lat, max: fast}]\n", "constraints[0].max"},
		{two + "reference_point: [1]\n", "reference_point: 1 values for 2 objectives"},
		{two + "reference_point: [1, .nan]\n", "reference_point[1]"},
		{"objective: {metric: loss}\nreference_point: [1]\n", "reference_point: a hypervolume needs several objectives or a constraint"},
		{"objectives: [{metric: acc, mode: max}, {metric: predicted_ms_per_sample}]\n", "objectives[1].metric: predicted_ms_per_sample is predicted from a trial's architecture: only a kind: nas campaign has it"},
		{two + "constraints: [{metric: predicted_samples_per_second, min: 100}]\n", "constraints[0].metric: predicted_samples_per_second is predicted"},
		{"objective: {metric: predicted_ms_per_sample}\n", "objective.metric: predicted_ms_per_sample is predicted"},
		{"objective: {metric: loss}\n", ""},
		{"budget: {max_trials: 4}\n", "objective.metric: empty"},
	}
	for _, tc := range cases {
		s := objectivesBase + search + tc.spec
		if strings.HasPrefix(tc.spec, "budget:") {
			s = strings.Replace(objectivesBase, "budget: {max_trials: 4}\n", "", 1) + tc.spec
		}
		_, err := gleaner.DecodeAndValidate([]byte(s), gleaner.FormatYAML)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", strings.TrimSpace(tc.spec), err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", strings.TrimSpace(tc.spec), err, tc.want)
		}
	}
}

// An algorithm that takes one objective refuses several, naming those
// that take them.
func TestSpecObjectivesAlgorithm(t *testing.T) {
	_, err := gleaner.DecodeAndValidate([]byte(objectivesBase+"search: {algorithm: grid}\n"+
		"objectives: [{metric: loss}, {metric: acc, mode: max}]\n"), gleaner.FormatYAML)
	if err == nil || !strings.Contains(err.Error(), "search.algorithm: grid takes one objective and no constraints; with several objectives or constraints") {
		t.Fatalf("grid with two objectives: %v", err)
	}
	_, err = gleaner.DecodeAndValidate([]byte(objectivesBase+"search: {algorithm: grid}\nobjective: {metric: loss}\n"+
		"constraints: [{metric: lat, max: 3}]\n"), gleaner.FormatYAML)
	if err == nil || !strings.Contains(err.Error(), "search.algorithm: grid takes one objective and no constraints") {
		t.Fatalf("grid with a constraint: %v", err)
	}
}
