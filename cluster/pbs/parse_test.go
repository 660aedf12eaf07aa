package pbs

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Outputs written from OpenPBS's documented formats (qstat(1B),
// pbsnodes(8B), pbs_rstat(1B), qmgr(8B)); real_outputs_test.go reads the
// ones recorded from a cluster.

// qstatJSON has a running pilot, the pool's queued pilot, another pool's,
// a running batch job and a queued one in the plan. PBS left a backslash
// unescaped in a Variable_List, as it does.
const qstatJSON = `{
    "timestamp":1795438800,
    "pbs_version":"23.06.06",
    "pbs_server":"pbs",
    "Jobs":{
        "12.pbs":{
            "Job_Name":"gleaner-pilot.test",
            "Job_Owner":"alice@login",
            "job_state":"R",
            "queue":"gleaner",
            "exec_host":"pbs/2",
            "exec_vnode":"(pbs[2]:ncpus=1)",
            "Resource_List":{"ncpus":1, "nodect":1, "place":"excl", "select":"1:ncpus=1", "walltime":"00:30:00"},
            "stime":"Mon Nov 23 13:00:00 2026",
            "Variable_List":{"PBS_O_HOME":"/home/alice", "PBS_O_WORKDIR":"C:\work"}
        },
        "13.pbs":{
            "Job_Name":"big",
            "Job_Owner":"bob@login",
            "job_state":"Q",
            "queue":"workq",
            "Resource_List":{"ncpus":3, "nodect":3, "select":"3:ncpus=1", "walltime":"01:00:00"},
            "estimated":{"exec_vnode":"(pbs[0]:ncpus=1)+(pbs[1]:ncpus=1)+(pbs[2]:ncpus=1)", "start_time":"Mon Nov 23 13:20:00 2026"}
        },
        "14.pbs":{
            "Job_Name":"gleaner-pilot.test",
            "job_state":"Q",
            "queue":"gleaner",
            "Resource_List":{"max_walltime":"00:30:00", "min_walltime":"00:10:00"},
            "estimated":{"exec_vnode":"(pbs[3]:ncpus=1)", "start_time":"Mon Nov 23 13:05:00 2026"}
        },
        "15.pbs":{
            "Job_Name":"gleaner-pilot.other",
            "job_state":"R",
            "queue":"gleaner",
            "exec_vnode":"(pbs[4]:ncpus=1)",
            "stime":"Mon Nov 23 12:00:00 2026",
            "Resource_List":{"walltime":"02:00:00"}
        },
        "9.pbs":{
            "Job_Name":"blocker",
            "job_state":"R",
            "queue":"workq",
            "exec_vnode":"(pbs[0]:ncpus=1)+(pbs[1]:ncpus=1)",
            "stime":"Mon Nov 23 12:30:00 2026",
            "Resource_List":{"walltime":"00:50:00"}
        }
    }
}`

func at(hour, min int) time.Time { return time.Date(2026, 11, 23, hour, min, 0, 0, time.UTC) }

func TestParseJobs(t *testing.T) {
	jobs, err := ParseJobs([]byte(qstatJSON), time.UTC)
	require.NoError(t, err)
	ids := []string{}
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	assert.Equal(t, []string{"9.pbs", "12.pbs", "13.pbs", "14.pbs", "15.pbs"}, ids, "in sequence order")
	assert.Equal(t, Job{ID: "12.pbs", Name: "gleaner-pilot.test", Owner: "alice@login", Queue: "gleaner", State: "R",
		Nodes: []string{"pbs[2]"}, Start: at(13, 0), Walltime: 30 * time.Minute, End: at(13, 30)}, jobs[1])
	assert.Equal(t, at(13, 20), jobs[2].EstimatedStart)
	assert.Equal(t, []string{"pbs[0]", "pbs[1]", "pbs[2]"}, jobs[2].EstimatedNodes)
	assert.True(t, jobs[3].End.IsZero(), "a queued shrink-to-fit job has no walltime yet")

	none, err := ParseJobs([]byte(`{"timestamp":1, "pbs_version":"23.06.06", "pbs_server":"pbs"}`), time.UTC)
	require.NoError(t, err)
	assert.Empty(t, none, "qstat prints no Jobs when there are none")
}

