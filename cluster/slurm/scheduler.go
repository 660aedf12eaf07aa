package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// Settings configure a Slurm pool's pilots. The zero value of each
// optional field is its documented default.
type Settings struct {
	// Pilots are the policy's settings (pool, counts, times, agent
	// arguments; pilot.Settings). Where their defaults follow from the
	// cluster: MaxPilots is the partition's node count, TimeLimit at most
	// its MaxTime, Lead its GraceTime (at least 30 s), Interval and Yield
	// the cluster's bf_interval; Location is this Location.
	Pilots pilot.Settings
	// Partition is the preemptible partition pilots run in (required).
	Partition string
	// QOS and Account, when set, are sbatch's --qos and --account. Under
	// PreemptType=preempt/qos, the QOS's preemption is checked rather than
	// the partition's.
	QOS, Account string
	// Gres is more generic resources each pilot asks for, beside
	// pilot.Settings.GPUs (gpu:N): sbatch's --gres, items
	// name[:type][:count] separated by commas (CheckGres).
	Gres string
	// Gleaner is the gleaner binary the pilots run (default: this
	// process's executable). It must be at the same path on the nodes.
	Gleaner string
	// Dir holds the pilot script and the pilots' logs (%j.log); the logs
	// are written by the nodes, so it should be on a shared file system.
	Dir string
	// Location is the controller's time zone, in which Slurm prints times
	// (default time.Local).
	Location *time.Location
}

// JobName is the name of a pool's pilot jobs; squeue and scancel find
// them by it.
func JobName(pool string) string { return "gleaner-pilot." + pool }

// Comment is the comment of a pool's pilot jobs, for administrators.
func Comment(pool string) string { return "gleaner:pool=" + pool }

// PilotCommand is the hidden gleaner subcommand a pilot script runs.
const PilotCommand = "slurm-pilot"

// Scheduler is Slurm as pilot.Scheduler: sbatch, squeue, scancel and
// scontrol for one pool's pilots in one partition.
type Scheduler struct {
	set    Settings
	run    Runner
	part   Partition
	conf   Config
	qos    []QOS // read under preempt/qos with a QOS
	here   bool  // every node of the partition is this machine
	script string
}

var _ pilot.Scheduler = (*Scheduler)(nil)

// Preflight errors.
var (
	// ErrNotPreemptible: the partition's pilots could delay batch jobs.
	ErrNotPreemptible = errors.New("pilots there could delay batch jobs")
)

// NewPilots checks the cluster (NewScheduler) and returns the pilot
// policy over it. logf prints progress and warnings (nil: none).
func NewPilots(ctx context.Context, set Settings, run Runner, pool pilot.Pool, logf func(string, ...any)) (*pilot.Pilots, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s, err := NewScheduler(ctx, set, run, logf)
	if err != nil {
		return nil, err
	}
	pset := set.Pilots
	if pset.Location == nil {
		pset.Location = s.set.Location
	}
	p, err := pilot.New(pset, s.Limits(), s, pool, logf)
	if err != nil {
		return nil, err
	}
	pset = p.Settings()
	logf("slurm: pilots for pool %s in partition %s (GraceTime %v, PreemptMode %s, KillWait %v, bf_interval %v, Slurm %s); up to %d pending, %d in all, --time %s --time-min %s",
		pset.Pool, s.part.Name, s.part.GraceTime, s.part.PreemptMode, s.conf.KillWait, s.conf.BackfillInterval, s.conf.Version,
		pset.MaxPending, pset.MaxPilots, FormatDuration(pset.TimeLimit), FormatDuration(pset.TimeMin))
	return p, nil
}

