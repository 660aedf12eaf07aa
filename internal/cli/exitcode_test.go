package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
)

func TestExitCodeOfErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("boom"), ExitFailure},
		{usageErrorf("--top -1: must not be negative"), ExitUsage},
		{fmt.Errorf("wrapped: %w", withCode(ExitRejected, errors.New("no"))), ExitRejected},
		{fmt.Errorf("campaign x: %w", client.ErrNotFound), ExitNotFound},
		{withCode(ExitNotFound, fmt.Errorf("pool: %w", client.ErrNotFound)), ExitNotFound},
		{errors.New(`unknown command "frobnicate" for "gleaner"`), ExitUsage},
		{errors.New("unknown flag: --frob"), ExitUsage},
	} {
		require.Equal(t, tc.want, ExitCode(tc.err), "%v", tc.err)
	}
	require.Nil(t, withCode(ExitUsage, nil))
}

// runGleaner runs the whole command line without a server.
func runGleaner(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := Run(args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// Bad command lines exit 2, before anything connects (127.0.0.1:1 would
// refuse), and the error names the flag or argument.
func TestUsageErrorsExitTwo(t *testing.T) {
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_TLS", "TEMPORAL_TLS_CERT", "TEMPORAL_API_KEY"} {
		t.Setenv(k, "")
	}
	noServer := []string{"--address", "127.0.0.1:1", "--connect-timeout", "0"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"status"}, "CAMPAIGN"},
		{[]string{"status", "a", "b"}, "CAMPAIGN"},
		{[]string{"status", "x", "--frob"}, "--frob"},
		{[]string{"status", "x", "--watch", "--interval", "0s"}, "--interval"},
		{[]string{"status", "x", "--interval", "soon"}, "--interval"},
		{[]string{"status", " "}, "CAMPAIGN"},
		{[]string{"leaderboard", "x", "--top", "-1"}, "--top"},
		{[]string{"leaderboard"}, "CAMPAIGN"},
		{[]string{"trials"}, "CAMPAIGN"},
		{[]string{"pause"}, "CAMPAIGN"},
		{[]string{"resume", "a", "b"}, "CAMPAIGN"},
		{[]string{"stop", "x", "--reason"}, "flag needs an argument: --reason"},
		{[]string{"pool", "status", "a", "b"}, "POOL"},
		{[]string{"setup", "extra"}, "no arguments"},
		{[]string{"setup", "--wait", "-1s"}, "--wait"},
		{[]string{"submit"}, "--file"},
		{[]string{"submit", "-f", "x.yaml", "extra"}, "-f FILE"},
		{[]string{"status", "x", "--address", "nohost"}, "--address"},
		{[]string{"status", "x", "--tls-cert", "/no/such/cert.pem"}, "--tls-key"},
		{[]string{"status", "x", "--tls-ca", "/no/such/ca.pem"}, "--tls-ca"},
	} {
		args := tc.args
		if args[0] != "frobnicate" { // after the verb, so that the case's flags win
			i := 1
			if args[0] == "pool" {
				i = 2
			}
			args = append(append(append([]string{}, args[:i]...), noServer...), args[i:]...)
		}
		_, errOut, err := runGleaner(args...)
		require.Error(t, err, "%v", tc.args)
		require.Equal(t, ExitUsage, ExitCode(err), "%v: %v", tc.args, err)
		require.Contains(t, err.Error(), tc.want, "%v", tc.args)
		require.Contains(t, errOut, "gleaner: ", "%v", tc.args)
	}
}

// Every verb has help with examples, and the connection flags.
func TestHelpEverywhere(t *testing.T) {
	for _, verb := range [][]string{
		{"submit"}, {"status"}, {"leaderboard"}, {"trials"}, {"pause"}, {"resume"}, {"stop"},
		{"pool", "status"}, {"setup"},
	} {
		out, _, err := runGleaner(append(verb, "--help")...)
		require.NoError(t, err, "%v", verb)
		for _, want := range []string{"Examples:", "gleaner " + strings.Join(verb, " "), "--address", "TEMPORAL_ADDRESS",
			"--namespace", "--task-queue", "--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name", "--api-key", "--ui"} {
			require.Contains(t, out, want, "%v --help", verb)
		}
	}
}
