package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/sim"
	"github.com/gleaner-hpc/gleaner/sim/simplot"
)

type simOptions struct {
	events, swf   string
	jobs          string
	synthetic     int
	synArrivals   string
	synNodeHours  float64
	synStretch    int
	policies      string
	curves        string
	noise         float64
	tfwd          string
	idleEstimate  string
	window        string
	minHole       float64
	maxNodes      int
	nodes         int
	seed          uint64
	dataDir       string
	json          bool
	plot          string
	plotFormat    string
	perJob        bool
	nodeTypes     string // --node-types mix, "" for one type
	gpuRatios     string // --gpu-ratios file, "" for none
	objective     string
	syntheticFlag bool            // --synthetic was given
	changed       map[string]bool // flags given on the command line
}

// Curve modes of --curves.
const (
	curvesOracle = "oracle"
	curvesJPA    = "jpa"
)

func newSimCmd() *cobra.Command {
	o := simOptions{}
	cmd := &cobra.Command{
		Use:   "sim (--events FILE | --swf FILE) (--jobs FILE | --synthetic N)",
		Short: "Replay a supercomputer's idle nodes with a training workload under each policy",
		Long: `Reads a source of idle nodes — an idle-event file in the BFTrainer format
(--events) or an SWF job log (--swf) — and a workload — a BFTrainer job file
(--jobs) or N synthetic jobs drawn, seeded, from the measured curves in
DATA/scaling (--synthetic) — and replays them in simulated time once per
policy (--policy: compact, paper, greedy, equal) through the production
allocator. Prints what the trace reader saw (machine size, events, clipped
SWF jobs) and, per policy, throughput (samples/s), efficiency vs dedicated,
hole utilisation, rescales, preemptions, solver time p50/p99 and jobs
completed.

What the allocator knows of when each idle node is taken back is
--idle-estimate: none (nothing, the default), true (the trace's own next
busy event for the node), or noisy:SIGMA (the true remaining idle time
times a log-normal factor with that sigma, one factor per busy event,
seeded by --seed). Its look-ahead T_fwd is --tfwd: fixed seconds (or a
duration such as 5m; default 300), or auto: derived at every decision
from the estimates by the production rule (allocator.LookaheadFromIdle:
the median remaining idle time, within [30s, 1h]; 300 s where no node
has an estimate).

A mixed pool: --node-types k80=1,p100=1,v100=1 gives the trace's nodes
those GPU types (seeded by --seed) and draws the --synthetic jobs from
Gavel's per-GPU throughputs (DATA/gpus); --curves oracle,blind runs each
policy told every type's curve (type-aware) and told one curve for all
types (type-blind). The table then adds the work rate (reference nodes),
the makespan and the node-time per type.

The allocator's objective is --objective: efficiency (the default, Σ
speedups: production's, allocator.ObjectiveEfficiency, which weighs every
job by its own speed, so samples of different models need not add up) or
throughput (Σ samples/s: this command's default until 2026-11-30; pass it
to reproduce the figures measured before, on BFTrainer's scenarios among
them).

DATA is --data, by default the reference data built into the binary (the
repository's data/ folder). --events, --swf, --jobs and --gpu-ratios take
files on disk, or embedded:NAME for a built-in file: for example
--events embedded:traces/summit-idle-2021-02-10_14.csv
--jobs embedded:workloads/jobs-shufflenet-hpo-1000.csv (BFTrainer's HPO
workload: 1,000 ShuffleNet jobs) or
--jobs embedded:workloads/jobs-imagenet-mixed-1001.csv (its mixed one:
1,001 jobs of seven ImageNet networks).

Progress goes to stderr. See docs/sim.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.syntheticFlag = cmd.Flags().Changed("synthetic")
			o.changed = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.changed[f.Name] = true })
			return o.run(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.StringVar(&o.events, "events", "", "idle-event file in the BFTrainer format (unix_time,event,nodes); "+data.Prefix+data.SummitIdle+" is the built-in Summit trace")
	f.StringVar(&o.swf, "swf", "", "job log in the Standard Workload Format, replayed into idle nodes; "+data.Prefix+data.Theta2022+" is the built-in Theta log")
	f.StringVar(&o.jobs, "jobs", "", "workload in the BFTrainer job format; "+data.Prefix+data.HPO1000+" (or "+data.Prefix+data.HPO10+") is BFTrainer's built-in HPO workload (ShuffleNet), "+data.Prefix+data.ImageNetMixed+" its mixed one (seven ImageNet networks)")
	f.IntVar(&o.synthetic, "synthetic", 0, "draw N synthetic jobs from DATA/scaling (see --synthetic-*)")
	f.StringVar(&o.synArrivals, "synthetic-arrivals", "start", "when --synthetic jobs arrive: start (all at the trace's start) or uniform (uniformly over the replayed window)")
	f.Float64Var(&o.synNodeHours, "synthetic-node-hours", 1, "node-hours each --synthetic job takes at its best fixed scale")
	f.IntVar(&o.synStretch, "synthetic-stretch", 1, "multiply the --synthetic curves' node counts by G (the measured curves stop at 16 nodes)")
	f.StringVar(&o.policies, "policy", "compact,greedy,equal", "comma-separated policies: "+allocator.FormulationNames())
	f.StringVar(&o.curves, "curves", curvesOracle, "what the allocator knows of each job's throughput: oracle (the true curves; on a mixed pool, each type's), blind (with --node-types: each job's mean curve on every type), jpa (learnt online by the JPA from noisy measurements), or several, comma-separated (every policy runs with each)")
	f.StringVar(&o.gpuRatios, "gpu-ratios", "", "with --curves jpa on a mixed pool: single-GPU throughputs per model and GPU type in Gavel's format (as a worker's --gpu-ratios), from which the JPA predicts a job on a type it was not measured on (e.g. "+data.Prefix+data.Gavel+", the built-in table)")
	f.StringVar(&o.nodeTypes, "node-types", "", "mixed pool: give the trace's nodes types in these proportions, TYPE=WEIGHT,… (e.g. k80=1,p100=1,v100=1; seeded by --seed), and draw the --synthetic jobs from Gavel's per-GPU throughputs in DATA/gpus")
	f.StringVar(&o.objective, "objective", string(allocator.ObjectiveEfficiency), "the allocator's objective: efficiency (Σ speedups, production's) or throughput (Σ samples/s, the default until 2026-11-30: to reproduce earlier figures, BFTrainer's scenarios' among them)")
	f.Float64Var(&o.noise, "noise", 0.05, "with --curves jpa: relative noise (log-normal sigma) of the simulated throughput measurements")
	f.StringVar(&o.tfwd, "tfwd", strconv.Itoa(sim.DefaultLookahead), "allocator look-ahead T_fwd: seconds or a duration (5m) fixed for the whole replay, or auto: derived at every decision from --idle-estimate (allocator.LookaheadFromIdle)")
	f.StringVar(&o.idleEstimate, "idle-estimate", string(sim.IdleEstimateNone), "what the allocator is told of when each idle node is taken back: none, true (the trace's next busy event), or noisy:SIGMA (true remaining idle time × a log-normal factor per busy event, seeded by --seed)")
	f.StringVar(&o.window, "window", "", "replay only [FROM,TO) of the trace, in its seconds (unix time); 0 leaves a side unbounded")
	f.Float64Var(&o.minHole, "min-hole", 0, "drop idle intervals shorter than S seconds")
	f.IntVar(&o.maxNodes, "max-nodes", 0, "machine size in nodes (required for an SWF log without a MaxNodes header; overrides the file's)")
	f.IntVar(&o.nodes, "nodes", 0, "replay only the trace's first N nodes (by id): a small, saturated machine with a large one's rhythm of holes (0: all)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of --synthetic, of the JPA's measurement noise (--curves jpa) and of --idle-estimate noisy")
	f.StringVar(&o.dataDir, "data", data.Prefix, "reference data directory holding scaling/ (and gpus/ for --node-types), for --synthetic; embedded: is the data built into this binary")
	f.BoolVar(&o.json, "json", false, "print one JSON object {trace, workload, policies}")
	f.BoolVar(&o.perJob, "per-job", false, "with --json: add each job's metrics to every run (per_job)")
	f.StringVar(&o.plot, "plot", "", "write figures into DIR (created if missing): nodes (idle and used over time), samples (cumulative), solver (solve time distribution)")
	f.StringVar(&o.plotFormat, "plot-format", simplot.PNG, "format of the --plot figures: png or svg")
	return cmd
}

// validate checks the flags that need no file; errors name the flag and exit 2.
func (o *simOptions) validate() (policies []allocator.Formulation, window [2]float64, err error) {
	if (o.events == "") == (o.swf == "") {
		return nil, window, usageErrorf("--events, --swf: give exactly one source of idle nodes")
	}
	if (o.jobs == "") == !o.syntheticFlag {
		return nil, window, usageErrorf("--jobs, --synthetic: give exactly one workload")
	}
	if o.syntheticFlag && o.synthetic < 1 {
		return nil, window, usageErrorf("--synthetic: %d must be at least 1", o.synthetic)
	}
	if !o.syntheticFlag {
		for _, name := range []string{"synthetic-arrivals", "synthetic-node-hours", "synthetic-stretch"} {
			if o.changed[name] {
				return nil, window, usageErrorf("--%s: only with --synthetic", name)
			}
		}
	}
	if o.synArrivals != "start" && o.synArrivals != "uniform" {
		return nil, window, usageErrorf("--synthetic-arrivals: %q is not one of start, uniform", o.synArrivals)
	}
	if !(o.synNodeHours > 0) || math.IsInf(o.synNodeHours, 0) {
		return nil, window, usageErrorf("--synthetic-node-hours: %v must be a positive number", o.synNodeHours)
	}
	if o.synStretch < 1 {
		return nil, window, usageErrorf("--synthetic-stretch: %d must be at least 1", o.synStretch)
	}
	modes, err := o.curveModes()
	if err != nil {
		return nil, window, err
	}
	if err := o.validateHetero(modes); err != nil {
		return nil, window, err
	}
	if o.perJob && !o.json {
		return nil, window, usageErrorf("--per-job: only with --json")
	}
	if o.plotFormat != simplot.PNG && o.plotFormat != simplot.SVG {
		return nil, window, usageErrorf("--plot-format: %q is not one of png, svg", o.plotFormat)
	}
	if !(o.noise >= 0) || o.noise > 1 {
		return nil, window, usageErrorf("--noise: %v must be in [0, 1]", o.noise)
	}
	if policies, err = allocator.ParseFormulations(o.policies); err != nil {
		return nil, window, usageErrorf("--policy: %w", err)
	}
	if _, _, err := o.lookahead(); err != nil {
		return nil, window, err
	}
	if _, err := o.idleEstimates(); err != nil {
		return nil, window, err
	}
	if !finiteNonNegative(o.minHole) {
		return nil, window, usageErrorf("--min-hole: %v must be a non-negative number of seconds", o.minHole)
	}
	if o.maxNodes < 0 {
		return nil, window, usageErrorf("--max-nodes: %d must not be negative", o.maxNodes)
	}
	if o.nodes < 0 {
		return nil, window, usageErrorf("--nodes: %d must not be negative", o.nodes)
	}
	if window, err = parseWindow(o.window); err != nil {
		return nil, window, err
	}
	return policies, window, nil
}

// curveModes parses --curves: oracle and/or jpa, no repeats.
func (o *simOptions) curveModes() ([]string, error) {
	var out []string
	for _, part := range strings.Split(o.curves, ",") {
		m := strings.TrimSpace(part)
		if m != curvesOracle && m != curvesJPA && m != curvesBlind {
			return nil, usageErrorf("--curves: %q is not one of oracle, jpa, blind", part)
		}
		if slices.Contains(out, m) {
			return nil, usageErrorf("--curves: %q is given twice", part)
		}
		out = append(out, m)
	}
	return out, nil
}

func finiteNonNegative(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// parseWindow parses --window FROM,TO (seconds, 0: unbounded side).
func parseWindow(s string) ([2]float64, error) {
	var w [2]float64
	if s == "" {
		return w, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return w, usageErrorf("--window: %q is not FROM,TO in seconds", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !finiteNonNegative(v) {
			return w, usageErrorf("--window: %q is not FROM,TO in seconds", s)
		}
		w[i] = v
	}
	if w[1] != 0 && w[1] <= w[0] {
		return w, usageErrorf("--window: %q: TO must be after FROM (or 0 for no end)", s)
	}
	return w, nil
}

func (o *simOptions) run(stdout, stderr io.Writer) error {
	policies, window, err := o.validate()
	if err != nil {
		return err
	}
	tr, rep, err := o.readTrace(sim.SourceOptions{Window: window, MinHole: o.minHole, MaxNodes: o.maxNodes})
	if err != nil {
		return err
	}
	if !(tr.End > tr.Start) {
		why := "check --window"
		if r := tr.Report; r.Jobs > 0 && r.SkippedJobs == r.Jobs {
			why = fmt.Sprintf("all %d jobs skipped: unknown submit time, run time or size, or zero run time or size", r.Jobs)
		}
		return usageErrorf("%s %s: the trace spans [%v, %v]: nothing to replay (%s)", o.traceFlag(), rep.File, tr.Start, tr.End, why)
	}
	nodeTypes, err := o.nodeTypesFor(tr)
	if err != nil {
		return err
	}
	jobs, wrep, err := o.readWorkload(tr)
	if err != nil {
		return err
	}
	if late := lateJobs(jobs, tr.End); late == len(jobs) {
		first := slices.MinFunc(jobs, func(a, b sim.Job) int { return cmp.Compare(a.Submit, b.Submit) }).Submit
		return usageErrorf("--jobs %s: every job arrives at or after the trace's end (first at %v, the trace spans [%v, %v]): nothing would run (check the workload's submit times against the trace and --window)",
			o.jobs, first, tr.Start, tr.End)
	} else if late > 0 {
		fmt.Fprintf(stderr, "sim: %d of %d jobs arrive at or after the trace's end (%v): they cannot run\n", late, len(jobs), tr.End)
	}
	fmt.Fprintf(stderr, "sim: %s: %d nodes, %d events over %s; %d jobs\n",
		rep.File, rep.Nodes, rep.Events, time.Duration((tr.End-tr.Start)*float64(time.Second)).Round(time.Second), len(jobs))

	modes, _ := o.curveModes()
	tfwd, derive, _ := o.lookahead()
	idleEst, _ := o.idleEstimates()
	events, err := o.eventsWithTruth(tr, window, idleEst)
	if err != nil {
		return err
	}
	tfwdLabel := "auto"
	if !derive {
		tfwdLabel = strconv.FormatFloat(cmp.Or(tfwd, sim.DefaultLookahead), 'g', -1, 64)
	}
	report := simReport{Trace: rep, Workload: wrep}
	var runs []simplot.Run
	total := len(policies) * len(modes)
	for i := 0; i < total; i++ {
		p, mode := policies[i%len(policies)], modes[i/len(policies)]
		label := string(p)
		if len(modes) > 1 {
			label += "/" + mode
		}
		prefix := fmt.Sprintf("sim: [%d/%d] %s:", i+1, total, label)
		fmt.Fprintf(stderr, "%s replaying…\n", prefix)
		start := time.Now()
		cfg := sim.Config{Policy: p, Lookahead: tfwd, DeriveLookahead: derive, IdleEstimate: idleEst,
			Start: tr.Start, End: tr.End, Progress: simProgress(stderr, prefix, time.Now),
			NodeTypes: nodeTypes, Objective: allocator.Objective(o.objective)}
		if cfg.Curves, err = curvesFor(mode, jobs); err != nil {
			return fmt.Errorf("--curves %s: %w", mode, err)
		}
		var learner *sim.JPA
		if mode == curvesJPA {
			noise := o.noise
			if noise == 0 {
				noise = -1 // exact measurements (JPAOptions: 0 means the default)
			}
			speeds, err := o.speeds()
			if err != nil {
				return err
			}
			if learner, err = sim.NewJPA(jobs, sim.JPAOptions{Seed: o.seed, Noise: noise, Speeds: speeds}); err != nil {
				return fmt.Errorf("--curves jpa: %w", err)
			}
			cfg = learner.Attach(cfg)
		}
		res, err := sim.Run(events, jobs, cfg)
		if err != nil {
			if errors.Is(err, sim.ErrInvalidInput) {
				return withCode(ExitUsage, fmt.Errorf("%s: %w", label, err))
			}
			return fmt.Errorf("%s: %w", label, err)
		}
		wall := time.Since(start)
		fmt.Fprintf(stderr, "%s done in %s (%d decisions, %d/%d jobs completed)\n",
			prefix, wall.Round(time.Millisecond), res.Metrics.Decisions, res.Metrics.JobsCompleted, len(jobs))
		pr := simPolicyReport{Metrics: res.Metrics, Curves: mode, Objective: o.objective, IdleEstimate: idleEst.String(), TFwd: tfwdLabel,
			WallSeconds: wall.Seconds(), NodeSecondsByType: res.NodeSecondsByType}
		if learner != nil {
			st := learner.Stats()
			pr.JPA = &st
		}
		if o.perJob {
			pr.PerJob = res.PerJob
		}
		report.Policies = append(report.Policies, pr)
		runs = append(runs, simplot.Run{Label: label, Result: res})
	}
	if o.plot != "" {
		paths, err := simplot.Write(o.plot, runs, simplot.Options{Format: o.plotFormat, Title: filepath.Base(rep.File)})
		if err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		for _, p := range paths {
			fmt.Fprintf(stderr, "sim: wrote %s\n", p)
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return printSimReport(stdout, report)
}

// simProgress reports a long replay's progress on stderr: a line whenever
// another 10% of the simulated window is done and at least 5 s of wall
// time have passed since the last line (short replays print nothing).
func simProgress(w io.Writer, prefix string, now func() time.Time) func(t, start, end float64) {
	began := now()
	last, lastDecile := began, 0
	return func(t, start, end float64) {
		if end <= start {
			return
		}
		decile := int(10 * (t - start) / (end - start))
		if decile <= lastDecile || now().Sub(last) < 5*time.Second {
			return
		}
		lastDecile, last = decile, now()
		fmt.Fprintf(w, "%s %3d%% of the trace replayed, %s elapsed\n", prefix, 10*decile, last.Sub(began).Round(time.Second))
	}
}

// lateJobs counts the jobs submitted at or after end.
func lateJobs(jobs []sim.Job, end float64) int {
	n := 0
	for _, j := range jobs {
		if j.Submit >= end {
			n++
		}
	}
	return n
}
