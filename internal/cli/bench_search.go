package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/searchbench"
)

type benchSearchOptions struct {
	algorithms, objectives, at string
	trials, workers, seeds     int
	seed                       uint64
	costSigma                  float64
	plotDir, plotFormat        string
	by                         string
	json                       bool
}

func newBenchSearchCmd() *cobra.Command {
	o := benchSearchOptions{}
	cmd := &cobra.Command{
		Use:   "search",
		Short: "Measure the searchers on standard test functions with simulated parallel workers",
		Long: `Runs every searcher (--algorithms) on benchmark objectives (--objectives):
Branin, Hartmann-6, a 10-dimensional Rosenbrock, a mixed space with a
log-scaled float, an integer and a choice, the learning curves of go-mlp,
two problems whose trials carry a training state (pbt-toy, Jaderberg et al.'s
PBT toy problem, −Q minimised; nqm, a noisy quadratic model of SGD whose best
learning rate falls as training goes on), and nas-cell, a tabular NAS
benchmark: one architecture parameter over a NAS-Bench-201-style cell space,
every cell's validation loss on digits replayed from a table.
--algorithms also takes asha-promotion and hyperband-promotion (those
algorithms' promotion variant, which pauses trials at rungs and continues the
best); pbt runs on stateful objectives only, grid not on nas-cell (others are
skipped, with a note). --workers trials run at once on
simulated workers; a trial takes exp(N(0, σ²)) time units (--cost-sigma), so
trials finish out of order as on a real pool, and every algorithm meets the
same cost stream for a seed. Each algorithm runs once per seed (--seeds from
--seed); the table gives the best value found after the --at trial counts:
median [first quartile, third quartile] over the seeds, with the objective's
known optimum. --plot DIR draws the regret curves (docs/search.md).`,
		Example: `  gleaner bench search
  gleaner bench search --algorithms random,tpe --objectives branin --trials 100 --workers 8 --seeds 20 --plot bin/search
  gleaner bench search --algorithms random,evolution,local,tpe --objectives nas-cell --seeds 30 --trials 150`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.algorithms, "algorithms", strings.Join(hpo.Algorithms(), ","),
		"comma-separated algorithms (also "+searchbench.ASHAPromotion+", "+searchbench.HyperbandPromotion+")")
	f.StringVar(&o.objectives, "objectives", strings.Join(searchbench.ObjectiveNames(), ","), "comma-separated objectives")
	f.IntVar(&o.trials, "trials", 100, "trials per run")
	f.IntVar(&o.workers, "workers", searchbench.DefaultWorkers, "trials in parallel")
	f.IntVar(&o.seeds, "seeds", 20, "runs per algorithm and objective, seeds --seed, --seed+1, …")
	f.Uint64Var(&o.seed, "seed", 1, "first seed")
	f.Float64Var(&o.costSigma, "cost-sigma", searchbench.DefaultCostSigma, "σ of a trial's log-normal duration (0: all equal)")
	f.StringVar(&o.at, "at", "10,25,50,100", "trial counts (or budgets, with --by budget) the table reports")
	f.StringVar(&o.by, "by", "trials", "the table's columns: trials (ended trials) or budget (training spent, in full trial budgets: what stopping searchers save)")
	f.StringVar(&o.plotDir, "plot", "", "directory for one regret figure per objective")
	f.StringVar(&o.plotFormat, "plot-format", "svg", "figure format: svg or png")
	f.BoolVar(&o.json, "json", false, "print the curves as JSON (every trial count)")
	return cmd
}

// checkSimulationFlags checks the flags every simulated search bench
// takes (bench search, bench search-multi); errors name the flag.
func checkSimulationFlags(trials, workers, seeds int, costSigma float64) error {
	switch {
	case trials < 1:
		return fmt.Errorf("--trials: %d must be at least 1", trials)
	case workers < 1:
		return fmt.Errorf("--workers: %d must be at least 1", workers)
	case seeds < 1:
		return fmt.Errorf("--seeds: %d must be at least 1", seeds)
	case costSigma < 0:
		return fmt.Errorf("--cost-sigma: %v must not be negative", costSigma)
	}
	return nil
}

func (o *benchSearchOptions) run(stdout, stderr io.Writer) error {
	if err := checkSimulationFlags(o.trials, o.workers, o.seeds, o.costSigma); err != nil {
		return err
	}
	if o.by != "trials" && o.by != "budget" {
		return fmt.Errorf("--by: %q is not one of trials, budget", o.by)
	}
	at, err := parseIntList("--at", o.at)
	if err != nil {
		return err
	}
	objs, err := searchbench.LookupObjectives(splitList(o.objectives))
	if err != nil {
		return fmt.Errorf("--objectives: %w", err)
	}
	algs := splitList(o.algorithms)
	for _, a := range algs {
		if !slices.Contains(searchbench.Methods(), a) {
			return fmt.Errorf("--algorithms: %q is not one of %s", a, strings.Join(searchbench.Methods(), ", "))
		}
	}
	var curves []searchbench.Curve
	for _, obj := range objs {
		for _, alg := range algs {
			if err := searchbench.CanRun(alg, obj); err != nil {
				fmt.Fprintf(stderr, "bench search: skipped %v\n", err)
				continue
			}
			fmt.Fprintf(stderr, "bench search: %s on %s, %d seeds…\n", alg, obj.Name, o.seeds)
			setup := searchbench.Setup{Algorithm: alg, Settings: searchbench.DefaultSettings(alg, obj), Objective: obj,
				Workers: o.workers, Trials: o.trials, CostSigma: o.costSigma}
			c, err := searchbench.Measure(setup, o.seed, o.seeds)
			if err != nil {
				return err
			}
			curves = append(curves, c)
		}
	}
	if o.plotDir != "" {
		files, err := searchbench.Plot(o.plotDir, o.plotFormat, curves, objs)
		if err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		fmt.Fprintf(stderr, "bench search: wrote %s\n", strings.Join(files, ", "))
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(curves)
	}
	what, col := "N trials", "N"
	if o.by == "budget" {
		what, col = "spending B full trial budgets", "B"
	}
	fmt.Fprintf(stdout, "best found after %s: median [q1, q3] over %d seeds; %d workers, cost σ %v, %d trials per run\n",
		what, o.seeds, o.workers, o.costSigma, o.trials)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	header := "objective\toptimum\talgorithm"
	for _, n := range at {
		header += fmt.Sprintf("\t%s=%d", col, n)
	}
	fmt.Fprintln(tw, header)
	for _, obj := range objs {
		for _, c := range curves {
			if c.Objective != obj.Name {
				continue
			}
			row := fmt.Sprintf("%s\t%.6g\t%s", obj.Name, obj.Optimum, c.Algorithm)
			for _, n := range at {
				if n > o.trials {
					row += "\t-"
					continue
				}
				q := c.At(n)
				if o.by == "budget" {
					q = c.AtBudget(n)
				}
				row += fmt.Sprintf("\t%.4g [%.4g, %.4g]", q.Median, q.Q1, q.Q3)
			}
			fmt.Fprintln(tw, row)
		}
	}
	return tw.Flush()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
