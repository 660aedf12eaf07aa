package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// A run stopped before its trainer started reaches its trial as a failure,
// not a cancellation, when the worker's heartbeat failed on a loaded
// server: the SDK cancels the run, reports its "stopped before its trainer
// started" as failed (the cancellation was not the server's), and the
// server, which had been asked to cancel it, does not retry it. A bench of
// 10,000 inline trials with a CI run beside it lost 17 trials so at a
// continue-as-new. Both runtimes take it as the cancellation it is
// (canceledBeforeLaunch): nothing ran. (The test environment settles a
// cancelled activity as cancelled at once, so this checks what a run's
// end is taken for.)
func TestARunStoppedBeforeItsTrainerStartedIsNoFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"stopped before launch, reported failed", temporal.NewApplicationErrorWithOptions("trial t00001: run 1 stopped before its trainer started: context canceled",
			ErrTypeRunCanceled, temporal.ApplicationErrorOptions{Cause: context.Canceled, Category: temporal.ApplicationErrorCategoryBenign}), true},
		{"a trainer that failed", temporal.NewNonRetryableApplicationError("trial t00001: trainer exited with exit code 3", "TrainerFailed", nil), false},
		{"an invalid trial", temporal.NewNonRetryableApplicationError("bad", ErrTypeInvalidTrial, nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			env.RegisterActivityWithOptions(func(context.Context) error { return tc.err }, activity.RegisterOptions{Name: "run"})
			env.ExecuteWorkflow(func(ctx workflow.Context) (bool, error) {
				ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: TrialStartToClose,
					RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
				err := workflow.ExecuteActivity(ctx, "run").Get(ctx, nil)
				var canceled *temporal.CanceledError
				if err == nil || errors.As(err, &canceled) {
					return false, errors.New("want the run's failure")
				}
				return canceledBeforeLaunch(ctx, err), nil
			})
			require.NoError(t, env.GetWorkflowError())
			var got bool
			require.NoError(t, env.GetWorkflowResult(&got))
			require.Equal(t, tc.want, got)
		})
	}
}
