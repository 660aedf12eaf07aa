package activities

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// failingClient refuses every signal, as a client does while the server
// is restarting; everything else is unused here.
type failingClient struct {
	client.Client
	signals int
}

func (c *failingClient) SignalWorkflow(context.Context, string, string, string, interface{}) error {
	c.signals++
	return errors.New("server unavailable")
}

func runTrialEnv(t *testing.T, c client.Client) (*testsuite.TestActivityEnvironment, *Activities) {
	host, err := cluster.NewLocalHost(context.Background(), cluster.LocalConfig{Slots: 2, GPUs: []cluster.GPU{}})
	require.NoError(t, err)
	launcher, err := cluster.NewLocalLauncher(host)
	require.NoError(t, err)
	a := &Activities{Client: c, Launcher: launcher, DataDir: t.TempDir(), ProgressInterval: time.Millisecond, HeartbeatInterval: 10 * time.Millisecond}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(a.RunTrial, activity.RegisterOptions{Name: workflows.RunTrialActivityName})
	return env, a
}

func runInput(script string) workflows.RunTrialInput {
	return workflows.RunTrialInput{
		Trial: workflows.TrialInput{TrialID: "t1", CampaignID: "c", Pool: "p", Command: []string{"/bin/sh", "-c", script},
			Params: hpo.Params{"lr": hpo.Float(0.1)}, MinNodes: 1, MaxNodes: 2, GracePeriod: time.Second},
		Run: 1, Nodes: []string{"local-0", "local-1"},
	}
}

// A trainer that reports and exits 0 completes; progress that cannot be
// forwarded (the server is away) is logged, never fatal, and the result
// still carries the last report and checkpoint.
func TestRunTrialCompletesWhenSignalsFail(t *testing.T) {
	c := &failingClient{}
	env, _ := runTrialEnv(t, c)
	script := `for i in 1 2 3 4 5; do
  echo "{\"samples\": $((i*100)), \"step\": $i, \"metrics\": {\"loss\": 0.$i}, \"checkpoint\": \"ck-$i\"}" >> "$GLEANER_REPORT_FILE"
  echo 'not json' >> "$GLEANER_REPORT_FILE"
  sleep 0.05
done`
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, runInput(script))
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, workflows.RunCompleted, res.Outcome)
	require.Equal(t, 500.0, res.Samples)
	require.Equal(t, "ck-5", res.Checkpoint)
	require.Equal(t, 0.5, res.Metrics["loss"])
	require.Equal(t, 5, res.Malformed)
	require.Positive(t, c.signals, "progress was attempted")
}

// A trainer that exits non-zero is a retryable TrainerFailed error naming
// the exit code and the log file.
func TestRunTrialTrainerFailure(t *testing.T) {
	env, _ := runTrialEnv(t, nil)
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, runInput(`echo boom >&2; exit 7`))
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "got %v", err)
	require.Equal(t, ErrTypeTrainerFailed, app.Type())
	require.False(t, app.NonRetryable())
	require.Contains(t, err.Error(), "exit code 7")
	require.Contains(t, err.Error(), filepath.Join("runs", "1", cluster.LogFileName))
}

// A command that does not exist can never run: non-retryable.
func TestRunTrialMissingCommand(t *testing.T) {
	env, _ := runTrialEnv(t, nil)
	in := runInput("")
	in.Trial.Command = []string{"./no-such-trainer"}
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "got %v", err)
	require.Equal(t, workflows.ErrTypeInvalidTrial, app.Type())
	require.True(t, app.NonRetryable())
	require.True(t, strings.Contains(err.Error(), "no-such-trainer"))
}
