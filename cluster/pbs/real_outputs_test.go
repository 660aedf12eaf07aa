package pbs

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// The transcripts in testdata were recorded from OpenPBS 23.06.06 on a
// one-machine cluster (testdata/README.md): 8 one-cpu vnodes
// gleaner-pbs[0..7], queues workq, gleaner and high, the container's
// clock in UTC.

// transcript is testdata/NAME (NAME.stdout or NAME.stderr); a file not
// recorded reads as empty.
func transcript(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return b
}

// recording is one row of transcripts.tsv.
type recording struct {
	name, command string
	exit          int
}

func recordings(t *testing.T) []recording {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "transcripts.tsv"))
	require.NoError(t, err)
	defer f.Close()
	var rs []recording
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), "\t", 3)
		require.Len(t, fields, 3, "transcripts.tsv: %q", sc.Text())
		exit, err := strconv.Atoi(fields[1])
		require.NoError(t, err)
		rs = append(rs, recording{name: fields[0], exit: exit, command: strings.ReplaceAll(fields[2], `\ `, " ")})
	}
	require.NoError(t, sc.Err())
	return rs
}

// Every recorded output of a command Gleaner reads is read without error
// by its parser.
func TestEveryTranscriptParses(t *testing.T) {
	parsers := []struct {
		prefix string
		parse  func([]byte) error
	}{
		{"qstat -f -F json", func(b []byte) error { _, err := ParseJobs(b, time.UTC); return err }},
		{"qstat -x -f -F json", func(b []byte) error { _, err := ParseJobs(b, time.UTC); return err }},
		{"pbsnodes -av -F json", func(b []byte) error { _, err := ParseVnodes(b); return err }},
		{"pbsnodes -a -F json", func(b []byte) error { _, err := ParseVnodes(b); return err }},
		{"pbsnodes -v ", func(b []byte) error { _, err := ParseVnodes(b); return err }},
		{"pbs_rstat -f", func(b []byte) error { _, err := ParseReservations(b, time.UTC); return err }},
		{"qmgr -c list queue", func(b []byte) error { _, err := ParseQueue(b); return err }},
		{"qmgr -c list server", func(b []byte) error { _, err := ParseServer(b); return err }},
		{"qmgr -c list sched", func(b []byte) error { _, err := ParseSched(b); return err }},
		{"qsub ", func(b []byte) error { _, err := ParseJobID(b); return err }},
	}
	parsed := 0
	for _, r := range recordings(t) {
		for _, p := range parsers {
			if !strings.HasPrefix(r.command, p.prefix) || (r.exit != 0 && r.command[:4] == "qsub") {
				continue
			}
			if strings.HasSuffix(p.prefix, " ") && strings.Contains(r.command, "-F json") != strings.HasPrefix(p.prefix, "pbsnodes") {
				continue
			}
			parsed++
			assert.NoError(t, p.parse(transcript(t, r.name+".stdout")), "%s: %s", r.name, r.command)
			break
		}
	}
	assert.GreaterOrEqual(t, parsed, 30, "transcripts parsed")
}

