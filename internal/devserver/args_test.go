package devserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// `make devserver` starts the server by hand: its recipe carries the
// settings every dev server Gleaner starts runs with.
func TestMakeDevserverHasTheSettings(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(b), "\ndevserver:")
	if !ok {
		t.Fatal("the Makefile has no devserver target")
	}
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	if !strings.Contains(recipe, "$(DEVSERVER_DB)"+OnePartitionMark) {
		t.Errorf("make devserver does not follow the %s mark", OnePartitionMark)
	}
	for _, kv := range slices.Concat(tuning, partitionsOne) {
		if !strings.Contains(recipe, "--dynamic-config-value "+kv) {
			t.Errorf("make devserver lacks --dynamic-config-value %s", kv)
		}
	}
	for _, p := range filePragmas {
		if !strings.Contains(recipe, "--sqlite-pragma "+p) {
			t.Errorf("make devserver lacks --sqlite-pragma %s", p)
		}
	}
}

// A database gets one partition per task queue only from its start: in
// memory, or created now (and marked); one a server with four created
// keeps four, whose queued tasks one partition would strand.
func TestOnePartitionOnlyFromTheStart(t *testing.T) {
	dir := t.TempDir()
	if one, err := onePartition(""); err != nil || !one {
		t.Errorf("in memory: one partition = %v, %v; want true", one, err)
	}
	fresh := filepath.Join(dir, "fresh.db")
	for i := range 2 { // created, then reopened
		if one, err := onePartition(fresh); err != nil || !one {
			t.Errorf("a new database (%d): one partition = %v, %v; want true", i, one, err)
		}
		if err := os.WriteFile(fresh, []byte("db"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := filepath.Join(dir, "old.db")
	if err := os.WriteFile(old, []byte("db"), 0o644); err != nil {
		t.Fatal(err)
	}
	if one, err := onePartition(old); err != nil || one {
		t.Errorf("a database from before: one partition = %v, %v; want false", one, err)
	}
	if _, err := os.Stat(old + OnePartitionMark); err == nil {
		t.Error("a database from before was marked")
	}
}
