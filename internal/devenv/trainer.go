package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster"
)

// TrainerPackage is the Go example trainer, which the dev environment's
// campaigns run.
const TrainerPackage = "github.com/gleaner-hpc/gleaner/examples/go-mlp"

// BuildTrainer builds TrainerPackage into bin from the gleaner checkout at
// repo ("": the working directory, which must lie in one). The compiler's
// output goes to out, or when out is nil into the error. Cancelling ctx
// interrupts the build.
func BuildTrainer(ctx context.Context, repo, bin string, out io.Writer) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, TrainerPackage)
	build.Dir = repo
	build.Cancel = func() error { return build.Process.Signal(os.Interrupt) }
	build.WaitDelay = 10 * time.Second
	var captured strings.Builder
	if out == nil {
		out = &captured
	}
	build.Stdout, build.Stderr = out, out
	if err := build.Run(); err != nil {
		if captured.Len() > 0 {
			err = fmt.Errorf("%w\n%s", err, captured.String())
		}
		return fmt.Errorf("go build -o %s %s: %w", bin, TrainerPackage, err)
	}
	return nil
}

// RepoDir returns dir, or when it is empty the directory of the gleaner
// module that `go list -m` finds from the working directory.
func RepoDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("finding the gleaner checkout (run from it, or pass --repo): go list -m: %w", err)
	}
	dir = strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(dir, "examples", "go-mlp")); err != nil {
		return "", fmt.Errorf("%s is not a gleaner checkout (run from one, or pass --repo): %w", dir, err)
	}
	return dir, nil
}

// ExampleTrainers are allow-list patterns (worker.TrainerSettings) for the
// trainers of the examples' campaigns run from dir, the checkout's root:
// the Go example trainer built into dir/bin/go-mlp or, where `make build`
// puts it for gleaner submit, dir/examples/go-mlp/bin/go-mlp (a campaign
// submitted to `make devserver` resumes on gleaner dev's worker, which
// shares its database), and the Python
// interpreters the Python examples start (python3 on PATH,
// /usr/bin/python3, $GLEANER_PYTHON). Each command in more (a campaign's
// argv[0], resolved in dir as the launcher would) is added.
func ExampleTrainers(dir string, more ...string) []string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		dir = filepath.Clean(dir)
	}
	out := []string{filepath.Join(dir, "bin", "go-mlp"), filepath.Join(dir, "examples", "go-mlp", "bin", "go-mlp"), "/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	if p := os.Getenv("GLEANER_PYTHON"); filepath.IsAbs(p) {
		out = append(out, filepath.Clean(p))
	}
	for _, argv0 := range more {
		if p, err := cluster.ResolveCommand(argv0, dir); err == nil {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
