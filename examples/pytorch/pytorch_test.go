package pytorch_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/trial"
)

// torchPython returns an interpreter that can import torch
// (testenv.Python).
func torchPython(t *testing.T) string { return testenv.Python(t, "torch") }

type launched struct {
	cmd     *exec.Cmd
	reports string
	stderr  *bytes.Buffer
	done    chan struct{}
	err     error
}

func launch(t *testing.T, py, root string, run int, params map[string]any, nodes int, resumeFrom string) *launched {
	t.Helper()
	return start(t, py, root, filepath.Join(root, fmt.Sprintf("run-%d", run)), params, nodes, resumeFrom, nil)
}

// start runs train.py as a launcher would, with the run's files in runDir,
// the checkpoints in root/ckpt, and extraEnv on top of the trial's.
func start(t *testing.T, py, root, runDir string, params map[string]any, nodes int, resumeFrom string, extraEnv []string) *launched {
	t.Helper()
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(params)
	pf, hf := filepath.Join(runDir, "params.json"), filepath.Join(runDir, "hostfile")
	os.WriteFile(pf, raw, 0o644)
	os.WriteFile(hf, []byte(strings.Repeat("localhost\n", nodes)), 0o644)
	l := &launched{reports: filepath.Join(runDir, "reports.jsonl"), stderr: new(bytes.Buffer), done: make(chan struct{})}
	l.cmd = exec.Command(py, "examples/pytorch/train.py")
	l.cmd.Dir = "../.."
	l.cmd.Env = append(os.Environ(),
		"OMP_NUM_THREADS=1",
		"PYTHONDONTWRITEBYTECODE=1", // no __pycache__ in the tree
	)
	l.cmd.Env = append(l.cmd.Env, trial.Env{
		TrialID: "torch-1", CampaignID: "c", ParamsFile: pf, Nodes: nodes, Hostfile: hf,
		CheckpointDir: filepath.Join(root, "ckpt"), ResumeFrom: resumeFrom, ReportFile: l.reports,
	}.Environ()...)
	l.cmd.Env = append(l.cmd.Env, extraEnv...)
	l.cmd.Stderr = l.stderr
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.err = l.cmd.Wait(); close(l.done) }()
	t.Cleanup(func() {
		syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		<-l.done
	})
	return l
}

func (l *launched) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(limit):
		t.Fatalf("train.py still running after %v; stderr:\n%s", limit, l.stderr)
	}
	var ee *exec.ExitError
	if errors.As(l.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// read returns the report lines, less train.py's rendezvous line.
func (l *launched) read(t *testing.T) []trial.Report {
	t.Helper()
	reps, _ := l.readAll(t)
	return reps
}

// rendezvousInfo is the "rendezvous" member of the line each host's first
// process writes before training.
type rendezvousInfo struct {
	NodeRank   int     `json:"node_rank"`
	NumHosts   int     `json:"num_hosts"`
	HostAddr   string  `json:"host_addr"`
	WorldSize  int     `json:"world_size"`
	LocalNodes int     `json:"local_nodes"`
	NodeOffset int     `json:"node_offset"`
	AllReduce  float64 `json:"allreduce"`
}

// readAll returns the report lines and, apart, the rendezvous lines (each
// a valid report line too).
func (l *launched) readAll(t *testing.T) (reps []trial.Report, infos []rendezvousInfo) {
	t.Helper()
	f, err := os.Open(l.reports)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r, err := trial.ParseReport(sc.Bytes())
		if err != nil {
			t.Fatalf("malformed report %q: %v", sc.Text(), err)
		}
		var info struct {
			Rendezvous *rendezvousInfo `json:"rendezvous"`
		}
		if json.Unmarshal(sc.Bytes(), &info) == nil && info.Rendezvous != nil {
			infos = append(infos, *info.Rendezvous)
			continue
		}
		reps = append(reps, r)
	}
	return reps, infos
}

