package pbs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ParseError is output of a PBS command that Gleaner cannot read: it
// names the command and where in its output (a line, a job's attribute).
type ParseError struct {
	Command string // e.g. "qstat -f -F json"
	Where   string // e.g. "line 4", "job 12.pbs: exec_vnode"; empty: the output as a whole
	Value   string
	Reason  string
}

func (e *ParseError) Error() string {
	parts := []string{e.Command}
	if e.Where != "" {
		parts = append(parts, e.Where)
	}
	if e.Value != "" {
		v := e.Value
		if len(v) > 80 {
			v = v[:80] + "…"
		}
		parts = append(parts, strconv.Quote(v))
	}
	return strings.Join(parts, ": ") + ": " + e.Reason
}

// ctimeLayout is how PBS prints times (`qstat -f`, its JSON, pbs_rstat):
// C's ctime in the local time zone of the host that printed them.
const ctimeLayout = "Mon Jan _2 15:04:05 2006"

// ParseTime reads a PBS time: ctime's "Mon Nov 23 13:50:00 2026" in loc,
// or seconds since the epoch. Empty is the zero time.
func ParseTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > 1<<40 {
			return time.Time{}, fmt.Errorf("epoch seconds out of range")
		}
		return time.Unix(n, 0).In(loc), nil
	}
	t, err := time.ParseInLocation(ctimeLayout, strings.Join(strings.Fields(s), " "), loc)
	if err != nil {
		// ctime pads the day with a space; Fields took it out.
		t, err = time.ParseInLocation("Mon Jan 2 15:04:05 2006", strings.Join(strings.Fields(s), " "), loc)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("want a time like \"Mon Nov 23 13:50:00 2026\" or epoch seconds")
	}
	return t, nil
}

// ParseDuration reads a PBS duration (walltime, kill_delay):
// "[[HH:]MM:]SS[.fraction]", hours unbounded ("100:00:00").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ":")
	if s == "" || len(parts) > 3 {
		return 0, fmt.Errorf("want [[HH:]MM:]SS")
	}
	var total time.Duration
	for i, p := range parts {
		last := i == len(parts)-1
		whole, frac, hasFrac := strings.Cut(p, ".")
		if whole == "" || (hasFrac && !last) || strings.TrimLeft(whole, "0123456789") != "" || len(whole) > 9 {
			return 0, fmt.Errorf("want [[HH:]MM:]SS, got part %q", p)
		}
		v, _ := strconv.ParseInt(whole, 10, 64)
		total = total*60 + time.Duration(v)*time.Second
		if hasFrac {
			if frac == "" || len(frac) > 9 || strings.TrimLeft(frac, "0123456789") != "" {
				return 0, fmt.Errorf("want [[HH:]MM:]SS[.fraction], got part %q", p)
			}
			f, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
			total += time.Duration(f)
		}
		if i < len(parts)-1 && total > 100*365*24*time.Hour/60 {
			return 0, fmt.Errorf("longer than 100 years")
		}
	}
	if total > 100*365*24*time.Hour {
		return 0, fmt.Errorf("longer than 100 years")
	}
	return total, nil
}

// FormatDuration writes d as PBS reads a walltime ("HH:MM:SS", hours
// unbounded), rounded up to whole seconds.
func FormatDuration(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
}

// MaxVnodes bounds the vnodes one exec_vnode may name.
const MaxVnodes = 100000

