package pytorchnas_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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

// exampleArch is the architecture of train.py's documentation: 2 stages of
// one 4-node cell, 8 then 16 channels.
const exampleArch = `{"cell":{"nodes":4,"edges":[["conv_3x3"],["skip_connect","none"],["conv_1x1","avg_pool_3x3","conv_3x3"]],"stacks":2,"cells":1,"channels":8}}`

// noneArch is a cell whose every edge is none: its output is unreachable.
const noneArch = `{"cell":{"nodes":4,"edges":[["none"],["none","none"],["none","none","none"]],"stacks":2,"cells":1,"channels":8}}`

// trainImages is the digits training split; a batch of 64 makes
// floor(1437/64) = 22 steps an epoch.
const (
	trainImages   = 1437
	batch         = 64
	stepsPerEpoch = trainImages / batch
)

// nasPython returns an interpreter that can import torch and sklearn
// (testenv.Python).
func nasPython(t *testing.T) string { return testenv.Python(t, "torch", "sklearn.datasets") }

// run is one launch of train.py.
type run struct {
	cmd     *exec.Cmd
	reports string
	stderr  *bytes.Buffer
	done    chan struct{}
	err     error
}

// launch is what a run gets from its launcher: the params, the node
// count, the checkpoint to resume from and the budget ("" for none).
type launch struct {
	params     map[string]any
	nodes      int
	resumeFrom string
	budget     string
	unit       string
}

