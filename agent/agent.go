// Package agent runs a Gleaner agent: the process on each host that owns
// the host's nodes, joins a pool with them, and runs the part of every
// trial placed on them (docs/cluster.md). `gleaner agent` is a thin
// command over Run.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	tclient "go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Environment variables of the agent's own settings.
const (
	EnvPool          = "GLEANER_POOL"
	EnvSlots         = "GLEANER_AGENT_SLOTS"
	EnvNodePrefix    = "GLEANER_NODE_PREFIX"
	EnvNodeType      = "GLEANER_NODE_TYPE"
	EnvAdvertiseAddr = "GLEANER_ADVERTISE_ADDR"
	EnvGPUs          = "GLEANER_GPUS"
)

// Config is an agent's configuration. Connection.TaskQueue is the task
// queue of Gleaner's workers, where the pool runs; the agent polls a
// queue of its own (TaskQueue).
type Config struct {
	client.Connection
	// Pool is the pool the agent joins (--pool).
	Pool string
	// Slots is how many nodes the host offers (--slots); 0 means one per
	// GPU.
	Slots int
	// NodePrefix names the host's nodes "<prefix>/<slot>" (--node-prefix;
	// default the host name). It is also the agent's id in the pool.
	NodePrefix string
	// NodeType overrides the detected type (--type).
	NodeType string
	// AdvertiseAddr is the address other hosts reach this one at
	// (--advertise-addr; default the local address of the route to the
	// Temporal server).
	AdvertiseAddr string
	// GPUs is "auto" (detect with nvidia-smi), "none", or a list of
	// device indices ("0,1") (--gpus).
	GPUs string
	// DataDir is the shared data directory (--data-dir): the same file
	// system on every host of the pool.
	DataDir string
	// StopTimeout bounds how long a leaving agent waits for its trainers
	// to checkpoint and exit (--stop-timeout).
	StopTimeout time.Duration
	// Whole makes the host one node whose id is NodePrefix itself, with
	// one slot: a Slurm pilot's node, named as Slurm names it.
	Whole bool
	// Job names the batch job the agent runs in (a Slurm pilot's job id),
	// for logs; empty outside one.
	Job string
	// Trainers is what the trainers the agent launches may run and
	// inherit (--allow-command, --trainer-env-pass, …; docs/security.md).
	Trainers worker.TrainerSettings
}

// RejoinAfter is how long an agent goes without a lease heartbeat before
// it joins its pool again (the pool dropped it while it could not hear
// it: a server restart, a network partition).
const RejoinAfter = 30 * time.Second

// DefaultStopTimeout is Config.StopTimeout's default: trainers get their
// own grace period, this bounds the whole.
const DefaultStopTimeout = 2 * time.Minute

// DefaultConfig is the configuration without flags or environment.
func DefaultConfig() Config {
	return Config{
		Connection:  client.DefaultConnection(),
		GPUs:        "auto",
		DataDir:     worker.DefaultDataDir,
		StopTimeout: DefaultStopTimeout,
	}
}

// LoadEnv sets the fields whose environment variables are set.
func (c *Config) LoadEnv(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	errs := []error{c.Connection.LoadEnv(getenv), c.Trainers.LoadEnv(getenv)}
	set := func(env string, dst *string) {
		if v := getenv(env); v != "" {
			*dst = v
		}
	}
	set(EnvPool, &c.Pool)
	set(EnvNodePrefix, &c.NodePrefix)
	set(EnvNodeType, &c.NodeType)
	set(EnvAdvertiseAddr, &c.AdvertiseAddr)
	set(EnvGPUs, &c.GPUs)
	set(worker.EnvDataDir, &c.DataDir)
	if v := getenv(EnvSlots); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, client.NewFieldError("slots", EnvSlots, v, "want an integer ≥ 0"))
		}
		c.Slots = n
	}
	return errors.Join(errs...)
}

