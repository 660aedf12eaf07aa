package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A negative --limit is a usage error, told before any server is dialled
// (none listens at this address).
func TestTrialsNegativeLimitIsAUsageErrorWithoutAServer(t *testing.T) {
	_, _, err := runCLI(t, "trials", "c", "--limit", "-1", "--address", "127.0.0.1:1")
	require.ErrorContains(t, err, "--limit: -1 must not be negative")
	require.Equal(t, ExitUsage, ExitCode(err))
}
