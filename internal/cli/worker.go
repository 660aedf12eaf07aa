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
                                                     slots, F× faster, from trace time S`,
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
	f.StringVar(&c.HostPort, "address", c.HostPort, "Temporal frontend host:port ["+worker.EnvAddress+"]")
	f.StringVar(&c.Namespace, "namespace", c.Namespace, "Temporal namespace ["+worker.EnvNamespace+"]")
	f.StringVar(&c.TaskQueue, "task-queue", c.TaskQueue, "task queue to poll ["+worker.EnvTaskQueue+"]")
	f.BoolVar(&c.TLS.Enabled, "tls", false, "use TLS with the system's roots (implied by the other --tls-* flags and --api-key) ["+worker.EnvTLS+"]")
	f.StringVar(&c.TLS.CAFile, "tls-ca", "", "PEM file of the CA certificates to trust ["+worker.EnvTLSCA+"]")
	f.StringVar(&c.TLS.CertFile, "tls-cert", "", "PEM client certificate for mTLS ["+worker.EnvTLSCert+"]")
	f.StringVar(&c.TLS.KeyFile, "tls-key", "", "PEM client key for mTLS ["+worker.EnvTLSKey+"]")
	f.StringVar(&c.TLS.ServerName, "tls-server-name", "", "name to verify in the server's certificate ["+worker.EnvTLSServerName+"]")
	f.StringVar(&o.apiKey, "api-key", "", "Temporal Cloud API key; prefer the environment variable ["+worker.EnvAPIKey+"]")
	f.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for checkpoints and run directories ["+worker.EnvDataDir+"]")
	f.Var(&c.Nodes, "nodes", "node source: static:N or replay:FILE,slots=K,factor=F,offset=S ["+worker.EnvNodeSource+"]")
	f.DurationVar(&c.ConnectTimeout, "connect-timeout", c.ConnectTimeout, "how long to retry an unreachable server at start")
	f.DurationVar(&c.StopTimeout, "stop-timeout", c.StopTimeout, "how long running activities may finish after SIGINT/SIGTERM")
	f.StringVar(&o.logLevel, "log-level", "info", "SDK log level: debug, info, warn or error (to stderr)")
	return cmd
}

// config is the environment with the flags given on the command line on top.
func (o *workerOptions) config(flags *pflag.FlagSet) (worker.Config, error) {
	cfg := worker.DefaultConfig()
	if err := worker.LoadEnv(&cfg, o.getenv); err != nil {
		return cfg, err
	}
	flags.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "address":
			cfg.HostPort = o.cfg.HostPort
		case "namespace":
			cfg.Namespace = o.cfg.Namespace
		case "task-queue":
			cfg.TaskQueue = o.cfg.TaskQueue
		case "tls":
			cfg.TLS.Enabled = o.cfg.TLS.Enabled
		case "tls-ca":
			cfg.TLS.CAFile = o.cfg.TLS.CAFile
		case "tls-cert":
			cfg.TLS.CertFile = o.cfg.TLS.CertFile
		case "tls-key":
			cfg.TLS.KeyFile = o.cfg.TLS.KeyFile
		case "tls-server-name":
			cfg.TLS.ServerName = o.cfg.TLS.ServerName
		case "api-key":
			cfg.APIKey = o.apiKey
		case "data-dir":
			cfg.DataDir = o.cfg.DataDir
		case "nodes":
			cfg.Nodes = o.cfg.Nodes
		case "connect-timeout":
			cfg.ConnectTimeout = o.cfg.ConnectTimeout
		case "stop-timeout":
			cfg.StopTimeout = o.cfg.StopTimeout
		}
	})
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

	comps, cleanup, err := o.build(ctx, cfg)
	if err != nil {
		return err
	}
	if cleanup != nil {
		defer cleanup()
	}

	fmt.Fprintf(stdout, "gleaner worker: connecting to %s (namespace %s)\n", cfg.HostPort, cfg.Namespace)
	c, err := worker.Dial(ctx, cfg)
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
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}
