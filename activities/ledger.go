package activities

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/trial"
)

// The worker keeps two small files beside a trial's checkpoints so that
// nothing the trainer did is lost when the worker, or the Temporal server,
// is: heartbeat details reach the server at best every heartbeat, and not
// at all while it is down.
//
//	DataDir/<campaign>/<trial>/ledger.json     checkpoints reported, newest first; how far each run's reports were read
//	DataDir/<campaign>/<trial>/runs/<n>/run.json how run n ended so far: trainer failures, finished
const (
	ledgerFileName = "ledger.json"
	runFileName    = "run.json"
	// keepCheckpoints is how many reported checkpoints the ledger keeps:
	// the resume point is the newest of them that still exists, so a
	// trainer that prunes to its newest k (k ≥ 1) always leaves one.
	keepCheckpoints = 8
)

// reportedCheckpoint is a checkpoint the trainer reported as complete.
type reportedCheckpoint struct {
	Path    string  `json:"path"` // absolute
	Samples float64 `json:"samples"`
	Step    int64   `json:"step,omitempty"`
}

// trialLedger is ledger.json.
type trialLedger struct {
	// Checkpoints are the newest valid checkpoints reported, by samples
	// (then step, then report order), newest first.
	Checkpoints []reportedCheckpoint `json:"checkpoints"`
	// Read maps a run directory's name to the offset of its report file
	// up to which every checkpoint line is in Checkpoints.
	Read map[string]int64 `json:"read"`
	// Closed is the newest run whose trainer is gone and whose reports
	// were all read: runs up to it are never read again.
	Closed int `json:"closed,omitempty"`
	// Bad counts reported checkpoints that were rejected (missing, or
	// outside the checkpoint directory); LastBad says which and why.
	Bad     int    `json:"bad,omitempty"`
	LastBad string `json:"last_bad,omitempty"`
	// Owner is the trial workflow chain (first run id) the directory
	// belongs to.
	Owner string `json:"owner,omitempty"`
	// saved is the ledger as ledger.json holds it (JSON), nil when
	// unknown: save writes only a ledger that differs.
	saved []byte
}

// reject counts rejected checkpoint reports (each an error message).
func (l *trialLedger) reject(why []string) {
	if len(why) > 0 {
		l.Bad += len(why)
		l.LastBad = why[len(why)-1]
	}
}

// add records c unless a newer-or-equal record of the same path exists,
// keeping the order and the bound.
func (l *trialLedger) add(c reportedCheckpoint) {
	l.Checkpoints = slices.DeleteFunc(l.Checkpoints, func(x reportedCheckpoint) bool { return x.Path == c.Path })
	i := 0
	for i < len(l.Checkpoints) && newer(l.Checkpoints[i], c) {
		i++
	}
	l.Checkpoints = slices.Insert(l.Checkpoints, i, c)
	if len(l.Checkpoints) > keepCheckpoints {
		l.Checkpoints = l.Checkpoints[:keepCheckpoints]
	}
}

// newer reports whether a is strictly newer than b. Equal counters mean
// the later report wins, so a is not newer.
func newer(a, b reportedCheckpoint) bool {
	if a.Samples != b.Samples {
		return a.Samples > b.Samples
	}
	return a.Step > b.Step
}

// resumePoint is the newest recorded checkpoint that still exists.
func (l *trialLedger) resumePoint(ckptDir string) string {
	for _, c := range l.Checkpoints {
		if _, err := checkCheckpoint(ckptDir, "", c.Path); err == nil {
			return c.Path
		}
	}
	return ""
}

func loadLedger(trialDir string) (trialLedger, error) {
	var l trialLedger
	err := readJSON(filepath.Join(trialDir, ledgerFileName), &l)
	if l.Read == nil {
		l.Read = map[string]int64{}
	}
	if err == nil {
		l.saved, _ = json.Marshal(l)
	}
	return l, err
}

// save writes ledger.json, unless it holds this ledger already (a run of
// a trial whose ledger it did not change).
func (l *trialLedger) save(trialDir string) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if l.saved != nil && bytes.Equal(b, l.saved) {
		return nil
	}
	if err := writeFileAtomic(filepath.Join(trialDir, ledgerFileName), b); err != nil {
		return err
	}
	l.saved = b
	return nil
}

// catchUp reads the report lines of runs Closed+1 … run that the ledger
// has not read and records the checkpoints among them (record): lines a
// worker that died never read, or a run that ended while the server was
// down. Runs before run are then closed: a run starts only once the
// previous one's trainer is gone.
func (l *trialLedger) catchUp(trialDir, ckptDir, workDir string, run int) error {
	for n := l.Closed + 1; n <= run; n++ {
		name := runDirName(n)
		path := filepath.Join(trialDir, "runs", name, cluster.ReportFileName)
		tail, err := cluster.NewReportTailer(path, l.Read[name])
		if err != nil {
			return err
		}
		reports, err := tail.Poll()
		if err != nil {
			// A file shorter than what was read (replaced by hand) is
			// read again from the start.
			if tail, err = cluster.NewReportTailer(path, 0); err == nil {
				reports, err = tail.Poll()
			}
			if err != nil {
				return err
			}
		}
		l.record(reports, ckptDir, workDir)
		if n < run {
			delete(l.Read, name)
		} else {
			l.Read[name] = tail.Offset()
		}
	}
	l.Closed = max(l.Closed, run-1)
	return nil
}