// start runs train.py as a launcher would, with the run's files in runDir
// and the checkpoints in ckptDir.
func start(t *testing.T, py, runDir, ckptDir string, l launch) *run {
	t.Helper()
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(l.params)
	if err != nil {
		t.Fatal(err)
	}
	pf, hf := filepath.Join(runDir, "params.json"), filepath.Join(runDir, "hostfile")
	if err := os.WriteFile(pf, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hf, []byte(strings.Repeat("localhost\n", l.nodes)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &run{reports: filepath.Join(runDir, "reports.jsonl"), stderr: new(bytes.Buffer), done: make(chan struct{})}
	r.cmd = exec.Command(py, "examples/pytorch-nas/train.py")
	r.cmd.Dir = "../.."
	r.cmd.Env = append(os.Environ(),
		"OMP_NUM_THREADS=1",
		"PYTHONDONTWRITEBYTECODE=1", // no __pycache__ in the tree
	)
	env := trial.Env{
		TrialID: "nas-1", CampaignID: "c", ParamsFile: pf, Nodes: l.nodes, Hostfile: hf,
		CheckpointDir: ckptDir, ResumeFrom: l.resumeFrom, ReportFile: r.reports,
	}
	r.cmd.Env = append(r.cmd.Env, env.Environ()...)
	if l.budget != "" {
		r.cmd.Env = append(r.cmd.Env, trial.EnvBudget+"="+l.budget, trial.EnvBudgetUnit+"="+l.unit)
	}
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

func (r *run) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(limit):
		t.Fatalf("train.py still running after %v; stderr:\n%s", limit, r.stderr)
	}
	var ee *exec.ExitError
	if errors.As(r.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// finish waits for an exit 0.
func (r *run) finish(t *testing.T) {
	t.Helper()
	if code := r.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, r.stderr)
	}
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

// lines are a run's report lines, sorted by kind.
type lines struct {
	rendezvous []rendezvousInfo
	// sizes are the lines with the params and flops metrics (one a run).
	sizes []trial.Report
	// progress are the others: training reports and checkpoints.
	progress []trial.Report
}

func (r *run) read(t *testing.T) lines {
	t.Helper()
	var ls lines
	f, err := os.Open(r.reports)
	if errors.Is(err, os.ErrNotExist) {
		return ls
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rep, err := trial.ParseReport(sc.Bytes())
		if err != nil {
			t.Fatalf("malformed report %q: %v", sc.Text(), err)
		}
		var info struct {
			Rendezvous *rendezvousInfo `json:"rendezvous"`
		}
		// A run's first report carries only its size; every later one its
		// metrics, the size again among them (so the trial's last metrics
		// keep it).
		_, size := rep.Metrics["params"]
		_, trained := rep.Metrics["val_loss"]
		switch {
		case json.Unmarshal(sc.Bytes(), &info) == nil && info.Rendezvous != nil:
			ls.rendezvous = append(ls.rendezvous, *info.Rendezvous)
		case size && !trained:
			ls.sizes = append(ls.sizes, rep)
		default:
			if trained && !size {
				t.Errorf("report %q: metrics without params and flops", sc.Text())
			}
			ls.progress = append(ls.progress, rep)
		}
	}
	return ls
}

func (ls lines) last(t *testing.T, stderr fmt.Stringer) trial.Report {
	t.Helper()
	if len(ls.progress) == 0 {
		t.Fatalf("no progress reports; stderr:\n%s", stderr)
	}
	return ls.progress[len(ls.progress)-1]
}

// checkCounters checks a report's counters agree: samples = step×batch,
// epoch = step / steps per epoch.
func checkCounters(t *testing.T, r trial.Report) {
	t.Helper()
	if r.Samples != float64(r.Step*batch) || math.Abs(r.Epoch-float64(r.Step)/stepsPerEpoch) > 1e-9 {
		t.Errorf("report %+v: want samples = step×%d, epoch = step/%d", r, batch, stepsPerEpoch)
	}
}

func checkpointed(t *testing.T, r trial.Report) {
	t.Helper()
	if r.Checkpoint == "" {
		t.Fatalf("report %+v has no checkpoint", r)
	}
	if _, err := os.Stat(r.Checkpoint); err != nil {
		t.Fatal(err)
	}
}

// TestTrainResumeExactly trains the example architecture for a budget of
// 2 epochs, checks it learns and reports its size and a checkpoint, then
// continues it to 4 epochs from that checkpoint: the counters go on, no
// sample is trained twice, and the result is bit for bit that of a run of
// 4 epochs uninterrupted. Given a checkpoint already at its budget, a run
// trains nothing.
func TestTrainResumeExactly(t *testing.T) {
	py := nasPython(t)
	root := t.TempDir()
	params := map[string]any{"arch": exampleArch, "lr": 0.05, "batch": batch, "seed": 3}
	ckpt := filepath.Join(root, "ckpt")

	first := start(t, py, filepath.Join(root, "run-1"), ckpt, launch{params: params, nodes: 1, budget: "2", unit: trial.BudgetEpochs})
	first.finish(t)
	ls := first.read(t)
	if len(ls.sizes) != 1 || ls.sizes[0].Metrics["params"] != 10162 || ls.sizes[0].Metrics["flops"] != 217760 {
		t.Errorf("size reports %+v, want one with params 10162, flops 217760 (TestParamsAndFlops)", ls.sizes)
	}
	if len(ls.progress) != 2 {
		t.Fatalf("%d progress reports, want 2 (one an epoch); stderr:\n%s", len(ls.progress), first.stderr)
	}
	ck := ls.last(t, first.stderr)
	checkpointed(t, ck)
	for _, r := range ls.progress {
		checkCounters(t, r)
		if a := r.Metrics["val_accuracy"]; !(a >= 0 && a <= 1) {
			t.Errorf("report %+v: val_accuracy %v not in [0, 1]", r, a)
		}
	}
	if ck.Step != 2*stepsPerEpoch || ck.Epoch != 2 {
		t.Errorf("last report %+v, want step %d, epoch 2", ck, 2*stepsPerEpoch)
	}
	if e1, e2 := ls.progress[0].Metrics, ck.Metrics; !(e2["loss"] < e1["loss"] && e2["val_loss"] < e1["val_loss"]) {
		t.Errorf("loss %v → %v, val_loss %v → %v: not learning", e1["loss"], e2["loss"], e1["val_loss"], e2["val_loss"])
	}

	second := start(t, py, filepath.Join(root, "run-2"), ckpt, launch{params: params, nodes: 1, resumeFrom: ck.Checkpoint, budget: "4", unit: trial.BudgetEpochs})
	second.finish(t)
	ls2 := second.read(t)
	if f := ls2.progress[0]; f.Step != ck.Step+stepsPerEpoch {
		t.Errorf("continued run's first report %+v, want step %d: the counters go on from %d", f, ck.Step+stepsPerEpoch, ck.Step)
	}
	if len(ls2.rendezvous) != 1 || len(ls2.sizes) != 1 || ls2.sizes[0].Step != ck.Step {
		t.Errorf("continued run: rendezvous %+v, sizes %+v; want one each, the sizes at step %d", ls2.rendezvous, ls2.sizes, ck.Step)
	}
	end := ls2.last(t, second.stderr)
	checkpointed(t, end)
	checkCounters(t, end)
	if end.Step != 4*stepsPerEpoch {
		t.Errorf("continued run's last report %+v, want step %d", end, 4*stepsPerEpoch)
	}

	whole := start(t, py, filepath.Join(root, "run-whole"), filepath.Join(root, "ckpt-whole"), launch{params: params, nodes: 1, budget: "4", unit: trial.BudgetEpochs})
	whole.finish(t)
	want := whole.read(t).last(t, whole.stderr)
	for _, m := range []string{"loss", "val_loss", "val_accuracy"} {
		if end.Metrics[m] != want.Metrics[m] {
			t.Errorf("%s after 2 + 2 epochs %v, after 4 uninterrupted %v: the resume is not exact", m, end.Metrics[m], want.Metrics[m])
		}
	}

	// A checkpoint already at the budget: nothing trained, a checkpoint at
	// the same counters reported.
	again := start(t, py, filepath.Join(root, "run-3"), ckpt, launch{params: params, nodes: 1, resumeFrom: end.Checkpoint, budget: "4", unit: trial.BudgetEpochs})
	again.finish(t)
	ls3 := again.read(t)
	if len(ls3.progress) != 1 || ls3.progress[0].Step != end.Step || ls3.progress[0].Checkpoint == "" {
		t.Errorf("run at its budget reported %+v, want one checkpoint at step %d", ls3.progress, end.Step)
	}
}

// TestStopTwoNodesResumeOnOne trains data-parallel on 2 processes, stops
// them with SIGTERM to the process group mid-run as Gleaner does (exit 0,
// a checkpoint), and continues on 1 process with a budget of steps.
func TestStopTwoNodesResumeOnOne(t *testing.T) {
	py := nasPython(t)
	root := t.TempDir()
	ckpt := filepath.Join(root, "ckpt")
	params := map[string]any{"arch": exampleArch, "batch": fmt.Sprint(batch), "report_every": 11, "step_ms": 20}

	first := start(t, py, filepath.Join(root, "run-1"), ckpt, launch{params: params, nodes: 2})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ls := first.read(t); len(ls.progress) > 0 && ls.progress[len(ls.progress)-1].Step >= 2*stepsPerEpoch {
			break
		}
		select {
		case <-first.done:
			t.Fatalf("train.py exited early: %v\n%s", first.err, first.stderr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no report of step %d within 60s; stderr:\n%s", 2*stepsPerEpoch, first.stderr)
		}
	}
	syscall.Kill(-first.cmd.Process.Pid, syscall.SIGTERM)
	if code := first.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0; stderr:\n%s", code, first.stderr)
	}
	ls := first.read(t)
	one := rendezvousInfo{NodeRank: 0, NumHosts: 1, HostAddr: "127.0.0.1", WorldSize: 2, LocalNodes: 2, AllReduce: 1 + 2}
	if len(ls.rendezvous) != 1 || ls.rendezvous[0] != one {
		t.Errorf("rendezvous lines %+v, want one: %+v (both ranks met)", ls.rendezvous, one)
	}
	ck := ls.last(t, first.stderr)
	checkpointed(t, ck)
	checkCounters(t, ck)
	if ck.Step < 2*stepsPerEpoch || ck.Step >= 20*stepsPerEpoch {
		t.Fatalf("last report %+v: want a checkpoint before the end (20 epochs)", ck)
	}
	if l0, l := ls.progress[0].Metrics["loss"], ck.Metrics["loss"]; !(l < l0) {
		t.Errorf("loss %v at first, %v when stopped: 2 ranks are not learning", l0, l)
	}

	budget := ck.Step + 15
	second := start(t, py, filepath.Join(root, "run-2"), ckpt, launch{params: params, nodes: 1, resumeFrom: ck.Checkpoint, budget: fmt.Sprint(budget), unit: trial.BudgetSteps})
	second.finish(t)
	ls2 := second.read(t)
	if f := ls2.progress[0]; f.Step <= ck.Step || f.Step > ck.Step+11 {
		t.Errorf("resumed run's first report %+v, want step in (%d, %d]", f, ck.Step, ck.Step+11)
	}
	end := ls2.last(t, second.stderr)
	checkpointed(t, end)
	checkCounters(t, end)
	if end.Step != budget {
		t.Errorf("resumed run's last report %+v, want step %d (the budget)", end, budget)
	}
}

// TestInvalidArch: an arch that is not a well-formed cell exits 2 before
// training, with an error naming the field at fault.
func TestInvalidArch(t *testing.T) {
	py := nasPython(t)
	for _, tc := range []struct {
		name  string
		arch  any
		field string
	}{
		{"unknown op", `{"cell":{"nodes":3,"edges":[["conv_3x3"],["skip_connect","conv_5x5"]],"stacks":1,"cells":1,"channels":8}}`, "arch.cell.edges[1][1]: unknown operation 'conv_5x5'"},
		{"too few edge lists", `{"cell":{"nodes":4,"edges":[["conv_3x3"],["skip_connect","none"]],"stacks":2,"cells":1,"channels":8}}`, "arch.cell.edges: 2 entries, want nodes - 1 = 3"},
		{"too many edges into a node", `{"cell":{"nodes":3,"edges":[["conv_3x3"],["none","none","none"]],"stacks":1,"cells":1,"channels":8}}`, "arch.cell.edges[1]: 3 operations, want 2"},
		{"missing channels", `{"cell":{"nodes":2,"edges":[["conv_3x3"]],"stacks":1,"cells":1}}`, "arch.cell.channels: missing"},
		{"too many stacks", `{"cell":{"nodes":2,"edges":[["conv_3x3"]],"stacks":7,"cells":1,"channels":8}}`, "arch.cell.stacks: 7 is not in 1..6"},
		{"unknown field", `{"cell":{"nodes":2,"edges":[["conv_3x3"]],"stacks":1,"cells":1,"channels":8,"width":3}}`, "arch.cell.width: unknown field"},
		{"layers", `{"layers":{"widths":[8]}}`, "arch.layers: this trainer builds cell networks only"},
		{"not JSON", `{"cell":`, "arch: not JSON"},
		{"absent", nil, "arch: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			params := map[string]any{"lr": 0.1}
			if tc.arch != nil {
				params["arch"] = tc.arch
			}
			r := start(t, py, root, filepath.Join(root, "ckpt"), launch{params: params, nodes: 1})
			if code := r.wait(t, 30*time.Second); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, r.stderr)
			}
			if want := "parameter 'arch': " + tc.field; !strings.Contains(r.stderr.String(), want) {
				t.Errorf("stderr %q, want it to say %q", r.stderr, want)
			}
		})
	}
}

