package worker

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster"
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
	// Trainers is what the trainers this worker launches may run and
	// inherit (docs/security.md).
	Trainers TrainerSettings
}

// Environment variables of TrainerSettings (gleaner worker and gleaner
// agent read them alike).
const (
	// EnvAllowCommands holds --allow-command patterns separated by colons,
	// as PATH holds directories.
	EnvAllowCommands    = "GLEANER_ALLOW_COMMANDS"
	EnvAllowCommandFile = "GLEANER_ALLOW_COMMAND_FILE"
	EnvAllowAnyCommand  = "GLEANER_ALLOW_ANY_COMMAND"
	// EnvTrainerEnvPass and EnvTrainerEnvDeny hold name patterns
	// separated by commas.
	EnvTrainerEnvPass = "GLEANER_TRAINER_ENV_PASS"
	EnvTrainerEnvDeny = "GLEANER_TRAINER_ENV_DENY"
)

// TrainerSettings say which trainer commands a worker or an agent starts
// and what of its environment they inherit: its launcher's
// cluster.TrainerPolicy (docs/security.md).
type TrainerSettings struct {
	// AllowCommands are the patterns of the commands allowed
	// (--allow-command, repeatable; GLEANER_ALLOW_COMMANDS): absolute
	// paths with filepath.Match wildcards, /dir/** for a whole tree
	// (cluster.CommandPolicy).
	AllowCommands []string
	// AllowCommandFile holds more patterns, one a line, # comments
	// (--allow-command-file, GLEANER_ALLOW_COMMAND_FILE).
	AllowCommandFile string
	// AllowAnyCommand allows every command and says so: no warning
	// (--allow-any-command, GLEANER_ALLOW_ANY_COMMAND). With neither it nor
	// a pattern, every command is allowed too, with a warning at start.
	AllowAnyCommand bool
	// EnvPass and EnvDeny are variable name patterns added to the
	// inherited and the denied variables (--trainer-env-pass,
	// --trainer-env-deny, repeatable; GLEANER_TRAINER_ENV_PASS,
	// GLEANER_TRAINER_ENV_DENY): cluster.EnvPolicy.
	EnvPass, EnvDeny []string
}

// Unrestricted reports whether any command may run because nothing was
// said: no pattern, no file, and no --allow-any-command. A worker or an
// agent warns at start then.
func (t TrainerSettings) Unrestricted() bool {
	return len(t.AllowCommands) == 0 && t.AllowCommandFile == "" && !t.AllowAnyCommand
}

// LoadEnv sets the settings whose variables getenv has (non-empty).
func (t *TrainerSettings) LoadEnv(getenv func(string) string) error {
	var errs []error
	if v := getenv(EnvAllowCommands); v != "" {
		t.AllowCommands = splitList(v, string(os.PathListSeparator))
	}
	if v := getenv(EnvAllowCommandFile); v != "" {
		t.AllowCommandFile = v
	}
	if v := getenv(EnvAllowAnyCommand); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, client.NewFieldError("allow-any-command", EnvAllowAnyCommand, v, "not a boolean (true or false)"))
		}
		t.AllowAnyCommand = b
	}
	if v := getenv(EnvTrainerEnvPass); v != "" {
		t.EnvPass = splitList(v, ",")
	}
	if v := getenv(EnvTrainerEnvDeny); v != "" {
		t.EnvDeny = splitList(v, ",")
	}
	return errors.Join(errs...)
}

func splitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Validate names every setting that is wrong, reading the allow-list
// file.
func (t TrainerSettings) Validate() error {
	_, err := t.Policy()
	return err
}

