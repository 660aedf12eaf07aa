package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// followersSpec is a campaign of the command %CMD% (a YAML list).
const followersSpec = `name: %NAME%
pool: cli-followers
command: %CMD%
space:
  - {name: lr, type: float, min: 0.01, max: 0.5, log: true}
  - {name: steps, type: choice, choices: [2000]}
  - {name: step_ms, type: choice, choices: [20]}
  - {name: report_every, type: choice, choices: [5]}
  - {name: checkpoint_every, type: choice, choices: [10]}
objective: {metric: val_loss, mode: min}
budget: {max_trials: %TRIALS%, max_concurrent: 2, max_failures: 2}
resources: {min_nodes: 1, max_nodes: 1}
trial: {grace_period: 5s, max_restarts: 1}
`

func writeFollowersSpec(t *testing.T, dir, name, command string, trials int) string {
	t.Helper()
	spec := strings.NewReplacer("%NAME%", name, "%CMD%", command, "%TRIALS%", strconv.Itoa(trials)).Replace(followersSpec)
	path := filepath.Join(dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(spec), 0o644))
	return path
}

// The CLI against a real dev server and worker, for what a person sees
// when a campaign fails, misses its objective, is listed, or is followed
// and interrupted: `list`, a failed campaign's message in `submit --wait`,
// `status`, `status --watch` and `trials`, the missing-objective warning
// of `submit --wait`, Ctrl-C (SIGINT to a real process) in `submit --wait`
// and `status --watch`, and `--version` of a binary built from the clone.
func TestCLIListFailuresAndInterrupts(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Temporal dev server")
	}
	clearConnectionEnv(t)
	srv := testenv.DevServer(t, devserver.Options{})
	const tq = "cli-followers"
	testenv.Worker(t, srv, tq, nil)
	conn := []string{"--address", srv.Address(), "--namespace", srv.Namespace(), "--task-queue", tq, "--ui", "-"}
	with := func(args ...string) []string { return append(args, conn...) }
	dir := t.TempDir()
	mlp := testenv.GoMLP(t)
	// Built as `go build` builds by default (this machine's GOFLAGS may
	// say -buildvcs=false): from a clone, the toolchain stamps the commit.
	bin := filepath.Join(t.TempDir(), "gleaner")
	headBefore, gitErr := exec.Command("git", "rev-parse", "HEAD").Output()
	built, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "github.com/gleaner-hpc/gleaner/cmd/gleaner").CombinedOutput()
	require.NoError(t, err, "go build:\n%s", built)
	headAfter, _ := exec.Command("git", "rev-parse", "HEAD").Output() // a commit may land meanwhile

	// A binary built from a clone names its commit.
	version, err := exec.Command(bin, "--version").CombinedOutput()
	require.NoError(t, err, "%s", version)
	if gitErr == nil && len(headBefore) >= 12 && len(headAfter) >= 12 {
		require.Regexp(t, `^gleaner \(devel\) commit (`+string(headBefore[:12])+`|`+string(headAfter[:12])+`) \(.*\), built with go\d`, string(version))
	} else {
		t.Logf("not in a git clone (%v): %s", gitErr, version)
	}

	// A trainer that fails: the campaign fails at budget.max_failures, and
	// its message names the trials, their exit and their logs' last lines.
	failing := writeFollowersSpec(t, dir, "h3-fail",
		`["/bin/sh", "-c", "echo training; echo 'Traceback (most recent call last):' >&2; echo 'ValueError: lr out of range' >&2; exit 3"]`, 4)
	out, errOut, code := cliRun(t, with("submit", "-f", failing, "--wait", "--interval", "300ms")...)
	require.Equal(t, ExitFailure, code)
	require.NotContains(t, errOut, "workflow execution error")
	require.Contains(t, errOut, "gleaner: campaign h3-fail failed: budget.max_failures: 2 trials failed (max 2)")
	require.Regexp(t, `\n  t0000\d \([^)]*lr=[0-9.e-]+[^)]*\): trainer exited with exit code 3 \(log: [^)]*trainer\.log\); trial\.max_restarts: 1 reached\n`+
		`    \| training\n    \| Traceback \(most recent call last\):\n    \| ValueError: lr out of range\n`, errOut)
	require.Equal(t, 2, strings.Count(errOut, "ValueError: lr out of range\n"), "both failed trials: the log's last line")

	// So does an inline campaign's (its trials are activities, their
	// records in chunks).
	inline := writeFollowersSpec(t, dir, "h3-inline",
		`["/bin/sh", "-c", "echo 'ValueError: inline lr out of range' >&2; exit 4"]`, 4)
	b, err := os.ReadFile(inline)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(inline, []byte(strings.Replace(string(b), "max_restarts: 1}", "max_restarts: 1, inline: true}", 1)), 0o644))
	_, errOut, code = cliRun(t, with("submit", "-f", inline, "--wait", "--interval", "300ms")...)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "gleaner: campaign h3-inline failed: budget.max_failures: 2 trials failed (max 2)")
	require.Regexp(t, `\n  t0000\d \(.*\): trainer exited with exit code 4 \(log: [^)]*trainer\.log\); trial\.max_restarts: 1 reached\n`+
		`    \| ValueError: inline lr out of range\n`, errOut)

	out, _, code = cliRun(t, with("status", "h3-fail")...)
	require.Equal(t, ExitOK, code)
	require.Regexp(t, `(?m)^failed    t0000\d \(.*lr=.*exit code 3 \(log: .*\n            \| training\n`, out)
	_, errOut, code = cliRun(t, with("status", "h3-fail", "--watch", "--interval", "200ms")...)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, errOut, "| ValueError: lr out of range")
	out, _, code = cliRun(t, with("trials", "h3-fail")...)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "ValueError: lr out of range", "trials shows the reason whole")
	require.Contains(t, out, "exit code 3 (log: ")

	// A trainer that never reports the objective: completed, exit 0, and
	// the summary warns.
	silent := writeFollowersSpec(t, dir, "h3-silent", `["/bin/sh", "-c", "exit 0"]`, 2)
	out, _, code = cliRun(t, with("submit", "-f", silent, "--wait", "--interval", "300ms")...)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "campaign h3-silent completed: 2 completed")
	require.Regexp(t, `(?m)^  warning   2 of 2 finished trials never reported objective metric "val_loss"`, out)

	// Ctrl-C in submit --wait: the campaign goes on; exit 130.
	slow := writeFollowersSpec(t, dir, "h3-slow", `["`+mlp+`"]`, 4)
	p := startCLI(t, bin, with("submit", "-f", slow, "--wait", "--interval", "200ms")...)
	p.interruptAfter(t, regexp.MustCompile(`\] 0/4 trials`))
	requireInterrupted(t, p, "h3-slow", srv.Address())
	out, _, code = cliRun(t, with("status", "h3-slow")...)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "state     running", "the campaign goes on after Ctrl-C")

	// … and in status --watch.
	p = startCLI(t, bin, with("status", "h3-slow", "--watch", "--interval", "200ms")...)
	p.interruptAfter(t, regexp.MustCompile(`\] \d/4 trials`))
	requireInterrupted(t, p, "h3-slow", srv.Address())

	// list: the three campaigns, newest first; --running only the one.
	want := map[string]workflows.CampaignPhase{"h3-slow": workflows.CampaignRunning,
		"h3-silent": workflows.CampaignCompleted, "h3-inline": workflows.CampaignFailed, "h3-fail": workflows.CampaignFailed}
	var list []client.CampaignSummary
	deadline := time.Now().Add(time.Minute) // visibility lags a moment
	for {
		out, _, code = cliRun(t, with("list", "--json")...)
		require.Equal(t, ExitOK, code)
		require.NoError(t, json.Unmarshal([]byte(out), &list))
		got := map[string]workflows.CampaignPhase{}
		for _, s := range list {
			got[s.Name] = s.State
		}
		if len(got) == len(want) && got["h3-slow"] == want["h3-slow"] && got["h3-silent"] == want["h3-silent"] &&
			got["h3-inline"] == want["h3-inline"] && got["h3-fail"] == want["h3-fail"] {
			break
		}
		require.True(t, time.Now().Before(deadline), "list: %v, want %v", got, want)
		time.Sleep(300 * time.Millisecond)
	}
	require.Equal(t, []string{"h3-slow", "h3-silent", "h3-inline", "h3-fail"}, []string{list[0].Name, list[1].Name, list[2].Name, list[3].Name})
	for _, s := range list {
		require.Equal(t, "val_loss", s.Objective)
		require.Equal(t, "min", s.Mode)
		require.False(t, s.Started.IsZero())
		require.Equal(t, workflows.CampaignWorkflowID(s.Name), s.WorkflowID)
	}
	require.Equal(t, 4, list[3].MaxTrials)
	// As many ended as status says (2 failed, and a third stopped if it
	// had started when the campaign failed).
	out, _, code = cliRun(t, with("status", "h3-fail", "--json")...)
	require.Equal(t, ExitOK, code)
	var st statusJSON
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, st.Ended(), list[3].TrialsDone)
	require.True(t, list[3].Ended() && list[2].Ended() && list[1].Ended() && !list[0].Ended())
	require.Nil(t, list[1].Best, "h3-silent never reported val_loss")

	out, _, code = cliRun(t, with("list")...)
	require.Equal(t, ExitOK, code)
	require.Regexp(t, `(?m)^CAMPAIGN +STATE +TRIALS +IN FLIGHT +BEST +AGE\nh3-slow +running +\d/4 \(\d+%\) +\d +`, out)
	require.Regexp(t, `(?m)^h3-silent +completed +2/2 \(100%\) +0 +- +\d+[sm]$`, out)
	require.Regexp(t, fmt.Sprintf(`(?m)^h3-fail +failed +%d/4 \(%d%%\) +0 +- +\d+[sm]$`, st.Ended(), 25*st.Ended()), out)
	out, _, code = cliRun(t, with("list", "--running")...)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "h3-slow")
	require.NotContains(t, out, "h3-fail")
	out, _, code = cliRun(t, with("list", "--limit", "1")...)
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "h3-slow")
	require.NotContains(t, out, "h3-silent")
	require.Contains(t, out, "(the newest 1; --limit 0 shows all)")

	_, _, code = cliRun(t, with("stop", "h3-slow")...)
	require.Equal(t, ExitOK, code)
}

