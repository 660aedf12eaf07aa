package trial

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// envFixture writes a params file and a hostfile and returns the variables
// a launcher would set for them.
func envFixture(t *testing.T, params string, hosts string, nodes string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	pf := filepath.Join(dir, "params.json")
	hf := filepath.Join(dir, "hostfile")
	if err := os.WriteFile(pf, []byte(params), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hf, []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		EnvTrialID:       "t-7",
		EnvCampaignID:    "c-1",
		EnvParamsFile:    pf,
		EnvNodes:         nodes,
		EnvHostfile:      hf,
		EnvCheckpointDir: filepath.Join(dir, "ckpt"),
		EnvResumeFrom:    "",
		EnvReportFile:    filepath.Join(dir, "reports.jsonl"),
	}
}

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadEnv(t *testing.T) {
	vars := envFixture(t, `{"lr": 0.01, "hidden": 32, "batch": "64", "act": "relu", "fast": "true"}`, "node-a\n\n  node-b  \n", "2")
	e, err := LoadEnvFrom(lookupIn(vars))
	if err != nil {
		t.Fatal(err)
	}
	if e.TrialID != "t-7" || e.CampaignID != "c-1" || e.Nodes != 2 || e.Resuming() {
		t.Errorf("env = %+v", e)
	}
	if want := []string{"node-a", "node-b"}; !reflect.DeepEqual(e.Hosts, want) {
		t.Errorf("hosts = %q, want %q", e.Hosts, want)
	}
	if len(e.Params) != 5 {
		t.Errorf("params = %v", e.Params)
	}

	type hyper struct {
		LR     Number `json:"lr"`
		Hidden Number `json:"hidden"`
		Batch  Number `json:"batch"`
		Steps  Number `json:"steps"`
		Act    string `json:"act"`
		Fast   Flag   `json:"fast"`
	}
	h := hyper{Steps: 100}
	if err := e.DecodeParams(&h); err != nil {
		t.Fatal(err)
	}
	want := hyper{LR: 0.01, Hidden: 32, Batch: 64, Steps: 100, Act: "relu", Fast: true}
	if h != want {
		t.Errorf("params = %+v, want %+v", h, want)
	}
}

// What a launcher sets (Env.Vars) is what a trainer reads (LoadEnvFrom),
// with and without a budget.
func TestEnvVarsRoundTrip(t *testing.T) {
	budgets := []struct {
		budget float64
		unit   string
	}{{0, ""}, {64000, BudgetSamples}, {2.5, BudgetEpochs}, {1e-7, BudgetSteps}, {3e21, BudgetSamples}, {1.0 / 3, BudgetEpochs}}
	for _, b := range budgets {
		vars := envFixture(t, `{"lr": 0.01}`, "node-a\nnode-b\n", "2")
		e, err := LoadEnvFrom(lookupIn(vars))
		if err != nil {
			t.Fatal(err)
		}
		e.Budget, e.BudgetUnit = b.budget, b.unit
		set := map[string]string{}
		for _, kv := range e.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			set[k] = v
		}
		for _, kv := range e.Vars() {
			if set[kv[0]] != kv[1] {
				t.Errorf("Environ has %s=%q, Vars %q", kv[0], set[kv[0]], kv[1])
			}
		}
		again, err := LoadEnvFrom(lookupIn(set))
		if err != nil {
			t.Fatalf("budget %v %s: %v", b.budget, b.unit, err)
		}
		if !reflect.DeepEqual(again, e) {
			t.Errorf("round trip:\n%+v\n%+v", again, e)
		}
	}
}

// Vars ends with the budget, after GLEANER_REPORT_FILE, both empty without
// one (even with a unit), and writes budgets as plain decimals.
func TestEnvVarsBudget(t *testing.T) {
	tail := func(e Env) [][2]string { v := e.Vars(); return v[len(v)-3:] }
	cases := []struct {
		env  Env
		want [][2]string
	}{
		{Env{ReportFile: "r"}, [][2]string{{EnvReportFile, "r"}, {EnvBudget, ""}, {EnvBudgetUnit, ""}}},
		{Env{ReportFile: "r", BudgetUnit: BudgetSteps}, [][2]string{{EnvReportFile, "r"}, {EnvBudget, ""}, {EnvBudgetUnit, ""}}},
		{Env{ReportFile: "r", Budget: 1e6, BudgetUnit: BudgetSamples}, [][2]string{{EnvReportFile, "r"}, {EnvBudget, "1000000"}, {EnvBudgetUnit, BudgetSamples}}},
		{Env{ReportFile: "r", Budget: 0.25, BudgetUnit: BudgetEpochs}, [][2]string{{EnvReportFile, "r"}, {EnvBudget, "0.25"}, {EnvBudgetUnit, BudgetEpochs}}},
	}
	for _, c := range cases {
		if got := tail(c.env); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Vars of %+v ends with %q, want %q", c.env, got, c.want)
		}
	}
}

