package trial

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func readReports(t *testing.T, path string) (reps []Report, malformed int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, MaxReportLine+1)
	for sc.Scan() {
		r, err := ParseReport(sc.Bytes())
		if err != nil {
			malformed++
			continue
		}
		reps = append(reps, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return reps, malformed
}

func TestReporterWritesNullForNonFiniteMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reports.jsonl")
	rep, err := OpenReporter(path)
	if err != nil {
		t.Fatal(err)
	}
	rep.Now = func() time.Time { return time.Unix(1700000000, 500_000_000) }
	if err := rep.Report(Report{Samples: 64, Step: 1, Metrics: map[string]float64{"loss": math.NaN(), "acc": 0.5, "grad": math.Inf(1)}}); err != nil {
		t.Fatal(err)
	}
	if err := rep.Report(Report{Samples: 128, Step: 2, Epoch: 0.25, Checkpoint: "/ck/step-2", Time: 42}); err != nil {
		t.Fatal(err)
	}
	if err := rep.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "NaN") || strings.Contains(string(raw), "Inf") {
		t.Fatalf("report file holds a non-finite literal:\n%s", raw)
	}
	if !strings.Contains(string(raw), `"loss":null`) {
		t.Errorf("want loss written as null:\n%s", raw)
	}
	reps, bad := readReports(t, path)
	want := []Report{
		{Samples: 64, Step: 1, Metrics: map[string]float64{"acc": 0.5}, Time: 1700000000.5},
		{Samples: 128, Step: 2, Epoch: 0.25, Checkpoint: "/ck/step-2", Time: 42},
	}
	if bad != 0 || !reflect.DeepEqual(reps, want) {
		t.Errorf("reports (%d malformed):\n got %+v\nwant %+v", bad, reps, want)
	}
}

func TestReporterRejectsBadProgress(t *testing.T) {
	rep, err := OpenReporter(filepath.Join(t.TempDir(), "r"))
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	for _, r := range []Report{{Samples: math.NaN()}, {Samples: -1}, {Step: -3}, {Epoch: math.Inf(1)}, {Time: -1}, {Batch: -1}, {Model: strings.Repeat("m", MaxModelName+1)}} {
		if err := rep.Report(r); err == nil {
			t.Errorf("Report(%+v) accepted", r)
		}
	}
	if err := rep.Report(Report{Metrics: map[string]float64{"x": 1}, Checkpoint: strings.Repeat("a", MaxReportLine)}); err == nil {
		t.Error("over-long line accepted")
	}
}

func TestReporterAppendsWholeLinesConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reports.jsonl")
	if err := os.WriteFile(path, []byte("{\"step\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two reporters on one file, as a trainer restarted while an old
	// process still writes would have: appends never clobber each other.
	a, _ := OpenReporter(path)
	b, _ := OpenReporter(path)
	a.Sync = true
	var wg sync.WaitGroup
	for _, r := range []*Reporter{a, b} {
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := r.Report(Report{Step: int64(i + 2), Metrics: map[string]float64{"loss": float64(i)}}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	a.Close()
	b.Close()
	if err := a.Report(Report{}); err == nil {
		t.Error("report after close accepted")
	}
	reps, bad := readReports(t, path)
	if bad != 0 || len(reps) != 101 {
		t.Errorf("%d reports, %d malformed; want 101, 0", len(reps), bad)
	}
}
