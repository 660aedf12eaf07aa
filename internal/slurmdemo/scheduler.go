package slurmdemo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/slurm"
)

// The demo's seam with the batch scheduler: what it submits the replayed
// jobs with, what it samples every interval, and the cluster's life. Slurm
// (Cluster) and PBS (PBSCluster) implement it; the plan, the timeline,
// the measurements and the campaign are the same for both.
//
// The demo speaks Slurm's words: a job's state is one of Slurm's
// (PENDING, RUNNING, COMPLETING, COMPLETED, PREEMPTED, ...), a batch job's
// name is its Comment, its queue its Partition. A scheduler with other
// words translates them (pbsJobs).

// Submitter submits one replayed batch job to queue, its script run with
// the job's compressed run time, and returns the scheduler's job id.
type Submitter interface {
	Submit(ctx context.Context, j PlannedJob, queue, script string) (string, error)
}

// JobLister lists the pass's jobs, finished ones included while the
// scheduler keeps them, in the demo's words (above).
type JobLister interface {
	Jobs(ctx context.Context) ([]slurm.Job, error)
}

// Scheduler is the cluster a run replays into and harvests.
type Scheduler interface {
	Submitter
	JobLister
	// Name is the scheduler's name for people: "Slurm", "PBS".
	Name() string
	// Nodes are the nodes jobs and pilots run on, in natural order.
	Nodes(ctx context.Context) ([]string, error)
	// Describe reads the scheduler's settings and the pilots' queue.
	Describe(ctx context.Context, pilotQueue string) (ClusterInfo, error)
	// Drain cancels the jobs of queue (every queue when empty) and waits,
	// up to timeout, until none waits or holds a node; it returns how
	// many it cancelled.
	Drain(ctx context.Context, queue string, timeout time.Duration) (int, error)
	// CancelPilots cancels the pool's pilots in queue by their job name
	// and returns the command it ran, for people.
	CancelPilots(ctx context.Context, pool, queue string) (string, error)
	// NodeSource is the worker's --nodes for the run's pilots.
	NodeSource(s Settings) string
	// Env is what the scheduler's commands need, for the worker.
	Env() []string
	// Started: this process started the cluster, and Stop stops it;
	// otherwise the cluster stays, drained of the demo's jobs.
	Started() bool
	// Fresh makes the next pass's cluster like the first's: a restarted
	// one, or the running one drained, its earlier jobs forgotten.
	Fresh(ctx context.Context, stderr io.Writer) error
	Stop(stderr io.Writer) error
	// SaveLog copies the controller's log of a pass to dst; false when
	// there is none.
	SaveLog(dst string) bool
}

// ClusterInfo is what the scheduler said of itself, as the demo uses it.
type ClusterInfo struct {
	// Grace is how long a preempted pilot has before it is killed
	// (Slurm's GraceTime, PBS's kill_delay); PlanInterval how often the
	// scheduler plans (Slurm's bf_interval, PBS's scheduler_iteration).
	// Their sum bounds how much a batch job's start moves for the pilots.
	Grace, PlanInterval time.Duration
	// Version is the scheduler's ("Slurm 22.05.8"); Line the rest of
	// what people are told of it (the pilots' queue and its settings).
	Version, Line string
	// Slurm or PBS is the result's account of it.
	Slurm *SlurmSummary
	PBS   *PBSSummary
}

// SlurmSubmitter submits a replayed job with sbatch (SubmitArgs).
type SlurmSubmitter struct{ Run slurm.Runner }

func (s SlurmSubmitter) Submit(ctx context.Context, j PlannedJob, queue, script string) (string, error) {
	out, err := s.Run.Run(ctx, "sbatch", SubmitArgs(j, queue, script)...)
	if err != nil {
		return "", err
	}
	return slurm.ParseJobID(out)
}

// SlurmJobs lists every job with squeue, finished ones included while
// MinJobAge keeps them.
type SlurmJobs struct {
	Run slurm.Runner
	// Location is the controller's time zone (default time.Local).
	Location *time.Location
}

func (s SlurmJobs) Jobs(ctx context.Context) ([]slurm.Job, error) {
	loc := s.Location
	if loc == nil {
		loc = time.Local
	}
	out, err := s.Run.Run(ctx, "squeue", "-h", "-a", "-t", "all", "-o", slurm.PilotFormat)
	if err != nil {
		return nil, err
	}
	return slurm.ParseJobs(out, loc)
}

var _ Scheduler = (*Cluster)(nil)

func (c *Cluster) Name() string { return "Slurm" }

func (c *Cluster) Submit(ctx context.Context, j PlannedJob, queue, script string) (string, error) {
	return SlurmSubmitter{Run: c.Run}.Submit(ctx, j, queue, script)
}

func (c *Cluster) Jobs(ctx context.Context) ([]slurm.Job, error) {
	return SlurmJobs{Run: c.Run}.Jobs(ctx)
}

// CancelPilots runs scancel --name=gleaner-pilot.POOL --partition=QUEUE.
func (c *Cluster) CancelPilots(ctx context.Context, pool, queue string) (string, error) {
	argv := []string{"--name=" + slurm.JobName(pool), "--partition=" + queue}
	cmd := "scancel " + strings.Join(argv, " ")
	_, err := c.Run.Run(ctx, "scancel", argv...)
	return cmd, err
}

// NodeSource is slurm:partition=...: the worker's pilots in the pilot
// partition.
func (c *Cluster) NodeSource(s Settings) string {
	nodes := fmt.Sprintf("slurm:partition=%s,pool=%s,max_pending=%d,time=%s,time_min=%s,interval=%s,gpus=none",
		s.PilotPartition, s.Pool, s.MaxPending, s.PilotTime, s.PilotMin, s.PilotEvery)
	if s.PilotYield != "" {
		nodes += ",yield=" + s.PilotYield
	}
	return nodes
}

func (c *Cluster) Env() []string { return c.env }

func (c *Cluster) Started() bool { return c.started }

// Fresh restarts a cluster this process started (a fresh controller, job
// ids from 1, no history), or drains a running one.
func (c *Cluster) Fresh(ctx context.Context, stderr io.Writer) error {
	if !c.started {
		_, err := c.Drain(ctx, "", time.Minute)
		return err
	}
	return c.Restart(ctx, stderr)
}
