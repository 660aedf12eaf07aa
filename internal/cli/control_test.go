package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// The campaign's validator refuses an update: its message, exit 4.
func TestControlRejectionExitsFour(t *testing.T) {
	refused := fmt.Errorf("update failed: %w", temporal.NewApplicationError("campaign c is already paused", ""))
	err := controlErr(context.Background(), nil, "pause", "c", refused)
	require.Equal(t, ExitRejected, ExitCode(err))
	require.Equal(t, "pause rejected: campaign c is already paused", err.Error())

	other := errors.New("deadline exceeded")
	require.Equal(t, other, controlErr(context.Background(), nil, "stop", "c", other))
}

func TestControlVerbs(t *testing.T) {
	var names []string
	for _, c := range newControlCmds() {
		names = append(names, c.Name())
		require.NotNil(t, c.Flags().Lookup("reason"))
		require.NotEmpty(t, c.Example)
	}
	require.Equal(t, []string{"pause", "resume", "stop"}, names)
}
