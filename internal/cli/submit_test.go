package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const validSpecJSON = `{"name": "ok", "command": ["true"],
 "space": [{"name": "lr", "type": "float", "min": 0.01, "max": 0.1}],
 "objective": {"metric": "val_loss"}, "budget": {"max_trials": 2}}`

// An invalid spec exits 2 naming the file and the field, before any
// connection (the address would refuse one).
func TestSubmitRejectsInvalidSpecs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	for _, tc := range []struct {
		path string
		args []string
		want []string
	}{
		{write("zero.yaml", "name: z\ncommand: [t]\nspace: [{name: a, type: int, min: 1, max: 2}]\nobjective: {metric: m}\nbudget: {max_trials: 0}\n"),
			nil, []string{"budget.max_trials"}},
		{write("mode.json", `{"name": "m", "command": ["t"], "space": [{"name": "a", "type": "int", "min": 1, "max": 2}], "objective": {"metric": "m", "mode": "up"}, "budget": {"max_trials": 1}}`),
			nil, []string{"objective.mode", `"up"`}},
		{write("unknown.yaml", "name: u\ncommand: [t]\nbugdet: {max_trials: 1}\n"), nil, []string{"bugdet"}},
		{write("noname.json", validSpecJSON), []string{"--name", ""}, nil},
		{write("interval.json", validSpecJSON), []string{"--interval", "0s"}, []string{"--interval"}},
		{write("spec.txt", validSpecJSON), nil, []string{"spec.txt"}},
		{filepath.Join(dir, "missing.yaml"), nil, []string{"missing.yaml"}},
	} {
		args := append([]string{"submit", "-f", tc.path, "--address", "127.0.0.1:1", "--connect-timeout", "0"}, tc.args...)
		_, _, err := runGleaner(args...)
		if tc.want == nil { // valid: it got as far as connecting
			require.Error(t, err)
			require.Equal(t, ExitFailure, ExitCode(err), "%v", err)
			require.Contains(t, err.Error(), "127.0.0.1:1")
			continue
		}
		require.Error(t, err, tc.path)
		require.Equal(t, ExitUsage, ExitCode(err), "%s: %v", tc.path, err)
		if tc.args == nil { // a spec problem names the file
			require.Contains(t, err.Error(), filepath.Base(tc.path))
		}
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, tc.path)
		}
	}
}

func TestSubmitNameOverridesTheSpec(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(p, []byte(validSpecJSON), 0o644))
	o := &submitOptions{file: p, name: "renamed", interval: 1}
	spec, err := o.spec(context.Background())
	require.NoError(t, err)
	require.Equal(t, "renamed", spec.Name)
	require.Equal(t, 8, spec.Budget.MaxConcurrent, "defaults applied")
}
