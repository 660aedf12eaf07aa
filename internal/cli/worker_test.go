package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/worker"
)

func mapEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func noComponents(context.Context, worker.Config) (worker.Components, func(), error) {
	return worker.Components{}, func() {}, nil
}

// runWorkerCmd runs `gleaner worker args...` with env as its environment.
func runWorkerCmd(ctx context.Context, env map[string]string, stdout, stderr *syncBuffer, args ...string) error {
	cmd := newWorkerCmdFor(&workerOptions{getenv: mapEnv(env), build: noComponents})
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(ctx)
}

func TestWorkerConfigErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{nil, []string{"--nodes", "static:0"}, []string{"--nodes", "node count"}},
		{nil, []string{"--nodes", "replay:/no/such/trace.csv", "--data-dir", dir}, []string{"--nodes", "trace file"}},
		{nil, []string{"--address", "temporal", "--data-dir", dir}, []string{"--address", "temporal"}},
		{map[string]string{client.EnvTLS: "maybe"}, []string{"--data-dir", dir}, []string{"--tls", client.EnvTLS}},
		{map[string]string{client.EnvAddress: "bad"}, []string{"--data-dir", dir}, []string{"--address", client.EnvAddress, `"bad"`}},
		{nil, []string{"--tls-cert", filepath.Join(dir, "c.pem"), "--data-dir", dir}, []string{"--tls-key", "together"}},
		{nil, []string{"--data-dir", dir, "--log-level", "loud"}, []string{"--log-level"}},
	} {
		var out, errOut syncBuffer
		err := runWorkerCmd(context.Background(), tc.env, &out, &errOut, tc.args...)
		require.Error(t, err, "args %v env %v", tc.args, tc.env)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, "args %v env %v", tc.args, tc.env)
		}
	}
}

func TestWorkerFlagsOverrideEnvironment(t *testing.T) {
	o := &workerOptions{build: noComponents, getenv: mapEnv(map[string]string{
		client.EnvAddress:    "env-host:7233",
		client.EnvNamespace:  "env-ns",
		client.EnvAPIKey:     "env-key",
		worker.EnvNodeSource: "static:2",
		worker.EnvDataDir:    t.TempDir(),
	})}
	cmd := newWorkerCmdFor(o)
	require.NoError(t, cmd.ParseFlags([]string{"--namespace", "flag-ns", "--nodes", "static:8", "--stop-timeout", "5s"}))
	cfg, err := o.config(cmd.Flags())
	require.NoError(t, err)
	require.Equal(t, "env-host:7233", cfg.HostPort)
	require.Equal(t, "flag-ns", cfg.Namespace)
	require.Equal(t, "env-key", cfg.APIKey)
	require.Equal(t, 8, cfg.Nodes.Static.Nodes)
	require.Equal(t, 5*time.Second, cfg.StopTimeout)
	require.NotContains(t, cmd.Flags().Lookup("api-key").DefValue, "env-key", "--help must not show the API key")
}

// TestWorkerRunsUntilCancelled runs the command against a real dev server:
// it connects, polls its task queue, says so, and returns when its context
// is cancelled (as on SIGINT/SIGTERM).
func TestWorkerRunsUntilCancelled(t *testing.T) {
	srv := testenv.DevServer(t, devserver.Options{})
	dataDir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runWorkerCmd(ctx, nil, &out, &errOut, "--address", srv.Address(), "--task-queue", "cli-test",
			"--nodes", "static:2", "--data-dir", dataDir, "--log-level", "warn", "--stop-timeout", "1s")
	}()

	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	id, err := srv.WaitForPoller(wctx, "cli-test", nil)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	require.True(t, strings.HasPrefix(id, fmt.Sprintf("%d@", os.Getpid())), "poller identity %q", id)
	require.DirExists(t, dataDir)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "stderr:\n%s", errOut.String())
	case <-time.After(time.Minute):
		t.Fatal("the worker did not return within a minute of cancellation")
	}
	require.Contains(t, out.String(), "connected to "+srv.Address())
	require.Contains(t, out.String(), "polling task queue cli-test")
	require.Contains(t, out.String(), "nodes=static:2")
	require.Contains(t, out.String(), "stopped after")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
