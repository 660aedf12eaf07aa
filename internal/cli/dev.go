package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/worker"
)

// Defaults of `gleaner dev`. Its state lies in the user's state directory
// (statedir.go) wherever it runs, a checkout or not: the database in
// devStateDir, which `make devserver` shares, and the run data in
// defaultDataDir, which `gleaner worker` shares.
const (
	devDBFile = "temporal.db"
	// devDefaultTrace is the Summit idle-node trace, built into the binary.
	devDefaultTrace = data.Prefix + data.SummitIdle
	// devDefaultReplay replays it onto 8 local CPU slots, 300× faster (a
	// trace hour in 12 s), from trace time 48h30m: there 4 to 7 of the 8
	// nodes are idle at any moment of the first minute, and nodes come or
	// go 10 times in its first 10 s and 27 times in all.
	devDefaultReplay = "replay:" + devDefaultTrace + ",slots=8,factor=300,offset=48h30m,gpus=none"
)

type devOptions struct {
	ip           string
	port, uiPort int
	// dashboardPort is gleaner dashboard's (0 picks a free one, -1 none).
	dashboardPort int
	db            string
	dataDir       string
	nodes         string
	campaign      string
	exitWhenDone  bool
	interval      time.Duration
	stopTimeout   time.Duration
	logLevel      string
	logFile       string // dev_log.go
}

