package activities

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/jpa"
	"github.com/gleaner-hpc/gleaner/nas"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Activities holds what the activities need. Zero durations take the
// documented defaults.
type Activities struct {
	// Client signals workflows (progress to trials, registrations to
	// pools).
	Client client.Client
	// Launcher starts trainers.
	Launcher Launcher
	// Sources maps a pool's name to its node source; Default serves pools
	// not in the map.
	Sources map[string]NodeSource
	Default NodeSource
	// DataDir holds checkpoints and run directories:
	// DataDir/<campaign>/<trial>/checkpoints and …/runs/<run>.
	DataDir string
	// TaskQueue is where pools started by RegisterTrial run.
	TaskQueue string
	// Pool is the configuration of pools started by RegisterTrial.
	Pool workflows.PoolInput
	// Library is the JPA's prior of profiled models (may be nil): a
	// worker's --prior-curves.
	Library []jpa.PriorCurve
	// Speeds are single-node throughputs per model and node type (a
	// worker's --gpu-ratios, Gavel's table; may be nil): a trial measured
	// on one type is predicted on another by their median ratio.
	Speeds *jpa.TypeSpeeds
	// ArchPrior predicts a NAS trial's throughput curve from its
	// architecture (RegisterTrial.Arch) before anything is measured of it
	// (jpa.Query.Prior; a *nas.ThroughputModel is one), with
	// log-uncertainty ArchPriorSigma (0: jpa.DefaultPriorSigma). Nil:
	// unmeasured trials start from siblings or n^0.9. An architecture it
	// cannot price (another space than it was fitted on) gets no prior.
	ArchPrior      ArchPrior
	ArchPriorSigma float64
	// calibration scales ArchPrior's predictions in a trial's predicted
	// metrics by what the pool's trials measured (Allocate observes
	// them; predictedMetrics reads it).
	calibration nas.Calibration
	// ProgressInterval is how often RunTrial forwards progress to its
	// trial (default 2s); HeartbeatInterval how often it heartbeats
	// (default 250ms, so a cancellation reaches it quickly).
	ProgressInterval  time.Duration
	HeartbeatInterval time.Duration
	// ProgressTimeout bounds one progress signal (default 5s): while the
	// server is away a signal would otherwise wait until it is back.
	ProgressTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	// HostAddr is the address other hosts reach this one at: rank 0's
	// rendezvous address (default 127.0.0.1, one host). SocketIfname is
	// the interface holding it, for GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME.
	HostAddr     string
	SocketIfname string
	// StopOnWorkerStop makes a stopping worker stop its trainers at once
	// (SIGTERM, the grace period) rather than after its stop timeout: an
	// agent that leaves.
	StopOnWorkerStop bool
	// Leaving, when closed, says the host is being given back (the agent
	// got SIGTERM): a trainer that exits from then on was stopped (a batch
	// scheduler signals every process of the job), not finished.
	Leaving <-chan struct{}
	// Incarnation is this agent's start (AgentJoin.Incarnation); a lease
	// for another start ends at once. OnRefused is told when the pool
	// refuses the agent (AgentLeaseInput.Refused).
	Incarnation string
	OnRefused   func(reason string)
	// OnLease is told at every heartbeat of this agent's lease: the pool
	// counts it live.
	OnLease func()

	locksMu sync.Mutex
	locks   map[string]*trialLock
	// gate keeps one trainer at a time on a node (gate.go).
	gate nodeGate
}

// trialLock serialises the attempts of one trial within this process.
type trialLock struct {
	ch   chan struct{}
	refs int
}

// lockTrial waits, calling beat every heartbeat interval, until no other
// attempt of the trial whose directory is dir runs in this process, and
// returns the unlock function.
func (a *Activities) lockTrial(ctx context.Context, dir string, beat func()) (func(), error) {
	a.locksMu.Lock()
	if a.locks == nil {
		a.locks = map[string]*trialLock{}
	}
	l := a.locks[dir]
	if l == nil {
		l = &trialLock{ch: make(chan struct{}, 1)}
		a.locks[dir] = l
	}
	l.refs++
	a.locksMu.Unlock()
	release := func() {
		a.locksMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(a.locks, dir)
		}
		a.locksMu.Unlock()
	}
	t := time.NewTicker(a.heartbeatInterval())
	defer t.Stop()
	for {
		select {
		case l.ch <- struct{}{}:
			return func() { <-l.ch; release() }, nil
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		case <-t.C:
			beat()
		}
	}
}

func (a *Activities) hostAddr() string {
	if a.HostAddr != "" {
		return a.HostAddr
	}
	return "127.0.0.1"
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Activities) progressInterval() time.Duration {
	if a.ProgressInterval > 0 {
		return a.ProgressInterval
	}
	return 2 * time.Second
}

func (a *Activities) progressTimeout() time.Duration {
	if a.ProgressTimeout > 0 {
		return a.ProgressTimeout
	}
	return 5 * time.Second
}

func (a *Activities) heartbeatInterval() time.Duration {
	if a.HeartbeatInterval > 0 {
		return a.HeartbeatInterval
	}
	return 250 * time.Millisecond
}

// PollNodes returns the idle nodes of a pool's node source.
func (a *Activities) PollNodes(ctx context.Context, in workflows.PollNodesInput) ([]cluster.Node, error) {
	src := a.Sources[in.Pool]
	if src == nil {
		src = a.Default
	}
	if src == nil {
		return nil, fmt.Errorf("pool %q: this worker has no node source for it", in.Pool)
	}
	nodes, err := src.Idle(ctx, a.now())
	if err != nil {
		return nil, fmt.Errorf("pool %q: polling nodes: %w", in.Pool, err)
	}
	if nodes == nil {
		nodes = []cluster.Node{}
	}
	return nodes, nil
}

// RegisterTrial signals a registration to the pool workflow, starting it
// first if it is not running.
func (a *Activities) RegisterTrial(ctx context.Context, in workflows.RegisterTrialInput) error {
	poolIn := a.Pool
	poolIn.Name = in.Pool
	opts := client.StartWorkflowOptions{
		ID:        workflows.PoolWorkflowID(in.Pool),
		TaskQueue: a.TaskQueue,
	}
	if opts.TaskQueue == "" {
		opts.TaskQueue = workflows.TaskQueue
	}
	_, err := a.Client.SignalWithStartWorkflow(ctx, opts.ID, workflows.SignalRegisterTrial, in.Registration, opts, workflows.PoolWorkflowName, poolIn)
	if err != nil {
		return fmt.Errorf("registering %s with pool %q: %w", in.Registration.TrialID, in.Pool, err)
	}
	return nil
}

// leaving reports whether the host is being given back (Leaving closed).
func (a *Activities) leaving() bool {
	if a.Leaving == nil {
		return false
	}
	select {
	case <-a.Leaving:
		return true
	default:
		return false
	}
}

// ArchPrior predicts an architecture's training throughput (samples/s)
// on 1, 2, …, maxNodes nodes: out[n−1] is n nodes'.
type ArchPrior interface {
	Curve(arch string, maxNodes int) ([]float64, error)
}
