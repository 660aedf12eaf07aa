package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
			Params: hpo.Params{"lr": hpo.Float(0.1)}, MinNodes: 1, MaxNodes: 2, GracePeriod: time.Second, MaxRestarts: 2},
		Run: 1, Nodes: []string{"local-0", "local-1"},
	}
}

// A trainer that reports and exits 0 completes; progress that cannot be
// forwarded (the server is away) is logged, never fatal, and the result
// still carries the last report and checkpoint.
func TestRunTrialCompletesWhenSignalsFail(t *testing.T) {
	c := &failingClient{}
	env, a := runTrialEnv(t, c)
	script := `for i in 1 2 3 4 5; do
  echo x > "$GLEANER_CHECKPOINT_DIR/ck-$i"
  echo "{\"samples\": $((i*100)), \"step\": $i, \"metrics\": {\"loss\": 0.$i}, \"checkpoint\": \"$GLEANER_CHECKPOINT_DIR/ck-$i\"}" >> "$GLEANER_REPORT_FILE"
  echo 'not json' >> "$GLEANER_REPORT_FILE"
  sleep 0.05
done`
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, runInput(script))
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, workflows.RunCompleted, res.Outcome)
	require.Equal(t, 500.0, res.Samples)
	require.Equal(t, filepath.Join(a.DataDir, "c", "t1", "checkpoints", "ck-5"), res.Checkpoint)
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

// A failed trainer's error carries the last lines it wrote to its log
// (the worker has the log; the person reading the failure may not), and
// the final one says max_restarts on its first line, before them.
func TestRunTrialFailureCarriesTheLogsLastLines(t *testing.T) {
	env, _ := runTrialEnv(t, nil)
	in := runInput(`echo starting; echo 'Traceback (most recent call last):' >&2; echo 'ValueError: lr must be positive' >&2; exit 1`)
	in.Trial.MaxRestarts = 1
	for _, final := range []bool{false, true} {
		_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app)
		// The message, then the last lines this attempt wrote (the run's
		// log holds both attempts).
		lines := strings.Split(app.Message(), "\n")
		require.Len(t, lines, 4, "%q", app.Message())
		require.Regexp(t, `^trial t1: trainer exited with exit code 1 \(log: .*runs/1/trainer\.log\)`, lines[0])
		require.Equal(t, final, strings.HasSuffix(lines[0], "; trial.max_restarts: 1 reached"), lines[0])
		require.Equal(t, []string{"| starting", "| Traceback (most recent call last):", "| ValueError: lr must be positive"}, lines[len(lines)-3:])
	}
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

// trialDirs are the directories RunTrial uses for runInput's trial.
func trialDirs(a *Activities, run int) (ckpt, runDir string) {
	dir := filepath.Join(a.DataDir, "c", "t1")
	return filepath.Join(dir, "checkpoints"), filepath.Join(dir, "runs", strconv.Itoa(run))
}

// writeFile creates path's directory and writes data.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// recordResume is a trainer that writes the GLEANER_RESUME_FROM it got
// next to its report file and exits 0.
const recordResume = `printf '%s' "$GLEANER_RESUME_FROM" > "$(dirname "$GLEANER_REPORT_FILE")/resume-from"`

// A run whose trainer checkpoints often writes ledger.json at most every
// ledgerSaveEvery: a one-second run's checkpoints never reach it, and the
// next run still resumes from the newest, read from the report file.
func TestRunTrialCheckpointsReachTheLedgerFileAtMostEverySaveInterval(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	ckpt, _ := trialDirs(a, 1)
	_, run2 := trialDirs(a, 2)
	checkpointing := `d="$GLEANER_CHECKPOINT_DIR"; r="$GLEANER_REPORT_FILE"
for i in 1 2 3; do echo w > "$d/ck-$i"; printf '{"samples":%d,"checkpoint":"%s"}\n' $((i*100)) "$d/ck-$i" >> "$r"; sleep 0.05; done`
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, runInput(checkpointing))
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, filepath.Join(ckpt, "ck-3"), res.Checkpoint)
	l, err := loadLedger(filepath.Dir(ckpt))
	require.NoError(t, err)
	require.Empty(t, l.Checkpoints, "three checkpoints in well under 10 s were written to ledger.json")

	in := runInput(recordResume)
	in.Run = 2
	_, err = env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(run2, "resume-from"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(ckpt, "ck-3"), string(got))
}

