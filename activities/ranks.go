package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/trial"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// A run on several hosts (RunTrialInput.Hosts) is one RunTrial per host.
// Rank 0 is the run as on one host — the ledger, the reports, progress,
// checkpoints — and, before it launches, writes the rendezvous file into
// the run's directory on the shared data directory: its address, a free
// port on its host and the checkpoint every rank resumes from. Every
// other rank waits for that file, launches its trainer with the same
// rendezvous, and follows it until it exits or the run is stopped.

// RendezvousFileName is rank 0's rendezvous, in the run's directory.
const RendezvousFileName = "rendezvous.json"

// RendezvousTimeout is how long a rank waits for rank 0's rendezvous file
// before it fails, naming the data directory it looked in: rank 0 that
// never started is the trial's business (the run is stopped), a file that
// never appears is a data directory that is not shared.
const RendezvousTimeout = 2 * time.Minute

// rendezvousFile is what rank 0 writes.
type rendezvousFile struct {
	Run        int    `json:"run"`
	Owner      string `json:"owner,omitempty"`
	MasterAddr string `json:"master_addr"`
	MasterPort int    `json:"master_port"`
	ResumeFrom string `json:"resume_from,omitempty"`
}

// localNodes are the run's nodes on this host.
func (r *runner) localNodes() []string {
	if len(r.in.Hosts) == 0 {
		return r.in.Nodes
	}
	return r.in.Hosts[r.in.Rank].Nodes
}

// rendezvous is this rank's place in the run, with master's address and
// port.
func (r *runner) rendezvous(masterAddr string, port int) *trial.Rendezvous {
	rv := &trial.Rendezvous{
		NodeRank: r.in.Rank, NumHosts: max(len(r.in.Hosts), 1), Nodes: len(r.in.Nodes),
		LocalNodes: len(r.localNodes()), HostAddr: r.a.hostAddr(), MasterAddr: masterAddr, MasterPort: port,
	}
	for _, h := range r.in.Hosts[:min(r.in.Rank, len(r.in.Hosts))] {
		rv.NodeOffset += len(h.Nodes)
	}
	return rv
}

// publishRendezvous picks rank 0's port and, for a run on several hosts,
// writes the rendezvous file the other ranks wait for.
func (r *runner) publishRendezvous(resume string) (*trial.Rendezvous, error) {
	addr := r.a.hostAddr()
	if len(r.in.Hosts) < 2 {
		addr = "127.0.0.1" // one host: its processes meet on loopback
	}
	port, err := freePort(addr)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: a free port on %s: %w", addr, err)
	}
	rv := r.rendezvous(addr, port)
	if rv.NumHosts == 1 {
		return rv, nil
	}
	f := rendezvousFile{Run: r.in.Run, Owner: r.in.Owner, MasterAddr: addr, MasterPort: port, ResumeFrom: resume}
	if err := os.MkdirAll(r.runDir, 0o755); err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	if err := writeJSONAtomic(filepath.Join(r.runDir, RendezvousFileName), f); err != nil {
		return nil, fmt.Errorf("rendezvous: %w", err)
	}
	return rv, nil
}

func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runRank runs rank r > 0 of a run on several hosts.
func (r *runner) runRank(ctx context.Context) (workflows.RunTrialResult, error) {
	in := r.in
	if k, ok := r.a.Launcher.(leftoverKiller); ok {
		pids, err := k.KillLeftovers(r.ckptDir)
		if len(pids) > 0 {
			r.log.Warn("killed processes an earlier run of the trial left behind", "trial", in.Trial.TrialID, "pids", pids)
		}
		if err != nil {
			return workflows.RunTrialResult{}, fmt.Errorf("trial %s: %w", in.Trial.TrialID, err)
		}
	}
	stop := r.stopping(ctx)
	rf, err := r.awaitRendezvous(ctx, stop)
	if errors.Is(err, errStopped) {
		return workflows.RunTrialResult{Outcome: workflows.RunStopped, Attempt: r.attempt}, nil
	}
	if err != nil {
		return workflows.RunTrialResult{}, err
	}
	spec, err := r.spec(rf.ResumeFrom)
	if err != nil {
		return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidTrial, err)
	}
	spec.RunDir = filepath.Join(r.runDir, "rank-"+strconv.Itoa(in.Rank))
	spec.Rendezvous = r.rendezvous(rf.MasterAddr, rf.MasterPort)
	r.logMark = markLog(filepath.Join(spec.RunDir, cluster.LogFileName)) // logtail.go
	proc, err := r.a.Launcher.Launch(ctx, spec)
	if err != nil {
		msg := fmt.Sprintf("trial %s: rank %d: %v (working directory %s)", in.Trial.TrialID, in.Rank, err, spec.WorkDir)
		if errors.Is(err, cluster.ErrNotAllowed) { // refused by the host's --allow-command / --trainer-env-deny
			return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(msg, workflows.ErrTypeInvalidTrial, nil)
		}
		return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(msg, ErrTypeLaunchFailed, nil)
	}
	beat := time.NewTicker(r.a.heartbeatInterval())
	defer beat.Stop()
	for {
		select {
		case <-proc.Done():
			exit := proc.Exit()
			if r.a.leaving() {
				return workflows.RunTrialResult{Outcome: workflows.RunStopped, Exit: exit, Attempt: r.attempt}, nil
			}
			if !exit.OK() {
				msg := fmt.Sprintf("trial %s: rank %d: trainer exited with %s (log: %s)", in.Trial.TrialID, in.Rank, describe(exit), proc.LogFile()) + r.logMark.tail(proc.LogFile())
				return workflows.RunTrialResult{}, temporal.NewNonRetryableApplicationError(msg, ErrTypeTrainerFailed, nil)
			}
			return workflows.RunTrialResult{Outcome: workflows.RunCompleted, Exit: exit, Attempt: r.attempt}, nil
		case <-stop:
			exit := proc.Stop(in.Trial.GracePeriod)
			return workflows.RunTrialResult{Outcome: workflows.RunStopped, Exit: exit, Attempt: r.attempt}, nil
		case <-beat.C:
			activity.RecordHeartbeat(ctx, r.st)
		}
	}
}

