package slurm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Pool is what the pilots need of the pool they feed. The worker
// implements it over the pool workflow (a query and a signal).
type Pool interface {
	// Demand says how many more nodes the pool's trials could use.
	Demand(ctx context.Context) (Demand, error)
	// SetIdleUntil tells the pool when each pilot's node is expected to be
	// taken back (nodes missing from the map: unknown).
	SetIdleUntil(ctx context.Context, until map[string]time.Time) error
}

// Demand is a pool's appetite for nodes.
type Demand struct {
	// Trials are the trials registered with the pool.
	Trials int
	// Wanted is how many nodes beyond the pool's own the trials could use
	// (the sum of their max_nodes less the pool's nodes; ≥ 0).
	Wanted int
	// MaxGrace is the longest grace period among the trials: a preempted
	// pilot must fit it inside the partition's GraceTime.
	MaxGrace time.Duration
}

// Settings configure Pilots. The zero value of each optional field is its
// documented default.
type Settings struct {
	// Pool names the pool the pilots' agents join.
	Pool string
	// Partition is the preemptible partition pilots run in (required).
	Partition string
	// QOS and Account, when set, are sbatch's --qos and --account. With a
	// QOS, preemption may come from the QOS rather than the partition.
	QOS, Account string
	// MaxPending is how many pilots may wait in the queue at once
	// (default 4).
	MaxPending int
	// MaxPilots caps pending plus running pilots (default: the
	// partition's node count).
	MaxPilots int
	// TimeLimit and TimeMin are the pilots' --time and --time-min:
	// backfill starts a pilot in any hole at least TimeMin long and gives
	// it up to TimeLimit (defaults 2 h and 10 min).
	TimeLimit, TimeMin time.Duration
	// Lead is how long before its time limit a pilot's agent gets SIGTERM
	// (--signal=B:TERM@Lead), to leave as it would when preempted
	// (default: the partition's GraceTime, at least 30 s).
	Lead time.Duration
	// Interval is how often the pilots are looked after (default: the
	// cluster's bf_interval, between 2 s and 30 s).
	Interval time.Duration
	// IdleRelease is how long running pilots may stay when no trial needs
	// nodes before they are cancelled (default 5 min).
	IdleRelease time.Duration
	// Yield is how long before a pending job's (or a reservation's)
	// planned start on its node a running pilot gives the node back by
	// itself, without waiting for Slurm to preempt it: its agent gets
	// SIGTERM (scancel --batch --signal=TERM) and leaves as when
	// preempted. Slurm preempts pilots for the jobs its scheduler starts
	// now; the backfill plan also names nodes Slurm gives a queued job
	// next, and a pilot there leaving at once spares that job the wait
	// for a later preemption (default: the cluster's bf_interval, one
	// plan's age; negative: never yield, leave it to Slurm).
	Yield time.Duration
	// Gleaner is the gleaner binary the pilots run (default: this
	// process's executable). It must be at the same path on the nodes.
	Gleaner string
	// AgentArgs are the `gleaner agent` flags a pilot passes (connection,
	// data directory, GPUs); --pool and --stop-timeout are added.
	AgentArgs []string
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

// Status is what one round of looking after the pilots found and did.
type Status struct {
	At        time.Time
	Demand    Demand
	Running   []Job // their nodes are (or are joining) the pool
	Pending   []Job
	Submitted []string // job ids
	Cancelled []string // job ids
	// Yielded are the running pilots told to leave this round because a
	// pending job or a reservation claims their node (Settings.Yield).
	Yielded   []string // job ids
	Estimates map[string]Estimate
}

// Pilots keeps a pool supplied with pilot jobs (see the package doc).
type Pilots struct {
	set    Settings
	run    Runner
	pool   Pool
	now    func() time.Time
	logf   func(format string, args ...any)
	part   Partition
	conf   Config
	script string
	// sent is the last estimate map the pool accepted.
	sent map[string]time.Time
	// lastNeeded is when a trial last needed nodes.
	lastNeeded time.Time
	warned     map[string]bool
	// yielded are the pilots told to leave, so each is told once.
	yielded map[string]bool
}

// Preflight errors.
var (
	// ErrNotPreemptible: the partition's pilots could delay batch jobs.
	ErrNotPreemptible = errors.New("pilots there could delay batch jobs")
)

// NewPilots checks the cluster (the partition exists and is preemptible,
// its GraceTime, KillWait, bf_interval) and writes the pilot script. logf
// prints progress and warnings (nil: none).
func NewPilots(ctx context.Context, set Settings, run Runner, pool Pool, logf func(string, ...any)) (*Pilots, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if set.Pool == "" {
		return nil, errors.New("slurm: pool: empty")
	}
	if set.Partition == "" {
		return nil, errors.New("slurm: partition: must be set (the preemptible partition pilots run in)")
	}
	if set.Location == nil {
		set.Location = time.Local
	}
	p := &Pilots{set: set, run: run, pool: pool, now: time.Now, logf: logf, warned: map[string]bool{}, yielded: map[string]bool{}}
	out, err := run.Run(ctx, "scontrol", "show", "config")
	if err != nil {
		return nil, fmt.Errorf("slurm: reading the configuration: %w", err)
	}
	if p.conf, err = ParseConfig(out); err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	out, err = run.Run(ctx, "scontrol", "show", "partition", set.Partition, "-o")
	if err != nil {
		return nil, fmt.Errorf("slurm: partition %s: %w", set.Partition, err)
	}
	parts, err := ParsePartitions(out)
	if err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	if len(parts) != 1 || parts[0].Name != set.Partition {
		return nil, fmt.Errorf("slurm: partition %s: scontrol listed %d partitions", set.Partition, len(parts))
	}
	p.part = parts[0]
	if err := p.defaults(); err != nil {
		return nil, err
	}
	if err := p.writeScript(); err != nil {
		return nil, err
	}
	logf("slurm: pilots for pool %s in partition %s (GraceTime %v, PreemptMode %s, KillWait %v, bf_interval %v, Slurm %s); up to %d pending, %d in all, --time %s --time-min %s",
		set.Pool, p.part.Name, p.part.GraceTime, p.part.PreemptMode, p.conf.KillWait, p.conf.BackfillInterval, p.conf.Version,
		p.set.MaxPending, p.set.MaxPilots, FormatDuration(p.set.TimeLimit), FormatDuration(p.set.TimeMin))
	return p, nil
}

func (p *Pilots) defaults() error {
	s := &p.set
	mode := strings.ToUpper(p.part.PreemptMode)
	if s.QOS == "" && (mode == "" || mode == "OFF" || strings.Contains(p.conf.PreemptType, "none")) {
		return fmt.Errorf("slurm: partition %s: PreemptMode=%s, PreemptType=%s: %w until their time limit; make it preemptible (PreemptType=preempt/partition_prio, PreemptMode=CANCEL or REQUEUE, a GraceTime), or name a preemptible QOS (docs/slurm.md)",
			p.part.Name, p.part.PreemptMode, p.conf.PreemptType, ErrNotPreemptible)
	}
	if p.part.GraceTime == 0 {
		p.logf("slurm: warning: partition %s has GraceTime=0: a preempted pilot is killed at once and its trainers lose everything since their last checkpoint", p.part.Name)
	}
	if s.MaxPending == 0 {
		s.MaxPending = 4
	}
	if s.MaxPilots == 0 {
		s.MaxPilots = max(len(p.part.Nodes), 1)
	}
	if s.TimeLimit == 0 {
		s.TimeLimit = 2 * time.Hour
	}
	if s.TimeMin == 0 {
		s.TimeMin = min(10*time.Minute, s.TimeLimit)
	}
	if p.part.MaxTime > 0 && s.TimeLimit > p.part.MaxTime {
		p.logf("slurm: pilots' time limit %v exceeds partition %s's MaxTime %v: using MaxTime", s.TimeLimit, p.part.Name, p.part.MaxTime)
		s.TimeLimit = p.part.MaxTime
		s.TimeMin = min(s.TimeMin, s.TimeLimit)
	}
	if s.Lead == 0 {
		s.Lead = max(p.part.GraceTime, 30*time.Second)
	}
	if s.Interval == 0 {
		s.Interval = min(max(p.conf.BackfillInterval, 2*time.Second), 30*time.Second)
	}
	if s.IdleRelease == 0 {
		s.IdleRelease = 5 * time.Minute
	}
	if s.Yield == 0 {
		s.Yield = p.conf.BackfillInterval
	}
	switch {
	case s.MaxPending < 0, s.MaxPilots < 0:
		return errors.New("slurm: max_pending and max_pilots must be ≥ 0")
	case s.TimeMin > s.TimeLimit:
		return fmt.Errorf("slurm: time_min %v exceeds time %v", s.TimeMin, s.TimeLimit)
	case s.Lead >= s.TimeMin:
		return fmt.Errorf("slurm: the time-limit signal's lead %v must be shorter than time_min %v", s.Lead, s.TimeMin)
	}
	if s.Gleaner == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("slurm: the gleaner binary for pilots: %w", err)
		}
		s.Gleaner = exe
	}
	if !filepath.IsAbs(s.Gleaner) || strings.ContainsAny(s.Gleaner, " \t\n") {
		return fmt.Errorf("slurm: gleaner binary %q: want an absolute path without blanks (a pilot script's #! line runs it)", s.Gleaner)
	}
	if s.Dir == "" {
		return errors.New("slurm: dir: must be set (the pilots' script and logs)")
	}
	return nil
}

