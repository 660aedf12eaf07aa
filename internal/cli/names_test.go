package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
)

// Every CAMPAIGN and POOL argument is a name (gleaner.ValidateName): a bad
// one exits 2 naming the argument, before anything connects (127.0.0.1:1
// would refuse, and the error would say so).
func TestBadNamesExitTwoBeforeConnecting(t *testing.T) {
	clearConnectionEnv(t)
	noServer := []string{"--address", "127.0.0.1:1", "--connect-timeout", "0"}
	bad := []string{"", " ", "../x", "c/d", "a b", `"q"`, "'q'", "-x", "🚀", "a\x00b", "a\nb", strings.Repeat("n", 64)}
	for _, verb := range [][]string{{"status"}, {"leaderboard"}, {"trials"}, {"pause"}, {"resume"}, {"stop"}, {"pool", "status"}} {
		want := "CAMPAIGN: "
		if verb[0] == "pool" {
			want = "POOL: "
		}
		for _, name := range bad {
			args := append(append(append([]string{}, verb...), noServer...), "--", name)
			_, errOut, err := runGleaner(args...)
			require.Error(t, err, "%v %q", verb, name)
			require.Equal(t, ExitUsage, ExitCode(err), "%v %q: %v", verb, name, err)
			require.Contains(t, err.Error(), want, "%v %q", verb, name)
			require.NotContains(t, err.Error(), "127.0.0.1:1", "%v %q", verb, name)
			require.Contains(t, errOut, "gleaner: "+want)
		}
	}
}

// submit: the spec's name and pool, and --name, are names; a spec over
// gleaner.MaxSpecBytes is a spec error; all exit 2 before connecting.
func TestSubmitRejectsBadNamesAndLargeSpecs(t *testing.T) {
	clearConnectionEnv(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	withName := strings.Replace(validSpecJSON, `"name": "ok"`, `"name": "../ok"`, 1)
	withPool := strings.Replace(validSpecJSON, `"name": "ok"`, `"name": "ok", "pool": "gpu pool"`, 1)
	large := validSpecJSON + strings.Repeat(" ", gleaner.MaxSpecBytes+1-len(validSpecJSON))
	for _, tc := range []struct {
		path string
		args []string
		want []string
	}{
		{write("name.json", withName), nil, []string{"name.json", `name: "../ok" must start with a letter or a digit`}},
		{write("pool.json", withPool), nil, []string{"pool.json", `pool: "gpu pool" has ' '`}},
		{write("ok.json", validSpecJSON), []string{"--name", "a/b"}, []string{`--name: "a/b" has '/'`}},
		{write("ok2.json", validSpecJSON), []string{"--name", strings.Repeat("n", 64)}, []string{"--name: 64 characters, at most 63"}},
		{write("large.json", large), nil, []string{"large.json", "the spec is 1048577 bytes, over the limit of 1048576 bytes"}},
	} {
		args := append([]string{"submit", "-f", tc.path, "--address", "127.0.0.1:1", "--connect-timeout", "0"}, tc.args...)
		_, _, err := runGleaner(args...)
		require.Error(t, err, tc.path)
		require.Equal(t, ExitUsage, ExitCode(err), "%s %v: %v", tc.path, tc.args, err)
		require.NotContains(t, err.Error(), "127.0.0.1:1")
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, "%s %v", tc.path, tc.args)
		}
	}
}

// A SIGINT or SIGTERM (a done context) stops loading the spec: exit 1,
// not a spec error.
func TestSubmitStopsLoadingWhenInterrupted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(p, []byte(validSpecJSON), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := &submitOptions{file: p, interval: 1}
	_, err := o.spec(ctx)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.Equal(t, ExitFailure, ExitCode(err), "%v", err)
	require.Contains(t, err.Error(), "interrupted")
}

// dev: a bad name in --campaign exits 2; a long one is cut to leave room
// for the run's suffix.
func TestDevCampaignNames(t *testing.T) {
	dir := t.TempDir()
	spec := func(name string) string {
		p := filepath.Join(dir, "c.json")
		body := strings.Replace(validSpecJSON, `"name": "ok"`, `"name": "`+name+`"`, 1)
		body = strings.Replace(body, `["trainer"]`, `["true"]`, 1) // a command on PATH
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	d := newDevRun(&devOptions{campaign: spec("my campaign")}, io.Discard, io.Discard)
	_, err := d.loadCampaign()
	require.Equal(t, ExitUsage, ExitCode(err), "%v", err)
	require.Contains(t, err.Error(), `name: "my campaign" has ' '`)

	long := strings.Repeat("n", gleaner.MaxNameLength)
	d = newDevRun(&devOptions{campaign: spec(long)}, io.Discard, io.Discard)
	c, err := d.loadCampaign()
	require.NoError(t, err)
	require.Len(t, c.spec.Name, gleaner.MaxNameLength)
	require.Regexp(t, `^n{47}-\d{8}-\d{6}$`, c.spec.Name)
}
