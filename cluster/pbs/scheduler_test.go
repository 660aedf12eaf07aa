package pbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// fakePBS answers PBS commands from scripted outputs (or errors, by
// argv) and records every argv it was given.
type fakePBS struct {
	out    map[string]string // "qmgr -c list server" → output
	fail   map[string]error
	nextID int
	calls  [][]string
	env    [][]string // each call's
}

func newFakePBS() *fakePBS {
	return &fakePBS{out: map[string]string{
		"qmgr -c list server":                      qmgrServer,
		"qmgr -c list queue gleaner":               qmgrQueue,
		"qmgr -c list sched":                       qmgrSched,
		"pbsnodes -av -F json":                     pbsnodesJSON,
		"qstat -f -F json gleaner":                 qstatJSON,
		"qstat -f -F json":                         qstatJSON,
		"pbs_rstat -f":                             rstatF,
		"qselect -q gleaner -N gleaner-pilot.test": "12.pbs\n14.pbs\n",
	}, fail: map[string]error{}}
}

func (f *fakePBS) Run(_ context.Context, env []string, name string, args ...string) ([]byte, error) {
	argv := append([]string{name}, args...)
	f.env = append(f.env, env)
	f.calls = append(f.calls, argv)
	key := strings.Join(argv, " ")
	if err, ok := f.fail[key]; ok {
		return nil, err
	}
	switch name {
	case "qsub":
		f.nextID++
		return []byte(fmt.Sprintf("%d.pbs\n", 100+f.nextID)), nil
	case "qdel", "qsig":
		return nil, nil
	}
	if out, ok := f.out[key]; ok {
		return []byte(out), nil
	}
	return nil, &CommandError{Argv: argv, Err: errors.New("exit status 1"), Stderr: name + ": unexpected in the test"}
}

func (f *fakePBS) called(name string) [][]string {
	var cs [][]string
	for _, c := range f.calls {
		if c[0] == name {
			cs = append(cs, c)
		}
	}
	return cs
}

func testSettings(t *testing.T) Settings {
	return Settings{Pilots: pilot.Settings{Pool: "test"}, Queue: "gleaner", Gleaner: "/opt/gleaner/bin/gleaner",
		Dir: t.TempDir(), Location: time.UTC}
}

func TestNewSchedulerReadsTheSite(t *testing.T) {
	f := newFakePBS()
	var warnings []string
	s, err := NewScheduler(context.Background(), testSettings(t), f, func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) })
	require.NoError(t, err)
	assert.Equal(t, []string{"pbs: queue gleaner: priority 0, kill_delay 20s; 3 vnodes for pilots; preempt_order R (qmgr -c 'list sched'); scheduler_iteration 10s; PBS 23.06.06"}, warnings)
	assert.Equal(t, pilot.Limits{Nodes: 3, MaxTime: 6 * time.Hour, Grace: 20 * time.Second, Cycle: 10 * time.Second,
		MaxTimeSetting: "queue gleaner's resources_max.walltime", GraceSetting: "queue gleaner's kill_delay"}, s.Limits())
}