// errStopped: the run was stopped while a rank waited for rank 0.
var errStopped = errors.New("stopped")

// awaitRendezvous waits, heartbeating, for rank 0's rendezvous file of
// this run, or until stop is closed (errStopped). Rank 0 may first wait
// for an earlier attempt to stop (its grace period): the wait allows it.
func (r *runner) awaitRendezvous(ctx context.Context, stop <-chan struct{}) (rendezvousFile, error) {
	path := filepath.Join(r.runDir, RendezvousFileName)
	deadline := r.a.now().Add(RendezvousTimeout + r.in.Trial.GracePeriod)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			var f rendezvousFile
			if err := json.Unmarshal(b, &f); err != nil {
				return f, fmt.Errorf("trial %s: rank %d: %s: %w", r.in.Trial.TrialID, r.in.Rank, path, err)
			}
			if f.Run == r.in.Run && (f.Owner == "" || r.in.Owner == "" || f.Owner == r.in.Owner) {
				return f, nil
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return rendezvousFile{}, fmt.Errorf("trial %s: rank %d: %w", r.in.Trial.TrialID, r.in.Rank, err)
		}
		if r.a.now().After(deadline) {
			h := r.in.Hosts[0]
			msg := fmt.Sprintf("trial %s: rank %d: rank 0 (agent %s) wrote no %s in %s within %v (it did not start, or the data directory %s is not the one agent %s sees)",
				r.in.Trial.TrialID, r.in.Rank, h.Agent, RendezvousFileName, r.runDir, RendezvousTimeout+r.in.Trial.GracePeriod, r.a.DataDir, h.Agent)
			return rendezvousFile{}, temporal.NewNonRetryableApplicationError(msg, ErrTypeLaunchFailed, nil)
		}
		select {
		case <-stop:
			return rendezvousFile{}, errStopped
		case <-tick.C:
			activity.RecordHeartbeat(ctx, r.st)
		}
	}
}

// stopping is closed when the run must stop: the activity is cancelled,
// or, on an agent (StopOnWorkerStop), its worker is stopping.
func (r *runner) stopping(ctx context.Context) <-chan struct{} {
	if !r.a.StopOnWorkerStop {
		return ctx.Done()
	}
	ch := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-activity.GetWorkerStopChannel(ctx):
		}
		close(ch)
	}()
	return ch
}

// AgentLease runs on an agent for as long as the pool counts it live
// (docs/cluster.md): it heartbeats until the pool cancels it, the agent's
// worker stops (the agent leaves), or it has run AgentLeaseRenew.
func (a *Activities) AgentLease(ctx context.Context, in workflows.AgentLeaseInput) (workflows.AgentLeaseResult, error) {
	if in.Refused != "" {
		if a.OnRefused != nil {
			a.OnRefused(in.Refused)
		}
		return workflows.AgentLeaseResult{}, nil
	}
	if a.Incarnation != "" && in.Incarnation != a.Incarnation {
		return workflows.AgentLeaseResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("agent %s: lease for start %s, this is start %s", in.Agent, in.Incarnation, a.Incarnation), workflows.ErrTypeStaleLease, nil)
	}
	// Four beats per heartbeat timeout: every beat is a write to the
	// pool's workflow on the server, so no more often than that.
	every := time.Second
	if t := activity.GetInfo(ctx).HeartbeatTimeout; t/4 > every {
		every = t / 4
	}
	beat := time.NewTicker(every)
	defer beat.Stop()
	renew := time.NewTimer(workflows.AgentLeaseRenew)
	defer renew.Stop()
	alive := func() {
		activity.RecordHeartbeat(ctx)
		if a.OnLease != nil {
			a.OnLease()
		}
	}
	alive()
	for {
		select {
		case <-ctx.Done():
			// Cancelled by the pool (it then ignores the result), or by a
			// heartbeat the server did not take in time: ask for a new one.
			return workflows.AgentLeaseResult{Renew: true}, nil
		case <-activity.GetWorkerStopChannel(ctx):
			return workflows.AgentLeaseResult{}, nil
		case <-renew.C:
			return workflows.AgentLeaseResult{Renew: true}, nil
		case <-beat.C:
			alive()
		}
	}
}
