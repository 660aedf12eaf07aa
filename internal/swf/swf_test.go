package swf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

const job = "1 100 5 60 2 -1 -1 2 120 -1 0 -1 -1 -1 -1 -1 -1 0"

var limits = Limits{MaxNodes: 64}

// readAll reads every record of log, with the header in force at each.
func readAll(t *testing.T, log string, lim Limits) ([]Record, []Header, *Reader, error) {
	t.Helper()
	rd := NewReader(strings.NewReader(log), lim)
	var (
		recs []Record
		hdrs []Header
	)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return recs, hdrs, rd, nil
		}
		if err != nil {
			return recs, hdrs, rd, err
		}
		recs = append(recs, rec)
		hdrs = append(hdrs, rd.Header())
	}
}

func TestReaderHeadersCommentsAndJobs(t *testing.T) {
	log := "; Version: 2.2\r\n" +
		";   MaxNodes :  8  \n" +
		"; a comment without a colon\n" +
		"\n" +
		"   \t\n" +
		"  " + job + "\t\r\n" +
		"; UnixStartTime: 1000.5\n" +
		"; MaxProcs: 9999999999\n" + // other keys are comments
		"2 200 0 30 -1 -1 -1 4 -1 -1 1 3 1 -1 -1 -1 -1 0" // no final newline
	recs, hdrs, rd, err := readAll(t, log, limits)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Line != 6 || recs[1].Line != 9 {
		t.Fatalf("records %+v, want lines 6 and 9", recs)
	}
	// Each header comment takes effect from its line on.
	want := []Header{{MaxNodes: 8}, {MaxNodes: 8, UnixStartTime: 1000.5}}
	for i := range want {
		if hdrs[i] != want[i] {
			t.Errorf("header at record %d: %+v, want %+v", i, hdrs[i], want[i])
		}
	}
	if got := strings.Join(recs[0].fields[:], " "); got != job {
		t.Errorf("record 0 fields %q, want %q", got, job)
	}
	if got := recs[1].Text(ReqProcs); got != "4" {
		t.Errorf("record 1 %v = %q, want 4", ReqProcs, got)
	}
	if rd.Line() != 9 {
		t.Errorf("Line() = %d after EOF, want 9", rd.Line())
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("Next after EOF: %v, want io.EOF", err)
	}
}

func TestReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name, log string
		lim       Limits
		line      int
		want      string
	}{
		{"short line", job + "\n\n1 2 3\n", limits, 3, "line 3: 3 fields, want 18"},
		{"long line", job + " 7\n", limits, 1, "line 1: 19 fields, want 18"},
		{"MaxNodes not a number", "; MaxNodes: lots\n", limits, 1, `line 1: header MaxNodes: "lots" is not a node count in 1..64`},
		{"MaxNodes zero", "\n; MaxNodes: 0\n", limits, 2, `line 2: header MaxNodes: "0" is not a node count in 1..64`},
		{"MaxNodes over the limit", "; MaxNodes: 65\n", limits, 1, `line 1: header MaxNodes: "65" is not a node count in 1..64`},
		{"MaxNodes fraction", "; MaxNodes: 4.0\n", limits, 1, `line 1: header MaxNodes: "4.0" is not a node count in 1..64`},
		{"UnixStartTime infinite", "; UnixStartTime: Inf\n", limits, 1, `line 1: header UnixStartTime: "Inf" is not a finite number`},
		{"UnixStartTime NaN", "; UnixStartTime: NaN\n", limits, 1, `line 1: header UnixStartTime: "NaN" is not a finite number`},
		{"UnixStartTime fraction in seconds", "; UnixStartTime: 1.5\n", Limits{MaxNodes: 1, UnixSeconds: true}, 1, `line 1: header UnixStartTime: "1.5" is not unix seconds in 0..2^40`},
		{"UnixStartTime negative in seconds", "; UnixStartTime: -1\n", Limits{MaxNodes: 1, UnixSeconds: true}, 1, `line 1: header UnixStartTime: "-1" is not unix seconds in 0..2^40`},
		{"UnixStartTime too late", "; UnixStartTime: 1099511627777\n", Limits{MaxNodes: 1, UnixSeconds: true}, 1, `line 1: header UnixStartTime: "1099511627777" is not unix seconds in 0..2^40`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := readAll(t, tc.log, tc.lim)
			var e *Error
			if !errors.As(err, &e) || e.Line != tc.line || e.Field != 0 || err.Error() != tc.want {
				t.Fatalf("err %v, want an *Error on line %d: %q", err, tc.line, tc.want)
			}
		})
	}
}

func TestReaderAcceptsHeadersWithinLimits(t *testing.T) {
	for _, tc := range []struct {
		log  string
		lim  Limits
		want Header
	}{
		{"; MaxNodes: 64\n", limits, Header{MaxNodes: 64}},
		{"; UnixStartTime: -3.25e2\n", limits, Header{UnixStartTime: -325}},
		{"; UnixStartTime: 1099511627776\n", Limits{MaxNodes: 1, UnixSeconds: true}, Header{UnixStartTime: 1 << 40}},
		{"; MaxNodes: 2\n; MaxNodes: 3\n", limits, Header{MaxNodes: 3}},
	} {
		_, _, rd, err := readAll(t, tc.log, tc.lim)
		if err != nil || rd.Header() != tc.want {
			t.Errorf("%q: header %+v, err %v; want %+v", tc.log, rd.Header(), err, tc.want)
		}
	}
}

