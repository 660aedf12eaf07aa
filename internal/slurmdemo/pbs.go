package slurmdemo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/pbs"
	"github.com/gleaner-hpc/gleaner/cluster/slurm"
)

// PBSSettings are the PBS cluster a run uses: the one-machine OpenPBS of
// scripts/openpbs/cluster.sh, started (or found running) with its start
// command and left running.
type PBSSettings struct {
	// Script is scripts/openpbs/cluster.sh.
	Script string
	// Exec is where OpenPBS is installed (PBS_EXEC, default /opt/pbs).
	Exec string
}

// PBSSummary is the cluster as PBS described it.
type PBSSummary struct {
	Version string `json:"version"`
	// Queue is the pilots' queue, KillDelayS its kill_delay.
	Queue      string  `json:"queue"`
	KillDelayS float64 `json:"kill_delay_s"`
	// SchedulerIterationS is the server's scheduler_iteration.
	SchedulerIterationS float64 `json:"scheduler_iteration_s"`
	PreemptOrder        string  `json:"preempt_order"`
}

// PBSCluster is a PBS cluster the demo runs on: jobs submitted with qsub,
// sampled with `qstat -x -f -F json` (finished jobs while the server's
// job history keeps them), cancelled with qdel. It is left running: Stop
// does nothing, Fresh drains it and forgets the jobs submitted before.
type PBSCluster struct {
	Run pbs.Runner
	// Location is the time zone PBS prints times in (default time.Local).
	Location *time.Location
	env      []string
	// OutDir is where the batch jobs' output goes (qsub -o DIR/; PBS
	// copies it there).
	OutDir string
	jobs   pbsJobs
}

// StartPBS runs the cluster script's start (idempotent: a running cluster
// is checked and kept; its progress on stderr) and returns the cluster,
// drained of earlier jobs.
func StartPBS(ctx context.Context, set PBSSettings, stderr io.Writer) (*PBSCluster, error) {
	if set.Exec == "" {
		set.Exec = "/opt/pbs"
	}
	script, err := filepath.Abs(set.Script)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("cluster script: %w (run from the repository root, or give --cluster-script)", err)
	}
	cmd := exec.CommandContext(ctx, "bash", script, "start")
	cmd.Env = append(os.Environ(), "PBS_EXEC="+set.Exec)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("starting the PBS cluster (%s start): %w", script, err)
	}
	bin := filepath.Join(set.Exec, "bin")
	c := &PBSCluster{
		Run: pbs.ExecRunner{Bin: bin},
		env: []string{"PBS_EXEC=" + set.Exec, "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")},
	}
	if conf := os.Getenv("PBS_CONF_FILE"); conf != "" {
		c.env = append(c.env, "PBS_CONF_FILE="+conf)
	}
	if err := c.Fresh(ctx, stderr); err != nil {
		return nil, err
	}
	return c, nil
}

var _ Scheduler = (*PBSCluster)(nil)

func (c *PBSCluster) Name() string { return "PBS" }

// PBSSubmitArgs is the qsub argv of one replayed job: its name is its
// Name, one 1-cpu chunk per node on vnodes of its own (place=excl), its
// walltime its limit, its script run with its compressed run time.
func PBSSubmitArgs(j PlannedJob, queue, script, outDir string) []string {
	return []string{
		"-q", queue,
		"-N", j.Name,
		"-l", "select=" + strconv.Itoa(j.Nodes) + ":ncpus=1",
		"-l", "place=excl",
		"-l", "walltime=" + pbs.FormatDuration(j.Limit),
		"-r", "n",
		"-j", "oe",
		"-o", outDir + "/",
		"--", script,
		strconv.FormatFloat(j.Run.Seconds(), 'f', 3, 64),
	}
}

func (c *PBSCluster) Submit(ctx context.Context, j PlannedJob, queue, script string) (string, error) {
	out := c.OutDir
	if out == "" {
		out = filepath.Dir(script)
	}
	b, err := c.Run.Run(ctx, nil, "qsub", PBSSubmitArgs(j, queue, script, out)...)
	if err != nil {
		return "", err
	}
	return pbs.ParseJobID(b)
}

// Jobs lists the jobs submitted since the last Fresh, in the demo's
// words (pbsJobs.translate).
func (c *PBSCluster) Jobs(ctx context.Context) ([]slurm.Job, error) {
	out, err := c.Run.Run(ctx, nil, "qstat", "-x", "-f", "-F", "json")
	if err != nil {
		return nil, err
	}
	loc := c.Location
	if loc == nil {
		loc = time.Local
	}
	jobs, err := pbs.ParseJobs(out, loc)
	if err != nil {
		return nil, err
	}
	return c.jobs.translate(jobs, time.Now()), nil
}