// StopTimeout is how long a pilot's agent may take to leave: the
// partition's GraceTime (or the time-limit lead) less a margin for the
// agent itself.
func (p *Pilots) StopTimeout() time.Duration {
	budget := p.part.GraceTime
	if budget == 0 || p.set.Lead < budget {
		budget = p.set.Lead
	}
	return max(budget-budget/5, time.Second)
}

// Partition is the partition as Slurm described it at start.
func (p *Pilots) Partition() Partition { return p.part }

// Cluster is Slurm's configuration as read at start.
func (p *Pilots) Cluster() Config { return p.conf }

// Settings are the settings in use, defaults filled in.
func (p *Pilots) Settings() Settings { return p.set }

// writeScript writes the pilot's batch script: a #! line that runs the
// gleaner binary itself, so no shell runs on the node. slurmd runs it as
// `gleaner slurm-pilot SCRIPT ARGS...`.
func (p *Pilots) writeScript() error {
	if err := os.MkdirAll(p.set.Dir, 0o755); err != nil {
		return fmt.Errorf("slurm: dir: %w", err)
	}
	p.script = filepath.Join(p.set.Dir, "pilot-"+p.set.Pool)
	body := "#!" + p.set.Gleaner + " " + PilotCommand + "\n" +
		"# A Gleaner pilot for pool " + p.set.Pool + ": runs `gleaner agent` on this node until\n" +
		"# Slurm preempts it or its time ends (docs/slurm.md). Arguments follow on sbatch's command line.\n"
	tmp := p.script + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o755); err != nil {
		return fmt.Errorf("slurm: pilot script: %w", err)
	}
	return os.Rename(tmp, p.script)
}

