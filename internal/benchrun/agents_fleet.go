package benchrun

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/agent"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// fleet is many lightweight agents in one process: a worker each, on its
// own task queue, serving the lease with the real AgentLease (it
// heartbeats four times per lease timeout); they share one client. They serve no
// RunTrial: the benchmark's trials never run.
type fleet struct {
	agents      []*benchAgent
	leaseStarts atomic.Int64
	rejoins     atomic.Int64
	unwatch     func()
	c           client.Client
	mu          sync.Mutex
	refused     []string
	lost        []LeaseLoss
	phase       string
	joined      time.Time
}

type benchAgent struct {
	join       workflows.AgentJoin
	w          interface{ Stop() }
	firstLease atomic.Int64 // unix nanoseconds
	leased     atomic.Int64 // unix nanoseconds of the last lease heartbeat (or join)
}

// startFleet starts n agents' workers with slots CPU nodes each.
func startFleet(c client.Client, pool string, n, slots int, dataDir string, throttle, spread time.Duration) (*fleet, error) {
	f := &fleet{c: c}
	for i := range n {
		id := agentID(i, n)
		inc := "bench-" + id
		a := &benchAgent{join: workflows.AgentJoin{
			Agent: id, TaskQueue: agent.TaskQueue(pool, id, inc), Addr: "127.0.0.1",
			Incarnation: inc, StorageID: AgentsPool, DataDir: dataDir,
		}}
		for s := range slots {
			a.join.Nodes = append(a.join.Nodes, gleaner.Node{ID: id + "/" + strconv.Itoa(s), Type: cluster.CPUNodeType, Host: id})
		}
		acts := &activities.Activities{Incarnation: a.join.Incarnation, OnRefused: f.refuse,
			OnLease: func() { a.leased.Store(time.Now().UnixNano()) }}
		lease := func(ctx context.Context, in workflows.AgentLeaseInput) (workflows.AgentLeaseResult, error) {
			f.leaseStarts.Add(1)
			a.firstLease.CompareAndSwap(0, time.Now().UnixNano())
			res, err := acts.AgentLease(ctx, in)
			if err != nil {
				f.leaseFailed(id, context.Cause(ctx))
			}
			return res, err
		}
		// The options of agent.RunWith.
		w := sdkworker.New(c, a.join.TaskQueue, sdkworker.Options{
			WorkerStopTimeout:                5 * time.Second,
			MaxHeartbeatThrottleInterval:     throttle,
			DefaultHeartbeatThrottleInterval: throttle,
		})
		if err := worker.Register(w, worker.Components{AgentLease: lease}); err != nil {
			f.stop()
			return nil, fmt.Errorf("agent %s: %w", id, err)
		}
		if i > 0 && spread > 0 {
			time.Sleep(spread / time.Duration(n))
		}
		if err := w.Start(); err != nil {
			f.stop()
			return nil, fmt.Errorf("agent %s: starting its worker on task queue %s: %w", id, a.join.TaskQueue, err)
		}
		a.w = w
		f.agents = append(f.agents, a)
	}
	return f, nil
}

// leaseFailed records a lease that ended with an error, unless the pool
// cancelled it or its run has closed (continue-as-new).
func (f *fleet) leaseFailed(agent string, cause error) {
	var canceled *temporal.CanceledError
	var gone *serviceerror.NotFound
	if cause == nil || errors.As(cause, &canceled) || errors.As(cause, &gone) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost = append(f.lost, LeaseLoss{Agent: agent, Phase: f.phase, AfterS: time.Since(f.joined).Seconds(), Cause: cause.Error()})
}

func (f *fleet) setPhase(phase string, joined time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.phase = phase
	if !joined.IsZero() {
		f.joined = joined
	}
}

func (f *fleet) refuse(reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused = append(f.refused, reason)
}

func agentID(i, n int) string {
	width := max(3, len(strconv.Itoa(n-1)))
	return fmt.Sprintf("a%0*d", width, i)
}

func (f *fleet) leasesStarted() int {
	n := 0
	for _, a := range f.agents {
		if a.firstLease.Load() != 0 {
			n++
		}
	}
	return n
}

func (f *fleet) lastFirstLease() time.Time {
	var last int64
	for _, a := range f.agents {
		last = max(last, a.firstLease.Load())
	}
	return time.Unix(0, last)
}

func (f *fleet) refusals() (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.refused) == 0 {
		return 0, ""
	}
	return len(f.refused), f.refused[0]
}

// send has every agent send its join rounds times (SignalWithStart, as
// agent.RunWith does), all agents at once; it returns when the last
// returned.
func (f *fleet) send(ctx context.Context, poolID string, rounds int) (time.Time, error) {
	errs := make([]error, len(f.agents))
	var wg sync.WaitGroup
	for i, a := range f.agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if errs[i] = f.joinOne(ctx, poolID, a); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	last := time.Now()
	if err := errors.Join(errs...); err != nil {
		return last, err
	}
	return last, nil
}

func (f *fleet) joinOne(ctx context.Context, poolID string, a *benchAgent) error {
	a.leased.Store(time.Now().UnixNano())
	opts := client.StartWorkflowOptions{ID: poolID, TaskQueue: TaskQueue}
	if _, err := f.c.SignalWithStartWorkflow(ctx, poolID, workflows.SignalAgentJoin, a.join, opts,
		workflows.PoolWorkflowName, workflows.PoolInput{Name: AgentsPool}); err != nil {
		return fmt.Errorf("agent %s: joining pool %s: %w", a.join.Agent, AgentsPool, err)
	}
	return nil
}

// watch joins again, as agent.RunWith does, every agent that has heard
// no lease heartbeat for agent.RejoinAfter (the pool dropped it).
func (f *fleet) watch(ctx context.Context, poolID string) {
	ctx, cancel := context.WithCancel(ctx)
	f.unwatch = cancel
	go func() {
		tick := time.NewTicker(agent.RejoinAfter / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, a := range f.agents {
				if time.Since(time.Unix(0, a.leased.Load())) > agent.RejoinAfter && f.joinOne(ctx, poolID, a) == nil {
					f.rejoins.Add(1)
				}
			}
		}
	}()
}

// stop stops every agent's worker at once.
func (f *fleet) stop() {
	if f.unwatch != nil {
		f.unwatch()
	}
	var wg sync.WaitGroup
	for _, a := range f.agents {
		wg.Add(1)
		go func() { defer wg.Done(); a.w.Stop() }()
	}
	wg.Wait()
}

// sortedKeys returns m's keys by descending count, then name.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
