package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// checkTrainer runs `gleaner trainer check --json` with args in a fresh
// --dir and returns its result and exit code.
func checkTrainer(t *testing.T, args ...string) (CheckResult, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	full := append([]string{"trainer", "check", "--json", "--dir", t.TempDir()}, args...)
	err := Run(full, &stdout, &stderr)
	var res CheckResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	return res, ExitCode(err)
}

// reasons are the result's problems' short reasons.
func reasons(res CheckResult) []string {
	var r []string
	for _, p := range res.Problems {
		r = append(r, p.Reason)
	}
	return r
}

// brokenTrainer is a shell trainer of the protocol that MODE (its env)
// breaks: "" follows it (one report per step, a checkpoint on SIGTERM and
// at the budget), "ignore" ignores SIGTERM, "nockpt" reports no
// checkpoint, "restart" ignores GLEANER_RESUME_FROM, "nobudget" trains to
// 400 steps whatever GLEANER_BUDGET says.
const brokenTrainer = `
step=0
if [ -n "$GLEANER_RESUME_FROM" ] && [ "$MODE" != restart ]; then step=$(cat "$GLEANER_RESUME_FROM"); fi
stop=0
if [ "$MODE" = ignore ]; then trap '' TERM; else trap 'stop=1' TERM; fi
end=${GLEANER_BUDGET%.*}
if [ "$MODE" = nobudget ]; then end=400; fi
while [ $stop = 0 ] && [ $step -lt $end ]; do
  step=$((step+1))
  sleep 0.02
  echo "{\"step\":$step,\"samples\":$((step*8)),\"metrics\":{\"loss\":0.5}}" >> "$GLEANER_REPORT_FILE"
done
if [ "$MODE" = nockpt ]; then
  echo "{\"step\":$step,\"samples\":$((step*8))}" >> "$GLEANER_REPORT_FILE"
  exit 0
fi
f="$GLEANER_CHECKPOINT_DIR/step-$step"
echo $step > "$f.tmp" && mv "$f.tmp" "$f"
echo "{\"step\":$step,\"samples\":$((step*8)),\"checkpoint\":\"$f\"}" >> "$GLEANER_REPORT_FILE"
`

func TestTrainerCheckPassesTheExampleTrainers(t *testing.T) {
	t.Run("go-mlp", func(t *testing.T) {
		res, code := checkTrainer(t, "--budget", "300", "--stop-after", "1", "--param", "step_ms=5", "--metric", "val_loss", "--", testenv.GoMLP(t))
		require.Equal(t, 0, code, "%s\n%+v", res.Verdict, res.Problems)
		require.True(t, res.Pass)
		require.Len(t, res.Runs, 3)
		require.True(t, res.Runs[0].StopSent)
		require.NotEmpty(t, res.Runs[0].Checkpoint)
		require.Contains(t, res.Metrics, "val_loss")
	})
	t.Run("python-minimal", func(t *testing.T) {
		py, err := exec.LookPath("python3")
		if err != nil {
			t.Skip("no python3")
		}
		root, err := filepath.Abs("../..")
		require.NoError(t, err)
		res, code := checkTrainer(t, "--workdir", root, "--metric", "val_loss", "--", py, "examples/python-minimal/train.py")
		require.Equal(t, 0, code, "%s\n%+v", res.Verdict, res.Problems)
		stopped, resumed := res.Runs[0], res.Runs[1]
		// Run 2 continues the checkpoint run 1 reported on SIGTERM.
		require.NotNil(t, resumed.First)
		require.GreaterOrEqual(t, resumed.First.Step, stopped.Checkpoints[len(stopped.Checkpoints)-1].Step)
		require.Equal(t, int64(100), resumed.Last.Step)
	})
	t.Run("go-minimal", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "go-minimal")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/gleaner-hpc/gleaner/examples/go-minimal").CombinedOutput()
		require.NoError(t, err, "go build:\n%s", out)
		for _, unit := range [][]string{{"--unit", "steps", "--budget", "100"}, {"--unit", "samples", "--budget", "3000"}, {"--unit", "epochs", "--budget", "0.5"}} {
			res, code := checkTrainer(t, append(unit, "--metric", "val_loss", "--", bin)...)
			require.Equal(t, 0, code, "%v: %s\n%+v", unit, res.Verdict, res.Problems)
		}
	})
	t.Run("shell", func(t *testing.T) {
		res, code := checkTrainer(t, "--budget", "40", "--", "/bin/sh", "-c", brokenTrainer)
		require.Equal(t, 0, code, "%s\n%+v", res.Verdict, res.Problems)
	})
}