// Validate names every field that is wrong.
func (c Config) Validate() error {
	errs := []error{c.Connection.Validate(), c.Trainers.Validate()}
	if err := gleaner.ValidateName("pool", c.Pool); err != nil {
		errs = append(errs, client.NewFieldError("pool", EnvPool, c.Pool, "%v", err))
	}
	if c.Slots < 0 {
		errs = append(errs, client.NewFieldError("slots", EnvSlots, strconv.Itoa(c.Slots), "want an integer ≥ 0 (0: one per GPU)"))
	}
	if c.NodePrefix != "" {
		if err := validateNodePrefix(c.NodePrefix); err != nil {
			errs = append(errs, client.NewFieldError("node-prefix", EnvNodePrefix, c.NodePrefix, "%v", err))
		}
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		errs = append(errs, client.NewFieldError("advertise-addr", EnvAdvertiseAddr, c.AdvertiseAddr, "want an IP address"))
	}
	if _, err := parseGPUs(c.GPUs); err != nil {
		errs = append(errs, client.NewFieldError("gpus", EnvGPUs, c.GPUs, "%v", err))
	}
	if c.DataDir == "" {
		errs = append(errs, client.NewFieldError("data-dir", worker.EnvDataDir, "", "must be set (a directory every host of the pool mounts)"))
	}
	if c.StopTimeout <= 0 {
		errs = append(errs, client.NewFieldError("stop-timeout", "", c.StopTimeout.String(), "must be positive"))
	}
	return errors.Join(errs...)
}

// parseGPUs returns nil for auto, an empty list for none, else indices.
func parseGPUs(s string) ([]int, error) {
	switch s {
	case "", "auto":
		return nil, nil
	case "none":
		return []int{}, nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || i < 0 {
			return nil, fmt.Errorf("%q: want auto, none or GPU indices like 0,1", p)
		}
		out = append(out, i)
	}
	return out, nil
}

// TaskQueue is the task queue of one start (incarnation) of an agent in a
// pool. A start has a queue of its own, so a task is never handed to a
// poll the previous start left on the server as it stopped.
func TaskQueue(pool, prefix, incarnation string) string {
	return "gleaner-agent." + pool + "." + prefix + "." + incarnation
}

// Agent is a configured agent, ready to Run.
type Agent struct {
	cfg         Config
	host        cluster.LocalHost
	launcher    *cluster.LocalLauncher
	nodes       []gleaner.Node
	storageID   string
	incarnation string
	ifname      string
	logf        func(format string, args ...any)
}

// validateNodePrefix checks a node prefix: a name (gleaner.ValidateName)
// that may hold '[' and ']' after its first character, as PBS names the
// vnodes of a host ("gleaner-pbs[4]", "x1000c0s0b0n0[0]"): a PBS pilot's
// agent is named after its vnode, so that the scheduler's plan and the
// pool name its node alike.
func validateNodePrefix(prefix string) error {
	plain := strings.NewReplacer("[", "_", "]", "_").Replace(prefix)
	if err := gleaner.ValidateName("node prefix", plain); err != nil {
		if plain == prefix {
			return err
		}
		return fmt.Errorf("node prefix: %q: want 1 to %d letters, digits, '.', '_', '-', '[' and ']', starting with a letter or a digit", prefix, gleaner.MaxNameLength)
	}
	return nil
}

