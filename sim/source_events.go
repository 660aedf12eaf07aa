package sim

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gleaner-hpc/gleaner/internal/idleevents"
)

// ReadIdleEvents reads an idle-event file in the BFTrainer format (read by
// idleevents.Reader): one event per line, "unix_time,event,nodes", where
// event is "idle" (the nodes became usable) or "busy" (the batch
// scheduler took them back) and nodes are space separated. Lines starting
// with '#' are comments (a comment "N nodes" declares the machine size),
// blank lines are skipped, and a header line "unix_time,event,nodes" is
// optional.
//
// Before the first event no node is idle. Times must not decrease (an
// error names the line); lines with the same time are merged into one
// Event. A node said busy while not idle, or idle while already idle, is
// ignored and counted in Report.Inconsistent rather than failing.
func ReadIdleEvents(r io.Reader, opts SourceOptions) (*Trace, error) {
	er := idleevents.NewReader(r)
	var (
		rep   TraceReport
		b     builder
		index = map[string]int32{}
		names []string
		// lastNew is the last node of the last record line if that line
		// named it first (on line lastLine).
		lastNew  string
		lastLine int
	)
	for {
		ev, err := er.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		rep.Records++
		lastNew = ""
		declared := er.DeclaredNodes()
		for _, name := range ev.Nodes {
			x, ok := index[name]
			if !ok {
				x = int32(len(names))
				index[name] = x
				names = append(names, name)
				b.grow(len(names))
				if declared > 0 && len(names) > declared {
					return nil, fmt.Errorf("line %d: field 3 (nodes): %q makes %d nodes; the header declares %d", ev.Line, name, len(names), declared)
				}
				lastNew, lastLine = name, ev.Line
			}
			if b.idle[x] == ev.Idle {
				rep.Inconsistent++
				continue
			}
			b.set(ev.Time, x, ev.Idle)
		}
	}
	rep.Lines, rep.DeclaredNodes = er.Lines(), er.DeclaredNodes()
	if lastNew != "" && lastLine == rep.Lines && !er.EndedWithNewline() {
		// The last line has no newline and ends in a name first seen
		// there: if that name begins another one, the file was cut
		// inside it.
		for _, other := range names {
			if len(other) > len(lastNew) && strings.HasPrefix(other, lastNew) {
				return nil, fmt.Errorf("line %d: field 3 (nodes): the file ends inside a node name (%q, a prefix of %q and more): is it cut short?", lastLine, lastNew, other)
			}
		}
	}
	b.flush()
	evs, nodes := sortNodes(b.evs, names)
	size := rep.DeclaredNodes
	if opts.MaxNodes > 0 {
		size = opts.MaxNodes
	}
	var span [2]float64
	if len(evs) > 0 {
		span = [2]float64{evs[0].t, evs[len(evs)-1].t}
	}
	return finish(evs, span, nodes, size, opts, rep)
}

// sortNodes renumbers nodes (indexed in order of first appearance) so that
// indices follow the sorted names, and re-sorts every event's lists.
func sortNodes(evs []rawEvent, names []string) ([]rawEvent, []string) {
	order := make([]int32, len(names))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(names[a], names[b]) })
	rank := make([]int32, len(names))
	sorted := make([]string, len(names))
	for r, old := range order {
		rank[old] = int32(r)
		sorted[r] = names[old]
	}
	for _, ev := range evs {
		for _, xs := range [][]int32{ev.idle, ev.busy} {
			for i, x := range xs {
				xs[i] = rank[x]
			}
			slices.Sort(xs)
		}
	}
	return evs, sorted
}