// The bug of issue #9: a worker killed mid-run left its last heartbeat
// naming ck-1, while the trainer went on to write ck-2 and ck-3 and
// deleted ck-1 and ck-2 (it keeps its newest). The retry must resume from
// ck-3 — read from the report lines no attempt read — never from ck-1.
func TestRunTrialResumesFromNewestCheckpointAfterLostWorker(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	ckpt, runDir := trialDirs(a, 1)
	var lines string
	for i := 1; i <= 3; i++ {
		lines += fmt.Sprintf(`{"samples":%d,"step":%d,"checkpoint":%q}`+"\n", 100*i, i, filepath.Join(ckpt, fmt.Sprintf("ck-%d", i)))
	}
	writeFile(t, filepath.Join(runDir, cluster.ReportFileName), lines+`{"samples":350,"metrics":{"loss":0.25}}`+"\n")
	writeFile(t, filepath.Join(ckpt, "ck-3"), "weights")
	env.SetHeartbeatDetails(runState{}) // what the old worker last sent
	in := runInput(recordResume)
	in.ResumeFrom = filepath.Join(ckpt, "ck-1") // what the workflow last heard
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(runDir, "resume-from"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(ckpt, "ck-3"), string(got))
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, 350.0, res.Samples, "the earlier attempt's progress is kept")
	require.Equal(t, 0.25, res.Metrics["loss"])
	require.Zero(t, res.Failures, "a lost worker is not a trainer failure")
}

// A later run after a run whose worker died: the newest checkpoint the
// dead run's trainer reported is found in that run's reports, although
// the workflow never heard of it.
func TestRunTrialNextRunResumesFromDeadRunsCheckpoint(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	ckpt, run1 := trialDirs(a, 1)
	_, run2 := trialDirs(a, 2)
	writeFile(t, filepath.Join(run1, cluster.ReportFileName),
		fmt.Sprintf(`{"samples":100,"checkpoint":%q}`+"\n"+`{"samples":200,"checkpoint":%q}`+"\n",
			filepath.Join(ckpt, "a"), filepath.Join(ckpt, "b")))
	writeFile(t, filepath.Join(ckpt, "a"), "old")
	writeFile(t, filepath.Join(ckpt, "b"), "new")
	in := runInput(recordResume)
	in.Run, in.ResumeFrom = 2, filepath.Join(ckpt, "a")
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(run2, "resume-from"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(ckpt, "b"), string(got))
}

// A run whose trainer finished while the server was away (the result
// never reached it) is not trained again: the retry returns the result.
func TestRunTrialFinishedRunIsNotTrainedAgain(t *testing.T) {
	c := &failingClient{} // the server is still away: progress is attempted
	env, a := runTrialEnv(t, c)
	ckpt, runDir := trialDirs(a, 1)
	writeFile(t, filepath.Join(ckpt, "final"), "w")
	writeFile(t, filepath.Join(runDir, cluster.ReportFileName),
		fmt.Sprintf(`{"samples":900,"metrics":{"loss":0.1},"checkpoint":%q}`+"\n", filepath.Join(ckpt, "final")))
	require.NoError(t, runLedger{Finished: true}.save(runDir))
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, runInput(recordResume))
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, workflows.RunCompleted, res.Outcome)
	require.Equal(t, 900.0, res.Samples)
	require.Equal(t, 0.1, res.Metrics["loss"])
	require.Equal(t, filepath.Join(ckpt, "final"), res.Checkpoint)
	require.NoFileExists(t, filepath.Join(runDir, "resume-from"), "the trainer was not launched")
	require.Positive(t, c.signals, "the final progress was attempted")
}

// Reported checkpoints that do not exist, or lie outside the trial's
// checkpoint directory, never become resume points; they are counted and
// the latest is named.
func TestRunTrialRejectsBadCheckpoints(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	outside := filepath.Join(t.TempDir(), "elsewhere")
	writeFile(t, outside, "x")
	script := fmt.Sprintf(`echo x > "$GLEANER_CHECKPOINT_DIR/good"
echo "{\"samples\":1,\"checkpoint\":\"$GLEANER_CHECKPOINT_DIR/good\"}" >> "$GLEANER_REPORT_FILE"
echo "{\"samples\":2,\"checkpoint\":\"$GLEANER_CHECKPOINT_DIR/missing\"}" >> "$GLEANER_REPORT_FILE"
echo "{\"samples\":3,\"checkpoint\":\"$GLEANER_CHECKPOINT_DIR/../../../..\"}" >> "$GLEANER_REPORT_FILE"
echo "{\"samples\":4,\"checkpoint\":\"%s\"}" >> "$GLEANER_REPORT_FILE"`, outside)
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, runInput(script))
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	ckpt, _ := trialDirs(a, 1)
	require.Equal(t, filepath.Join(ckpt, "good"), res.Checkpoint)
	require.Equal(t, 3, res.BadCheckpoints)
	require.Contains(t, res.BadCheckpoint, "checkpoint \"")

	// The next run resumes from the good one.
	in := runInput(recordResume)
	in.Run, in.ResumeFrom = 2, filepath.Join(ckpt, "missing")
	_, err = env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	_, run2 := trialDirs(a, 2)
	got, err := os.ReadFile(filepath.Join(run2, "resume-from"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(ckpt, "good"), string(got))
}

