package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/dataset"
	"github.com/gleaner-hpc/gleaner/jpa"
)

// jpaEvalOptions are the flags of `gleaner jpa eval`.
type jpaEvalOptions struct {
	dir    string
	prior  string
	probes string
	json   bool
}

func newJPAEvalCmd() *cobra.Command {
	var o jpaEvalOptions
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure the JPA's prediction error on measured scaling curves",
		Long: `For every curve in --dir (one CSV file × one local batch size) with at
least 4 distinct node counts, the JPA sees only the --probes counts and
predicts the others. Its prior is the complete curves of --prior or, without
it, those of the other applications in --dir (leave-one-app-out). Prints the
mean absolute percentage error (MAPE) per curve, then the median and p90.

--dir and --prior are directories on disk, or embedded:NAME for a folder of
the reference data built into the binary; --dir defaults to the built-in
curves (embedded:scaling, the repository's data/scaling).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runJPAEval(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", data.Prefix+data.Scaling, "directory of <app>__<cluster>.csv scaling curves, or embedded:scaling for the curves built into this binary")
	f.StringVar(&o.prior, "prior", "", "directory of curves used as the prior instead of the other apps of --dir")
	f.StringVar(&o.probes, "probes", "1,2,4", "comma-separated node counts the JPA measures")
	f.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	return cmd
}

// parseProbes reads a comma-separated list of positive node counts.
func parseProbes(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--probes: %q is not a positive integer", part)
		}
		out = append(out, n)
	}
	return out, nil
}

func runJPAEval(w io.Writer, o jpaEvalOptions) error {
	if o.dir == "" {
		return fmt.Errorf("--dir: must not be empty (leave it out for the built-in curves, %s%s)", data.Prefix, data.Scaling)
	}
	probes, err := parseProbes(o.probes)
	if err != nil {
		return err
	}
	curves, err := dataset.LoadScaling(o.dir)
	if err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	var prior []dataset.ScalingCurve
	if o.prior != "" {
		prior, err = dataset.LoadScaling(o.prior)
		if err != nil {
			return fmt.Errorf("--prior: %w", err)
		}
	}
	res, err := jpa.Evaluate(curves, prior, probes, nil)
	if err != nil {
		return fmt.Errorf("evaluating %s: %w", o.dir, err)
	}
	if o.json {
		if res.Curves == nil {
			res.Curves = []jpa.EvalCurve{}
		}
		enc := json.NewEncoder(w)
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "curve\tlocal_bsz\tMAPE %\t")
	for _, c := range res.Curves {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t\n", c.File, c.LocalBatch, 100*c.MAPE)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "curves: %d  probes: %s  median MAPE: %.1f%%  p90 MAPE: %.1f%%\n",
		len(res.Curves), o.probes, 100*res.MedianMAPE, 100*res.P90MAPE)
	return err
}
