package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The shipped binary carries no test code of Gleaner's: no package of this
// module imports "testing" into it. The Temporal SDK's own internal
// package does (its workflow test suite lives there, in a non-test file),
// so `testing` itself is linked; this test names that one importer and
// fails on any other.
func TestBinaryImportsNoTestingPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var importers []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if slices.Contains(f[1:], "testing") {
			importers = append(importers, f[0])
		}
	}
	allowed := []string{"go.temporal.io/sdk/internal"}
	for _, p := range importers {
		if !slices.Contains(allowed, p) {
			t.Errorf("%s imports testing into the gleaner binary (importers: %v)", p, importers)
		}
	}
}
