package trial

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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
