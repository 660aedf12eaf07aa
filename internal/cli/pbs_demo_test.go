package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A pbs-demo Ctrl-C ends before its cluster starts exits 130, saying
// where it was; the cluster script (a fake here) is not left to run.
func TestPBSDemoInterruptedExitCode(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "cluster.sh")
	require.NoError(t, os.WriteFile(script, []byte("echo \"$@\" >> "+filepath.Join(dir, "calls")+"\n"), 0o755))
	trainer := filepath.Join(dir, "trainer")
	require.NoError(t, os.WriteFile(trainer, []byte("#!/bin/sh\n"), 0o755))

	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalled{os.Interrupt})
	var stdout, stderr bytes.Buffer
	root := newRootCmd(&stdout, &stderr)
	root.SetArgs([]string{"pbs-demo", "--jobs", "5", "--cluster-script", script,
		"--out", filepath.Join(dir, "out"), "--trainer", trainer, "--gleaner", trainer})
	err := root.ExecuteContext(ctx)

	require.Error(t, err)
	require.Equal(t, 130, ExitCode(err))
	require.Contains(t, err.Error(), "interrupted (SIGINT): stopped during the cluster start")
	require.Contains(t, stdout.String(), "pbs-demo: this run takes about ", "the estimate comes first")
	require.Contains(t, stdout.String(), "pbs-demo: starting (or reusing) the PBS cluster")
}
