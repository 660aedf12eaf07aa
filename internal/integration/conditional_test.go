package integration_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// The conditional examples as a user runs them, on a dev server with the
// real Python trainer: examples/python-minimal/conditional.yaml (when:
// and a forbidden clause, searched by TPE, which fits each parameter on
// the trials where it is active) and configspace.yaml (the same space
// read from a ConfigSpace JSON file, searched by evolution). Every trial
// completes, and every params file the trainer read holds exactly the
// parameters active in it, none forbidden.
func TestConditionalSpaceCampaigns(t *testing.T) {
	py := testenv.Python(t, "json")
	dir, err := filepath.Abs("../../examples/python-minimal")
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, devserver.Options{})
	cfg := testenv.Worker(t, srv, "conditional", nil)
	for _, tc := range []struct {
		file, algorithm string
		settings        hpo.Settings
	}{
		{"conditional.yaml", "tpe", hpo.Settings{TPE: &hpo.TPESettings{NStartupTrials: 4}}},
		{"configspace.yaml", "", hpo.Settings{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			spec, err := gleaner.LoadSpec(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			spec.Pool, spec.WorkDir, spec.Command[0] = "conditional", dir, py
			if tc.algorithm != "" {
				spec.Search.Algorithm, spec.Search.Settings = tc.algorithm, tc.settings
			}
			spec = spec.WithDefaults()
			if err := spec.Validate(); err != nil {
				t.Fatalf("spec: %v", err)
			}
			if !spec.Space.Conditional() || len(spec.Forbidden) == 0 {
				t.Fatalf("%s: space %+v forbidden %+v: want a conditional space with a forbidden clause", tc.file, spec.Space, spec.Forbidden)
			}
			res := campaignResult(t, startCampaign(t, srv.Client(), "conditional", spec), 4*time.Minute)
			if res.State != workflows.CampaignCompleted || res.Completed != spec.Budget.MaxTrials || res.Failed != 0 {
				t.Fatalf("result %s %+v, want %d trials completed", res.State, res.CampaignCounts, spec.Budget.MaxTrials)
			}
			files, long := 0, 0
			err = filepath.WalkDir(filepath.Join(cfg.DataDir, spec.Name), func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "params.json" {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				var p hpo.Params
				if err := json.Unmarshal(b, &p); err != nil {
					t.Errorf("%s: %v", path, err)
					return nil
				}
				files++
				if err := spec.Space.Contains(p); err != nil {
					t.Errorf("%s: %s: %v", path, b, err)
				}
				if !hpo.Allowed(spec.Space, spec.Forbidden, p) {
					t.Errorf("%s: %s is forbidden", path, b)
				}
				if _, ok := p["steps"]; ok {
					long++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if files < spec.Budget.MaxTrials {
				t.Errorf("%d params files, want one per trial (%d)", files, spec.Budget.MaxTrials)
			}
			t.Logf("%s: %d params files, %d with steps (schedule long)", tc.file, files, long)
		})
	}
}
