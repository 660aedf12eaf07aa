package mlp

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/trial"
)

// The multi-host runs: one go-mlp process per "host", all on this machine,
// meeting at one master port on 127.0.0.1 as the hosts' agents would make
// them.

// launchHosts starts one trainer per host of a run whose hosts hold
// locals[r] nodes each, as the hosts' agents would: the same master
// address and port for all, a run directory of its own for each (the
// report file of rank r > 0 is not the run's), one checkpoint directory.
func (d *trialDir) launchHosts(params map[string]any, locals []int, resumeFrom string) []*launchRun {
	t := d.t
	t.Helper()
	d.runs++
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	nodes := 0
	for _, n := range locals {
		nodes += n
	}
	runs := make([]*launchRun, len(locals))
	offset := 0
	for r, n := range locals {
		rv := trial.Rendezvous{
			NodeRank: r, NumHosts: len(locals), Nodes: nodes, LocalNodes: n, NodeOffset: offset,
			HostAddr: fmt.Sprintf("127.0.0.%d", r+1), MasterAddr: "127.0.0.1", MasterPort: port,
		}
		runs[r] = d.start(filepath.Join(d.root, fmt.Sprintf("run-%d", d.runs), fmt.Sprintf("rank-%d", r)), params, nodes, resumeFrom, rv.Environ())
		offset += n
	}
	return runs
}

// waitAll waits for every host's trainer and returns their exit codes.
func waitAll(runs []*launchRun, limit time.Duration) []int {
	codes := make([]int, len(runs))
	for r, run := range runs {
		codes[r] = run.wait(limit)
	}
	return codes
}

func stderrs(runs []*launchRun) string {
	var b strings.Builder
	for r, run := range runs {
		fmt.Fprintf(&b, "--- host %d:\n%s", r, run.stderr)
	}
	return b.String()
}

// checkRendezvous checks each host wrote one rendezvous line saying where
// it stood and that the first all-reduce saw every node.
func checkRendezvous(t *testing.T, runs []*launchRun, locals []int) {
	t.Helper()
	nodes := 0
	for _, n := range locals {
		nodes += n
	}
	offset := 0
	for r, run := range runs {
		want := rendezvousInfo{
			NodeRank: r, NumHosts: len(locals), HostAddr: fmt.Sprintf("127.0.0.%d", r+1), WorldSize: nodes,
			LocalNodes: locals[r], NodeOffset: offset, AllReduce: float64(nodes * (nodes + 1) / 2),
		}
		if got := run.rendezvous(); len(got) != 1 || got[0] != want {
			t.Errorf("host %d: rendezvous lines %+v, want one: %+v", r, got, want)
		}
		offset += locals[r]
	}
}

// Three hosts with 2, 1 and 1 nodes train as one host with 4 nodes does,
// bit for bit (the same shards, summed in the same order); only rank 0
// reports and checkpoints.
func TestManyHostsTrainTogether(t *testing.T) {
	params := map[string]any{"steps": 120, "hidden": 16, "checkpoint_every": 50, "report_every": 10}
	locals := []int{2, 1, 1}
	d := newTrial(t)
	runs := d.launchHosts(params, locals, "")
	for r, code := range waitAll(runs, 30*time.Second) {
		if code != 0 {
			t.Fatalf("host %d: exit %d\n%s", r, code, stderrs(runs))
		}
	}
	checkRendezvous(t, runs, locals)

	reps, bad := runs[0].read()
	if bad != 0 || len(reps) == 0 {
		t.Fatalf("rank 0: %d reports, %d malformed lines", len(reps), bad)
	}
	var ckpts []string
	for _, rep := range reps {
		if rep.Checkpoint != "" {
			ckpts = append(ckpts, rep.Checkpoint)
		}
	}
	wantCkpts := []string{trial.CheckpointName(50, ckptSuffix), trial.CheckpointName(100, ckptSuffix), trial.CheckpointName(120, ckptSuffix)}
	for i := range ckpts {
		ckpts[i] = filepath.Base(ckpts[i])
	}
	if !slices.Equal(ckpts, wantCkpts) {
		t.Errorf("rank 0 reported checkpoints %q, want %q", ckpts, wantCkpts)
	}
	for r, run := range runs[1:] {
		if reps, bad := run.read(); len(reps) != 0 || bad != 0 {
			t.Errorf("host %d reported %d lines (%d malformed) besides the rendezvous; only rank 0 reports", r+1, len(reps), bad)
		}
	}
	files, _ := os.ReadDir(d.ckptDir())
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	if !slices.Equal(names, wantCkpts[1:]) {
		t.Errorf("checkpoint directory holds %q, want %q", names, wantCkpts[1:])
	}

	one := newTrial(t).launch(params, 4, "")
	if code := one.wait(30 * time.Second); code != 0 {
		t.Fatalf("one host: exit %d\n%s", code, one.stderr)
	}
	oneReps, _ := one.read()
	got, want := reps[len(reps)-1], oneReps[len(oneReps)-1]
	if got.Step != 120 || got.Metrics["val_loss"] != want.Metrics["val_loss"] || got.Metrics["loss"] != want.Metrics["loss"] {
		t.Errorf("three hosts ended at %+v, one host at %+v: want the same step and losses", got, want)
	}
}