// Policy is the launcher policy the settings describe: the patterns of
// AllowCommands and AllowCommandFile, or any command when there are none.
// Errors are *client.FieldError, joined.
func (t TrainerSettings) Policy() (cluster.TrainerPolicy, error) {
	var errs []error
	p := cluster.TrainerPolicy{Env: cluster.EnvPolicy{Pass: t.EnvPass, Deny: t.EnvDeny}}
	if t.AllowAnyCommand && (len(t.AllowCommands) > 0 || t.AllowCommandFile != "") {
		errs = append(errs, client.NewFieldError("allow-any-command", EnvAllowAnyCommand, "", "contradicts --allow-command and --allow-command-file: give one or the other"))
	}
	patterns := t.AllowCommands
	for _, pat := range t.AllowCommands {
		if _, err := cluster.NewCommandPolicy([]string{pat}); err != nil {
			errs = append(errs, client.NewFieldError("allow-command", EnvAllowCommands, pat, "%v", err))
		}
	}
	if t.AllowCommandFile != "" {
		more, err := cluster.ReadCommandPatterns(t.AllowCommandFile)
		if err != nil {
			errs = append(errs, client.NewFieldError("allow-command-file", EnvAllowCommandFile, t.AllowCommandFile, "%v", err))
		}
		patterns = append(slices.Clone(patterns), more...)
	}
	for _, f := range []struct {
		flag, env string
		list      []string
	}{{"trainer-env-pass", EnvTrainerEnvPass, t.EnvPass}, {"trainer-env-deny", EnvTrainerEnvDeny, t.EnvDeny}} {
		for _, pat := range f.list {
			if err := (cluster.EnvPolicy{Pass: []string{pat}}).Validate(); err != nil {
				errs = append(errs, client.NewFieldError(f.flag, f.env, pat, "want a variable name or a pattern like CUDA_*"))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return cluster.TrainerPolicy{}, err
	}
	if len(patterns) > 0 || (t.AllowCommandFile != "" && !t.AllowAnyCommand) {
		// A file of comments only allows nothing: it was given to restrict.
		cp, err := cluster.NewCommandPolicy(patterns)
		if err != nil {
			return cluster.TrainerPolicy{}, client.NewFieldError("allow-command", EnvAllowCommands, "", "%v", err)
		}
		p.Commands = cp
	}
	return p, nil
}

// Args are the flags that give another Gleaner process (an agent a Slurm
// pilot starts) these settings.
func (t TrainerSettings) Args() []string {
	var args []string
	for _, p := range t.AllowCommands {
		args = append(args, "--allow-command", p)
	}
	if t.AllowCommandFile != "" {
		args = append(args, "--allow-command-file", t.AllowCommandFile)
	}
	if t.AllowAnyCommand {
		args = append(args, "--allow-any-command")
	}
	for _, p := range t.EnvPass {
		args = append(args, "--trainer-env-pass", p)
	}
	for _, p := range t.EnvDeny {
		args = append(args, "--trainer-env-deny", p)
	}
	return args
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

// LoadEnv sets the fields whose environment variables are set (non-empty)
// in getenv (os.Getenv when nil): the connection's
// (client.Connection.LoadEnv) and the worker's own. Flags, applied
// afterwards, win.
func (c *Config) LoadEnv(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	errs := []error{c.Connection.LoadEnv(getenv), c.Trainers.LoadEnv(getenv)}
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
				errs = append(errs, client.NewFieldError(f.flag, f.env, v, "not a duration (30s, 5m)"))
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
	errs := []error{c.Connection.Validate(), c.Trainers.Validate()}
	add := func(e *client.FieldError) { errs = append(errs, e) }
	if c.DataDir == "" {
		add(client.NewFieldError("data-dir", EnvDataDir, "", "must be set"))
	} else if st, err := os.Stat(c.DataDir); err == nil && !st.IsDir() {
		add(client.NewFieldError("data-dir", EnvDataDir, c.DataDir, "exists and is not a directory"))
	}
	if err := c.Nodes.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.StopTimeout < 0 {
		add(client.NewFieldError("stop-timeout", "", c.StopTimeout.String(), "must not be negative"))
	}
	for _, f := range c.poolFields() {
		if *f.d < 0 {
			add(client.NewFieldError(f.flag, f.env, f.d.String(), "must not be negative"))
		}
	}
	if _, err := allocator.ParseFormulation(c.Pool.Formulation); err != nil {
		add(client.NewFieldError("formulation", EnvFormulation, "", "%v", err))
	}
	return errors.Join(errs...)
}

// String describes the configuration for a person, without secrets.
func (c Config) String() string {
	return fmt.Sprintf("%s nodes=%s data-dir=%s", c.Connection, c.Nodes, c.DataDir)
}