func TestRecordedPlan(t *testing.T) {
	jobs, err := ParseJobs(transcript(t, "qstat_json_plan.stdout"), time.UTC)
	require.NoError(t, err)
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	assert.Equal(t, []string{"67.gleaner-pbs", "68.gleaner-pbs", "69.gleaner-pbs", "70.gleaner-pbs", "71.gleaner-pbs", "72.gleaner-pbs"}, ids)
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 29, h, m, s, 0, time.UTC) }
	vnodes := func(ns ...int) []string {
		var out []string
		for _, n := range ns {
			out = append(out, "gleaner-pbs["+strconv.Itoa(n)+"]")
		}
		return out
	}
	assert.Equal(t, Job{ID: "67.gleaner-pbs", Name: "blocker", Owner: "root@gleaner-pbs", Queue: "workq", State: "R", Substate: SubstateRunning,
		Nodes: vnodes(0, 1, 2, 3), Start: at(20, 43, 24), Walltime: 20 * time.Minute, End: at(21, 3, 24),
		Created: at(20, 43, 24), RunCount: 1}, jobs[0])
	assert.Equal(t, Job{ID: "70.gleaner-pbs", Name: "big", Owner: "root@gleaner-pbs", Queue: "workq", State: "Q", Substate: 10,
		Walltime: 10 * time.Minute, EstimatedStart: at(21, 3, 24), EstimatedNodes: vnodes(0, 1, 2, 3, 4, 5, 6, 7),
		Created: at(20, 43, 26)}, jobs[3])
	// A pilot held back behind the top job gets an estimate of its own.
	assert.Equal(t, at(21, 13, 24), jobs[5].EstimatedStart)
	assert.Equal(t, vnodes(0), jobs[5].EstimatedNodes)
	assert.Equal(t, vnodes(6), jobs[4].Nodes)

	// Only batch work claims vnodes: big, not the queued pilot.
	resv, err := ParseReservations(transcript(t, "pbs_rstat_f.stdout"), time.UTC)
	require.NoError(t, err)
	assert.Equal(t, []pilot.Claim{
		{Kind: pilot.ClaimJob, Nodes: vnodes(0, 1, 2, 3, 4, 5, 6, 7), Start: at(21, 3, 24), By: "job 70.gleaner-pbs (workq)"},
		{Kind: pilot.ClaimReservation, Nodes: vnodes(0, 1), Start: at(22, 43, 0), By: "reservation maint"},
	}, Claims(jobs, resv, "gleaner"))

	// PBS plans a job on vnodes pilots hold at the pilots' walltime end
	// (seen live: 30 min ahead); the claim starts at the other jobs' end.
	late := slices.Clone(jobs)
	late[3].EstimatedStart = at(21, 33, 50)
	assert.Equal(t, at(21, 3, 24), Claims(late, nil, "gleaner")[0].Start, "the blocker's end")
	late[0].End = time.Time{}
	assert.Equal(t, at(21, 33, 50), Claims(late, nil, "gleaner")[0].Start, "an end PBS does not know: its estimate")
	// Pilots alone on its vnodes (the blocker gone, the rest free): the
	// job could start as soon as they leave, so its claim is overdue
	// from its submission and the pilots yield at once.
	late[0].State = "F"
	assert.Equal(t, jobs[3].Created, Claims(late, nil, "gleaner")[0].Start, "pilots alone: overdue since submitted")
	e := pilot.IdleUntil("gleaner-pbs[6]", at(21, 0, 0), at(21, 30, 0), Claims(late, nil, "gleaner"))
	assert.True(t, e.Claimed && !e.Until.After(at(21, 0, 1)), "the pilot on vnode 6 is claimed now: %+v", e)

	gleaner, err := ParseJobs(transcript(t, "qstat_json_queue_gleaner.stdout"), time.UTC)
	require.NoError(t, err)
	assert.Len(t, gleaner, 4)
	for _, name := range []string{"qstat_json_no_jobs.stdout", "qstat_unknown.stdout"} {
		none, err := ParseJobs(transcript(t, name), time.UTC)
		require.NoError(t, err, name)
		assert.Empty(t, none, "%s: no \"Jobs\" key", name)
	}
}

func TestRecordedReservations(t *testing.T) {
	for _, name := range []string{"pbs_rstat_f.stdout", "pbs_rstat_f_one.stdout"} {
		rs, err := ParseReservations(transcript(t, name), time.UTC)
		require.NoError(t, err)
		assert.Equal(t, []Reservation{{ID: "R73.gleaner-pbs", Name: "maint", State: "RESV_CONFIRMED",
			Start: time.Date(2026, 11, 29, 22, 43, 0, 0, time.UTC), End: time.Date(2026, 11, 29, 23, 43, 0, 0, time.UTC),
			Nodes: []string{"gleaner-pbs[0]", "gleaner-pbs[1]"}}}, rs, name)
	}
	// pbs_rstat -f of an unknown reservation says so on stderr, exits 0
	// and prints nothing: no reservation.
	rs, err := ParseReservations(transcript(t, "pbs_rstat_unknown.stdout"), time.UTC)
	require.NoError(t, err)
	assert.Empty(t, rs)
	assert.Equal(t, "pbs_rstat: Unknown Reservation Id\n", string(transcript(t, "pbs_rstat_unknown.stderr")))
}

