package activities

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// budgetTrainer writes checkpoints ck-1.. at 100 samples each until its
// budget, reporting each, then prunes all but the newest and exits 0.
const budgetTrainer = `i=0
case "$GLEANER_RESUME_FROM" in ?*) i=$(cat "$GLEANER_RESUME_FROM");; esac
printf '%s' "$GLEANER_RESUME_FROM" > "$(dirname "$GLEANER_REPORT_FILE")/resume-from"
while [ $((i*100)) -lt "${GLEANER_BUDGET:-300}" ]; do
  i=$((i+1))
  printf '%s' "$i" > "$GLEANER_CHECKPOINT_DIR/.tmp" && mv "$GLEANER_CHECKPOINT_DIR/.tmp" "$GLEANER_CHECKPOINT_DIR/ck-$i"
  echo "{\"samples\": $((i*100)), \"checkpoint\": \"$GLEANER_CHECKPOINT_DIR/ck-$i\"}" >> "$GLEANER_REPORT_FILE"
done
for f in "$GLEANER_CHECKPOINT_DIR"/ck-*; do [ "$f" = "$GLEANER_CHECKPOINT_DIR/ck-$i" ] || rm -f "$f"; done`

// A run that reaches its budget seals its checkpoint; a trial created
// from it starts from a copy of that checkpoint in its own directory,
// even after the first trial trained on and pruned it.
func TestTrialStartsFromAnotherTrialsBudgetCheckpoint(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	in := runInput(budgetTrainer)
	in.Trial.Budget, in.Trial.BudgetUnit = 300, "samples"
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	sealed := filepath.Join(a.DataDir, "c", "t1", sealedDirName, "ck-3")
	require.FileExists(t, sealed)

	// t1 trains on to 500 and prunes ck-3.
	in.Run, in.Trial.Budget = 2, 500
	_, err = env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	ckpt, _ := trialDirs(a, 2)
	require.NoFileExists(t, filepath.Join(ckpt, "ck-3"), "the trainer pruned it")
	require.FileExists(t, filepath.Join(a.DataDir, "c", "t1", sealedDirName, "ck-5"), "the latest budget end is sealed")
	require.NoFileExists(t, sealed, "only the latest seal is kept")

	// t2 from t1: its first run resumes from its own copy of ck-5.
	from := runInput(budgetTrainer)
	from.Trial.TrialID, from.Trial.From, from.Trial.Budget, from.Trial.BudgetUnit = "t2", "t1", 700, "samples"
	_, err = env.ExecuteActivity(workflows.RunTrialActivityName, from)
	require.NoError(t, err)
	t2 := filepath.Join(a.DataDir, "c", "t2")
	got, err := os.ReadFile(filepath.Join(t2, "runs", "1", "resume-from"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(t2, "checkpoints", "ck-5"), string(got), "resumed from the copy inside its own checkpoint directory")
	require.FileExists(t, filepath.Join(t2, "checkpoints", "ck-7"), "it trained on from 500 to its budget")
	require.NoFileExists(t, filepath.Join(t2, "checkpoints", "ck-1"), "no sample was trained again")
}

// A trial created from one that never reached a budget fails at once,
// naming both.
func TestTrialFromATrialWithoutSealedCheckpointFails(t *testing.T) {
	env, _ := runTrialEnv(t, nil)
	in := runInput(budgetTrainer)
	in.Trial.TrialID, in.Trial.From = "t2", "t1"
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "got %v", err)
	require.True(t, app.NonRetryable())
	require.Contains(t, err.Error(), "trial t2 starts from trial t1")
	require.Contains(t, err.Error(), "no checkpoint sealed at a budget end")
}

// A trainer that never reads GLEANER_BUDGET is stopped by the run once a
// report crosses it: the run finishes (completed, its checkpoint sealed)
// instead of training on.
func TestRunStopsATrainerPastItsBudget(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	script := `trap 'exit 0' TERM
i=0
while :; do
  i=$((i+1))
  echo x > "$GLEANER_CHECKPOINT_DIR/ck-$i"
  echo "{\"samples\": $((i*100)), \"checkpoint\": \"$GLEANER_CHECKPOINT_DIR/ck-$i\"}" >> "$GLEANER_REPORT_FILE"
  sleep 0.02
done`
	in := runInput(script)
	in.Trial.Budget, in.Trial.BudgetUnit = 1000, "samples"
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, workflows.RunCompleted, res.Outcome)
	require.GreaterOrEqual(t, res.Samples, 1000.0)
	entries, err := os.ReadDir(filepath.Join(a.DataDir, "c", "t1", sealedDirName))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the checkpoint at the budget is sealed")
	t.Logf("stopped at %v samples for a budget of 1000", res.Samples)
}