// Each broken trainer gets the verdict that names what it breaks.
func TestTrainerCheckFailsBrokenTrainers(t *testing.T) {
	sh := []string{"--", "/bin/sh", "-c", brokenTrainer}
	cases := []struct {
		name   string
		args   []string
		reason string
		detail string
	}{
		{"ignores SIGTERM, killed", append([]string{"--budget", "100000", "--grace", "1s", "--env", "MODE=ignore"}, sh...),
			"ignored SIGTERM", "killed with SIGKILL"},
		{"ignores SIGTERM, trains on", []string{"--budget", "200", "--stop-after", "1", "--grace", "20s", "--param", "step_ms=5", "--param", "ignore_sigterm=true", "--", testenv.GoMLP(t)},
			"ignored SIGTERM", "it trained on to step 200"},
		{"never checkpoints", append([]string{"--budget", "40", "--env", "MODE=nockpt"}, sh...),
			"no checkpoint", "would start again from 0"},
		{"restarts from 0", append([]string{"--budget", "40", "--env", "MODE=restart"}, sh...),
			"resume restarts from 0", "GLEANER_RESUME_FROM"},
		{"ignores its budget", append([]string{"--budget", "40", "--env", "MODE=nobudget"}, sh...),
			"trained past its budget", "the worker stopped it"},
		{"malformed report lines", []string{"--budget", "300", "--stop-after", "1", "--param", "step_ms=5", "--param", "garbage_reports=true", "--", testenv.GoMLP(t)},
			"malformed report line(s)", "run 1 line 2: malformed report line: not a JSON object"},
		{"too short to stop", append([]string{"--budget", "1"}, sh...),
			"ended before it could be stopped", "a larger --budget"},
		{"not there", []string{"--", "./no-such-trainer"}, "could not start", "no-such-trainer"},
		{"fails", []string{"--", "/bin/sh", "-c", "echo boom >&2; exit 3"}, "failed", "run 1 ended with exit 3 before it was stopped (log: "},
		{"misses the objective", append([]string{"--budget", "40", "--metric", "val_loss"}, sh...),
			"never reported metric val_loss", "reported: loss"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, code := checkTrainer(t, tc.args...)
			require.Equal(t, 1, code)
			require.False(t, res.Pass)
			require.True(t, strings.HasPrefix(res.Verdict, "FAIL: "), res.Verdict)
			var detail string
			for _, p := range res.Problems {
				if strings.HasSuffix(p.Reason, tc.reason) {
					detail = p.Detail
				}
			}
			require.Contains(t, res.Verdict, tc.reason, "problems: %+v", res.Problems)
			require.Contains(t, detail, tc.detail)
		})
	}
}

// The text output ends with the verdict line and the problems' details,
// and keeps the trial directory of a FAIL.
func TestTrainerCheckTextOutput(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := Run([]string{"trainer", "check", "--dir", dir, "--budget", "40", "--env", "MODE=restart", "--", "/bin/sh", "-c", brokenTrainer}, &stdout, &stderr)
	require.Equal(t, 1, ExitCode(err))
	out := stdout.String()
	require.Contains(t, out, "\nFAIL: resume restarts from 0; trains from a checkpoint at its budget\n  - run 2: resume restarts from 0: run 2's first report (line 1) is at step 1")
	require.Contains(t, out, "  checkpoints  1 reported, the last at step 40, samples 320: checkpoints/step-40\n")
	require.Contains(t, out, "run 1  first start, stopped with SIGTERM mid-run\n  reports ")
	require.Empty(t, stderr.String())
	_, statErr := os.Stat(filepath.Join(dir, checkCampaign, checkTrial, "runs", "2", "report.jsonl"))
	require.NoError(t, statErr)
}

func TestTrainerCheckUsage(t *testing.T) {
	for _, args := range [][]string{
		{"trainer", "check"},
		{"trainer", "check", "python3"},
		{"trainer", "check", "--unit", "hours", "--", "true"},
		{"trainer", "check", "--budget", "0", "--", "true"},
		{"trainer", "check", "--param", "lr", "--", "true"},
		{"trainer", "check", "--param", "lr=1", "--param", "lr=2", "--", "true"},
		{"trainer", "check", "--timeout", "10m", "--", "true"},
		{"trainer", "check", "--timeout", "9m", "--grace", "2m", "--", "true"},
		{"trainer", "check", "--nodes", "0", "--", "true"},
		{"trainer", "check", "--bogus", "--", "true"},
	} {
		var stdout, stderr bytes.Buffer
		err := Run(args, &stdout, &stderr)
		require.Equal(t, ExitUsage, ExitCode(err), "%v: %v", args, err)
	}
}