func TestNewSchedulerRefusesWhatWouldHoldNodes(t *testing.T) {
	for _, tc := range []struct {
		name, key, out, want string
		is                   error
	}{
		{"suspend", "qmgr -c list sched", strings.Replace(qmgrSched, "preempt_order = R", "preempt_order = SCR", 1),
			`preempt_order is "SCR" (qmgr -c 'list sched'): a preempted pilot would be suspended, its trainer frozen holding the node's memory and GPUs; set it without S: qmgr -c 'set sched preempt_order = R'`, ErrSuspends},
		{"express", "qmgr -c list queue gleaner", strings.Replace(qmgrQueue, "priority = 0", "priority = 150", 1),
			"queue gleaner: priority 150 ≥ preempt_queue_prio 150: an express queue", ErrNotPreemptible},
		{"stopped", "qmgr -c list queue gleaner", strings.Replace(qmgrQueue, "started = True", "started = False", 1),
			"queue gleaner: enabled true, started false: pilots would never run; qmgr -c 'set queue gleaner enabled = True, started = True'", nil},
		{"route", "qmgr -c list queue gleaner", strings.Replace(qmgrQueue, "Execution", "Route", 1),
			"queue gleaner: queue_type Route: want an execution queue", nil},
		{"no vnodes", "pbsnodes -av -F json", `{"nodes":{}}`, "no vnode a pilot in queue gleaner could run on", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakePBS()
			f.out[tc.key] = tc.out
			_, err := NewScheduler(context.Background(), testSettings(t), f, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
}

func TestNewSchedulerSaysWhatPBSSaid(t *testing.T) {
	f := newFakePBS()
	set := testSettings(t)
	set.Queue = "nosuch"
	_, err := NewScheduler(context.Background(), set, f, nil)
	assert.EqualError(t, err, "pbs: queue nosuch: qmgr -c list queue nosuch: exit status 1: qmgr: unexpected in the test")
	for _, set := range []Settings{{Queue: "q", Dir: "d"}, {Pilots: pilot.Settings{Pool: "p"}, Dir: "d"}, {Pilots: pilot.Settings{Pool: "p"}, Queue: "q"}} {
		_, err := NewScheduler(context.Background(), set, f, nil)
		assert.Error(t, err)
	}
}

// Older PBS keeps preempt_order in sched_config only; its default SCR
// suspends.
func TestNewSchedulerReadsSchedConfig(t *testing.T) {
	f := newFakePBS()
	f.out["qmgr -c list sched"] = "Sched default\n    sched_host = pbs\n"
	set := testSettings(t)
	set.SchedConfig = filepath.Join(t.TempDir(), "sched_config")
	require.NoError(t, os.WriteFile(set.SchedConfig, []byte("preempt_order: \"R\"\n"), 0o644))
	s, err := NewScheduler(context.Background(), set, f, nil)
	require.NoError(t, err)
	assert.Equal(t, set.SchedConfig, s.Sched().Source)

	require.NoError(t, os.WriteFile(set.SchedConfig, []byte("# nothing set\n"), 0o644))
	_, err = NewScheduler(context.Background(), set, f, nil)
	assert.ErrorIs(t, err, ErrSuspends)

	set.SchedConfig = filepath.Join(t.TempDir(), "unreadable")
	_, err = NewScheduler(context.Background(), set, f, nil)
	assert.ErrorContains(t, err, "the scheduler's preempt_order: no preempt_order; open "+set.SchedConfig)
}

func TestNewSchedulerWarns(t *testing.T) {
	f := newFakePBS()
	f.out["qmgr -c list queue gleaner"] = "Queue gleaner\n    queue_type = Execution\n    kill_delay = 0\n    enabled = True\n    started = True\n"
	f.out["qmgr -c list sched"] = strings.Replace(qmgrSched, "preempt_order = R", "preempt_order = C", 1)
	var warnings []string
	_, err := NewScheduler(context.Background(), testSettings(t), f, func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) })
	require.NoError(t, err)
	require.Len(t, warnings, 4)
	assert.Contains(t, warnings[0], `preempt_order "C" has neither R nor D`)
	assert.Contains(t, warnings[1], "queue gleaner has no soft limits (max_run_soft)")
	assert.Contains(t, warnings[2], "kill_delay 0")
}

func TestSubmitArgs(t *testing.T) {
	f := newFakePBS()
	set := testSettings(t)
	set.Select, set.Account, set.Bin = "1:ncpus=1:system=polaris", "hpo", "/opt/pbs/bin"
	set.QsubArgs = []string{"-l", "filesystems=home:eagle"}
	s, err := NewScheduler(context.Background(), set, f, nil)
	require.NoError(t, err)
	req := pilot.Request{Nodes: 1, Time: 2 * time.Hour, TimeMin: 10 * time.Minute, Lead: 30 * time.Second, GPUs: 4,
		Agent: []string{"--pool", "test", "--stop-timeout", "16s"}, Env: []string{"TEMPORAL_API_KEY=k", "GLEANER_CODEC_KEY=c"}}
	assert.Equal(t, []string{"-q", "gleaner", "-N", "gleaner-pilot.test", "-l", "select=1:ncpus=1:system=polaris:ngpus=4", "-l", "place=excl",
		"-l", "min_walltime=00:10:00", "-l", "max_walltime=02:00:00", "-A", "hpo", "-r", "y", "-j", "oe", "-o", set.Dir + "/",
		"-v", "GLEANER_PBS_BIN=/opt/pbs/bin,TEMPORAL_API_KEY,GLEANER_CODEC_KEY", "-l", "filesystems=home:eagle",
		"--", "/opt/gleaner/bin/gleaner", "pbs-pilot", "--pool", "test", "--stop-timeout", "16s"}, s.SubmitArgs(req))
	req.TimeMin, req.GPUs = req.Time, 0
	args := s.SubmitArgs(req)
	assert.Contains(t, strings.Join(args, " "), "-l select=1:ncpus=1:system=polaris -l place=excl -l walltime=02:00:00 -A")

	set.Select = "2:ncpus=1"
	_, err = NewScheduler(context.Background(), set, f, nil)
	assert.ErrorContains(t, err, "a pilot is one chunk")
}

func TestSchedulerCommands(t *testing.T) {
	f := newFakePBS()
	s, err := NewScheduler(context.Background(), testSettings(t), f, nil)
	require.NoError(t, err)
	ctx := context.Background()

	ps, err := s.Pilots(ctx)
	require.NoError(t, err)
	assert.Equal(t, []pilot.Job{{ID: "12.pbs", State: pilot.Running, Nodes: []string{"pbs[2]"}, End: at(13, 30)}, {ID: "14.pbs", State: pilot.Pending}}, ps)

	claims, err := s.Plan(ctx)
	require.NoError(t, err)
	assert.Equal(t, []pilot.Claim{
		{Kind: pilot.ClaimJob, Nodes: []string{"pbs[0]", "pbs[1]", "pbs[2]"}, Start: at(13, 20), By: "job 13.pbs (workq)"},
		{Kind: pilot.ClaimReservation, Nodes: []string{"pbs[0]", "pbs[1]"}, Start: at(15, 0), By: "reservation maint"},
	}, claims, "pilots claim nothing, nor unconfirmed reservations")
	// The running pilot on pbs[2] ends at 13:30; job 13 takes its vnode at 13:20.
	assert.Equal(t, pilot.Estimate{Until: at(13, 20), Why: "job 13.pbs (workq)", Claimed: true}, pilot.IdleUntil("pbs[2]", at(13, 10), at(13, 30), claims))

	require.NoError(t, s.Signal(ctx, syscall.SIGTERM, []string{"12.pbs"}))
	require.NoError(t, s.Cancel(ctx, []string{"14.pbs"}))
	require.NoError(t, s.CancelAll(ctx))
	assert.Equal(t, [][]string{{"qsig", "-s", "TERM", "12.pbs"}}, f.called("qsig"))
	assert.Equal(t, [][]string{{"qdel", "14.pbs"}, {"qdel", "12.pbs", "14.pbs"}}, f.called("qdel"))

	// Jobs that ended meanwhile are no error; PBS's own words are kept otherwise.
	f.fail["qdel 12.pbs 14.pbs"] = &CommandError{Argv: []string{"qdel"}, Err: errors.New("exit status 35"), Stderr: "qdel: Job has finished 12.pbs; qdel: Unknown Job Id 14.pbs"}
	require.NoError(t, s.CancelAll(ctx))
	f.fail["qdel 14.pbs"] = &CommandError{Argv: []string{"qdel", "14.pbs"}, Err: errors.New("exit status 1"), Stderr: "qdel: Unauthorized Request  14.pbs"}
	assert.EqualError(t, s.Cancel(ctx, []string{"14.pbs"}), "qdel 14.pbs: exit status 1: qdel: Unauthorized Request  14.pbs")

	f.out["qselect -q gleaner -N gleaner-pilot.test"] = ""
	n := len(f.called("qdel"))
	require.NoError(t, s.CancelAll(ctx))
	assert.Len(t, f.called("qdel"), n, "no qdel without pilots")

	id, err := s.Submit(ctx, pilot.Request{Nodes: 1, Time: time.Hour, TimeMin: time.Minute, Env: []string{"TEMPORAL_API_KEY=k"}})
	require.NoError(t, err)
	assert.Equal(t, "101.pbs", id)
	assert.Equal(t, []string{"TEMPORAL_API_KEY=k"}, f.env[len(f.env)-1], "the key in qsub's environment, its name alone on the command line")
	assert.NotContains(t, strings.Join(f.calls[len(f.calls)-1], " "), "=k")
}

func TestPilotNode(t *testing.T) {
	f := newFakePBS()
	f.out["qstat -f -F json 12.pbs"] = qstatJSON
	_, err := PilotNode(context.Background(), f, "12.pbs")
	require.NoError(t, err)
	node, _ := PilotNode(context.Background(), f, "12.pbs")
	assert.Equal(t, "pbs[2]", node)
	_, err = PilotNode(context.Background(), f, "14.pbs")
	assert.Error(t, err, "a job not yet running has no vnode")
}

// recordingPool wants what demand says and keeps the estimates it was
// sent last.
type recordingPool struct {
	demand pilot.Demand
	last   map[string]time.Time
	sends  int
}

func (p *recordingPool) Demand(context.Context) (pilot.Demand, error) { return p.demand, nil }
func (p *recordingPool) SetIdleUntil(_ context.Context, until map[string]time.Time) error {
	p.last, p.sends = until, p.sends+1
	return nil
}

// The policy over PBS: one more pilot (three vnodes, two pilots); the
// running pilot yields pbs[2] to job 13, planned within Yield.
func TestPilotsStepOverPBS(t *testing.T) {
	f := newFakePBS()
	set := testSettings(t)
	set.Pilots.Now = func() time.Time { return at(13, 19) }
	set.Pilots.Yield = 2 * time.Minute
	pool := &recordingPool{demand: pilot.Demand{Trials: 2, Wanted: 3}}
	p, err := NewPilots(context.Background(), set, f, pool, nil)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, p.Settings().Lead, "kill_delay 20 s, at least 30 s")
	assert.Equal(t, 3, p.Settings().MaxPilots, "the eligible vnodes")
	st, err := p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"101.pbs"}, st.Submitted)
	assert.Equal(t, []string{"12.pbs"}, st.Yielded)
	assert.Equal(t, [][]string{{"qsig", "-s", "TERM", "12.pbs"}}, f.called("qsig"))
	assert.Equal(t, map[string]time.Time{"pbs[2]": at(13, 20)}, pool.last)
	assert.Equal(t, 1, pool.sends)
}
