package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/examples"
	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/internal/slurmdemo"
)

// Defaults of `gleaner slurm-demo` (docs/slurm-demo.md). The window is a
// stretch of ALCF Theta's 2022 log from 30 June 2022, 00:28 UTC: 220 jobs,
// 24 of them 2 to 4 nodes once scaled to 6 nodes, an offered load of 0.88
// of the cluster; 750× faster, it is submitted over 12 minutes and its
// longest job runs 2 minutes.
const (
	slurmDemoTrace       = data.Prefix + data.Theta2022
	slurmDemoOffset      = 179*24*time.Hour + 17*time.Hour
	slurmDemoJobs        = 220
	slurmDemoCompression = 750
)

type slurmDemoOptions struct {
	// name is the command: slurm-demo or pbs-demo.
	name     string
	set      slurmdemo.Settings
	json     bool
	progress bool
}

func newSlurmDemoCmd() *cobra.Command {
	o := &slurmDemoOptions{name: "slurm-demo"}
	s := &o.set
	cmd := &cobra.Command{
		Use:   "slurm-demo",
		Short: "The live BFTrainer scenario: a real batch workload replayed into Slurm, its holes harvested by an HPO campaign",
		Long: `Runs, on this machine (as root), what Gleaner is for (what ` + "`make slurm-demo`" + ` runs;
docs/slurm-demo.md):

  1. a real Slurm cluster (deploy/slurm-cluster.sh: --nodes nodes, a high
     priority "batch" partition and a preemptible "glean" partition), or the
     running one --slurm-conf names;
  2. a window of a real job log (--swf, --offset, --jobs), sizes scaled to
     the cluster and time compressed (--compression), replayed into "batch":
     each job is a real process submitted at its compressed submit time;
  3. first without Gleaner (the baseline pass), then again with a Temporal
     dev server, a gleaner worker whose pilots harvest "glean", and an HPO
     campaign of real trainers (examples/go-mlp);
  4. live progress: per node B (batch job), T (trial), P (pilot without a
     trial) or . (free), the job counts and the time left (before it
     starts it says how long it takes, from its plan: about 33 minutes with
     the defaults, 4 for the short look below);
  5. the measurements, printed and written to --out/result.json: harvest,
     pilots started and preempted, trials lost or completed twice, training
     lost per preemption, the delay the pilots added to each batch job, how
     fast pilots come back, and the simulator's prediction for the same idle
     events (--out/idle-events.csv).

Ctrl-C stops everything it started (jobs, worker and pilots, server,
cluster), still writes what was measured, says what it stopped and exits
130 (143 for SIGTERM); a second Ctrl-C kills at once.`,
		Example: `  make slurm-demo                                       # builds bin/gleaner and bin/go-mlp, then runs this
  gleaner slurm-demo --baseline=false --jobs 60 --compression 2000   # a short look
  gleaner slurm-demo --baseline-from bin/slurm-demo/result.json   # reuse an earlier baseline pass`,
		Args: cobra.NoArgs,
		RunE: o.runE,
	}
	f := cmd.Flags()
	f.IntVar(&s.Cluster.Nodes, "nodes", 6, "Slurm nodes to start (g1..gN)")
	f.DurationVar(&s.Cluster.Grace, "grace", 10*time.Second, "the glean partition's GraceTime")
	f.DurationVar(&s.Cluster.BackfillInterval, "bf-interval", 2*time.Second, "Slurm's bf_interval")
	f.DurationVar(&s.Cluster.MinJobAge, "min-job-age", 5*time.Minute, "Slurm's MinJobAge: how long finished jobs stay listed for the monitor")
	f.BoolVar(&s.Cluster.SignalUser, "signal-user", true, "SlurmctldParameters=preempt_send_user_signal: a preempted pilot's agent hears SIGTERM at once (docs/slurm.md)")
	f.StringVar(&s.Cluster.Dir, "cluster-dir", "/tmp/gleaner-slurm-demo", "directory of the cluster this command starts (removed when it stops)")
	f.StringVar(&s.Cluster.Script, "cluster-script", "deploy/slurm-cluster.sh", "the script that starts and stops the cluster")
	f.StringVar(&s.SlurmConf, "slurm-conf", "", "use the running cluster of this slurm.conf instead of starting one (it is left running)")
	f.StringVar(&s.Pool, "pool", "slurm-demo", "pool the pilots' agents join")
	f.StringVar(&s.Out, "out", "bin/slurm-demo", "directory for result.json, idle-events.csv, the logs and the trials' data")
	o.addFlags(cmd)
	return cmd
}

