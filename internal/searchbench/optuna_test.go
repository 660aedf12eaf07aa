package searchbench

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
)

// optunaPython returns an interpreter that can import optuna:
// $GLEANER_PYTHON, then python3 on PATH, then /usr/bin/python3 (Debian's
// python3-optuna serves the system interpreter, which a pyenv python3 may
// shadow). Without one the test skips, or fails when
// GLEANER_REQUIRE_OPTUNA=1 (CI).
func optunaPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{os.Getenv("GLEANER_PYTHON"), "python3", "/usr/bin/python3"} {
		if py == "" {
			continue
		}
		if path, err := exec.LookPath(py); err == nil && exec.Command(path, "-c", "import optuna").Run() == nil {
			return path
		}
	}
	msg := "no python3 that can import optuna (apt-get install python3-optuna, or set GLEANER_PYTHON)"
	if os.Getenv("GLEANER_REQUIRE_OPTUNA") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// scripts/search_vs_optuna.py runs: Optuna's samplers and pruners and
// Gleaner's searchers (through gleaner search, promotion and PBT
// included) on a function, the learning curves and the toy problem, and
// prints a row per method.
func TestSearchVsOptunaScriptRuns(t *testing.T) {
	py := optunaPython(t)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(t.TempDir(), "gleaner")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gleaner")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(py, filepath.Join(root, "scripts", "search_vs_optuna.py"), "--gleaner", bin, "--seeds", "2",
		"--trials", "30", "--at", "10,30", "--objectives", "branin,go-mlp,pbt-toy",
		"--methods", "optuna-tpe,optuna-sha,gleaner-tpe,gleaner-asha,gleaner-hyperband,gleaner-asha-promotion,gleaner-pbt")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, row := range []string{`\| branin \| 0.397887 \| optuna-tpe \| [0-9.]+ \[`, `\| go-mlp \| 0.0168562 \| gleaner-asha \| [0-9.]+ \[`,
		`\| go-mlp \| 0.0168562 \| gleaner-hyperband \|`, `\| go-mlp \| 0.0168562 \| gleaner-asha-promotion \| [0-9.]+ \[`,
		`\| pbt-toy \| -0.878189 \| gleaner-pbt \| -0.[0-9]+ \[`} {
		if !regexp.MustCompile(row).Match(out) {
			t.Errorf("no row %s in:\n%s", row, out)
		}
	}
}
