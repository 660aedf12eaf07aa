package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/cluster/slurm"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// EnvRequireSlurm, set to 1 (as in CI), makes the Slurm tests fail rather
// than skip where the daemons cannot run (not installed, not root).
const EnvRequireSlurm = "GLEANER_REQUIRE_SLURM"

// slurmCluster is a real Slurm cluster of daemons on this machine
// (deploy/slurm-cluster.sh), torn down when the test ends.
type slurmCluster struct {
	dir string
	env []string // SLURM_CONF=...
	run slurm.ExecRunner
}

func startSlurm(t *testing.T, nodes int, grace time.Duration) *slurmCluster {
	t.Helper()
	_, err := exec.LookPath("/usr/sbin/slurmctld")
	if err != nil || os.Geteuid() != 0 {
		if os.Getenv(EnvRequireSlurm) == "1" {
			t.Fatalf("Slurm daemons cannot run here (slurmctld: %v; uid %d); install slurm-wlm and munge, run as root", err, os.Geteuid())
		}
		t.Skip("needs slurm-wlm and munge, as root (set " + EnvRequireSlurm + "=1 to fail instead)")
	}
	// Short: munge's socket path must fit a sockaddr.
	dir, err := os.MkdirTemp("", "gsl")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(dir) // the script creates it
	script, err := filepath.Abs("../../deploy/slurm-cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, "start", dir)
	cmd.Env = append(os.Environ(), fmt.Sprintf("GLEANER_SLURM_NODES=%d", nodes), fmt.Sprintf("GLEANER_SLURM_GRACE=%d", int(grace.Seconds())))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("starting the Slurm cluster: %v\n%s", err, stderr.String())
	}
	c := &slurmCluster{dir: dir}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if kv, ok := strings.CutPrefix(line, "export "); ok {
			c.env = append(c.env, kv)
		}
	}
	c.run = slurm.ExecRunner{Env: c.env}
	t.Cleanup(func() {
		out, err := exec.Command("bash", script, "stop", dir).CombinedOutput()
		if err != nil {
			t.Errorf("stopping the Slurm cluster: %v\n%s", err, out)
		}
	})
	return c
}

