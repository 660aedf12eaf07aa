package slurmdemo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/slurm"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.Local)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// Builders of squeue's jobs.
func batchJob(id, name, state string, start, end float64, nodes ...string) slurm.Job {
	return slurm.Job{ID: id, State: state, Nodes: nodes, Start: at(start), End: at(end), Comment: name, Partition: "batch"}
}

func pilotJob(id, state string, start, end float64, node string) slurm.Job {
	j := slurm.Job{ID: id, State: state, Start: at(start), End: at(end), Comment: "gleaner:pool=p", Partition: "glean"}
	if node != "" {
		j.Nodes = []string{node}
	}
	return j
}

func pool(trialOf ...string) *PoolView {
	v := &PoolView{TrialOf: map[string]string{}}
	for i := 0; i+1 < len(trialOf); i += 2 {
		v.TrialOf[trialOf[i]] = trialOf[i+1]
	}
	return v
}

func TestTimelineHoldersAndNodeSeconds(t *testing.T) {
	tl := NewTimeline([]string{"g1", "g2", "g3", "g4"}, "batch", "glean")
	steps := []struct {
		snap Snapshot
		want string
	}{
		// A batch job on g1, a pilot with a trial on g2, one without on g3.
		{Snapshot{At: at(0), Jobs: []slurm.Job{
			batchJob("1", "swf-1", "RUNNING", 0, 60, "g1"),
			pilotJob("2", "RUNNING", 0, 1800, "g2"), pilotJob("3", "RUNNING", 0, 1800, "g3"),
			pilotJob("4", "PENDING", 0, 0, ""),
		}, Pool: pool("g2", "trial-a", "g9", "stale")}, "BTP."},
		// The pool does not answer: the pilots hold their nodes, no trial seen.
		{Snapshot{At: at(10), Jobs: []slurm.Job{
			batchJob("1", "swf-1", "RUNNING", 0, 60, "g1"),
			pilotJob("2", "RUNNING", 0, 1800, "g2"), pilotJob("3", "RUNNING", 0, 1800, "g3"),
		}}, "BPP."},
		// swf-1 completing still holds g1; a two-node job takes g3 and g4
		// (the pilot on g3 ended) while the pool still says a trial is on g3:
		// the batch job wins.
		{Snapshot{At: at(20), Jobs: []slurm.Job{
			batchJob("1", "swf-1", "COMPLETING", 0, 19, "g1"),
			batchJob("5", "swf-2", "RUNNING", 20, 80, "g3", "g4"),
			pilotJob("2", "RUNNING", 0, 1800, "g2"), pilotJob("3", "COMPLETED", 0, 19, "g3"),
		}, Pool: pool("g2", "trial-a", "g3", "trial-b")}, "BTBB"},
		{Snapshot{At: at(30), Jobs: []slurm.Job{
			batchJob("1", "swf-1", "COMPLETED", 0, 19, "g1"),
			batchJob("5", "swf-2", "RUNNING", 20, 80, "g3", "g4"),
			pilotJob("2", "RUNNING", 0, 1800, "g2"),
		}, Pool: pool("g2", "trial-a")}, ".TBB"},
	}
	for i, s := range steps {
		if got := NodeMap(tl.Observe(s.snap)); got != s.want {
			t.Errorf("sample %d: %s, want %s", i, got, s.want)
		}
	}
	tl.Close(at(40))
	ns := HolderShares(tl, at(0), at(40))
	// g1: B 0–30, . 30–40. g2: T 0–10, P 10–20, T 20–40. g3: P 0–20, B 20–40.
	// g4: . 0–20, B 20–40.
	want := NodeSeconds{Total: 160, Batch: 30 + 20 + 20, Idle: 90, Trial: 30, Pilot: 10 + 20, Free: 10 + 20}
	if ns != want {
		t.Errorf("node-seconds %+v, want %+v", ns, want)
	}
	if h := ns.Harvest(); h != 30.0/90 {
		t.Errorf("harvest %v, want 1/3", h)
	}
	// A window inside: [15, 25).
	if got := HolderShares(tl, at(15), at(25)); got.Batch != 10+5+5 || got.Trial != 5 || got.Pilot != 5+5 || got.Free != 5 {
		t.Errorf("window [15, 25): %+v", got)
	}
	c := tl.Counts()
	// Pilot 3 ended at 19, long before its limit: preempted (by swf-2).
	if c.BatchDone != 1 || c.BatchRunning != 1 || c.PilotsRunning != 1 || c.PilotsStarted != 2 || c.Preempted != 1 {
		t.Errorf("counts %+v", c)
	}
	if j := tl.Batch["swf-1"]; !j.Ended || j.Start != at(0) || j.End != at(19) || j.ID != "1" {
		t.Errorf("swf-1's record %+v", j)
	}
}