// New resolves cfg: the host's slots and GPUs, the node prefix, the
// advertised address and its interface, the data directory's storage id.
// logf prints progress (nil: none).
func New(ctx context.Context, cfg Config, logf func(format string, args ...any)) (*Agent, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, logf: logf}
	if a.cfg.NodePrefix == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("node prefix: the host name: %w (set --node-prefix)", err)
		}
		h, _, _ = strings.Cut(h, ".")
		if err := gleaner.ValidateName("node prefix", h); err != nil {
			return nil, client.NewFieldError("node-prefix", EnvNodePrefix, h, "the host name is no node prefix (%v); set --node-prefix", err)
		}
		a.cfg.NodePrefix = h
	}
	lc := cluster.LocalConfig{Slots: cfg.Slots, Prefix: a.cfg.NodePrefix, Whole: cfg.Whole}
	if cfg.Whole {
		lc.Slots = 1
	}
	gpus, _ := parseGPUs(cfg.GPUs)
	if gpus != nil {
		all, err := cluster.DetectNvidiaGPUs(ctx)
		if err != nil {
			return nil, err
		}
		lc.GPUs = []cluster.GPU{}
		for _, want := range gpus {
			i := slicesIndex(all, want)
			if i < 0 {
				return nil, client.NewFieldError("gpus", EnvGPUs, cfg.GPUs, "GPU %d not found (nvidia-smi lists %d)", want, len(all))
			}
			lc.GPUs = append(lc.GPUs, all[i])
		}
	}
	host, err := cluster.NewLocalHost(ctx, lc)
	if err != nil {
		return nil, client.NewFieldError("slots", EnvSlots, strconv.Itoa(cfg.Slots), "%v (--gpus none makes CPU slots)", err)
	}
	a.host = host
	if a.launcher, err = cluster.NewLocalLauncher(host); err != nil {
		return nil, err
	}
	policy, err := cfg.Trainers.Policy()
	if err != nil {
		return nil, err
	}
	if err := a.launcher.SetPolicy(policy); err != nil {
		return nil, err
	}
	for i := 0; i < host.Slots; i++ {
		typ := host.NodeType(i)
		if cfg.NodeType != "" {
			typ = cfg.NodeType
		}
		a.nodes = append(a.nodes, gleaner.Node{ID: host.NodeID(i), Type: typ, Host: a.cfg.NodePrefix})
	}
	if a.cfg.AdvertiseAddr == "" {
		if a.cfg.AdvertiseAddr, err = routeAddr(cfg.HostPort); err != nil {
			return nil, client.NewFieldError("advertise-addr", EnvAdvertiseAddr, "", "could not find this host's address towards %s (%v); set it", cfg.HostPort, err)
		}
		if net.ParseIP(a.cfg.AdvertiseAddr).IsLoopback() {
			logf("agent %s: warning: advertising %s (the Temporal server is on this host): ranks on other hosts cannot reach it; set --advertise-addr to an address they can",
				a.cfg.NodePrefix, a.cfg.AdvertiseAddr)
		}
	}
	a.ifname = interfaceOf(a.cfg.AdvertiseAddr)
	if a.storageID, err = StorageID(cfg.DataDir); err != nil {
		return nil, client.NewFieldError("data-dir", worker.EnvDataDir, cfg.DataDir, "%v", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	a.incarnation = hex.EncodeToString(b[:])
	return a, nil
}

func slicesIndex(gpus []cluster.GPU, index int) int {
	for i, g := range gpus {
		if g.Index == index {
			return i
		}
	}
	return -1
}

// ID is the agent's id in its pool (its node prefix).
func (a *Agent) ID() string { return a.cfg.NodePrefix }

// Nodes are the nodes the agent offers.
func (a *Agent) Nodes() []gleaner.Node { return a.nodes }

// Addr is the advertised address.
func (a *Agent) Addr() string { return a.cfg.AdvertiseAddr }

// routeAddr is this host's address on the route to hostPort.
func routeAddr(hostPort string) (string, error) {
	c, err := net.Dial("udp", hostPort) // no packet is sent
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// interfaceOf names the interface holding ip, "" if none does.
func interfaceOf(ip string) string {
	want := net.ParseIP(ip)
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(want) {
				return i.Name
			}
		}
	}
	return ""
}

// StorageFile holds the data directory's storage id, under DataDir.
const StorageFile = ".gleaner/storage-id"

// StorageID returns the id of the data directory dir, creating it if no
// agent has: every agent of a pool must read the same id, which the pool
// checks when the agent joins.
func StorageID(dir string) (string, error) {
	path := filepath.Join(dir, StorageFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	// Written whole under another name, then linked into place: an agent
	// reading it never sees it half written, and of two agents creating
	// it at once one wins (link fails on an existing name).
	tmp := path + "." + id
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	err := os.Link(tmp, path)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return "", err
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if s := strings.TrimSpace(string(got)); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("%s is empty: remove it and start the agents again", path)
}

// Run connects, joins the pool, runs trials' ranks until ctx is done
// (SIGINT/SIGTERM), then leaves: the pool re-allocates at once and the
// trainers get their grace period to checkpoint before Run returns.
func (a *Agent) Run(ctx context.Context) error {
	cfg := a.cfg
	c, err := cfg.Connection.Dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped (a Slurm pilot preempted) before it connected: it
			// holds nothing to give back.
			a.logf("agent %s: stopped before it joined pool %s", a.ID(), cfg.Pool)
			return nil
		}
		return err
	}
	defer c.Close()
	return a.RunWith(ctx, c)
}

