package devserver

import (
	"context"
	"os"
	"testing"
)

// Required reports whether GLEANER_REQUIRE_TEMPORAL=1: a missing temporal
// CLI is then a failure, not a skip.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// SkipIfNoCLI skips t when no temporal CLI is found, or fails it when
// Required. It returns the CLI's path.
func SkipIfNoCLI(t testing.TB) string {
	t.Helper()
	p, err := FindCLI()
	if err != nil {
		if Required() {
			t.Fatalf("%s=1 but: %v", EnvRequire, err)
		}
		t.Skipf("skipping: %v", err)
	}
	return p
}

// ForTest starts a dev server for t (see SkipIfNoCLI) and stops it when t
// ends; when t fails, the server's last output is logged.
func ForTest(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.CLIPath == "" {
		opts.CLIPath = SkipIfNoCLI(t)
	}
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the Temporal dev server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("stopping the Temporal dev server: %v", err)
		}
		if t.Failed() {
			t.Logf("Temporal dev server output (tail):\n%s", s.OutputTail())
		}
	})
	return s
}
