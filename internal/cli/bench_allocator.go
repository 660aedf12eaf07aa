package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/allocator"
	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/benchgen"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
	"github.com/gleaner-hpc/gleaner/internal/stats"
)

type benchAllocatorOptions struct {
	trials, nodes, formulations string
	seed                        uint64
	instances                   int
	timeLimit                   time.Duration
	relGap                      float64
	paperMaxBinaries            int
	scarcity                    float64
	types                       int
	dataDir                     string
	json                        bool
}

// benchRow is one line of the report; its JSON keys are a stable contract.
type benchRow struct {
	Trials      int     `json:"trials"`
	Nodes       int     `json:"nodes"`
	Types       int     `json:"types,omitempty"`
	Formulation string  `json:"formulation"`
	SolveMsP50  float64 `json:"solve_ms_p50"`
	SolveMsP95  float64 `json:"solve_ms_p95"`
	Objective   float64 `json:"objective"`
	Demand      float64 `json:"demand"`
	GapToBest   float64 `json:"gap_to_best"`
	Status      string  `json:"status"`
}

func newBenchAllocatorCmd() *cobra.Command {
	o := benchAllocatorOptions{}
	cmd := &cobra.Command{
		Use:   "allocator",
		Short: "Time the allocator's formulations on seeded random instances built from real curves",
		Long: `Builds seeded random allocation problems from the measured throughput curves
in DATA/scaling (random current allocations, random bounds, departed nodes),
solves each with every formulation, and prints per size and formulation the
p50/p95 solve time in milliseconds, the mean objective, the mean relative gap
to the best formulation on the same instance, and the worst status. Demand
is Σ max_nodes / idle nodes (see --scarcity): above 1, trials compete.

The paper formulation has trials×nodes binaries for its assignment alone; it
is skipped (status "skipped") above --paper-max-binaries.

Status "optimal" means proven within --rel-gap of the optimum (the
allocator's Settings.RelGap); "feasible", stopped at --time-limit first.

DATA is --data, by default the reference data built into the binary (the
repository's data/ folder).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trials, "trials", "10,100,1000", "comma-separated trial counts")
	f.StringVar(&o.nodes, "nodes", "64,512,4096", "comma-separated idle-node counts")
	f.StringVar(&o.formulations, "formulation", "compact,paper,greedy,equal", "comma-separated formulations: "+allocator.FormulationNames())
	f.Uint64Var(&o.seed, "seed", 1, "seed of the first instance; instance i uses seed+i")
	f.IntVar(&o.instances, "instances", 11, "instances per size")
	f.DurationVar(&o.timeLimit, "time-limit", 10*time.Second, "MILP time limit per solve")
	f.Float64Var(&o.relGap, "rel-gap", 0, "relative gap within which a solve counts as optimal (0: the allocator's default, 1e-9, or 1e-6 for compact on several node types)")
	f.IntVar(&o.paperMaxBinaries, "paper-max-binaries", 300_000, "skip the paper formulation above trials×nodes binaries")
	f.IntVar(&o.types, "types", 1, "node types: K ≥ 2 makes the first K clusters of DATA/scaling node types (node i of type i mod K), each trial with its application's curve measured on each")
	f.Float64Var(&o.scarcity, "scarcity", 2, "target Σ max_nodes / idle nodes: real curves are stretched so trials compete (negative: unstretched)")
	f.StringVar(&o.dataDir, "data", data.Prefix, "reference data directory holding scaling/, or embedded: for the data built into this binary")
	f.BoolVar(&o.json, "json", false, "print one JSON array of rows")
	return cmd
}

func (o *benchAllocatorOptions) run(stdout, stderr io.Writer) error {
	trials, err := parseIntList("--trials", o.trials)
	if err != nil {
		return err
	}
	nodes, err := parseIntList("--nodes", o.nodes)
	if err != nil {
		return err
	}
	forms, err := allocator.ParseFormulations(o.formulations)
	if err != nil {
		return fmt.Errorf("--formulation: %w", err)
	}
	if o.instances < 1 {
		return fmt.Errorf("--instances: %d must be at least 1", o.instances)
	}
	if o.timeLimit <= 0 {
		return fmt.Errorf("--time-limit: %v must be positive", o.timeLimit)
	}
	if math.IsNaN(o.relGap) || o.relGap < 0 || o.relGap >= 1 {
		return fmt.Errorf("--rel-gap: %v must be in [0, 1)", o.relGap)
	}
	if o.types < 1 {
		return fmt.Errorf("--types: %d must be at least 1", o.types)
	}
	curves, err := loadScaling(o.dataDir)
	if err != nil {
		return err
	}
	var rows []benchRow
	for _, nt := range trials {
		for _, nn := range nodes {
			fmt.Fprintf(stderr, "bench: %d trials × %d nodes, %d instances\n", nt, nn, o.instances)
			sizeRows, err := o.benchSize(curves, nt, nn, forms, stderr)
			if err != nil {
				return err
			}
			rows = append(rows, sizeRows...)
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return printBenchTable(stdout, rows)
}

// benchSize solves every instance of one size with every formulation.
// Sizes that take long (the paper MILP) report every instance on stderr.
func (o *benchAllocatorOptions) benchSize(curves []dataset.ScalingCurve, nt, nn int, forms []allocator.Formulation, progress io.Writer) ([]benchRow, error) {
	start := time.Now()
	cfg := benchgen.Config{Trials: nt, Nodes: nn, Curves: curves, Scarcity: o.scarcity, Types: o.types}
	demand := 0.0
	times := make([][]float64, len(forms))
	objs := make([][]float64, len(forms))
	status := make([]allocator.Status, len(forms))
	for i := 0; i < o.instances; i++ {
		p, err := benchgen.Problem(cfg, o.seed+uint64(i))
		if err != nil {
			return nil, err
		}
		demand += benchgen.Demand(p) / float64(o.instances)
		for fi, f := range forms {
			if f == allocator.FormulationPaper && nt*nn > o.paperMaxBinaries {
				continue
			}
			r, err := allocator.Solve(p, &allocator.Settings{Formulation: f, TimeLimit: o.timeLimit, RelGap: o.relGap})
			if err != nil {
				return nil, fmt.Errorf("%d trials × %d nodes, seed %d, %s: %w", nt, nn, o.seed+uint64(i), f, err)
			}
			times[fi] = append(times[fi], float64(r.SolveTime.Microseconds())/1000)
			objs[fi] = append(objs[fi], r.Objective)
			status[fi] = worseStatus(status[fi], r.Status)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			fmt.Fprintf(progress, "bench:   instance %d/%d done, %s elapsed\n", i+1, o.instances, elapsed.Round(time.Second))
		}
	}
	rows := make([]benchRow, len(forms))
	for fi, f := range forms {
		row := benchRow{Trials: nt, Nodes: nn, Formulation: string(f), Demand: demand, Status: string(status[fi])}
		if o.types > 1 {
			row.Types = o.types
		}
		if len(times[fi]) == 0 {
			row.Status = "skipped"
			rows[fi] = row
			continue
		}
		row.SolveMsP50 = stats.NearestRank(times[fi], 0.50)
		row.SolveMsP95 = stats.NearestRank(times[fi], 0.95)
		row.Objective = mean(objs[fi])
		gaps := make([]float64, len(objs[fi]))
		for i, v := range objs[fi] {
			best := v
			for other := range forms {
				if len(objs[other]) == len(objs[fi]) {
					best = math.Max(best, objs[other][i])
				}
			}
			gaps[i] = (best - v) / math.Max(1e-12, math.Abs(best))
		}
		row.GapToBest = mean(gaps)
		rows[fi] = row
	}
	return rows, nil
}

func worseStatus(a, b allocator.Status) allocator.Status {
	rank := map[allocator.Status]int{"": 0, allocator.StatusOptimal: 1, allocator.StatusHeuristic: 2, allocator.StatusFeasible: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func printBenchTable(w io.Writer, rows []benchRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trials\tnodes\tdemand\tformulation\tp50 ms\tp95 ms\tobjective\tgap to best\tstatus\t")
	for _, r := range rows {
		if r.Status == "skipped" {
			fmt.Fprintf(tw, "%d\t%d\t%.2f\t%s\t-\t-\t-\t-\t%s\t\n", r.Trials, r.Nodes, r.Demand, r.Formulation, r.Status)
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%s\t%.2f\t%.2f\t%.4g\t%.3g%%\t%s\t\n",
			r.Trials, r.Nodes, r.Demand, r.Formulation, r.SolveMsP50, r.SolveMsP95, r.Objective, 100*r.GapToBest, r.Status)
	}
	return tw.Flush()
}

// parseIntList parses "1,2,4" into positive integers; errors name the flag.
func parseIntList(flag, s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", flag, part)
		}
		out = append(out, v)
	}
	return out, nil
}

// loadScaling reads DIR/scaling of --data: a directory on disk, or the
// built-in reference data (data.Prefix, the default).
func loadScaling(dataDir string) ([]dataset.ScalingCurve, error) {
	curves, err := dataset.LoadScaling(dataPath(dataDir, data.Scaling))
	if err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	return curves, nil
}

// dataPath is the file or folder rel (slash-separated, as data.Scaling)
// under dir, a --data value: a directory on disk or a folder of the
// built-in reference data ("embedded:", its root).
func dataPath(dir, rel string) string {
	if data.IsEmbedded(dir) {
		return data.Prefix + path.Join(strings.TrimPrefix(dir, data.Prefix), rel)
	}
	return filepath.Join(dir, filepath.FromSlash(rel))
}

func mean(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}
