package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/searchbench"
)

type benchSearchMultiOptions struct {
	algorithms, problems, at, optuna string
	trials, workers, seeds           int
	seed                             uint64
	costSigma                        float64
	json                             bool
}

func newBenchSearchMultiCmd() *cobra.Command {
	o := benchSearchMultiOptions{}
	cmd := &cobra.Command{
		Use:   "search-multi",
		Short: "Measure the searchers for several objectives by hypervolume, with simulated parallel workers",
		Long: `Runs the searchers that take several objectives (--algorithms; motpe-mv is
motpe with search.motpe.multivariate: true) on problems
with several objectives (--problems): ZDT1 in 6 dimensions, DTLZ2 with 3
objectives in 7, TNK (two objectives under two constraints), and
nas-cell-latency, the NAS cell table as validation accuracy (maximised) ×
the throughput model's predicted latency (minimised). --workers trials run
at once on simulated workers, each taking exp(N(0, σ²)) time units
(--cost-sigma) from a stream scripts/multi_vs_optuna.py draws alike. The
table gives the hypervolume at each problem's fixed reference point after
the --at trial counts: median [first quartile, third quartile] over the
seeds, with the hypervolume of the problem's Pareto front.

--optuna FILE adds the runs scripts/multi_vs_optuna.py wrote (Optuna's
samplers, same protocol), their hypervolumes computed by the same code, and
for each Gleaner searcher its win probability against Optuna's best sampler
at that trial count (the one with the highest median): the chance that its
hypervolume on a seed beats that sampler's on a seed, ties half.`,
		Example: `  gleaner bench search-multi --algorithms random,nsga2,motpe --trials 100 --at 50,100 --seeds 5
  /usr/bin/python3 scripts/multi_vs_optuna.py --gleaner bin/gleaner --seeds 20 --trials 500 --at 100,500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.algorithms, "algorithms", strings.Join(blackBoxVectorAlgorithms(), ","),
		"comma-separated algorithms that take several objectives (asha needs learning curves: not these problems), or motpe-mv: motpe with multivariate: true")
	f.StringVar(&o.problems, "problems", strings.Join(searchbench.ProblemNames(), ","), "comma-separated problems")
	f.IntVar(&o.trials, "trials", 100, "trials per run")
	f.IntVar(&o.workers, "workers", searchbench.DefaultWorkers, "trials in parallel")
	f.IntVar(&o.seeds, "seeds", 20, "runs per algorithm and problem, seeds --seed, --seed+1, …")
	f.Uint64Var(&o.seed, "seed", 1, "first seed")
	f.Float64Var(&o.costSigma, "cost-sigma", searchbench.DefaultCostSigma, "σ of a trial's log-normal duration (0: all equal)")
	f.StringVar(&o.at, "at", "50,100", "trial counts the table reports")
	f.StringVar(&o.optuna, "optuna", "", "runs of Optuna's samplers (scripts/multi_vs_optuna.py --out) to set beside Gleaner's, with win probabilities")
	f.BoolVar(&o.json, "json", false, "print the curves (every trial count) and win probabilities as JSON")
	return cmd
}

// multiWin is a Gleaner searcher's win probability against Optuna's best
// sampler on a problem after Trials trials.
type multiWin struct {
	Problem string  `json:"problem"`
	Method  string  `json:"method"`
	Trials  int     `json:"trials"`
	Versus  string  `json:"versus"`
	P       float64 `json:"p"`
}

type multiReport struct {
	Curves []searchbench.HVCurve `json:"curves"`
	Wins   []multiWin            `json:"wins,omitempty"`
}

func (o *benchSearchMultiOptions) run(stdout, stderr io.Writer) error {
	if err := checkSimulationFlags(o.trials, o.workers, o.seeds, o.costSigma); err != nil {
		return err
	}
	at, err := parseIntList("--at", o.at)
	if err != nil {
		return err
	}
	for _, n := range at {
		if n < 1 || n > o.trials {
			return fmt.Errorf("--at: %d is not a trial count in [1, --trials %d]", n, o.trials)
		}
	}
	probs, err := searchbench.LookupProblems(splitList(o.problems))
	if err != nil {
		return fmt.Errorf("--problems: %w", err)
	}
	algs := splitList(o.algorithms)
	vector := searchbench.MultiMethods()
	if len(algs) == 0 && o.optuna == "" {
		return errors.New("--algorithms: none given, and no algorithm of this build takes several objectives")
	}
	for _, a := range algs {
		if !slices.Contains(vector, a) {
			return fmt.Errorf("--algorithms: %q does not take several objectives; these do: %s", a, strings.Join(vector, ", "))
		}
	}
	var foreign *searchbench.ForeignRuns
	if o.optuna != "" {
		f, err := os.Open(o.optuna)
		if err != nil {
			return fmt.Errorf("--optuna: %w", err)
		}
		runs, err := searchbench.ReadForeignRuns(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("--optuna: %s: %w", o.optuna, err)
		}
		if err := runs.Protocol(o.trials, o.workers, o.costSigma, o.seed, o.seeds); err != nil {
			return fmt.Errorf("--optuna: %s ran with %w: run both alike", o.optuna, err)
		}
		foreign = &runs
	}
	var rep multiReport
	optunaBy := map[string][]searchbench.HVCurve{}
	for _, p := range probs {
		for _, alg := range algs {
			fmt.Fprintf(stderr, "bench search-multi: %s on %s, %d seeds…\n", alg, p.Name, o.seeds)
			setup := searchbench.MultiSetup{Algorithm: alg, Settings: searchbench.MultiSettings(alg), Problem: p, Workers: o.workers, Trials: o.trials, CostSigma: o.costSigma}
			c, err := searchbench.MeasureMulti(setup, o.seed, o.seeds)
			if err != nil {
				return err
			}
			rep.Curves = append(rep.Curves, c)
		}
		if foreign != nil {
			cs, err := foreign.Curves(p)
			if err != nil {
				return fmt.Errorf("--optuna: %w", err)
			}
			optunaBy[p.Name] = cs
			rep.Curves = append(rep.Curves, cs...)
			for _, n := range at {
				best, ok := searchbench.Best(cs, n)
				if !ok {
					continue
				}
				for _, c := range rep.Curves {
					if c.Problem == p.Name && slices.Contains(algs, c.Method) {
						rep.Wins = append(rep.Wins, multiWin{Problem: p.Name, Method: c.Method, Trials: n, Versus: best.Method,
							P: searchbench.WinProbability(c.Finals(n), best.Finals(n))})
					}
				}
			}
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "hypervolume after N trials: median [q1, q3] over %d seeds; %d workers, cost σ %v, %d trials per run\n",
		o.seeds, o.workers, o.costSigma, o.trials)
	if foreign != nil {
		fmt.Fprintln(stdout, "P(win): the chance a Gleaner searcher's hypervolume on a seed beats Optuna's best sampler's there (best), ties half")
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	header := "problem\tfront HV\tmethod"
	for _, n := range at {
		header += fmt.Sprintf("\tN=%d", n)
		if foreign != nil {
			header += fmt.Sprintf("\tP(win) N=%d", n)
		}
	}
	fmt.Fprintln(tw, header)
	for _, p := range probs {
		for _, c := range rep.Curves {
			if c.Problem != p.Name {
				continue
			}
			row := fmt.Sprintf("%s\t%.6g\t%s", p.Name, p.FrontHV, c.Method)
			for _, n := range at {
				q := c.At(n)
				row += fmt.Sprintf("\t%.4g [%.4g, %.4g]", q.Median, q.Q1, q.Q3)
				if foreign != nil {
					row += "\t" + winCell(rep.Wins, optunaBy[p.Name], c, n)
				}
			}
			fmt.Fprintln(tw, row)
		}
	}
	return tw.Flush()
}

// winCell is c's P(win) column after n trials: its win probability, or
// "best" for Optuna's best sampler, "-" for the others.
func winCell(wins []multiWin, optuna []searchbench.HVCurve, c searchbench.HVCurve, n int) string {
	for _, w := range wins {
		if w.Problem == c.Problem && w.Method == c.Method && w.Trials == n {
			return fmt.Sprintf("%.2f", w.P)
		}
	}
	if best, ok := searchbench.Best(optuna, n); ok && best.Method == c.Method {
		return "best"
	}
	return "-"
}

// blackBoxVectorAlgorithms are the algorithms of several objectives that
// only create trials: those the problems, black-box functions without
// learning curves, can run.
func blackBoxVectorAlgorithms() []string {
	var out []string
	for _, a := range hpo.VectorAlgorithms() {
		if hpo.CreatesOnly(a) {
			out = append(out, a)
		}
	}
	return append(out, searchbench.MOTPEMultivariate)
}
