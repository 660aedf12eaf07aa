package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Defaults of `gleaner dev`. Paths are relative to the working directory:
// the repository root, where `make demo` runs it.
const (
	devDefaultDB      = "bin/dev/temporal.db"
	devDefaultDataDir = "bin/dev/data"
	// devDefaultTrace is the Summit idle-node trace beside the checkout.
	devDefaultTrace = "../shared/data/traces/summit-idle-2021-02-10_14.csv"
	// devDefaultReplay replays it onto 8 local CPU slots, 300× faster (a
	// trace hour in 12 s), from trace time 48h30m: there 4 to 7 of the 8
	// nodes are idle at any moment of the first minute, and nodes come or
	// go 10 times in its first 10 s and 27 times in all.
	devDefaultReplay = "replay:" + devDefaultTrace + ",slots=8,factor=300,offset=48h30m,gpus=none"
	devFallbackNodes = "static:8,gpus=none"
	// devTrainer is the example trainer the example campaigns run.
	devTrainer    = "bin/go-mlp"
	devTrainerPkg = "./examples/go-mlp"
)

// devCampaignFiles are tried in order when --campaign is not given.
var devCampaignFiles = []string{"examples/go-mlp/campaign.yaml", "examples/go-mlp/campaign.json"}

type devOptions struct {
	ip           string
	port, uiPort int
	db           string
	dataDir      string
	nodes        string
	campaign     string
	exitWhenDone bool
	interval     time.Duration
	stopTimeout  time.Duration
	logLevel     string
}

func newDevCmd() *cobra.Command {
	o := &devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the demo: a local Temporal dev server and web UI, a worker, and an example HPO campaign",
		Long: `Everything on this machine, in one process (what ` + "`make demo`" + ` runs):

  1. a Temporal dev server with Gleaner's search attributes and its web UI
     (http://localhost:8233), its state kept in --db so a restart keeps
     the history;
  2. a worker with the local launcher and, by default, an idle-node trace
     of OLCF Summit replayed 300× faster onto 8 local slots, so nodes come
     and go (static:8 when ../shared/data is absent);
  3. the example HPO campaign (--campaign; the Go example trainer is built
     into bin/go-mlp when missing or out of date), under a name unique to
     this run;
  4. its progress every --interval, then its leaderboard and where to look
     in the web UI.

The server, its UI and the worker then stay up until Ctrl-C (or exit at
once with --exit-when-done). Ctrl-C at any point stops everything this
command started: running trainers get their grace period, then the worker
and the server stop. A second Ctrl-C kills at once.`,
		Example: `  make demo                                   # builds bin/gleaner, then runs: bin/gleaner dev
  gleaner dev --port 7300 --ui-port 8300      # beside another dev server
  gleaner dev --nodes static:4,gpus=none --campaign my-campaign.yaml
  gleaner dev --exit-when-done --db ""        # in memory, exit when the campaign ends`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.Flags().Changed("nodes"), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ip, "ip", "127.0.0.1", "address the dev server and its web UI listen on")
	f.IntVar(&o.port, "port", 7233, "dev server (frontend gRPC) port; 0 picks a free one")
	f.IntVar(&o.uiPort, "ui-port", 8233, "web UI port; 0 picks a free one")
	f.StringVar(&o.db, "db", devDefaultDB, `SQLite file keeping the server's state across restarts ("" keeps it in memory)`)
	f.StringVar(&o.dataDir, "data-dir", devDefaultDataDir, "directory for the trials' checkpoints and run directories")
	f.StringVar(&o.nodes, "nodes", devDefaultReplay, "node source: static:N or replay:FILE,slots=K,factor=F,offset=S (see gleaner worker --help)")
	f.StringVar(&o.campaign, "campaign", "", "campaign spec, YAML or JSON (default "+strings.Join(devCampaignFiles, ", else ")+")")
	f.BoolVar(&o.exitWhenDone, "exit-when-done", false, "stop everything and exit once the campaign has ended")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "how often to print the campaign's progress")
	f.DurationVar(&o.stopTimeout, "stop-timeout", time.Minute, "on Ctrl-C, how long running trainers may take to stop (their grace period applies within it)")
	f.StringVar(&o.logLevel, "log-level", "error", "log level of the worker and the Temporal client: debug, info, warn or error (to stderr)")
	return cmd
}

