package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/cluster/pbs"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// EnvRequirePBS, set to 1, makes the PBS tests fail rather than skip where
// no PBS server answers.
const EnvRequirePBS = "GLEANER_REQUIRE_PBS"

// pbsCluster is a running PBS server the tests may use as root: the one
// scripts/openpbs/cluster.sh starts (queues workq, gleaner and high, 1-cpu
// vnodes). The tests delete the jobs they submit.
type pbsCluster struct {
	bin string
	run pbs.ExecRunner
	env []string // for the worker: PATH with PBS's commands first
}

func findPBS(t *testing.T) *pbsCluster {
	t.Helper()
	skip := func(why string) {
		if os.Getenv(EnvRequirePBS) == "1" {
			t.Fatal(why)
		}
		t.Skip(why + " (scripts/openpbs/cluster.sh start runs one; set " + EnvRequirePBS + "=1 to fail instead)")
	}
	qstat, err := exec.LookPath("qstat")
	if err != nil {
		qstat = "/opt/pbs/bin/qstat"
		if _, err := os.Stat(qstat); err != nil {
			skip("no qstat on PATH nor in /opt/pbs/bin: PBS is not installed")
		}
	}
	if os.Geteuid() != 0 {
		skip("the one-machine PBS cluster takes jobs from root (acl_roots); not root")
	}
	c := &pbsCluster{bin: filepath.Dir(qstat), run: pbs.ExecRunner{Bin: filepath.Dir(qstat), Timeout: 20 * time.Second}}
	if out, err := c.run.Run(context.Background(), nil, "qstat", "-B"); err != nil {
		skip(fmt.Sprintf("no PBS server answers (%v) %s", err, out))
	}
	if _, err := c.run.Run(context.Background(), nil, "qmgr", "-c", "list queue gleaner"); err != nil {
		skip(fmt.Sprintf("no queue gleaner: not scripts/openpbs/cluster.sh's cluster (%v)", err))
	}
	c.env = []string{"PATH=" + c.bin + ":" + os.Getenv("PATH")}
	if conf := os.Getenv("PBS_CONF_FILE"); conf != "" {
		c.env = append(c.env, "PBS_CONF_FILE="+conf)
	}
	return c
}

