package slurm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// fakeSlurm answers Slurm commands from scripted outputs and records every
// argv it was given.
type fakeSlurm struct {
	config, partition, pilots, plan, resv string
	// nodes is sinfo's NodeAddrFormat, qos sacctmgr's QOSFormat.
	nodes, qos string
	// fail, when set, fails the command named: its error as ExecRunner's;
	// failPartition fails `scontrol show partition` alone.
	fail          map[string]*CommandError
	failPartition *CommandError
	nextID        int
	calls         [][]string
	// env is what each RunEnv call added, in order.
	env [][]string
}

func (f *fakeSlurm) RunEnv(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	f.env = append(f.env, env)
	return f.Run(ctx, name, args...)
}

func (f *fakeSlurm) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, append([]string{name}, args...))
	if e := f.fail[name]; e != nil {
		return nil, e
	}
	switch {
	case name == "sinfo":
		return []byte(f.nodes), nil
	case name == "sacctmgr":
		return []byte(f.qos), nil
	case name == "scontrol" && args[1] == "config":
		return []byte(f.config), nil
	case name == "scontrol" && args[1] == "partition":
		if f.failPartition != nil {
			return nil, f.failPartition
		}
		return []byte(f.partition), nil
	case name == "scontrol" && args[1] == "reservation":
		return []byte(f.resv), nil
	case name == "squeue" && strings.Contains(strings.Join(args, " "), "--start"):
		return []byte(f.plan), nil
	case name == "squeue":
		return []byte(f.pilots), nil
	case name == "sbatch":
		f.nextID++
		return []byte(fmt.Sprintf("%d\n", f.nextID)), nil
	case name == "scancel":
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected %s", name)
}

func (f *fakeSlurm) count(name string) int {
	n := 0
	for _, c := range f.calls {
		if c[0] == name {
			n++
		}
	}
	return n
}

func (f *fakeSlurm) last(name string) []string {
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i][0] == name {
			return f.calls[i]
		}
	}
	return nil
}

type fakePool struct {
	demand pilot.Demand
	sent   []map[string]time.Time
}

func (p *fakePool) Demand(context.Context) (pilot.Demand, error) { return p.demand, nil }
func (p *fakePool) SetIdleUntil(_ context.Context, m map[string]time.Time) error {
	p.sent = append(p.sent, m)
	return nil
}

const (
	testConfig    = "KillWait = 5 sec\nSchedulerParameters = bf_interval=2\nPreemptType = preempt/partition_prio\nSLURM_VERSION = 22.05.8\n"
	testPartition = "PartitionName=glean Nodes=g[1-6] PriorityTier=1 MaxTime=UNLIMITED PreemptMode=CANCEL State=UP GraceTime=20\n"
)

// newTestPilots are pool p's pilots in partition glean; now, if not nil,
// is their clock.
func newTestPilots(t *testing.T, f *fakeSlurm, pool *fakePool, set pilot.Settings, now *time.Time, logf func(string, ...any)) *pilot.Pilots {
	t.Helper()
	set.Pool = "p"
	if now != nil {
		set.Now = func() time.Time { return *now }
	}
	sl := Settings{Pilots: set, Partition: "glean", Dir: t.TempDir(), Gleaner: "/usr/bin/gleaner", Location: time.UTC}
	p, err := NewPilots(context.Background(), sl, f, pool, logf)
	require.NoError(t, err)
	return p
}

func TestPilotsSubmitUpToMaxPendingWhileTrialsWantNodes(t *testing.T) {
	f := &fakeSlurm{config: testConfig, partition: testPartition,
		pilots: "5|PENDING||N/A|N/A|gleaner:pool=p|glean\n"}
	pool := &fakePool{demand: pilot.Demand{Trials: 3, Wanted: 10}}
	p := newTestPilots(t, f, pool, pilot.Settings{MaxPending: 3, AgentArgs: []string{"--data-dir", "/shared/gl"}}, nil, nil)
	st, err := p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "2"}, st.Submitted, "one waits already: two more make three")
	args := strings.Join(f.last("sbatch"), " ")
	for _, want := range []string{"--parsable", "--job-name=gleaner-pilot.p", "--comment=gleaner:pool=p", "--partition=glean",
		"--nodes=1", "--time=0-02:00:00", "--time-min=0-00:10:00", "--signal=B:TERM@30",
		"--pool p --stop-timeout 16s --data-dir /shared/gl"} {
		assert.Contains(t, args, want)
	}
	assert.Empty(t, st.Cancelled)

	// The trials now want only one node: the extra waiting pilots go,
	// the newest first.
	f.pilots = "5|PENDING||N/A|N/A|c|glean\n6|PENDING||N/A|N/A|c|glean\n7|PENDING||N/A|N/A|c|glean\n"
	pool.demand = pilot.Demand{Trials: 1, Wanted: 1}
	st, err = p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"7", "6"}, st.Cancelled)
	assert.Empty(t, st.Submitted)
}

