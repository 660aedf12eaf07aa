package trial

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
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

// hostLayout is the rendezvous a launcher gives each host of a run whose
// hosts hold locals[r] nodes each.
func hostLayout(master string, port int, locals ...int) []Rendezvous {
	nodes := 0
	for _, n := range locals {
		nodes += n
	}
	out := make([]Rendezvous, len(locals))
	offset := 0
	for r, n := range locals {
		out[r] = Rendezvous{
			NodeRank: r, NumHosts: len(locals), Nodes: nodes, LocalNodes: n, NodeOffset: offset,
			HostAddr: fmt.Sprintf("10.0.0.%d", r+1), MasterAddr: master, MasterPort: port,
		}
		offset += n
	}
	return out
}

// rendezvousVars is what a launcher sets for r: its Vars and GLEANER_NODES.
func rendezvousVars(r Rendezvous) map[string]string {
	m := map[string]string{EnvNodes: strconv.Itoa(r.Nodes)}
	for _, kv := range r.Vars() {
		m[kv[0]] = kv[1]
	}
	return m
}

func TestLoadRendezvousSingleHostDefaults(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want Rendezvous
	}{
		{"no rendezvous at all", map[string]string{EnvNodes: "3"},
			Rendezvous{NumHosts: 1, Nodes: 3, LocalNodes: 3, HostAddr: "127.0.0.1", MasterAddr: "127.0.0.1"}},
		{"one host, as a launcher sets it", map[string]string{EnvNodes: "2", EnvNumHosts: "1", EnvNodeRank: "0", EnvLocalNodes: "2", EnvNodeOffset: "0", EnvHostAddr: "10.1.2.3", EnvMasterAddr: "10.1.2.3", EnvMasterPort: "29500"},
			Rendezvous{NumHosts: 1, Nodes: 2, LocalNodes: 2, HostAddr: "10.1.2.3", MasterAddr: "10.1.2.3", MasterPort: 29500}},
		{"host address only", map[string]string{EnvNodes: "1", EnvHostAddr: "10.1.2.3"},
			Rendezvous{NumHosts: 1, Nodes: 1, LocalNodes: 1, HostAddr: "10.1.2.3", MasterAddr: "10.1.2.3"}},
		{"master address only", map[string]string{EnvNodes: "1", EnvMasterAddr: " ::1 ", EnvMasterPort: "80"},
			Rendezvous{NumHosts: 1, Nodes: 1, LocalNodes: 1, HostAddr: "::1", MasterAddr: "::1", MasterPort: 80}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoadRendezvousFrom(lookupIn(c.vars))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("rendezvous = %+v, want %+v", got, c.want)
			}
			if got.MultiHost() {
				t.Error("MultiHost on one host")
			}
		})
	}
}

// What a launcher sets (Rendezvous.Vars) is what a trainer reads, and the
// torch names carry the same facts.
func TestRendezvousVarsRoundTrip(t *testing.T) {
	for _, r := range append(hostLayout("10.0.0.1", 29500, 2, 1, 3), hostLayout("127.0.0.1", 0, 4)...) {
		vars := rendezvousVars(r)
		got, err := LoadRendezvousFrom(lookupIn(vars))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if got != r {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
		}
		port := ""
		if r.MasterPort != 0 {
			port = strconv.Itoa(r.MasterPort)
		}
		torch := map[string]string{
			EnvTorchMasterAddr: r.MasterAddr, EnvTorchMasterPort: port, EnvTorchWorldSize: strconv.Itoa(r.NumHosts),
			EnvTorchRank: strconv.Itoa(r.NodeRank), EnvTorchLocalRank: "0",
		}
		for k, v := range torch {
			if vars[k] != v {
				t.Errorf("host %d: %s=%q, want %q", r.NodeRank, k, vars[k], v)
			}
		}
		set := map[string]string{}
		for _, kv := range r.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			set[k] = v
		}
		if len(set) != len(r.Vars()) {
			t.Errorf("Environ has %d distinct names, Vars %d", len(set), len(r.Vars()))
		}
	}
	if got := (Rendezvous{MasterAddr: "fd00::1", MasterPort: 29500}).MasterHostPort(); got != "[fd00::1]:29500" {
		t.Errorf("MasterHostPort = %q", got)
	}
}

