package trial

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPythonHelpers runs python/test_gleaner_trial.py, so `go test ./...`
// covers the Python side of the protocol too.
func TestPythonHelpers(t *testing.T) {
	py := pythonOrSkip(t)
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "python")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // no __pycache__ in the tree
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -m unittest discover -s python: %v\n%s", py, err, out)
	}
}

// TestPythonReportsParseInGo checks the two helpers agree on the line
// format: what gleaner_trial writes, ParseReport reads, nulls dropped.
func TestPythonReportsParseInGo(t *testing.T) {
	py := pythonOrSkip(t)
	path := filepath.Join(t.TempDir(), "reports.jsonl")
	code := `
import math, sys
sys.path.insert(0, "python")
import gleaner_trial as gt
with gt.Reporter(sys.argv[1], clock=lambda: 12.5) as r:
    r.report(samples=640, step=10, epoch=0.5, metrics={"loss": math.nan, "acc": 0.75})
    r.report(step=11, checkpoint="/ck/step-11.pt", time_s=13)
`
	cmd := exec.Command(py, "-c", code, path)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []Report
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		r, err := ParseReport(line)
		if err != nil {
			t.Fatalf("ParseReport(%s): %v", line, err)
		}
		got = append(got, r)
	}
	want := []Report{
		{Samples: 640, Step: 10, Epoch: 0.5, Metrics: map[string]float64{"acc": 0.75}, Time: 12.5},
		{Step: 11, Checkpoint: "/ck/step-11.pt", Time: 13},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reports:\n got %+v\nwant %+v", got, want)
	}
}

func pythonOrSkip(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	return py
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