func TestPreemptedPilots(t *testing.T) {
	tl := NewTimeline([]string{"g1"}, "batch", "glean")
	obs := func(s float64, jobs ...slurm.Job) { tl.Observe(Snapshot{At: at(s), Jobs: jobs}) }
	// 10: preempted while we look: its end comes forward to now + GraceTime.
	// 11: preempted between two samples; with preempt_send_user_signal its
	//     agent left at once and it ended COMPLETED, long before its limit.
	// 12: cancelled by the worker.
	// 13: ran to its time limit (its agent left at the limit's SIGTERM, 30 s early).
	// 14: killed after GraceTime: PREEMPTED.
	// 15: still running at the end, never preempted.
	obs(0, pilotJob("10", "RUNNING", 0, 1800, "g1"), pilotJob("11", "RUNNING", 0, 1800, "g1"), pilotJob("12", "RUNNING", 0, 1800, "g1"),
		pilotJob("13", "RUNNING", 0, 120, "g1"), pilotJob("14", "RUNNING", 0, 1800, "g1"), pilotJob("15", "RUNNING", 0, 1800, "g1"))
	obs(1, pilotJob("10", "RUNNING", 0, 11, "g1"), pilotJob("11", "COMPLETED", 0, 0.5, "g1"), pilotJob("12", "CANCELLED", 0, 0.7, "g1"),
		pilotJob("13", "RUNNING", 0, 120, "g1"), pilotJob("14", "RUNNING", 0, 11, "g1"), pilotJob("15", "RUNNING", 0, 1800, "g1"))
	obs(100, pilotJob("10", "COMPLETED", 0, 3, "g1"), pilotJob("11", "COMPLETED", 0, 0.5, "g1"), pilotJob("12", "CANCELLED", 0, 0.7, "g1"),
		pilotJob("13", "COMPLETED", 0, 90, "g1"), pilotJob("14", "PREEMPTED", 0, 16, "g1"), pilotJob("15", "RUNNING", 0, 1800, "g1"))
	want := map[string]bool{"10": true, "11": true, "12": false, "13": false, "14": true, "15": false}
	for id, w := range want {
		if got := tl.Pilots[id].Preempted(); got != w {
			t.Errorf("pilot %s (%+v): preempted %v, want %v", id, *tl.Pilots[id], got, w)
		}
	}
	// With the lead known (30 s), pilot 13 still ran out of time; one
	// backfilled with a 2-minute limit and preempted after 65 s is told
	// apart from it (without the lead, 55 s early is within EarlyEnd).
	lead := NewTimeline([]string{"g1"}, "batch", "glean")
	lead.PilotLead = 30 * time.Second
	lead.Observe(Snapshot{At: at(0), Jobs: []slurm.Job{pilotJob("13", "RUNNING", 0, 120, "g1"), pilotJob("16", "RUNNING", 0, 120, "g1")}})
	lead.Observe(Snapshot{At: at(100), Jobs: []slurm.Job{pilotJob("13", "COMPLETED", 0, 90, "g1"), pilotJob("16", "COMPLETED", 0, 65, "g1")}})
	if lead.Pilots["13"].Preempted() || !lead.Pilots["16"].Preempted() {
		t.Errorf("with the lead: 13 preempted %v (want false), 16 %v (want true)", lead.Pilots["13"].Preempted(), lead.Pilots["16"].Preempted())
	}
	if s := SummarisePilots(tl); s.Started != 6 || s.Preempted != 3 || s.States["COMPLETED"] != 3 {
		t.Errorf("summary %+v", s)
	}
	if c := tl.Counts(); c.Preempted != 3 || c.PilotsRunning != 1 {
		t.Errorf("counts %+v", c)
	}
}

