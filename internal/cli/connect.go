package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/worker"
)

// EnvUI is the Temporal web UI's base address for links (--ui).
const EnvUI = "GLEANER_UI"

// defaultClientConnectTimeout is how long the client verbs retry an
// unreachable server: shorter than a worker's, a person is waiting.
const defaultClientConnectTimeout = 10 * time.Second

// connectOptions are the connection flags every client verb shares with
// `gleaner worker`: the same names, the same environment variables
// (worker.LoadEnv), a flag given on the command line winning over the
// environment, and the same dialling (worker.Dial: TLS, mTLS, API key).
type connectOptions struct {
	flags  worker.Config // bound to the flags
	apiKey string        // apart, so that --help never shows TEMPORAL_API_KEY
	ui     string

	getenv func(string) string // os.Getenv unless a test sets it
	// dial connects; worker.Dial unless a test sets it.
	dial func(context.Context, worker.Config) (tclient.Client, error)
}

// connectionFlags are the flag names addFlags defines, each a field of
// worker.Config (errors about other fields are not the client's concern).
var connectionFlags = map[string]bool{
	"address": true, "namespace": true, "task-queue": true, "tls": true, "tls-ca": true,
	"tls-cert": true, "tls-key": true, "tls-server-name": true, "api-key": true,
	"connect-timeout": true,
}

// addFlags defines the connection flags on f.
func (o *connectOptions) addFlags(f *pflag.FlagSet) {
	o.flags = worker.DefaultConfig()
	o.flags.ConnectTimeout = defaultClientConnectTimeout
	bindConnectionFlags(f, &o.flags, &o.apiKey, "task queue Gleaner's workers poll")
	f.StringVar(&o.ui, "ui", "", "Temporal web UI base address for links, - for none (default http://localhost:8233) ["+EnvUI+"]")
}

// bindConnectionFlags defines the flags every command that talks to
// Temporal shares (gleaner worker too), bound to c and apiKey, with c's
// values as defaults.
func bindConnectionFlags(f *pflag.FlagSet, c *worker.Config, apiKey *string, taskQueueHelp string) {
	f.StringVar(&c.HostPort, "address", c.HostPort, "Temporal frontend host:port ["+worker.EnvAddress+"]")
	f.StringVar(&c.Namespace, "namespace", c.Namespace, "Temporal namespace ["+worker.EnvNamespace+"]")
	f.StringVar(&c.TaskQueue, "task-queue", c.TaskQueue, taskQueueHelp+" ["+worker.EnvTaskQueue+"]")
	f.BoolVar(&c.TLS.Enabled, "tls", false, "use TLS with the system's roots (implied by the other --tls-* flags and --api-key) ["+worker.EnvTLS+"]")
	f.StringVar(&c.TLS.CAFile, "tls-ca", "", "PEM file of the CA certificates to trust ["+worker.EnvTLSCA+"]")
	f.StringVar(&c.TLS.CertFile, "tls-cert", "", "PEM client certificate for mTLS ["+worker.EnvTLSCert+"]")
	f.StringVar(&c.TLS.KeyFile, "tls-key", "", "PEM client key for mTLS ["+worker.EnvTLSKey+"]")
	f.StringVar(&c.TLS.ServerName, "tls-server-name", "", "name to verify in the server's certificate ["+worker.EnvTLSServerName+"]")
	f.StringVar(apiKey, "api-key", "", "Temporal Cloud API key; prefer the environment variable ["+worker.EnvAPIKey+"]")
	f.DurationVar(&c.ConnectTimeout, "connect-timeout", c.ConnectTimeout, "how long to retry an unreachable server")
}

// applyConnectionFlags copies into dst the connection flags given on the
// command line (bound to src and apiKey): a flag wins over the environment.
func applyConnectionFlags(flags *pflag.FlagSet, dst *worker.Config, src worker.Config, apiKey string) {
	flags.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "address":
			dst.HostPort = src.HostPort
		case "namespace":
			dst.Namespace = src.Namespace
		case "task-queue":
			dst.TaskQueue = src.TaskQueue
		case "tls":
			dst.TLS.Enabled = src.TLS.Enabled
		case "tls-ca":
			dst.TLS.CAFile = src.TLS.CAFile
		case "tls-cert":
			dst.TLS.CertFile = src.TLS.CertFile
		case "tls-key":
			dst.TLS.KeyFile = src.TLS.KeyFile
		case "tls-server-name":
			dst.TLS.ServerName = src.TLS.ServerName
		case "api-key":
			dst.APIKey = apiKey
		case "connect-timeout":
			dst.ConnectTimeout = src.ConnectTimeout
		}
	})
}

// config is the environment with the flags given on the command line on
// top, validated. Errors name the flag (and variable) and exit 2.
func (o *connectOptions) config(flags *pflag.FlagSet) (worker.Config, error) {
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := worker.DefaultConfig()
	cfg.ConnectTimeout = defaultClientConnectTimeout
	envErr := worker.LoadEnv(&cfg, getenv)
	applyConnectionFlags(flags, &cfg, o.flags, o.apiKey)
	// The worker-only fields (data dir, node source) are not the client's:
	// a GLEANER_NODE_SOURCE meant for a worker must not break `status`.
	def := worker.DefaultConfig()
	cfg.DataDir, cfg.Nodes = os.TempDir(), def.Nodes
	if err := errors.Join(connectionErrors(envErr), connectionErrors(cfg.Validate())); err != nil {
		return cfg, withCode(ExitUsage, fmt.Errorf("connection:\n%w", err))
	}
	return cfg, nil
}

// connectionErrors keeps the *worker.FieldError among err's joined errors
// that are about connection flags, and any other error.
func connectionErrors(err error) error {
	if err == nil {
		return nil
	}
	var all []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	} else {
		all = []error{err}
	}
	var keep []error
	for _, e := range all {
		var fe *worker.FieldError
		if errors.As(e, &fe) && !connectionFlags[fe.Field] {
			continue
		}
		keep = append(keep, e)
	}
	return errors.Join(keep...)
}

// uiBase is --ui, else GLEANER_UI, else the client's default.
func (o *connectOptions) uiBase(flags *pflag.FlagSet) string {
	if flags.Changed("ui") {
		return o.ui
	}
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return getenv(EnvUI)
}

// connect validates the connection settings and dials, returning
// Gleaner's client and a func that closes it. The SDK logs warnings to
// stderr.
func (o *connectOptions) connect(ctx context.Context, flags *pflag.FlagSet, stderr io.Writer) (*client.Client, func(), error) {
	cfg, err := o.config(flags)
	if err != nil {
		return nil, nil, err
	}
	// The SDK's warnings only: its default logger chats at info on stderr.
	cfg.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	dial := o.dial
	if dial == nil {
		dial = func(ctx context.Context, c worker.Config) (tclient.Client, error) { return worker.Dial(ctx, c) }
	}
	tc, err := dial(ctx, cfg)
	if err != nil {
		var fe *worker.FieldError
		if errors.As(err, &fe) {
			return nil, nil, withCode(ExitUsage, err)
		}
		return nil, nil, err
	}
	c := client.New(tc, client.Options{TaskQueue: cfg.TaskQueue, Namespace: cfg.Namespace, UIBase: o.uiBase(flags)})
	return c, tc.Close, nil
}

// checkCampaignName rejects an empty CAMPAIGN argument (exit 2).
func checkCampaignName(name string) error {
	if strings.TrimSpace(name) == "" {
		return usageErrorf("CAMPAIGN: empty name")
	}
	return nil
}