func TestLoadRendezvousErrorsNameTheVariable(t *testing.T) {
	cases := []struct {
		name   string
		change func(m map[string]string)
		want   string
	}{
		{"no nodes", func(m map[string]string) { delete(m, EnvNodes) }, EnvNodes},
		{"bad nodes", func(m map[string]string) { m[EnvNodes] = "x" }, EnvNodes},
		{"zero hosts", func(m map[string]string) { m[EnvNumHosts] = "0" }, EnvNumHosts},
		{"more hosts than nodes", func(m map[string]string) { m[EnvNumHosts] = "7" }, EnvNumHosts},
		{"no rank", func(m map[string]string) { delete(m, EnvNodeRank) }, EnvNodeRank},
		{"rank out of range", func(m map[string]string) { m[EnvNodeRank] = "3" }, EnvNodeRank},
		{"negative rank", func(m map[string]string) { m[EnvNodeRank] = "-1" }, EnvNodeRank},
		{"no local nodes", func(m map[string]string) { delete(m, EnvLocalNodes) }, EnvLocalNodes},
		{"zero local nodes", func(m map[string]string) { m[EnvLocalNodes] = "0" }, EnvLocalNodes},
		{"local nodes starve the others", func(m map[string]string) { m[EnvLocalNodes] = "5" }, EnvLocalNodes},
		{"no offset", func(m map[string]string) { delete(m, EnvNodeOffset) }, EnvNodeOffset},
		{"offset overlaps a lower host", func(m map[string]string) { m[EnvNodeOffset] = "0" }, EnvNodeOffset},
		{"offset leaves no node above", func(m map[string]string) { m[EnvNodeOffset] = "5" }, EnvNodeOffset},
		{"no host address", func(m map[string]string) { m[EnvHostAddr] = " " }, EnvHostAddr},
		{"no master address", func(m map[string]string) { delete(m, EnvMasterAddr) }, EnvMasterAddr},
		{"no master port", func(m map[string]string) { delete(m, EnvMasterPort) }, EnvMasterPort},
		{"port zero", func(m map[string]string) { m[EnvMasterPort] = "0" }, EnvMasterPort},
		{"port too large", func(m map[string]string) { m[EnvMasterPort] = "65536" }, EnvMasterPort},
		{"port not a number", func(m map[string]string) { m[EnvMasterPort] = "http" }, EnvMasterPort},
		{"one host, not every node", func(m map[string]string) {
			m[EnvNumHosts], m[EnvNodeRank], m[EnvNodeOffset] = "1", "0", "0"
		}, EnvLocalNodes},
		{"no hosts variable, not every node", func(m map[string]string) {
			delete(m, EnvNumHosts)
			m[EnvNodeRank], m[EnvNodeOffset] = "0", "0"
		}, EnvLocalNodes},
		{"rank 0 not at node 0", func(m map[string]string) { m[EnvNodeRank] = "0" }, EnvNodeOffset},
		{"last rank not at the end", func(m map[string]string) { m[EnvNodeRank] = "2" }, EnvNodeOffset},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars := rendezvousVars(hostLayout("10.0.0.1", 29500, 2, 2, 2)[1]) // rank 1: nodes 2 and 3 of 6
			c.change(vars)
			_, err := LoadRendezvousFrom(lookupIn(vars))
			if err == nil || !strings.HasPrefix(err.Error(), c.want+":") {
				t.Errorf("error = %v, want one naming %s", err, c.want)
			}
		})
	}
}

// Oracle: the layouts accepted are exactly those of some partition of the
// nodes into hosts of at least one node each, by brute force on small runs.
func TestLoadRendezvousAcceptsExactlyPartitions(t *testing.T) {
	type place struct{ hosts, rank, local, offset int }
	for nodes := 1; nodes <= 6; nodes++ {
		valid := map[place]bool{}
		var parts func(prefix []int, left int)
		parts = func(prefix []int, left int) {
			if left == 0 {
				off := 0
				for r, n := range prefix {
					valid[place{len(prefix), r, n, off}] = true
					off += n
				}
				return
			}
			for n := 1; n <= left; n++ {
				parts(append(prefix, n), left-n)
			}
		}
		parts(nil, nodes)
		for hosts := 1; hosts <= nodes+1; hosts++ {
			for rank := 0; rank <= hosts; rank++ {
				for local := 0; local <= nodes+1; local++ {
					for offset := 0; offset <= nodes+1; offset++ {
						vars := map[string]string{
							EnvNodes: strconv.Itoa(nodes), EnvNumHosts: strconv.Itoa(hosts), EnvNodeRank: strconv.Itoa(rank),
							EnvLocalNodes: strconv.Itoa(local), EnvNodeOffset: strconv.Itoa(offset),
							EnvHostAddr: "h", EnvMasterAddr: "m", EnvMasterPort: "1",
						}
						_, err := LoadRendezvousFrom(lookupIn(vars))
						p := place{hosts, rank, local, offset}
						if got := err == nil; got != valid[p] {
							t.Errorf("%d nodes, %+v: accepted %v (%v), want %v", nodes, p, got, err, valid[p])
						}
					}
				}
			}
		}
	}
}