// pbsJobs translates PBS's jobs into the demo's words. A preempted pilot
// is requeued under its id (back in Q, run_count kept): each run is a job
// of its own for the timeline, the first under the PBS id, the n-th
// under "ID/n", and a run that ended by a requeue is PREEMPTED, ended when
// PBS says (obittime) or, failing that, when a sample first saw it over.
// A rerun has no stime: it started when a sample first saw it running.
type pbsJobs struct {
	mu sync.Mutex
	// since: jobs created before it belong to an earlier pass.
	since time.Time
	// running is each job's run last seen holding vnodes; ended the runs
	// that ended by a requeue.
	running map[string]slurm.Job
	ended   []slurm.Job
}

// reset forgets every job created before at.
func (p *pbsJobs) reset(at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since = at.Truncate(time.Second) // ctime is whole seconds
	p.running = map[string]slurm.Job{}
	p.ended = nil
}

func (p *pbsJobs) translate(jobs []pbs.Job, now time.Time) []slurm.Job {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[string]slurm.Job{}
	}
	var out []slurm.Job
	for _, j := range jobs {
		if !j.Created.IsZero() && j.Created.Before(p.since) {
			continue
		}
		ran := j.State == "R" || j.State == "E" || j.State == "F" || j.State == "X"
		run := j.RunCount
		if !ran {
			run++ // waiting for its next run
		}
		if prev, ok := p.running[j.ID]; ok && runOf(prev.ID) < run {
			// The run seen before ended and the job was requeued.
			prev.State = "PREEMPTED"
			prev.End = now
			if !j.Finished.IsZero() && !j.Finished.Before(prev.Start) {
				prev.End = j.Finished
			}
			p.ended = append(p.ended, prev)
			delete(p.running, j.ID)
		}
		sj := slurm.Job{ID: runID(j.ID, max(run, 1)), State: pbsState(j.State), Comment: j.Name, Partition: j.Queue}
		if ran {
			sj.Nodes, sj.Start = j.Nodes, j.Start
			sj.End = j.End
			if sj.Start.IsZero() {
				// A rerun has no stime (OpenPBS 23.06: its accounting
				// record says start=0): it started when first seen running.
				sj.Start = now
				if prev, ok := p.running[j.ID]; ok && prev.ID == sj.ID {
					sj.Start = prev.Start
				}
				if j.Walltime > 0 {
					sj.End = sj.Start.Add(j.Walltime)
				}
			}
			if !j.Finished.IsZero() && (j.State == "F" || j.State == "X") {
				sj.End = j.Finished
			}
			if j.State == "R" || j.State == "E" {
				p.running[j.ID] = sj
			} else {
				delete(p.running, j.ID)
			}
		}
		out = append(out, sj)
	}
	return append(out, p.ended...)
}

// runID is the timeline's id of a job's n-th run.
func runID(id string, n int) string {
	if n <= 1 {
		return id
	}
	return id + "/" + strconv.Itoa(n)
}

// runOf is the run a runID names.
func runOf(id string) int {
	if _, n, ok := strings.Cut(id, "/"); ok {
		r, _ := strconv.Atoi(n)
		return r
	}
	return 1
}

// pbsState is a PBS job_state in Slurm's words: Q, H, W, T waiting
// (PENDING); R and B running; E exiting (COMPLETING: it still holds its
// vnodes); S, U suspended; F, X finished (COMPLETED: PBS's state does not
// say how; a requeue is seen as the job waiting again).
func pbsState(s string) string {
	switch s {
	case "R", "B":
		return "RUNNING"
	case "E":
		return "COMPLETING"
	case "S", "U":
		return "SUSPENDED"
	case "F", "X":
		return "COMPLETED"
	}
	return "PENDING"
}

// Nodes are the vnodes a job of the pilots' queue could run on (vnodes
// with cpus, tied to no other queue), in natural order.
func (c *PBSCluster) Nodes(ctx context.Context) ([]string, error) {
	out, err := c.Run.Run(ctx, nil, "pbsnodes", "-av", "-F", "json")
	if err != nil {
		return nil, err
	}
	vs, err := pbs.ParseVnodes(out)
	if err != nil {
		return nil, err
	}
	var nodes []string
	for _, v := range pbs.Eligible(vs, "", "") {
		nodes = append(nodes, v.Name)
	}
	slices.SortFunc(nodes, func(a, b string) int {
		if naturalLess(strings.TrimRight(a, "]"), strings.TrimRight(b, "]")) {
			return -1
		}
		return strings.Compare(a, b)
	})
	if len(nodes) == 0 {
		return nil, fmt.Errorf("pbsnodes lists no vnode with cpus")
	}
	return nodes, nil
}

