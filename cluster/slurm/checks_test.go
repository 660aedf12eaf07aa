package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

const (
	confPartitionPrio = "KillWait = 5 sec\nSchedulerParameters = bf_interval=2\nPreemptType = preempt/partition_prio\nPreemptMode = CANCEL\nSlurmctldParameters = preempt_send_user_signal\nSLURM_VERSION = 22.05.8\n"
	confQOS           = "KillWait = 5 sec\nPreemptType = preempt/qos\nPreemptMode = REQUEUE\nPreemptParameters = send_user_signal\nSLURM_VERSION = 23.11.4\n"
	confNoSignal      = "KillWait = 5 sec\nPreemptType = preempt/partition_prio\nSlurmctldParameters = (null)\nSLURM_VERSION = 22.05.8\n"
	partCancel        = "PartitionName=glean Nodes=g[1-2] PreemptMode=CANCEL State=UP GraceTime=20\n"
	partOff           = "PartitionName=glean Nodes=g[1-2] PreemptMode=OFF State=UP GraceTime=20\n"
	qosList           = "normal|scavenger|cluster\nscavenger||cluster\nfrozen||suspend\nlonely||cancel\nstuck||off\n"
)

// The start checks, each on scripted Slurm output: what is refused (the
// setting named) and what is warned of.
func TestStartChecks(t *testing.T) {
	notFound := &CommandError{Argv: []string{"scontrol", "show", "partition", "glean", "-o"}, Stdout: "Partition glean not found", Err: errors.New("exit status 1")}
	noDB := &CommandError{Argv: []string{"sacctmgr"}, Stderr: "sacctmgr: error: Problem talking to the database: Connection refused", Err: errors.New("exit status 1")}
	for _, tc := range []struct {
		name             string
		f                fakeSlurm
		qos, gres        string
		gpus             int
		refused, warned  string
		notPreemptible   bool
		sacctmgrConsults bool
	}{
		{name: "a preemptible partition", f: fakeSlurm{config: confPartitionPrio, partition: partCancel}},
		{name: "no preemption at all", f: fakeSlurm{config: "PreemptType = preempt/none\nSLURM_VERSION = 22.05.8\n", partition: partOff},
			refused: "slurm: PreemptType=preempt/none: no job preempts another", notPreemptible: true},
		{name: "a partition with PreemptMode=OFF", f: fakeSlurm{config: confPartitionPrio, partition: partOff},
			refused: "slurm: partition glean: PreemptMode=OFF, PreemptType=preempt/partition_prio", notPreemptible: true},
		{name: "a QOS under partition_prio: the partition decides", qos: "lonely", f: fakeSlurm{config: confPartitionPrio, partition: partOff},
			refused: "partition glean: PreemptMode=OFF", notPreemptible: true},
		{name: "a QOS another preempts", qos: "scavenger", f: fakeSlurm{config: confQOS, partition: partOff, qos: qosList}, sacctmgrConsults: true},
		{name: "a QOS no other preempts", qos: "lonely", f: fakeSlurm{config: confQOS, partition: partCancel, qos: qosList},
			refused: "slurm: qos lonely: no QOS lists it in its Preempt", notPreemptible: true, sacctmgrConsults: true},
		{name: "a QOS with PreemptMode off", qos: "stuck", f: fakeSlurm{config: confQOS, partition: partCancel, qos: qosList + "normal2|stuck|cluster\n"},
			refused: "slurm: qos stuck: PreemptMode=off", notPreemptible: true, sacctmgrConsults: true},
		{name: "a QOS that suspends", qos: "frozen", f: fakeSlurm{config: confQOS, partition: partCancel, qos: qosList + "high|frozen|cluster\n"},
			warned: "slurm: warning: qos frozen: PreemptMode=suspend: a suspended pilot's agent and trainers stay on the node", sacctmgrConsults: true},
		{name: "a QOS that does not exist", qos: "nope", f: fakeSlurm{config: confQOS, partition: partCancel, qos: qosList},
			refused: "slurm: qos nope: no such QOS (sacctmgr show qos lists 5)", sacctmgrConsults: true},
		{name: "sacctmgr's own words", qos: "scavenger", f: fakeSlurm{config: confQOS, partition: partCancel, fail: map[string]*CommandError{"sacctmgr": noDB}},
			refused: "slurm: qos scavenger: reading the QOS list (PreemptType=preempt/qos makes the QOS decide preemption): sacctmgr: exit status 1: sacctmgr: error: Problem talking to the database", sacctmgrConsults: true},
		{name: "a partition that does not exist: scontrol's words", f: fakeSlurm{config: confPartitionPrio, fail: map[string]*CommandError{"scontrol": nil}},
			refused: "slurm: partition glean: scontrol show partition glean -o: exit status 1: Partition glean not found (sinfo -s lists the partitions)"},
		{name: "no user signal at preemption", f: fakeSlurm{config: confNoSignal, partition: partCancel},
			warned: "slurm: warning: neither PreemptParameters=send_user_signal nor SlurmctldParameters=preempt_send_user_signal is set"},
		{name: "gres beside gpus", gpus: 2, gres: "nvme:1", f: fakeSlurm{config: confPartitionPrio, partition: partCancel}},
		{name: "gres that asks for GPUs beside gpus", gpus: 2, gres: "gpu:a100:2", f: fakeSlurm{config: confPartitionPrio, partition: partCancel},
			refused: `slurm: gres "gpu:a100:2" asks for GPUs and so does gpus=2`},
		{name: "gres not Slurm's syntax", gres: "gpu=2", f: fakeSlurm{config: confPartitionPrio, partition: partCancel},
			refused: `slurm: gres "gpu=2": item "gpu=2": want name[:type][:count]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			if _, ok := f.fail["scontrol"]; ok {
				// Only the partition fails: the configuration is read first.
				f.fail = nil
				f.partition = ""
				f.failPartition = notFound
			}
			var logs []string
			set := Settings{Pilots: pilot.Settings{Pool: "p", GPUs: tc.gpus}, Partition: "glean", QOS: tc.qos, Gres: tc.gres,
				Dir: t.TempDir(), Gleaner: "/usr/bin/gleaner", Location: time.UTC}
			_, err := NewScheduler(context.Background(), set, &f, func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) })
			if tc.refused == "" {
				require.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.refused)
			}
			assert.Equal(t, tc.notPreemptible, errors.Is(err, ErrNotPreemptible), "ErrNotPreemptible: %v", err)
			if tc.warned != "" {
				assert.Contains(t, strings.Join(logs, "\n"), tc.warned)
			} else {
				assert.Empty(t, logs)
			}
			assert.Equal(t, tc.sacctmgrConsults, f.count("sacctmgr") > 0, "sacctmgr consulted")
		})
	}
}

func TestNodesHereOnlyWhenEveryNodeIsALoopbackAddress(t *testing.T) {
	for _, tc := range []struct {
		nodes string
		here  bool
	}{
		{"g1|127.0.0.1\ng2|127.0.0.1\n", true},
		{"g1|localhost\n", true},
		{"g1|127.0.0.1\ng2|10.0.0.2\n", false},
		{"n001|n001\n", false},
		{"", false},
	} {
		f := &fakeSlurm{config: confPartitionPrio, partition: partCancel, nodes: tc.nodes}
		s, err := NewScheduler(context.Background(), Settings{Pilots: pilot.Settings{Pool: "p"}, Partition: "glean", Dir: t.TempDir(), Gleaner: "/usr/bin/gleaner"}, f, nil)
		require.NoError(t, err)
		assert.Equal(t, tc.here, s.Limits().NodesHere, "%q", tc.nodes)
		assert.Equal(t, []string{"sinfo", "-h", "-N", "-p", "glean", "-o", NodeAddrFormat}, f.last("sinfo"))
	}
	_, err := ParseNodeAddrs([]byte("g1|127.0.0.1|x\n"))
	assert.ErrorContains(t, err, "sinfo -N -o %N|%o")
}

func TestParseQOS(t *testing.T) {
	qs, err := ParseQOS([]byte(qosList))
	require.NoError(t, err)
	assert.Equal(t, QOS{Name: "normal", Preempt: []string{"scavenger"}, PreemptMode: "cluster"}, qs[0])
	assert.Empty(t, qs[1].Preempt)
	qs, err = ParseQOS([]byte("high|low,scavenger|cluster\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"low", "scavenger"}, qs[0].Preempt)
	_, err = ParseQOS([]byte("|x|cluster\n"))
	assert.ErrorContains(t, err, "Name")
}

func TestPreemptParametersSendUserSignal(t *testing.T) {
	for conf, want := range map[string]bool{
		confPartitionPrio: true,
		confQOS:           true,
		confNoSignal:      false,
		"PreemptParameters = strict_order,youngest_first\nSLURM_VERSION = 23.11.4\n": false,
	} {
		c, err := ParseConfig([]byte(conf))
		require.NoError(t, err)
		assert.Equal(t, want, c.SendsUserSignal(), conf)
	}
}

// A pilot's gres: gpus as gpu:N beside the gres setting, in one --gres.
func TestSubmitArgsGres(t *testing.T) {
	for _, tc := range []struct {
		gpus int
		gres string
		want string
	}{
		{0, "", ""},
		{4, "", "--gres=gpu:4"},
		{0, "gpu:a100:4", "--gres=gpu:a100:4"},
		{2, "nvme:1,shard:2", "--gres=gpu:2,nvme:1,shard:2"},
	} {
		s := &Scheduler{set: Settings{Gres: tc.gres, Partition: "glean", Pilots: pilot.Settings{Pool: "p"}}}
		args := strings.Join(s.SubmitArgs(pilot.Request{Nodes: 1, GPUs: tc.gpus}), " ")
		if tc.want == "" {
			assert.NotContains(t, args, "--gres")
		} else {
			assert.Contains(t, args, " "+tc.want+" ")
		}
	}
}

// The agent's secrets go in sbatch's environment, never its argv.
func TestSubmitPassesTheAgentsEnvironmentOffTheArgv(t *testing.T) {
	f := &fakeSlurm{config: confPartitionPrio, partition: partCancel}
	s, err := NewScheduler(context.Background(), Settings{Pilots: pilot.Settings{Pool: "p"}, Partition: "glean", Dir: t.TempDir(), Gleaner: "/usr/bin/gleaner"}, f, nil)
	require.NoError(t, err)
	_, err = s.Submit(context.Background(), pilot.Request{Nodes: 1, Time: time.Hour, TimeMin: time.Minute, Env: []string{"TEMPORAL_API_KEY=s3cret"}})
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"TEMPORAL_API_KEY=s3cret"}}, f.env)
	assert.NotContains(t, strings.Join(f.last("sbatch"), " "), "s3cret")

	// A runner that cannot pass it says so rather than lose it.
	s.run = runOnly{f}
	_, err = s.Submit(context.Background(), pilot.Request{Nodes: 1, Env: []string{"TEMPORAL_API_KEY=s3cret"}})
	assert.ErrorContains(t, err, "cannot pass the agent's environment")

	// ExecRunner does pass it.
	out, err := ExecRunner{}.RunEnv(context.Background(), []string{"GLEANER_TEST_SECRET=s3cret"}, "sh", "-c", "echo $GLEANER_TEST_SECRET")
	require.NoError(t, err)
	assert.Equal(t, "s3cret\n", string(out))
}

type runOnly struct{ r Runner }

func (r runOnly) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return r.r.Run(ctx, name, args...)
}