// SubmitArgs is the sbatch argv of one pilot.
func (p *Pilots) SubmitArgs() []string {
	s := p.set
	args := []string{"--parsable",
		"--job-name=" + JobName(s.Pool),
		"--comment=" + Comment(s.Pool),
		"--partition=" + s.Partition,
		"--nodes=1", "--ntasks=1", "--exclusive",
		"--time=" + FormatDuration(s.TimeLimit),
		"--time-min=" + FormatDuration(s.TimeMin),
		"--signal=B:TERM@" + strconv.Itoa(int(s.Lead/time.Second)),
		"--output=" + filepath.Join(s.Dir, "pilot-%j.log"),
		"--chdir=" + s.Dir,
	}
	if s.QOS != "" {
		args = append(args, "--qos="+s.QOS)
	}
	if s.Account != "" {
		args = append(args, "--account="+s.Account)
	}
	args = append(args, p.script, "--pool", s.Pool, "--stop-timeout", p.StopTimeout().String())
	return append(args, s.AgentArgs...)
}

// Pilots lists the pool's pilot jobs.
func (p *Pilots) Pilots(ctx context.Context) ([]Job, error) {
	out, err := p.run.Run(ctx, "squeue", "-h", "-a", "--name="+JobName(p.set.Pool), "-o", PilotFormat)
	if err != nil {
		return nil, err
	}
	return ParseJobs(out, p.set.Location)
}