// RunWith is Run over an existing client (tests, and many agents in one
// process for benchmarks).
func (a *Agent) RunWith(ctx context.Context, c tclient.Client) error {
	cfg := a.cfg
	refused := make(chan string, 1)
	var leased atomic.Int64 // unix nanoseconds of the lease's last heartbeat
	leased.Store(time.Now().UnixNano())
	acts := &activities.Activities{
		OnLease: func() { leased.Store(time.Now().UnixNano()) },
		Client:  c, Launcher: a.launcher, DataDir: cfg.DataDir, TaskQueue: cfg.TaskQueue,
		HostAddr: cfg.AdvertiseAddr, SocketIfname: a.ifname, StopOnWorkerStop: true,
		// From the SIGTERM on, a trainer's exit is a stop, never a finish:
		// a batch scheduler signals the trainers as well as the agent.
		Leaving:     ctx.Done(),
		Incarnation: a.incarnation,
		OnRefused: func(reason string) {
			select {
			case refused <- reason:
			default:
			}
		},
	}
	queue := TaskQueue(cfg.Pool, a.ID(), a.incarnation)
	w := sdkworker.New(c, queue, sdkworker.Options{
		WorkerStopTimeout:                cfg.StopTimeout,
		MaxHeartbeatThrottleInterval:     500 * time.Millisecond,
		DefaultHeartbeatThrottleInterval: 500 * time.Millisecond,
	})
	if err := worker.Register(w, worker.Components{RunTrial: acts.RunTrial, AgentLease: acts.AgentLease}); err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("agent %s: starting the worker on task queue %s: %w", a.ID(), queue, err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			w.Stop()
		}
	}
	defer stop()
	join := workflows.AgentJoin{
		Agent: a.ID(), TaskQueue: queue, Addr: cfg.AdvertiseAddr, Nodes: a.nodes,
		Incarnation: a.incarnation, StorageID: a.storageID, DataDir: absPath(cfg.DataDir),
	}
	opts := tclient.StartWorkflowOptions{ID: workflows.PoolWorkflowID(cfg.Pool), TaskQueue: cfg.TaskQueue}
	joinPool := func() error {
		_, err := c.SignalWithStartWorkflow(ctx, opts.ID, workflows.SignalAgentJoin, join, opts,
			workflows.PoolWorkflowName, workflows.PoolInput{Name: cfg.Pool})
		return err
	}
	if err := joinPool(); err != nil {
		if ctx.Err() == nil {
			return fmt.Errorf("agent %s: joining pool %s: %w", a.ID(), cfg.Pool, err)
		}
		// Stopped while joining: the join may have reached the pool, so
		// leave as after a join.
		a.logf("agent %s: stopped while joining pool %s", a.ID(), cfg.Pool)
		return a.leave(c, stop)
	}
	a.logf("agent %s: joined pool %s with %d nodes (%s…), address %s, task queue %s", a.ID(), cfg.Pool, len(a.nodes), a.nodes[0].ID, cfg.AdvertiseAddr, queue)
	// A pool that lost this agent (its lease timed out while the server or
	// the network was away) runs no lease for it: join again.
	check := time.NewTicker(RejoinAfter / 3)
	defer check.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case reason := <-refused:
			stop()
			return errors.New(reason)
		case <-check.C:
			if since := time.Since(time.Unix(0, leased.Load())); since > RejoinAfter {
				a.logf("agent %s: no lease from pool %s for %v; joining again", a.ID(), cfg.Pool, since.Round(time.Second))
				if err := joinPool(); err != nil {
					a.logf("agent %s: joining pool %s again: %v", a.ID(), cfg.Pool, err)
				}
				leased.Store(time.Now().UnixNano())
			}
		}
	}
	a.logf("agent %s: leaving pool %s; trainers get their grace period to checkpoint", a.ID(), cfg.Pool)
	return a.leave(c, stop)
}

// leave tells the pool the agent leaves, so it re-allocates at once, then
// stops the worker: running trainers get their grace period.
func (a *Agent) leave(c tclient.Client, stop func()) error {
	lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.SignalWorkflow(lctx, workflows.PoolWorkflowID(a.cfg.Pool), "", workflows.SignalAgentLeave,
		workflows.AgentLeave{Agent: a.ID(), Incarnation: a.incarnation, Reason: "agent stopped"}); err != nil {
		a.logf("agent %s: telling pool %s it leaves: %v (its lease ends with the agent)", a.ID(), a.cfg.Pool, err)
	}
	start := time.Now()
	stop()
	a.logf("agent %s: left after %v", a.ID(), time.Since(start).Round(time.Millisecond))
	return nil
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