func (c *pbsCluster) cmd(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := c.run.Run(context.Background(), nil, name, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return string(out)
}

// jobs are the jobs PBS lists now, finished ones too (qstat -x).
func (c *pbsCluster) jobs(t *testing.T) []pbs.Job {
	t.Helper()
	jobs, err := pbs.ParseJobs([]byte(c.cmd(t, "qstat", "-x", "-f", "-F", "json")), time.Local)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func (c *pbsCluster) job(t *testing.T, id string) pbs.Job {
	for _, j := range c.jobs(t) {
		if j.ID == id {
			return j
		}
	}
	return pbs.Job{ID: id}
}

// The scenario on a real PBS: pilots start on idle vnodes and
// their agents join with the vnodes' names; a job in the high (express)
// queue wanting every vnode preempts them; the trainers checkpoint within
// kill_delay; the pilots come back and every trial completes, none lost,
// none trained twice; a job planned behind a blocker makes the pilots on
// its vnodes yield before its start; when the worker stops no pilot is
// left.
func TestPBSPilotsHarvestYieldAndArePreempted(t *testing.T) {
	pc := findPBS(t)
	vnodes, err := pbs.ParseVnodes([]byte(pc.cmd(t, "pbsnodes", "-av", "-F", "json")))
	if err != nil {
		t.Fatal(err)
	}
	all := len(pbs.Eligible(vnodes, "gleaner", ""))
	const trials = 4
	if all < trials {
		t.Skipf("%d vnodes for pilots, want at least %d", all, trials)
	}
	srv := startServer(t, devserver.Options{})
	const tq, pool = "pbs", "pbs"
	data := filepath.Join(t.TempDir(), "shared")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	w := startWorkerProcess(t, srv, WorkerProcessOptions{
		TaskQueue: tq, DataDir: data, Env: pc.env,
		Nodes: "pbs:queue=gleaner,pool=" + pool + ",max_pending=4,time=30m,time_min=5m,interval=1s,yield=5s,gpus=none",
	})
	// A test that fails leaves no pilot behind either: the worker is
	// stopped (it deletes its pilots) before its process is killed, and
	// what is left is deleted.
	t.Cleanup(func() {
		w.Stop(time.Minute)
		out, _ := pc.run.Run(context.Background(), nil, "qselect", "-q", "gleaner", "-N", pbs.JobName(pool))
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			t.Errorf("pilots %v left after the worker stopped; deleting them", ids)
			_, _ = pc.run.Run(context.Background(), nil, "qdel", append([]string{"-W", "force"}, ids...)...)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(data, "pbs", "*"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), b)
			}
		}
	})

	const steps = 400 // about 40 s of training each at 100 ms a step
	spec := testenv.MLPSpec(t, pool, trials, trials, steps, 100)
	spec.Resources = gleaner.Resources{MinNodes: 1, MaxNodes: 1}
	spec.Trial.GracePeriod = gleaner.Duration(4 * time.Second)
	run := startCampaign(t, srv.Client(), tq, spec)

	isVnode := func(id string) bool { return strings.Contains(id, "[") && !strings.Contains(id, "/") }
	waitFor(t, 3*time.Minute, "four pilots' agents in the pool on vnodes, every trial running", func() (bool, error) {
		st, err := poolStatus(t, srv.Client(), pool)
		if err != nil {
			return false, err
		}
		busy := 0
		for _, tr := range st.Trials {
			if len(tr.Nodes) == 1 && isVnode(tr.Nodes[0]) {
				busy++
			}
		}
		return len(st.Agents) >= trials && busy == trials, nil
	})
	waitForCheckpoints(t, srv.Client(), run.GetID(), trials)

	// An express job wanting every vnode preempts every pilot.
	running := map[string]bool{}
	for _, j := range pc.jobs(t) {
		if j.Queue == "gleaner" && j.State == "R" {
			running[j.ID] = true
		}
	}
	// At least one per trial: the policy may have submitted one more
	// while an agent was joining; it stays until idle_release.
	if len(running) < trials {
		t.Fatalf("%d pilots running before the express job, want at least %d", len(running), trials)
	}
	submitted := time.Now()
	high := strings.TrimSpace(pc.cmd(t, "qsub", "-q", "high", "-N", "express-all", "-l", fmt.Sprintf("select=%d:ncpus=1", all),
		"-l", "walltime=00:01:00", "-o", "/dev/null", "-j", "oe", "--", "/bin/sleep", "8"))
	t.Cleanup(func() { _, _ = pc.run.Run(context.Background(), nil, "qdel", "-W", "force", high) })
	waitFor(t, 2*time.Minute, "the express job to start", func() (bool, error) {
		s := pc.job(t, high).State
		return s == "R" || s == "E" || s == "F", nil
	})
	t.Logf("express job %s started %v after its submission", high, time.Since(submitted).Round(100*time.Millisecond))
	for id := range running {
		if s := pc.job(t, id).State; s == "R" {
			t.Errorf("pilot %s is still running beside the express job", id)
		}
	}

	// The pilots come back once it ends.
	waitFor(t, 2*time.Minute, "the express job to end", func() (bool, error) { return pc.job(t, high).State == "F", nil })
	waitFor(t, 3*time.Minute, "the pilots' agents back in the pool", func() (bool, error) {
		st, err := poolStatus(t, srv.Client(), pool)
		return err == nil && len(st.Agents) >= trials, err
	})

	// A blocker on the free vnodes and a job wanting every vnode behind it:
	// PBS plans that job at the blocker's end on the pilots' vnodes too;
	// the pilots yield ahead of it (yield 5 s).
	free := all - trials
	if free > 0 {
		blocker := strings.TrimSpace(pc.cmd(t, "qsub", "-q", "workq", "-N", "blocker", "-l", fmt.Sprintf("select=%d:ncpus=1", free),
			"-l", "walltime=00:00:40", "-o", "/dev/null", "-j", "oe", "--", "/bin/sleep", "600")) // ends at its walltime, as planned
		t.Cleanup(func() { _, _ = pc.run.Run(context.Background(), nil, "qdel", "-W", "force", blocker) })
	}
	big := strings.TrimSpace(pc.cmd(t, "qsub", "-q", "workq", "-N", "big", "-l", fmt.Sprintf("select=%d:ncpus=1", all),
		"-l", "walltime=00:01:00", "-o", "/dev/null", "-j", "oe", "--", "/bin/sleep", "5"))
	t.Cleanup(func() { _, _ = pc.run.Run(context.Background(), nil, "qdel", "-W", "force", big) })
	waitFor(t, 3*time.Minute, "the big job to run", func() (bool, error) {
		s := pc.job(t, big).State
		return s == "R" || s == "E" || s == "F", nil
	})
	b, err := os.ReadFile(w.logPath)
	if err != nil || !strings.Contains(string(b), " to job "+big+" (workq)") {
		t.Errorf("the worker's log does not say a pilot yielded its vnode to job %s (%v):\n%s", big, err, b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, " to job "+big+" (workq)") {
			t.Log(line)
		}
	}

	res := campaignResult(t, run, 8*time.Minute)
	if res.State != workflows.CampaignCompleted || res.Completed != trials {
		t.Fatalf("campaign %s %+v, want %d completed", res.State, res.CampaignCounts, trials)
	}
	reports := trialReports(t, srv.Client(), spec.Name, trials)
	checkAllTrainedOnce(t, reports, steps)
	checkNoRestarts(t, reports, "after their pilots were preempted")

	w.Stop(time.Minute)
	waitFor(t, time.Minute, "no pilot left in PBS", func() (bool, error) {
		for _, j := range pc.jobs(t) {
			if j.Name == pbs.JobName(pool) && j.State != "F" && j.State != "X" {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitForCheckpoints waits until each of the campaign's first trials has
// written a checkpoint.
func waitForCheckpoints(t *testing.T, c client.Client, campaignID string, trials int) {
	t.Helper()
	waitFor(t, time.Minute, "every trial past a checkpoint", func() (bool, error) {
		for i := 1; i <= trials; i++ {
			s, err := trialStatus(t, c, workflows.TrialWorkflowID(campaignID, i))
			if err != nil || s.Checkpoint == "" {
				return false, err
			}
		}
		return true, nil
	})
}