// devRun is one run of `gleaner dev`: what it printed where, and what it
// must stop.
type devRun struct {
	o              *devOptions
	stdout, stderr io.Writer
	tty            bool // stdout is a terminal: redraw the progress line
	// conn is what a hinted gleaner command needs to reach this run's
	// server (devConnectionHint); set once the server is up.
	conn string
}

func (d *devRun) say(format string, args ...any) {
	fmt.Fprintf(d.stdout, "gleaner dev: "+format+"\n", args...)
}

func (d *devRun) warn(format string, args ...any) {
	fmt.Fprintf(d.stderr, "gleaner dev: warning: "+format+"\n", args...)
}

func (o *devOptions) run(parent context.Context, nodesGiven bool, stdout, stderr io.Writer) (err error) {
	if parent == nil {
		parent = context.Background()
	}
	d := &devRun{o: o, stdout: stdout, stderr: stderr, tty: isTerminal(stdout)}

	// Check everything that needs no server first.
	level, err := parseLogLevel(o.logLevel)
	if err != nil {
		return err
	}
	if o.interval <= 0 {
		return fmt.Errorf("--interval %v: must be positive", o.interval)
	}
	if o.stopTimeout < 0 {
		return fmt.Errorf("--stop-timeout %v: must not be negative", o.stopTimeout)
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"port", o.port}, {"ui-port", o.uiPort}} {
		if p.port < 0 || p.port > 65535 {
			return fmt.Errorf("--%s %d: want a port in 0..65535 (0 picks a free one)", p.flag, p.port)
		}
	}
	if o.port != 0 && o.port == o.uiPort {
		return fmt.Errorf("--port and --ui-port are both %d: they must differ", o.port)
	}
	nodes, err := d.nodeSource(nodesGiven)
	if err != nil {
		return err
	}
	spec, file, err := d.loadCampaign()
	if err != nil {
		return err
	}
	if err := d.portsFree(); err != nil {
		return err
	}
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))

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

	if err := d.ensureTrainer(ctx, spec); err != nil {
		if interrupted() {
			return nil
		}
		return err
	}

	// 1. The Temporal dev server.
	srvOpts := devserver.Options{
		IP: o.ip, Port: o.port, UI: true, UIPort: o.uiPort,
		DBFile: o.db, Logger: logger,
	}
	var serverLog string
	if o.db != "" {
		serverLog = strings.TrimSuffix(o.db, filepath.Ext(o.db)) + ".log"
		if err := os.MkdirAll(filepath.Dir(serverLog), 0o755); err != nil {
			return fmt.Errorf("--db %s: %w", o.db, err)
		}
		lf, err := os.OpenFile(serverLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--db %s: server log: %w", o.db, err)
		}
		defer lf.Close()
		srvOpts.Output = lf
	}
	where := "in memory"
	if o.db != "" {
		where = "state in " + o.db
	}
	d.say("starting Temporal dev server on %s (%s)…", net.JoinHostPort(o.ip, strconv.Itoa(o.port)), where)
	start := time.Now()
	srv, err := devserver.Start(ctx, srvOpts)
	if err != nil {
		if interrupted() {
			return nil
		}
		if errors.Is(err, devserver.ErrCLINotFound) {
			return fmt.Errorf("%w\n(`make demo` installs it: make temporal)", err)
		}
		return fmt.Errorf("starting the Temporal dev server: %w", err)
	}
	defer func() {
		d.say("stopping the Temporal dev server…")
		if err := srv.Stop(); err != nil {
			d.warn("%v", err)
		}
		d.say("stopped")
	}()
	ui := devUIBase(srv.UIURL(), o.ip)
	d.conn = devConnectionHint(srv.Address(), srv.Namespace(), ui)
	d.say("Temporal dev server ready at %s in %v (namespace %s)", srv.Address(), time.Since(start).Round(100*time.Millisecond), srv.Namespace())
	d.say("Temporal web UI:  %s", ui)
	if serverLog != "" {
		d.say("server log:       %s", serverLog)
	}

	// 2. The worker, in this process.
	cfg := worker.DefaultConfig()
	cfg.DataDir = o.dataDir
	cfg.Nodes = nodes
	cfg.StopTimeout = o.stopTimeout
	cfg.Pool = worker.InteractivePool // nodes come and go within a second (the defaults poll every 5 s)
	cfg.Logger = logger
	// Only the examples' trainers and this campaign's run here (docs/security.md).
	cmd0 := spec.Command[0]
	if spec.WorkDir != "" && strings.ContainsRune(cmd0, '/') && !filepath.IsAbs(cmd0) {
		cmd0 = filepath.Join(spec.WorkDir, cmd0)
	}
	cfg.Trainers.AllowCommands = devenv.ExampleTrainers(".", cmd0)
	gate := newDevTrainerGate()
	w, err := devenv.StartWorker(ctx, srv, devenv.WorkerOptions{Config: cfg, WrapRunTrial: gate.wrap})
	if err != nil {
		return err
	}
	defer func() {
		n := gate.close()
		if n > 0 {
			d.say("stopping %d running trainer(s): SIGTERM, then SIGKILL after the trial's grace period…", n)
		}
		stopped := make(chan struct{})
		go func() {
			// Stop stops polling at once and waits (up to --stop-timeout)
			// for the activities in flight, the trainers' among them.
			w.Stop()
			close(stopped)
		}()
		if !gate.wait(o.stopTimeout) {
			d.warn("trainers still running after --stop-timeout %v; they are killed as this process exits", o.stopTimeout)
		}
		<-stopped
		d.say("worker stopped")
	}()
	d.say("worker polling task queue %s: nodes %s, data in %s", cfg.TaskQueue, nodes, cfg.DataDir)
	slots := devSlotCount(nodes)

	// 3. The campaign.
	c := client.New(srv.Client(), client.Options{TaskQueue: cfg.TaskQueue, UIBase: ui, Namespace: srv.Namespace()})
	d.noteEarlierCampaigns(ctx, srv)
	camp, err := c.Submit(ctx, spec)
	if err != nil {
		return err
	}
	spec = spec.WithDefaults()
	d.say("submitted campaign %s (%s): %d trials, at most %d at a time, on %d–%d nodes each, %s %s",
		camp.Name, file, spec.Budget.MaxTrials, spec.Budget.MaxConcurrent,
		spec.Resources.MinNodes, spec.Resources.MaxNodes, spec.Objective.Mode, spec.Objective.Metric)
	d.say("campaign in the UI: %s", camp.UIURL)
	d.say("follow it from another shell: %s", commandHint(d.conn, "status", camp.Name, "--watch"))
	if slots > 0 && slots <= 64 {
		d.say("progress every %v; node map: # running a trial, o idle and free, . taken back by the batch scheduler", o.interval)
	}

	// 4. Progress until the campaign ends.
	submitted := time.Now()
	var last client.Progress
	for p := range c.Watch(ctx, camp.Name, o.interval) {
		if p.Err != nil {
			if errors.Is(p.Err, client.ErrNotFound) {
				return fmt.Errorf("campaign %s vanished: %w", camp.Name, p.Err)
			}
			continue // not answering yet (its first task), or a transient error
		}
		last = p
		line := devProgressLine(time.Since(submitted), p, slots)
		if d.tty {
			// Redraw in place; auto-wrap off while writing, so that a line
			// wider than the terminal is clipped rather than wrapped (a
			// wrapped line would defeat the carriage return).
			fmt.Fprintf(d.stdout, "\r\x1b[K\x1b[?7l%s\x1b[?7h", line)
		} else {
			fmt.Fprintln(d.stdout, line)
		}
	}
	if d.tty {
		fmt.Fprintln(d.stdout)
	}
	if ctx.Err() != nil {
		return nil
	}
	if !last.Done() {
		return fmt.Errorf("campaign %s: progress stopped before it ended", camp.Name)
	}

	// 5. The result, the leaderboard and where to look.
	res, waitErr := c.Wait(ctx, camp.Name)
	if ctx.Err() != nil {
		return nil
	}
	fmt.Fprintf(d.stdout, "\ncampaign %s %s after %v: %d completed, %d stopped, %d failed\n",
		camp.Name, res.State, time.Since(submitted).Round(time.Second), res.Completed, res.Stopped, res.Failed)
	if res.Reason != "" {
		fmt.Fprintf(d.stdout, "  reason: %s\n", res.Reason)
	}
	devWriteLeaderboard(d.stdout, res.Leaderboard, spec.Objective)
	devWriteUI(d.stdout, ui, srv.Namespace(), camp)

	if waitErr != nil {
		if o.exitWhenDone {
			return waitErr
		}
		d.warn("%v", waitErr)
	}
	if o.exitWhenDone {
		return nil
	}
	d.say("the dev server, its web UI and the worker stay up: press Ctrl-C to stop them (the history stays in %s)", devOrMemory(o.db))
	<-ctx.Done()
	return nil
}