// SIGTERM to one host stops them all after the same step: rank 0
// checkpoints, every host exits 0, and the trial resumes on another
// layout of hosts.
func TestManyHostsStopTogetherAndResume(t *testing.T) {
	params := map[string]any{"steps": 300, "step_ms": 10, "batch": 32, "checkpoint_every": 1000}
	d := newTrial(t)
	runs := d.launchHosts(params, []int{1, 2}, "")
	runs[0].waitForStep(20)
	runs[1].signal(syscall.SIGTERM) // host 1 only: the hosts must agree
	for r, code := range waitAll(runs, 20*time.Second) {
		if code != 0 {
			t.Fatalf("host %d: exit %d after SIGTERM to host 1\n%s", r, code, stderrs(runs))
		}
	}
	reps, _ := runs[0].read()
	ck := reps[len(reps)-1]
	if ck.Checkpoint == "" || ck.Step < 20 || ck.Step >= 300 || ck.Samples != float64(ck.Step*32) {
		t.Fatalf("rank 0's last report %+v: want a checkpoint at 20 ≤ step < 300, samples = step×32\n%s", ck, stderrs(runs))
	}

	locals := []int{1, 1, 1}
	runs2 := d.launchHosts(params, locals, ck.Checkpoint)
	for r, code := range waitAll(runs2, 30*time.Second) {
		if code != 0 {
			t.Fatalf("resumed, host %d: exit %d\n%s", r, code, stderrs(runs2))
		}
	}
	checkRendezvous(t, runs2, locals)
	// Rank 0's rendezvous line is a true progress line: where the run starts.
	raw, err := os.ReadFile(runs2[0].reports)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	if start, err := trial.ParseReport([]byte(line)); err != nil || start.Step != ck.Step || start.Samples != ck.Samples || start.Metrics != nil {
		t.Errorf("rank 0's first line %s parses as %+v, %v; want step %d, samples %v, no metrics", line, start, err, ck.Step, ck.Samples)
	}
	reps2, _ := runs2[0].read()
	if first := reps2[0]; first.Step <= ck.Step || first.Step > ck.Step+10 {
		t.Errorf("resumed run's first report %+v; want step in (%d, %d]", first, ck.Step, ck.Step+10)
	}
	if last := reps2[len(reps2)-1]; last.Step != 300 || last.Samples != 300*32 || last.Checkpoint == "" {
		t.Errorf("resumed run's last report %+v, want step 300, samples 9600, a checkpoint", last)
	}
}

// A host that dies fails the run on the others at once, with an error
// naming it, instead of leaving them waiting.
func TestManyHostsDeadHostFailsTheRun(t *testing.T) {
	d := newTrial(t)
	runs := d.launchHosts(map[string]any{"steps": 100000, "step_ms": 10}, []int{1, 1, 1}, "")
	runs[0].waitForStep(10)
	runs[2].signal(syscall.SIGKILL)
	if code := runs[0].wait(20 * time.Second); code != exitPeers || !strings.Contains(runs[0].stderr.String(), "host rank 2") {
		t.Errorf("rank 0: exit %d, want %d with an error naming host rank 2\n%s", code, exitPeers, stderrs(runs))
	}
	if code := runs[1].wait(20 * time.Second); code != exitPeers {
		t.Errorf("host 1: exit %d, want %d\n%s", code, exitPeers, stderrs(runs))
	}
}