func (c *slurmCluster) cmd(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := c.run.Run(context.Background(), name, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return string(out)
}

// jobs lists jobs of every state (finished ones while MinJobAge keeps
// them) by name prefix.
func (c *slurmCluster) jobs(t *testing.T) []slurm.Job {
	t.Helper()
	jobs, err := slurm.ParseJobs([]byte(c.cmd(t, "squeue", "-h", "-a", "-t", "all", "-o", slurm.PilotFormat)), time.Local)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// The scenario on real daemons: pilots start in the idle nodes
// and their agents join with the Slurm node names; a batch job wanting
// every node preempts them; the trainers checkpoint within GraceTime, the
// batch job starts without waiting beyond it; when it ends, pilots come
// back and every trial completes, none lost, none trained twice; when the
// worker stops no pilot is left.
func TestSlurmPilotsHarvestAndYieldToBatchJobs(t *testing.T) {
	const nodes, grace = 4, 10 * time.Second
	sc := startSlurm(t, nodes, grace)
	srv := startServer(t, devserver.Options{})
	const tq, pool = "slurm", "slurm"
	data := filepath.Join(t.TempDir(), "shared")
	w := startWorkerProcess(t, srv, WorkerProcessOptions{
		TaskQueue: tq, DataDir: data, Env: sc.env,
		Nodes: "slurm:partition=glean,pool=" + pool + ",max_pending=4,time=30m,time_min=5m,interval=1s,yield=5s,gpus=none",
	})

	const trials, steps = 4, 400 // about 40 s of training each at 100 ms a step
	spec := testenv.MLPSpec(t, pool, trials, trials, steps, 100)
	spec.Resources = gleaner.Resources{MinNodes: 1, MaxNodes: 1}
	spec.Trial.GracePeriod = gleaner.Duration(4 * time.Second)
	run := startCampaign(t, srv.Client(), tq, spec)

	// Pilots start in the holes and their agents join with Slurm's names;
	// the source's estimates (the pilots' ends at least) follow within an
	// interval: they come in a signal of their own.
	var st workflows.PoolStatus
	waitFor(t, 2*time.Minute, "four pilots' agents in the pool with idle-time estimates, every trial running", func() (bool, error) {
		var err error
		if st, err = poolStatus(t, srv.Client(), pool); err != nil {
			return false, err
		}
		busy := 0
		for _, tr := range st.Trials {
			if len(tr.Nodes) == 1 && strings.HasPrefix(tr.Nodes[0], "g") {
				busy++
			}
		}
		estimated := 0
		for _, n := range st.Nodes {
			if !n.IdleUntil.IsZero() {
				estimated++
			}
		}
		return len(st.Agents) == nodes && busy == trials && estimated == len(st.Nodes), nil
	})
	for _, n := range st.Nodes {
		if !strings.HasPrefix(n.ID, "g") || strings.Contains(n.ID, "/") {
			t.Errorf("node %q: want a Slurm node name", n.ID)
		}
	}
	waitForCheckpoints(t, srv.Client(), run.GetID(), trials)

	// A batch job wanting every node preempts every pilot.
	pilots := map[string]bool{}
	for _, j := range sc.jobs(t) {
		if j.Partition == "glean" && j.State == "RUNNING" {
			pilots[j.ID] = true
		}
	}
	if len(pilots) != nodes {
		t.Fatalf("%d pilots running before the batch job, want %d", len(pilots), nodes)
	}
	batch := filepath.Join(t.TempDir(), "batch.sh")
	if err := os.WriteFile(batch, []byte("#!/bin/sh\nexec sleep \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	submitted := time.Now()
	id, err := slurm.ParseJobID([]byte(sc.cmd(t, "sbatch", "--parsable", "--partition=batch", fmt.Sprintf("--nodes=%d", nodes),
		"--time=1", "--job-name=batch-all", "--output=/dev/null", batch, "8")))
	if err != nil {
		t.Fatal(err)
	}
	var started time.Time
	waitFor(t, grace+time.Minute, "the batch job to start", func() (bool, error) {
		for _, j := range sc.jobs(t) {
			if j.ID == id && (j.State == "RUNNING" || j.State == "COMPLETING" || j.State == "COMPLETED") {
				started = time.Now()
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("batch job %s started %v after its submission (GraceTime %v)", id, started.Sub(submitted).Round(100*time.Millisecond), grace)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(data, "slurm", "pilot-*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", filepath.Base(l), b)
		}
	})
	// Each pilot's agent heard the SIGTERM (preempt_send_user_signal,
	// --signal=B:TERM), left and ended its job before the grace ran out:
	// its job completed rather than being killed.
	for _, j := range sc.jobs(t) {
		if pilots[j.ID] && (j.State == "RUNNING" || j.State == "PENDING") {
			t.Errorf("pilot %s is %s while the batch job runs", j.ID, j.State)
		}
	}

	// Churn: the nodes come back to the pool once the batch job ends: the
	// waiting pilots start at the next scheduling pass, their agents join.
	var ended time.Time
	waitFor(t, time.Minute, "the batch job to end", func() (bool, error) {
		for _, j := range sc.jobs(t) {
			if j.ID == id && (j.State == "RUNNING" || j.State == "COMPLETING") {
				return false, nil
			}
		}
		ended = time.Now()
		return true, nil
	})
	waitFor(t, 2*time.Minute, "the pilots' agents back in the pool", func() (bool, error) {
		st, err := poolStatus(t, srv.Client(), pool)
		return err == nil && len(st.Agents) == nodes, err
	})
	t.Logf("nodes back in the pool %v after the batch job ended (bf_interval 2 s)", time.Since(ended).Round(100*time.Millisecond))

	// A reservation about to start on g1 claims the node. Slurm would let
	// the pilot there run on into it; the pilot yields ahead of it (yield
	// 5 s) and its trial resumes on the other nodes.
	var g1Pilot string
	for _, j := range sc.jobs(t) {
		if j.Partition == "glean" && j.State == "RUNNING" && slices.Contains(j.Nodes, "g1") {
			g1Pilot = j.ID
		}
	}
	if g1Pilot == "" {
		t.Fatal("no pilot running on g1")
	}
	resvStart := time.Now().Add(15 * time.Second).Truncate(time.Second)
	sc.cmd(t, "scontrol", "create", "reservation", "ReservationName=maint", "StartTime="+resvStart.Format("2006-01-02T15:04:05"),
		"Duration=2", "Nodes=g1", "Users=root", "Flags=IGNORE_JOBS")
	waitFor(t, time.Minute, "the pilot on g1 to yield", func() (bool, error) {
		for _, j := range sc.jobs(t) {
			if j.ID == g1Pilot && (j.State == "RUNNING" || j.State == "COMPLETING") {
				return false, nil
			}
		}
		return true, nil
	})
	if left := time.Now(); left.After(resvStart) {
		t.Errorf("pilot %s left g1 %v after the reservation started", g1Pilot, left.Sub(resvStart))
	}
	if b, err := os.ReadFile(w.logPath); err != nil || !strings.Contains(string(b), "pilot "+g1Pilot+" yields node g1 to reservation maint") {
		t.Errorf("the worker's log does not say pilot %s yielded g1 (%v):\n%s", g1Pilot, err, b)
	}

	res := campaignResult(t, run, 5*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials {
		t.Fatalf("campaign %s %+v, want %d completed", res.State, res.CampaignCounts, trials)
	}
	reports := trialReports(t, srv.Client(), spec.Name, trials)
	checkAllTrainedOnce(t, reports, steps)
	checkNoRestarts(t, reports, "after their pilots were preempted")
	// Each trial ran at least twice: before the preemption and after, the
	// second run resuming from the first's checkpoint (trained once, as
	// the sample counts above say).
	trialDirs, _ := filepath.Glob(filepath.Join(data, spec.Name, "*"))
	resumed := 0
	for _, dir := range trialDirs {
		if runs, _ := filepath.Glob(filepath.Join(dir, "runs", "*")); len(runs) >= 2 {
			resumed++
		}
	}
	if resumed != trials {
		t.Errorf("%d of %d trials ran again after the preemption (%v)", resumed, trials, trialDirs)
	}

	// The worker stops: every pilot is cancelled.
	w.Stop(time.Minute)
	waitFor(t, time.Minute, "no pilot left in Slurm", func() (bool, error) {
		for _, j := range sc.jobs(t) {
			if j.Partition == "glean" && (j.State == "PENDING" || j.State == "RUNNING" || j.State == "COMPLETING") {
				return false, nil
			}
		}
		return true, nil
	})
}

// slurmScript runs body in bash after sourcing deploy/slurm-cluster.sh
// (its functions, not its commands) with DIR set to a fresh cluster
// directory holding log/ and run/. It returns body's stdout and stderr
// and how bash exited. The directory is stopped (every process naming it
// killed) and removed when t ends.
func slurmScript(t *testing.T, body string) (stdout, stderr string, err error) {
	t.Helper()
	script, err := filepath.Abs("../../deploy/slurm-cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "gsl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("stopping %s: %v\n%s", dir, err, out)
		}
		_ = os.RemoveAll(dir + ".failed-logs") // what failed keeps for a person
	})
	cmd := exec.Command("bash", "-c", `source "$1" && DIR=$2 && mkdir -p "$DIR/log" "$DIR/run" && `+body, "test", script, dir)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// The script starts a daemon and soon asks whether it runs. Until the
// daemon's process has become the daemon (a forked shell that has yet to
// exec, or a process between two execs) its command line does not name
// the cluster's directory; on a loaded machine that lasts long enough to
// be seen, and start took it for a daemon that had exited ("slurmctld
// exited at start", with an empty log). Here the forked shell is held
// before its exec: its stderr is a FIFO nobody reads yet.
func TestSlurmClusterScriptFollowsADaemonBeforeItExecs(t *testing.T) {
	stdout, stderr, err := slurmScript(t, `
touch "$DIR/log/follow"
mkfifo "$DIR/log/slurmctld.out"
daemon slurmctld tail -f "$DIR/log/follow"
if alive slurmctld; then echo "before exec: running"; else echo "before exec: exited"; fi
cat "$DIR/log/slurmctld.out" >/dev/null 2>&1 &
read -r pid <"$DIR/run/slurmctld.pid"
for i in $(seq 600); do
	[[ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" == "tail -f $DIR/log/follow"* ]] && break
	sleep 0.1
done
if alive slurmctld; then echo "after exec: running"; else echo "after exec: exited"; fi`)
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, stderr)
	}
	if want := "before exec: running\nafter exec: running\n"; stdout != want {
		t.Errorf("the script saw:\n%swant:\n%s", stdout, want)
	}
}

// A daemon that dies at start is reported with how it ended, and, when
// it wrote nothing, with that said rather than an empty log.
func TestSlurmClusterScriptSaysHowADaemonEnded(t *testing.T) {
	_, stderr, err := slurmScript(t, `
daemon slurmctld sh -c 'kill -KILL $$' "$DIR/slurm.conf"
for i in $(seq 600); do alive slurmctld || break; sleep 0.1; done
failed slurmctld "exited at start"`)
	if err == nil {
		t.Fatal("failed returned; want it to exit 1")
	}
	for _, want := range []string{
		"slurm-cluster.sh: slurmctld exited at start (killed by SIGKILL)",
		"slurmctld wrote nothing to ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