// TestStopAndResume runs train.py data-parallel on 2 processes, stops it
// with SIGTERM to its process group mid-run as Gleaner does, and resumes
// it on 1 process from the checkpoint it reported.
func TestStopAndResume(t *testing.T) {
	py := torchPython(t)
	root := t.TempDir()
	params := map[string]any{"steps": 80, "step_ms": 20, "batch": "64", "hidden": 32, "report_every": 5, "checkpoint_every": 1000}

	first := launch(t, py, root, 1, params, 2, "")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if reps := first.read(t); len(reps) > 0 && reps[len(reps)-1].Step >= 10 {
			break
		}
		select {
		case <-first.done:
			t.Fatalf("train.py exited early: %v\n%s", first.err, first.stderr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no report of step 10 within 60s; stderr:\n%s", first.stderr)
		}
	}
	syscall.Kill(-first.cmd.Process.Pid, syscall.SIGTERM)
	if code := first.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0; stderr:\n%s", code, first.stderr)
	}
	reps := first.read(t)
	ck := reps[len(reps)-1]
	if ck.Checkpoint == "" || ck.Step < 10 || ck.Step >= 80 || ck.Samples != float64(ck.Step*64) {
		t.Fatalf("last report %+v: want a checkpoint at 10 ≤ step < 80 with samples = step×64; stderr:\n%s", ck, first.stderr)
	}
	if _, err := os.Stat(ck.Checkpoint); err != nil {
		t.Fatal(err)
	}

	one := rendezvousInfo{NodeRank: 0, NumHosts: 1, HostAddr: "127.0.0.1", WorldSize: 2, LocalNodes: 2, AllReduce: 3}
	if _, infos := first.readAll(t); len(infos) != 1 || infos[0] != one {
		t.Errorf("rendezvous lines %+v, want one: %+v", infos, one)
	}

	second := launch(t, py, root, 2, params, 1, ck.Checkpoint)
	if code := second.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("resumed run: exit %d; stderr:\n%s", code, second.stderr)
	}
	reps2 := second.read(t)
	if len(reps2) == 0 {
		t.Fatalf("resumed run reported nothing; stderr:\n%s", second.stderr)
	}
	if f := reps2[0]; f.Step <= ck.Step || f.Step > ck.Step+5 || f.Samples != float64(f.Step*64) {
		t.Errorf("resumed run's first report %+v; want step in (%d, %d], samples = step×64", f, ck.Step, ck.Step+5)
	}
	last := reps2[len(reps2)-1]
	if last.Step != 80 || last.Checkpoint == "" {
		t.Errorf("resumed run's last report %+v, want step 80 with a checkpoint", last)
	}
	if !(last.Metrics["val_loss"] < reps[0].Metrics["val_loss"]) {
		t.Errorf("val_loss %v at the end, %v at the start: no learning", last.Metrics["val_loss"], reps[0].Metrics["val_loss"])
	}
}

// TestBudgetStopsAndContinues gives train.py a budget of samples: on 2
// processes it stops within a step past it, checkpoints, reports and exits
// 0; a second run on 1 process with a larger budget continues from that
// checkpoint with another learning rate (as population based training
// does), retraining nothing, and stops at the new budget, having trained
// with the params file's learning rate, not the checkpoint's.
func TestBudgetStopsAndContinues(t *testing.T) {
	py := torchPython(t)
	root := t.TempDir()
	const batch = 64
	params := map[string]any{"steps": 100000, "batch": batch, "hidden": 32, "lr": 0.05, "report_every": 5, "checkpoint_every": 1000}
	withBudget := func(budget string) []string {
		return []string{trial.EnvBudget + "=" + budget, trial.EnvBudgetUnit + "=" + trial.BudgetSamples}
	}
	atBudget := func(l *launched, budget float64) []trial.Report {
		t.Helper()
		if code := l.wait(t, 90*time.Second); code != 0 {
			t.Fatalf("exit %d, want 0; stderr:\n%s", code, l.stderr)
		}
		reps := l.read(t)
		if len(reps) == 0 {
			t.Fatalf("no reports; stderr:\n%s", l.stderr)
		}
		last := reps[len(reps)-1]
		if last.Checkpoint == "" || last.Samples < budget || last.Samples >= budget+batch || last.Samples != float64(last.Step*batch) {
			t.Fatalf("last report %+v: want a checkpoint at %v ≤ samples < %v, samples = step×%d; stderr:\n%s", last, budget, budget+batch, batch, l.stderr)
		}
		if _, ok := last.Metrics["val_loss"]; !ok {
			t.Errorf("last report %+v lacks the final val_loss", last)
		}
		if _, err := os.Stat(last.Checkpoint); err != nil {
			t.Fatal(err)
		}
		return reps
	}

	first := start(t, py, root, filepath.Join(root, "run-1"), params, 2, "", withBudget("600"))
	ck := atBudget(first, 600)
	ckpt := ck[len(ck)-1]

	params["lr"] = 0.01
	second := start(t, py, root, filepath.Join(root, "run-2"), params, 1, ckpt.Checkpoint, withBudget("1500"))
	reps := atBudget(second, 1500)
	if f := reps[0]; f.Step <= ckpt.Step || f.Step > ckpt.Step+5 || f.Samples != float64(f.Step*batch) {
		t.Errorf("continued run's first report %+v; want step in (%d, %d], samples = step×%d", f, ckpt.Step, ckpt.Step+5, batch)
	}
	code := `import sys, torch; print(torch.load(sys.argv[1])["optimizer"]["param_groups"][0]["lr"])`
	out, err := exec.Command(py, "-c", code, reps[len(reps)-1].Checkpoint).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0.01" {
		t.Errorf("the continued run's optimizer lr: %s (%v), want the params file's 0.01", out, err)
	}
}

func TestCampaignSpecIsValid(t *testing.T) {
	raw, err := os.ReadFile("campaign.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var spec gleaner.CampaignSpec
	if err := dec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Command, []string{"python3", "examples/pytorch/train.py"}) {
		t.Errorf("command = %q", spec.Command)
	}
}