func TestReaderLineBound(t *testing.T) {
	// A line of MaxLineBytes, its newline included, is read; one byte more
	// is an error naming the line.
	fits := job + strings.Repeat(" ", MaxLineBytes-1-len(job)) + "\n"
	recs, _, _, err := readAll(t, "; MaxNodes: 4\n"+fits+fits, limits)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d records, err %v; want 2, nil", len(recs), err)
	}
	long := job + strings.Repeat(" ", MaxLineBytes-len(job)) + "\n"
	_, _, _, err = readAll(t, fits+long, limits)
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("err %v, want an *Error on line 2 wrapping bufio.ErrTooLong", err)
	}
}

func TestReaderErrorIsSticky(t *testing.T) {
	rd := NewReader(strings.NewReader("1 2\n"+job+"\n"), limits)
	_, err1 := rd.Next()
	_, err2 := rd.Next()
	if err1 == nil || err1 != err2 {
		t.Fatalf("errors %v then %v, want the same error twice", err1, err2)
	}
}

func TestRecordNumberAndWhole(t *testing.T) {
	for _, tc := range []struct {
		text     string
		num      float64
		numErr   string // "" when Number succeeds
		whole    int64
		wholeErr string // "" when Whole succeeds
	}{
		{"3600", 3600, "", 3600, ""},
		{"-1", -1, "", -1, ""},
		{"3600.0", 3600, "", 3600, ""},
		{"1e3", 1000, "", 1000, ""},
		{"+7", 7, "", 7, ""},
		{"1.5", 1.5, "", 0, `"1.5" is not a whole number`},
		{"-5", -5, "", -5, ""},
		{"9223372036854775807", 9223372036854775807, "", 9223372036854775807, ""},
		{"99999999999999999999", 1e20, "", 0, `"99999999999999999999" is not a whole number`},
		{"abc", 0, `"abc" is not a number`, 0, `"abc" is not a whole number`},
		{"Inf", 0, `"Inf" is not a number`, 0, `"Inf" is not a whole number`},
		{"NaN", 0, `"NaN" is not a number`, 0, `"NaN" is not a whole number`},
		{"1e400", 0, `"1e400" is not a number`, 0, `"1e400" is not a whole number`},
	} {
		line := strings.Replace(job, " 60 ", " "+tc.text+" ", 1)
		recs, _, _, err := readAll(t, "\n"+line, limits)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%q: %d records, err %v", line, len(recs), err)
		}
		rec := recs[0]
		wantErr := func(method string, err error, msg string) {
			t.Helper()
			want := "line 2: field 4 (run time): " + msg
			var e *Error
			if !errors.As(err, &e) || e.Line != 2 || e.Field != RunTime || err.Error() != want {
				t.Errorf("%s(%q): err %v, want %q", method, tc.text, err, want)
			}
		}
		if v, err := rec.Number(RunTime); tc.numErr == "" && (err != nil || v != tc.num) {
			t.Errorf("Number(%q) = %v, %v; want %v", tc.text, v, err, tc.num)
		} else if tc.numErr != "" {
			wantErr("Number", err, tc.numErr)
		}
		if v, err := rec.Whole(RunTime); tc.wholeErr == "" && (err != nil || v != tc.whole) {
			t.Errorf("Whole(%q) = %v, %v; want %v", tc.text, v, err, tc.whole)
		} else if tc.wholeErr != "" {
			wantErr("Whole", err, tc.wholeErr)
		}
	}
}

func TestErrorNamesLineAndField(t *testing.T) {
	rec := Record{Line: 7}
	for _, tc := range []struct {
		f    Field
		want string
	}{
		{0, "line 7: too late"},
		{AllocProcs, "line 7: field 5 (allocated processors): too late"},
		{ReqTime, "line 7: field 9 (requested time): too late"},
		{17, "line 7: field 17: too late"},
	} {
		if got := rec.Errorf(tc.f, "too %s", "late").Error(); got != tc.want {
			t.Errorf("Errorf(%d): %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestNewReaderPanicsWithoutMaxNodes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewReader with Limits{} did not panic")
		}
	}()
	NewReader(strings.NewReader(""), Limits{})
}

func ExampleReader() {
	const log = `; UnixStartTime: 1641000000
; MaxNodes: 4360
1 21254 52645 10849 128 -1 -1 128 10800 -1 0 -1 -1 -1 -1 -1 -1 0
2 22430 40859 12696 -1 -1 -1 640 12600 -1 0 -1 -1 -1 -1 -1 -1 0
`
	rd := NewReader(strings.NewReader(log), Limits{MaxNodes: 1 << 20})
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		submit, _ := rec.Number(SubmitTime)
		fmt.Printf("line %d: job %s submitted at %.0f, %s nodes allocated, %s requested\n",
			rec.Line, rec.Text(JobID), rd.Header().UnixStartTime+submit, rec.Text(AllocProcs), rec.Text(ReqProcs))
	}
	fmt.Printf("%d lines, %d nodes\n", rd.Line(), rd.Header().MaxNodes)
	// Output:
	// line 3: job 1 submitted at 1641021254, 128 nodes allocated, 128 requested
	// line 4: job 2 submitted at 1641022430, -1 nodes allocated, 640 requested
	// 4 lines, 4360 nodes
}
