package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
)

// EnvUI is the Temporal web UI's base address for links (--ui).
const EnvUI = "GLEANER_UI"

// defaultClientConnectTimeout is how long the client verbs retry an
// unreachable server: shorter than a worker's, a person is waiting.
const defaultClientConnectTimeout = 10 * time.Second

// connectOptions are the connection flags every client verb shares with
// `gleaner worker`: the same names, the same environment variables
// (client.Connection.LoadEnv), a flag given on the command line winning
// over the environment, and the same dialling (client.Connection.Dial:
// TLS, mTLS, API key).
type connectOptions struct {
	flags  client.Connection // bound to the flags
	apiKey string            // apart, so that --help never shows TEMPORAL_API_KEY
	ui     string
	// links: the verb prints web UI links, so connect finds the UI
	// (linkBase); without, the client makes none.
	links bool

	getenv func(string) string // os.Getenv unless a test sets it
	// dial connects; client.Connection.Dial unless a test sets it.
	dial func(context.Context, client.Connection) (tclient.Client, error)
	// probeUI reports whether a Temporal web UI answers at base;
	// probeTemporalUI unless a test sets it.
	probeUI func(ctx context.Context, base string) bool

	// resolved is the connection connect dialled, for messages.
	resolved client.Connection
}

// addFlags defines the connection flags on f.
func (o *connectOptions) addFlags(f *pflag.FlagSet) {
	o.flags = client.DefaultConnection()
	o.flags.ConnectTimeout = defaultClientConnectTimeout
	bindConnectionFlags(f, &o.flags, &o.apiKey, "task queue Gleaner's workers poll")
	f.StringVar(&o.ui, "ui", "", "Temporal web UI base address for links, - for none (default: a dev server's UI found at the --address port + 1000, else none) ["+EnvUI+"]")
}

// bindConnectionFlags defines the flags every command that talks to
// Temporal shares (gleaner worker too), one per field of c, bound to c and
// apiKey, with c's values as defaults.
func bindConnectionFlags(f *pflag.FlagSet, c *client.Connection, apiKey *string, taskQueueHelp string) {
	f.StringVar(&c.HostPort, "address", c.HostPort, "Temporal frontend host:port ["+client.EnvAddress+"]")
	f.StringVar(&c.Namespace, "namespace", c.Namespace, "Temporal namespace ["+client.EnvNamespace+"]")
	f.StringVar(&c.TaskQueue, "task-queue", c.TaskQueue, taskQueueHelp+" ["+client.EnvTaskQueue+"]")
	f.BoolVar(&c.TLS.Enabled, "tls", false, "use TLS with the system's roots (implied by the other --tls-* flags and --api-key) ["+client.EnvTLS+"]")
	f.StringVar(&c.TLS.CAFile, "tls-ca", "", "PEM file of the CA certificates to trust ["+client.EnvTLSCA+"]")
	f.StringVar(&c.TLS.CertFile, "tls-cert", "", "PEM client certificate for mTLS ["+client.EnvTLSCert+"]")
	f.StringVar(&c.TLS.KeyFile, "tls-key", "", "PEM client key for mTLS ["+client.EnvTLSKey+"]")
	f.StringVar(&c.TLS.ServerName, "tls-server-name", "", "name to verify in the server's certificate ["+client.EnvTLSServerName+"]")
	f.StringVar(apiKey, "api-key", "", "Temporal Cloud API key; prefer the environment variable ["+client.EnvAPIKey+"]")
	f.StringVar(&c.Codec.KeyFile, "codec-key-file", "", "encrypt every payload with the AES-256-GCM keys in this file (32 raw bytes, or hex or base64 lines, the first encrypting); the keys may instead be in "+client.EnvCodecKey+" ["+client.EnvCodecKeyFile+"]")
	f.DurationVar(&c.ConnectTimeout, "connect-timeout", c.ConnectTimeout, "how long to retry an unreachable server")
}

// applyConnectionFlags copies into dst the connection flags given on the
// command line (bound to src and apiKey): a flag wins over the environment.
func applyConnectionFlags(flags *pflag.FlagSet, dst *client.Connection, src client.Connection, apiKey string) {
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
		case "codec-key-file":
			dst.Codec.KeyFile = src.Codec.KeyFile
		}
	})
}

// config is the environment with the flags given on the command line on
// top, validated. Only the connection's variables are read: a
// GLEANER_NODE_SOURCE meant for a worker must not break `status`. Errors
// name the flag (and variable) and exit 2.
func (o *connectOptions) config(flags *pflag.FlagSet) (client.Connection, error) {
	conn := client.DefaultConnection()
	conn.ConnectTimeout = defaultClientConnectTimeout
	envErr := conn.LoadEnv(o.getenv)
	applyConnectionFlags(flags, &conn, o.flags, o.apiKey)
	if err := errors.Join(envErr, conn.Validate()); err != nil {
		return conn, withCode(ExitUsage, fmt.Errorf("connection:\n%w", err))
	}
	return conn, nil
}

