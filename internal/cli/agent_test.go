package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/agent"
	"github.com/gleaner-hpc/gleaner/worker"
)

func runAgentCmd(ctx context.Context, env map[string]string, args ...string) error {
	cmd := newAgentCmdFor(&agentOptions{getenv: mapEnv(env)})
	cmd.SetArgs(args)
	var out, errOut syncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(ctx)
}

// Every bad setting is named with its flag and variable, all at once,
// before anything connects.
func TestAgentConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{nil, []string{"--data-dir", dir}, []string{"--pool", agent.EnvPool, "empty"}},
		{nil, []string{"--pool", "bad/pool", "--data-dir", dir}, []string{"--pool", `"bad/pool"`}},
		{nil, []string{"--pool", "p", "--slots", "-2", "--data-dir", dir}, []string{"--slots", agent.EnvSlots}},
		{map[string]string{agent.EnvSlots: "four"}, []string{"--pool", "p", "--data-dir", dir}, []string{"--slots", agent.EnvSlots, `"four"`}},
		{nil, []string{"--pool", "p", "--node-prefix", "a/b", "--data-dir", dir}, []string{"--node-prefix", agent.EnvNodePrefix}},
		{map[string]string{agent.EnvAdvertiseAddr: "host.example"}, []string{"--pool", "p", "--data-dir", dir}, []string{"--advertise-addr", agent.EnvAdvertiseAddr, "IP"}},
		{nil, []string{"--pool", "p", "--gpus", "some", "--data-dir", dir}, []string{"--gpus", agent.EnvGPUs, "auto, none"}},
		{nil, []string{"--pool", "p", "--data-dir", "", "--stop-timeout", "0s"}, []string{"--data-dir", worker.EnvDataDir, "--stop-timeout"}},
		// Several at once.
		{map[string]string{agent.EnvPool: "p"}, []string{"--slots", "-1", "--gpus", "x", "--data-dir", dir}, []string{"--slots", "--gpus"}},
	} {
		err := runAgentCmd(context.Background(), tc.env, tc.args...)
		require.Error(t, err, "args %v env %v", tc.args, tc.env)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, "args %v env %v", tc.args, tc.env)
		}
	}
}

// Flags win over the environment; the environment fills what flags leave.
func TestAgentFlagsOverrideEnvironment(t *testing.T) {
	o := &agentOptions{getenv: mapEnv(map[string]string{
		agent.EnvPool: "from-env", agent.EnvSlots: "3", agent.EnvNodePrefix: "envhost", worker.EnvDataDir: "/shared/env",
	})}
	cmd := newAgentCmdFor(o)
	require.NoError(t, cmd.ParseFlags([]string{"--pool", "from-flag", "--gpus", "none"}))
	cfg, err := o.config(cmd.Flags())
	require.NoError(t, err)
	require.Equal(t, "from-flag", cfg.Pool)
	require.Equal(t, 3, cfg.Slots)
	require.Equal(t, "envhost", cfg.NodePrefix)
	require.Equal(t, "/shared/env", cfg.DataDir)
	require.Equal(t, "none", cfg.GPUs)
}

// An agent started without --data-dir keeps its run data in the user's
// state directory, as a worker does, not in its working directory.
func TestAgentRunDataOutsideTheWorkingDirectory(t *testing.T) {
	home, given := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		what string
		env  map[string]string
		args []string
		want string
	}{
		{"HOME", map[string]string{"HOME": home}, nil, filepath.Join(home, ".local", "state", "gleaner", "data")},
		{"the environment", map[string]string{"HOME": home, worker.EnvDataDir: given}, nil, given},
		{"the flag", map[string]string{"HOME": home}, []string{"--data-dir", given}, given},
	} {
		o := &agentOptions{getenv: mapEnv(tc.env)}
		cmd := newAgentCmdFor(o)
		require.NoError(t, cmd.ParseFlags(append([]string{"--pool", "p"}, tc.args...)), tc.what)
		cfg, err := o.config(cmd.Flags())
		require.NoError(t, err, tc.what)
		require.Equal(t, tc.want, cfg.DataDir, tc.what)
	}
}