// Trainer failures are counted per run on disk; the one past
// max_restarts is not retryable.
func TestRunTrialCountsFailuresAgainstMaxRestarts(t *testing.T) {
	env, _ := runTrialEnv(t, nil)
	in := runInput(`exit 1`)
	in.Trial.MaxRestarts = 1
	for attempt, final := range []bool{false, true} {
		_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app)
		require.Equal(t, final, app.NonRetryable(), "attempt %d", attempt+1)
		var res workflows.RunTrialResult
		require.NoError(t, app.Details(&res))
		require.Equal(t, attempt+1, res.Failures)
	}
}

// Campaign and trial names that are not valid path elements never reach
// the file system.
func TestRunTrialRejectsNamesThatEscape(t *testing.T) {
	for _, name := range []string{"..", "c/d", "-x", strings.Repeat("a", 300)} {
		env, a := runTrialEnv(t, nil)
		in := runInput(recordResume)
		in.Trial.CampaignID = name
		_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app, name)
		require.Equal(t, workflows.ErrTypeInvalidTrial, app.Type())
		entries, _ := os.ReadDir(a.DataDir)
		require.Empty(t, entries, name)
	}
}

// A trial directory left by an earlier campaign of the same name (its
// workflows long gone from the server) is moved aside, never resumed
// from: its finished run would otherwise end the new trial untrained.
func TestRunTrialMovesAsideAnotherTrialsDirectory(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	ckpt, runDir := trialDirs(a, 1)
	writeFile(t, filepath.Join(ckpt, "old"), "w")
	writeFile(t, filepath.Join(runDir, cluster.ReportFileName), fmt.Sprintf(`{"samples":900,"checkpoint":%q}`+"\n", filepath.Join(ckpt, "old")))
	require.NoError(t, runLedger{Finished: true}.save(runDir))
	l := trialLedger{Owner: "earlier-campaign", Read: map[string]int64{}}
	require.NoError(t, l.save(filepath.Dir(ckpt)))

	in := runInput(recordResume)
	in.Owner = "this-campaign"
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	got, err := os.ReadFile(filepath.Join(runDir, "resume-from"))
	require.NoError(t, err, "the trainer was launched")
	require.Empty(t, string(got), "a fresh start")
	require.Zero(t, res.Samples)
	aside, _ := filepath.Glob(filepath.Join(a.DataDir, "c", "t1.replaced-*", "checkpoints", "old"))
	require.Len(t, aside, 1, "the earlier directory is kept, aside")
}

// The failure past max_restarts was recorded, but its error never reached
// the server (the worker or server was lost): the retry ends the run with
// that failure instead of launching the trainer again.
func TestRunTrialDoesNotRelaunchAfterTheLastFailure(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	_, runDir := trialDirs(a, 1)
	require.NoError(t, runLedger{Failures: 2, Error: "trial t1: trainer exited with exit code 3", ErrorType: ErrTypeTrainerFailed,
		Exit: cluster.ExitStatus{Code: 3}}.save(runDir))
	in := runInput(recordResume)
	in.Trial.MaxRestarts = 1
	_, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.True(t, app.NonRetryable())
	require.Equal(t, ErrTypeTrainerFailed, app.Type())
	require.Contains(t, err.Error(), "exit code 3")
	require.Contains(t, err.Error(), "max_restarts: 1 reached")
	require.NoFileExists(t, filepath.Join(runDir, "resume-from"))
}

