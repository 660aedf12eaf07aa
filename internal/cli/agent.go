package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/agent"
	"github.com/gleaner-hpc/gleaner/worker"
)

type agentOptions struct {
	cfg      agent.Config
	apiKey   string
	logLevel string
	getenv   func(string) string
	// pilot, for a batch scheduler's pilot (gleaner slurm-pilot,
	// pbs-pilot), names the one node the job runs on and the job.
	pilot func(getenv func(string) string) (node, job string, err error)
	// watch, for a pilot whose scheduler may end its job without a signal
	// reaching the agent (PBS), returns the context the agent runs under:
	// ended, with the reason as its cause, when the scheduler ends the job
	// (nil: the signals alone tell).
	watch func(ctx context.Context, getenv func(string) string, job string) (context.Context, context.CancelFunc)
}

func newAgentCmd() *cobra.Command {
	return newAgentCmdFor(&agentOptions{getenv: os.Getenv})
}

// newAgentCmdFor binds the flags to o; tests set o.getenv.
func newAgentCmdFor(o *agentOptions) *cobra.Command {
	o.cfg = agent.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a Gleaner agent: offer this host's nodes to a pool and run the trials placed on them",
		Long: `Joins a pool with this host's nodes (ids <node-prefix>/<slot>) and runs,
on a task queue of its own, the part of every trial placed on them: one
trainer process per host, with a rendezvous for multi-host training. Runs
until SIGINT or SIGTERM, then leaves: the pool re-allocates at once and the
trainers get their grace period to checkpoint. An agent killed outright, or
a lost host, is counted lost after the pool's agent timeout (10 s).

--data-dir must be a file system every agent of the pool mounts (Lustre,
GPFS, NFS): checkpoints written on one host are resumed on another. An
agent whose data directory is not the others' is refused, with the reason.
See docs/cluster.md.`,
		Example: `  gleaner agent --pool hpo --slots 4 --data-dir /lustre/gleaner --address temporal.example:7233
  gleaner agent --pool hpo --gpus auto --node-prefix $(hostname -s) --advertise-addr 10.0.0.7 --data-dir /gpfs/gleaner`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	c := &o.cfg
	bindConnectionFlags(f, &c.Connection, &o.apiKey, "task queue of Gleaner's workers, where the pool runs")
	f.StringVar(&c.Pool, "pool", c.Pool, "pool to join ["+agent.EnvPool+"]")
	f.IntVar(&c.Slots, "slots", c.Slots, "nodes this host offers (0: one per GPU) ["+agent.EnvSlots+"]")
	f.StringVar(&c.NodePrefix, "node-prefix", c.NodePrefix, "node id prefix and agent id, unique in the pool (default: the host name) ["+agent.EnvNodePrefix+"]")
	f.StringVar(&c.NodeType, "type", c.NodeType, "node type (default: the GPU model, or cpu) ["+agent.EnvNodeType+"]")
	f.StringVar(&c.AdvertiseAddr, "advertise-addr", c.AdvertiseAddr, "IP other hosts reach this one at (default: the address towards the Temporal server) ["+agent.EnvAdvertiseAddr+"]")
	f.StringVar(&c.GPUs, "gpus", c.GPUs, "auto (nvidia-smi), none, or GPU indices like 0,1 ["+agent.EnvGPUs+"]")
	f.StringVar(&c.DataDir, "data-dir", "", "shared data directory: checkpoints and run directories (default STATE/"+stateDataSubdir+", STATE is "+stateDirHint+"; several hosts need one they all mount) ["+worker.EnvDataDir+"]")
	f.DurationVar(&c.StopTimeout, "stop-timeout", c.StopTimeout, "how long a leaving agent waits for its trainers to checkpoint and exit")
	bindTrainerFlags(f, &c.Trainers)
	f.StringVar(&o.logLevel, "log-level", "warn", "SDK log level: debug, info, warn or error (to stderr)")
	return cmd
}

func (o *agentOptions) config(flags *pflag.FlagSet) (agent.Config, error) {
	cfg := agent.DefaultConfig()
	cfg.DataDir = "" // default: in the user's state directory, as the worker's
	if err := cfg.LoadEnv(o.getenv); err != nil {
		return cfg, err
	}
	applyConnectionFlags(flags, &cfg.Connection, o.cfg.Connection, o.apiKey)
	applyTrainerFlags(flags, &cfg.Trainers, o.cfg.Trainers)
	flags.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "pool":
			cfg.Pool = o.cfg.Pool
		case "slots":
			cfg.Slots = o.cfg.Slots
		case "node-prefix":
			cfg.NodePrefix = o.cfg.NodePrefix
		case "type":
			cfg.NodeType = o.cfg.NodeType
		case "advertise-addr":
			cfg.AdvertiseAddr = o.cfg.AdvertiseAddr
		case "gpus":
			cfg.GPUs = o.cfg.GPUs
		case "data-dir":
			cfg.DataDir = o.cfg.DataDir
		case "stop-timeout":
			cfg.StopTimeout = o.cfg.StopTimeout
		}
	})
	if o.pilot != nil {
		node, job, err := o.pilot(o.getenv)
		if err != nil {
			return cfg, err
		}
		cfg.NodePrefix, cfg.Whole, cfg.Job, cfg.Slots = node, true, job, 1
	}
	if cfg.DataDir == "" && !flags.Changed("data-dir") {
		// Never the working directory (a checkout, say) by surprise; a
		// pool of several hosts needs a shared one (--data-dir). Without
		// a state directory ($HOME unset) Validate says it must be set.
		if dir, err := defaultDataDir(o.getenv); err == nil {
			cfg.DataDir = dir
		}
	}
	return cfg, cfg.Validate()
}

func (o *agentOptions) run(ctx context.Context, flags *pflag.FlagSet, stdout, stderr io.Writer) error {
	cfg, err := o.config(flags)
	if err != nil {
		return fmt.Errorf("agent configuration:\n%w", err)
	}
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	warnConnection(stderr, "gleaner agent", cfg.Connection)
	warnAnyCommand(stderr, "gleaner agent", cfg.Trainers, cfg.Namespace)
	logf := func(format string, args ...any) { fmt.Fprintf(stdout, "gleaner "+format+"\n", args...) }
	a, err := agent.New(ctx, cfg, logf)
	if err != nil {
		return fmt.Errorf("agent configuration:\n%w", err)
	}
	if cfg.Job != "" {
		logf("agent %s: pilot job %s", a.ID(), cfg.Job)
	}
	if o.watch != nil && cfg.Job != "" {
		signalled := ctx
		var stop context.CancelFunc
		ctx, stop = o.watch(signalled, o.getenv, cfg.Job)
		defer stop()
		if ctx.Err() != nil {
			// Ended before the agent joined: nothing to give back, and
			// exiting now ends the job at once rather than at kill_delay.
			logf("agent %s: %v: not joining pool %s", a.ID(), context.Cause(ctx), cfg.Pool)
			return nil
		}
		context.AfterFunc(ctx, func() {
			if signalled.Err() == nil {
				logf("agent %s: %v, and no SIGTERM came: leaving as at one", a.ID(), context.Cause(ctx))
			}
		})
	}
	logf("agent %s: connecting to %s (namespace %s)", a.ID(), cfg.HostPort, cfg.Namespace)
	return a.Run(ctx)
}
