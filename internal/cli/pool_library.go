package cli

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/workflows"
)

type poolLibraryOptions struct {
	conn  connectOptions
	json  bool
	out   string
	force bool
}

func newPoolLibraryCmd() *cobra.Command {
	o := &poolLibraryOptions{}
	cmd := &cobra.Command{
		Use:   "library [POOL]",
		Short: "List or export the throughput curves a pool learned from its finished trials",
		Long: `Prints the curves a pool (default "default") learned from trials that left
it: one per trial and node type, with the trial's model and batch size, its
campaign and the node counts it was measured at. The pool predicts later
trials of the same model (in any campaign) from them.

--out DIR writes them as scaling CSV files, the format of a worker's
--prior-curves directory: one file per model and node type,
MODEL__TYPE.csv, with one curve per batch size (of the pool's curves of
one model, batch and type, the one measured at most counts, then the
newest). A batch size nobody named (campaign or trainer) is written as 1 (the format
needs one). Curves without a model, or whose model or node type cannot be
a file name, are left out and named. Existing files are not overwritten
unless --force.

--json prints the library as one JSON object.`,
		Example: `  gleaner pool library
  gleaner pool library hpo --out ./site-curves && gleaner worker --prior-curves ./site-curves`,
		Args: maxArgs(1, "one POOL name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.Flags(), poolArg(args), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON")
	f.StringVar(&o.out, "out", "", "write the curves as scaling CSV files into this directory (created if missing)")
	f.BoolVar(&o.force, "force", false, "with --out: overwrite existing files")
	o.conn.addFlags(f)
	return cmd
}

func (o *poolLibraryOptions) run(ctx context.Context, flags *pflag.FlagSet, name string, stdout, stderr io.Writer) error {
	if err := gleaner.ValidateName("POOL", name); err != nil {
		return withCode(ExitUsage, err)
	}
	if o.json && o.out != "" {
		return withCode(ExitUsage, errors.New("--json and --out: choose one"))
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	lib, err := c.PoolLibrary(ctx, name)
	if err != nil {
		return poolErr(name, err)
	}
	switch {
	case o.json:
		return writeJSON(stdout, lib)
	case o.out != "":
		files, skipped := scalingFiles(lib.Curves)
		if err := writeScalingDir(o.out, files, o.force); err != nil {
			return err
		}
		n := 0
		for _, f := range files {
			n += len(f.curves)
		}
		fmt.Fprintf(stdout, "wrote %d files (%d curves) of pool %s's library to %s\n", len(files), n, name, o.out)
		for _, s := range skipped {
			fmt.Fprintf(stderr, "left out: %s\n", s)
		}
		return nil
	}
	writePoolLibrary(stdout, lib)
	return nil
}

func writePoolLibrary(w io.Writer, lib workflows.PoolLibrary) {
	fmt.Fprintf(w, "pool      %s\n", lib.Name)
	fmt.Fprintf(w, "library   %d curves (at most %d, %d per model, batch and node type)\n", len(lib.Curves), workflows.LibraryMaxCurves, workflows.LibraryPerKey)
	if len(lib.Curves) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tBATCH\tTYPE\tCAMPAIGN\tTRIAL\tCOUNTS\tLEARNED")
	for _, c := range lib.Curves {
		counts := make([]string, len(c.Points))
		for i, p := range c.Points {
			counts[i] = strconv.Itoa(p.Nodes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", dash(c.Model), dash(batchText(c.Batch)), dash(c.NodeType), c.Campaign, c.Trial,
			compactList(counts, 8), c.At.Local().Format(time.DateTime))
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func batchText(b int) string {
	if b <= 0 {
		return ""
	}
	return strconv.Itoa(b)
}

// scalingFile is one CSV of a scaling directory: a model on a node type,
// one curve per batch size, sorted by batch.
type scalingFile struct {
	name   string // MODEL__TYPE.csv
	curves []workflows.LearnedCurve
}

// fileNamePart is what a model or node type may be to name a scaling
// file that reads back as itself: dataset's loader splits MODEL__TYPE at
// the first "__".
var fileNamePart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// scalingFiles picks, of each (model, batch, node type), the curve
// measured at most counts (then the newest), and groups them into files;
// skipped names what was left out and why.
func scalingFiles(curves []workflows.LearnedCurve) (files []scalingFile, skipped []string) {
	type key struct {
		model, nodeType string
		batch           int
	}
	best := map[key]workflows.LearnedCurve{}
	for _, c := range curves {
		switch {
		case c.Model == "":
			skipped = append(skipped, fmt.Sprintf("%s: no model (neither the campaign's resources.model nor the trainer's reports named one)", c.Name()))
			continue
		case !fileNamePart.MatchString(c.Model) || strings.Contains(c.Model, "__"):
			skipped = append(skipped, fmt.Sprintf("%s: model %q cannot name a file (letters, digits, '.', '_', '+', '-', no \"__\")", c.Name(), c.Model))
			continue
		case c.NodeType != "" && !fileNamePart.MatchString(c.NodeType):
			skipped = append(skipped, fmt.Sprintf("%s: node type %q cannot name a file", c.Name(), c.NodeType))
			continue
		case len(c.Points) == 0:
			continue
		}
		k := key{c.Model, c.NodeType, max(c.Batch, 1)}
		if b, ok := best[k]; !ok || len(c.Points) > len(b.Points) || (len(c.Points) == len(b.Points) && c.At.After(b.At)) {
			best[k] = c
		}
	}
	byFile := map[string]*scalingFile{}
	for k, c := range best {
		name := k.model + "__" + k.nodeType + ".csv"
		f, ok := byFile[name]
		if !ok {
			f = &scalingFile{name: name}
			byFile[name] = f
		}
		f.curves = append(f.curves, c)
	}
	for _, f := range byFile {
		sort.Slice(f.curves, func(i, j int) bool { return max(f.curves[i].Batch, 1) < max(f.curves[j].Batch, 1) })
		files = append(files, *f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, skipped
}

// writeScaling writes f in the scaling CSV format (internal/dataset):
// nodes, gpus_per_node (1: a node is what the pool allocates),
// local_bsz, step_time_s (local_bsz × nodes / samples_per_s) and
// samples_per_s, after comment lines saying where each curve came from.
func writeScaling(w io.Writer, f scalingFile) error {
	for _, c := range f.curves {
		fmt.Fprintf(w, "# trial %s of campaign %s, learned %s", c.Trial, c.Campaign, c.At.UTC().Format(time.RFC3339))
		if c.Batch <= 0 {
			fmt.Fprint(w, "; batch size unknown, written as 1")
		}
		fmt.Fprintln(w)
	}
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"nodes", "gpus_per_node", "local_bsz", "step_time_s", "samples_per_s"})
	for _, c := range f.curves {
		bsz := max(c.Batch, 1)
		for _, p := range c.Points {
			step := float64(bsz*p.Nodes) / p.Throughput
			_ = cw.Write([]string{strconv.Itoa(p.Nodes), "1", strconv.Itoa(bsz),
				strconv.FormatFloat(step, 'g', -1, 64), strconv.FormatFloat(p.Throughput, 'g', -1, 64)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeScalingDir writes every file into dir (created if missing); an
// existing file stops it, unless force.
func writeScalingDir(dir string, files []scalingFile, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	if !force {
		for _, f := range files {
			path := filepath.Join(dir, f.name)
			if _, err := os.Stat(path); err == nil {
				return fmt.Errorf("--out %s: %s exists (--force overwrites it)", dir, path)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("--out %s: %w", dir, err)
			}
		}
	}
	for _, f := range files {
		var b strings.Builder
		if err := writeScaling(&b, f); err != nil {
			return fmt.Errorf("--out %s: %s: %w", dir, f.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("--out %s: %w", dir, err)
		}
	}
	return nil
}
