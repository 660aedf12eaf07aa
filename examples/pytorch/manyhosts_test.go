package pytorch_test

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

// launchHosts starts one train.py per "host" of a run whose hosts hold
// locals[r] nodes each, all on this machine, as the hosts' agents would:
// the same master address and port for every host, a run directory and
// report file of its own for each (rank r > 0 in rank-r/), one checkpoint
// directory. Host r says its address is 127.0.0.(r+1).
func launchHosts(t *testing.T, py, root string, run int, params map[string]any, locals []int, resumeFrom string) []*launched {
	t.Helper()
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
	hosts := make([]*launched, len(locals))
	offset := 0
	for r, n := range locals {
		rv := trial.Rendezvous{
			NodeRank: r, NumHosts: len(locals), Nodes: nodes, LocalNodes: n, NodeOffset: offset,
			HostAddr: hostAddr(r), MasterAddr: "127.0.0.1", MasterPort: port,
		}
		runDir := filepath.Join(root, fmt.Sprintf("run-%d", run))
		if r > 0 {
			runDir = filepath.Join(runDir, fmt.Sprintf("rank-%d", r))
		}
		hosts[r] = start(t, py, root, runDir, params, nodes, resumeFrom, rv.Environ())
		offset += n
	}
	return hosts
}

func hostAddr(rank int) string { return fmt.Sprintf("127.0.0.%d", rank+1) }

func waitHosts(t *testing.T, hosts []*launched, limit time.Duration) {
	t.Helper()
	for r, h := range hosts {
		if code := h.wait(t, limit); code != 0 {
			t.Fatalf("host %d: exit %d\n%s", r, code, stderrs(hosts))
		}
	}
}

func stderrs(hosts []*launched) string {
	var b strings.Builder
	for r, h := range hosts {
		fmt.Fprintf(&b, "--- host %d:\n%s", r, h.stderr)
	}
	return b.String()
}

// checkRendezvous checks every host wrote one rendezvous line saying where
// it stood, and that the first all-reduce summed rank + 1 over all ranks.
func checkRendezvous(t *testing.T, hosts []*launched, locals []int) {
	t.Helper()
	world := 0
	for _, n := range locals {
		world += n
	}
	offset := 0
	for r, h := range hosts {
		want := rendezvousInfo{
			NodeRank: r, NumHosts: len(locals), HostAddr: hostAddr(r), WorldSize: world,
			LocalNodes: locals[r], NodeOffset: offset, AllReduce: float64(world * (world + 1) / 2),
		}
		if _, infos := h.readAll(t); len(infos) != 1 || infos[0] != want {
			t.Errorf("host %d: rendezvous lines %+v, want one: %+v", r, infos, want)
		}
		offset += locals[r]
	}
}

// TestManyHosts runs train.py as three hosts of 1, 2 and 1 processes (4
// ranks) meeting at one master port, stops the run with SIGTERM to one
// host only — the hosts must agree to stop — and resumes it on two hosts of
// 2 and 1 processes to the end. Only global rank 0 reports and checkpoints.
func TestManyHosts(t *testing.T) {
	py := torchPython(t)
	root := t.TempDir()
	params := map[string]any{"steps": 60, "step_ms": 20, "batch": "64", "hidden": 32, "report_every": 5, "checkpoint_every": 1000}

	locals := []int{1, 2, 1}
	first := launchHosts(t, py, root, 1, params, locals, "")
	deadline := time.Now().Add(90 * time.Second)
	for {
		if reps := first[0].read(t); len(reps) > 0 && reps[len(reps)-1].Step >= 10 {
			break
		}
		for r, h := range first {
			select {
			case <-h.done:
				t.Fatalf("host %d exited early: %v\n%s", r, h.err, stderrs(first))
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no report of step 10 within 90s\n%s", stderrs(first))
		}
		select {
		case <-first[0].done:
		case <-time.After(50 * time.Millisecond):
		}
	}
	syscall.Kill(-first[1].cmd.Process.Pid, syscall.SIGTERM) // host 1 and its two ranks only
	waitHosts(t, first, 60*time.Second)
	checkRendezvous(t, first, locals)
	reps := first[0].read(t)
	ck := reps[len(reps)-1]
	if ck.Checkpoint == "" || ck.Step < 10 || ck.Step >= 60 || ck.Samples != float64(ck.Step*64) {
		t.Fatalf("rank 0's last report %+v: want a checkpoint at 10 ≤ step < 60 with samples = step×64\n%s", ck, stderrs(first))
	}
	for r, h := range first[1:] {
		if reps := h.read(t); len(reps) != 0 {
			t.Errorf("host %d reported %+v; only rank 0 reports", r+1, reps)
		}
	}

	locals = []int{2, 1}
	second := launchHosts(t, py, root, 2, params, locals, ck.Checkpoint)
	waitHosts(t, second, 120*time.Second)
	checkRendezvous(t, second, locals)
	reps2 := second[0].read(t)
	if len(reps2) == 0 {
		t.Fatalf("resumed run reported nothing\n%s", stderrs(second))
	}
	if f := reps2[0]; f.Step <= ck.Step || f.Step > ck.Step+5 || f.Samples != float64(f.Step*64) {
		t.Errorf("resumed run's first report %+v; want step in (%d, %d], samples = step×64", f, ck.Step, ck.Step+5)
	}
	last := reps2[len(reps2)-1]
	if last.Step != 60 || last.Checkpoint == "" {
		t.Errorf("resumed run's last report %+v, want step 60 with a checkpoint", last)
	}
	if !(last.Metrics["val_loss"] < reps[0].Metrics["val_loss"]) {
		t.Errorf("val_loss %v at the end, %v at the start: no learning", last.Metrics["val_loss"], reps[0].Metrics["val_loss"])
	}
	if reps := second[1].read(t); len(reps) != 0 {
		t.Errorf("host 1 reported %+v; only rank 0 reports", reps)
	}
	// Rank 0 wrote each checkpoint once: the two it reported, nothing else.
	var want []string
	for _, rep := range append(reps, reps2...) {
		if rep.Checkpoint != "" {
			want = append(want, filepath.Base(rep.Checkpoint))
		}
	}
	files, _ := os.ReadDir(filepath.Join(root, "ckpt"))
	var got []string
	for _, f := range files {
		got = append(got, f.Name())
	}
	if want = slices.Compact(want); !slices.Equal(got, want) || len(want) != 2 {
		t.Errorf("checkpoint directory holds %q; rank 0 reported %q: want those two", got, want)
	}
}
