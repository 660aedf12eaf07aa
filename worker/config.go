package worker

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Environment variables of the worker's own settings (Config.LoadEnv); those of
// its connection are client's (client.EnvAddress, …).
const (
	EnvDataDir    = "GLEANER_DATA_DIR"
	EnvNodeSource = "GLEANER_NODE_SOURCE"
	// EnvThroughputModel is Config.ThroughputModel's variable.
	EnvThroughputModel = "GLEANER_THROUGHPUT_MODEL"
	// EnvPriorCurves and EnvGPURatios are Config.PriorCurves' and
	// Config.GPURatios' variables.
	EnvPriorCurves = "GLEANER_PRIOR_CURVES"
	EnvGPURatios   = "GLEANER_GPU_RATIOS"
	// The pool settings' variables (Config.Pool).
	EnvPoolPoll         = "GLEANER_POOL_POLL"
	EnvAllocatePeriod   = "GLEANER_ALLOCATE_PERIOD"
	EnvAllocateDebounce = "GLEANER_ALLOCATE_DEBOUNCE"
	EnvLookahead        = "GLEANER_LOOKAHEAD"
	EnvFormulation      = "GLEANER_FORMULATION"
)

// Config is how a worker connects to Temporal and what it runs trials on.
// Every field has a flag of `gleaner worker` (named in client.FieldError)
// and most an environment variable.
type Config struct {
	// Connection is the server, namespace, credentials and the task queue
	// the worker polls: the same settings as the client's.
	client.Connection
	// DataDir holds checkpoints and run directories (--data-dir,
	// GLEANER_DATA_DIR).
	DataDir string
	// Nodes is where idle nodes come from (--nodes, GLEANER_NODE_SOURCE).
	Nodes NodeSourceConfig
	// StopTimeout is how long a stopping worker lets running activities
	// finish before cancelling them (--stop-timeout).
	StopTimeout time.Duration
	// ThroughputModel is a file holding a fitted nas.ThroughputModel
	// (JSON, nas.FitThroughput's): the pools this worker allocates start
	// a NAS trial from its architecture's predicted curve
	// (--throughput-model, GLEANER_THROUGHPUT_MODEL; docs/nas.md). Empty:
	// none.
	ThroughputModel string
	// PriorCurves is a directory of profiled scaling curves (CSV files in
	// the format of the project's scaling data: docs/jpa.md) that the JPA
	// borrows shapes from (--prior-curves, GLEANER_PRIOR_CURVES); empty:
	// none.
	PriorCurves string
	// GPURatios is a table of single-GPU throughputs per model and GPU
	// type in Gavel's format, from which the JPA predicts a trial on a
	// node type it was not measured on (--gpu-ratios,
	// GLEANER_GPU_RATIOS); empty: none.
	GPURatios string
	// Pool is how the pools this worker starts decide (docs/worker.md,
	// "Pool settings"); zero fields take workflows' defaults.
	Pool PoolSettings
}

// PoolSettings are the pool workflow's timing and the allocator's
// formulation, for the pools a worker starts (workflows.PoolInput).
type PoolSettings struct {
	// Poll is how often the node source is asked which nodes are idle
	// (--pool-poll, GLEANER_POOL_POLL; default workflows.DefaultPollInterval).
	Poll time.Duration
	// AllocatePeriod is the longest time between two allocations
	// (--allocate-period, GLEANER_ALLOCATE_PERIOD; default
	// workflows.DefaultAllocatePeriod).
	AllocatePeriod time.Duration
	// Debounce is how long after a node or trial event the pool waits for
	// more before it allocates (--allocate-debounce,
	// GLEANER_ALLOCATE_DEBOUNCE; default workflows.DefaultDebounce).
	Debounce time.Duration
	// Lookahead is the allocator's T_fwd, the horizon over which a
	// rescale's cost is weighed against its gain (--lookahead,
	// GLEANER_LOOKAHEAD; default workflows.DefaultLookahead).
	Lookahead time.Duration
	// Formulation is the allocator's: compact (default), paper, greedy or
	// equal (--formulation, GLEANER_FORMULATION; docs/allocator.md).
	Formulation string
}

// InteractivePool is the pool settings of an interactive deployment
// (`gleaner dev`, the benchmarks): nodes polled every second, decisions
// 200 ms after an event and at least every 10 s.
var InteractivePool = PoolSettings{Poll: time.Second, Debounce: 200 * time.Millisecond, AllocatePeriod: 10 * time.Second}

