package testenv

import (
	"context"
	"os"
	"testing"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
)

// EnvRequireTemporal, set to 1, turns "no temporal CLI" from a skip into a
// failure in SkipIfNoCLI and DevServer. CI sets it.
const EnvRequireTemporal = "GLEANER_REQUIRE_TEMPORAL"

// SkipIfNoCLI skips t when no temporal CLI is found (devserver.FindCLI),
// or fails it when EnvRequireTemporal is 1. It returns the CLI's path.
func SkipIfNoCLI(t testing.TB) string {
	t.Helper()
	p, err := devserver.FindCLI()
	if err != nil {
		if os.Getenv(EnvRequireTemporal) == "1" {
			t.Fatalf("%s=1 but: %v", EnvRequireTemporal, err)
		}
		t.Skipf("skipping: %v", err)
	}
	return p
}

// DevServer starts a Temporal dev server for t (see SkipIfNoCLI) and stops
// it when t ends; when t fails, the server's last output is logged.
func DevServer(t testing.TB, opts devserver.Options) *devserver.Server {
	t.Helper()
	if opts.CLIPath == "" {
		opts.CLIPath = SkipIfNoCLI(t)
	}
	s, err := devserver.Start(context.Background(), opts)
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