func TestMeasureChurn(t *testing.T) {
	tl := NewTimeline([]string{"g1", "g2"}, "batch", "glean")
	type state struct {
		s    float64
		jobs []slurm.Job
		pool *PoolView
	}
	for _, st := range []state{
		{0, []slurm.Job{batchJob("1", "swf-1", "RUNNING", 0, 10, "g1"), batchJob("2", "swf-2", "RUNNING", 0, 30, "g2")}, pool()},
		// g1's hole opens at 10; a pilot runs there at 12, a trial at 14.
		{10, []slurm.Job{batchJob("1", "swf-1", "COMPLETED", 0, 10, "g1"), batchJob("2", "swf-2", "RUNNING", 0, 30, "g2")}, pool()},
		{12, []slurm.Job{batchJob("2", "swf-2", "RUNNING", 0, 30, "g2"), pilotJob("7", "RUNNING", 12, 1800, "g1")}, pool()},
		{14, []slurm.Job{batchJob("2", "swf-2", "RUNNING", 0, 30, "g2"), pilotJob("7", "RUNNING", 12, 1800, "g1")}, pool("g1", "t1")},
		// g2's hole opens at 30 and closes at 31 before any pilot: missed.
		{30, []slurm.Job{pilotJob("7", "RUNNING", 12, 1800, "g1")}, pool("g1", "t1")},
		{31, []slurm.Job{batchJob("3", "swf-3", "RUNNING", 31, 60, "g2"), pilotJob("7", "RUNNING", 12, 1800, "g1")}, pool("g1", "t1")},
		// g1 is taken back at 40 and stays busy.
		{40, []slurm.Job{batchJob("3", "swf-3", "RUNNING", 31, 60, "g2"), batchJob("4", "swf-4", "RUNNING", 40, 60, "g1")}, pool()},
	} {
		tl.Observe(Snapshot{At: at(st.s), Jobs: st.jobs, Pool: st.pool})
	}
	tl.Close(at(50))
	c := MeasureChurn(tl, at(0), at(50))
	if c.Holes != 2 || c.Missed != 1 || c.MissedLength.Max != 1 {
		t.Fatalf("churn %+v, want 2 holes, 1 missed of 1 s", c)
	}
	if c.IdleToPilot.N != 1 || c.IdleToPilot.Max != 2 || c.IdleToTrial.Max != 4 {
		t.Errorf("idle→pilot %+v, idle→trial %+v; want 2 s and 4 s", c.IdleToPilot, c.IdleToTrial)
	}
	if c.HoleLength.Max != 30 { // g1: 10–40
		t.Errorf("hole lengths %+v", c.HoleLength)
	}
	starts := BatchStarts(tl, at(0))
	if starts["swf-3"] != 31 || starts["swf-4"] != 40 || len(starts) != 4 {
		t.Errorf("starts %v", starts)
	}
	pre, _, gaps := Handovers(tl, map[string]time.Time{"swf-4": at(39)})
	if len(pre) != 0 || len(gaps) != 0 {
		t.Errorf("handovers %v %v: pilot 7 never ended, so none", pre, gaps)
	}
}