// TestAllNoneCell: a cell whose output no path reaches outputs zeros; the
// network trains its stem and classifier, reports a finite (bad) loss and
// exits 0.
func TestAllNoneCell(t *testing.T) {
	py := nasPython(t)
	root := t.TempDir()
	r := start(t, py, filepath.Join(root, "run-1"), filepath.Join(root, "ckpt"),
		launch{params: map[string]any{"arch": noneArch, "report_every": 5}, nodes: 1, budget: "640", unit: trial.BudgetSamples})
	r.finish(t)
	ls := r.read(t)
	end := ls.last(t, r.stderr)
	checkpointed(t, end)
	if end.Samples != 640 {
		t.Errorf("last report %+v, want samples 640", end)
	}
	// The classifier sees a constant: at best the class frequencies, about
	// ln 10 = 2.30.
	if v, ok := end.Metrics["val_loss"]; !ok || !(v > 1.5 && v < 5) {
		t.Errorf("val_loss %v (reported: %v), want a finite loss near ln 10", v, ok)
	}
	if len(ls.sizes) != 1 || ls.sizes[0].Metrics["params"] != 3938 || ls.sizes[0].Metrics["flops"] != 62112 {
		t.Errorf("size reports %+v, want params 3938, flops 62112 (TestParamsAndFlops)", ls.sizes)
	}
}

