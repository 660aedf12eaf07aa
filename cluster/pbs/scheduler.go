package pbs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// JobName is the name (-N) of a pool's pilot jobs; Pilots and CancelAll
// find them by it.
func JobName(pool string) string { return "gleaner-pilot." + pool }

// PilotCommand is the hidden gleaner subcommand a pilot job runs.
const PilotCommand = "pbs-pilot"

// EnvBin names, in a pilot's environment, the folder of PBS's commands
// (Settings.Bin).
const EnvBin = "GLEANER_PBS_BIN"

// Scheduler is PBS as pilot.Scheduler: qsub, qstat, qdel, qsig and
// pbs_rstat for one pool's pilots in one queue.
type Scheduler struct {
	set    Settings
	run    Runner
	queue  Queue
	server Server
	sched  Sched
	vnodes int
	// here: every vnode a pilot may run on is this machine's (a
	// one-machine cluster).
	here bool
}

// sameHost reports whether host names a and b are one host (one may be
// the other's short name).
func sameHost(a, b string) bool {
	short := func(h string) string { s, _, _ := strings.Cut(h, "."); return s }
	return a != "" && strings.EqualFold(short(a), short(b))
}

// isThisHost reports whether a mom's host is this machine: by name, or
// every address its name resolves to is a loopback one or one of this
// machine's (a one-machine cluster's mom is often named apart from the
// host, as cluster.sh's gleaner-pbs is on a host named otherwise).
func isThisHost(mom, hostname string, local map[string]bool) bool {
	if sameHost(mom, hostname) {
		return true
	}
	ips, err := net.LookupHost(mom)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err != nil || (!a.IsLoopback() && !local[a.Unmap().String()]) {
			return false
		}
	}
	return true
}

// localAddrs are this machine's interface addresses.
func localAddrs() map[string]bool {
	out := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap().String()] = true
		}
	}
	return out
}

var _ pilot.Scheduler = (*Scheduler)(nil)

// Errors of the checks at start.
var (
	// ErrNotPreemptible: the queue's pilots could delay batch jobs or
	// other pilots could never be taken back.
	ErrNotPreemptible = errors.New("pilots there could delay batch jobs")
	// ErrSuspends: a preempted pilot would be suspended, its trainer
	// frozen on the node.
	ErrSuspends = errors.New("a preempted pilot would be suspended, its trainer frozen holding the node's memory and GPUs")
)

// NewPilots checks the cluster (NewScheduler) and returns the pilot
// policy over it (Scheduler.Policy). logf prints progress and warnings
// (nil: none).
func NewPilots(ctx context.Context, set Settings, run Runner, pool pilot.Pool, logf func(string, ...any)) (*pilot.Pilots, error) {
	s, err := NewScheduler(ctx, set, run, logf)
	if err != nil {
		return nil, err
	}
	return s.Policy(pool, logf)
}

// Policy is the pilot policy over s for pool: its settings' defaults
// follow from Limits, its times print in PBS's time zone. It logs what it
// found and chose.
func (s *Scheduler) Policy(pool pilot.Pool, logf func(string, ...any)) (*pilot.Pilots, error) {
	logf = quiet(logf)
	pset := s.set.Pilots
	pset.Location = cmp.Or(pset.Location, s.set.Location)
	p, err := pilot.New(pset, s.Limits(), s, pool, logf)
	if err == nil {
		set := p.Settings()
		logf("pbs: pool %s's pilots: up to %d queued, %d in all; min_walltime %s, max_walltime %s", set.Pool, set.MaxPending, set.MaxPilots,
			FormatDuration(set.TimeMin), FormatDuration(set.TimeLimit))
	}
	return p, err
}

// quiet is logf, or a logf printing nothing.
func quiet(logf func(string, ...any)) func(string, ...any) {
	if logf != nil {
		return logf
	}
	return func(string, ...any) {}
}

