package testenv

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

var pythons sync.Map // import statement → interpreter path ("" if none)

// Python returns a python3 that can import every module named (e.g.
// "torch", "sklearn.datasets"): $GLEANER_PYTHON, then python3 on PATH, then
// /usr/bin/python3 (Debian's python3-torch and python3-sklearn install for
// the system interpreter, which a pyenv python3 may shadow). Without one
// the test skips, or fails when GLEANER_REQUIRE_TORCH is set (CI sets it).
// The search runs once per module set: importing torch takes seconds.
func Python(t testing.TB, modules ...string) string {
	t.Helper()
	stmt := "import " + strings.Join(modules, ", ")
	v, ok := pythons.Load(stmt)
	if !ok {
		v, _ = pythons.LoadOrStore(stmt, findPython(stmt))
	}
	if py := v.(string); py != "" {
		return py
	}
	msg := "there is no python3 that can " + stmt + " (apt-get install python3-torch python3-sklearn, or set GLEANER_PYTHON)"
	if os.Getenv("GLEANER_REQUIRE_TORCH") != "" {
		t.Fatal("GLEANER_REQUIRE_TORCH is set, but " + msg)
	}
	t.Skip(msg)
	return ""
}

func findPython(stmt string) string {
	for _, py := range []string{os.Getenv("GLEANER_PYTHON"), "python3", "/usr/bin/python3"} {
		if py == "" {
			continue
		}
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", stmt).Run() == nil {
			return path
		}
	}
	return ""
}