// Step looks after the pilots once: it reads the pool's demand and the
// pilots, submits pilots up to MaxPending waiting while trials want more
// nodes, cancels waiting ones nobody wants (and running ones after
// IdleRelease without trials), and sends the pool fresh idle-time
// estimates of the running pilots' nodes.
func (p *Pilots) Step(ctx context.Context) (Status, error) {
	now := p.now()
	st := Status{At: now}
	d, err := p.pool.Demand(ctx)
	if err != nil {
		return st, fmt.Errorf("slurm: pool %s's demand: %w", p.set.Pool, err)
	}
	st.Demand = d
	if d.MaxGrace > 0 && p.part.GraceTime > 0 && d.MaxGrace > p.StopTimeout() && !p.warned["grace"] {
		p.warned["grace"] = true
		p.logf("slurm: warning: a trial's grace_period %v does not fit partition %s's GraceTime %v (a pilot's agent has %v to leave): a preempted trainer is killed before it checkpoints; shorten grace_period or raise GraceTime",
			d.MaxGrace, p.part.Name, p.part.GraceTime, p.StopTimeout())
	}
	jobs, err := p.Pilots(ctx)
	if err != nil {
		return st, fmt.Errorf("slurm: listing pilots: %w", err)
	}
	for _, j := range jobs {
		switch j.State {
		case "PENDING":
			st.Pending = append(st.Pending, j)
		case "RUNNING", "CONFIGURING":
			st.Running = append(st.Running, j)
		}
	}
	if d.Trials > 0 {
		p.lastNeeded = now
	}
	var cancel []string
	switch {
	case d.Trials == 0:
		for _, j := range st.Pending {
			cancel = append(cancel, j.ID)
		}
		if !p.lastNeeded.IsZero() && now.Sub(p.lastNeeded) >= p.set.IdleRelease {
			for _, j := range st.Running {
				cancel = append(cancel, j.ID)
			}
		}
	case len(st.Pending) > d.Wanted:
		// The newest waiting pilots go first: the oldest are the nearest
		// to starting.
		extra := st.Pending[d.Wanted:]
		slices.SortFunc(extra, func(a, b Job) int { return strings.Compare(b.ID, a.ID) })
		for _, j := range extra {
			cancel = append(cancel, j.ID)
		}
	}
	if len(cancel) > 0 {
		if _, err := p.run.Run(ctx, "scancel", cancel...); err != nil {
			return st, fmt.Errorf("slurm: cancelling pilots nobody needs: %w", err)
		}
		st.Cancelled = cancel
	}
	if d.Trials > 0 {
		n := min(d.Wanted-len(st.Pending), p.set.MaxPending-len(st.Pending), p.set.MaxPilots-len(st.Pending)-len(st.Running))
		for range max(n, 0) {
			out, err := p.run.Run(ctx, "sbatch", p.SubmitArgs()...)
			if err != nil {
				return st, fmt.Errorf("slurm: submitting a pilot: %w", err)
			}
			id, err := ParseJobID(out)
			if err != nil {
				return st, fmt.Errorf("slurm: %w", err)
			}
			st.Submitted = append(st.Submitted, id)
		}
	}
	if err := p.estimate(ctx, now, &st); err != nil {
		return st, err
	}
	if err := p.yield(ctx, now, &st); err != nil {
		return st, err
	}
	return st, nil
}

