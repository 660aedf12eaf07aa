package cli

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
)

// A hint repeats the connection flags given on the command line, in one
// order, shell-quoted, and never an API key's value; what came from the
// environment stays out (the hinted command reads it too).
func TestHintFlagsRepeatTheConnectionFlagsGiven(t *testing.T) {
	env := map[string]string{client.EnvAddress: "env.example:7233", client.EnvAPIKey: "env-secret"}
	for _, tc := range []struct {
		args         []string
		withUI, noUI string
	}{
		{args: nil, withUI: "", noUI: ""},
		{args: []string{"--connect-timeout", "3s"}, withUI: "", noUI: ""},
		{
			args:   []string{"--ui", "http://ui:8080", "--namespace", "research", "--address", "t.example:7233"},
			withUI: " --address t.example:7233 --namespace research --ui http://ui:8080",
			noUI:   " --address t.example:7233 --namespace research",
		},
		{
			args:   []string{"--api-key", "s3cret-value", "--task-queue", "q 1", "--tls-server-name", "it's"},
			withUI: ` --task-queue 'q 1' --tls-server-name 'it'\''s' --api-key …`,
			noUI:   ` --task-queue 'q 1' --tls-server-name 'it'\''s' --api-key …`,
		},
		{
			args:   []string{"--tls", "--tls-ca", "/etc/ca.pem", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
			withUI: " --tls --tls-ca /etc/ca.pem --tls-cert c.pem --tls-key k.pem",
			noUI:   " --tls --tls-ca /etc/ca.pem --tls-cert c.pem --tls-key k.pem",
		},
		{args: []string{"--tls=false"}, withUI: " --tls=false", noUI: " --tls=false"},
	} {
		_, f := parseConnect(t, env, tc.args...)
		require.Equal(t, tc.withUI, hintFlags(f, true), "%v", tc.args)
		require.Equal(t, tc.noUI, hintFlags(f, false), "%v", tc.args)
		for _, h := range []string{hintFlags(f, true), hintFlags(f, false)} {
			require.NotContains(t, h, "secret")
		}
	}
}

func TestCommandHintQuotes(t *testing.T) {
	require.Equal(t, "gleaner stop NAME --address h:1", commandHint(" --address h:1", "stop", "NAME"))
	require.Equal(t, "gleaner status 'a b' --watch", commandHint("", "status", "a b", "--watch"))
	require.Equal(t, "gleaner status ''", commandHint("", "status", ""))
	require.Equal(t, `'$(rm -rf x)'`, shellQuote("$(rm -rf x)"))
}

// `gleaner dev` names its server in hints unless it is where the CLI
// looks by default, and its UI unless the CLI finds it by itself.
func TestDevConnectionHint(t *testing.T) {
	for _, tc := range []struct {
		address, namespace, ui, want string
	}{
		{client.DefaultHostPort, "default", "http://localhost:8233", ""},
		{"127.0.0.1:7300", "default", "http://localhost:8300", " --address 127.0.0.1:7300"},
		{"127.0.0.1:7300", "default", "http://localhost:8233", " --address 127.0.0.1:7300 --ui http://localhost:8233"},
		{client.DefaultHostPort, "default", "http://localhost:41234", " --ui http://localhost:41234"},
		{"10.0.0.5:7233", "dev", "http://10.0.0.5:8233", " --address 10.0.0.5:7233 --namespace dev"},
		{client.DefaultHostPort, "default", "", ""},
	} {
		require.Equal(t, tc.want, devConnectionHint(tc.address, tc.namespace, tc.ui), "%+v", tc)
	}
}

// Every hint a client verb prints goes through hintFlags: the flags a
// person gave reach the command line it suggests.
func TestHintFlagsSeeEveryConnectionFlag(t *testing.T) {
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	(&connectOptions{}).addFlags(f)
	conn := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	var c client.Connection
	var apiKey string
	bindConnectionFlags(conn, &c, &apiKey, "")
	conn.VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "connect-timeout" {
			return // how long to wait, not where: not repeated
		}
		require.Contains(t, hintConnectionFlags, fl.Name, "a connection flag hints leave out")
	})
	for _, name := range hintConnectionFlags {
		require.NotNil(t, f.Lookup(name), "hints name --%s, which the client verbs lack", name)
	}
}
