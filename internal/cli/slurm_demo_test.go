package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A slurm-demo a signal interrupts cleans up and exits as a shell reports
// the signal (130 for Ctrl-C, 143 for SIGTERM), saying where it was and
// what it stopped; one whose context ended otherwise exits 1. No Slurm:
// the context has ended before the cluster starts, and the cluster
// script is a fake that records how it was called.
func TestSlurmDemoInterruptedExitCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cause  error
		code   int
		prefix string
	}{
		{"SIGINT", &signalled{os.Interrupt}, 130, "interrupted (SIGINT): stopped during the cluster start"},
		{"SIGTERM", &signalled{syscall.SIGTERM}, 143, "interrupted (SIGTERM): stopped during the cluster start"},
		{"cancelled", errors.New("cancelled by the caller"), ExitFailure, "interrupted: stopped during the cluster start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			calls := filepath.Join(dir, "calls")
			script := filepath.Join(dir, "slurm-cluster.sh")
			require.NoError(t, os.WriteFile(script, []byte("echo \"$@\" >> "+calls+"\n"), 0o755))
			trainer := filepath.Join(dir, "trainer")
			require.NoError(t, os.WriteFile(trainer, []byte("#!/bin/sh\n"), 0o755))
			clusterDir := filepath.Join(dir, "cluster")

			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(tc.cause)
			var stdout, stderr bytes.Buffer
			root := newRootCmd(&stdout, &stderr)
			root.SetArgs([]string{"slurm-demo", "--jobs", "5", "--cluster-script", script, "--cluster-dir", clusterDir,
				"--out", filepath.Join(dir, "out"), "--trainer", trainer, "--gleaner", trainer})
			err := root.ExecuteContext(ctx)

			require.Error(t, err)
			require.Equal(t, tc.code, ExitCode(err))
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, tc.prefix), "got %q", msg)
			require.Contains(t, msg, "cleaned up: the Slurm cluster it was starting in "+clusterDir)
			require.Contains(t, msg, "nothing of it left running")
			b, rerr := os.ReadFile(calls)
			require.NoError(t, rerr)
			require.Equal(t, "stop "+clusterDir+"\n", string(b), "the cluster script stops what it may have started")
			require.Contains(t, stdout.String(), "slurm-demo: this run takes about ", "the estimate comes first")
		})
	}
}

func TestSlurmDemoEnd(t *testing.T) {
	failed := errors.New("sbatch: error")
	require.Same(t, failed, slurmDemoEnd(context.Background(), failed), "not interrupted: unchanged")
	require.NoError(t, slurmDemoEnd(context.Background(), nil))
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&signalled{os.Interrupt})
	require.NoError(t, slurmDemoEnd(ctx, nil), "finished before the signal")
	err := slurmDemoEnd(ctx, failed)
	require.Equal(t, 130, ExitCode(err))
	require.ErrorIs(t, err, failed)
}
