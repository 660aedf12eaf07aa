package cli

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// writeCheck prints the result for people: the setup, each run, the
// metrics, and the verdict line with the problems' details under it.
func writeCheck(w io.Writer, res CheckResult) {
	rel := func(path string) string { // paths in the trial directory, relative to it
		if r, err := filepath.Rel(res.Dir, path); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return path
	}
	args := make([]string, len(res.Command))
	for i, a := range res.Command {
		args[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
			args[i] = strconv.Quote(a)
		}
	}
	fmt.Fprintf(w, "gleaner trainer check: %s\n", shorten(strings.Join(args, " "), 200))
	nodes := "1 node"
	if res.Nodes != 1 {
		nodes = fmt.Sprintf("%d nodes", res.Nodes)
	}
	if res.GPUs > 0 {
		nodes += " with a GPU each"
	}
	fmt.Fprintf(w, "  in %s · params %s · %s · budget %v %s · grace %s\n", res.WorkDir, res.Params, nodes, res.Budget, res.Unit, res.Grace)
	for _, run := range res.Runs {
		fmt.Fprintf(w, "\nrun %d  %s\n", run.Run, run.Purpose)
		if run.ResumeFrom != "" {
			fmt.Fprintf(w, "  resume from  %s\n", rel(run.ResumeFrom))
		}
		if run.Error != "" {
			fmt.Fprintf(w, "  error        %s\n", run.Error)
			continue
		}
		fmt.Fprintf(w, "  reports      %d parsed, %d malformed (%s)\n", run.Reports, len(run.Malformed), rel(run.ReportFile))
		for i, m := range run.Malformed {
			if i == 3 {
				fmt.Fprintf(w, "               … %d more\n", len(run.Malformed)-i)
				break
			}
			fmt.Fprintf(w, "               line %d: %s\n", m.Line, m.Error)
		}
		if run.First != nil {
			fmt.Fprintf(w, "  progress     %s → %s\n", describeCounters(*run.First, res.Unit), describeCounters(*run.Last, res.Unit))
		}
		switch {
		case run.StopSent:
			at := ""
			if run.StopAt != nil {
				at = " after " + describeCounters(*run.StopAt, res.Unit)
			}
			fmt.Fprintf(w, "  stop         SIGTERM%s: %s", at, run.Exit.Text)
			if run.StopTook != "" {
				fmt.Fprintf(w, " in %s", run.StopTook)
			}
			fmt.Fprintln(w)
		case run.StoppedByWorker:
			fmt.Fprintf(w, "  stop         past its budget: the worker sent SIGTERM: %s\n", run.Exit.Text)
		case run.TimedOut:
			fmt.Fprintf(w, "  stop         after --timeout: %s\n", run.Exit.Text)
		default:
			fmt.Fprintf(w, "  exit         %s\n", run.Exit.Text)
		}
		switch n := len(run.Checkpoints); {
		case n == 0:
			fmt.Fprintf(w, "  checkpoints  none reported\n")
		default:
			last := run.Checkpoints[n-1]
			fmt.Fprintf(w, "  checkpoints  %d reported, the last at %s: %s\n", n, describeCounters(last.CheckCounters, res.Unit), rel(last.Path))
		}
		for _, l := range run.Worker {
			fmt.Fprintf(w, "  worker       %s\n", l)
		}
		if len(run.LogTail) > 0 {
			fmt.Fprintf(w, "  log          %s, its last lines:\n", rel(run.Log))
			for _, l := range run.LogTail {
				fmt.Fprintf(w, "    | %s\n", l)
			}
		}
	}
	if len(res.Metrics) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(res.Metrics)) {
			parts = append(parts, fmt.Sprintf("%s %.6g", k, res.Metrics[k]))
		}
		fmt.Fprintf(w, "\nmetrics  %s\n", strings.Join(parts, ", "))
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "warning  %s\n", warn)
	}
	dir := res.Dir + " (the paths above are relative to it)"
	if res.Removed {
		dir = res.Dir + " (removed)"
	}
	fmt.Fprintf(w, "trial    %s\n\n%s\n", dir, res.Verdict)
	for _, p := range res.Problems {
		run := ""
		if p.Run > 0 {
			run = fmt.Sprintf("run %d: ", p.Run)
		}
		fmt.Fprintf(w, "  - %s%s: %s\n", run, p.Reason, p.Detail)
	}
}
