package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// fakeTaskQueues answers DescribeTaskQueue with pollers (or err) and
// records what it was asked.
type fakeTaskQueues struct {
	pollers []*taskqueue.PollerInfo
	err     error
	asked   []string
}

func (f *fakeTaskQueues) DescribeTaskQueue(_ context.Context, tq string, typ enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	f.asked = append(f.asked, tq+" "+typ.String())
	if f.err != nil {
		return nil, f.err
	}
	return &workflowservice.DescribeTaskQueueResponse{Pollers: f.pollers}, nil
}

// After a submit, no worker polling the task queue is a warning naming
// the queue and how to start one; a worker there, or a server that will
// not say, is no warning.
func TestWarnIfNoWorker(t *testing.T) {
	cfg := client.DefaultConnection()
	cfg.HostPort, cfg.TaskQueue = "t.example:7233", "hpo"
	start := commandHint(" --address t.example:7233 --task-queue hpo", "worker")
	for _, tc := range []struct {
		tq   *fakeTaskQueues
		warn bool
	}{
		{&fakeTaskQueues{}, true},
		{&fakeTaskQueues{pollers: []*taskqueue.PollerInfo{{Identity: "w@node1"}}}, false},
		{&fakeTaskQueues{err: errors.New("permission denied")}, false},
	} {
		var errOut bytes.Buffer
		warnIfNoWorker(context.Background(), tc.tq, cfg, "spirals", &errOut, start)
		require.Equal(t, []string{"hpo Workflow"}, tc.tq.asked)
		if !tc.warn {
			require.Empty(t, errOut.String())
			continue
		}
		require.Equal(t, "gleaner submit: warning: no worker polls task queue hpo on t.example:7233 (namespace default): campaign spirals waits until one does\n"+
			"  start one with: gleaner worker --address t.example:7233 --task-queue hpo\n", errOut.String())
	}
}

// A submit with no worker running: exit 0, the warning on stderr with the
// connection flags given, and a hint to follow the campaign with them.
func TestSubmitWithoutAWorkerWarns(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Temporal dev server")
	}
	clearConnectionEnv(t)
	srv := testenv.DevServer(t, devserver.Options{UI: true})
	p := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(validSpecJSON, `"name": "ok"`, `"name": "no-worker"`, 1)), 0o644))

	const tq = "cli-no-worker"
	conn := " --address " + srv.Address() + " --task-queue " + tq
	out, errOut, code := cliRun(t, "submit", "-f", p, "--address", srv.Address(), "--task-queue", tq)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "submitted campaign no-worker")
	require.Contains(t, out, "  follow    gleaner status no-worker --watch"+conn+"\n")
	require.Contains(t, errOut, "warning: no worker polls task queue "+tq+" on "+srv.Address())
	require.Contains(t, errOut, "start one with: gleaner worker"+conn+"\n")

	// The UI the dev server started answers the probe; its gRPC port does not.
	require.True(t, probeTemporalUI(t.Context(), srv.UIURL()), srv.UIURL())
	require.False(t, probeTemporalUI(t.Context(), "http://"+srv.Address()))
}
