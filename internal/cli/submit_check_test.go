package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// specWithCommand writes a valid spec with command and workdir (YAML
// flow lists, "" for none) to dir/name and returns its path.
func specWithCommand(t *testing.T, dir, name, command, workdir string) string {
	t.Helper()
	body := "name: check\ncommand: " + command + "\n"
	if workdir != "" {
		body += "workdir: " + workdir + "\n"
	}
	body += "space: [{name: lr, type: float, min: 0.01, max: 0.1}]\nobjective: {metric: val_loss}\nbudget: {max_trials: 2}\n"
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func writeProgram(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), mode))
}

// The README's first submit on a fresh clone: the example's trainer is not
// built. submit refuses it, naming the field and where it looked, exit 2,
// before any connection (the address would refuse one); the campaign no
// longer starts only for every trial to fail on the worker.
func TestSubmitRefusesATrainerThatIsNotThere(t *testing.T) {
	t.Chdir(t.TempDir())
	spec := specWithCommand(t, ".", "examples/go-mlp/campaign.yaml", "[bin/go-mlp]", "")
	args := []string{"submit", "-f", spec, "--address", "127.0.0.1:1", "--connect-timeout", "0"}
	_, _, err := runGleaner(args...)
	require.Equal(t, ExitUsage, ExitCode(err), "%v", err)
	require.Contains(t, err.Error(), "campaign spec examples/go-mlp/campaign.yaml: command[0]: bin/go-mlp: no such file (resolved against examples/go-mlp/)")
	require.Contains(t, err.Error(), "submit with --command-on-worker")

	// The user says the path is the worker's: it goes as far as connecting.
	_, _, err = runGleaner(append(args, "--command-on-worker")...)
	require.Equal(t, ExitFailure, ExitCode(err), "%v", err)
	require.Contains(t, err.Error(), "127.0.0.1:1")

	// Once built, it goes as far as connecting too.
	writeProgram(t, "examples/go-mlp/bin/go-mlp", 0o755)
	_, _, err = runGleaner(args...)
	require.Equal(t, ExitFailure, ExitCode(err), "%v", err)
	require.Contains(t, err.Error(), "127.0.0.1:1")
}

// What the worker receives: the trainer's absolute path, resolved against
// the spec file's directory (or workdir), whatever directory the worker
// runs in; with --command-on-worker, the spec as written.
func TestSubmitSendsTheTrainerResolved(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	writeProgram(t, filepath.Join(root, "exp", "bin", "train"), 0o755)
	writeProgram(t, filepath.Join(root, "shared", "tools", "train"), 0o755)
	pathDir := t.TempDir()
	writeProgram(t, filepath.Join(pathDir, "on-path"), 0o755)
	t.Setenv("PATH", pathDir)

	for _, tc := range []struct {
		what, command, workdir string
		wantCmd0, wantWorkDir  string
	}{
		{"relative to the spec file", "[bin/train, --fast]", "", filepath.Join(root, "exp", "bin", "train"), ""},
		{"./ relative to the spec file", "[./bin/train]", "", filepath.Join(root, "exp", "bin", "train"), ""},
		{"relative to a relative workdir", "[tools/train]", "../shared", filepath.Join(root, "shared", "tools", "train"), filepath.Join(root, "shared")},
		{"relative to an absolute workdir", "[tools/train]", filepath.Join(root, "shared"), filepath.Join(root, "shared", "tools", "train"), filepath.Join(root, "shared")},
		{"absolute", "[" + filepath.Join(root, "shared", "tools", "train") + "]", "", filepath.Join(root, "shared", "tools", "train"), ""},
		{"a bare name on PATH stays bare", "[on-path]", "", "on-path", ""},
	} {
		o := &submitOptions{file: specWithCommand(t, root, "exp/c.yaml", tc.command, tc.workdir), interval: 1}
		spec, err := o.spec(context.Background())
		require.NoError(t, err, tc.what)
		require.Equal(t, tc.wantCmd0, spec.Command[0], tc.what)
		require.Equal(t, tc.wantWorkDir, spec.WorkDir, tc.what)
		if tc.command == "[bin/train, --fast]" {
			require.Equal(t, []string{"--fast"}, spec.Command[1:], "the arguments are sent as written")
		}
	}

	o := &submitOptions{file: specWithCommand(t, root, "exp/c.yaml", "[bin/train]", "../shared"), interval: 1}
	o.trainer.onWorker = true
	spec, err := o.spec(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"bin/train"}, spec.Command, "--command-on-worker: as written")
	require.Equal(t, "../shared", spec.WorkDir)
}

// Every way a trainer can be missing is refused, naming the field.
func TestSubmitNamesTheTrainerFieldItRefuses(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	writeProgram(t, "exp/bin/plain", 0o644)
	require.NoError(t, os.MkdirAll("exp/bin/dir", 0o755))
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct{ command, workdir, want string }{
		{"[bin/missing]", "", "command[0]: bin/missing: no such file (resolved against exp/)"},
		{"[bin/plain]", "", "command[0]: bin/plain: not executable (chmod +x it) (resolved against exp/)"},
		{"[bin/dir]", "", "command[0]: bin/dir: is a directory, not a program (resolved against exp/)"},
		{"[/no/such/train]", "", "command[0]: /no/such/train: no such file"},
		{"[train.sh]", "", "command[0]: train.sh: not found on PATH (a program beside the spec file is ./train.sh)"},
		{"[bin/plain]", "nowhere", "workdir: nowhere: no such directory (resolved against exp/)"},
		{"[x]", "bin/plain", "workdir: bin/plain: not a directory (resolved against exp/)"},
		{"[tools/train]", "bin", "command[0]: tools/train: no such file (resolved against bin/)"},
	} {
		o := &submitOptions{file: specWithCommand(t, ".", "exp/c.yaml", tc.command, tc.workdir), interval: 1}
		_, err := o.spec(context.Background())
		require.Error(t, err, tc.command)
		require.Equal(t, ExitUsage, ExitCode(err), "%v", err)
		require.Contains(t, err.Error(), "campaign spec exp/c.yaml: "+tc.want)
	}
}
