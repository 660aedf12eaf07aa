package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// Line is what the analysis reads of one report line: its step counter
// and the trainer's clock.
type Line struct {
	Step int64
	Time time.Time
}

// Run is one launch of a trial's trainer, as its run directory
// (DataDir/<campaign>/<trial>/runs/<n>) tells it.
type Run struct {
	N int
	// Lines are the report lines with a time, in file order. The first
	// is go-mlp's rendezvous line: the step the run started from.
	Lines []Line
	// Done: the trainer says it ran to its end ("go-mlp: done at step").
	Done bool
}

// StartStep is the step the run resumed from (0 for a first run); -1
// when the run wrote nothing.
func (r Run) StartStep() int64 {
	if len(r.Lines) == 0 {
		return -1
	}
	return r.Lines[0].Step
}

// MaxStep is the furthest step the run reported; -1 when it wrote nothing.
func (r Run) MaxStep() int64 {
	m := int64(-1)
	for _, l := range r.Lines {
		m = max(m, l.Step)
	}
	return m
}

// TrainedToEnd: the run trained up to the final step itself, rather than
// resuming at it and training nothing.
func (r Run) TrainedToEnd(final int64) bool {
	return r.Done && r.StartStep() < final
}

// Trial is one trial's runs, in launch order.
type Trial struct {
	Campaign, ID string
	Runs         []Run
}

// doneMarker is what go-mlp writes to stderr (the run's trainer.log) when
// it has trained to its end (examples/go-mlp: finish("done", …)).
var doneMarker = []byte("go-mlp: done at step ")

// ReadTrial reads the run directories of the trial in dir
// (DataDir/<campaign>/<trial>).
func ReadTrial(dir string) (Trial, error) {
	t := Trial{Campaign: filepath.Base(filepath.Dir(dir)), ID: filepath.Base(dir)}
	entries, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil {
		return t, fmt.Errorf("trial %s: %w", dir, err)
	}
	var ns []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			ns = append(ns, n)
		}
	}
	sort.Ints(ns)
	for _, n := range ns {
		rd := filepath.Join(dir, "runs", strconv.Itoa(n))
		r := Run{N: n}
		if r.Lines, err = readLines(filepath.Join(rd, "report.jsonl")); err != nil {
			return t, err
		}
		log, err := os.ReadFile(filepath.Join(rd, "trainer.log"))
		if err != nil && !os.IsNotExist(err) {
			return t, err
		}
		r.Done = bytes.Contains(log, doneMarker)
		t.Runs = append(t.Runs, r)
	}
	return t, nil
}

func readLines(path string) ([]Line, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil // launched, killed before it wrote a line
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Step *int64  `json:"step"`
			Time float64 `json:"time"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Step == nil || l.Time <= 0 {
			continue
		}
		lines = append(lines, Line{Step: *l.Step, Time: time.Unix(0, int64(l.Time*1e9))})
	}
	return lines, sc.Err()
}

// ReadCampaign reads every trial directory of a campaign's directory
// (DataDir/<campaign>).
func ReadCampaign(dir string) ([]Trial, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var trials []Trial
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "runs")); err != nil {
			continue
		}
		t, err := ReadTrial(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		trials = append(trials, t)
	}
	return trials, nil
}

// Fault is one injected fault.
type Fault struct {
	Kind string
	At   time.Time
	// Recovery is how long after At the stack showed progress again
	// (the live test's measure; the analysis does not use it).
	Recovery time.Duration
}

// Resume is a trial's run after the first: where it started against how
// far the trial had trained before it.
type Resume struct {
	Campaign, Trial string
	Run             int
	// Fault is the index of the latest fault before the run's first line
	// (-1: none, a resume of the trial's own making).
	Fault int
	// Reached is the furthest step any earlier run reported; From the
	// step this run resumed from. Lost = Reached − From (≥ 0) steps were
	// trained again, exact to one report interval (a trainer may train a
	// few steps past its last report).
	Reached, From, Lost int64
}

// Resumes lists every run after a trial's first that wrote a line,
// attributed to the latest of faults (sorted by At) before it started.
func Resumes(trials []Trial, faults []Fault) []Resume {
	var out []Resume
	for _, t := range trials {
		reached := int64(-1)
		for _, r := range t.Runs {
			if len(r.Lines) == 0 {
				continue
			}
			if reached >= 0 {
				from := r.StartStep()
				out = append(out, Resume{
					Campaign: t.Campaign, Trial: t.ID, Run: r.N,
					Fault:   latestBefore(faults, r.Lines[0].Time),
					Reached: reached, From: from, Lost: max(0, reached-from),
				})
			}
			reached = max(reached, r.MaxStep())
		}
	}
	return out
}

func latestBefore(faults []Fault, t time.Time) int {
	i := sort.Search(len(faults), func(i int) bool { return faults[i].At.After(t) })
	return i - 1
}

// Finishes counts, per trial, the runs that trained to the end (final
// step) and those that resumed at the end and trained nothing.
type Finishes struct {
	Campaign, Trial string
	Trained, Noop   int
}

// CountFinishes is Finishes for every trial; a trial trained to its end
// more than once has Trained > 1.
func CountFinishes(trials []Trial, final int64) []Finishes {
	out := make([]Finishes, 0, len(trials))
	for _, t := range trials {
		f := Finishes{Campaign: t.Campaign, Trial: t.ID}
		for _, r := range t.Runs {
			switch {
			case r.TrainedToEnd(final):
				f.Trained++
			case r.Done:
				f.Noop++
			}
		}
		out = append(out, f)
	}
	return out
}

// Pause is, of the trials training when the fault at `at` struck, the
// longest time one went without a report line across it (any run):
// how long training stood still. 0 when no trial was training.
func Pause(trials []Trial, at time.Time) time.Duration {
	var worst time.Duration
	for _, t := range trials {
		var last, next time.Time
		for _, r := range t.Runs {
			for _, l := range r.Lines {
				if l.Time.Before(at) {
					if l.Time.After(last) {
						last = l.Time
					}
				} else if next.IsZero() || l.Time.Before(next) {
					next = l.Time
				}
			}
		}
		if !last.IsZero() && !next.IsZero() && !t.endedBefore(at) {
			worst = max(worst, next.Sub(last))
		}
	}
	return worst
}

// endedBefore: a run trained to its end before at (the trial was not
// training then, whatever came later).
func (t Trial) endedBefore(at time.Time) bool {
	for _, r := range t.Runs {
		if r.Done && len(r.Lines) > 0 && r.Lines[len(r.Lines)-1].Time.Before(at) {
			return true
		}
	}
	return false
}
