package cli

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	tclient "go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/worker"
)

func parseConnect(t *testing.T, env map[string]string, args ...string) (*connectOptions, *pflag.FlagSet) {
	t.Helper()
	o := &connectOptions{getenv: mapEnv(env)}
	f := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.addFlags(f)
	require.NoError(t, f.Parse(args))
	return o, f
}

func TestConnectionFlagsOverrideEnvironment(t *testing.T) {
	env := map[string]string{
		client.EnvAddress: "env.example:7233", client.EnvNamespace: "envns", client.EnvTaskQueue: "envq",
		client.EnvAPIKey: "k", EnvUI: "http://env-ui",
		// A worker's settings are not the client's business, even broken.
		worker.EnvNodeSource: "static:0", worker.EnvDataDir: "/dev/null",
	}
	o, f := parseConnect(t, env, "--namespace", "flagns", "--connect-timeout", "3s")
	cfg, err := o.config(f)
	require.NoError(t, err)
	require.Equal(t, "env.example:7233", cfg.HostPort)
	require.Equal(t, "flagns", cfg.Namespace)
	require.Equal(t, "envq", cfg.TaskQueue)
	require.Equal(t, "k", cfg.APIKey)
	require.True(t, cfg.UsesTLS(), "an API key implies TLS")
	require.Equal(t, 3*time.Second, cfg.ConnectTimeout)
	require.Equal(t, "http://env-ui", o.uiBase(f))

	o, f = parseConnect(t, env, "--ui", "-", "--address", "flag.example:1234")
	cfg, err = o.config(f)
	require.NoError(t, err)
	require.Equal(t, "flag.example:1234", cfg.HostPort)
	require.Equal(t, "-", o.uiBase(f))

	o, f = parseConnect(t, nil)
	cfg, err = o.config(f)
	require.NoError(t, err)
	require.Equal(t, client.DefaultHostPort, cfg.HostPort)
	require.Equal(t, defaultClientConnectTimeout, cfg.ConnectTimeout)
	require.False(t, cfg.UsesTLS())
	require.Equal(t, "", o.uiBase(f))
}

func TestConnectionErrorsNameTheFlagAndExitTwo(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{map[string]string{client.EnvTLS: "maybe"}, nil, []string{"--tls", client.EnvTLS}},
		{map[string]string{client.EnvAddress: "bad"}, nil, []string{"--address", client.EnvAddress, `"bad"`}},
		{nil, []string{"--namespace", " "}, []string{"--namespace"}},
		{nil, []string{"--task-queue", ""}, []string{"--task-queue"}},
		{nil, []string{"--api-key", " k"}, []string{"--api-key"}},
	} {
		o, f := parseConnect(t, tc.env, tc.args...)
		_, err := o.config(f)
		require.Error(t, err, "%v %v", tc.env, tc.args)
		require.Equal(t, ExitUsage, ExitCode(err))
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w)
		}
		// connect stops there: nothing is dialled.
		o.dial = func(context.Context, client.Connection) (tclient.Client, error) {
			t.Fatalf("dialled with an invalid configuration")
			return nil, nil
		}
		_, _, err = o.connect(context.Background(), f, &syncBuffer{})
		require.Equal(t, ExitUsage, ExitCode(err))
	}
}