func TestPilotsNoneWithoutTrialsAndRunningOnesReleasedAfterIdleRelease(t *testing.T) {
	f := &fakeSlurm{config: testConfig, partition: testPartition, resv: "No reservations in the system\n",
		pilots: "5|PENDING||N/A|N/A|c|glean\n6|RUNNING|g2|2026-11-23T12:00:00|2026-11-23T14:00:00|c|glean\n"}
	pool := &fakePool{demand: pilot.Demand{Trials: 1, Wanted: 4}}
	now := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	p := newTestPilots(t, f, pool, pilot.Settings{MaxPending: 1, IdleRelease: time.Minute}, &now, nil)
	_, err := p.Step(context.Background())
	require.NoError(t, err)
	assert.Zero(t, f.count("sbatch"), "one pilot waits: max_pending reached")

	pool.demand = pilot.Demand{}
	st, err := p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"5"}, st.Cancelled, "the waiting pilot goes at once, the running one stays a while")
	now = now.Add(time.Minute)
	st, err = p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"5", "6"}, st.Cancelled)
	assert.Zero(t, f.count("sbatch"))
}

func TestPilotsSendEstimatesOnlyWhenTheyChange(t *testing.T) {
	f := &fakeSlurm{config: testConfig, partition: testPartition, resv: "No reservations in the system\n",
		pilots: "6|RUNNING|g2|2026-11-23T12:00:00|2026-11-23T14:00:00|c|glean\n",
		plan:   "40|batch|100|2026-11-23T13:00:00|g2|1|big\n"}
	pool := &fakePool{demand: pilot.Demand{Trials: 1}}
	now := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	p := newTestPilots(t, f, pool, pilot.Settings{}, &now, nil)
	st, err := p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "job 40 (batch)", st.Estimates["g2"].Why)
	require.Len(t, pool.sent, 1)
	assert.Equal(t, time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC), pool.sent[0]["g2"])
	_, err = p.Step(context.Background())
	require.NoError(t, err)
	assert.Len(t, pool.sent, 1, "unchanged estimates are not sent again")
	f.plan = ""
	_, err = p.Step(context.Background())
	require.NoError(t, err)
	require.Len(t, pool.sent, 2)
	assert.Equal(t, time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC), pool.sent[1]["g2"], "the pilot's own end")
}

func TestPilotsWarnWhenAGracePeriodCannotFit(t *testing.T) {
	f := &fakeSlurm{config: testConfig, partition: testPartition}
	var logs []string
	p := newTestPilots(t, f, &fakePool{demand: pilot.Demand{Trials: 1, MaxGrace: time.Minute}}, pilot.Settings{}, nil, func(format string, args ...any) {
		logs = append(logs, fmt.Sprintf(format, args...))
	})
	_, err := p.Step(context.Background())
	require.NoError(t, err)
	assert.Contains(t, strings.Join(logs, "\n"), "grace_period 1m0s does not fit partition glean's GraceTime 20s")
}

func TestPilotsShutdownCancelsByName(t *testing.T) {
	f := &fakeSlurm{config: testConfig, partition: testPartition}
	p := newTestPilots(t, f, &fakePool{}, pilot.Settings{}, nil, nil)
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, []string{"scancel", "--name=gleaner-pilot.p", "--partition=glean"}, f.last("scancel"))
}