// nodeSource is --nodes, or its default: the replayed trace when it is
// there, else static slots.
func (d *devRun) nodeSource(given bool) (worker.NodeSourceConfig, error) {
	spec := d.o.nodes
	if !given && spec == devDefaultReplay {
		if _, err := os.Stat(devDefaultTrace); err != nil {
			d.warn("no idle-node trace at %s (the reference data sits beside the checkout); using %s: nodes never leave", devDefaultTrace, devFallbackNodes)
			spec = devFallbackNodes
		}
	}
	n, err := worker.ParseNodeSource(spec)
	if err != nil {
		return n, err
	}
	if err := n.Validate(); err != nil {
		return n, err
	}
	return n, nil
}

// loadCampaign loads --campaign (or the default example), names it
// uniquely for this run and validates it.
func (d *devRun) loadCampaign() (gleaner.CampaignSpec, string, error) {
	file := d.o.campaign
	if file == "" {
		for _, f := range devCampaignFiles {
			if _, err := os.Stat(f); err == nil {
				file = f
				break
			}
		}
		if file == "" {
			return gleaner.CampaignSpec{}, "", fmt.Errorf("--campaign: no %s here; run from the repository root or name a campaign spec with --campaign FILE",
				strings.Join(devCampaignFiles, " or "))
		}
	}
	spec, err := gleaner.LoadSpec(file)
	if err != nil {
		return spec, file, withCode(ExitUsage, fmt.Errorf("--campaign %s: %w", file, err))
	}
	if spec.Name == "" {
		spec.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if err := gleaner.ValidateName("name", spec.Name); err != nil {
		return spec, file, withCode(ExitUsage, fmt.Errorf("--campaign %s: %w", file, err))
	}
	// A name of its own per run, so that a rerun on the same --db starts
	// a new campaign instead of colliding with the last one; the name is
	// cut to leave the suffix room within gleaner.MaxNameLength.
	suffix := "-" + time.Now().Format("20060102-150405")
	spec.Name = spec.Name[:min(len(spec.Name), gleaner.MaxNameLength-len(suffix))] + suffix
	if err := spec.WithDefaults().Validate(); err != nil {
		return spec, file, withCode(ExitUsage, fmt.Errorf("--campaign %s: %w", file, err))
	}
	return spec, file, nil
}

// portsFree fails early, with flags to try, when a port is taken.
func (d *devRun) portsFree() error {
	o := d.o
	var taken []string
	for _, p := range []struct {
		flag, what string
		port       int
	}{{"port", "the dev server", o.port}, {"ui-port", "the web UI", o.uiPort}} {
		if p.port != 0 && !devPortFree(o.ip, p.port) {
			taken = append(taken, fmt.Sprintf("--%s %d (%s)", p.flag, p.port, p.what))
		}
	}
	if len(taken) == 0 {
		return nil
	}
	hint := "--port 0 --ui-port 0 (free ports)"
	for off := 10; off <= 500; off += 10 {
		p, u := o.port+off, o.uiPort+off
		if p <= 65535 && u <= 65535 && p != u && devPortFree(o.ip, p) && devPortFree(o.ip, u) {
			hint = fmt.Sprintf("--port %d --ui-port %d", p, u)
			break
		}
	}
	return fmt.Errorf("%s on %s: already in use — is another Temporal dev server running (`make devserver`, an earlier `gleaner dev`)?\n"+
		"stop it, or run beside it: gleaner dev %s", strings.Join(taken, " and "), o.ip, hint)
}

func devPortFree(ip string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// ensureTrainer builds the example trainer when the campaign runs it and
// it is missing or older than its sources; any other trainer must exist.
func (d *devRun) ensureTrainer(ctx context.Context, spec gleaner.CampaignSpec) error {
	cmd0 := spec.Command[0]
	if filepath.Clean(cmd0) == devTrainer && spec.WorkDir == "" {
		if st, err := os.Stat(devTrainerPkg); err == nil && st.IsDir() {
			stale, why := devTrainerStale(devTrainer, devTrainerPkg)
			if !stale {
				return nil
			}
			d.say("building the example trainer (%s): go build -o %s %s", why, devTrainer, devTrainerPkg)
			if err := devenv.BuildTrainer(ctx, "", devTrainer, d.stderr); err != nil {
				return fmt.Errorf("building the example trainer: %w", err)
			}
			return nil
		}
	}
	if !strings.ContainsRune(cmd0, '/') {
		if _, err := exec.LookPath(cmd0); err != nil {
			return fmt.Errorf("campaign command %q: not found on PATH", cmd0)
		}
		return nil
	}
	path := cmd0
	if !filepath.IsAbs(path) && spec.WorkDir != "" {
		path = filepath.Join(spec.WorkDir, path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("campaign command %q: %w (trainers run in the worker's directory unless the spec sets workdir)", cmd0, errors.Unwrap(err))
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("campaign command %q: not an executable file", cmd0)
	}
	return nil
}

// devTrainerStale reports whether bin is missing or older than the Go files
// of pkg and of the trial package it uses, or go.mod.
func devTrainerStale(bin, pkg string) (bool, string) {
	st, err := os.Stat(bin)
	if err != nil {
		return true, bin + " is missing"
	}
	files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
	more, _ := filepath.Glob(filepath.Join("trial", "*.go"))
	files = append(append(files, more...), "go.mod", "go.sum")
	for _, f := range files {
		if fs, err := os.Stat(f); err == nil && fs.ModTime().After(st.ModTime()) {
			return true, f + " is newer than " + bin
		}
	}
	return false, ""
}

// noteEarlierCampaigns says which campaigns of an earlier run on the same
// --db are still running: they resume on this worker and share its nodes.
func (d *devRun) noteEarlierCampaigns(ctx context.Context, srv *devserver.Server) {
	q := fmt.Sprintf("%s = %q AND ExecutionStatus = %q", workflows.GleanerKind.GetName(), workflows.KindCampaign, "Running")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := srv.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 20})
	if err != nil || len(resp.GetExecutions()) == 0 {
		return
	}
	var names []string
	for _, e := range resp.GetExecutions() {
		names = append(names, strings.TrimPrefix(e.GetExecution().GetWorkflowId(), workflows.CampaignWorkflowID("")))
	}
	sort.Strings(names)
	d.say("note: %d campaign(s) of an earlier run are still running and resume on this worker, sharing its nodes: %s (stop one with: %s)",
		len(names), strings.Join(names, " "), commandHint(d.conn, "stop", "NAME"))
}

// devConnectionHint is the connection flags (connectionHint) a gleaner
// command run beside `gleaner dev` needs to reach its server: --address
// and --namespace unless they are the defaults, and --ui unless the
// command finds the UI by itself, at the server's port + 1000.
func devConnectionHint(address, namespace, ui string) string {
	return connectionHint(func(flag string) (string, bool) {
		switch flag {
		case "address":
			return address, address != client.DefaultHostPort
		case "namespace":
			return namespace, namespace != client.DefaultNamespace
		case "ui":
			_, found, ok := devServerUI(address)
			return ui, ui != "" && (!ok || found != ui)
		}
		return "", false
	}, true)
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
