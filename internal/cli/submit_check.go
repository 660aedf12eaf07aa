package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner"
)

// commandOnWorkerFlag says that a spec's command and workdir are paths on
// the worker's machine: submit sends them as written, unchecked.
const commandOnWorkerFlag = "command-on-worker"

// trainerCheck is submit's check of a campaign's trainer, before anything
// starts: a trainer that is not there is refused at submit time, naming
// the field, instead of failing every trial on the worker.
//
// Paths in a spec file are the spec file's: a relative workdir resolves
// against the spec file's directory, a relative command[0] with a slash
// against workdir, else against the spec file's directory, and submit
// sends both absolute, so the trainer is the same whatever directory the
// worker runs in. A bare command[0] (python3) must be on this PATH and is
// sent bare: the worker looks it up in its own PATH. With
// --command-on-worker, nothing is resolved nor checked: a relative
// command[0] then resolves on the worker (against workdir, else the
// worker's directory), as the Go client's Submit, which has no spec file,
// sends every spec.
type trainerCheck struct {
	onWorker bool
}

func (c *trainerCheck) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&c.onWorker, commandOnWorkerFlag, false,
		"the spec's command and workdir are paths on the worker: send them unchecked (default: resolve relative ones against the spec file's directory and refuse a trainer that is not there)")
}

// apply returns spec with its trainer's paths resolved against specFile's
// directory, or an error (exit 2) naming the field when the trainer is
// not there.
func (c trainerCheck) apply(spec gleaner.CampaignSpec, specFile string) (gleaner.CampaignSpec, error) {
	if c.onWorker {
		return spec, nil
	}
	resolved, err := resolveTrainer(spec, specFile)
	if err != nil {
		return spec, withCode(ExitUsage, fmt.Errorf("campaign spec %s: %w\n"+
			"  relative paths in a spec are the spec file's; if this path is one on the worker's machine, submit with --%s",
			specFile, err, commandOnWorkerFlag))
	}
	return resolved, nil
}

// resolveTrainer resolves spec's workdir and command[0] against the
// directory of specFile (see trainerCheck) and checks that the trainer is
// an executable file.
func resolveTrainer(spec gleaner.CampaignSpec, specFile string) (gleaner.CampaignSpec, error) {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return spec, errors.New("command: empty") // Validate says so first
	}
	// specDir is the spec file's directory as the user wrote it (for
	// messages); base is the directory relative paths resolve against.
	specDir := filepath.Dir(specFile) + string(filepath.Separator)
	base, err := filepath.Abs(filepath.Dir(specFile))
	if err != nil {
		return spec, fmt.Errorf("the spec file's directory: %w", err)
	}
	baseShown := specDir
	if wd := spec.WorkDir; wd != "" {
		abs := wd
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(base, abs)
		}
		if err := isDir(abs); err != nil {
			return spec, fmt.Errorf("workdir: %s: %w%s", wd, err, against(wd, specDir))
		}
		spec.WorkDir = abs
		base, baseShown = abs, wd+string(filepath.Separator)
	}

	cmd0 := spec.Command[0]
	if !strings.ContainsRune(cmd0, '/') {
		if _, err := exec.LookPath(cmd0); err != nil {
			return spec, fmt.Errorf("command[0]: %s: not found on PATH (a program beside the spec file is ./%s)", cmd0, cmd0)
		}
		return spec, nil
	}
	path := cmd0
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	if err := isExecutable(path); err != nil {
		return spec, fmt.Errorf("command[0]: %s: %w%s", cmd0, err, against(cmd0, baseShown))
	}
	spec.Command = append([]string{path}, spec.Command[1:]...)
	return spec, nil
}

// against says which directory a relative path was resolved against.
func against(path, dir string) string {
	if filepath.IsAbs(path) {
		return ""
	}
	return " (resolved against " + dir + ")"
}

func isDir(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such directory")
	case err != nil:
		return unwrapPathError(err)
	case !st.IsDir():
		return errors.New("not a directory")
	}
	return nil
}

func isExecutable(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such file")
	case err != nil:
		return unwrapPathError(err)
	case st.IsDir():
		return errors.New("is a directory, not a program")
	case st.Mode()&0o111 == 0:
		return errors.New("not executable (chmod +x it)")
	}
	return nil
}

// unwrapPathError drops the path a *fs.PathError repeats.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