// record checks the checkpoints reports name, in order, and records the
// valid ones; it returns how many reports named one. A rejected one is
// counted (reject) — except a checkpoint that is gone while a newer one
// reported after it exists: the trainer pruned it, as it may.
func (l *trialLedger) record(reports []trial.Report, ckptDir, workDir string) int {
	named := 0
	var missing []string
	for _, rep := range reports {
		if rep.Checkpoint == "" {
			continue
		}
		named++
		abs, err := checkCheckpoint(ckptDir, workDir, rep.Checkpoint)
		switch {
		case errors.Is(err, errCheckpointGone):
			missing = append(missing, err.Error())
		case err != nil:
			l.reject([]string{err.Error()})
		default:
			missing = nil // superseded: pruned by the trainer
			l.add(reportedCheckpoint{Path: abs, Samples: rep.Samples, Step: rep.Step})
		}
	}
	l.reject(missing)
	return named
}

// errCheckpointGone is a reported checkpoint that is not (or no longer) on
// disk.
var errCheckpointGone = errors.New("does not exist")

// checkCheckpoint resolves a reported checkpoint path (relative paths are
// relative to the trainer's working directory) and checks that it exists
// and lies inside the trial's checkpoint directory: only such a path may
// become GLEANER_RESUME_FROM.
func checkCheckpoint(ckptDir, workDir, path string) (string, error) {
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(workDir, abs)
	}
	abs = filepath.Clean(abs)
	root := filepath.Clean(ckptDir)
	if rel, err := filepath.Rel(root, abs); err != nil || rel == "." || rel == ".." || len(rel) > 2 && rel[:3] == ".."+string(filepath.Separator) {
		return "", fmt.Errorf("checkpoint %q: outside the trial's checkpoint directory %s", path, root)
	}
	// Symbolic links are followed: the target must be inside too.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		if realRoot, err := filepath.EvalSymlinks(root); err == nil {
			if rel, err := filepath.Rel(realRoot, real); err != nil || rel == ".." || len(rel) > 2 && rel[:3] == ".."+string(filepath.Separator) {
				return "", fmt.Errorf("checkpoint %q: links outside the trial's checkpoint directory %s", path, root)
			}
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("checkpoint %q: %w", path, errCheckpointGone)
	} else {
		return "", fmt.Errorf("checkpoint %q: %w", path, err)
	}
	return abs, nil
}

// runLedger is run.json: what a run's attempts saw of its trainer.
type runLedger struct {
	// Failures counts the trainer's failed launches and non-zero exits in
	// this run (the trial's restarts; a lost worker is none).
	Failures int `json:"failures"`
	// Finished is set when the trainer exited 0 by itself: a retry of the
	// run returns the result instead of training again.
	Finished bool               `json:"finished,omitempty"`
	Exit     cluster.ExitStatus `json:"exit"`
	// Error and ErrorType are the latest failure's, for the final error
	// when a retry finds the restarts used up.
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
}

// endLine appends a newline to the report file at path when its last line
// (past offset, where the complete lines end) is incomplete — a trainer
// killed mid-write — so the next trainer's first line is not glued to it
// (the fragment becomes one malformed line).
func endLine(path string, offset int64) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fi.Size() <= offset {
		return nil
	}
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func loadRunLedger(runDir string) (runLedger, error) {
	var l runLedger
	return l, readJSON(filepath.Join(runDir, runFileName), &l)
}

func (l runLedger) save(runDir string) error {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	return writeJSONAtomic(filepath.Join(runDir, runFileName), l)
}

// readJSON decodes path into v; a missing file leaves v as it is.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSONAtomic replaces path with v's JSON: a temporary file in the
// same directory, synced, renamed; a crash leaves the old or the new.
func writeJSONAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

// writeFileAtomic replaces path with b: written beside it, synced, then
// renamed over it.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// runDirName is run n's directory name.
func runDirName(n int) string { return strconv.Itoa(n) }

// mergeReports folds reports into last the way a trial does: counters
// only move forward, the newest metrics win.
func mergeReports(last *trial.Report, reports []trial.Report) {
	for _, rep := range reports {
		if rep.Samples >= last.Samples {
			last.Samples, last.Step, last.Epoch = rep.Samples, rep.Step, rep.Epoch
		}
		if len(rep.Metrics) > 0 {
			last.Metrics = rep.Metrics
		}
		// What the trainer says it trains: the latest it said.
		if rep.Model != "" {
			last.Model = rep.Model
		}
		if rep.Batch > 0 {
			last.Batch = rep.Batch
		}
	}
}
