package hpo

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

func readConfigSpaceFile(t *testing.T, name string) (Space, []Forbidden) {
	t.Helper()
	data, err := os.ReadFile("testdata/configspace/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s, f, err := ReadConfigSpace(data)
	if err != nil {
		t.Fatal(err)
	}
	return s, f
}

// auto-sklearn's libsvm_svc space: kernel before the parameters that
// depend on it, gamma's OR of EQs one condition, a boolean choice as
// Python writes it, a constant a choice of one.
func TestReadConfigSpaceSVM(t *testing.T) {
	s, f := readConfigSpaceFile(t, "svm.json")
	if len(f) != 0 {
		t.Errorf("forbidden %v, want none", f)
	}
	got, _ := json.Marshal(s)
	want := `[{"name":"C","type":"float","min":0.03125,"max":32768,"log":true},` +
		`{"name":"kernel","type":"choice","choices":["rbf","poly","sigmoid"]},` +
		`{"name":"max_iter","type":"choice","choices":["-1"]},` +
		`{"name":"shrinking","type":"choice","choices":["True","False"]},` +
		`{"name":"tol","type":"float","min":0.00001,"max":0.1,"log":true},` +
		`{"name":"coef0","type":"float","min":-1,"max":1,"when":{"param":"kernel","values":["poly","sigmoid"]}},` +
		`{"name":"degree","type":"int","min":2,"max":5,"when":{"param":"kernel","values":["poly"]}},` +
		`{"name":"gamma","type":"float","min":0.000030517578125,"max":8,"log":true,"when":{"param":"kernel","values":["rbf","poly","sigmoid"]}}]`
	if string(got) != want {
		t.Errorf("space\n got %s\nwant %s", got, want)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		p := s.Sample(rng)
		_, hasDegree := p["degree"]
		if hasDegree != (p["kernel"].Str == "poly") {
			t.Fatalf("%v: degree with kernel %s", p, p["kernel"].Str)
		}
	}
}

// auto-sklearn's liblinear_svc space: forbidden ANDs of EQUALS, with a
// constant in them.
func TestReadConfigSpaceForbidden(t *testing.T) {
	s, f := readConfigSpaceFile(t, "liblinear.json")
	if len(f) != 3 || f[1].String() != "dual = False and penalty = l2 and loss = hinge" {
		t.Fatalf("forbidden %v", f)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for range 200 {
		p, err := s.SampleAllowed(rng, f)
		if err != nil {
			t.Fatal(err)
		}
		if p["penalty"].Str != "l2" || p["loss"].Str != "squared_hinge" {
			t.Fatalf("%v: only penalty l2 with squared_hinge is allowed", p)
		}
	}
	// An int parent's values, numbers in the file, match its integers.
	m, mf := readConfigSpaceFile(t, "mlp.json")
	if err := (Config{Algorithm: AlgorithmRandom, Space: m, Forbidden: mf, MaxTrials: 1, MaxConcurrent: 1, Mode: "min"}).Validate(); err != nil {
		t.Fatal(err)
	}
	if w := m[m.Index("width_2")].When; w.String() != "n_layers in [2, 3]" {
		t.Errorf("width_2 when %v", w)
	}
}

// What is not supported is refused, naming it.
func TestReadConfigSpaceRefuses(t *testing.T) {
	const kernel = `{"name": "kernel", "type": "categorical", "choices": ["rbf", "poly"]}`
	const degree = `{"name": "degree", "type": "uniform_int", "lower": 2, "upper": 5}`
	doc := func(hypers, conds, forbs string) string {
		return `{"hyperparameters": [` + hypers + `], "conditions": [` + conds + `], "forbiddens": [` + forbs + `]}`
	}
	for _, tc := range []struct{ doc, want string }{
		{doc(`{"name": "x", "type": "normal_float", "mu": 0, "sigma": 1}`, "", ""),
			`hyperparameters[0] (x): type "normal_float" is not supported`},
		{doc(`{"name": "x", "type": "uniform_int", "lower": 0, "upper": 10, "q": 2}`, "", ""),
			`hyperparameters[0] (x): q: quantization (q = 2) is not supported`},
		{doc(`{"name": "x", "type": "categorical", "choices": ["a", "b"], "weights": [1, 2]}`, "", ""),
			`hyperparameters[0] (x): weights: non-uniform categorical weights are not supported`},
		{doc(kernel+","+degree, `{"child": "degree", "parent": "kernel", "type": "NEQ", "value": "rbf"}`, ""),
			`conditions[0] (child degree): condition type "NEQ" is not supported`},
		{doc(kernel+","+degree, `{"child": "degree", "type": "AND", "conditions": []}`, ""),
			`conditions[0] (child degree): condition type "AND" is not supported`},
		{doc(kernel+","+degree+`,{"name": "k2", "type": "categorical", "choices": ["a"]}`,
			`{"child": "degree", "parent": "kernel", "type": "EQ", "value": "poly"}, {"child": "degree", "parent": "k2", "type": "EQ", "value": "a"}`, ""),
			`conditions[1] (child degree): a second condition (the first is conditions[0]); a child of two conditions is not supported`},
		{doc(kernel+","+degree+`,{"name": "k2", "type": "categorical", "choices": ["a"]}`,
			`{"child": "degree", "type": "OR", "conditions": [{"parent": "kernel", "type": "EQ", "value": "poly"}, {"parent": "k2", "type": "EQ", "value": "a"}]}`, ""),
			`OR of conditions on two parents (kernel, k2) is not supported`},
		{doc(kernel+","+degree, `{"child": "kernel", "parent": "degree", "type": "GT", "value": 3}`, ""),
			`conditions[0] (child kernel): condition type "GT" is not supported`},
		{doc(kernel+","+degree, "", `{"left": "degree", "right": "degree", "type": "RELATION", "lambda": "LESS"}`),
			`forbiddens[0]: forbidden type "RELATION" is not supported`},
		{doc(kernel+`,{"name": "x", "type": "uniform_float", "lower": 0, "upper": 1}`, `{"child": "kernel", "parent": "x", "type": "EQ", "value": 0.5}`, ""),
			`configspace: space[1].when.param: "x" is of type float; only a choice or an int parameter can be named`},
		{doc(kernel, "", `{"name": "kernel", "type": "EQUALS", "value": "linear"}`),
			`configspace: forbidden[0].all[0].values[0]: "linear" is not one of "kernel"'s choices`},
		{`{"hyperparameters": []}`, `configspace: hyperparameters: none`},
		{`{"hyperparameters": [`, `configspace: unexpected EOF`},
	} {
		_, _, err := ReadConfigSpace([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", tc.doc, err, tc.want)
		}
	}
}