// A trainer SIGKILLed mid-write left half a line: the next trainer's first
// line (here its checkpoint) is not glued to it and lost.
func TestRunTrialEndsAnIncompleteReportLine(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	ckpt, runDir := trialDirs(a, 1)
	writeFile(t, filepath.Join(runDir, cluster.ReportFileName), `{"samples":100}`+"\n"+`{"samples":1`)
	script := `echo x > "$GLEANER_CHECKPOINT_DIR/ck"
echo "{\"samples\":200,\"checkpoint\":\"$GLEANER_CHECKPOINT_DIR/ck\"}" >> "$GLEANER_REPORT_FILE"`
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, runInput(script))
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, filepath.Join(ckpt, "ck"), res.Checkpoint)
	require.Equal(t, 200.0, res.Samples)
	require.Equal(t, 1, res.Malformed, "the fragment is one malformed line")
}

// A trainer that prunes its older checkpoints as it reports newer ones
// (the protocol allows it) has none rejected; a relative path in a
// relative workdir is resolved against it.
func TestRunTrialPrunedCheckpointsAreNotBad(t *testing.T) {
	env, a := runTrialEnv(t, nil)
	ckpt, _ := trialDirs(a, 1)
	require.NoError(t, os.MkdirAll(ckpt, 0o755))
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel, err := filepath.Rel(wd, filepath.Dir(ckpt))
	require.NoError(t, err)
	script := `for i in 1 2 3 4 5 6; do
  echo x > checkpoints/ck-$i
  echo "{\"samples\":$i,\"checkpoint\":\"checkpoints/ck-$i\"}" >> "$GLEANER_REPORT_FILE"
  rm -f checkpoints/ck-$((i-1))
done`
	in := runInput(script)
	in.Trial.WorkDir = rel
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, in)
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Zero(t, res.BadCheckpoints, res.BadCheckpoint)
	require.Equal(t, filepath.Join(ckpt, "ck-6"), res.Checkpoint)
}

// Attempts of one trial run one at a time in a worker: a second waits,
// heartbeating, until the first is done.
func TestLockTrialSerialisesAttempts(t *testing.T) {
	a := &Activities{HeartbeatInterval: time.Millisecond}
	unlock, err := a.lockTrial(context.Background(), "/d", func() {})
	require.NoError(t, err)
	beats := make(chan struct{}, 100)
	acquired := make(chan func())
	go func() {
		u, err := a.lockTrial(context.Background(), "/d", func() {
			select {
			case beats <- struct{}{}:
			default:
			}
		})
		if err == nil {
			acquired <- u
		}
	}()
	<-beats
	<-beats // waiting, and heartbeating while it waits
	select {
	case <-acquired:
		t.Fatal("acquired while the first attempt held the trial")
	default:
	}
	other, err := a.lockTrial(context.Background(), "/other", func() {})
	require.NoError(t, err, "another trial is not held up")
	other()
	unlock()
	(<-acquired)()
	// A cancelled wait gives up.
	unlock, err = a.lockTrial(context.Background(), "/d", func() {})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = a.lockTrial(ctx, "/d", func() {})
	require.ErrorIs(t, err, context.Canceled)
	unlock()
	require.Empty(t, a.locks, "no lock is left behind")
}

// unansweredClient is a server that takes signals and never answers (it
// went away mid-call): each call waits until its context ends.
type unansweredClient struct {
	client.Client
	mu    sync.Mutex
	calls int
}

func (c *unansweredClient) SignalWorkflow(ctx context.Context, _, _, _ string, _ interface{}) error {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	<-ctx.Done()
	return ctx.Err()
}

// Progress that cannot reach the server never holds up the run: the
// trainer's exit is noticed and recorded (run.json) while signals hang.
// (It blocked the loop before: a trainer that finished during an outage
// was not recorded as finished until the server answered.)
func TestRunTrialProgressNeverBlocksTheRun(t *testing.T) {
	c := &unansweredClient{}
	env, a := runTrialEnv(t, c)
	a.ProgressTimeout = 50 * time.Millisecond
	script := `for i in 1 2 3 4 5 6 7 8 9 10; do
  echo "{\"samples\": $i}" >> "$GLEANER_REPORT_FILE"
  sleep 0.02
done`
	v, err := env.ExecuteActivity(workflows.RunTrialActivityName, runInput(script))
	require.NoError(t, err)
	var res workflows.RunTrialResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, 10.0, res.Samples)
	_, runDir := trialDirs(a, 1)
	l, err := loadRunLedger(runDir)
	require.NoError(t, err)
	require.True(t, l.Finished)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Positive(t, c.calls)
}
