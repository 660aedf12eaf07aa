package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

type poolStatusOptions struct {
	conn connectOptions
	json bool
}

func newPoolCmd() *cobra.Command {
	pool := &cobra.Command{
		Use:   "pool",
		Short: "Inspect pools of idle nodes",
		Args:  exactArgs(0, "a subcommand: status or library"),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pool.AddCommand(newPoolStatusCmd(), newPoolLibraryCmd())
	return pool
}

func newPoolStatusCmd() *cobra.Command {
	o := &poolStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status [POOL]",
		Short: "Show a pool's nodes, its trials and their nodes, and the last allocation",
		Long: `Prints a pool (default "default"; a campaign runs in the pool its spec
names, "default" unless it says otherwise): its nodes (the idle nodes it
harvested, and how many of them trials use now, by type), the trials
registered with it with their nodes now and, for trials without nodes, the
allocator's reason; and the last allocation: formulation, solver status,
solve time, nodes used and trials whose nodes changed.

A trial registers while it wants nodes: a paused campaign's trials, and
trials parked at their budget, are not registered. An inline campaign
(trial.inline) registers once, as one job whose trials share its nodes.

--json prints the pool's status as one JSON object.`,
		Example: `  gleaner pool status
  gleaner pool status default --json | jq .last`,
		Args: maxArgs(1, "one POOL name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.Flags(), poolArg(args), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON")
	o.conn.addFlags(f)
	return cmd
}

func (o *poolStatusOptions) run(ctx context.Context, flags *pflag.FlagSet, name string, stdout, stderr io.Writer) error {
	if err := gleaner.ValidateName("POOL", name); err != nil {
		return withCode(ExitUsage, err)
	}
	c, closeClient, err := o.conn.connect(ctx, flags, stderr)
	if err != nil {
		return err
	}
	defer closeClient()
	s, err := c.PoolStatus(ctx, name)
	if err != nil {
		return poolErr(name, err)
	}
	if o.json {
		return writeJSON(stdout, s)
	}
	writePoolStatus(stdout, s)
	return nil
}

func writePoolStatus(w io.Writer, s workflows.PoolStatus) {
	byType := map[string]int{}
	for _, n := range s.Nodes {
		t := n.Type
		if t == "" {
			t = "(untyped)"
		}
		byType[t]++
	}
	types := make([]string, 0, len(byType))
	for t, n := range byType {
		types = append(types, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(types)
	inUse, total := s.NodeUse()
	fmt.Fprintf(w, "pool      %s\n", s.Name)
	fmt.Fprintf(w, "nodes     %d, %d in use", total, inUse)
	if len(types) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(types, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "trials    %s\n", workflows.RegistrationsText(s.Registrations()))
	if s.LibraryCurves > 0 {
		fmt.Fprintf(w, "library   %d learned curves (gleaner pool library %s)\n", s.LibraryCurves, s.Name)
	}
	if s.Solves == 0 {
		fmt.Fprintln(w, "last      no allocation yet")
	} else {
		l := s.Last
		fmt.Fprintf(w, "last      %s %s in %.1f ms at %s: %d/%d nodes used, %d trials, %d changed (%d solves, epoch %d)\n",
			l.Formulation, l.Status, l.SolveMillis, l.At.Local().Format(time.TimeOnly), l.NodesUsed, l.Nodes, l.Trials, l.Changed, s.Solves, s.Epoch)
	}
	if len(s.Trials) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRIAL\tCAMPAIGN\tWEIGHT\tNODES\tRANGE\tTYPE\tREASON\tASSIGNED")
	for _, t := range s.Trials {
		r := t.Registration
		reason := t.Reason
		if reason == "" {
			reason = "-"
		}
		typ := t.NodeType
		if typ == "" {
			typ = "-"
		}
		weight := r.Weight
		if weight == 0 {
			weight = 1
		}
		fmt.Fprintf(tw, "%s\t%s\t%g\t%d\t%d-%d\t%s\t%s\t%s\n",
			r.TrialID, r.CampaignID, weight, len(t.Nodes), r.MinNodes, r.MaxNodes, typ, reason, compactList(t.Nodes, 6))
	}
	_ = tw.Flush()
}

// compactList is "a,b,c" with at most n items, then "+k".
func compactList(items []string, n int) string {
	if len(items) == 0 {
		return "-"
	}
	if len(items) <= n {
		return strings.Join(items, ",")
	}
	return fmt.Sprintf("%s,+%d", strings.Join(items[:n], ","), len(items)-n)
}

// poolErr names the pool in a not-found error (exit 3).
func poolErr(name string, err error) error {
	if isNotFound(err) {
		return withCode(ExitNotFound, fmt.Errorf("pool %q: %w (a pool starts with its first trial)", name, client.ErrNotFound))
	}
	return err
}

// poolArg is the POOL argument of a pool command: "default" when none.
func poolArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return "default"
}