// NewScheduler checks the cluster: the queue exists and is an enabled,
// started execution queue below preempt_queue_prio; preempt_order never
// suspends; its kill_delay, walltime limit and vnodes. logf prints
// warnings (nil: none).
func NewScheduler(ctx context.Context, set Settings, run Runner, logf func(string, ...any)) (*Scheduler, error) {
	logf = quiet(logf)
	switch {
	case set.Pilots.Pool == "":
		return nil, errors.New("pbs: pool: empty")
	case set.Queue == "":
		return nil, errors.New("pbs: queue: must be set (the preemptible queue pilots run in)")
	case set.Dir == "":
		return nil, errors.New("pbs: dir: must be set (the pilots' output)")
	}
	if set.Location == nil {
		set.Location = time.Local
	}
	if set.Place == "" {
		set.Place = "excl"
	}
	if n, rest, ok := strings.Cut(set.Select, ":"); ok && strings.TrimLeft(n, "0123456789") == "" {
		if n != "1" {
			return nil, fmt.Errorf("pbs: select %q: a pilot is one chunk (select=1:...)", set.Select)
		}
		set.Select = rest
	}
	s := &Scheduler{set: set, run: run}
	out, err := run.Run(ctx, nil, "qmgr", "-c", "list server")
	if err != nil {
		return nil, fmt.Errorf("pbs: reading the server's configuration: %w", err)
	}
	if s.server, err = ParseServer(out); err != nil {
		return nil, fmt.Errorf("pbs: %w", err)
	}
	out, err = run.Run(ctx, nil, "qmgr", "-c", "list queue "+set.Queue)
	if err != nil {
		return nil, fmt.Errorf("pbs: queue %s: %w", set.Queue, err)
	}
	if s.queue, err = ParseQueue(out); err != nil {
		return nil, fmt.Errorf("pbs: %w", err)
	}
	if s.sched, err = s.readSched(ctx); err != nil {
		return nil, err
	}
	// -av: every vnode. `pbsnodes -a` lists hosts only where a mom
	// reports several vnodes (OpenPBS 23: one entry, ncpus the sum).
	out, err = run.Run(ctx, nil, "pbsnodes", "-av", "-F", "json")
	if err != nil {
		return nil, fmt.Errorf("pbs: listing the vnodes: %w", err)
	}
	vnodes, err := ParseVnodes(out)
	if err != nil {
		return nil, fmt.Errorf("pbs: %w", err)
	}
	eligible := Eligible(vnodes, set.Queue, set.Select)
	s.vnodes = len(eligible)
	host, _ := os.Hostname()
	local := localAddrs()
	s.here = len(eligible) > 0 && !slices.ContainsFunc(eligible, func(v Vnode) bool { return !isThisHost(v.Mom, host, local) })
	if err := s.check(logf); err != nil {
		return nil, err
	}
	logf("pbs: queue %s: priority %d, kill_delay %v; %d vnodes for pilots; preempt_order %s (%s); scheduler_iteration %v; PBS %s",
		s.queue.Name, s.queue.Priority, s.queue.KillDelay, s.vnodes, s.sched.PreemptOrder, s.sched.Source, s.server.SchedulerIteration, s.server.Version)
	return s, nil
}

// readSched reads the preemption settings: qmgr's sched object, else the
// sched_config file.
func (s *Scheduler) readSched(ctx context.Context) (Sched, error) {
	out, qerr := s.run.Run(ctx, nil, "qmgr", "-c", "list sched")
	if qerr == nil {
		sc, err := ParseSched(out)
		if err != nil {
			return sc, fmt.Errorf("pbs: %w", err)
		}
		if sc.PreemptOrder != "" {
			return sc, nil
		}
	}
	path := s.set.SchedConfig
	if path == "" {
		path = filepath.Join(pbsHome(), "sched_priv", "sched_config")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if qerr == nil {
			qerr = errors.New("no preempt_order")
		}
		return Sched{}, fmt.Errorf("pbs: the scheduler's preempt_order: %v; %v: name the sched_config file the scheduler reads (PBS's default preempt_order SCR suspends pilots; docs/pbs.md)", qerr, err)
	}
	sc, err := ParseSchedConfig(b, path)
	if err != nil {
		return sc, fmt.Errorf("pbs: %w", err)
	}
	if sc.PreemptOrder == "" {
		sc.PreemptOrder = "SCR" // PBS's default
	}
	return sc, nil
}