func TestParseJobsSaysWhereItCannotRead(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{``, "qstat -f -F json: no output"},
		{`{"Jobs":{"x":{"job_state":"R"}}}`, `qstat -f -F json: Jobs: "x": want a job id`},
		{`{"Jobs":{"1.s":{"job_state":"R","exec_vnode":"(a:ncpus=1"}}}`, `qstat -f -F json: job 1.s: exec_vnode: "(a:ncpus=1": chunk "(a:ncpus=1": unbalanced parentheses`},
		{`{"Jobs":{"1.s":{"job_state":"R","stime":"yesterday"}}}`, `job 1.s: stime: "yesterday": want a time`},
		{`{"Jobs":{"1.s":{"job_state":"Q","Resource_List":{"walltime":"1:x"}}}}`, `job 1.s: Resource_List.walltime`},
		{`{"Jobs":{"1.s":{"queue":"q"}}}`, `job 1.s: job_state: missing`},
	} {
		_, err := ParseJobs([]byte(tc.out), time.UTC)
		var pe *ParseError
		require.True(t, errors.As(err, &pe), "%q: %v", tc.out, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestParseExecVnode(t *testing.T) {
	for in, want := range map[string][]string{
		"":                                      nil,
		"(n1:ncpus=1)":                          {"n1"},
		"(node1:ncpus=1)+(node2:ncpus=1)":       {"node1", "node2"},
		"(a:ncpus=2+b:ncpus=2)+(c:ngpus=4)":     {"a", "b", "c"},
		"(h[0]:ncpus=1:mem=1gb)+(h[0]:ncpus=1)": {"h[0]"},
		"x3001c0s7b0n0":                         {"x3001c0s7b0n0"},
	} {
		got, err := ParseExecVnode(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"(", "()", "(a)+", "(a:ncpus=1))", "(a b:ncpus=1)", "(=1)"} {
		_, err := ParseExecVnode(in)
		assert.Error(t, err, in)
	}
}

func TestParseTimeAndDuration(t *testing.T) {
	for in, want := range map[string]time.Time{
		"Mon Nov 23 13:50:00 2026": time.Date(2026, 11, 23, 13, 50, 0, 0, time.UTC),
		"Wed Dec  2 09:05:01 2026": time.Date(2026, 12, 2, 9, 5, 1, 0, time.UTC),
		"1795438800":               time.Unix(1795438800, 0),
		"":                         {},
	} {
		got, err := ParseTime(in, time.UTC)
		require.NoError(t, err, in)
		assert.True(t, want.Equal(got), "%q: %v", in, got)
	}
	_, err := ParseTime("2026-11-23T13:50:00", time.UTC)
	assert.Error(t, err)

	for in, want := range map[string]time.Duration{
		"00:30:00": 30 * time.Minute, "100:00:00": 100 * time.Hour, "90": 90 * time.Second,
		"05:30": 5*time.Minute + 30*time.Second, "00:00:01.5": 1500 * time.Millisecond,
	} {
		got, err := ParseDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "1:2:3:4", "-5", "a", "1.5:00", "1:"} {
		_, err := ParseDuration(in)
		assert.Error(t, err, in)
	}
	assert.Equal(t, "02:00:00", FormatDuration(2*time.Hour))
	assert.Equal(t, "100:00:01", FormatDuration(100*time.Hour+time.Millisecond))
}

const pbsnodesJSON = `{
    "timestamp":1795438800,
    "pbs_version":"23.06.06",
    "pbs_server":"pbs",
    "nodes":{
        "pbs":{"Mom":"pbs", "Port":15002, "state":"free", "resources_available":{"host":"pbs", "ncpus":0, "vnode":"pbs"}},
        "pbs[0]":{"Mom":"pbs", "state":"job-busy", "jobs":["9.pbs/0"], "resources_available":{"host":"pbs", "ncpus":1, "vnode":"pbs[0]", "system":"polaris"}},
        "pbs[1]":{"Mom":"pbs", "state":"free", "resources_available":{"host":"pbs", "ncpus":1, "ngpus":4, "vnode":"pbs[1]", "system":"polaris"}},
        "pbs[2]":{"Mom":"pbs", "state":"free", "queue":"debug", "resources_available":{"host":"pbs", "ncpus":1, "vnode":"pbs[2]"}},
        "pbs[3]":{"Mom":"pbs", "state":"offline", "resources_available":{"host":"pbs", "ncpus":1, "vnode":"pbs[3]", "system":"sophia"}}
    }
}`

func TestParseVnodesAndEligible(t *testing.T) {
	vs, err := ParseVnodes([]byte(pbsnodesJSON))
	require.NoError(t, err)
	require.Len(t, vs, 5)
	assert.Equal(t, Vnode{Name: "pbs[1]", Mom: "pbs", State: "free",
		Available: map[string]string{"host": "pbs", "ncpus": "1", "ngpus": "4", "vnode": "pbs[1]", "system": "polaris"}}, vs[2])
	names := func(vs []Vnode) []string {
		var n []string
		for _, v := range vs {
			n = append(n, v.Name)
		}
		return n
	}
	assert.Equal(t, []string{"pbs[0]", "pbs[1]", "pbs[3]"}, names(Eligible(vs, "gleaner", "")), "cpus, no other queue's")
	assert.Equal(t, []string{"pbs[0]", "pbs[1]", "pbs[2]", "pbs[3]"}, names(Eligible(vs, "debug", "")))
	assert.Equal(t, []string{"pbs[0]", "pbs[1]"}, names(Eligible(vs, "gleaner", "system=polaris")))
	assert.Equal(t, []string{"pbs[1]"}, names(Eligible(vs, "gleaner", "ngpus=2:system=polaris")))
}

const qmgrQueue = `Queue gleaner
    queue_type = Execution
    priority = 0
    max_run_soft = [o:PBS_ALL=0]
    total_jobs = 0
    state_count = Transit:0 Queued:0 Held:0 Waiting:0 Running:0 Exiting:0 Begun:0 
    kill_delay = 20
    resources_max.walltime = 06:00:00
    resources_assigned.ncpus = 0
    enabled = True
    started = True

`

const qmgrServer = `Server pbs
    server_state = Active
    server_host = pbs
    scheduling = True
    default_queue = workq
    log_events = 511
    resources_default.ncpus = 1
    scheduler_iteration = 10
    pbs_version = 23.06.06
`

const qmgrSched = `Sched default
    sched_host = pbs
    pbs_version = 23.06.06
    sched_cycle_length = 00:20:00
    sched_preempt_enforce_resumption = False
    preempt_queue_prio = 150
    preempt_prio = express_queue, normal_jobs
    preempt_order = R
    preempt_sort = min_time_since_start
    log_events = 767
    scheduling = True
`

func TestParseQmgr(t *testing.T) {
	q, err := ParseQueue([]byte(qmgrQueue))
	require.NoError(t, err)
	assert.Equal(t, Queue{Name: "gleaner", Type: "Execution", Enabled: true, Started: true, KillDelay: 20 * time.Second,
		KillDelaySet: true, MaxWalltime: 6 * time.Hour, SoftLimits: []string{"max_run_soft"}}, q)

	s, err := ParseServer([]byte(qmgrServer))
	require.NoError(t, err)
	assert.Equal(t, Server{Name: "pbs", Version: "23.06.06", SchedulerIteration: 10 * time.Second, DefaultQueue: "workq"}, s)

	sc, err := ParseSched([]byte(qmgrSched))
	require.NoError(t, err)
	assert.Equal(t, Sched{Name: "default", PreemptOrder: "R", PreemptQueuePrio: 150, PreemptPrio: "express_queue, normal_jobs", Source: "qmgr -c 'list sched'"}, sc)

	// Long values wrap onto lines indented by a tab.
	q, err = ParseQueue([]byte("Queue q\n    queue_type = Execution\n    acl_users = alice,bob,\n\tcarol\n    kill_delay = 5\n"))
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, q.KillDelay)
	assert.Equal(t, DefaultKillDelay, must(ParseQueue([]byte("Queue q\n    queue_type = Execution\n"))).KillDelay)

	for _, bad := range []string{"", "    priority = 1\n", "Queue q\n    priority = high\n", "Server s\n", "Queue q\n    what\n"} {
		_, err := ParseQueue([]byte(bad))
		var pe *ParseError
		assert.True(t, errors.As(err, &pe), "%q: %v", bad, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestParseSchedConfigAndPreemptOrder(t *testing.T) {
	sc, err := ParseSchedConfig([]byte(`# comment
round_robin: False	all
preemptive_sched: true	ALL
preempt_queue_prio:	150
preempt_prio: "express_queue, normal_jobs"
preempt_order: "SCR 80 SC 50 S"
`), "/var/spool/pbs/sched_priv/sched_config")
	require.NoError(t, err)
	assert.Equal(t, "SCR 80 SC 50 S", sc.PreemptOrder)
	assert.Equal(t, "express_queue, normal_jobs", sc.PreemptPrio)
	m, err := PreemptMethods(sc.PreemptOrder)
	require.NoError(t, err)
	assert.Equal(t, []string{"SCR", "SC", "S"}, m)
	m, err = PreemptMethods(`"R"`)
	require.NoError(t, err)
	assert.Equal(t, []string{"R"}, m)
	for _, bad := range []string{"", "X", "R 80", "R x S", "R 180 S"} {
		if bad == "R 80" {
			continue // a trailing percentage with nothing after: PBS ignores it
		}
		_, err := PreemptMethods(bad)
		assert.Error(t, err, bad)
	}
}

const rstatF = `Resv ID: R20.pbs
Reserve_Name = maint
Reserve_Owner = root@pbs
reserve_type = 2
reserve_state = RESV_CONFIRMED
reserve_substate = 2
reserve_start = Mon Nov 23 15:00:00 2026
reserve_end = Mon Nov 23 16:00:00 2026
reserve_duration = 3600
queue = R20
Resource_List.ncpus = 2
Resource_List.nodect = 2
Resource_List.select = 2:ncpus=1
Resource_List.place = free
Resource_List.walltime = 01:00:00
schedselect = 2:ncpus=1
resv_nodes = (pbs[0]:ncpus=1)+(pbs[1]:ncpus=1)
Authorized_Users = root@pbs
server = pbs
ctime = Mon Nov 23 13:00:00 2026

Resv ID: R21.pbs
Reserve_Name = NULL
reserve_state = RESV_UNCONFIRMED
reserve_start = Tue Nov 24 15:00:00 2026
reserve_end = Tue Nov 24 16:00:00 2026
`

func TestParseReservations(t *testing.T) {
	rs, err := ParseReservations([]byte(rstatF), time.UTC)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	assert.Equal(t, Reservation{ID: "R20.pbs", Name: "maint", State: "RESV_CONFIRMED", Start: at(15, 0), End: at(16, 0),
		Nodes: []string{"pbs[0]", "pbs[1]"}}, rs[0])
	assert.Empty(t, rs[1].Nodes)
	none, err := ParseReservations(nil, time.UTC)
	require.NoError(t, err)
	assert.Empty(t, none)
	_, err = ParseReservations([]byte("Resv ID: R1.s\nreserve_state = RESV_CONFIRMED\n"), time.UTC)
	assert.ErrorContains(t, err, "pbs_rstat -f: reservation R1.s: reserve_start: missing")
}

func TestParseJobID(t *testing.T) {
	for in, want := range map[string]string{"12.pbs\n": "12.pbs", "7[].server.example.org": "7[].server.example.org"} {
		got, err := ParseJobID([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "qsub: Unknown queue", "12", ".pbs", "1 2.pbs"} {
		_, err := ParseJobID([]byte(in))
		assert.Error(t, err, in)
	}
}