// requireInterrupted: p, interrupted while it followed campaign name,
// exits 130 saying that the campaign goes on and how to follow or stop it
// on the server at address.
func requireInterrupted(t *testing.T, p *cliProc, name, address string) {
	t.Helper()
	err := p.wait(t, time.Minute)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "exit: %v", err)
	require.Equal(t, 130, exit.ExitCode(), "stderr:\n%s", p.errOut())
	require.Contains(t, p.errOut(), "gleaner: interrupted (SIGINT): stopped following campaign "+name+", which goes on running on the server\n"+
		"  follow it: gleaner status "+name+" --watch --address "+address)
	require.Contains(t, p.errOut(), "\n  stop it:   gleaner stop "+name+" --address "+address)
	require.NotContains(t, p.errOut(), "context canceled")
}

// cliProc is a gleaner command running as a process; its stdout arrives
// line by line on lines.
type cliProc struct {
	cmd    *exec.Cmd
	lines  chan string
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan error
}

func startCLI(t *testing.T, bin string, args ...string) *cliProc {
	t.Helper()
	p := &cliProc{lines: make(chan string, 1024), done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		close(p.lines)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// interruptAfter sends SIGINT, as Ctrl-C does, once a line matches.
func (p *cliProc) interruptAfter(t *testing.T, line *regexp.Regexp) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-p.lines:
			require.True(t, ok, "gleaner %v ended before printing %s; stderr:\n%s", p.cmd.Args[1:], line, p.errOut())
			if line.MatchString(l) {
				require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
				return
			}
		case <-deadline:
			t.Fatalf("gleaner %v printed no %s in 2 minutes; stderr:\n%s", p.cmd.Args[1:], line, p.errOut())
		}
	}
}

func (p *cliProc) errOut() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func (p *cliProc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(timeout):
		t.Fatalf("gleaner %v still running %v after SIGINT", p.cmd.Args[1:], timeout)
		return nil
	}
}
