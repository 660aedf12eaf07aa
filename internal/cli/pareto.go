package cli

// How status and leaderboard show a campaign of several objectives or
// with constraints: its Pareto front and hypervolume instead of a best,
// each objective's value per trial and whether it is feasible.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// statusFrontN is how many of the front's trials status lists.
const statusFrontN = 10

// goalsText says what a campaign optimises: "min loss, min cost; mem ≤ 3.5".
func goalsText(objectives []hpo.Objective, constraints []hpo.Constraint) string {
	parts := make([]string, len(objectives))
	for i, o := range objectives {
		parts[i] = o.Mode + " " + o.Metric
	}
	text := strings.Join(parts, ", ")
	if len(constraints) > 0 {
		cs := make([]string, len(constraints))
		for i, c := range constraints {
			cs[i] = constraintText(c)
		}
		text += "; " + strings.Join(cs, ", ")
	}
	return text
}

// constraintText is "mem ≤ 3.5", "acc ≥ 0.9" or "1 ≤ x ≤ 5".
func constraintText(c hpo.Constraint) string {
	switch {
	case c.Min != nil && c.Max != nil:
		return fmt.Sprintf("%.6g ≤ %s ≤ %.6g", *c.Min, c.Metric, *c.Max)
	case c.Max != nil:
		return fmt.Sprintf("%s ≤ %.6g", c.Metric, *c.Max)
	case c.Min != nil:
		return fmt.Sprintf("%s ≥ %.6g", c.Metric, *c.Min)
	}
	return c.Metric
}

// valuesText is a trial's objectives' values: "loss 0.12 cost 4.5", and
// "infeasible" when it breaks a constraint.
func valuesText(e workflows.LeaderboardEntry, objectives []hpo.Objective) string {
	parts := make([]string, 0, len(e.Values)+1)
	for i, v := range e.Values {
		name := fmt.Sprintf("value%d", i+1)
		if i < len(objectives) {
			name = objectives[i].Metric
		}
		parts = append(parts, fmt.Sprintf("%s %.6g", name, v))
	}
	if e.Infeasible {
		parts = append(parts, "infeasible")
	}
	return strings.Join(parts, " ")
}

// writeStatusPareto is status's "best" for a campaign with a front.
func writeStatusPareto(w io.Writer, s workflows.CampaignStatus) {
	f := s.Pareto
	goals := goalsText(s.Objectives, s.Constraints)
	if f.Size == 0 {
		fmt.Fprintf(w, "best      no Pareto front yet (%s)\n", goals)
		return
	}
	fmt.Fprintf(w, "best      Pareto front of %s (%s), %s\n", frontTrials(f.Size), goals, f.HypervolumeText())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, e := range f.Trials {
		if i == statusFrontN {
			break
		}
		fmt.Fprintf(tw, "          %s\t%s\t(%s, %s samples):\t%s\n",
			e.TrialID, valuesText(e, s.Objectives), e.State, formatCount(e.Samples), e.Params.Format(4))
	}
	_ = tw.Flush()
	if more := f.Size - min(len(f.Trials), statusFrontN); more > 0 {
		fmt.Fprintf(w, "          … and %d more (gleaner leaderboard %s)\n", more, s.Campaign)
	}
	if f.Thinned > 0 {
		fmt.Fprintf(w, "          %d more crowded trials left the front to keep it at %d\n", f.Thinned, gleaner.MaxParetoFront)
	}
}

// writeParetoLeaderboard prints a campaign's leaderboard of several
// objectives, as leaderboard, submit --wait and dev's summary show it:
// its front's hypervolume (f; nil: not known), then each trial's rank
// (1: the front), its objectives' values and whether it is feasible.
func writeParetoLeaderboard(w io.Writer, l []workflows.LeaderboardEntry, f *gleaner.ParetoFront, objectives []hpo.Objective, constraints []hpo.Constraint) {
	if f != nil {
		fmt.Fprintf(w, "Pareto front of %s (%s), %s\n", frontTrials(f.Size), goalsText(objectives, constraints), f.HypervolumeText())
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"RANK", "TRIAL"}
	for _, o := range objectives {
		head = append(head, strings.ToUpper(o.Metric)+" ("+o.Mode+")")
	}
	cons := len(constraints) > 0
	if cons {
		head = append(head, "FEASIBLE")
	}
	head = append(head, "STATE", "SAMPLES", "RESTARTS", "PARAMS")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, e := range l {
		row := []string{fmt.Sprint(e.Rank), e.TrialID}
		for _, v := range e.Values {
			row = append(row, fmt.Sprintf("%.6g", v))
		}
		if cons {
			row = append(row, map[bool]string{true: "no", false: "yes"}[e.Infeasible])
		}
		state := string(e.State)
		if e.Stage != "" {
			state += " (" + e.Stage + ")"
		}
		row = append(row, state, formatCount(e.Samples), fmt.Sprint(e.Restarts), e.Params.Format(4))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

// frontTrials is "1 trial" or "N trials".
func frontTrials(n int) string {
	if n == 1 {
		return "1 trial"
	}
	return fmt.Sprintf("%d trials", n)
}
