package mlp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/trial"
)

// The trainer is tested as Gleaner runs it: a built binary, a real process
// in its own process group, the GLEANER_* environment, signals.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func trainerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "go-mlp-test-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "go-mlp")
		out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// trialDir is one trial's stable state across runs: its checkpoint dir.
type trialDir struct {
	t    *testing.T
	root string
	runs int
}

func newTrial(t *testing.T) *trialDir {
	return &trialDir{t: t, root: t.TempDir()}
}

func (d *trialDir) ckptDir() string { return filepath.Join(d.root, "ckpt") }

// launchRun is one launch of the trainer.
type launchRun struct {
	t       *testing.T
	cmd     *exec.Cmd
	reports string
	stderr  *bytes.Buffer
	done    chan struct{}
	err     error
}

// launch starts the trainer on nodes nodes, as a launcher would: params
// file, hostfile and report file in a fresh run directory.
func (d *trialDir) launch(params map[string]any, nodes int, resumeFrom string) *launchRun {
	d.t.Helper()
	d.runs++
	return d.start(filepath.Join(d.root, fmt.Sprintf("run-%d", d.runs)), params, nodes, resumeFrom, nil)
}

// launchBudget is launch with a campaign's budget: GLEANER_BUDGET in
// GLEANER_BUDGET_UNIT.
func (d *trialDir) launchBudget(params map[string]any, nodes int, resumeFrom string, budget float64, unit string) *launchRun {
	d.t.Helper()
	d.runs++
	env := trial.Env{Budget: budget, BudgetUnit: unit}.Vars()
	var extra []string
	for _, kv := range env[len(env)-2:] {
		extra = append(extra, kv[0]+"="+kv[1])
	}
	return d.start(filepath.Join(d.root, fmt.Sprintf("run-%d", d.runs)), params, nodes, resumeFrom, extra)
}

func (d *trialDir) start(runDir string, params map[string]any, nodes int, resumeFrom string, extraEnv []string) *launchRun {
	t := d.t
	t.Helper()
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(params)
	pf := filepath.Join(runDir, "params.json")
	hf := filepath.Join(runDir, "hostfile")
	var hosts strings.Builder
	for i := range nodes {
		fmt.Fprintf(&hosts, "slot-%d\n", i)
	}
	if err := os.WriteFile(pf, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hf, []byte(hosts.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &launchRun{t: t, reports: filepath.Join(runDir, "reports.jsonl"), stderr: new(bytes.Buffer), done: make(chan struct{})}
	r.cmd = exec.Command(trainerBinary(t))
	r.cmd.Env = append(os.Environ(), trial.Env{
		TrialID: "trial-1", CampaignID: "campaign-1", ParamsFile: pf, Nodes: nodes, Hostfile: hf,
		CheckpointDir: d.ckptDir(), ResumeFrom: resumeFrom, ReportFile: r.reports,
	}.Environ()...)
	r.cmd.Env = append(r.cmd.Env, extraEnv...)
	r.cmd.Stderr = r.stderr
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	})
	return r
}

// wait returns the exit code (-1 when killed by a signal).
func (r *launchRun) wait(limit time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(limit):
		r.t.Fatalf("trainer still running after %v; stderr:\n%s", limit, r.stderr)
	}
	var ee *exec.ExitError
	if errors.As(r.err, &ee) {
		return ee.ExitCode()
	}
	if r.err != nil {
		r.t.Fatal(r.err)
	}
	return 0
}

func (r *launchRun) signal(sig syscall.Signal) {
	r.t.Helper()
	if err := syscall.Kill(-r.cmd.Process.Pid, sig); err != nil { // the process group, as Gleaner does
		r.t.Fatal(err)
	}
}

// read parses the report file, counting malformed lines the way the
// protocol says a reader must: skip them, whatever their length. The
// trainer's rendezvous line (see rendezvous) is left out.
func (r *launchRun) read() (reps []trial.Report, malformed int) {
	reps, _, malformed = readReports(r.t, r.reports)
	return reps, malformed
}

// rendezvous returns the trainer's rendezvous lines, each also a valid
// report line.
func (r *launchRun) rendezvous() []rendezvousInfo {
	_, infos, _ := readReports(r.t, r.reports)
	return infos
}

func readReports(t *testing.T, path string) (reps []trial.Report, infos []rendezvousInfo, malformed int) {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' { // a partial last line is not yet a line
			rep, perr := trial.ParseReport(line)
			var info struct {
				Rendezvous *rendezvousInfo `json:"rendezvous"`
			}
			switch {
			case perr != nil:
				malformed++
			case json.Unmarshal(line, &info) == nil && info.Rendezvous != nil:
				infos = append(infos, *info.Rendezvous)
			default:
				reps = append(reps, rep)
			}
		}
		if err == io.EOF {
			return reps, infos, malformed
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitForStep waits until a report of at least step has been written.
func (r *launchRun) waitForStep(step int64) {
	r.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		reps, _ := r.read()
		if len(reps) > 0 && reps[len(reps)-1].Step >= step {
			return
		}
		select {
		case <-r.done:
			r.t.Fatalf("trainer exited before step %d: %v\n%s", step, r.err, r.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.t.Fatalf("no report of step %d within 15s", step)
}

func lastCheckpoint(t *testing.T, reps []trial.Report) trial.Report {
	t.Helper()
	for i := len(reps) - 1; i >= 0; i-- {
		if reps[i].Checkpoint != "" {
			return reps[i]
		}
	}
	t.Fatal("no checkpoint reported")
	return trial.Report{}
}

// resumedHalfway trains params(100) steps on 2 nodes, then resumes from
// the last checkpoint to params(200), and returns the second run's
// reports.
func resumedHalfway(t *testing.T, params func(steps int) map[string]any) []trial.Report {
	t.Helper()
	d := newTrial(t)
	half := d.launch(params(100), 2, "")
	if code := half.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, half.stderr)
	}
	halfReps, _ := half.read()
	rest := d.launch(params(200), 2, lastCheckpoint(t, halfReps).Checkpoint)
	if code := rest.wait(20 * time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, rest.stderr)
	}
	b, _ := rest.read()
	return b
}

// sampledParams draws 200 points of space and requires each to be a valid
// set of the trainer's parameters; it returns them.
func sampledParams(t *testing.T, space hpo.Space) []hyper {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var out []hyper
	for range 200 {
		raw, _ := json.Marshal(space.Sample(rng))
		h := defaultHyper()
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatalf("params %s: %v", raw, err)
		}
		if err := h.validate(); err != nil {
			t.Fatalf("params %s: %v", raw, err)
		}
		out = append(out, h)
	}
	return out
}