func TestRecordedVnodes(t *testing.T) {
	all, err := ParseVnodes(transcript(t, "pbsnodes_v_idle_json.stdout"))
	require.NoError(t, err)
	assert.Len(t, all, 9, "the natural vnode and 8 vnodes")
	var names []string
	for _, v := range Eligible(all, "gleaner", "") {
		names = append(names, v.Name)
		assert.Equal(t, "gleaner-pbs", v.Mom)
		assert.Equal(t, "free", v.State)
	}
	assert.Equal(t, []string{"gleaner-pbs[0]", "gleaner-pbs[1]", "gleaner-pbs[2]", "gleaner-pbs[3]",
		"gleaner-pbs[4]", "gleaner-pbs[5]", "gleaner-pbs[6]", "gleaner-pbs[7]"}, names, "the natural vnode has no cpus")

	// Without -v, pbsnodes lists the host: one entry, its vnodes' cpus summed.
	hosts, err := ParseVnodes(transcript(t, "pbsnodes_idle_json.stdout"))
	require.NoError(t, err)
	require.Len(t, hosts, 1)
	assert.Equal(t, "8", hosts[0].Available["ncpus"])

	busy, err := ParseVnodes(transcript(t, "pbsnodes_busy_json.stdout"))
	require.NoError(t, err)
	assert.Equal(t, "job-exclusive", busy[1].State)
	assert.Equal(t, "free", busy[8].State)
}

func TestRecordedConfiguration(t *testing.T) {
	q, err := ParseQueue(transcript(t, "qmgr_list_queue_gleaner.stdout"))
	require.NoError(t, err)
	assert.Equal(t, Queue{Name: "gleaner", Type: "Execution", Priority: 0, Enabled: true, Started: true,
		KillDelay: 10 * time.Second, KillDelaySet: true, SoftLimits: []string{"max_run_soft"}}, q)
	high, err := ParseQueue(transcript(t, "qmgr_list_queue_high.stdout"))
	require.NoError(t, err)
	assert.Equal(t, 200, high.Priority, "qmgr prints \"Priority\" capitalised")
	assert.Empty(t, high.SoftLimits)

	sc, err := ParseSched(transcript(t, "qmgr_list_sched.stdout"))
	require.NoError(t, err)
	assert.Equal(t, Sched{Name: "default", PreemptOrder: "R", PreemptQueuePrio: 150,
		PreemptPrio: "express_queue, normal_jobs, queue_softlimits", Source: "qmgr -c 'list sched'"}, sc)
	one, err := ParseSched(transcript(t, "qmgr_list_sched_preempt_order.stdout"))
	require.NoError(t, err)
	assert.Equal(t, "R", one.PreemptOrder)

	srv, err := ParseServer(transcript(t, "qmgr_list_server.stdout"))
	require.NoError(t, err)
	assert.Equal(t, Server{Name: "gleaner-pbs", Version: "23.06.06", SchedulerIteration: 10 * time.Second, DefaultQueue: "workq"}, srv)

	id, err := ParseJobID(transcript(t, "qsub_pilot.stdout"))
	require.NoError(t, err)
	assert.Equal(t, "68.gleaner-pbs", id)
}

// A preempted pilot: requeued (R) it is queued again, with an estimate
// on its old vnode; deleted (D) or qdel'd it is finished.
func TestRecordedPreemption(t *testing.T) {
	jobs := func(name string) []Job {
		js, err := ParseJobs(transcript(t, name+".stdout"), time.UTC)
		require.NoError(t, err, name)
		return js
	}
	before := jobs("preempt_high-requeue_before_json")
	require.Len(t, before, 8)
	for _, j := range before {
		assert.Equal(t, pilot.Running, pilotState(j.State), j.ID)
		assert.Len(t, j.Nodes, 1)
	}
	victim := jobs("preempt_high-requeue_victim_json")[0]
	assert.Equal(t, "81.gleaner-pbs", victim.ID)
	assert.Equal(t, pilot.Pending, pilotState(victim.State))
	assert.Empty(t, victim.Nodes)
	assert.Equal(t, []string{"gleaner-pbs[4]"}, victim.EstimatedNodes)
	after := jobs("preempt_high-requeue_after_json")
	assert.Equal(t, "high", after[1].Queue)
	assert.Equal(t, []string{"gleaner-pbs[4]"}, after[1].Nodes)
	// A requeued pilot waits with the run it had and when that run ended.
	victimAfter := after[0]
	assert.Equal(t, "Q", victimAfter.State)
	assert.Equal(t, 1, victimAfter.RunCount)
	assert.Equal(t, time.Date(2026, 11, 29, 20, 44, 1, 0, time.UTC), victimAfter.Finished)
	assert.Equal(t, time.Date(2026, 11, 29, 20, 44, 1, 0, time.UTC), after[1].Created)
	// The requeued pilot claims nothing: it is a pilot, not batch work.
	assert.Empty(t, Claims(after, nil, "gleaner"))

	assert.Equal(t, pilot.Pending, pilotState(jobs("preempt_workq-requeue_victim_json")[0].State))
	for _, name := range []string{"preempt_high-delete_victim_json", "qstat_json_deleted_pilot", "qstat_json_finished"} {
		assert.Equal(t, "F", jobs(name)[0].State, name)
		assert.Equal(t, pilot.Other, pilotState("F"))
	}
}