// NewScheduler checks the cluster (the partition exists and is
// preemptible, its GraceTime, KillWait, bf_interval) and writes the pilot
// script. logf prints warnings (nil: none).
func NewScheduler(ctx context.Context, set Settings, run Runner, logf func(string, ...any)) (*Scheduler, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if set.Pilots.Pool == "" {
		return nil, errors.New("slurm: pool: empty")
	}
	if set.Partition == "" {
		return nil, errors.New("slurm: partition: must be set (the preemptible partition pilots run in)")
	}
	if set.Location == nil {
		set.Location = time.Local
	}
	s := &Scheduler{set: set, run: run}
	out, err := run.Run(ctx, "scontrol", "show", "config")
	if err != nil {
		return nil, fmt.Errorf("slurm: reading the configuration: %w", err)
	}
	if s.conf, err = ParseConfig(out); err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	out, err = run.Run(ctx, "scontrol", "show", "partition", set.Partition, "-o")
	if err != nil {
		return nil, fmt.Errorf("slurm: partition %s: %w (sinfo -s lists the partitions)", set.Partition, err)
	}
	parts, err := ParsePartitions(out)
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	if len(parts) != 1 || parts[0].Name != set.Partition {
		return nil, fmt.Errorf("slurm: partition %s: scontrol listed %d partitions", set.Partition, len(parts))
	}
	s.part = parts[0]
	out, err = run.Run(ctx, "sinfo", "-h", "-N", "-p", set.Partition, "-o", NodeAddrFormat)
	if err != nil {
		return nil, fmt.Errorf("slurm: partition %s's nodes: %w", set.Partition, err)
	}
	addrs, err := ParseNodeAddrs(out)
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	s.here = nodesHere(addrs)
	if err := s.checkPreemption(ctx, logf); err != nil {
		return nil, err
	}
	if err := s.check(logf); err != nil {
		return nil, err
	}
	if err := s.writeScript(); err != nil {
		return nil, err
	}
	return s, nil
}

// check warns of a partition whose pilots are killed at once, checks the
// gres, and fills in the binary.
func (s *Scheduler) check(logf func(string, ...any)) error {
	if err := CheckGres(s.set.Gres, s.set.Pilots.GPUs); err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	if s.part.GraceTime == 0 {
		logf("slurm: warning: partition %s has GraceTime=0: a preempted pilot is killed at once and its trainers lose everything since their last checkpoint", s.part.Name)
	}
	if s.set.Gleaner == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("slurm: the gleaner binary for pilots: %w", err)
		}
		s.set.Gleaner = exe
	}
	if !filepath.IsAbs(s.set.Gleaner) || strings.ContainsAny(s.set.Gleaner, " \t\n") {
		return fmt.Errorf("slurm: gleaner binary %q: want an absolute path without blanks (a pilot script's #! line runs it)", s.set.Gleaner)
	}
	if s.set.Dir == "" {
		return errors.New("slurm: dir: must be set (the pilots' script and logs)")
	}
	return nil
}

// Limits are what the policy's defaults follow from: the partition's
// nodes, MaxTime and GraceTime, and the cluster's bf_interval.
func (s *Scheduler) Limits() pilot.Limits {
	return pilot.Limits{
		Nodes: len(s.part.Nodes), MaxTime: s.part.MaxTime, Grace: s.part.GraceTime, Cycle: s.conf.BackfillInterval,
		MaxTimeSetting: "partition " + s.part.Name + "'s MaxTime",
		GraceSetting:   "partition " + s.part.Name + "'s GraceTime",
		NodesHere:      s.here,
	}
}

// Partition is the partition as Slurm described it at start.
func (s *Scheduler) Partition() Partition { return s.part }

// Cluster is Slurm's configuration as read at start.
func (s *Scheduler) Cluster() Config { return s.conf }

// writeScript writes the pilot's batch script: a #! line that runs the
// gleaner binary itself, so no shell runs on the node. slurmd runs it as
// `gleaner slurm-pilot SCRIPT ARGS...`.
func (s *Scheduler) writeScript() error {
	if err := os.MkdirAll(s.set.Dir, 0o755); err != nil {
		return fmt.Errorf("slurm: dir: %w", err)
	}
	pool := s.set.Pilots.Pool
	s.script = filepath.Join(s.set.Dir, "pilot-"+pool)
	body := "#!" + s.set.Gleaner + " " + PilotCommand + "\n" +
		"# A Gleaner pilot for pool " + pool + ": runs `gleaner agent` on this node until\n" +
		"# Slurm preempts it or its time ends (docs/slurm.md). Arguments follow on sbatch's command line.\n"
	tmp := s.script + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o755); err != nil {
		return fmt.Errorf("slurm: pilot script: %w", err)
	}
	return os.Rename(tmp, s.script)
}

// Name implements pilot.Scheduler.
func (s *Scheduler) Name() string { return "slurm" }

