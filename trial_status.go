package gleaner

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// A trial's state as its workflow (or its inline campaign) keeps it and
// reports it: what QueryStatus on a trial answers, what a trial tells its
// campaign, and what an inline campaign keeps of its ended trials.

// TrialState is where a trial is in its life.
type TrialState string

const (
	TrialPending   TrialState = "pending"   // registered, waiting for nodes
	TrialRunning   TrialState = "running"   // a trainer runs on its nodes
	TrialPaused    TrialState = "paused"    // by a person, or preempted to 0 nodes
	TrialCompleted TrialState = "completed" // the trainer finished (exit 0)
	TrialStopped   TrialState = "stopped"   // stopped by a person or its campaign
	TrialFailed    TrialState = "failed"    // the trainer kept failing
)

// Terminal reports whether the state is final.
func (s TrialState) Terminal() bool {
	return s == TrialCompleted || s == TrialStopped || s == TrialFailed
}

// TrialProgress is the durable part of a trial's state.
type TrialProgress struct {
	State      TrialState         `json:"state"`
	Samples    float64            `json:"samples"`
	Step       int64              `json:"step"`
	Epoch      float64            `json:"epoch"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Checkpoint string             `json:"checkpoint,omitempty"`
	Nodes      []string           `json:"nodes,omitempty"`
	// Restarts counts relaunches after failures; Rescales counts relaunches
	// for a new assignment (resize, preemption, resume).
	Restarts int `json:"restarts"`
	Rescales int `json:"rescales"`
	// History is a bounded window of the objective metric over samples.
	History []MetricPoint `json:"history,omitempty"`
	// MalformedReports counts report lines skipped.
	MalformedReports int `json:"malformed_reports,omitempty"`
	// Killed counts runs that ignored SIGTERM for the whole grace period
	// and were SIGKILLed (they resumed from their last periodic checkpoint).
	Killed int    `json:"killed,omitempty"`
	Error  string `json:"error,omitempty"`
	// Runs counts the trainer's launches over the trial's whole life (it
	// survives continue-as-new, so run directories are never reused).
	Runs int `json:"runs,omitempty"`
	// BadCheckpoints counts reported checkpoints that were rejected
	// (missing, or outside the checkpoint directory) and never became a
	// resume point; BadCheckpoint names the latest and why.
	BadCheckpoints int    `json:"bad_checkpoints,omitempty"`
	BadCheckpoint  string `json:"bad_checkpoint,omitempty"`
	// ObjectiveSeen is set once a report carried the objective metric.
	ObjectiveSeen bool `json:"objective_seen,omitempty"`
	// Model and Batch are what the trainer's reports said it trains
	// (workflows.Progress.Model, .Batch), kept across continue-as-new.
	Model string `json:"model,omitempty"`
	Batch int    `json:"batch,omitempty"`
	// Started is when the trial was first started (workflow time: its
	// first segment began, pending); Ended when it reached a terminal
	// state or its budget (zero while in flight). A segment that
	// continues a parked trial keeps its Started.
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// Spans are the trial's periods, oldest first, over all its segments:
	// the newest TrialSpansMax are kept, a dropped prefix is counted in
	// SpansDropped.
	Spans        []TrialSpan `json:"spans,omitempty"`
	SpansDropped int         `json:"spans_dropped,omitempty"`
}

// TrialSpansMax bounds TrialProgress.Spans.
const TrialSpansMax = 64

// TrialResumeSpansMax bounds TrialResume.Spans: a campaign keeps up to
// workflows.MaxParked resumes in the state it carries across
// continue-as-new, so a parked trial carries its newest spans only (as a
// TrialTimeline, about 10 bytes a span).
const TrialResumeSpansMax = 32

// TrialSpan is a period of a trial's life in one state on one
// assignment. A span ends where the next begins; the last one is open
// while the trial is in flight, and an ended trial's last span is its
// terminal state, from Ended.
type TrialSpan struct {
	From time.Time `json:"from"`
	// State is pending, running, paused (also preempted to 0 nodes), or
	// the terminal state as the last span.
	State TrialState `json:"state"`
	// Nodes are the nodes held in the span.
	Nodes int `json:"nodes,omitempty"`
	// Why is what began the span (SpanStart, …).
	Why string `json:"why,omitempty"`
}

// Why a TrialSpan began.
const (
	SpanStart   = "start"   // the trial began (pending), or first launched its trainer
	SpanRescale = "rescale" // a new assignment with nodes: the trainer moved to another node count
	SpanPreempt = "preempt" // the pool took every node
	SpanResume  = "resume"  // nodes, or a wait for them, again after a pause or preemption; a parked trial's next segment
	SpanPause   = "pause"   // a person or the campaign paused the trial
	SpanRestart = "restart" // relaunched after a failure
	SpanEnd     = "end"     // the trial reached a terminal state (or its budget)
)

// TrialTimeline is a trial's spans as state that many trials carry keeps
// them (TrialResume.Spans: a campaign's parked trials): as JSON, one
// string of about 10 bytes a span instead of an object of about 80.
// Each span is written "<ms><state><nodes><why>", the spans joined by
// ",": ms is the first span's start in Unix milliseconds and each
// other's after the one before it; state and why are one letter each
// (timelineStates, timelineWhys). Spans it cannot write so, and read
// back the same (a start finer than a millisecond or not in UTC, a state
// or why without a letter), are written as a JSON array of TrialSpan,
// which it reads too.
type TrialTimeline []TrialSpan

var (
	timelineStates = map[TrialState]byte{TrialPending: 'p', TrialRunning: 'r', TrialPaused: 'a',
		TrialCompleted: 'c', TrialStopped: 's', TrialFailed: 'f'}
	timelineWhys = map[string]byte{"": '-', SpanStart: 'S', SpanRescale: 'R', SpanPreempt: 'P',
		SpanResume: 'U', SpanPause: 'A', SpanRestart: 'T', SpanEnd: 'E'}
	timelineStateOf = invert(timelineStates)
	timelineWhyOf   = invert(timelineWhys)
)

// MarshalJSON writes the timeline as one string where it can.
func (tl TrialTimeline) MarshalJSON() ([]byte, error) {
	if tl == nil {
		return []byte("null"), nil
	}
	var b []byte
	var prev int64
	for i, sp := range tl {
		st, okState := timelineStates[sp.State]
		why, okWhy := timelineWhys[sp.Why]
		if !okState || !okWhy || sp.Nodes < 0 || sp.From.Location() != time.UTC || sp.From.Nanosecond()%int(time.Millisecond) != 0 {
			return json.Marshal([]TrialSpan(tl))
		}
		ms := sp.From.UnixMilli()
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, ms-prev, 10)
		b = append(b, st)
		b = strconv.AppendInt(b, int64(sp.Nodes), 10)
		b = append(b, why)
		prev = ms
	}
	return json.Marshal(string(b))
}

// UnmarshalJSON reads a timeline as MarshalJSON writes it.
func (tl *TrialTimeline) UnmarshalJSON(data []byte) error {
	if len(data) == 0 || data[0] != '"' {
		return json.Unmarshal(data, (*[]TrialSpan)(tl))
	}
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return err
	}
	*tl = nil
	if text == "" {
		return nil
	}
	var prev int64
	for i, field := range strings.Split(text, ",") {
		sp, ms, err := parseTimelineSpan(field, prev)
		if err != nil {
			return fmt.Errorf("trial timeline: span %d %q: %w", i+1, field, err)
		}
		*tl, prev = append(*tl, sp), ms
	}
	return nil
}

// parseTimelineSpan reads one span of a TrialTimeline string, after one
// that began at prev (Unix milliseconds).
func parseTimelineSpan(field string, prev int64) (TrialSpan, int64, error) {
	digits := func(i int) int {
		for i < len(field) && field[i] >= '0' && field[i] <= '9' {
			i++
		}
		return i
	}
	i := digits(min(1, len(field))) // (a start before the one before it is negative)
	if i >= len(field) {
		return TrialSpan{}, 0, errors.New("no state")
	}
	delta, err := strconv.ParseInt(field[:i], 10, 64)
	if err != nil {
		return TrialSpan{}, 0, fmt.Errorf("start: %w", err)
	}
	var sp TrialSpan
	var ok bool
	if sp.State, ok = timelineStateOf[field[i]]; !ok {
		return TrialSpan{}, 0, fmt.Errorf("state: unknown letter %q", field[i])
	}
	j := digits(i + 1)
	if j != len(field)-1 {
		return TrialSpan{}, 0, errors.New("want the nodes, then one letter for why")
	}
	if sp.Nodes, err = strconv.Atoi(field[i+1 : j]); err != nil {
		return TrialSpan{}, 0, fmt.Errorf("nodes: %w", err)
	}
	if sp.Why, ok = timelineWhyOf[field[j]]; !ok {
		return TrialSpan{}, 0, fmt.Errorf("why: unknown letter %q", field[j])
	}
	ms := prev + delta
	sp.From = time.UnixMilli(ms).UTC()
	return sp, ms, nil
}

func invert[K comparable](m map[K]byte) map[byte]K {
	out := make(map[byte]K, len(m))
	for k, c := range m {
		out[c] = k
	}
	return out
}

// MetricPoint is one sample of the objective metric.
type MetricPoint struct {
	Samples float64 `json:"samples"`
	Value   float64 `json:"value"`
}

// TrialStatus answers QueryStatus on a TrialWorkflow.
type TrialStatus struct {
	TrialID string     `json:"trial_id"`
	Params  hpo.Params `json:"params"`
	// Stage is the searcher's label of the trial's latest segment (a
	// rung, a generation); empty for searchers without stages.
	Stage string `json:"stage,omitempty"`
	TrialProgress
}

// TrialReport is what a trial tells its campaign: its latest metrics while
// it runs (rate-limited) and its outcome when it ends.
type TrialReport struct {
	TrialID    string             `json:"trial_id"`
	WorkflowID string             `json:"workflow_id"`
	Number     int                `json:"number"`
	Params     hpo.Params         `json:"params"`
	State      TrialState         `json:"state"`
	Final      bool               `json:"final"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Samples    float64            `json:"samples"`
	Step       int64              `json:"step,omitempty"`
	Epoch      float64            `json:"epoch,omitempty"`
	Restarts   int                `json:"restarts"`
	Rescales   int                `json:"rescales"`
	Error      string             `json:"error,omitempty"`
	// Stage and Segment are the trial's workflows.TrialInput.Stage and Segment.
	Stage   string `json:"stage,omitempty"`
	Segment int    `json:"segment,omitempty"`
	// Resume is set on the final report of a trial that reached its
	// budget (workflows.TrialInput.Budget): what its next segment starts from.
	Resume *TrialResume `json:"resume,omitempty"`
	// ObjectiveMissing marks a final report of a trial that ended without
	// ever reporting the campaign's objective metric (Metrics holds the
	// names it did report, if any).
	ObjectiveMissing bool `json:"objective_missing,omitempty"`
	// Started, Ended, Spans and SpansDropped are the trial's
	// TrialProgress fields, on its final report only.
	Started      time.Time   `json:"started,omitzero"`
	Ended        time.Time   `json:"ended,omitzero"`
	Spans        []TrialSpan `json:"spans,omitempty"`
	SpansDropped int         `json:"spans_dropped,omitempty"`
}

