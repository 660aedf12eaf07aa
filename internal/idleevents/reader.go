package idleevents

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// MaxLineBytes bounds one line, its newline included. The Summit trace's
// longest line is about 20 KB, an event naming all of Summit's 4,608
// nodes about 35 KB; the bound keeps a file that is not an event file
// from filling memory.
const MaxLineBytes = 1 << 20

// Header is the optional first line naming the fields.
const Header = "unix_time,event,nodes"

// Event is one line of the file.
type Event struct {
	Line int     // 1-based
	Time float64 // unix seconds: finite, not before the previous event's
	// Idle: the nodes became usable; otherwise the batch scheduler took
	// them back ("busy").
	Idle  bool
	Nodes []string // at least one, as named in the file
}

// Reader reads the events of a file in order. Lines starting with '#' are
// comments (one saying "N nodes" declares the machine size), blank lines
// are skipped, and a header line (Header) may come before the first
// event. Errors name the line and the field: `line 3: field 1
// (unix_time): "x" is not a finite number`.
type Reader struct {
	br       *bufio.Reader
	lines    int
	prev     float64
	started  bool // an event or the header was read: no header after
	declared int
	newline  bool // the last line read ended with a newline
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), prev: math.Inf(-1), newline: true}
}

// Next returns the next event, or io.EOF after the last.
func (r *Reader) Next() (Event, error) {
	for {
		raw, err := r.readLine()
		if err != nil {
			return Event{}, err
		}
		line := strings.TrimSpace(raw)
		switch {
		case line == "":
			continue
		case line[0] == '#':
			if n, ok := declaredNodes(line); ok && r.declared == 0 {
				r.declared = n
			}
			continue
		}
		fields := strings.Split(line, ",")
		if !r.started && strings.TrimSpace(fields[0]) == "unix_time" {
			r.started = true
			continue
		}
		r.started = true
		ev, err := r.parse(fields)
		if err != nil {
			return Event{}, fmt.Errorf("line %d: %w", r.lines, err)
		}
		return ev, nil
	}
}

func (r *Reader) parse(fields []string) (Event, error) {
	if len(fields) != 3 {
		return Event{}, fmt.Errorf("%d comma-separated fields, want 3 (%s)", len(fields), Header)
	}
	ev := Event{Line: r.lines}
	f1 := strings.TrimSpace(fields[0])
	t, err := strconv.ParseFloat(f1, 64)
	if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
		return Event{}, fmt.Errorf("field 1 (unix_time): %q is not a finite number", f1)
	}
	if t < r.prev {
		return Event{}, fmt.Errorf("field 1 (unix_time): %v is before the previous event's %v", t, r.prev)
	}
	r.prev, ev.Time = t, t
	switch kind := strings.TrimSpace(fields[1]); kind {
	case "idle":
		ev.Idle = true
	case "busy":
	default:
		return Event{}, fmt.Errorf("field 2 (event): %q is neither idle nor busy", kind)
	}
	if ev.Nodes = strings.Fields(fields[2]); len(ev.Nodes) == 0 {
		return Event{}, errors.New("field 3 (nodes): no node")
	}
	return ev, nil
}

// readLine returns the next line without its newline, failing on lines
// longer than MaxLineBytes; io.EOF only when nothing is left.
func (r *Reader) readLine() (string, error) {
	var sb strings.Builder
	for {
		frag, err := r.br.ReadSlice('\n')
		if sb.Len()+len(frag) > MaxLineBytes {
			return "", fmt.Errorf("line %d: longer than %d bytes", r.lines+1, MaxLineBytes)
		}
		sb.Write(frag)
		switch {
		case err == nil:
			r.lines++
			r.newline = true
			return strings.TrimSuffix(sb.String(), "\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && sb.Len() > 0:
			r.lines++
			r.newline = false
			return sb.String(), nil
		case err == io.EOF:
			return "", io.EOF
		default:
			return "", fmt.Errorf("line %d: %w", r.lines+1, err)
		}
	}
}

// Lines is the number of lines read so far, blank and comment lines
// included.
func (r *Reader) Lines() int { return r.lines }

// DeclaredNodes is the machine size the first comment saying "N nodes"
// declared ("# 4734 nodes; …"), 0 while none has.
func (r *Reader) DeclaredNodes() int { return r.declared }

// EndedWithNewline reports whether the last line read ended with a
// newline (true before any): once Next returned io.EOF, false means the
// file's last line has none, as when a file was cut short.
func (r *Reader) EndedWithNewline() bool { return r.newline }

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