// addFlags adds the flags slurm-demo and pbs-demo share: the window, the
// passes, the campaign, the pilots and the output.
func (o *slurmDemoOptions) addFlags(cmd *cobra.Command) {
	s := &o.set
	f := cmd.Flags()
	f.StringVar(&s.SWF, "swf", slurmDemoTrace, "job log (Standard Workload Format) to replay: a file, or embedded:NAME for one built into this binary (the default: ALCF Theta's 2022 log)")
	f.DurationVar(&s.Plan.Offset, "offset", slurmDemoOffset, "where the window starts, in trace time after the log's first submission")
	f.IntVar(&s.Plan.Jobs, "jobs", slurmDemoJobs, "jobs in the window")
	f.Float64Var(&s.Plan.Compression, "compression", slurmDemoCompression, "trace seconds per second: submit, run and requested times are divided by it")
	f.IntVar(&s.Plan.TraceNodes, "trace-nodes", 0, "size of the logged machine (default: the log's MaxNodes header)")
	f.BoolVar(&s.Baseline, "baseline", true, "replay the window once without Gleaner first, to measure the delay the pilots add")
	f.BoolVar(&s.Control, "control", false, "replay the window a second time without Gleaner: the noise of the start comparison")
	f.StringVar(&s.BaselineFrom, "baseline-from", "", "take the baseline pass from an earlier result.json of the same window")
	f.DurationVar(&s.Duration, "duration", 0, "cap on each pass (default: until every job of the window ended)")
	f.DurationVar(&s.Warmup, "warmup", 2*time.Minute, "how long the campaign may take to fill the nodes before the replay starts")
	f.IntVar(&s.Campaign.Trials, "trials", 500, "trials of the campaign (it keeps wanting nodes)")
	f.IntVar(&s.Campaign.Concurrent, "concurrent", 0, "trials in flight at once (default: nodes + 2)")
	f.IntVar(&s.Campaign.Steps, "steps", 600, "a trial's training steps")
	f.IntVar(&s.Campaign.Batch, "batch", 64, "a trial's batch size (samples per step)")
	f.IntVar(&s.Campaign.StepMS, "step-ms", 100, "sleep after each step, milliseconds: keeps the trainers light")
	f.IntVar(&s.Campaign.ReportEvery, "report-every", 10, "steps between progress reports")
	f.IntVar(&s.Campaign.CheckpointEvery, "checkpoint-every", 20, "steps between periodic checkpoints")
	f.IntVar(&s.Campaign.MaxNodes, "max-nodes", 1, "a trial's maximum nodes")
	f.DurationVar(&s.Campaign.Grace, "grace-period", 5*time.Second, "the trials' grace_period (must fit in the pilots' grace: --grace, PBS's kill_delay)")
	f.IntVar(&s.MaxPending, "max-pending", 4, "pilots waiting in the queue at most")
	f.DurationVar(&s.PilotTime, "pilot-time", 30*time.Minute, "pilots' --time")
	f.DurationVar(&s.PilotMin, "pilot-time-min", 2*time.Minute, "pilots' --time-min")
	f.DurationVar(&s.PilotEvery, "pilot-interval", time.Second, "how often the worker looks after its pilots")
	f.StringVar(&s.PilotYield, "pilot-yield", "", "how long before a batch job's planned start on its node a pilot leaves by itself, or off (default: the worker's, one bf_interval or scheduler_iteration)")
	f.StringVar(&s.Gleaner, "gleaner", "", "gleaner binary the worker and pilots run (default: this one)")
	f.StringVar(&s.Campaign.Trainer, "trainer", devTrainer, "the example trainer (built from "+devTrainerPkg+" when missing or stale)")
	f.DurationVar(&s.Sample, "sample", time.Second, "how often the monitor samples the scheduler's jobs (squeue, qstat) and the pool")
	f.DurationVar(&s.Progress, "progress", 5*time.Second, "how often to print a progress line when stdout is not a terminal")
	f.BoolVar(&o.json, "json", false, "print the result as JSON instead of text")
}

