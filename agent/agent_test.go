package agent_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/agent"
	"github.com/gleaner-hpc/gleaner/client"
)

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func testConfig(t *testing.T, connectTimeout time.Duration) agent.Config {
	return agent.Config{
		Connection: client.Connection{HostPort: closedAddr(t), Namespace: "default", TaskQueue: "q", ConnectTimeout: connectTimeout},
		Pool:       "p", Slots: 1, NodePrefix: "g1", Whole: true, GPUs: "none",
		AdvertiseAddr: "127.0.0.1", DataDir: t.TempDir(), StopTimeout: time.Second,
	}
}

// A pilot Slurm preempts while its agent is still connecting had joined
// nothing: it leaves cleanly (exit 0), not as a failed job.
func TestAgentStoppedWhileConnectingLeavesCleanly(t *testing.T) {
	var logs []string
	logf := func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	a, err := agent.New(context.Background(), testConfig(t, time.Minute), logf)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the SIGTERM came first
	assert.NoError(t, a.Run(ctx))
	assert.Contains(t, strings.Join(logs, "\n"), "stopped before it joined pool p")
}

// An unreachable server is still an error when nobody stopped the agent.
func TestAgentUnreachableServerIsAnError(t *testing.T) {
	a, err := agent.New(context.Background(), testConfig(t, 0), nil)
	require.NoError(t, err)
	err = a.Run(context.Background())
	assert.ErrorContains(t, err, "connecting to Temporal")
}
