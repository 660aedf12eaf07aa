package slurmdemo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/slurm"
)

// fakePBS is a pbs.Runner that records each command and answers from
// outputs by command line (the recorded transcripts of cluster/pbs).
type fakePBS struct {
	outputs map[string][]byte
	calls   []string
}

func (f *fakePBS) Run(_ context.Context, _ []string, name string, args ...string) ([]byte, error) {
	argv := strings.Join(append([]string{name}, args...), " ")
	f.calls = append(f.calls, argv)
	out, ok := f.outputs[argv]
	if !ok {
		return nil, fmt.Errorf("fakePBS: no answer for %s", argv)
	}
	return out, nil
}

// recorded is a transcript of cluster/pbs/testdata (OpenPBS 23.06.06).
func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "cluster", "pbs", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPBSSubmitArgs(t *testing.T) {
	j := PlannedJob{Name: "swf-12581", Nodes: 3, Run: 28897 * time.Millisecond, Limit: 2 * time.Minute}
	got := strings.Join(PBSSubmitArgs(j, "workq", "/out/batch/swf-job.sh", "/out/batch"), " ")
	want := "-q workq -N swf-12581 -l select=3:ncpus=1 -l place=excl -l walltime=00:02:00 -r n -j oe -o /out/batch/ -- /out/batch/swf-job.sh 28.897"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	f := &fakePBS{outputs: map[string][]byte{"qsub " + want: recorded(t, "qsub_pilot.stdout")}}
	id, err := (&PBSCluster{Run: f}).Submit(context.Background(), j, "workq", "/out/batch/swf-job.sh")
	if err != nil || !strings.HasSuffix(id, ".gleaner-pbs") {
		t.Errorf("Submit = %q, %v; want qsub's job id", id, err)
	}
}

// A pilot preempted by a requeue is back in Q under its id: its first
// run is PREEMPTED, ended when PBS says (obittime), and its next run waits
// as a job of its own; the express job that took its vnode runs.
func TestPBSJobsRequeuedPilot(t *testing.T) {
	f := &fakePBS{outputs: map[string][]byte{"qstat -x -f -F json": recorded(t, "preempt_high-requeue_before_json.stdout")}}
	c := &PBSCluster{Run: f, Location: time.UTC}
	jobs, err := c.Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 8 || jobs[4].ID != "81.gleaner-pbs" || jobs[4].State != "RUNNING" || jobs[4].Partition != "gleaner" ||
		jobs[4].Comment != "high-requeue-p4" || strings.Join(jobs[4].Nodes, " ") != "gleaner-pbs[4]" {
		t.Fatalf("before: %+v", jobs)
	}
	f.outputs["qstat -x -f -F json"] = recorded(t, "preempt_high-requeue_after_json.stdout")
	jobs, err = c.Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]slurm.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	utc := func(h, m, s int) time.Time { return time.Date(2026, 11, 29, h, m, s, 0, time.UTC) }
	first := byID["81.gleaner-pbs"]
	if first.State != "PREEMPTED" || !first.Start.Equal(utc(20, 43, 50)) || !first.End.Equal(utc(20, 44, 1)) ||
		strings.Join(first.Nodes, " ") != "gleaner-pbs[4]" {
		t.Errorf("the preempted run: %+v", first)
	}
	if next := byID["81.gleaner-pbs/2"]; next.State != "PENDING" || len(next.Nodes) != 0 {
		t.Errorf("the next run: %+v", next)
	}
	if high := byID["85.gleaner-pbs"]; high.State != "RUNNING" || high.Partition != "high" {
		t.Errorf("the express job: %+v", high)
	}
	// The timeline counts the preemption.
	tl := NewTimeline([]string{"gleaner-pbs[4]"}, "workq", "gleaner")
	tl.Observe(Snapshot{At: utc(20, 44, 2), Jobs: jobs})
	if rec := tl.Pilots["81.gleaner-pbs"]; rec == nil || !rec.Preempted() || !rec.Ended {
		t.Errorf("timeline: %+v", rec)
	}

	// The rerun, listed without stime (as OpenPBS 23.06 lists a rerun),
	// started when first seen running; it keeps that start.
	rerun := strings.Replace(string(recorded(t, "preempt_high-requeue_after_json.stdout")), `"job_state":"Q"`, `"job_state":"R"`, 1)
	rerun = strings.Replace(rerun, `"run_count":1,`, `"run_count":2, "exec_vnode":"(gleaner-pbs[2]:ncpus=1)",`, 1)
	f.outputs["qstat -x -f -F json"] = []byte(rerun)
	now := time.Now()
	for range 2 {
		jobs, err = c.Jobs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range jobs {
		if j.ID == "81.gleaner-pbs/2" && (j.State != "RUNNING" || j.Start.Before(now.Add(-time.Second)) || j.Start.After(time.Now()) ||
			j.End.Sub(j.Start) != 30*time.Minute || strings.Join(j.Nodes, " ") != "gleaner-pbs[2]") {
			t.Errorf("the rerun: %+v", j)
		}
	}

	// After Fresh, the jobs of before are forgotten.
	c.jobs.reset(utc(21, 0, 0))
	if jobs, _ := c.Jobs(context.Background()); len(jobs) != 0 {
		t.Errorf("after reset: %+v", jobs)
	}
}

