package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/trial"
)

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func poll(t *testing.T, tl *ReportTailer) []float64 {
	t.Helper()
	reports, err := tl.Poll()
	if err != nil {
		t.Fatal(err)
	}
	samples := []float64{}
	for _, r := range reports {
		samples = append(samples, r.Samples)
	}
	return samples
}

func equal(a, b []float64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestTailerWaitsForCompleteLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), ReportFileName)
	tl, err := NewReportTailer(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := poll(t, tl); len(got) != 0 {
		t.Fatalf("missing file gave %v", got)
	}
	first := `{"samples":1,"metrics":{"loss":0.5}}` + "\n"
	appendFile(t, path, first+`{"samp`)
	if got := poll(t, tl); !equal(got, []float64{1}) {
		t.Fatalf("got %v, want [1]: the partial line must wait", got)
	}
	if tl.Offset() != int64(len(first)) {
		t.Errorf("Offset %d, want %d (end of the last complete line)", tl.Offset(), len(first))
	}
	if got := poll(t, tl); !equal(got, []float64{}) {
		t.Fatalf("got %v with nothing new", got)
	}
	appendFile(t, path, `les":2}`)
	if got := poll(t, tl); !equal(got, []float64{}) {
		t.Fatalf("got %v before the newline", got)
	}
	appendFile(t, path, "\r\n"+`{"samples":3,"checkpoint":"/c/3"}`+"\n")
	reports, err := tl.Poll()
	if err != nil || len(reports) != 2 || reports[0].Samples != 2 || reports[1].Checkpoint != "/c/3" {
		t.Fatalf("got %+v, %v", reports, err)
	}
	if fi, _ := os.Stat(path); tl.Offset() != fi.Size() || tl.Malformed() != 0 {
		t.Errorf("Offset %d (file %d bytes), Malformed %d", tl.Offset(), fi.Size(), tl.Malformed())
	}
}

func TestTailerCountsMalformedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), ReportFileName)
	tl, _ := NewReportTailer(path, 0)
	long := `{"samples":5,"pad":"` + strings.Repeat("x", trial.MaxReportLine) + `"}`
	appendFile(t, path, "garbage\n"+`{"samples":-1}`+"\n\n  \n"+`{"samples":4}`+"\n"+long[:1000])
	if got := poll(t, tl); !equal(got, []float64{4}) {
		t.Fatalf("got %v, want [4]", got)
	}
	if tl.Malformed() != 2 || !errors.Is(tl.LastMalformed(), trial.ErrMalformedReport) {
		t.Errorf("Malformed %d (%v), want 2 (blank lines do not count)", tl.Malformed(), tl.LastMalformed())
	}
	// The over-long line arrives over several polls; it counts once.
	for rest := long[1000:]; rest != ""; {
		n := min(len(rest), 20000)
		appendFile(t, path, rest[:n])
		rest = rest[n:]
		if got := poll(t, tl); len(got) != 0 {
			t.Fatalf("got %v from an incomplete over-long line", got)
		}
	}
	appendFile(t, path, "\n"+long+"\n"+`{"samples":6}`+"\n")
	if got := poll(t, tl); !equal(got, []float64{6}) {
		t.Fatalf("got %v, want [6]", got)
	}
	if tl.Malformed() != 4 || !strings.Contains(tl.LastMalformed().Error(), "bytes") {
		t.Errorf("Malformed %d (%v), want 4", tl.Malformed(), tl.LastMalformed())
	}
	if fi, _ := os.Stat(path); tl.Offset() != fi.Size() {
		t.Errorf("Offset %d, file %d bytes", tl.Offset(), fi.Size())
	}
}

func TestTailerResumesFromOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), ReportFileName)
	a, _ := NewReportTailer(path, 0)
	appendFile(t, path, `{"samples":1}`+"\n"+`{"samples":2}`+"\n"+`{"samples":3`)
	if got := poll(t, a); !equal(got, []float64{1, 2}) {
		t.Fatalf("got %v", got)
	}
	// A retried activity resumes from the offset saved in its heartbeat.
	b, err := NewReportTailer(path, a.Offset())
	if err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "}\n"+`{"samples":4}`+"\n")
	if got := poll(t, b); !equal(got, []float64{3, 4}) {
		t.Fatalf("resumed tailer got %v, want [3 4]", got)
	}
	if _, err := NewReportTailer(path, -1); err == nil {
		t.Error("negative offset accepted")
	}
	if err := os.Truncate(path, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Poll(); err == nil || !strings.Contains(err.Error(), "shrank") {
		t.Errorf("Poll of a truncated file: %v, want a shrank error", err)
	}
}

// A real trainer writes reports while the caller polls; a final Poll after
// exit drains every line.
func TestTailerDrainsAfterExit(t *testing.T) {
	l := newLauncher(t, 1)
	const n = 2000
	spec := shSpec(t, fmt.Sprintf(`i=1; while [ $i -le %d ]; do printf '{"samples":%%d}\n' $i >> "$GLEANER_REPORT_FILE"; i=$((i+1)); done; echo 'not json' >> "$GLEANER_REPORT_FILE"`, n))
	p := launch(t, l, spec)
	tl, _ := NewReportTailer(p.ReportFile(), 0)
	var got []float64
	tick := time.NewTicker(time.Millisecond) // the activity's heartbeat ticker, faster
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-p.Done():
			running = false
		case <-tick.C:
			got = append(got, poll(t, tl)...)
		}
	}
	got = append(got, poll(t, tl)...)
	if len(got) != n {
		t.Fatalf("got %d reports, want %d", len(got), n)
	}
	for i, s := range got {
		if s != float64(i+1) {
			t.Fatalf("report %d has samples %v, want %d (order kept, none repeated)", i, s, i+1)
		}
	}
	if tl.Malformed() != 1 {
		t.Errorf("Malformed %d, want 1", tl.Malformed())
	}
}
