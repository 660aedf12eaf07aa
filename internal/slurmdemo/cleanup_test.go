package slurmdemo

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// After the worker stopped, the demo counts the pilots still pending or
// running and cancels them itself by their job name, and says so; with
// none left it cancels nothing.
func TestCancelPilotsTheWorkerLeft(t *testing.T) {
	for _, tc := range []struct {
		name    string
		squeue  string
		left    int
		scancel string
		stopped string
	}{
		{"two left", "7|RUNNING|g2|2026-11-23T12:00:00|2026-11-23T12:30:00|gleaner:pool=slurm-demo|glean\n" +
			"8|PENDING||N/A|N/A|gleaner:pool=slurm-demo|glean\n" +
			"9|RUNNING|g1|2026-11-23T12:00:00|2026-11-23T12:01:00|swf-1|batch\n",
			2, "scancel --name=gleaner-pilot.slurm-demo --partition=glean",
			"2 pilots the worker left (scancel --name=gleaner-pilot.slurm-demo --partition=glean)"},
		{"none left", "6|COMPLETED|g2|2026-11-23T12:00:00|2026-11-23T12:00:30|gleaner:pool=slurm-demo|glean\n", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &fakeSlurm{clock: &fakeClock{now: t0}, answer: func(_ int, name string, _ []string) ([]byte, error) {
				if name == "squeue" {
					return []byte(tc.squeue), nil
				}
				return nil, nil
			}}
			var out strings.Builder
			d := &demo{s: Settings{Pool: "slurm-demo", BatchPartition: "batch", PilotPartition: "glean", Stdout: &out, Stderr: &out},
				cluster: &Cluster{Run: run}, nodes: []string{"g1", "g2"}}
			left := d.pilotsLeft(context.Background())
			if left != tc.left {
				t.Fatalf("pilots left %d, want %d", left, tc.left)
			}
			if got := d.cancelPilots(context.Background(), left); got != tc.left {
				t.Errorf("cancelled %d, want %d", got, tc.left)
			}
			var scancel []string
			for _, c := range run.calls {
				if strings.HasPrefix(c.argv, "scancel") {
					scancel = append(scancel, c.argv)
				}
			}
			if got := strings.Join(scancel, "; "); got != tc.scancel {
				t.Errorf("ran %q, want %q", got, tc.scancel)
			}
			if got := strings.Join(d.stopped, "; "); got != tc.stopped {
				t.Errorf("cleaned up %q, want %q", got, tc.stopped)
			}
			if tc.left > 0 && !strings.Contains(out.String(), "slurm-demo: cancelled 2 pilots the worker left: scancel --name=gleaner-pilot.slurm-demo") {
				t.Errorf("the demo did not say so:\n%s", out.String())
			}
		})
	}
}

// A scancel that fails is a warning naming the command, and nothing is
// counted as cancelled.
func TestCancelPilotsFails(t *testing.T) {
	run := &fakeSlurm{clock: &fakeClock{now: t0}, answer: func(int, string, []string) ([]byte, error) {
		return nil, errors.New("scancel: error: Invalid job id specified")
	}}
	var out strings.Builder
	d := &demo{s: Settings{Pool: "p", PilotPartition: "glean", Stdout: &out, Stderr: &out}, cluster: &Cluster{Run: run}}
	if got := d.cancelPilots(context.Background(), -1); got != 0 || len(d.stopped) != 0 {
		t.Errorf("cancelled %d, cleaned up %v; want 0, nothing", got, d.stopped)
	}
	if !strings.Contains(out.String(), "warning: cancelling the pilots the worker may have left (scancel --name=gleaner-pilot.p --partition=glean): scancel: error: Invalid job id") {
		t.Errorf("warning:\n%s", out.String())
	}
}

func TestInterruptedError(t *testing.T) {
	for _, tc := range []struct {
		e    Interrupted
		want string
	}{
		{Interrupted{During: "the live pass, 4 min in", Stopped: []string{"the gleaner worker", "2 pilots the worker left (scancel --name=gleaner-pilot.slurm-demo --partition=glean)", "the Temporal dev server", "the Slurm cluster (its jobs, its daemons, /tmp/gleaner-slurm-demo)"}, Result: "/out/result.json"},
			"stopped during the live pass, 4 min in; cleaned up: the gleaner worker, 2 pilots the worker left (scancel --name=gleaner-pilot.slurm-demo --partition=glean), the Temporal dev server, the Slurm cluster (its jobs, its daemons, /tmp/gleaner-slurm-demo); nothing of it left running; what was measured: /out/result.json"},
		{Interrupted{During: "the start"}, "stopped during the start; nothing had started yet; nothing of it left running"},
		{Interrupted{During: "the baseline pass, 1 min in", Stopped: []string{"the Slurm cluster"}, Left: []string{"42 sleep 9"}, Err: errors.New("stopping the Slurm cluster: exit status 1")},
			"stopped during the baseline pass, 1 min in; cleaned up: the Slurm cluster; also: stopping the Slurm cluster: exit status 1; 1 process left running:\n  42 sleep 9"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestPilotsLeftText(t *testing.T) {
	for _, tc := range []struct {
		left, cancelled int
		want            string
	}{
		{0, 0, "0 left after the worker stopped"},
		{2, 2, "2 left after the worker stopped, cancelled by the demo (scancel by their job name)"},
		{2, 0, "2 left after the worker stopped, not cancelled"},
		{-1, -1, "pilots left after the worker stopped not counted, cancelled by the demo (scancel by their job name)"},
	} {
		if got := pilotsLeftText(tc.left, tc.cancelled, "scancel"); got != tc.want {
			t.Errorf("pilotsLeftText(%d, %d) = %q, want %q", tc.left, tc.cancelled, got, tc.want)
		}
	}
}
