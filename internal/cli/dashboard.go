package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/dashboard"
)

// Environment variables of `gleaner dashboard`.
const (
	EnvDashboardListen = "GLEANER_DASHBOARD_LISTEN"
	// EnvDashboardToken is the bearer token itself (--auth-token-file
	// gives it in a file).
	EnvDashboardToken     = "GLEANER_DASHBOARD_AUTH_TOKEN"
	EnvDashboardTokenFile = "GLEANER_DASHBOARD_AUTH_TOKEN_FILE"
)

// DefaultDashboardListen is where the dashboard listens: loopback, since
// it shows every campaign's parameters and failures.
const DefaultDashboardListen = "127.0.0.1:8234"

type dashboardOptions struct {
	conn      connectOptions
	listen    string
	tokenFile string
	certFile  string
	keyFile   string
	refresh   time.Duration
	getenv    func(string) string
	// ready, when set, is told the URL once the server listens (tests).
	ready func(url string)
}

func newDashboardCmd() *cobra.Command {
	o := &dashboardOptions{getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a web dashboard of campaigns and pools: optimisation history, learning curves, importance, who held which node when",
		Long: `Serves a read-only web page, embedded in this binary (it needs no
internet), over the Temporal server the dial flags name:

  campaigns  a list (state, progress, best, trials per state, age, pool);
             per campaign: the optimisation history (by trial number or
             time, with the best so far), learning curves (top-k, rung and
             generation boundaries, stopped/paused/failed marked), parallel
             coordinates (drag on an axis to select trials), parameter
             importance (PED-ANOVA), slices, the trial table (sort, filter,
             failure with the log's last lines, CSV and JSON export) and
             the trial timeline;
  pools      who held which node when (idle and busy periods, rescales,
             preemptions, the batch scheduler's idle-until ahead of now),
             the allocation log, each trial's throughput measured and
             predicted, and harvest figures.

It reads durable records (trial records chunks, the pool's log chunks)
and reads each once; a watched campaign or pool is read again at most
every --refresh, however many pages are open. Pages poll for what changed.

It listens on loopback by default and, without a token, answers only
requests addressed to localhost (reach it through an SSH tunnel). To serve
others, require a token (--auth-token-file; open the page once with
?token=TOKEN, or send Authorization: Bearer TOKEN) and serve TLS
(--tls-cert-file, --tls-key-file). ` + "`gleaner dev`" + ` serves it too.`,
		Example: `  gleaner dashboard                       # http://127.0.0.1:8234
  gleaner dashboard --address temporal.example.org:7233 --namespace hpo \
    --listen 0.0.0.0:8443 --auth-token-file /etc/gleaner/dashboard.token \
    --tls-cert-file dash.crt --tls-key-file dash.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", DefaultDashboardListen, "address to listen on, host:port ["+EnvDashboardListen+"]")
	f.StringVar(&o.tokenFile, "auth-token-file", "", "require this bearer token (in the file) ["+EnvDashboardTokenFile+", or the token in "+EnvDashboardToken+"]")
	f.StringVar(&o.certFile, "tls-cert-file", "", "serve HTTPS with this certificate (PEM; with --tls-key-file)")
	f.StringVar(&o.keyFile, "tls-key-file", "", "the certificate's private key (PEM)")
	f.DurationVar(&o.refresh, "refresh", dashboard.DefaultRefresh, "how often a watched campaign or pool is read again (the bound on the server's load)")
	o.conn.addFlags(f)
	return cmd
}

// dashboardConfig is what the flags and the environment resolve to.
type dashboardConfig struct {
	listen, token, cert, key string
}

func (o *dashboardOptions) config(flags *pflag.FlagSet) (dashboardConfig, error) {
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c := dashboardConfig{listen: o.listen, cert: o.certFile, key: o.keyFile}
	if v := getenv(EnvDashboardListen); v != "" && !flags.Changed("listen") {
		c.listen = v
	}
	if _, _, err := net.SplitHostPort(c.listen); err != nil {
		return c, withCode(ExitUsage, fmt.Errorf("--listen %q: %v", c.listen, err))
	}
	var err error
	if c.token, err = bearerToken(flags, getenv, o.tokenFile, EnvDashboardTokenFile, EnvDashboardToken); err != nil {
		return c, err
	}
	if (c.cert == "") != (c.key == "") {
		return c, withCode(ExitUsage, errors.New("--tls-cert-file and --tls-key-file: give both or neither"))
	}
	if c.cert != "" {
		if _, err := tls.LoadX509KeyPair(c.cert, c.key); err != nil {
			return c, withCode(ExitUsage, fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", c.cert, c.key, err))
		}
	}
	if o.refresh <= 0 {
		return c, withCode(ExitUsage, fmt.Errorf("--refresh %v: must be > 0", o.refresh))
	}
	return c, nil
}

func (o *dashboardOptions) run(ctx context.Context, flags *pflag.FlagSet, stdout, stderr io.Writer) error {
	cfg, err := o.config(flags)
	if err != nil {
		return err
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	host, _, _ := net.SplitHostPort(cfg.listen)
	if ip := net.ParseIP(host); cfg.token == "" && (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		fmt.Fprintf(stderr, "gleaner dashboard: warning: listening on %s without --auth-token-file: it answers only requests addressed to localhost (an SSH tunnel); give it a token to serve others\n", cfg.listen)
	}
	return serveDashboard(ctx, c, cfg, dashboard.Options{Token: cfg.token, Refresh: o.refresh, UIBase: o.conn.uiBase(flags)},
		func(url string) {
			fmt.Fprintf(stdout, "gleaner dashboard: serving %s\n", url)
			if o.ready != nil {
				o.ready(url)
			}
		})
}

// serveDashboard serves the dashboard until ctx ends; listening tells the
// URL once it listens.
func serveDashboard(ctx context.Context, c *client.Client, cfg dashboardConfig, opts dashboard.Options, listening func(url string)) error {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.listen, err)
	}
	srv := &http.Server{Handler: dashboard.New(c, opts), ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	scheme := "http"
	if cfg.cert != "" {
		scheme = "https"
	}
	listening(fmt.Sprintf("%s://%s/", scheme, ln.Addr()))
	done := make(chan error, 1)
	go func() {
		if cfg.cert != "" {
			done <- srv.ServeTLS(ln, cfg.cert, cfg.key)
			return
		}
		done <- srv.Serve(ln)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	}
}

// startDashboard serves the dashboard beside the demo (--dashboard-port;
// -1: none) until ctx ends.
func (d *devRun) startDashboard(ctx context.Context, c *client.Client) error {
	if d.o.dashboardPort < 0 {
		return nil
	}
	cfg := dashboardConfig{listen: net.JoinHostPort(d.o.ip, fmt.Sprint(d.o.dashboardPort))}
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- serveDashboard(ctx, c, cfg, dashboard.Options{UIBase: d.ui}, func(url string) { ready <- url })
	}()
	select {
	case url := <-ready:
		d.dashboard = url
		d.say("Gleaner dashboard: %s", url)
		return nil
	case err := <-errc:
		return fmt.Errorf("--dashboard-port %d: %w", d.o.dashboardPort, err)
	}
}