// SubmitArgs is the sbatch argv of one pilot asking for req.
func (s *Scheduler) SubmitArgs(req pilot.Request) []string {
	pool := s.set.Pilots.Pool
	args := []string{"--parsable",
		"--job-name=" + JobName(pool),
		"--comment=" + Comment(pool),
		"--partition=" + s.set.Partition,
		"--nodes=" + strconv.Itoa(req.Nodes), "--ntasks=1", "--exclusive",
		"--time=" + FormatDuration(req.Time),
		"--time-min=" + FormatDuration(req.TimeMin),
		"--signal=B:TERM@" + strconv.Itoa(int(req.Lead/time.Second)),
		"--output=" + filepath.Join(s.set.Dir, "pilot-%j.log"),
		"--chdir=" + s.set.Dir,
	}
	if g := s.gresArg(req); g != "" {
		args = append(args, g)
	}
	if s.set.QOS != "" {
		args = append(args, "--qos="+s.set.QOS)
	}
	if s.set.Account != "" {
		args = append(args, "--account="+s.set.Account)
	}
	args = append(args, s.script)
	return append(args, req.Agent...)
}

// Submit implements pilot.Scheduler with sbatch. req.Env goes in sbatch's
// environment, which the job inherits (EnvRunner).
func (s *Scheduler) Submit(ctx context.Context, req pilot.Request) (string, error) {
	var out []byte
	var err error
	if len(req.Env) == 0 {
		out, err = s.run.Run(ctx, "sbatch", s.SubmitArgs(req)...)
	} else if er, ok := s.run.(EnvRunner); ok {
		out, err = er.RunEnv(ctx, req.Env, "sbatch", s.SubmitArgs(req)...)
	} else {
		return "", errors.New("sbatch: this runner cannot pass the agent's environment (an EnvRunner can)")
	}
	if err != nil {
		return "", err
	}
	return ParseJobID(out)
}

// Pilots implements pilot.Scheduler with squeue: the pool's jobs by name.
func (s *Scheduler) Pilots(ctx context.Context) ([]pilot.Job, error) {
	out, err := s.run.Run(ctx, "squeue", "-h", "-a", "--name="+JobName(s.set.Pilots.Pool), "-o", PilotFormat)
	if err != nil {
		return nil, err
	}
	jobs, err := ParseJobs(out, s.set.Location)
	if err != nil {
		return nil, err
	}
	ps := make([]pilot.Job, len(jobs))
	for i, j := range jobs {
		ps[i] = pilot.Job{ID: j.ID, State: pilotState(j.State), Nodes: j.Nodes, End: j.End}
	}
	return ps, nil
}

// Cancel implements pilot.Scheduler with scancel.
func (s *Scheduler) Cancel(ctx context.Context, ids []string) error {
	_, err := s.run.Run(ctx, "scancel", ids...)
	return err
}

// CancelAll implements pilot.Scheduler: scancel by the pool's job name, in
// the pilots' partition.
func (s *Scheduler) CancelAll(ctx context.Context) error {
	_, err := s.run.Run(ctx, "scancel", "--name="+JobName(s.set.Pilots.Pool), "--partition="+s.set.Partition)
	return err
}

// signalNames are the names scancel --signal takes; others go as numbers.
var signalNames = map[syscall.Signal]string{
	syscall.SIGTERM: "TERM", syscall.SIGINT: "INT", syscall.SIGHUP: "HUP", syscall.SIGKILL: "KILL",
	syscall.SIGUSR1: "USR1", syscall.SIGUSR2: "USR2", syscall.SIGCONT: "CONT", syscall.SIGSTOP: "STOP",
}

// Signal implements pilot.Scheduler: scancel --batch signals the batch
// script alone, as --signal=B: does at a preemption.
func (s *Scheduler) Signal(ctx context.Context, sig syscall.Signal, ids []string) error {
	name, ok := signalNames[sig]
	if !ok {
		name = strconv.Itoa(int(sig))
	}
	_, err := s.run.Run(ctx, "scancel", append([]string{"--batch", "--signal=" + name}, ids...)...)
	return err
}

// Plan implements pilot.Scheduler: the backfill plan (squeue --start) and
// the reservations, as Claims.
func (s *Scheduler) Plan(ctx context.Context) ([]pilot.Claim, error) {
	out, err := s.run.Run(ctx, "squeue", "-h", "-a", "--start", "--states=PENDING", "-o", PlanFormat)
	if err != nil {
		return nil, fmt.Errorf("the backfill plan: %w", err)
	}
	plan, err := ParsePlan(out, s.set.Location)
	if err != nil {
		return nil, err
	}
	out, err = s.run.Run(ctx, "scontrol", "show", "reservation", "-o")
	if err != nil {
		return nil, fmt.Errorf("reservations: %w", err)
	}
	resv, err := ParseReservations(out, s.set.Location)
	if err != nil {
		return nil, err
	}
	return Claims(plan, resv, s.set.Partition), nil
}
