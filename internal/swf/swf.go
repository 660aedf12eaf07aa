package swf

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// NumFields is the number of fields on a job line.
const NumFields = 18

// Unknown is the value of a field the log does not know.
const Unknown = -1

// MaxLineBytes bounds one line, its newline included. A job line is under
// 200 bytes; the bound keeps a file that is not SWF from filling memory.
const MaxLineBytes = 64 << 10

// MaxUnixSeconds bounds "; UnixStartTime:" under Limits.UnixSeconds.
const MaxUnixSeconds = 1 << 40

// Field is a field number, 1-based as the SWF definition numbers them.
type Field int

// The fields Gleaner reads. The others are known by number only.
const (
	JobID      Field = 1
	SubmitTime Field = 2
	WaitTime   Field = 3
	RunTime    Field = 4
	AllocProcs Field = 5 // allocated processors
	ReqProcs   Field = 8 // requested processors
	ReqTime    Field = 9 // requested time
)

var fieldNames = [NumFields + 1]string{
	JobID:      "job id",
	SubmitTime: "submit time",
	WaitTime:   "wait time",
	RunTime:    "run time",
	AllocProcs: "allocated processors",
	ReqProcs:   "requested processors",
	ReqTime:    "requested time",
}

// String is "field 4 (run time)", or "field 17" for a field without a
// name here.
func (f Field) String() string {
	if f >= 1 && f <= NumFields && fieldNames[f] != "" {
		return fmt.Sprintf("field %d (%s)", int(f), fieldNames[f])
	}
	return fmt.Sprintf("field %d", int(f))
}

// Error is a malformed line: where it is and what is wrong with it.
type Error struct {
	Line  int   // 1-based
	Field Field // 0 when the error is about the line, not one field
	Err   error
}

// Error is "line 3: field 4 (run time): "abc" is not a number".
func (e *Error) Error() string {
	if e.Field == 0 {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: %v: %v", e.Line, e.Field, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Limits are the bounds a caller puts on the header comments. A header
// outside them is an *Error naming its line.
type Limits struct {
	// MaxNodes bounds "; MaxNodes:" to a whole number in 1..MaxNodes. It
	// is required.
	MaxNodes int
	// UnixSeconds requires "; UnixStartTime:" to be an integer in
	// 0..MaxUnixSeconds; without it any finite number will do.
	UnixSeconds bool
}

// Header is what the header comments have declared so far. A comment
// takes effect from its line on; a later one replaces an earlier one.
// Other keys (MaxProcs, Version, ...) are read as comments.
type Header struct {
	MaxNodes      int     // "; MaxNodes:", the machine size; 0 until declared
	UnixStartTime float64 // "; UnixStartTime:", added to submit times; 0 until declared
}

// Record is one job line: its number and its fields as written. Fields
// are parsed on demand, so that each caller decides which it needs and
// how strictly.
type Record struct {
	Line   int // 1-based
	fields [NumFields]string
}

// Text is field f as written. It panics unless 1 <= f <= NumFields.
func (r Record) Text(f Field) string { return r.fields[f-1] }

// Number parses field f as a finite number.
func (r Record) Number(f Field) (float64, error) {
	s := r.Text(f)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.Errorf(f, "%q is not a number", s)
	}
	return v, nil
}

// Whole parses field f as a whole number: an integer, or a number with no
// fraction within ±2^53 ("3600.0", as some converters write them).
func (r Record) Whole(f Field) (int64, error) {
	s := r.Text(f)
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, r.Errorf(f, "%q is not a whole number", s)
	}
	return int64(v), nil
}

// Errorf is an *Error about field f of this line, or about the whole line
// if f is 0.
func (r Record) Errorf(f Field, format string, args ...any) error {
	return &Error{Line: r.Line, Field: f, Err: fmt.Errorf(format, args...)}
}

// Reader reads an SWF log one job line at a time.
type Reader struct {
	sc     *bufio.Scanner
	limits Limits
	line   int
	header Header
	err    error
}

// NewReader reads r under limits. It panics if limits.MaxNodes < 1.
func NewReader(r io.Reader, limits Limits) *Reader {
	if limits.MaxNodes < 1 {
		panic(fmt.Sprintf("swf.NewReader: Limits.MaxNodes is %d, want at least 1", limits.MaxNodes))
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	return &Reader{sc: sc, limits: limits}
}

// Header is what the header comments have declared up to the last line
// read.
func (r *Reader) Header() Header { return r.header }

// Line is the number of lines read so far: after io.EOF, the number of
// lines in the log.
func (r *Reader) Line() int { return r.line }

// Next returns the next job line, reading the comments and blank lines
// before it. At the end of the log it returns io.EOF. A line without 18
// fields, a bad header, a line longer than MaxLineBytes (wrapping
// bufio.ErrTooLong) or an error reading r is an *Error; after an error
// Next returns it again.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	rec, err := r.next()
	r.err = err
	return rec, err
}

func (r *Reader) next() (Record, error) {
	for r.sc.Scan() {
		r.line++
		text := strings.TrimSpace(r.sc.Text())
		if text == "" {
			continue
		}
		if text[0] == ';' {
			if err := r.comment(text[1:]); err != nil {
				return Record{}, &Error{Line: r.line, Err: err}
			}
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != NumFields {
			return Record{}, &Error{Line: r.line, Err: fmt.Errorf("%d fields, want %d", len(fields), NumFields)}
		}
		rec := Record{Line: r.line}
		copy(rec.fields[:], fields)
		return rec, nil
	}
	if err := r.sc.Err(); err != nil {
		return Record{}, &Error{Line: r.line + 1, Err: err}
	}
	return Record{}, io.EOF
}

// comment reads one comment, the text after ';'.
func (r *Reader) comment(text string) error {
	key, val, ok := strings.Cut(strings.TrimSpace(text), ":")
	if !ok {
		return nil
	}
	val = strings.TrimSpace(val)
	switch strings.TrimSpace(key) {
	case "MaxNodes":
		n, err := strconv.Atoi(val)
		if err != nil || n <= 0 || n > r.limits.MaxNodes {
			return fmt.Errorf("header MaxNodes: %q is not a node count in 1..%d", val, r.limits.MaxNodes)
		}
		r.header.MaxNodes = n
	case "UnixStartTime":
		if r.limits.UnixSeconds {
			s, err := strconv.ParseInt(val, 10, 64)
			if err != nil || s < 0 || s > MaxUnixSeconds {
				return fmt.Errorf("header UnixStartTime: %q is not unix seconds in 0..2^40", val)
			}
			r.header.UnixStartTime = float64(s)
			break
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("header UnixStartTime: %q is not a finite number", val)
		}
		r.header.UnixStartTime = v
	}
	return nil
}