func TestLoadEnvBudget(t *testing.T) {
	cases := []struct {
		budget, unit string
		want         float64
		wantUnit     string
	}{
		{"", "", 0, ""},
		{"  ", BudgetSamples, 0, ""}, // a unit without a budget is ignored
		{"64000", BudgetSamples, 64000, BudgetSamples},
		{" 1e5 ", " steps ", 1e5, BudgetSteps},
		{"2.5", BudgetEpochs, 2.5, BudgetEpochs},
		{".5", BudgetEpochs, 0.5, BudgetEpochs},
		{"+3.", BudgetSteps, 3, BudgetSteps},
		{"5e-324", BudgetSamples, 5e-324, BudgetSamples},
	}
	for _, c := range cases {
		vars := envFixture(t, `{}`, "a\n", "1")
		vars[EnvBudget], vars[EnvBudgetUnit] = c.budget, c.unit
		e, err := LoadEnvFrom(lookupIn(vars))
		if err != nil || e.Budget != c.want || e.BudgetUnit != c.wantUnit {
			t.Errorf("%s=%q %s=%q: budget %v %q, %v; want %v %q", EnvBudget, c.budget, EnvBudgetUnit, c.unit, e.Budget, e.BudgetUnit, err, c.want, c.wantUnit)
		}
	}
}

func TestBudgetReached(t *testing.T) {
	cases := []struct {
		env     Env
		samples float64
		step    int64
		epoch   float64
		want    bool
	}{
		{Env{}, 1e18, 1 << 62, 1e9, false},
		{Env{BudgetUnit: BudgetSamples}, 1e18, 1 << 62, 1e9, false},
		{Env{Budget: 6400, BudgetUnit: BudgetSamples}, 6336, 99, 5, false},
		{Env{Budget: 6400, BudgetUnit: BudgetSamples}, 6400, 100, 0, true},
		{Env{Budget: 6400, BudgetUnit: BudgetSamples}, 6464, 0, 0, true},
		{Env{Budget: 100, BudgetUnit: BudgetSteps}, 1e9, 99, 1e9, false},
		{Env{Budget: 100, BudgetUnit: BudgetSteps}, 0, 100, 0, true},
		{Env{Budget: 99.5, BudgetUnit: BudgetSteps}, 0, 100, 0, true},
		{Env{Budget: 2, BudgetUnit: BudgetEpochs}, 1e9, 1e9, 1.99, false},
		{Env{Budget: 2, BudgetUnit: BudgetEpochs}, 0, 0, 2, true},
		{Env{Budget: 0.1, BudgetUnit: BudgetEpochs}, 0, 0, 240.0 / 2400, true}, // the same rounding both sides
		{Env{Budget: 5, BudgetUnit: "bananas"}, 10, 10, 10, false},
	}
	for _, c := range cases {
		if got := c.env.BudgetReached(c.samples, c.step, c.epoch); got != c.want {
			t.Errorf("%+v.BudgetReached(%v, %d, %v) = %v, want %v", c.env, c.samples, c.step, c.epoch, got, c.want)
		}
	}
}