// pbsHome is $PBS_HOME, else PBS_HOME in $PBS_CONF_FILE or /etc/pbs.conf,
// else /var/spool/pbs.
func pbsHome() string {
	if h := os.Getenv("PBS_HOME"); h != "" {
		return h
	}
	conf := os.Getenv("PBS_CONF_FILE")
	if conf == "" {
		conf = "/etc/pbs.conf"
	}
	if b, err := os.ReadFile(conf); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PBS_HOME="); ok {
				return v
			}
		}
	}
	return "/var/spool/pbs"
}

// check refuses a queue whose pilots could delay batch jobs or be
// suspended, warns of one whose pilots are killed at once or preempted by
// express jobs only, and fills in the binary.
func (s *Scheduler) check(logf func(string, ...any)) error {
	q, sc := s.queue, s.sched
	switch {
	case !strings.EqualFold(q.Type, "Execution"):
		return fmt.Errorf("pbs: queue %s: queue_type %s: want an execution queue (pilots are found in it)", q.Name, q.Type)
	case !q.Enabled || !q.Started:
		return fmt.Errorf("pbs: queue %s: enabled %v, started %v: pilots would never run; qmgr -c 'set queue %s enabled = True, started = True'", q.Name, q.Enabled, q.Started, q.Name)
	case q.Priority >= sc.PreemptQueuePrio:
		return fmt.Errorf("pbs: queue %s: priority %d ≥ preempt_queue_prio %d: an express queue, whose jobs preempt batch jobs; %w: give it a priority below %d (docs/pbs.md)",
			q.Name, q.Priority, sc.PreemptQueuePrio, ErrNotPreemptible, sc.PreemptQueuePrio)
	}
	methods, err := PreemptMethods(sc.PreemptOrder)
	if err != nil {
		return fmt.Errorf("pbs: the scheduler's preempt_order (%s): %w", sc.Source, err)
	}
	var takesBack bool
	for _, m := range methods {
		if strings.Contains(m, "S") {
			return fmt.Errorf("pbs: the scheduler's preempt_order is %q (%s): %w; set it without S: qmgr -c 'set sched preempt_order = R' (requeue) or \"D\" (delete), or preempt_order: \"R\" in sched_config (docs/pbs.md)",
				sc.PreemptOrder, sc.Source, ErrSuspends)
		}
		takesBack = takesBack || strings.ContainsAny(m, "RD")
	}
	if !takesBack {
		logf("pbs: warning: preempt_order %q has neither R nor D: a pilot is preempted only if PBS can checkpoint it (a site checkpoint script); set preempt_order = R", sc.PreemptOrder)
	}
	if len(q.SoftLimits) == 0 {
		logf("pbs: warning: queue %s has no soft limits (max_run_soft): its pilots are normal_jobs like batch jobs, so only express jobs (queues at priority ≥ %d) preempt them (preempt_prio %q); docs/pbs.md", q.Name, sc.PreemptQueuePrio, sc.PreemptPrio)
	}
	if q.KillDelay == 0 {
		logf("pbs: warning: queue %s has kill_delay 0: a preempted pilot is killed at once and its trainers lose everything since their last checkpoint", q.Name)
	}
	if s.vnodes == 0 {
		return fmt.Errorf("pbs: no vnode a pilot in queue %s could run on (pbsnodes -av; select %q)", q.Name, s.set.Select)
	}
	err = nil
	if s.set.Gleaner == "" {
		s.set.Gleaner, err = os.Executable()
	}
	if err != nil || !filepath.IsAbs(s.set.Gleaner) {
		return fmt.Errorf("pbs: the gleaner binary for pilots (%q): want an absolute path, the same on the nodes: %v", s.set.Gleaner, err)
	}
	return nil
}

