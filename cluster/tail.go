package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/gleaner-hpc/gleaner/trial"
)

// ReportTailer follows a growing report file. It is a pull API: the
// caller polls on its own ticker, and polls once more after the trainer
// has exited to drain what is left. Not safe for concurrent use.
//
// Only complete lines are consumed: a partial last line waits for its
// newline. Lines that trial.ParseReport rejects (including lines longer
// than trial.MaxReportLine) are counted and skipped; blank lines are
// skipped without counting.
type ReportTailer struct {
	path      string
	offset    int64  // end of the last complete line consumed
	pos       int64  // where the next read starts (offset + len(partial) or past a skipped over-long prefix)
	partial   []byte // start of an incomplete line, at most trial.MaxReportLine+1 bytes
	overlong  bool   // the current incomplete line is already too long: discard to its newline
	malformed int
	lastErr   error
	buf       []byte
}

// NewReportTailer follows path from byte offset, which must be the start
// of a line: 0, or an Offset of an earlier tailer of the same file (as
// saved in heartbeat details, for resuming after a retry).
func NewReportTailer(path string, offset int64) (*ReportTailer, error) {
	if offset < 0 {
		return nil, fmt.Errorf("report tailer: offset %d is negative", offset)
	}
	return &ReportTailer{path: path, offset: offset, pos: offset}, nil
}

// Path is the file being followed.
func (t *ReportTailer) Path() string { return t.path }

// Offset is the byte offset just past the last complete line consumed:
// what to save to resume later.
func (t *ReportTailer) Offset() int64 { return t.offset }

// Malformed is how many lines have been skipped as malformed.
func (t *ReportTailer) Malformed() int { return t.malformed }

// LastMalformed is why the latest malformed line was rejected (nil when
// none was); it wraps trial.ErrMalformedReport.
func (t *ReportTailer) LastMalformed() error { return t.lastErr }

// Poll reads what has been appended since the last call and returns the
// reports of the complete lines, in file order. A file that does not
// exist yet yields nothing. Errors are I/O errors (or a file that shrank);
// malformed lines never are.
func (t *ReportTailer) Poll() ([]trial.Report, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report tailer: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("report tailer: %w", err)
	}
	if fi.Size() < t.pos {
		return nil, fmt.Errorf("report tailer: %s shrank to %d bytes, below offset %d (report files are append-only)", t.path, fi.Size(), t.pos)
	}
	if _, err := f.Seek(t.pos, io.SeekStart); err != nil {
		return nil, fmt.Errorf("report tailer: %w", err)
	}
	if t.buf == nil {
		t.buf = make([]byte, 64<<10)
	}
	var reports []trial.Report
	for {
		n, err := f.Read(t.buf)
		if n > 0 {
			t.pos += int64(n)
			reports = t.consume(t.buf[:n], reports)
		}
		if err == io.EOF {
			return reports, nil
		}
		if err != nil {
			return reports, fmt.Errorf("report tailer: %w", err)
		}
	}
}

// consume splits chunk (the bytes that end at t.pos) into lines.
func (t *ReportTailer) consume(chunk []byte, reports []trial.Report) []trial.Report {
	for len(chunk) > 0 {
		nl := bytes.IndexByte(chunk, '\n')
		if nl < 0 {
			t.appendPartial(chunk)
			return reports
		}
		line := chunk[:nl]
		chunk = chunk[nl+1:]
		// The line ends at pos - len(rest of chunk).
		end := t.pos - int64(len(chunk))
		if t.overlong {
			t.skip(fmt.Errorf("%w: more than %d bytes", trial.ErrMalformedReport, trial.MaxReportLine))
		} else {
			if len(t.partial) > 0 {
				t.partial = append(t.partial, line...)
				line = t.partial
			}
			if r, ok := t.parse(line); ok {
				reports = append(reports, r)
			}
		}
		t.partial = t.partial[:0]
		t.overlong = false
		t.offset = end
	}
	return reports
}

func (t *ReportTailer) appendPartial(b []byte) {
	if t.overlong {
		return
	}
	if len(t.partial)+len(b) > trial.MaxReportLine {
		t.overlong = true
		t.partial = t.partial[:0]
		return
	}
	t.partial = append(t.partial, b...)
}

func (t *ReportTailer) parse(line []byte) (trial.Report, bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return trial.Report{}, false
	}
	r, err := trial.ParseReport(line)
	if err != nil {
		t.skip(err)
		return trial.Report{}, false
	}
	return r, true
}

func (t *ReportTailer) skip(err error) {
	t.malformed++
	t.lastErr = err
}