// Input is the pool input these settings give (the rest default).
func (p PoolSettings) Input() workflows.PoolInput {
	return workflows.PoolInput{PollInterval: p.Poll, AllocatePeriod: p.AllocatePeriod, Debounce: p.Debounce,
		Lookahead: p.Lookahead, Formulation: p.Formulation}
}

// poolFields are the pool settings' flags, variables and fields.
func (c *Config) poolFields() []struct {
	flag, env string
	d         *time.Duration
} {
	return []struct {
		flag, env string
		d         *time.Duration
	}{
		{"pool-poll", EnvPoolPoll, &c.Pool.Poll},
		{"allocate-period", EnvAllocatePeriod, &c.Pool.AllocatePeriod},
		{"allocate-debounce", EnvAllocateDebounce, &c.Pool.Debounce},
		{"lookahead", EnvLookahead, &c.Pool.Lookahead},
	}
}

// Default values of the worker's own settings; the connection's are
// client's (client.DefaultHostPort, …).
const (
	DefaultDataDir     = "gleaner-data"
	DefaultNodeSource  = "static:1"
	DefaultStopTimeout = 30 * time.Second
)

// DefaultConfig is the configuration without flags or environment:
// client.DefaultConnection (a local dev server, the default namespace,
// Gleaner's task queue), one local slot, ./gleaner-data.
func DefaultConfig() Config {
	return Config{
		Connection:  client.DefaultConnection(),
		DataDir:     DefaultDataDir,
		Nodes:       NodeSourceConfig{Kind: NodeSourceStatic, Static: StaticNodes{Nodes: 1}},
		StopTimeout: DefaultStopTimeout,
	}
}

func fieldErr(field, env, value, format string, args ...any) *client.FieldError {
	return &client.FieldError{Field: field, Env: env, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// LoadEnv sets the fields whose environment variables are set (non-empty)
// in getenv (os.Getenv when nil): the connection's
// (client.Connection.LoadEnv) and the worker's own. Flags, applied
// afterwards, win.
func (c *Config) LoadEnv(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	errs := []error{c.Connection.LoadEnv(getenv)}
	if v := getenv(EnvDataDir); v != "" {
		c.DataDir = v
	}
	if v := getenv(EnvThroughputModel); v != "" {
		c.ThroughputModel = v
	}
	if v := getenv(EnvPriorCurves); v != "" {
		c.PriorCurves = v
	}
	if v := getenv(EnvGPURatios); v != "" {
		c.GPURatios = v
	}
	for _, f := range c.poolFields() {
		if v := getenv(f.env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fieldErr(f.flag, f.env, v, "not a duration (30s, 5m)"))
				continue
			}
			*f.d = d
		}
	}
	if v := getenv(EnvFormulation); v != "" {
		c.Pool.Formulation = v
	}
	if v := getenv(EnvNodeSource); v != "" {
		n, err := ParseNodeSource(v)
		if err != nil {
			errs = append(errs, withEnv(err, EnvNodeSource))
		} else {
			c.Nodes = n
		}
	}
	return errors.Join(errs...)
}

func withEnv(err error, env string) error {
	var fe *client.FieldError
	if errors.As(err, &fe) {
		cp := *fe
		cp.Env = env
		return &cp
	}
	return err
}

// Validate checks every field and returns all problems, each a
// *client.FieldError (joined): the connection's first
// (client.Connection.Validate), then the worker's own.
func (c Config) Validate() error {
	errs := []error{c.Connection.Validate()}
	add := func(e *client.FieldError) { errs = append(errs, e) }
	if c.DataDir == "" {
		add(fieldErr("data-dir", EnvDataDir, "", "must be set"))
	} else if st, err := os.Stat(c.DataDir); err == nil && !st.IsDir() {
		add(fieldErr("data-dir", EnvDataDir, c.DataDir, "exists and is not a directory"))
	}
	if err := c.Nodes.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.StopTimeout < 0 {
		add(fieldErr("stop-timeout", "", c.StopTimeout.String(), "must not be negative"))
	}
	for _, f := range c.poolFields() {
		if *f.d < 0 {
			add(fieldErr(f.flag, f.env, f.d.String(), "must not be negative"))
		}
	}
	switch allocator.Formulation(c.Pool.Formulation) {
	case "", allocator.FormulationCompact, allocator.FormulationPaper, allocator.FormulationGreedy, allocator.FormulationEqual:
	default:
		add(fieldErr("formulation", EnvFormulation, c.Pool.Formulation, "want compact, paper, greedy or equal"))
	}
	return errors.Join(errs...)
}

// String describes the configuration for a person, without secrets.
func (c Config) String() string {
	return fmt.Sprintf("%s nodes=%s data-dir=%s", c.Connection, c.Nodes, c.DataDir)
}