// yield tells the running pilots whose node a pending job or a
// reservation claims within Settings.Yield to leave now: each agent gets
// the SIGTERM of a preemption (the batch script only, as --signal=B:TERM
// sends it), leaves the pool and ends its job, and the batch job starts
// without waiting for Slurm to preempt the pilot. A pilot is told once;
// one that does not leave is preempted by Slurm as before.
func (p *Pilots) yield(ctx context.Context, now time.Time, st *Status) error {
	running := map[string]bool{}
	for _, j := range st.Running {
		running[j.ID] = true
	}
	for id := range p.yielded {
		if !running[id] {
			delete(p.yielded, id)
		}
	}
	if p.set.Yield < 0 {
		return nil
	}
	var ids []string
	for _, j := range st.Running {
		if p.yielded[j.ID] {
			continue
		}
		for _, node := range j.Nodes {
			if e := st.Estimates[node]; e.Claimed && !e.Until.After(now.Add(p.set.Yield)) {
				ids = append(ids, j.ID)
				p.logf("slurm: pilot %s yields node %s to %s, planned at %s", j.ID, node, e.Why, e.Until.In(p.set.Location).Format("15:04:05"))
				break
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := p.run.Run(ctx, "scancel", append([]string{"--batch", "--signal=TERM"}, ids...)...); err != nil {
		return fmt.Errorf("slurm: telling pilots %s to yield their nodes: %w", strings.Join(ids, " "), err)
	}
	for _, id := range ids {
		p.yielded[id] = true
	}
	st.Yielded = ids
	return nil
}

// estimate reads the backfill plan and reservations and sends the pool
// each running pilot's node's expected idle end, when it changed.
func (p *Pilots) estimate(ctx context.Context, now time.Time, st *Status) error {
	st.Estimates = map[string]Estimate{}
	until := map[string]time.Time{}
	if len(st.Running) > 0 {
		out, err := p.run.Run(ctx, "squeue", "-h", "-a", "--start", "--states=PENDING", "-o", PlanFormat)
		if err != nil {
			return fmt.Errorf("slurm: reading the backfill plan: %w", err)
		}
		plan, err := ParsePlan(out, p.set.Location)
		if err != nil {
			return fmt.Errorf("slurm: %w", err)
		}
		out, err = p.run.Run(ctx, "scontrol", "show", "reservation", "-o")
		if err != nil {
			return fmt.Errorf("slurm: reading reservations: %w", err)
		}
		resv, err := ParseReservations(out, p.set.Location)
		if err != nil {
			return fmt.Errorf("slurm: %w", err)
		}
		for _, j := range st.Running {
			for _, node := range j.Nodes {
				e := IdleUntil(node, now, j.End, p.set.Partition, plan, resv)
				st.Estimates[node] = e
				if !e.Until.IsZero() {
					until[node] = e.Until
				}
			}
		}
	}
	if p.sent != nil && maps.EqualFunc(p.sent, until, time.Time.Equal) {
		return nil
	}
	if err := p.pool.SetIdleUntil(ctx, until); err != nil {
		return fmt.Errorf("slurm: sending idle-time estimates to pool %s: %w", p.set.Pool, err)
	}
	p.sent = until
	return nil
}

// Run looks after the pilots every Interval until ctx ends, then cancels
// every pilot of the pool (Shutdown). A failed round is logged and tried
// again at the next. report, if not nil, gets each round's Status.
func (p *Pilots) Run(ctx context.Context, report func(Status, error)) error {
	t := time.NewTicker(p.set.Interval)
	defer t.Stop()
	for {
		st, err := p.Step(ctx)
		if err != nil && ctx.Err() == nil {
			p.logf("%v (trying again in %v)", err, p.set.Interval)
		}
		if report != nil {
			report(st, err)
		}
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return p.Shutdown(sctx)
		case <-t.C:
		}
	}
}

// Shutdown cancels every pilot of the pool, running or pending: their
// agents get SIGTERM and leave the pool, their trainers checkpoint.
func (p *Pilots) Shutdown(ctx context.Context) error {
	if _, err := p.run.Run(ctx, "scancel", "--name="+JobName(p.set.Pool), "--partition="+p.set.Partition); err != nil {
		return fmt.Errorf("slurm: cancelling pool %s's pilots: %w", p.set.Pool, err)
	}
	p.logf("slurm: cancelled pool %s's pilots", p.set.Pool)
	return nil
}
