package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/cluster/pilot"
	"github.com/gleaner-hpc/gleaner/worker"
)

type workerOptions struct {
	cfg      worker.Config // bound to the flags; merged over the environment in run
	apiKey   string        // kept apart so that --help never shows TEMPORAL_API_KEY
	logLevel string

	getenv func(string) string
	build  func(context.Context, worker.Config) (worker.Components, func(), error)
}

func newWorkerCmd() *cobra.Command {
	return newWorkerCmdFor(&workerOptions{getenv: os.Getenv, build: worker.Build})
}

// newWorkerCmdFor binds the flags to o; tests set o.getenv and o.build.
func newWorkerCmdFor(o *workerOptions) *cobra.Command {
	o.cfg = worker.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a Gleaner worker: campaign, trial and pool workflows and the trials themselves",
		Long: `Connects to Temporal, polls the task queue and runs Gleaner's workflows and
activities: trials are launched on the nodes of the node source, with their
checkpoints and run directories under --data-dir. Runs until SIGINT or
SIGTERM, then lets running activities finish for --stop-timeout.

Every flag but --log-level has an environment variable (shown in brackets);
a flag given on the command line wins over the environment. See docs/worker.md.

Node sources (--nodes):
  static:N[,type=T]                                  N local slots that never leave
  replay:FILE[,slots=K][,factor=F][,offset=S][,type=T]
                                                     an idle-node trace replayed onto K local
                                                     slots, F× faster, from trace time S; FILE
                                                     embedded:traces/summit-idle-2021-02-10_14.csv
                                                     is OLCF Summit's, built into this binary
  none                                               no local nodes: the pool's nodes are its
                                                     agents' (gleaner agent, docs/cluster.md)
  slurm:partition=P[,pool=NAME][,max_pending=K][,max_pilots=N][,time=D][,time_min=D]
       [,lead=D][,interval=D][,idle_release=D][,yield=D|off][,qos=Q][,account=A]
       [,type=T][,gpus=none|N][,gres=G]
                                                     harvest a Slurm cluster's idle nodes: keep up
                                                     to K (4) pilot jobs waiting in preemptible
                                                     partition P while pool NAME's trials want
                                                     nodes; each pilot's agent joins with the
                                                     Slurm node; a pilot leaves by itself when
                                                     the backfill plan gives its node to a batch
                                                     job within D (bf_interval); every pilot is
                                                     cancelled when the worker stops; --address
                                                     must be one the nodes reach (docs/slurm.md)`,
		Example: `  gleaner worker --nodes static:4 --data-dir /scratch/gleaner
  TEMPORAL_ADDRESS=ns.acct.tmprl.cloud:7233 TEMPORAL_NAMESPACE=ns.acct TEMPORAL_API_KEY=... gleaner worker`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	c := &o.cfg
	bindConnectionFlags(f, &c.Connection, &o.apiKey, "task queue to poll")
	c.DataDir = "" // default: in the user's state directory (config)
	f.StringVar(&c.DataDir, "data-dir", "", "directory for checkpoints and run directories (default STATE/"+stateDataSubdir+", STATE is "+stateDirHint+") ["+worker.EnvDataDir+"]")
	f.Var(&c.Nodes, "nodes", "node source: static:N, replay:FILE,slots=K,factor=F,offset=S, slurm:partition=P,..., or none (agents hold the nodes) ["+worker.EnvNodeSource+"]")
	f.DurationVar(&c.StopTimeout, "stop-timeout", c.StopTimeout, "how long running activities may finish after SIGINT/SIGTERM")
	f.DurationVar(&c.Pool.Poll, "pool-poll", c.Pool.Poll, "how often pools ask the node source which nodes are idle (0: 5s) ["+worker.EnvPoolPoll+"]")
	f.DurationVar(&c.Pool.AllocatePeriod, "allocate-period", c.Pool.AllocatePeriod, "longest time between two allocations of a pool (0: 30s) ["+worker.EnvAllocatePeriod+"]")
	f.DurationVar(&c.Pool.Debounce, "allocate-debounce", c.Pool.Debounce, "how long a pool waits after an event for more before it allocates (0: 500ms) ["+worker.EnvAllocateDebounce+"]")
	f.DurationVar(&c.Pool.Lookahead, "lookahead", c.Pool.Lookahead, "the allocator's T_fwd: the horizon a rescale's cost is weighed over (0: 5m) ["+worker.EnvLookahead+"]")
	f.StringVar(&c.Pool.Formulation, "formulation", c.Pool.Formulation, "the allocator's formulation: "+allocator.FormulationNames()+" (empty: compact) ["+worker.EnvFormulation+"]")
	f.StringVar(&c.PriorCurves, "prior-curves", c.PriorCurves, "directory of profiled scaling curves (CSV, the format of the project's scaling data) the JPA borrows shapes from ["+worker.EnvPriorCurves+"]")
	f.StringVar(&c.GPURatios, "gpu-ratios", c.GPURatios, "single-GPU throughputs per model and GPU type in Gavel's format: predicts trials on node types they were not measured on ["+worker.EnvGPURatios+"]")
	f.StringVar(&c.ThroughputModel, "throughput-model", c.ThroughputModel, "fitted throughput model (JSON; docs/nas.md): NAS trials start from their architecture's predicted curve ["+worker.EnvThroughputModel+"]")
	bindTrainerFlags(f, &c.Trainers)
	f.StringVar(&o.logLevel, "log-level", "info", "SDK log level: debug, info, warn or error (to stderr)")
	return cmd
}

