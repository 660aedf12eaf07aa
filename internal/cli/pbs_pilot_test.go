package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster/pbs"
)

// fakeQstat puts a qstat in a folder of its own that prints the recorded
// running pilot 68.gleaner-pbs with substate, and points the pilot at it.
func fakeQstat(t *testing.T, substate string) {
	t.Helper()
	rec, err := os.ReadFile(filepath.Join("..", "..", "cluster", "pbs", "testdata", "qstat_json_running_pilot.stdout"))
	require.NoError(t, err)
	bin := t.TempDir()
	out := filepath.Join(bin, "qstat.json")
	require.NoError(t, os.WriteFile(out, []byte(strings.Replace(string(rec), `"substate":42`, `"substate":`+substate, 1)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "qstat"), []byte("#!/bin/sh\nexec cat '"+out+"'\n"), 0o755))
	t.Setenv("PBS_JOBID", "68.gleaner-pbs")
	t.Setenv(pbs.EnvBin, bin)
}

// Issue 31: PBS requeued a pilot in the cycle that started it. The mom's
// SIGTERM went out before the job's process existed and reached nothing;
// the agent joined, took a trial, and the mom SIGKILLed it kill_delay
// later, the trainer losing what it trained since its last checkpoint.
// qstat already says the job is being requeued (substate 60): the pilot
// must not join, and must exit at once (the job then ends without waiting
// for kill_delay).
func TestPBSPilotRequeuedAsItStartsDoesNotJoin(t *testing.T) {
	fakeQstat(t, "60")
	cmd := newPBSPilotCmd()
	var out, errOut syncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	// Nothing listens there: a pilot that tries to join retries it until
	// the test's context ends.
	cmd.SetArgs([]string{"--pool", "p", "--gpus", "none", "--data-dir", t.TempDir(), "--address", "127.0.0.1:1"})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, cmd.ExecuteContext(ctx), "stderr: %s", errOut.String())
	require.Less(t, time.Since(start), 10*time.Second, "it tried to join: %s", out.String())
	require.Contains(t, out.String(), "PBS job 68.gleaner-pbs is being requeued (state R, substate 60): not joining pool p")
	require.NotContains(t, out.String(), "connecting to")
}
