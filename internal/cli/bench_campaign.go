package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/internal/benchrun"
)

func newBenchCampaignCmd() *cobra.Command {
	o := benchrun.CampaignOptions{}
	var asJSON bool
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "campaign",
		Short: "Run one campaign of many short trials on a local dev server and measure Temporal's overhead",
		Long: `Starts a Temporal dev server (the temporal CLI; ` + "`make temporal`" + ` installs it) on free
ports with a temporary database, an in-process worker whose static node
source offers --nodes CPU slots, builds the go-mlp example trainer once,
and runs one campaign of --trials trials of about --trial-seconds each
(--concurrent in flight, each on exactly one node).

It reports the wall time, trials per second and per core, the CPU time
per trial of the dev server, of this process (the worker and the
benchmark's probes) and of the trainers (its children, once waited for),
how long a node sat idle between two trainers (an inline campaign of
random search is pipelined: each slot's next run is queued behind the one
training), the ramp (from the submit to the first trainer and to the
last node's first; from the last trainer's end to the close), history
events per trial (mean and max over the trial workflows), the peak history length
of any run (campaign runs across continue-as-new, pool runs, trials), and
how often the campaign and the pool continued as new, against Ray Tune's
published 10,000 one-second trials in 715 s on 16 CPUs. --vs-optuna then
runs the same campaign through Optuna and prints both side by side, CPU
per trial included (Optuna's process and its trainers, counted the same
way: getrusage of the process and of its waited-for children).
--vs-floor runs the same trials at Temporal's floor, on a dev server of
its own: a plain workflow that runs an activity per trial (--inline) or
starts a child workflow per trial that runs one activity, each launching
the trainer as the Optuna script does, with nothing of Gleaner's (no
pool, searcher, records, ledger or sweep) — what a Temporal call per
trial costs on this machine, whatever is built on it.

Run it from the gleaner checkout (it builds ./examples/go-mlp there; the
checkout is found with ` + "`go list -m`" + `, or give --repo). Progress goes to
stderr; --json prints one object on stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("--cpuprofile: %w", err))
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			rep, cleanup, err := benchrun.RunCampaign(ctx, o)
			defer cleanup() // after the report: minutes after 100,000 trials
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), asJSON, rep, rep.WriteText)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Trials, "trials", 1000, "trials in the campaign")
	f.IntVar(&o.Concurrent, "concurrent", 50, "trials in flight (max_concurrent)")
	f.Float64Var(&o.Seconds, "trial-seconds", 1, "about how long one trial trains, in seconds")
	f.IntVar(&o.Nodes, "nodes", 50, "CPU slots of the worker's static node source")
	f.DurationVar(&o.ProgressEvery, "progress-every", 0, "how often progress goes to stderr (default 5s)")
	f.StringVar(&o.RepoDir, "repo", "", "the gleaner checkout to build go-mlp from (default: go list -m)")
	f.StringArrayVar(&o.ServerConfig, "server-config", nil, "dev server dynamic config KEY=VALUE, the value in JSON (repeatable), e.g. matching.numTaskqueueReadPartitions=4 or 'history.timerProcessorMaxTimeShift=\"10ms\"'")
	f.StringVar(&o.ServerLog, "server-log", "", "append the dev server's output to this file (it is discarded otherwise)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write this process's CPU profile (the worker's, the benchmark's) to FILE (go tool pprof)")
	f.BoolVar(&o.VsOptuna, "vs-optuna", false, "then run the same campaign through Optuna (scripts/campaign_optuna.py, Debian's python3-optuna) and compare")
	f.BoolVar(&o.VsFloor, "vs-floor", false, "then run the same trials at Temporal's floor (a plain workflow: an activity per trial with --inline, else a child workflow per trial) and compare")
	f.StringVar(&o.Python, "python", "", "the Python with optuna for --vs-optuna (default /usr/bin/python3)")
	f.BoolVar(&o.Inline, "inline", false, "run the trials inline (trial.inline: activities of the campaign, not workflows)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func newBenchRescaleCmd() *cobra.Command {
	o := benchrun.RescaleOptions{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rescale",
		Short: "Measure how fast a running trial is relaunched when its pool changes its nodes",
		Long: `Starts a Temporal dev server and an in-process worker whose node source
the benchmark drives, and runs one long go-mlp trial (1 to 4 nodes). It
flips the idle set between 2 and 4 nodes --rescales times, each time waiting
until the trial trains on the new count, then stops the trial and reads its
history.

Latency per rescale is from the pool's assignment signal reaching the trial
(WorkflowExecutionSignaled) to the ActivityTaskStarted of the relaunched
RunTrial, by the server's event times; it is broken down into signal →
cancel requested → old run closed → new run scheduled → started. The
trainer's own start (to its first report line) is reported apart. Target:
p50 ≤ 1 s.

Run it from the gleaner checkout (see bench campaign). Progress goes to
stderr; --json prints one object on stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := benchrun.RunRescale(ctx, o)
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), asJSON, rep, rep.WriteText)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Rescales, "rescales", 20, "how many times the idle set changes")
	f.IntVar(&o.Hosts, "hosts", 1, "2: run on two in-process agents of 2 nodes, one joining and leaving (every rank relaunched)")
	f.Float64Var(&o.StepMS, "step-ms", 10, "the trainer's step length in milliseconds (it reports every step)")
	f.DurationVar(&o.Timeout, "timeout", 0, "how long to wait for each rescale (default 2m)")
	f.StringVar(&o.RepoDir, "repo", "", "the gleaner checkout to build go-mlp from (default: go list -m)")
	f.StringArrayVar(&o.ServerConfig, "server-config", nil, "dev server dynamic config KEY=VALUE, the value in JSON (repeatable), e.g. matching.numTaskqueueReadPartitions=4 or 'history.timerProcessorMaxTimeShift=\"10ms\"'")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func writeReport(w io.Writer, asJSON bool, v any, text func(io.Writer) error) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return text(w)
}