// bindTrainerFlags defines the flags of the trainer policy (what trainers
// may run and inherit) that `gleaner worker` and `gleaner agent` share.
func bindTrainerFlags(f *pflag.FlagSet, t *worker.TrainerSettings) {
	f.StringArrayVar(&t.AllowCommands, "allow-command", nil, "trainer command allowed here: an absolute path with * ? [...] wildcards, or DIR/** for a whole tree; repeatable (none: any command, with a warning; docs/security.md) ["+worker.EnvAllowCommands+", colon separated]")
	f.StringVar(&t.AllowCommandFile, "allow-command-file", "", "file of --allow-command patterns, one a line, # comments ["+worker.EnvAllowCommandFile+"]")
	f.BoolVar(&t.AllowAnyCommand, "allow-any-command", false, "allow every trainer command, without the warning ["+worker.EnvAllowAnyCommand+"]")
	f.StringArrayVar(&t.EnvPass, "trainer-env-pass", nil, "variable (or pattern, like HF_*) of this process's environment that trainers inherit too; repeatable ["+worker.EnvTrainerEnvPass+", comma separated]")
	f.StringArrayVar(&t.EnvDeny, "trainer-env-deny", nil, "variable (or pattern) trainers never get, nor may a spec set; wins over --trainer-env-pass; repeatable ["+worker.EnvTrainerEnvDeny+", comma separated]")
}

// applyTrainerFlags copies into dst the trainer policy flags given on the
// command line (bound to src): a flag wins over the environment.
func applyTrainerFlags(flags *pflag.FlagSet, dst *worker.TrainerSettings, src worker.TrainerSettings) {
	flags.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "allow-command":
			dst.AllowCommands = src.AllowCommands
		case "allow-command-file":
			dst.AllowCommandFile = src.AllowCommandFile
		case "allow-any-command":
			dst.AllowAnyCommand = src.AllowAnyCommand
		case "trainer-env-pass":
			dst.EnvPass = src.EnvPass
		case "trainer-env-deny":
			dst.EnvDeny = src.EnvDeny
		}
	})
}

// warnAnyCommand warns, when nothing restricts the trainer commands, that
// whoever can start workflows in the namespace runs what they like here.
func warnAnyCommand(w io.Writer, who string, t worker.TrainerSettings, namespace string) {
	if !t.Unrestricted() {
		return
	}
	fmt.Fprintf(w, "%s: warning: any trainer command may run on this host: whoever can start workflows in namespace %s runs what they like here, as this user. "+
		"Restrict it with --allow-command (or --allow-command-file), or say it is meant with --allow-any-command (docs/security.md)\n", who, namespace)
}

