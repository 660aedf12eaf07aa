package activities

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner/cluster"
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

// A run that reaches its budget seals its checkpoint there; a trial
// created from it starts from a copy of that checkpoint in its own
// directory, even after the first trial trained on and pruned it.
func TestTrialStartsFromAnotherTrialsBudgetCheckpoint(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	in := runInput(budgetTrainer)
	in.Trial.Budget, in.Trial.BudgetUnit = 300, "samples"
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	sealed := filepath.Join(a.DataDir, "c", "t1", sealedDirName)
	require.FileExists(t, filepath.Join(sealed, "300", "ck-3"))

	// t1 trains on to 500 and prunes ck-3.
	in.Run, in.Trial.Budget = 2, 500
	_, err = env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	ckpt, _ := trialDirs(a, 2)
	require.NoFileExists(t, filepath.Join(ckpt, "ck-3"), "the trainer pruned it")
	require.FileExists(t, filepath.Join(sealed, "500", "ck-5"), "the new budget end is sealed")
	require.FileExists(t, filepath.Join(sealed, "300", "ck-3"), "and the earlier one kept")

	// t2 from t1 at 500: its first run resumes from its own copy of ck-5.
	from := runInput(budgetTrainer)
	from.Trial.TrialID, from.Trial.From, from.Trial.FromProgress, from.Trial.Budget, from.Trial.BudgetUnit = "t2", "t1", 500, 700, "samples"
	_, err = env.ExecuteActivity(workflows.RunTrialActivityName, from)
	require.NoError(t, err)
	t2 := filepath.Join(a.DataDir, "c", "t2")
	got, err := os.ReadFile(filepath.Join(t2, "runs", "1", "resume-from"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(t2, "checkpoints", "ck-5"), string(got), "resumed from the copy inside its own checkpoint directory")
	require.FileExists(t, filepath.Join(t2, "checkpoints", "ck-7"), "it trained on from 500 to its budget")
	require.NoFileExists(t, filepath.Join(t2, "checkpoints", "ck-1"), "no sample was trained again")
}

// PBT's exploit chose t1 at its budget end 300; t3, created from there
// with a budget of 400, waited for nodes while t1 trained on to 500. It
// starts from t1's checkpoint at 300, not its newest, and trains its own
// parameters from 300 to 400: its first report is at 400, not past it.
func TestTrialFromABudgetEndItsSourceTrainedPast(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	in := runInput(budgetTrainer)
	in.Trial.Budget, in.Trial.BudgetUnit = 300, "samples"
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	in.Run, in.Trial.Budget = 2, 500
	_, err = env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)

	from := runInput(budgetTrainer)
	from.Trial.TrialID, from.Trial.From, from.Trial.FromProgress, from.Trial.Budget, from.Trial.BudgetUnit = "t3", "t1", 300, 400, "samples"
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, from)
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	t3 := filepath.Join(a.DataDir, "c", "t3")
	got, err := os.ReadFile(filepath.Join(t3, "runs", "1", "resume-from"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(t3, "checkpoints", "ck-3"), string(got), "started from t1's checkpoint at 300")
	lines := reportSamples(t, filepath.Join(t3, "runs", "1"))
	require.Equal(t, []float64{400}, lines, "one interval trained, ending at the budget")
	require.Equal(t, workflows.RunCompleted, res.Outcome)
	require.Equal(t, 400.0, res.Samples)

	// Nothing sealed at the budget end asked for: an error naming it.
	from.Trial.TrialID, from.Trial.FromProgress = "t4", 400
	_, err = env.ExecuteActivity(workflows.RunTrialActivityName, from)
	require.ErrorContains(t, err, "trial t4 starts from trial t1 at 400 samples: no checkpoint sealed at a budget end")
}

// reportSamples is the samples of every report line in runDir's report
// file, in order.
func reportSamples(t *testing.T, runDir string) []float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, cluster.ReportFileName))
	require.NoError(t, err)
	var out []float64
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Samples *float64 `json:"samples"`
		}
		if json.Unmarshal([]byte(l), &r) == nil && r.Samples != nil {
			out = append(out, *r.Samples)
		}
	}
	return out
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