// Eligible are the vnodes a pilot could run on: vnodes with cpus, tied to
// no queue or to queue, whose resources_available meet chunk's: a count
// (ngpus=4) at least, a word (system=polaris) the same where the vnode
// lists the resource. Sizes (mem=64gb) are not checked.
func Eligible(vnodes []Vnode, queue, chunk string) []Vnode {
	var out []Vnode
next:
	for _, v := range vnodes {
		if n, _ := strconv.Atoi(v.Available["ncpus"]); n < 1 || (v.Queue != "" && v.Queue != queue) {
			continue
		}
		for _, res := range strings.Split(chunk, ":") {
			k, want, _ := strings.Cut(res, "=")
			have, listed := v.Available[k]
			if w, err := strconv.ParseFloat(want, 64); err == nil {
				if h, _ := strconv.ParseFloat(have, 64); h < w {
					continue next
				}
			} else if listed && strings.TrimLeft(want, "0123456789.") == want && !strings.EqualFold(have, want) {
				continue next
			}
		}
		out = append(out, v)
	}
	return out
}

// Limits are what the policy's defaults follow from: the vnodes, the
// walltime limit, kill_delay and scheduler_iteration (at most a minute:
// PBS also plans at every job's submission and end).
func (s *Scheduler) Limits() pilot.Limits {
	maxTime, maxSetting := s.queue.MaxWalltime, "queue "+s.queue.Name+"'s resources_max.walltime"
	if maxTime == 0 {
		maxTime, maxSetting = s.server.MaxWalltime, "the server's resources_max.walltime"
	}
	cycle := s.server.SchedulerIteration
	if cycle == 0 || cycle > time.Minute {
		cycle = time.Minute
	}
	return pilot.Limits{
		Nodes: s.vnodes, MaxTime: maxTime, Grace: s.queue.KillDelay, Cycle: cycle, NodesHere: s.here,
		MaxTimeSetting: maxSetting,
		GraceSetting:   "queue " + s.queue.Name + "'s kill_delay",
	}
}

// Queue is the pilots' queue as PBS described it at start.
func (s *Scheduler) Queue() Queue { return s.queue }

// Sched is the scheduler's preemption configuration as read at start.
func (s *Scheduler) Sched() Sched { return s.sched }

// Name implements pilot.Scheduler.
func (s *Scheduler) Name() string { return "pbs" }

// SubmitArgs is the qsub argv of one pilot asking for req: one chunk,
// shrink-to-fit between TimeMin and Time (a plain walltime when they are
// equal), rerunnable (so preempt_order R requeues it), running `gleaner
// pbs-pilot` with the agent's arguments and no shell.
func (s *Scheduler) SubmitArgs(req pilot.Request) []string {
	sel := "select=" + strconv.Itoa(req.Nodes)
	if s.set.Select != "" {
		sel += ":" + s.set.Select
	}
	if req.GPUs > 0 {
		sel += ":ngpus=" + strconv.Itoa(req.GPUs)
	}
	args := []string{"-q", s.set.Queue, "-N", JobName(s.set.Pilots.Pool), "-l", sel, "-l", "place=" + s.set.Place}
	if req.TimeMin > 0 && req.TimeMin < req.Time {
		args = append(args, "-l", "min_walltime="+FormatDuration(req.TimeMin), "-l", "max_walltime="+FormatDuration(req.Time))
	} else {
		args = append(args, "-l", "walltime="+FormatDuration(req.Time))
	}
	if s.set.Account != "" {
		args = append(args, "-A", s.set.Account)
	}
	args = append(args, "-r", "y", "-j", "oe", "-o", s.set.Dir+string(filepath.Separator))
	// -v: variables for the job. A name alone takes its value from
	// qsub's environment (req.Env, so no secret is on a command line).
	var vars []string
	if s.set.Bin != "" {
		vars = append(vars, EnvBin+"="+s.set.Bin)
	}
	for _, kv := range req.Env {
		name, _, _ := strings.Cut(kv, "=")
		vars = append(vars, name)
	}
	if len(vars) > 0 {
		args = append(args, "-v", strings.Join(vars, ","))
	}
	args = append(args, s.set.QsubArgs...)
	args = append(args, "--", s.set.Gleaner, PilotCommand)
	return append(args, req.Agent...)
}