// TestParamsAndFlops checks `train.py --count` against counts by hand.
// Parameters: a k×k convolution Cin→Cout has Cout·Cin·k² weights (no
// bias); batch norm over C channels 2C; a linear layer in→out in·out + out.
// Multiply-adds per sample: Cout·Cin·k²·Hout·Wout a convolution, in·out a
// linear layer; batch norm, pooling and additions are free.
func TestParamsAndFlops(t *testing.T) {
	py := nasPython(t)
	conv := func(cin, cout, k, hw int) (params, flops int) {
		return cout * cin * k * k, cout * cin * k * k * hw * hw
	}
	bn := func(c int) int { return 2 * c }
	// ReLUConvBN: convolution, then batch norm.
	rcb := func(cin, cout, k, hw int) (params, flops int) {
		p, f := conv(cin, cout, k, hw)
		return p + bn(cout), f
	}
	// The reduction block cin → 2·cin to hw×hw: ReLUConvBN 3×3 stride 2,
	// ReLUConvBN 3×3, and the shortcut's 1×1 convolution after pooling.
	reduction := func(cin, hw int) (params, flops int) {
		pa, fa := rcb(cin, 2*cin, 3, hw)
		pb, fb := rcb(2*cin, 2*cin, 3, hw)
		pd, fd := conv(cin, 2*cin, 1, hw)
		return pa + pb + pd, fa + fb + fd
	}
	var example, none, pruned size

	// exampleArch, 8 channels: stem 3×3 1→8 + BN at 8×8; cell at 8 channels,
	// 8×8: conv_3x3 (0→1), conv_1x1 (0→3), conv_3x3 (2→3), skip and pool
	// free; reduction 8→16 to 4×4; the cell at 16 channels, 4×4; head BN
	// over 16, linear 16→10.
	//   stem      72+16 = 88 params,              8·1·9·64 = 4,608 flops
	//   cell 1    (576+16)·2 + (64+16) = 1,264,    36,864·2 + 4,096 = 77,824
	//   reduction 1,184 + 2,336 + 128 = 3,648,     18,432 + 36,864 + 2,048 = 57,344
	//   cell 2    (2,304+32)·2 + (256+32) = 4,960, 9,216·4·2 + 4,096 = 77,824
	//   head      32 + 170 = 202,                  160
	//   total     10,162 params,                   217,760 flops
	stem := func(c *size, ch int) { p, f := conv(1, ch, 3, 8); c.add(p+bn(ch), f) }
	head := func(c *size, ch int) { c.add(bn(ch)+ch*10+10, ch*10) }
	stem(&example, 8)
	example.add(rcb(8, 8, 3, 8))
	example.add(rcb(8, 8, 1, 8))
	example.add(rcb(8, 8, 3, 8))
	example.add(reduction(8, 4))
	example.add(rcb(16, 16, 3, 4))
	example.add(rcb(16, 16, 1, 4))
	example.add(rcb(16, 16, 3, 4))
	head(&example, 16)
	if example != (size{10162, 217760}) {
		t.Fatalf("the arithmetic is off: %+v", example)
	}

	// noneArch: the cells have nothing; stem, reduction and head remain:
	// 88 + 3,648 + 202 = 3,938 params, 4,608 + 57,344 + 160 = 62,112 flops.
	stem(&none, 8)
	none.add(reduction(8, 4))
	head(&none, 16)
	if none != (size{3938, 62112}) {
		t.Fatalf("the arithmetic is off: %+v", none)
	}

	// A 3-node cell whose node 1 no input reaches (its only edge in is
	// none), so the max_pool 1→2 is dead, leaving conv_3x3 0→2; 3 stages
	// of 2 cells, 4, 8, 16 channels at 8×8, 4×4, 2×2.
	const prunedArch = `{"cell":{"nodes":3,"edges":[["none"],["conv_3x3","max_pool_3x3"]],"stacks":3,"cells":2,"channels":4}}`
	stem(&pruned, 4)
	for s, stage := range []struct{ ch, hw int }{{4, 8}, {8, 4}, {16, 2}} {
		if s > 0 {
			pruned.add(reduction(stage.ch/2, stage.hw))
		}
		for range 2 {
			pruned.add(rcb(stage.ch, stage.ch, 3, stage.hw))
		}
	}
	head(&pruned, 16)
	// 44 + 304 + 928 + 1,184 + 3,648 + 4,672 + 202 = 10,982 params;
	// 2,304 + 18,432 + 14,336 + 18,432 + 14,336 + 18,432 + 160 = 86,432 flops.
	if pruned != (size{10982, 86432}) {
		t.Fatalf("the arithmetic is off: %+v", pruned)
	}
	// The same with a conv_1x1 on the dead edge: the same network.
	deadConv := strings.Replace(prunedArch, "max_pool_3x3", "conv_1x1", 1)

	archs := []string{exampleArch, noneArch, prunedArch, deadConv}
	want := []size{example, none, pruned, pruned}
	cmd := exec.Command(py, append([]string{"examples/pytorch-nas/train.py", "--count"}, archs...)...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("train.py --count: %v\n%s", err, &stderr)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for i := range archs {
		if !sc.Scan() {
			t.Fatalf("train.py --count printed %d lines, want %d:\n%s", i, len(archs), out)
		}
		var got struct{ Params, Flops int }
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if (size{got.Params, got.Flops}) != want[i] {
			t.Errorf("%s: params %d, flops %d; by hand %d, %d", archs[i], got.Params, got.Flops, want[i].params, want[i].flops)
		}
	}
}

// size is a network's parameter count and multiply-adds per sample.
type size struct{ params, flops int }

func (s *size) add(params, flops int) { s.params += params; s.flops += flops }

// TestCampaignSpec checks campaign.yaml decodes, validates and runs this
// trainer.
func TestCampaignSpec(t *testing.T) {
	spec, err := gleaner.LoadSpec("campaign.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if spec.Kind != "nas" || !slices.Equal(spec.Command, []string{"/usr/bin/python3", "examples/pytorch-nas/train.py"}) {
		t.Errorf("kind %q, command %q", spec.Kind, spec.Command)
	}
}