// config is the environment with the flags given on the command line on top.
func (o *workerOptions) config(flags *pflag.FlagSet) (worker.Config, error) {
	cfg := worker.DefaultConfig()
	cfg.DataDir = ""
	if err := cfg.LoadEnv(o.getenv); err != nil {
		return cfg, err
	}
	applyConnectionFlags(flags, &cfg.Connection, o.cfg.Connection, o.apiKey)
	applyTrainerFlags(flags, &cfg.Trainers, o.cfg.Trainers)
	flags.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "data-dir":
			cfg.DataDir = o.cfg.DataDir
		case "nodes":
			cfg.Nodes = o.cfg.Nodes
		case "stop-timeout":
			cfg.StopTimeout = o.cfg.StopTimeout
		case "throughput-model":
			cfg.ThroughputModel = o.cfg.ThroughputModel
		case "prior-curves":
			cfg.PriorCurves = o.cfg.PriorCurves
		case "gpu-ratios":
			cfg.GPURatios = o.cfg.GPURatios
		case "pool-poll":
			cfg.Pool.Poll = o.cfg.Pool.Poll
		case "allocate-period":
			cfg.Pool.AllocatePeriod = o.cfg.Pool.AllocatePeriod
		case "allocate-debounce":
			cfg.Pool.Debounce = o.cfg.Pool.Debounce
		case "lookahead":
			cfg.Pool.Lookahead = o.cfg.Pool.Lookahead
		case "formulation":
			cfg.Pool.Formulation = o.cfg.Pool.Formulation
		}
	})
	if cfg.DataDir == "" {
		// Run data goes to the user's state directory, never into the
		// working directory (a checkout, say) by surprise.
		dir, err := defaultDataDir(o.getenv)
		if err != nil {
			return cfg, fmt.Errorf("--data-dir: %w; pass --data-dir or set %s", err, worker.EnvDataDir)
		}
		cfg.DataDir = dir
	}
	return cfg, cfg.Validate()
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func (o *workerOptions) run(ctx context.Context, flags *pflag.FlagSet, stdout, stderr io.Writer) error {
	cfg, err := o.config(flags)
	if err != nil {
		return fmt.Errorf("worker configuration:\n%w", err)
	}
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}

	warnConnection(stderr, "gleaner worker", cfg.Connection)
	if cfg.Nodes.Kind != worker.NodeSourceNone && !cfg.Nodes.Kind.PilotJobs() {
		warnAnyCommand(stderr, "gleaner worker", cfg.Trainers, cfg.Namespace)
	}
	comps, cleanup, err := o.build(ctx, cfg)
	if err != nil {
		return err
	}
	if cleanup != nil {
		defer cleanup()
	}

	fmt.Fprintf(stdout, "gleaner worker: connecting to %s (namespace %s)\n", cfg.HostPort, cfg.Namespace)
	c, err := cfg.Connection.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := worker.New(c, cfg, comps)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker on task queue %s: %w", cfg.TaskQueue, err)
	}
	fmt.Fprintf(stdout, "gleaner worker: connected to %s (namespace %s), polling task queue %s\n",
		cfg.HostPort, cfg.Namespace, cfg.TaskQueue)
	fmt.Fprintf(stdout, "gleaner worker: %s\n", cfg)
	fmt.Fprintf(stdout, "gleaner worker: workflows [%s], activities [%s]\n",
		strings.Join(comps.Workflows(), " "), strings.Join(comps.Activities(), " "))
	if m := comps.Missing(); len(m) > 0 {
		fmt.Fprintf(stderr, "gleaner worker: warning: not served by this build: %s\n", strings.Join(m, " "))
	}

	var pilotsDone chan error
	// The pilots stop when the worker does, for whatever reason, not only
	// at a signal: Run then cancels every one (in a context of its own).
	pilotsCtx, stopPilots := context.WithCancel(ctx)
	defer stopPilots()
	if cfg.Nodes.Kind.PilotJobs() {
		logf := func(format string, args ...any) { fmt.Fprintf(stdout, "gleaner worker: "+format+"\n", args...) }
		pilots, err := worker.NewPilots(ctx, c, cfg, logf)
		if err != nil {
			w.Stop()
			return err
		}
		pilotsDone = make(chan error, 1)
		go func() { pilotsDone <- pilots.Run(pilotsCtx, pilotProgress(string(cfg.Nodes.Kind), logf)) }()
	}

	// Run returns on a fatal worker error or once ctx is done, and stops
	// the worker (running activities get --stop-timeout to finish).
	interrupt := make(chan any)
	go func() {
		<-ctx.Done()
		close(interrupt)
	}()
	start := time.Now()
	err = w.Run(interrupt)
	if ctx.Err() != nil {
		fmt.Fprintf(stdout, "gleaner worker: stopped after %v\n", time.Since(start).Round(time.Second))
	}
	if pilotsDone != nil {
		// Every pilot is cancelled before the worker is gone; a second
		// SIGINT or SIGTERM meanwhile is caught (ctx's) and changes nothing.
		stopPilots()
		if perr := <-pilotsDone; perr != nil {
			fmt.Fprintf(stderr, "gleaner worker: %v\n", perr)
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// pilotProgress prints a line, prefixed by the scheduler's name, when the
// pilots' counts change.
func pilotProgress(scheduler string, logf func(string, ...any)) func(pilot.Status, error) {
	last := ""
	return func(st pilot.Status, err error) {
		if err != nil {
			return
		}
		line := fmt.Sprintf("%s: %d pilots running, %d waiting; trials want %d more nodes", scheduler, len(st.Running), len(st.Pending), st.Demand.Wanted)
		if len(st.Submitted) > 0 {
			line += fmt.Sprintf("; submitted %s", strings.Join(st.Submitted, " "))
		}
		if len(st.Cancelled) > 0 {
			line += fmt.Sprintf("; cancelled %s", strings.Join(st.Cancelled, " "))
		}
		if line != last {
			logf("%s", line)
			last = line
		}
	}
}
