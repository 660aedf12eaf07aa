package cli

import (
	"os"
	"path/filepath"
	"strings"
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

// A --config takes several objectives, constraints and a reference
// point; a mistake in them names the field.
func TestSearchConfigObjectives(t *testing.T) {
	base := `"algorithm":"random","space":[{"name":"x","type":"float","min":0,"max":1}],"max_trials":4,"max_concurrent":1`
	two := `"objectives":[{"metric":"loss","mode":"min"},{"metric":"latency","mode":"max"}]`
	for _, c := range []struct{ extra, want string }{
		{two + `,"constraints":[{"metric":"mem","max":4}],"reference_point":[1,0]`, ""},
		{`"objectives":[{"metric":"loss","mode":"min"},{"metric":"latency","mode":"low"}]`, `objectives[1].mode: "low" is not one of min, max`},
		{two + `,"constraints":[{"metric":"mem"}]`, `constraints[0]: mem: give max, min or both`},
		{two + `,"reference_point":[1]`, `reference_point: 1 value for 2 objectives: give one per objective, in its own units`},
		{`"mode":"min","reference_point":[1]`, `reference_point: a hypervolume needs several objectives or a constraint; one objective has a best value`},
		{two + `,"mode":"max"`, `mode: "max" differs from objectives[0].mode "min"`},
		{two + `,"reference_points":[1,2]`, `json: unknown field "reference_points"`},
	} {
		path := filepath.Join(t.TempDir(), "c.json")
		if err := os.WriteFile(path, []byte(`{`+base+`,`+c.extra+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := searchConfig("", path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.extra, err)
		case c.want == "" && (len(cfg.Objectives) != 2 || cfg.Mode != "min" || len(cfg.ReferencePoint) != 2):
			t.Errorf("%s: read %+v", c.extra, cfg)
		case c.want != "" && (err == nil || !strings.HasSuffix(err.Error(), c.want)):
			t.Errorf("%s: %v, want …%s", c.extra, err, c.want)
		}
	}
}