// gleaner_trial.rendezvous() reads the same environments the same way, and
// rejects the same ones naming the same variable.
func TestPythonRendezvousAgrees(t *testing.T) {
	py := pythonOrSkip(t)
	envs := []map[string]string{
		{EnvNodes: "3"},
		{EnvNodes: "1", EnvMasterAddr: "::1", EnvMasterPort: "80"},
		{EnvNodes: "2", EnvNumHosts: "1", EnvLocalNodes: "1"},
		{EnvNodes: "4", EnvNumHosts: "2", EnvNodeRank: "1", EnvLocalNodes: "2", EnvNodeOffset: "1", EnvHostAddr: "h", EnvMasterAddr: "m", EnvMasterPort: "1"},
		{EnvNodes: "4", EnvNumHosts: "2", EnvNodeRank: "1", EnvLocalNodes: "2", EnvNodeOffset: "2", EnvHostAddr: "h", EnvMasterAddr: "m"},
		{EnvNodes: "4", EnvNumHosts: "2", EnvNodeRank: "1", EnvLocalNodes: "2", EnvNodeOffset: "2", EnvHostAddr: "h", EnvMasterAddr: "m", EnvMasterPort: "99999"},
		{EnvNodes: "5", EnvNumHosts: "6"},
		{EnvNodes: "0"},
	}
	for _, r := range hostLayout("10.0.0.1", 29500, 1, 3, 2) {
		envs = append(envs, rendezvousVars(r))
	}
	raw, _ := json.Marshal(envs)
	code := `
import dataclasses, json, sys
sys.path.insert(0, "python")
import gleaner_trial as gt
out = []
for e in json.loads(sys.stdin.read()):
    try:
        out.append({"ok": dataclasses.asdict(gt.rendezvous(e))})
    except gt.EnvError as err:
        out.append({"error": str(err)})
print(json.dumps(out))
`
	out := runPython(t, py, code, raw)
	var got []struct {
		OK *struct {
			NodeRank   int    `json:"node_rank"`
			NumHosts   int    `json:"num_hosts"`
			Nodes      int    `json:"nodes"`
			LocalNodes int    `json:"local_nodes"`
			NodeOffset int    `json:"node_offset"`
			HostAddr   string `json:"host_addr"`
			MasterAddr string `json:"master_addr"`
			MasterPort int    `json:"master_port"`
		}
		Error string
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(envs) {
		t.Fatalf("python said %s (%v)", out, err)
	}
	for i, e := range envs {
		want, err := LoadRendezvousFrom(lookupIn(e))
		switch g := got[i]; {
		case err != nil:
			name, _, _ := strings.Cut(err.Error(), ":")
			if g.OK != nil || !strings.HasPrefix(g.Error, name+":") {
				t.Errorf("%v: Go: %v; Python: %+v, %q", e, err, g.OK, g.Error)
			}
		case g.OK == nil:
			t.Errorf("%v: Go: %+v; Python: %s", e, want, g.Error)
		case Rendezvous(*g.OK) != want:
			t.Errorf("%v: Go: %+v; Python: %+v", e, want, *g.OK)
		}
	}
}

// gleaner_trial.env() reads the same budgets the same way, and rejects the
// same ones naming the same variable.
func TestPythonBudgetAgrees(t *testing.T) {
	py := pythonOrSkip(t)
	pairs := [][2]string{
		{"", ""}, {"", "steps"}, {"64000", "samples"}, {" 1e5 ", " steps "}, {"2.5", "epochs"}, {".5", "epochs"},
		{"+3.", "steps"}, {"5e-324", "samples"}, {"1e-400", "samples"}, {"3e21", "steps"}, {"0.1", "epochs"},
		{"0", "samples"}, {"-5", "samples"}, {"1e400", "samples"}, {"inf", "samples"}, {"nan", "epochs"},
		{"0x10", "steps"}, {"1_000", "samples"}, {"1e", "samples"}, {".", "samples"}, {"١٢", "samples"},
		{"100", ""}, {"100", "tokens"}, {"100", "Samples"},
	}
	base := envFixture(t, `{}`, "a\n", "1")
	var envs []map[string]string
	for _, p := range pairs {
		e := maps.Clone(base)
		e[EnvBudget], e[EnvBudgetUnit] = p[0], p[1]
		envs = append(envs, e)
	}
	raw, _ := json.Marshal(envs)
	code := `
import json, sys
sys.path.insert(0, "python")
import gleaner_trial as gt
out = []
for e in json.loads(sys.stdin.read()):
    try:
        env = gt.env(e)
        out.append({"ok": [env.budget, env.budget_unit]})
    except gt.EnvError as err:
        out.append({"error": str(err)})
print(json.dumps(out))
`
	out := runPython(t, py, code, raw)
	var got []struct {
		OK    *[2]any
		Error string
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(envs) {
		t.Fatalf("python said %s (%v)", out, err)
	}
	for i, p := range pairs {
		want, err := LoadEnvFrom(lookupIn(envs[i]))
		switch g := got[i]; {
		case err != nil:
			name, _, _ := strings.Cut(err.Error(), ":")
			if g.OK != nil || !strings.HasPrefix(g.Error, name+":") {
				t.Errorf("%q: Go: %v; Python: %v, %q", p, err, g.OK, g.Error)
			}
		case g.OK == nil:
			t.Errorf("%q: Go: %v %q; Python: %s", p, want.Budget, want.BudgetUnit, g.Error)
		case g.OK[0] != want.Budget || g.OK[1] != want.BudgetUnit:
			t.Errorf("%q: Go: %v %q; Python: %v %q", p, want.Budget, want.BudgetUnit, g.OK[0], g.OK[1])
		}
	}
}

// runPython runs code with py from the repository root, raw on its stdin,
// and returns its stdout.
func runPython(t *testing.T, py, code string, raw []byte) []byte {
	t.Helper()
	cmd := exec.Command(py, "-c", code)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return out
}