func TestParseCheckParams(t *testing.T) {
	got, err := parseCheckParams([]string{"lr=0.1", "steps=600", "batch=\"64\"", "act=relu", "empty="})
	require.NoError(t, err)
	want := hpo.Params{"lr": hpo.Float(0.1), "steps": hpo.Float(600), "batch": hpo.String("64"), "act": hpo.String("relu"), "empty": hpo.String("")}
	require.Equal(t, want, got)
	js, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, `{"lr":0.1,"steps":600,"batch":"64","act":"relu","empty":""}`, string(js))
}

// docs/write-a-trainer.md shows the minimal trainers as they are in
// examples/, which the tests above check: the Python file from its
// imports on, the Go trainer's run function.
func TestWriteATrainerShowsTheExamples(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", path))
		require.NoError(t, err)
		return string(b)
	}
	doc := read("docs/write-a-trainer.md")
	py := read("examples/python-minimal/train.py")
	py = py[strings.Index(py, "\nimport json\n")+1:]
	require.Contains(t, doc, "```python\n"+py+"```\n", "docs/write-a-trainer.md: the Python trainer differs from examples/python-minimal/train.py")
	goSrc := read("examples/go-minimal/main.go")
	start := strings.Index(goSrc, "\nfunc run() error {\n") + 1
	end := start + strings.Index(goSrc[start:], "\n}\n") + 3
	require.Contains(t, doc, "```go\n"+goSrc[start:end]+"```\n", "docs/write-a-trainer.md: the Go trainer differs from examples/go-minimal/main.go")
}

// On a GPU host the check's nodes get a GPU each, as the worker's do: the
// worker's launcher sets CUDA_VISIBLE_DEVICES from them.
func TestTrainerCheckLauncherGivesEachNodeItsGPU(t *testing.T) {
	l, err := newCheckLauncher(2, []cluster.GPU{{Index: 3}, {Index: 5}})
	require.NoError(t, err)
	dir := t.TempDir()
	p, err := l.Launch(context.Background(), cluster.LaunchSpec{
		TrialID: "t1", Command: []string{"/bin/sh", "-c", `echo "$CUDA_VISIBLE_DEVICES $GLEANER_NODES" > "$GLEANER_CHECKPOINT_DIR/out"`},
		Nodes: []string{cluster.SlotID(0), cluster.SlotID(1)}, RunDir: filepath.Join(dir, "run"), CheckpointDir: filepath.Join(dir, "ckpt"),
	})
	require.NoError(t, err)
	require.True(t, p.Exit().OK())
	out, err := os.ReadFile(filepath.Join(dir, "ckpt", "out"))
	require.NoError(t, err)
	require.Equal(t, "3,5 2\n", string(out))
	require.Same(t, p, <-l.launched)
}

// Ctrl-C ends the check: the trainer is stopped, the exit status is 130
// and the trial directory is kept.
func TestTrainerCheckInterrupted(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run([]string{"trainer", "check", "--dir", dir, "--stop-after", "1000000", "--budget", "100000", "--", "/bin/sh", "-c", brokenTrainer}, &stdout, &stderr)
	}()
	report := filepath.Join(dir, checkCampaign, checkTrial, "runs", "1", "report.jsonl")
	require.Eventually(t, func() bool { b, _ := os.ReadFile(report); return bytes.Count(b, []byte("\n")) >= 2 },
		time.Minute, 20*time.Millisecond, "the trainer never reported")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the check did not end after SIGINT")
	}
	require.Equal(t, 130, ExitCode(err))
	require.Contains(t, stderr.String(), "interrupt signal received before the check ended: the trainer was stopped")
	require.Empty(t, stdout.String())
	_, statErr := os.Stat(report)
	require.NoError(t, statErr, "the trial directory is kept")
}

// A failing trainer's verdict comes with the end of its log.
func TestTrainerCheckShowsAFailingTrainersLog(t *testing.T) {
	res, code := checkTrainer(t, "--", "/bin/sh", "-c", "echo loading; echo 'boom: no data' >&2; exit 3")
	require.Equal(t, 1, code)
	require.Equal(t, "FAIL: failed", res.Verdict)
	require.Equal(t, []string{"loading", "boom: no data"}, res.Runs[0].LogTail)
	require.Equal(t, &CheckExit{Code: 3, Text: "exit 3"}, res.Runs[0].Exit)
}