func TestHandovers(t *testing.T) {
	tl := NewTimeline([]string{"g1", "g2", "g3"}, "batch", "glean")
	tl.Observe(Snapshot{At: at(0), Jobs: []slurm.Job{pilotJob("1", "RUNNING", 0, 1800, "g1"), pilotJob("2", "RUNNING", 0, 1800, "g2"), pilotJob("3", "RUNNING", 0, 1800, "g3")}})
	tl.Observe(Snapshot{At: at(30), Jobs: []slurm.Job{
		pilotJob("1", "COMPLETED", 0, 18.5, "g1"), pilotJob("2", "COMPLETED", 0, 2, "g2"), pilotJob("3", "COMPLETED", 0, 25, "g3"),
		batchJob("9", "swf-9", "RUNNING", 19, 100, "g1", "g2"),
		batchJob("8", "swf-8", "RUNNING", 26, 100, "g3"),
	}})
	// swf-9, submitted at 10, waited for pilot 1 (ended 18.5, it started
	// 0.5 s later); pilot 2 left its node before swf-9 was submitted: no
	// wait. swf-8 was not submitted by the replay: not counted.
	pre, waited, gaps := Handovers(tl, map[string]time.Time{"swf-9": at(10)})
	if pre["swf-9"] != 1 || len(pre) != 1 || len(gaps) != 1 || gaps[0] != 0.5 || waited[0] != 8.5 {
		t.Errorf("handovers %v, waited %v, gaps %v; want swf-9 took 1 pilot's node after 8.5 s, 0.5 s gap", pre, waited, gaps)
	}
	// swf-8, submitted at 20: pilot 3 on g3 ended at 25 and it started at
	// 26; but had swf-7 run on g3 in between, swf-8 waited for swf-7.
	pre, _, _ = Handovers(tl, map[string]time.Time{"swf-8": at(20)})
	if pre["swf-8"] != 1 {
		t.Errorf("handovers %v, want swf-8 took pilot 3's node", pre)
	}
	tl.Observe(Snapshot{At: at(31), Jobs: []slurm.Job{batchJob("7", "swf-7", "COMPLETED", 25.5, 25.8, "g3")}})
	pre, _, _ = Handovers(tl, map[string]time.Time{"swf-8": at(20)})
	if pre["swf-8"] != 0 {
		t.Errorf("handovers %v, want none: swf-7 held g3 between pilot 3 and swf-8", pre)
	}
}

func TestCompareStarts(t *testing.T) {
	base := map[string]float64{"a": 10, "b": 20, "c": 30, "d": 40, "only-base": 1}
	live := map[string]float64{"a": 10.5, "b": 35, "c": 28, "d": 40, "only-live": 2}
	d := CompareStarts(base, live, 12*time.Second)
	if d.Matched != 4 || d.Later != 1 || d.Earlier != 1 || d.OverBound != 1 || d.Delay.Max != 15 || d.Delay.Min != -2 {
		t.Errorf("delays %+v", d)
	}
	if d.Delay.Mean != (0.5+15-2+0)/4 || d.Worst[0].Name != "b" || d.Worst[0].Delay != 15 {
		t.Errorf("mean %v, worst %+v", d.Delay.Mean, d.Worst)
	}
	if strings.Join(d.OnlyBaseline, ",") != "only-base" || strings.Join(d.OnlyLive, ",") != "only-live" {
		t.Errorf("unmatched %v %v", d.OnlyBaseline, d.OnlyLive)
	}
}

func TestMonitorSampleAndProgressLine(t *testing.T) {
	clock := &fakeClock{now: t0}
	out := "1|RUNNING|g1|2026-11-23T12:00:00|2026-11-23T12:01:00|swf-1|batch\n" +
		"2|RUNNING|g2|2026-11-23T12:00:00|2026-11-23T12:30:00|gleaner:pool=p|glean\n" +
		"3|PENDING||N/A|N/A|gleaner:pool=p|glean\n" +
		"4|PENDING||N/A|N/A|swf-2|batch\n"
	run := &fakeSlurm{clock: clock, answer: func(int, string, []string) ([]byte, error) { return []byte(out), nil }}
	m := &Monitor{Timeline: NewTimeline([]string{"g1", "g2", "g3"}, "batch", "glean"), Jobs: SlurmJobs{Run: run}, Clock: clock,
		Pool: func(context.Context) (*PoolView, error) { return pool("g2", "t1"), nil }}
	_, held, err := m.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if run.calls[0].argv != "squeue -h -a -t all -o "+slurm.PilotFormat {
		t.Errorf("ran %s", run.calls[0].argv)
	}
	line := ProgressLine(125*time.Second, held, m.Timeline.Counts(), 250, 9, 27*time.Minute+10*time.Second)
	want := "  2:05 BT. | batch 0/250 done, 1 running, 1 waiting | pilots 1 running, 1 waiting, 0 preempted | trials 9 done | about 27 min left"
	if line != want {
		t.Errorf("got  %q\nwant %q", line, want)
	}
	if got := ProgressLine(0, held, m.Timeline.Counts(), 250, -1, -1); strings.Contains(got, "pilots") || strings.Contains(got, "left") {
		t.Errorf("baseline line without an estimate %q names pilots or time left", got)
	}
	// A malformed squeue line is an error naming the command, not a crash.
	out = "garbage\n"
	if _, _, err := m.Sample(context.Background()); err == nil || !strings.Contains(err.Error(), "squeue") {
		t.Errorf("got %v, want an error naming squeue", err)
	}
}

