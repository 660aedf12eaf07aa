package swf

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/data"
)

// FuzzReader: any input is read to io.EOF or to an *Error naming a line
// that was reached, never a panic. Every record has 18 fields that are
// words of the line; Whole agrees with Number; the header stays within
// the limits; a record written back out reads the same; and Line counts
// the lines as bufio.ScanLines does.
//
// Seeds: testdata/fuzz/FuzzReader, where seed-theta is a comment naming
// its source and then the first 8 lines (3 header comments, 5 jobs) of
// data/traces/theta-2022.swf, the ALCF Theta job log for 2022, and the
// others are hand-written; plus the first 64 lines of that log, read from
// the built-in reference data.
func FuzzReader(f *testing.F) {
	theta := builtInHead(f, data.Prefix+data.Theta2022, 64)
	f.Add(theta, true)
	f.Add(theta, false)
	f.Fuzz(func(t *testing.T, data []byte, unixSeconds bool) {
		lim := Limits{MaxNodes: 1 << 20, UnixSeconds: unixSeconds}
		rd := NewReader(bytes.NewReader(data), lim)
		last := 0
		for {
			rec, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Line < 1 || e.Line > rd.Line()+1 || !strings.HasPrefix(err.Error(), "line ") {
					t.Fatalf("error %v (Line() %d): want an *Error naming a line read", err, rd.Line())
				}
				if _, again := rd.Next(); again != err {
					t.Fatalf("Next after %v: %v, want the same error", err, again)
				}
				return
			}
			if rec.Line <= last || rec.Line > rd.Line() {
				t.Fatalf("record on line %d after line %d, Line() %d", rec.Line, last, rd.Line())
			}
			last = rec.Line
			checkHeader(t, rd.Header(), lim)
			checkRecord(t, rec)
		}
		lines := bytes.Count(data, []byte("\n"))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		if rd.Line() != lines {
			t.Fatalf("Line() = %d at EOF, want %d", rd.Line(), lines)
		}
	})
}

// builtInHead is the first n lines of a file of the built-in reference
// data.
func builtInHead(tb testing.TB, name string, n int) []byte {
	tb.Helper()
	rc, err := data.Open(name)
	if err != nil {
		tb.Fatal(err)
	}
	defer rc.Close()
	var head []byte
	sc := bufio.NewScanner(rc)
	for i := 0; i < n && sc.Scan(); i++ {
		head = append(append(head, sc.Bytes()...), '\n')
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return head
}

func checkHeader(t *testing.T, h Header, lim Limits) {
	t.Helper()
	if h.MaxNodes < 0 || h.MaxNodes > lim.MaxNodes || math.IsNaN(h.UnixStartTime) || math.IsInf(h.UnixStartTime, 0) {
		t.Fatalf("header %+v outside %+v", h, lim)
	}
	if lim.UnixSeconds && (h.UnixStartTime < 0 || h.UnixStartTime > MaxUnixSeconds || h.UnixStartTime != math.Trunc(h.UnixStartTime)) {
		t.Fatalf("header %+v: UnixStartTime not unix seconds", h)
	}
}

func checkRecord(t *testing.T, rec Record) {
	t.Helper()
	for f := Field(1); f <= NumFields; f++ {
		s := rec.Text(f)
		if w := strings.Fields(s); len(w) != 1 || w[0] != s || s[0] == ';' && f == 1 {
			t.Fatalf("line %d %v is %q, not a word", rec.Line, f, s)
		}
		n, nerr := rec.Number(f)
		w, werr := rec.Whole(f)
		for _, err := range []error{nerr, werr} {
			var e *Error
			if err != nil && (!errors.As(err, &e) || e.Line != rec.Line || e.Field != f) {
				t.Fatalf("error %v: want an *Error naming line %d, %v", err, rec.Line, f)
			}
		}
		if nerr == nil && (math.IsNaN(n) || math.IsInf(n, 0)) {
			t.Fatalf("Number(%q) = %v, not finite", s, n)
		}
		if werr == nil && (nerr != nil || float64(w) != n) {
			t.Fatalf("Whole(%q) = %d but Number = %v, %v", s, w, n, nerr)
		}
	}
	// A record written back out reads the same.
	out := strings.Join(rec.fields[:], " ")
	again, err := NewReader(strings.NewReader(out), Limits{MaxNodes: 1}).Next()
	if err != nil || again.fields != rec.fields || again.Line != 1 {
		t.Fatalf("%q read back as %+v, %v", out, again, err)
	}
}
