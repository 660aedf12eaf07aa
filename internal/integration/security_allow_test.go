package integration_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// A `gleaner worker --allow-command DIR/**` runs the trainers under DIR,
// with a scrubbed environment, and refuses any other: the refused trial
// fails at once (no restart, whatever max_restarts), its error naming the
// command and the flag, and the command never runs.
func TestDisallowedTrainerFailsAtOnce(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	trainers := filepath.Dir(testenv.GoMLP(t))
	w := startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: "security-allow",
		Args: []string{"--allow-command", trainers + "/**"}})
	if strings.Contains(w.Log(), "any trainer command may run") {
		t.Errorf("the worker warns that any command may run, with --allow-command given:\n%s", w.Log())
	}
	c := srv.Client()

	marker := filepath.Join(t.TempDir(), "ran")
	refused := testenv.MLPSpec(t, "refused", 1, 1, 20, 5)
	refused.Command = []string{"/bin/sh", "-c", "touch " + marker}
	refused.Trial.MaxRestarts = 3
	allowed := testenv.MLPSpec(t, "allowed", 1, 1, 20, 5)

	refusedRun := startCampaign(t, c, "security-allow", refused)
	allowedRun := startCampaign(t, c, "security-allow", allowed)

	// Its only trial failed: the campaign ends at budget.max_failures.
	if err := refusedRun.Get(testContext(t, 2*time.Minute), nil); err == nil || !strings.Contains(err.Error(), "max_failures") {
		t.Errorf("refused campaign: %v, want it ended by its failed trial", err)
	}
	r := trialReports(t, c, refused.Name, 1)[0]
	if r.State != workflows.TrialFailed {
		t.Fatalf("refused trial: %s (%s), want failed", r.State, r.Error)
	}
	for _, want := range []string{`trainer "/bin/sh" is not allowed on this host`, "--allow-command"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("refused trial's error %q, want it to contain %q", r.Error, want)
		}
	}
	if r.Restarts != 0 {
		t.Errorf("refused trial restarted %d times, want it failed at once", r.Restarts)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v): the refused command ran", marker, err)
	}

	res := campaignResult(t, allowedRun, 2*time.Minute)
	if res.Completed != 1 {
		t.Errorf("allowed campaign: %+v, want its trial completed under --allow-command %s/**\n%s", res.CampaignCounts, trainers, w.Log())
	}
}
