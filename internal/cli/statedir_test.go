package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/worker"
)

// A worker started without --data-dir keeps its run data in the user's
// state directory, never in its working directory (a checkout, say);
// GLEANER_DATA_DIR and --data-dir still choose.
func TestWorkerRunDataOutsideTheWorkingDirectory(t *testing.T) {
	state, home, given := t.TempDir(), t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		what string
		env  map[string]string
		args []string
		want string
	}{
		{"XDG_STATE_HOME", map[string]string{"XDG_STATE_HOME": state, "HOME": home}, nil, filepath.Join(state, "gleaner", "data")},
		{"HOME", map[string]string{"HOME": home}, nil, filepath.Join(home, ".local", "state", "gleaner", "data")},
		{"a relative XDG_STATE_HOME is ignored", map[string]string{"XDG_STATE_HOME": "rel", "HOME": home}, nil, filepath.Join(home, ".local", "state", "gleaner", "data")},
		{"the environment", map[string]string{"HOME": home, worker.EnvDataDir: given}, nil, given},
		{"the flag", map[string]string{"HOME": home, worker.EnvDataDir: "/elsewhere"}, []string{"--data-dir", given}, given},
		{"the flag without HOME", nil, []string{"--data-dir", given}, given},
	} {
		o := &workerOptions{build: noComponents, getenv: mapEnv(tc.env)}
		cmd := newWorkerCmdFor(o)
		require.NoError(t, cmd.ParseFlags(tc.args), tc.what)
		cfg, err := o.config(cmd.Flags())
		require.NoError(t, err, tc.what)
		require.Equal(t, tc.want, cfg.DataDir, tc.what)
	}

	o := &workerOptions{build: noComponents, getenv: mapEnv(nil)}
	cmd := newWorkerCmdFor(o)
	_, err := o.config(cmd.Flags())
	require.ErrorContains(t, err, "--data-dir: $HOME is not set")
	require.ErrorContains(t, err, "pass --data-dir or set GLEANER_DATA_DIR")
}

// `make devserver` and `gleaner dev` share the dev server's database, and
// `gleaner dev` and `gleaner worker` the run data, wherever they run.
func TestOneStateDirectory(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Chdir(t.TempDir())
	o := &devOptions{}
	require.NoError(t, o.defaultPaths(false, false))
	require.Equal(t, filepath.Join(state, "gleaner", "dev", "temporal.db"), o.db)
	w := &workerOptions{build: noComponents, getenv: mapEnv(map[string]string{"XDG_STATE_HOME": state})}
	cfg, err := w.config(newWorkerCmdFor(w).Flags())
	require.NoError(t, err)
	require.Equal(t, cfg.DataDir, o.dataDir)
}
