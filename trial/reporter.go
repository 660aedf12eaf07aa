package trial

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"
)

// Reporter appends report lines to a trial's report file. Each line goes
// out in one write(2) on a file opened with O_APPEND, so a reader tailing
// the file never sees half a line from a live trainer. It is safe for
// concurrent use.
type Reporter struct {
	// Sync makes every Report fsync the file: slower, but a line survives
	// a crash of the host, not just of the trainer.
	Sync bool
	// Now stamps lines whose Time is zero; nil means time.Now. Set it to a
	// function returning the zero time to leave Time out.
	Now func() time.Time

	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenReporter opens path for appending, creating it if needed.
func OpenReporter(path string) (*Reporter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open report file: %w", err)
	}
	return &Reporter{f: f, path: path}, nil
}

// Reporter opens the trial's report file (GLEANER_REPORT_FILE).
func (e Env) Reporter() (*Reporter, error) { return OpenReporter(e.ReportFile) }

// Path returns the report file's path.
func (r *Reporter) Path() string { return r.path }

// Report appends one line. Non-finite metrics (a diverged loss) are written
// as null, because JSON has no NaN and the reader drops them; samples,
// step, epoch and time must be finite and non-negative, since they count
// progress, and a violation is an error rather than a line the reader
// would reject.
func (r *Reporter) Report(rep Report) error {
	if rep.Time == 0 {
		now := time.Now
		if r.Now != nil {
			now = r.Now
		}
		if t := now(); !t.IsZero() {
			rep.Time = float64(t.UnixNano()) / 1e9
		}
	}
	line, err := EncodeReport(rep)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return fmt.Errorf("report to %s: reporter closed", r.path)
	}
	if _, err := r.f.Write(line); err != nil {
		return fmt.Errorf("report to %s: %w", r.path, err)
	}
	if r.Sync {
		if err := r.f.Sync(); err != nil {
			return fmt.Errorf("report to %s: fsync: %w", r.path, err)
		}
	}
	return nil
}

// Close closes the report file.
func (r *Reporter) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

var errLineTooLong = errors.New("line too long")

// EncodeReport renders rep as one report line, newline included, with
// non-finite metrics as null. ParseReport(EncodeReport(r)) gives r back,
// less the null metrics.
func EncodeReport(rep Report) ([]byte, error) {
	switch {
	case !finiteNonNeg(rep.Samples):
		return nil, fmt.Errorf("report: samples: %v must be finite and non-negative", rep.Samples)
	case rep.Step < 0:
		return nil, fmt.Errorf("report: step: %d must be non-negative", rep.Step)
	case !finiteNonNeg(rep.Epoch):
		return nil, fmt.Errorf("report: epoch: %v must be finite and non-negative", rep.Epoch)
	case !finiteNonNeg(rep.Time):
		return nil, fmt.Errorf("report: time: %v must be finite and non-negative", rep.Time)
	case rep.Batch < 0:
		return nil, fmt.Errorf("report: batch: %d must be non-negative", rep.Batch)
	case len(rep.Model) > MaxModelName:
		return nil, fmt.Errorf("report: model: %d bytes, more than %d", len(rep.Model), MaxModelName)
	}
	out := struct {
		Report
		Metrics map[string]*float64 `json:"metrics,omitempty"`
	}{Report: rep}
	if len(rep.Metrics) > 0 {
		out.Metrics = make(map[string]*float64, len(rep.Metrics))
		for name, v := range rep.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				out.Metrics[name] = nil
				continue
			}
			out.Metrics[name] = &v
		}
	}
	line, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if len(line) > MaxReportLine {
		return nil, fmt.Errorf("report: %w: %d bytes, more than %d", errLineTooLong, len(line), MaxReportLine)
	}
	return append(line, '\n'), nil
}