// ParseExecVnode reads an exec_vnode (or estimated.exec_vnode, resv_nodes)
// value: chunks "(vnode:res=v:...)" joined by "+", a chunk spanning
// vnodes "(a:ncpus=2+b:ncpus=2)". It returns the vnodes in order, each
// once.
func ParseExecVnode(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var names []string
	seen := map[string]bool{}
	for _, chunk := range splitChunks(s) {
		if chunk == "" {
			return nil, fmt.Errorf("an empty chunk")
		}
		inner, ok := strings.CutPrefix(chunk, "(")
		if ok {
			if inner, ok = strings.CutSuffix(inner, ")"); !ok {
				return nil, fmt.Errorf("chunk %q: unbalanced parentheses", chunk)
			}
		}
		if strings.ContainsAny(inner, "()") {
			return nil, fmt.Errorf("chunk %q: unbalanced parentheses", chunk)
		}
		for _, part := range strings.Split(inner, "+") {
			name, _, _ := strings.Cut(part, ":")
			name = strings.TrimSpace(name)
			if name == "" || strings.ContainsAny(name, "()+= \t\n,") || !utf8.ValidString(name) {
				return nil, fmt.Errorf("chunk %q: want vnode:resource=value", chunk)
			}
			if !seen[name] {
				if len(names) == MaxVnodes {
					return nil, fmt.Errorf("more than %d vnodes", MaxVnodes)
				}
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	return names, nil
}

// splitChunks splits an exec_vnode at the "+" between parenthesised
// chunks (not those inside one).
func splitChunks(s string) []string {
	var chunks []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case '+':
			if depth == 0 {
				chunks = append(chunks, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(chunks, strings.TrimSpace(s[start:]))
}

// ParseJobID reads qsub's output: the job id ("123.server", an array's
// "123[].server").
func ParseJobID(out []byte) (string, error) {
	s := strings.TrimSpace(string(out))
	if !validJobID(s) {
		return "", &ParseError{Command: "qsub", Value: s, Reason: "want a job id (SEQ.SERVER)"}
	}
	return s, nil
}

// validJobID: digits, optionally an array index in brackets, then
// ".server", without blanks.
func validJobID(s string) bool {
	seq, rest, ok := strings.Cut(s, ".")
	if i := strings.IndexByte(seq, '['); i > 0 {
		seq = seq[:i]
	}
	if !ok || seq == "" || rest == "" || strings.TrimLeft(seq, "0123456789") != "" || len(seq) > 18 {
		return false
	}
	return !strings.ContainsAny(s, " \t\r\n") && utf8.ValidString(s)
}

// attrBlock is one object of `qmgr -c 'list ...'` or `pbs_rstat -f`: a
// header line, then "name = value" lines.
type attrBlock struct {
	Header string
	Line   int // the header's
	// Attrs are the attributes by lower-case name: PBS's attribute names
	// are case-insensitive, and qmgr prints some capitalised ("Priority",
	// pbs_rstat "Reserve_Name").
	Attrs map[string]string
}

// readBlocks reads header lines (unindented, not "name = value") and the
// attributes under them, indented (qmgr: four spaces) or not (pbs_rstat
// -f). A line indented by a tab that is no attribute continues the value
// before it (PBS wraps long values that way in `qstat -f` and, in some
// versions, pbs_rstat -f).
func readBlocks(cmd string, out []byte, isHeader func(string) bool) ([]attrBlock, error) {
	var blocks []attrBlock
	var last string
	for i, raw := range bytes.Split(out, []byte("\n")) {
		n := i + 1
		line := strings.TrimRight(string(raw), "\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			continue
		case isHeader(line):
			blocks = append(blocks, attrBlock{Header: trimmed, Line: n, Attrs: map[string]string{}})
			last = ""
			continue
		}
		name, value, isAttr := strings.Cut(trimmed, " = ")
		if !isAttr && strings.HasSuffix(trimmed, " =") {
			name, isAttr = strings.TrimSuffix(trimmed, " ="), true
		}
		isAttr = isAttr && !strings.ContainsAny(name, " \t")
		switch {
		case len(blocks) == 0:
			return nil, &ParseError{Command: cmd, Where: fmt.Sprintf("line %d", n), Value: line, Reason: "an attribute before any object's header"}
		case !isAttr && strings.HasPrefix(line, "\t") && last != "":
			blocks[len(blocks)-1].Attrs[last] += trimmed
		case !isAttr:
			return nil, &ParseError{Command: cmd, Where: fmt.Sprintf("line %d", n), Value: line, Reason: "want name = value"}
		default:
			name = strings.ToLower(name)
			blocks[len(blocks)-1].Attrs[name] = value
			last = name
		}
	}
	return blocks, nil
}