// What PBS says when a command fails: qdel and qsig of a job gone are no
// error; the others are, with PBS's words.
func TestRecordedErrors(t *testing.T) {
	byName := map[string]recording{}
	for _, r := range recordings(t) {
		byName[r.name] = r
	}
	failed := func(name string) *CommandError {
		r := byName[name]
		require.NotEmpty(t, r.command, name)
		said := strings.Split(strings.TrimSpace(string(transcript(t, name+".stderr"))), "\n")
		return &CommandError{Argv: strings.Fields(r.command), Stderr: strings.Join(said, "; "),
			Err: errors.New("exit status " + strconv.Itoa(r.exit))}
	}
	for name, isGone := range map[string]bool{
		"qdel_unknown": true, "qdel_finished": true, "qsig_unknown": true,
		"qsig_bad_signal": false, "qsig_usage": false, "qsub_bad_queue": false, "qsub_bad_resource": false,
	} {
		assert.Equal(t, isGone, gone(failed(name)), name)
	}
	assert.EqualError(t, failed("qsub_bad_queue"), "qsub -q nosuch -- /bin/true: exit status 170: qsub: Unknown queue")
	assert.EqualError(t, failed("qsub_bad_resource"), "qsub -q gleaner -l select=1:nosuchres=1 -- /bin/true: exit status 187: qsub: Unknown resource: nosuchres")
	// qsig names the job where the signal is wrong.
	assert.Equal(t, "qsig: Unknown/illegal signal name 68.gleaner-pbs", failed("qsig_bad_signal").Stderr)
}

// The start checks over the recorded cluster: its gleaner queue passes,
// its express queue high is refused, and the plan reads as claims.
func TestNewSchedulerOverRecordedCluster(t *testing.T) {
	recorded := func() *fakePBS {
		f := newFakePBS()
		for key, name := range map[string]string{
			"qmgr -c list server":             "qmgr_list_server",
			"qmgr -c list queue gleaner":      "qmgr_list_queue_gleaner",
			"qmgr -c list queue high":         "qmgr_list_queue_high",
			"qmgr -c list sched":              "qmgr_list_sched",
			"pbsnodes -av -F json":            "pbsnodes_v_idle_json",
			"qstat -f -F json":                "qstat_json_plan",
			"qstat -f -F json gleaner":        "qstat_json_queue_gleaner",
			"pbs_rstat -f":                    "pbs_rstat_f",
			"qstat -f -F json 68.gleaner-pbs": "qstat_json_running_pilot",
		} {
			f.out[key] = string(transcript(t, name+".stdout"))
		}
		return f
	}
	s, err := NewScheduler(context.Background(), testSettings(t), recorded(), nil)
	require.NoError(t, err)
	l := s.Limits()
	assert.Equal(t, 8, l.Nodes)
	assert.Equal(t, 10*time.Second, l.Grace)
	assert.Equal(t, 10*time.Second, l.Cycle)
	assert.Equal(t, time.Duration(0), l.MaxTime)

	claims, err := s.Plan(context.Background())
	require.NoError(t, err)
	require.Len(t, claims, 2)
	assert.Equal(t, "job 70.gleaner-pbs (workq)", claims[0].By)

	node, err := PilotNode(context.Background(), recorded(), "68.gleaner-pbs")
	require.NoError(t, err)
	assert.Equal(t, "gleaner-pbs[4]", node)

	set := testSettings(t)
	set.Queue = "high"
	_, err = NewScheduler(context.Background(), set, recorded(), nil)
	assert.ErrorIs(t, err, ErrNotPreemptible)
	assert.ErrorContains(t, err, "queue high: priority 200 ≥ preempt_queue_prio 150")
}