// TrialResume is what a trial's next segment needs of the one that
// reached its budget.
type TrialResume struct {
	Owner      string  `json:"owner"`
	Samples    float64 `json:"samples"`
	Step       int64   `json:"step,omitempty"`
	Epoch      float64 `json:"epoch,omitempty"`
	Checkpoint string  `json:"checkpoint,omitempty"`
	Runs       int     `json:"runs"`
	Restarts   int     `json:"restarts,omitempty"`
	Rescales   int     `json:"rescales,omitempty"`
	Seen       bool    `json:"objective_seen,omitempty"`
	// Started and Spans carry the trial's timeline into its next segment
	// (the newest TrialResumeSpansMax spans; the rest counted in
	// SpansDropped).
	Started      time.Time     `json:"started,omitzero"`
	Spans        TrialTimeline `json:"spans,omitempty"`
	SpansDropped int           `json:"spans_dropped,omitempty"`
}

// Progress is the TrialProgress a segment started from r begins with.
func (r TrialResume) Progress() TrialProgress {
	return TrialProgress{State: TrialPending, Samples: r.Samples, Step: r.Step, Epoch: r.Epoch,
		Checkpoint: r.Checkpoint, Runs: r.Runs, Restarts: r.Restarts, Rescales: r.Rescales, ObjectiveSeen: r.Seen,
		Started: r.Started, Spans: slices.Clone([]TrialSpan(r.Spans)), SpansDropped: r.SpansDropped}
}

// TrialRecords is a chunk of an inline campaign's ended trials.
type TrialRecords struct {
	Campaign string        `json:"campaign"`
	Chunk    int           `json:"chunk"`
	Trials   []TrialStatus `json:"trials"`
}

// FailedTrialReport is the final report a failed trial's workflow carries
// in its error (an application error of type ErrTypeTrialFailed): Get on
// a failed trial's workflow returns that error, not a result.
func FailedTrialReport(err error) (TrialReport, bool) {
	// Temporal's *ApplicationError, named by its methods so that this
	// package needs no Temporal import.
	var app interface {
		Type() string
		HasDetails() bool
		Details(d ...any) error
	}
	var r TrialReport
	if errors.As(err, &app) && app.Type() == ErrTypeTrialFailed && app.HasDetails() && app.Details(&r) == nil && r.Final {
		return r, true
	}
	return TrialReport{}, false
}
