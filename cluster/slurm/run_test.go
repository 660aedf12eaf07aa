package slurm

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failed command's error carries what it said: stderr, or stdout where
// it says why there (scontrol show partition NOPE).
func TestExecRunnerErrorCarriesTheCommandsOwnText(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		{"stderr", "echo 'sbatch: error: invalid partition specified: nope' >&2; exit 1",
			"sh -c " + "echo 'sbatch: error: invalid partition specified: nope' >&2; exit 1" + ": exit status 1: sbatch: error: invalid partition specified: nope"},
		{"stdout when stderr is empty", "echo 'Partition nope not found'; exit 1", ": exit status 1: Partition nope not found"},
		{"the last lines, trimmed", "printf '1\\n2\\n3\\n4\\n5\\n6\\n\\n' >&2; exit 2", ": exit status 2: 2; 3; 4; 5; 6"},
		{"nothing said", "exit 3", "exit 3: exit status 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ExecRunner{}.Run(context.Background(), "sh", "-c", tc.script)
			var cerr *CommandError
			require.True(t, errors.As(err, &cerr), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