// uiBase is --ui, else GLEANER_UI, else "" (not given: see linkBase).
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
	warnConnection(stderr, "gleaner", cfg)
	dc, err := cfg.DataConverter()
	if err != nil {
		return nil, nil, withCode(ExitUsage, err)
	}
	dial := o.dial
	if dial == nil {
		dial = func(ctx context.Context, c client.Connection) (tclient.Client, error) { return c.Dial(ctx) }
	}
	// Look for the web UI while dialling: neither waits for the other.
	ui := make(chan string, 1)
	if o.links {
		go func() { ui <- o.linkBase(ctx, flags, cfg) }()
	} else {
		ui <- "-"
	}
	tc, err := dial(ctx, cfg)
	if err != nil {
		var fe *client.FieldError
		if errors.As(err, &fe) {
			return nil, nil, withCode(ExitUsage, err)
		}
		return nil, nil, err
	}
	o.resolved = cfg
	c := client.New(tc, client.Options{TaskQueue: cfg.TaskQueue, Namespace: cfg.Namespace, UIBase: <-ui, DataConverter: dc})
	return c, tc.Close, nil
}

// warnConnection prints the connection's warnings (a codec key file
// others may read) to w.
func warnConnection(w io.Writer, who string, c client.Connection) {
	for _, msg := range c.Codec.Warnings() {
		fmt.Fprintf(w, "%s: warning: %s\n", who, msg)
	}
}

// uiProbeTimeout bounds the look for a dev server's web UI.
const uiProbeTimeout = time.Second

// linkBase is the web UI links point to: --ui or GLEANER_UI when given;
// else, for a server without TLS, a dev server's UI when one answers at
// the frontend port + 1000 (where `temporal server start-dev` puts it
// unless told otherwise); else, for Temporal Cloud, its UI; else "-", no
// links: better none than one to a UI that is not there.
func (o *connectOptions) linkBase(ctx context.Context, flags *pflag.FlagSet, cfg client.Connection) string {
	if ui := o.uiBase(flags); ui != "" {
		return ui
	}
	host, _, err := net.SplitHostPort(cfg.HostPort)
	if err != nil {
		return "-"
	}
	if strings.HasSuffix(strings.ToLower(host), ".tmprl.cloud") {
		return temporalCloudUI
	}
	if cfg.UsesTLS() {
		return "-"
	}
	probe, shown, ok := devServerUI(cfg.HostPort)
	if !ok {
		return "-"
	}
	check := o.probeUI
	if check == nil {
		check = probeTemporalUI
	}
	ctx, cancel := context.WithTimeout(ctx, uiProbeTimeout)
	defer cancel()
	if !check(ctx, probe) {
		return "-"
	}
	return shown
}

// temporalCloudUI is Temporal Cloud's web UI.
const temporalCloudUI = "https://cloud.temporal.io"

// devServerUI is where `temporal server start-dev --port P` serves its web
// UI unless --ui-port says otherwise: port P+1000 of the same host. probe
// is the address to check; shown is the one for people (localhost for a
// loopback address, as the dev server itself prints it).
func devServerUI(hostPort string) (probe, shown string, ok bool) {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", "", false
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p+1000 > 65535 {
		return "", "", false
	}
	uiPort := strconv.Itoa(p + 1000)
	probe = "http://" + net.JoinHostPort(host, uiPort)
	shown = probe
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		shown = "http://" + net.JoinHostPort("localhost", uiPort)
	}
	return probe, shown, true
}

// probeTemporalUI reports whether a Temporal web UI answers at base: its
// server's settings endpoint, which every version since 2.0 serves without
// a login, answers 200.
func probeTemporalUI(ctx context.Context, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/v1/settings", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// hintConnectionFlags are the flags a hint repeats, in this order, so that
// the command it suggests reaches the same server and namespace.
var hintConnectionFlags = []string{"address", "namespace", "task-queue", "tls", "tls-ca", "tls-cert",
	"tls-key", "tls-server-name", "api-key", "codec-key-file", "ui"}

// hintFlags renders the connection flags given on this command line for a
// hint that suggests another gleaner command (connectionHint); withUI
// keeps --ui, which `gleaner worker` does not take.
func hintFlags(flags *pflag.FlagSet, withUI bool) string {
	return connectionHint(func(name string) (string, bool) {
		f := flags.Lookup(name)
		if f == nil || !f.Changed {
			return "", false
		}
		return f.Value.String(), true
	}, withUI)
}

// connectionHint renders the connection flags that given reports (by
// flag name: value, and whether it was given) as they go on a hinted
// gleaner command line: " --address host:7233 --namespace ns", shell-quoted,
// or "" when none was given. Settings from the environment are left out:
// the command the hint suggests reads the same environment. An API key is
// never shown: --api-key appears as "--api-key …", for the reader to fill
// in (or to drop in favour of TEMPORAL_API_KEY).
func connectionHint(given func(flag string) (string, bool), withUI bool) string {
	var b strings.Builder
	for _, name := range hintConnectionFlags {
		v, ok := given(name)
		if !ok || (name == "ui" && !withUI) {
			continue
		}
		switch name {
		case "tls":
			if v == "true" {
				b.WriteString(" --tls")
			} else {
				b.WriteString(" --tls=" + shellQuote(v))
			}
		case "api-key":
			b.WriteString(" --api-key …")
		default:
			b.WriteString(" --" + name + " " + shellQuote(v))
		}
	}
	return b.String()
}

// commandHint is a gleaner command line for a hint: args shell-quoted
// (placeholders in capitals, such as NAME, read as they are), then conn,
// from hintFlags or connectionHint.
func commandHint(conn string, args ...string) string {
	var b strings.Builder
	b.WriteString("gleaner")
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	return b.String() + conn
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/=@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkCampaignName rejects a CAMPAIGN argument that is not a valid name
// (gleaner.ValidateName): exit 2, before anything contacts the server.
func checkCampaignName(name string) error {
	return withCode(ExitUsage, gleaner.ValidateName("CAMPAIGN", name))
}