// Describe reads the server (its version and scheduler_iteration), the
// pilots' queue (kill_delay) and the scheduler's preempt_order.
func (c *PBSCluster) Describe(ctx context.Context, queue string) (ClusterInfo, error) {
	out, err := c.Run.Run(ctx, nil, "qmgr", "-c", "list server")
	if err != nil {
		return ClusterInfo{}, err
	}
	server, err := pbs.ParseServer(out)
	if err != nil {
		return ClusterInfo{}, err
	}
	if out, err = c.Run.Run(ctx, nil, "qmgr", "-c", "list queue "+queue); err != nil {
		return ClusterInfo{}, err
	}
	q, err := pbs.ParseQueue(out)
	if err != nil {
		return ClusterInfo{}, err
	}
	kill := q.KillDelay
	if !q.KillDelaySet {
		kill = pbs.DefaultKillDelay
	}
	var order string
	if out, err := c.Run.Run(ctx, nil, "qmgr", "-c", "list sched"); err == nil {
		if sched, err := pbs.ParseSched(out); err == nil {
			order = sched.PreemptOrder
		}
	}
	return ClusterInfo{
		Grace: kill, PlanInterval: server.SchedulerIteration,
		Version: "PBS " + server.Version,
		Line: fmt.Sprintf("queue %s kill_delay %v, scheduler_iteration %v, preempt_order %s",
			q.Name, kill, server.SchedulerIteration, order),
		PBS: &PBSSummary{Version: server.Version, Queue: q.Name, KillDelayS: kill.Seconds(),
			SchedulerIterationS: server.SchedulerIteration.Seconds(), PreemptOrder: order},
	}, nil
}

// Drain deletes the jobs of queue (every queue when empty) that wait or
// run, and waits until none is left.
func (c *PBSCluster) Drain(ctx context.Context, queue string, timeout time.Duration) (int, error) {
	return drain(ctx, timeout, 500*time.Millisecond, "qdel", func() ([]string, error) {
		out, err := c.Run.Run(ctx, nil, "qstat", "-f", "-F", "json")
		if err != nil {
			return nil, err
		}
		jobs, err := pbs.ParseJobs(out, time.Local)
		if err != nil {
			return nil, err
		}
		var left []string
		for _, j := range jobs {
			if (queue == "" || j.Queue == queue) && j.State != "F" && j.State != "X" {
				left = append(left, j.ID)
			}
		}
		return left, nil
	}, func(ids []string) error {
		// A job already exiting refuses qdel: it is gone on a later round.
		_, _ = c.Run.Run(ctx, nil, "qdel", ids...)
		return nil
	})
}

// CancelPilots finds the pool's pilots in queue by name (qselect) and
// deletes them (qdel).
func (c *PBSCluster) CancelPilots(ctx context.Context, pool, queue string) (string, error) {
	argv := []string{"-q", queue, "-N", pbs.JobName(pool)}
	cmd := "qselect " + strings.Join(argv, " ") + " | qdel"
	out, err := c.Run.Run(ctx, nil, "qselect", argv...)
	if err != nil {
		return cmd, err
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return cmd, nil
	}
	_, err = c.Run.Run(ctx, nil, "qdel", ids...)
	return cmd, err
}

// NodeSource is pbs:queue=...: the worker's pilots in the pilot queue.
func (c *PBSCluster) NodeSource(s Settings) string {
	nodes := fmt.Sprintf("pbs:queue=%s,pool=%s,max_pending=%d,time=%s,time_min=%s,interval=%s,gpus=none",
		s.PilotPartition, s.Pool, s.MaxPending, s.PilotTime, s.PilotMin, s.PilotEvery)
	if s.PilotYield != "" {
		nodes += ",yield=" + s.PilotYield
	}
	return nodes
}

func (c *PBSCluster) Env() []string { return c.env }

func (c *PBSCluster) Started() bool { return false }

// Fresh deletes every job left and forgets the jobs submitted before:
// PBS keeps finished jobs for its job history, and job ids go on.
func (c *PBSCluster) Fresh(ctx context.Context, _ io.Writer) error {
	if _, err := c.Drain(ctx, "", time.Minute); err != nil {
		return err
	}
	c.jobs.reset(time.Now())
	return nil
}

func (c *PBSCluster) Stop(io.Writer) error { return nil }

func (c *PBSCluster) SaveLog(string) bool { return false }