func newDevCmd() *cobra.Command {
	o := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the demo: a local Temporal dev server and web UI, a worker, and an example HPO campaign",
		Long: `Everything on this machine, in one process (what ` + "`make demo`" + ` runs),
from a checkout or from an installed binary alone:

  1. a Temporal dev server with Gleaner's search attributes and its web UI
     (http://localhost:8233), its state kept in --db so a restart keeps
     the history (the temporal CLI must be installed: see below);
  2. a worker with the local launcher and, by default, the idle-node trace
     of OLCF Summit built into this binary, replayed 300× faster onto 8
     local slots, so nodes come and go;
  3. the dashboard (gleaner dashboard; http://localhost:8234, --dashboard-port):
     the campaign's optimisation history, learning curves, importance and
     trials, and which trial held which node when;
  4. the example HPO campaign (--campaign; default examples/go-mlp/
     campaign.yaml, or its copy built into this binary outside a
     checkout), under a name unique to this run; its trainer, bin/go-mlp,
     is the Go example trainer built into this binary;
  5. its progress every --interval, then its leaderboard and where to look
     in the web UI.

The server, its UI and the worker then stay up until Ctrl-C (or exit at
once with --exit-when-done). Ctrl-C at any point stops everything this
command started: running trainers get their grace period, then the worker
and the server stop. A second Ctrl-C kills at once.

State lies in Gleaner's state directory, $XDG_STATE_HOME/gleaner
(~/.local/state/gleaner), from a checkout or not: the server's database
in dev/temporal.db (the one ` + "`make devserver`" + ` uses) and the trials' run data
in data/ (the one ` + "`gleaner worker`" + ` uses). The worker's and the Temporal
client's log goes to dev/` + devLogFile + ` there (--log-file); an error also shows
here as one short line.

The temporal CLI is found through $TEMPORAL_CLI, PATH and $(go env
GOPATH)/bin; install it with
  go install github.com/temporalio/cli/cmd/temporal@` + devserver.PinnedVersion,
		Example: `  make demo                                   # in a checkout: builds bin/gleaner, then runs: bin/gleaner dev
  gleaner dev                                 # an installed binary, anywhere
  gleaner dev --port 7300 --ui-port 8300      # beside another dev server
  gleaner dev --nodes static:4,gpus=none --campaign my-campaign.yaml
  gleaner dev --exit-when-done --db ""        # in memory, exit when the campaign ends`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			if err := o.defaultPaths(f.Changed("db"), f.Changed("data-dir")); err != nil {
				return err
			}
			d := newDevRun(o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			return d.run(cmd.Context(), f.Changed("nodes"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ip, "ip", "127.0.0.1", "address the dev server and its web UI listen on")
	f.IntVar(&o.port, "port", 7233, "dev server (frontend gRPC) port; 0 picks a free one")
	f.IntVar(&o.uiPort, "ui-port", 8233, "web UI port; 0 picks a free one")
	f.IntVar(&o.dashboardPort, "dashboard-port", 8234, "Gleaner dashboard port; 0 picks a free one, -1 serves none")
	f.StringVar(&o.db, "db", "", `SQLite file keeping the server's state across restarts ("" keeps it in memory; default STATE/`+stateDevSubdir+"/"+devDBFile+`, STATE is `+stateDirHint+`)`)
	f.StringVar(&o.dataDir, "data-dir", "", "directory for the trials' checkpoints and run directories (default STATE/"+stateDataSubdir+", as gleaner worker's)")
	f.StringVar(&o.nodes, "nodes", devDefaultReplay, "node source: static:N or replay:FILE,slots=K,factor=F,offset=S (see gleaner worker --help)")
	f.StringVar(&o.campaign, "campaign", "", "campaign spec, YAML or JSON (default "+devCampaignFile+", else the copy built into this binary)")
	f.BoolVar(&o.exitWhenDone, "exit-when-done", false, "stop everything and exit once the campaign has ended")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "how often to print the campaign's progress")
	f.DurationVar(&o.stopTimeout, "stop-timeout", time.Minute, "on Ctrl-C, how long running trainers may take to stop (their grace period applies within it)")
	f.StringVar(&o.logLevel, "log-level", "warn", "log level of the worker and the Temporal client in --log-file: debug, info, warn or error (errors also show on stderr, one short line each)")
	f.StringVar(&o.logFile, "log-file", "", "the worker's and the Temporal client's log, appended (default STATE/"+stateDevSubdir+"/"+devLogFile+"); - writes it whole to stderr")
	return cmd
}

// defaultPaths fills --db and --data-dir when not given, in the user's
// state directory.
func (o *devOptions) defaultPaths(dbGiven, dataDirGiven bool) error {
	if !dbGiven {
		state, err := devStateDir(nil)
		if err != nil {
			return fmt.Errorf("--db: %w; pass --db", err)
		}
		o.db = filepath.Join(state, devDBFile)
	}
	if !dataDirGiven {
		data, err := defaultDataDir(nil)
		if err != nil {
			return fmt.Errorf("--data-dir: %w; pass --data-dir", err)
		}
		o.dataDir = data
	}
	return nil
}

// devInCheckout reports whether the working directory is the root of a
// gleaner checkout (it holds the example campaign).
func devInCheckout() bool {
	st, err := os.Stat(devCampaignFile)
	return err == nil && st.Mode().IsRegular()
}

// devRun is one run of `gleaner dev`: where it prints, its clock, and the
// binary that carries the example trainer.
type devRun struct {
	o              *devOptions
	stdout, stderr io.Writer
	tty            bool // stdout is a terminal: redraw the progress line
	now            func() time.Time
	// executable finds the gleaner binary, whose hidden example-trainer
	// subcommand runs the example campaigns' bin/go-mlp; exe is what it
	// found, once a campaign needs it.
	executable func() (string, error)
	exe        string
	// ui is the web UI's address and conn what a hinted gleaner command
	// needs to reach this run's server (devConnectionHint); both set once
	// the server is up.
	ui, conn string
	// dashboard is the dashboard's URL ("" without one).
	dashboard string
	slots     int // local slots the node source drives (0: not local)
}

func newDevRun(o *devOptions, stdout, stderr io.Writer) *devRun {
	return &devRun{o: o, stdout: stdout, stderr: stderr, tty: isTerminal(stdout), now: time.Now, executable: os.Executable}
}

func (d *devRun) say(format string, args ...any) {
	fmt.Fprintf(d.stdout, "gleaner dev: "+format+"\n", args...)
}

func (d *devRun) warn(format string, args ...any) {
	fmt.Fprintf(d.stderr, "gleaner dev: warning: "+format+"\n", args...)
}

// run checks everything that needs no server, then starts the server, the
// worker and the campaign, follows the campaign to its end and, unless
// --exit-when-done, waits for Ctrl-C.
func (d *devRun) run(parent context.Context, nodesGiven bool) (err error) {
	if parent == nil {
		parent = context.Background()
	}
	o := d.o
	level, err := o.check()
	if err != nil {
		return err
	}
	nodes, err := d.nodeSource(nodesGiven)
	if err != nil {
		return err
	}
	d.slots = devSlotCount(nodes)
	camp, err := d.loadCampaign()
	if err != nil {
		return err
	}
	if err := d.portsFree(); err != nil {
		return err
	}
	handler, closeLog, err := d.logHandler(level) // dev_log.go: the log in its file, errors in short
	if err != nil {
		return err
	}
	defer closeLog()
	logger := log.NewStructuredLogger(slog.New(handler))

	// From here on, Ctrl-C (or SIGTERM) cancels ctx and everything below
	// unwinds in reverse order: trainers, worker, server. After the first
	// signal the default action is back, so a second one kills at once
	// (the server and the trainers die with this process: Pdeathsig).
	ctx, stopSignals := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	interrupted := func() bool { return ctx.Err() != nil && parent.Err() == nil }
	defer func() {
		if err != nil && interrupted() {
			err = nil // stopped by a person, not failed
		}
	}()
	go func() {
		<-ctx.Done()
		stopSignals()
	}()

	srv, stopServer, err := d.startServer(ctx, logger)
	if err != nil {
		return err
	}
	defer stopServer()
	taskQueue, stopWorker, err := d.startWorker(ctx, srv, nodes, camp.spec, logger)
	if err != nil {
		return err
	}
	defer stopWorker()

	c := client.New(srv.Client(), client.Options{TaskQueue: taskQueue, UIBase: d.ui, Namespace: srv.Namespace()})
	if err := d.startDashboard(ctx, c); err != nil {
		return err
	}
	d.noteEarlierCampaigns(ctx, srv)
	submitted, err := d.submit(ctx, c, camp)
	if err != nil {
		return err
	}
	if err := d.follow(ctx, c, submitted, camp.spec, srv.Namespace()); err != nil || ctx.Err() != nil {
		return err
	}
	if o.exitWhenDone {
		return nil
	}
	d.say("the dev server, its web UI and the worker stay up: press Ctrl-C to stop them (the history stays in %s)", devOrMemory(o.db))
	<-ctx.Done()
	return nil
}

// check validates the flags that need nothing started; it returns the
// log level.
func (o *devOptions) check() (slog.Level, error) {
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return level, err
	}
	if o.interval <= 0 {
		return level, fmt.Errorf("--interval %v: must be positive", o.interval)
	}
	if o.stopTimeout < 0 {
		return level, fmt.Errorf("--stop-timeout %v: must not be negative", o.stopTimeout)
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"port", o.port}, {"ui-port", o.uiPort}} {
		if p.port < 0 || p.port > 65535 {
			return level, fmt.Errorf("--%s %d: want a port in 0..65535 (0 picks a free one)", p.flag, p.port)
		}
	}
	if o.port != 0 && o.port == o.uiPort {
		return level, fmt.Errorf("--port and --ui-port are both %d: they must differ", o.port)
	}
	if o.dashboardPort < -1 || o.dashboardPort > 65535 {
		return level, fmt.Errorf("--dashboard-port %d: want a port in 0..65535 (0 picks a free one), or -1 for no dashboard", o.dashboardPort)
	}
	if o.dashboardPort > 0 && (o.dashboardPort == o.port || o.dashboardPort == o.uiPort) {
		return level, fmt.Errorf("--dashboard-port %d: taken by --port or --ui-port", o.dashboardPort)
	}
	return level, nil
}

// devSlotCount is the number of local slots a node source drives.
func devSlotCount(n worker.NodeSourceConfig) int {
	switch n.Kind {
	case worker.NodeSourceStatic:
		return n.Static.Nodes
	case worker.NodeSourceReplay:
		return n.Replay.Slots
	}
	return 0
}
