package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// A --config that names no revision is a new search and gets this build's
// rules; one that names a revision keeps it.
func TestSearchConfigRevision(t *testing.T) {
	for _, c := range []struct {
		extra string
		want  int
	}{{"", hpo.Revision}, {`,"revision":0`, 0}, {`,"revision":1`, 1}} {
		path := filepath.Join(t.TempDir(), "c.json")
		cfg := `{"algorithm":"random","space":[{"name":"x","type":"float","min":0,"max":1}],"max_trials":4,"max_concurrent":1,"mode":"min"` + c.extra + `}`
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := searchConfig("", path)
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		if got.Revision != c.want {
			t.Errorf("%s: revision %d, want %d", cfg, got.Revision, c.want)
		}
	}
}