func TestMonitorLoopStopsWhenDone(t *testing.T) {
	clock := &fakeClock{now: t0}
	run := &fakeSlurm{clock: clock, answer: func(int, string, []string) ([]byte, error) { return nil, nil }}
	m := &Monitor{Timeline: NewTimeline([]string{"g1"}, "batch", "glean"), Jobs: SlurmJobs{Run: run}, Clock: clock, Interval: time.Second}
	n := 0
	err := m.Loop(context.Background(), func() bool { return n == 3 }, func(Snapshot, []Holder, error) { n++ })
	if err != nil || n != 3 || clock.Now().Sub(t0) != 2*time.Second {
		t.Errorf("loop: %v after %d samples at +%v; want 3 samples a second apart", err, n, clock.Now().Sub(t0))
	}
}

// A pilot preempted within a second of its start is never seen running:
// its time limit, when known, still tells that it ended early.
func TestPreemptedPilotNeverSeenRunning(t *testing.T) {
	tl := NewTimeline([]string{"g1"}, "batch", "glean")
	tl.PilotLimit = 30 * time.Minute
	tl.Observe(Snapshot{At: at(0), Jobs: []slurm.Job{pilotJob("25", "PENDING", 0, 0, "")}})
	tl.Observe(Snapshot{At: at(2), Jobs: []slurm.Job{pilotJob("25", "FAILED", 0.5, 1.5, "g1")}})
	if !tl.Pilots["25"].Preempted() {
		t.Errorf("pilot %+v: want preempted", *tl.Pilots["25"])
	}
}

func TestCountYieldsReadsTheWorkerLog(t *testing.T) {
	log := "gleaner worker: slurm: pilots for pool p in partition glean\n" +
		"gleaner worker: slurm: pilot 87 yields node g2 to job 100 (batch), planned at 15:07:04\n" +
		"gleaner worker: slurm: 5 pilots running, 0 waiting\n" +
		"gleaner worker: slurm: pilot 95 yields node g5 to reservation maint, planned at 15:08:00\n"
	if n := CountYields([]byte(log), "slurm"); n != 2 {
		t.Errorf("CountYields = %d, want 2", n)
	}
}

// A shared cluster: someone else's jobs in the batch partition (PBS pass C
// saw an integration test's "blocker" and "big" in workq and counted 62 of
// 60 jobs done). They hold their nodes as batch, but are neither counted
// nor compared.
func TestForeignBatchJobsAreNotCounted(t *testing.T) {
	tl := NewTimeline([]string{"g1", "g2"}, "batch", "glean")
	tl.Replayed = map[string]bool{"swf-1": true}
	if got := NodeMap(tl.Observe(Snapshot{At: at(0), Jobs: []slurm.Job{
		batchJob("1", "swf-1", "RUNNING", 0, 10, "g1"), batchJob("2", "blocker", "RUNNING", 0, 10, "g2"),
	}})); got != "BB" {
		t.Errorf("holders %s, want BB", got)
	}
	tl.Observe(Snapshot{At: at(20), Jobs: []slurm.Job{
		batchJob("1", "swf-1", "COMPLETED", 0, 10, "g1"), batchJob("2", "blocker", "COMPLETED", 0, 10, "g2"),
	}})
	if c := tl.Counts(); c.BatchDone != 1 {
		t.Errorf("%d batch jobs done, want 1 (the replay's)", c.BatchDone)
	}
	if s := BatchStarts(tl, at(0)); len(s) != 1 || s["swf-1"] != 0 {
		t.Errorf("starts %v, want swf-1's alone", s)
	}
	if f := tl.Foreign(); strings.Join(f, ",") != "blocker" {
		t.Errorf("foreign %v", f)
	}
}