func TestLoadEnvErrorsNameTheVariable(t *testing.T) {
	cases := []struct {
		name   string
		change func(m map[string]string)
		want   string
	}{
		{"no params file", func(m map[string]string) { delete(m, EnvParamsFile) }, EnvParamsFile},
		{"missing params file", func(m map[string]string) { m[EnvParamsFile] += ".nope" }, EnvParamsFile},
		{"no report file", func(m map[string]string) { m[EnvReportFile] = " " }, EnvReportFile},
		{"no checkpoint dir", func(m map[string]string) { delete(m, EnvCheckpointDir) }, EnvCheckpointDir},
		{"no nodes", func(m map[string]string) { delete(m, EnvNodes) }, EnvNodes},
		{"zero nodes", func(m map[string]string) { m[EnvNodes] = "0" }, EnvNodes},
		{"bad nodes", func(m map[string]string) { m[EnvNodes] = "two" }, EnvNodes},
		{"hosts mismatch", func(m map[string]string) { m[EnvNodes] = "3" }, EnvHostfile},
		{"missing hostfile", func(m map[string]string) { m[EnvHostfile] += ".nope" }, EnvHostfile},
		{"missing resume", func(m map[string]string) { m[EnvResumeFrom] = "/nonexistent/ckpt" }, EnvResumeFrom},
		{"zero budget", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "0", BudgetSamples }, EnvBudget},
		{"negative budget", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "-5", BudgetSamples }, EnvBudget},
		{"infinite budget", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "1e400", BudgetSamples }, EnvBudget},
		{"inf budget", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "inf", BudgetSamples }, EnvBudget},
		{"nan budget", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "NaN", BudgetSamples }, EnvBudget},
		{"hex budget", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "0x10", BudgetSamples }, EnvBudget},
		{"underscored budget", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "1_000", BudgetSamples }, EnvBudget},
		{"word budget", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "lots", BudgetSamples }, EnvBudget},
		{"budget without unit", func(m map[string]string) { m[EnvBudget] = "100" }, EnvBudgetUnit},
		{"budget with empty unit", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "100", " " }, EnvBudgetUnit},
		{"unknown unit", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "100", "tokens" }, EnvBudgetUnit},
		{"unit in capitals", func(m map[string]string) { m[EnvBudget], m[EnvBudgetUnit] = "100", "Samples" }, EnvBudgetUnit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars := envFixture(t, `{}`, "a\nb\n", "2")
			c.change(vars)
			_, err := LoadEnvFrom(lookupIn(vars))
			if err == nil || !strings.HasPrefix(err.Error(), c.want+":") {
				t.Errorf("error = %v, want one starting with %s:", err, c.want)
			}
		})
	}
}

func TestLoadEnvParamsMustBeAnObject(t *testing.T) {
	for _, body := range []string{`[1,2]`, `null`, `{"lr":`, ``} {
		vars := envFixture(t, body, "a\n", "1")
		if _, err := LoadEnvFrom(lookupIn(vars)); err == nil || !strings.Contains(err.Error(), EnvParamsFile) {
			t.Errorf("params %q: error = %v, want one naming %s", body, err, EnvParamsFile)
		}
	}
}

func TestLoadEnvWithoutHostfile(t *testing.T) {
	vars := envFixture(t, `{}`, "", "4")
	delete(vars, EnvHostfile)
	e, err := LoadEnvFrom(lookupIn(vars))
	if err != nil || e.Nodes != 4 || e.Hosts != nil {
		t.Fatalf("env = %+v, %v", e, err)
	}
}

func TestDecodeParamsErrorNamesTheFile(t *testing.T) {
	vars := envFixture(t, `{"hidden": "wide"}`, "a\n", "1")
	e, err := LoadEnvFrom(lookupIn(vars))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Hidden Number `json:"hidden"`
	}
	if err := e.DecodeParams(&h); err == nil || !strings.Contains(err.Error(), EnvParamsFile) {
		t.Errorf("error = %v, want one naming %s", err, EnvParamsFile)
	}
}

func TestNumberAndFlag(t *testing.T) {
	for in, want := range map[string]Number{`3`: 3, `"64"`: 64, `" 1e-3 "`: 1e-3, `-2.5`: -2.5} {
		var n Number
		if err := n.UnmarshalJSON([]byte(in)); err != nil || n != want {
			t.Errorf("Number(%s) = %v, %v; want %v", in, n, err, want)
		}
	}
	for _, in := range []string{`"x"`, `true`, `{}`} {
		var n Number
		if err := n.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("Number(%s) accepted", in)
		}
	}
	for in, want := range map[string]Flag{`true`: true, `false`: false, `"True"`: true, `"false"`: false, `1`: true, `0`: false, `"1"`: true} {
		var f Flag
		if err := f.UnmarshalJSON([]byte(in)); err != nil || f != want {
			t.Errorf("Flag(%s) = %v, %v; want %v", in, f, err, want)
		}
	}
	var f Flag
	if err := f.UnmarshalJSON([]byte(`"maybe"`)); err == nil {
		t.Error(`Flag("maybe") accepted`)
	}
}