// Submit implements pilot.Scheduler with qsub.
func (s *Scheduler) Submit(ctx context.Context, req pilot.Request) (string, error) {
	if err := os.MkdirAll(s.set.Dir, 0o755); err != nil {
		return "", fmt.Errorf("the pilots' output folder: %w", err)
	}
	out, err := s.run.Run(ctx, req.Env, "qsub", s.SubmitArgs(req)...)
	if err != nil {
		return "", err
	}
	return ParseJobID(out)
}

// jobs lists the jobs of the pilots' queue (or, queue empty, every job).
func (s *Scheduler) jobs(ctx context.Context, queue string) ([]Job, error) {
	args := []string{"-f", "-F", "json"}
	if queue != "" {
		args = append(args, queue)
	}
	out, err := s.run.Run(ctx, nil, "qstat", args...)
	if err != nil {
		return nil, err
	}
	return ParseJobs(out, s.set.Location)
}

// Pilots implements pilot.Scheduler with qstat: the pool's jobs in the
// queue, by name.
func (s *Scheduler) Pilots(ctx context.Context) ([]pilot.Job, error) {
	jobs, err := s.jobs(ctx, s.set.Queue)
	if err != nil {
		return nil, err
	}
	var ps []pilot.Job
	for _, j := range jobs {
		if j.Name == JobName(s.set.Pilots.Pool) {
			ps = append(ps, pilot.Job{ID: j.ID, State: pilotState(j.State), Nodes: j.Nodes, End: j.End})
		}
	}
	return ps, nil
}

// Cancel implements pilot.Scheduler with qdel; jobs already gone are no
// error.
func (s *Scheduler) Cancel(ctx context.Context, ids []string) error {
	if _, err := s.run.Run(ctx, nil, "qdel", ids...); err != nil && !gone(err) {
		return err
	}
	return nil
}

// CancelAll implements pilot.Scheduler: qselect finds the pool's jobs in
// the queue by name, qdel ends them.
func (s *Scheduler) CancelAll(ctx context.Context) error {
	out, err := s.run.Run(ctx, nil, "qselect", "-q", s.set.Queue, "-N", JobName(s.set.Pilots.Pool))
	if err != nil {
		return err
	}
	ids := strings.Fields(string(out))
	for _, id := range ids {
		if !validJobID(id) {
			return &ParseError{Command: "qselect", Value: id, Reason: "want job ids, one a line"}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return s.Cancel(ctx, ids)
}

// Signal implements pilot.Scheduler with qsig -s (TERM by name, others
// by number): PBS signals the job's processes, the agent among them. Jobs
// already gone are no error.
func (s *Scheduler) Signal(ctx context.Context, sig syscall.Signal, ids []string) error {
	name := strconv.Itoa(int(sig))
	if sig == syscall.SIGTERM {
		name = "TERM"
	}
	if _, err := s.run.Run(ctx, nil, "qsig", append([]string{"-s", name}, ids...)...); err != nil && !gone(err) {
		return err
	}
	return nil
}

// Plan implements pilot.Scheduler: the queued jobs' estimated starts and
// vnodes (qstat -f -F json) and the reservations (pbs_rstat -f), as
// Claims.
func (s *Scheduler) Plan(ctx context.Context) ([]pilot.Claim, error) {
	jobs, err := s.jobs(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("the scheduler's plan: %w", err)
	}
	out, err := s.run.Run(ctx, nil, "pbs_rstat", "-f")
	if err != nil {
		return nil, fmt.Errorf("reservations: %w", err)
	}
	resv, err := ParseReservations(out, s.set.Location)
	if err != nil {
		return nil, err
	}
	return Claims(jobs, resv, s.set.Queue), nil
}

// PilotNode is the vnode a running pilot's agent offers: the first of
// its job's exec_vnode (qstat -f -F json JOBID, run on the node).
func PilotNode(ctx context.Context, run Runner, jobID string) (string, error) {
	j, err := PilotJob(ctx, run, jobID)
	if err != nil {
		return "", err
	}
	if len(j.Nodes) == 0 {
		return "", fmt.Errorf("qstat -f -F json %s: the job has no exec_vnode", jobID)
	}
	return j.Nodes[0], nil
}