func TestPilotsYieldNodesThePlanGivesABatchJobNow(t *testing.T) {
	f := &fakeSlurm{config: testConfig, partition: testPartition, resv: "No reservations in the system\n",
		pilots: "6|RUNNING|g2|2026-11-23T12:00:00|2026-11-23T14:00:00|c|glean\n" +
			"7|RUNNING|g3|2026-11-23T12:00:00|2026-11-23T14:00:00|c|glean\n" +
			"8|RUNNING|g4|2026-11-23T12:00:00|2026-11-23T12:30:01|c|glean\n",
		plan: "40|batch|100|2026-11-23T12:29:59|g2|1|next\n" + // overdue: Slurm gives it g2 next
			"41|batch|99|2026-11-23T13:00:00|g3|1|later\n" + // a hole until 13:00: keep it
			"42|glean|1|2026-11-23T12:30:00|g3|1|gleaner-pilot.p\n"} // a pilot claims nothing
	pool := &fakePool{demand: pilot.Demand{Trials: 3}}
	now := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	p := newTestPilots(t, f, pool, pilot.Settings{MaxPending: 1}, &now, nil)
	st, err := p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"6"}, st.Yielded, "g4's pilot ends by its own limit: not a claim")
	assert.Equal(t, []string{"scancel", "--batch", "--signal=TERM", "6"}, f.last("scancel"),
		"the agent alone hears it, as at a preemption")

	// Told once: the next round leaves pilot 6 to leave (or to Slurm).
	st, err = p.Step(context.Background())
	require.NoError(t, err)
	assert.Empty(t, st.Yielded)
	assert.Equal(t, 1, f.count("scancel"))

	// Within bf_interval (2 s) of a planned start counts as now.
	f.plan = "41|batch|99|2026-11-23T12:30:02|g3|1|later\n"
	st, err = p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"7"}, st.Yielded)
}

func TestPilotsNeverYieldWithANegativeYield(t *testing.T) {
	f := &fakeSlurm{config: testConfig, partition: testPartition, resv: "No reservations in the system\n",
		pilots: "6|RUNNING|g2|2026-11-23T12:00:00|2026-11-23T14:00:00|c|glean\n",
		plan:   "40|batch|100|2026-11-23T12:29:59|g2|1|next\n"}
	now := time.Date(2026, 11, 23, 12, 30, 0, 0, time.UTC)
	p := newTestPilots(t, f, &fakePool{demand: pilot.Demand{Trials: 1}}, pilot.Settings{MaxPending: 1, Yield: -1}, &now, nil)
	st, err := p.Step(context.Background())
	require.NoError(t, err)
	assert.Empty(t, st.Yielded)
	assert.Zero(t, f.count("scancel"))
}

func TestPilotsSbatchArgvInFull(t *testing.T) {
	f := &fakeSlurm{config: testConfig, partition: testPartition}
	dir := t.TempDir()
	sl := Settings{Pilots: pilot.Settings{Pool: "p", AgentArgs: []string{"--data-dir", "/shared/gl"}}, Partition: "glean", QOS: "scavenger", Account: "ml",
		Dir: dir, Gleaner: "/usr/bin/gleaner", Location: time.UTC}
	p, err := NewPilots(context.Background(), sl, f, &fakePool{demand: pilot.Demand{Trials: 1, Wanted: 1}}, nil)
	require.NoError(t, err)
	_, err = p.Step(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"sbatch", "--parsable", "--job-name=gleaner-pilot.p", "--comment=gleaner:pool=p", "--partition=glean",
		"--nodes=1", "--ntasks=1", "--exclusive", "--time=0-02:00:00", "--time-min=0-00:10:00", "--signal=B:TERM@30",
		"--output=" + dir + "/pilot-%j.log", "--chdir=" + dir, "--qos=scavenger", "--account=ml",
		dir + "/pilot-p", "--pool", "p", "--stop-timeout", "16s", "--data-dir", "/shared/gl"}, f.last("sbatch"))

	// GPUs asked for are Slurm's gres.
	s, err := NewScheduler(context.Background(), sl, f, nil)
	require.NoError(t, err)
	assert.Contains(t, s.SubmitArgs(pilot.Request{Nodes: 1, GPUs: 4}), "--gres=gpu:4")
	assert.NotContains(t, strings.Join(s.SubmitArgs(pilot.Request{Nodes: 1}), " "), "--gres")
}
