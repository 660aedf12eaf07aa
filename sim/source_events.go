package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// maxLine bounds one line of a trace file (a Summit event naming every
// node is ~35 KB).
const maxLine = 16 << 20

// ReadIdleEvents reads an idle-event file in the BFTrainer format: one
// event per line, "unix_time,event,nodes", where event is "idle" (the
// nodes became usable) or "busy" (the batch scheduler took them back) and
// nodes are space separated. Lines starting with '#' are comments (a
// comment "N nodes" declares the machine size), blank lines are skipped,
// and a header line "unix_time,event,nodes" is optional.
//
// Before the first event no node is idle. Times must not decrease (an
// error names the line); lines with the same time are merged into one
// Event. A node said busy while not idle, or idle while already idle, is
// ignored and counted in Report.Inconsistent rather than failing.
func ReadIdleEvents(r io.Reader, opts SourceOptions) (*Trace, error) {
	tail := &lastByte{r: r}
	sc := bufio.NewScanner(tail)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var (
		rep    TraceReport
		b      builder
		index  = map[string]int32{}
		names  []string
		prev   = math.Inf(-1)
		header = true // a header line may come before the first event
		// lastNew is the last node of the last record line if that line
		// named it first (on line lastLine).
		lastNew  string
		lastLine int
	)
	for sc.Scan() {
		rep.Lines++
		ln := rep.Lines
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case line[0] == '#':
			if n, ok := declaredNodes(line); ok && rep.DeclaredNodes == 0 {
				rep.DeclaredNodes = n
			}
			continue
		}
		fields := strings.Split(line, ",")
		if header && strings.TrimSpace(fields[0]) == "unix_time" {
			header = false
			continue
		}
		header = false
		if len(fields) != 3 {
			return nil, fmt.Errorf("line %d: %d comma-separated fields, want 3 (unix_time,event,nodes)", ln, len(fields))
		}
		f1 := strings.TrimSpace(fields[0])
		t, err := strconv.ParseFloat(f1, 64)
		if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("line %d: field 1 (unix_time): %q is not a finite number", ln, f1)
		}
		if t < prev {
			return nil, fmt.Errorf("line %d: field 1 (unix_time): %v is before the previous event's %v", ln, t, prev)
		}
		prev = t
		var idle bool
		switch kind := strings.TrimSpace(fields[1]); kind {
		case "idle":
			idle = true
		case "busy":
		default:
			return nil, fmt.Errorf("line %d: field 2 (event): %q is neither idle nor busy", ln, kind)
		}
		nodes := strings.Fields(fields[2])
		if len(nodes) == 0 {
			return nil, fmt.Errorf("line %d: field 3 (nodes): no node", ln)
		}
		rep.Records++
		lastNew = ""
		for _, name := range nodes {
			x, ok := index[name]
			if !ok {
				x = int32(len(names))
				index[name] = x
				names = append(names, name)
				b.grow(len(names))
				if rep.DeclaredNodes > 0 && len(names) > rep.DeclaredNodes {
					return nil, fmt.Errorf("line %d: field 3 (nodes): %q makes %d nodes; the header declares %d", ln, name, len(names), rep.DeclaredNodes)
				}
				lastNew, lastLine = name, ln
			}
			if b.idle[x] == idle {
				rep.Inconsistent++
				continue
			}
			b.set(t, x, idle)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", rep.Lines+1, err)
	}
	if lastNew != "" && lastLine == rep.Lines && tail.n > 0 && tail.last != '\n' {
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

// declaredNodes finds "N nodes" in a comment line.
func declaredNodes(line string) (int, bool) {
	f := strings.Fields(strings.TrimLeft(line, "#"))
	for i := 0; i+1 < len(f); i++ {
		if strings.HasPrefix(f[i+1], "nodes") {
			if n, err := strconv.Atoi(f[i]); err == nil && n > 0 {
				return n, true
			}
		}
	}
	return 0, false
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

// lastByte reads through r, remembering the last byte read (n counts
// them): whether the input ended with a newline.
type lastByte struct {
	r    io.Reader
	n    int64
	last byte
}

func (l *lastByte) Read(p []byte) (int, error) {
	k, err := l.r.Read(p)
	if k > 0 {
		l.n += int64(k)
		l.last = p[k-1]
	}
	return k, err
}