func (o *slurmDemoOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	s := &o.set
	if s.PBS == nil {
		s.Plan.ClusterNodes = s.Cluster.Nodes
	}
	if s.Campaign.Concurrent == 0 {
		s.Campaign.Concurrent = s.Plan.ClusterNodes + 2
	}
	if s.Campaign.Grace >= s.Cluster.Grace && s.SlurmConf == "" && s.PBS == nil {
		return withCode(ExitUsage, fmt.Errorf("--grace-period %v must be shorter than --grace %v: a preempted trainer would be killed before it checkpoints", s.Campaign.Grace, s.Cluster.Grace))
	}
	if s.Gleaner == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		s.Gleaner = exe
	}
	var err error
	if s.Gleaner, err = filepath.Abs(s.Gleaner); err != nil {
		return err
	}
	if strings.Contains(s.Gleaner, "go-build") {
		build := "make slurm-demo or go build"
		if s.PBS != nil {
			build = "go build -o bin/gleaner ./cmd/gleaner"
		}
		fmt.Fprintf(stderr, "gleaner %s: warning: %s is a `go run` binary; pilots started after it is removed fail (use %s)\n", o.name, s.Gleaner, build)
	}
	if err := o.ensureTrainer(ctx, stderr); err != nil {
		return err
	}
	s.Stdout, s.Stderr, s.TTY = stdout, stderr, isTerminal(stdout)
	if o.json {
		s.Stdout = stderr
	}
	res, err := slurmdemo.Run(ctx, *s)
	if res != nil && (res.Live != nil || res.Baseline != nil) {
		if o.json {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(res)
		} else {
			res.Print(stdout)
		}
	}
	return err
}

// runE is a demo command's RunE (slurm-demo, pbs-demo): the demo runs
// until done or the first Ctrl-C (it then cleans up); a second kills at
// once.
func (o *slurmDemoOptions) runE(cmd *cobra.Command, _ []string) error {
	ctx, stop := signalContext(cmd.Context())
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	return slurmDemoEnd(ctx, o.run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr()))
}

// slurmDemoEnd is the error a run ends with: a run a signal ended exits
// as a shell reports it (130 for Ctrl-C, 143 for SIGTERM), saying so and
// what the demo stopped (slurmdemo.Interrupted); one whose context ended
// otherwise exits 1.
func slurmDemoEnd(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if interruptedBy(ctx) != nil {
		return interrupted(ctx, err)
	}
	return withCode(ExitFailure, fmt.Errorf("interrupted: %w", err))
}

// ensureTrainer builds the example trainer when it is the default one and
// missing or stale; any other must exist. The path becomes absolute: the
// pilots' agents run it from their own directory.
func (o *slurmDemoOptions) ensureTrainer(ctx context.Context, stderr io.Writer) error {
	t := &o.set.Campaign.Trainer
	if filepath.Clean(*t) == devTrainer {
		if stale, why := devTrainerStale(devTrainer, devTrainerPkg); stale {
			fmt.Fprintf(stderr, "gleaner %s: building the example trainer (%s): go build -o %s %s\n", o.name, why, devTrainer, devTrainerPkg)
			if err := devenv.BuildTrainer(ctx, "", devTrainer, stderr); err != nil {
				return fmt.Errorf("building the example trainer: %w", err)
			}
		}
	}
	abs, err := filepath.Abs(*t)
	if err != nil {
		return err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		if err == nil {
			err = errors.New("not an executable file")
		}
		return fmt.Errorf("--trainer %s: %w", *t, err)
	}
	*t = abs
	return nil
}

// devTrainer is the example trainer as the examples' campaigns name it,
// and the package slurm-demo builds it from (its pilots' nodes run the
// binary, not gleaner's built-in copy).
const (
	devTrainer    = examples.GoMLPCommand
	devTrainerPkg = "./examples/go-mlp"
)

// devTrainerStale reports whether bin is missing or older than the Go files
// of pkg (and its sub-packages) and of the trial package it uses, or
// go.mod.
func devTrainerStale(bin, pkg string) (bool, string) {
	st, err := os.Stat(bin)
	if err != nil {
		return true, bin + " is missing"
	}
	var files []string
	for _, glob := range []string{filepath.Join(pkg, "*.go"), filepath.Join(pkg, "*", "*.go"), filepath.Join("trial", "*.go")} {
		more, _ := filepath.Glob(glob)
		files = append(files, more...)
	}
	files = append(files, "go.mod", "go.sum")
	for _, f := range files {
		if fs, err := os.Stat(f); err == nil && fs.ModTime().After(st.ModTime()) {
			return true, f + " is newer than " + bin
		}
	}
	return false, ""
}