func TestPBSFinishedJobEndsAtObittime(t *testing.T) {
	f := &fakePBS{outputs: map[string][]byte{"qstat -x -f -F json": recorded(t, "qstat_json_finished.stdout")}}
	jobs, err := (&PBSCluster{Run: f, Location: time.UTC}).Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	j := jobs[0]
	if j.State != "COMPLETED" || j.Comment != "blocker" || j.Partition != "workq" ||
		!j.End.Equal(time.Date(2026, 11, 29, 20, 43, 46, 0, time.UTC)) || len(j.Nodes) != 4 {
		t.Errorf("finished job: %+v", j)
	}
}

func TestPBSState(t *testing.T) {
	for in, want := range map[string]string{"Q": "PENDING", "H": "PENDING", "W": "PENDING", "T": "PENDING",
		"R": "RUNNING", "B": "RUNNING", "E": "COMPLETING", "S": "SUSPENDED", "U": "SUSPENDED", "F": "COMPLETED", "X": "COMPLETED"} {
		if got := pbsState(in); got != want {
			t.Errorf("pbsState(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestPBSNodesAndDescribe(t *testing.T) {
	f := &fakePBS{outputs: map[string][]byte{
		"pbsnodes -av -F json":       recorded(t, "pbsnodes_v_idle_json.stdout"),
		"qmgr -c list server":        recorded(t, "qmgr_list_server.stdout"),
		"qmgr -c list queue gleaner": recorded(t, "qmgr_list_queue_gleaner.stdout"),
		"qmgr -c list sched":         recorded(t, "qmgr_list_sched.stdout"),
	}}
	c := &PBSCluster{Run: f}
	nodes, err := c.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(nodes, " "); got != "gleaner-pbs[0] gleaner-pbs[1] gleaner-pbs[2] gleaner-pbs[3] gleaner-pbs[4] gleaner-pbs[5] gleaner-pbs[6] gleaner-pbs[7]" {
		t.Errorf("nodes: %s", got)
	}
	info, err := c.Describe(context.Background(), "gleaner")
	if err != nil {
		t.Fatal(err)
	}
	if info.Grace != 10*time.Second || info.PlanInterval != 10*time.Second || info.PBS == nil ||
		info.PBS.Version != "23.06.06" || info.PBS.PreemptOrder != "R" || info.Version != "PBS 23.06.06" {
		t.Errorf("describe: %+v %+v", info, info.PBS)
	}
}

// The demo cancels the pilots the worker left by their job name.
func TestPBSCancelPilots(t *testing.T) {
	f := &fakePBS{outputs: map[string][]byte{
		"qselect -q gleaner -N gleaner-pilot.pbs-demo": []byte("90.gleaner-pbs\n91.gleaner-pbs\n"),
		"qdel 90.gleaner-pbs 91.gleaner-pbs":           nil,
	}}
	cmd, err := (&PBSCluster{Run: f}).CancelPilots(context.Background(), "pbs-demo", "gleaner")
	if err != nil || cmd != "qselect -q gleaner -N gleaner-pilot.pbs-demo | qdel" {
		t.Errorf("CancelPilots = %q, %v", cmd, err)
	}
	if got := strings.Join(f.calls, "; "); got != "qselect -q gleaner -N gleaner-pilot.pbs-demo; qdel 90.gleaner-pbs 91.gleaner-pbs" {
		t.Errorf("ran %s", got)
	}
	s := Settings{PilotPartition: "gleaner", Pool: "pbs-demo", MaxPending: 4, PilotTime: 30 * time.Minute, PilotMin: 2 * time.Minute, PilotEvery: time.Second, PilotYield: "5s"}
	if got := (&PBSCluster{}).NodeSource(s); got != "pbs:queue=gleaner,pool=pbs-demo,max_pending=4,time=30m0s,time_min=2m0s,interval=1s,gpus=none,yield=5s" {
		t.Errorf("NodeSource = %s", got)
	}
}
