// Package searchproto is the Searcher contract (package hpo) as JSON
// lines, so any program can drive any Gleaner searcher: `gleaner search`
// reads one request per line and answers each with one line. It is pure:
// it reads and writes the streams it is given.
//
// Requests (one JSON object per line; "event" says which):
//
//	{"event":"initial"}                                   the first actions
//	{"event":"created","id":"t00001"}                     a trial started
//	{"event":"reported","id":"t00001","samples":6400,"metric":0.31}
//	{"event":"finished","id":"t00001","metric":0.12,"outcome":"completed"}   or "stopped"; metric null: none
//	{"event":"failed","id":"t00001"}
//	{"event":"snapshot"}                                  the searcher's state
//	{"event":"restore","snapshot":{...}}                  back to a state
//
// Answers (one line each): {"actions":[...],"progress":0.25} where each
// action is one of
//
//	{"create":{"id":"t00002","params":{"lr":0.01,"opt":"adam"}}}
//	{"create":{"id":"t00009","params":{…},"budget":1200,"from":"t00002","stage":"gen 3"}}
//	{"continue":{"trial_id":"t00002","budget":3600,"stage":"rung 1"}}
//	{"stop":{"trial_id":"t00001"}}
//	{"shutdown":{"reason":"all 8 members of the population trained max_budget 38400"}}
//
// A create's budget (omitted: 0, to the trainer's end) is the progress at
// which the trial pauses: it reports there, then ends "completed", holding
// its checkpoint. A create's from names a trial that paused at a budget:
// the new trial starts from that checkpoint (progress counts on from its).
// A continue resumes a paused trial from its checkpoint to a larger
// budget; the caller answers it with "created" for the same id when it
// starts, and with "failed" if it cannot continue it. Stage labels the
// trial for people. A snapshot answers {"snapshot":{...},"progress":…}; a
// bad request answers {"error":"…"} and the session goes on.
package searchproto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// MaxLine bounds one request line (a restore carries a snapshot).
const MaxLine = 64 << 20

// Request is one line from the caller.
type Request struct {
	Event    string          `json:"event"`
	ID       string          `json:"id,omitempty"`
	Samples  float64         `json:"samples,omitempty"`
	Metric   *float64        `json:"metric,omitempty"`
	Outcome  string          `json:"outcome,omitempty"`
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
}

// Action is one action as the protocol writes it: exactly one field set.
type Action struct {
	Create   *hpo.Create   `json:"create,omitempty"`
	Continue *hpo.Continue `json:"continue,omitempty"`
	Stop     *hpo.Stop     `json:"stop,omitempty"`
	Shutdown *hpo.Shutdown `json:"shutdown,omitempty"`
}

// actionOf writes a searcher's action as the protocol does; false for
// none of the four (a nil action: a searcher's bug).
func actionOf(a hpo.Action) (Action, bool) {
	switch a := a.(type) {
	case hpo.Create:
		return Action{Create: &a}, true
	case hpo.Continue:
		return Action{Continue: &a}, true
	case hpo.Stop:
		return Action{Stop: &a}, true
	case hpo.Shutdown:
		return Action{Shutdown: &a}, true
	}
	return Action{}, false
}

// Answer is one line to the caller.
type Answer struct {
	Actions  []Action        `json:"actions"`
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
	Progress float64         `json:"progress"`
	Error    string          `json:"error,omitempty"`
}

// ParseRequest decodes and checks one request line; errors name the field.
func ParseRequest(line []byte) (Request, error) {
	var r Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("request: %w", err)
	}
	if dec.More() {
		return r, errors.New("request: more than one JSON value on the line")
	}
	switch r.Event {
	case "initial", "snapshot":
	case "created", "failed":
		if r.ID == "" {
			return r, fmt.Errorf("%s: id: missing", r.Event)
		}
	case "reported":
		if r.ID == "" {
			return r, errors.New("reported: id: missing")
		}
		if r.Metric == nil {
			return r, errors.New("reported: metric: missing")
		}
		if math.IsNaN(r.Samples) || r.Samples < 0 {
			return r, fmt.Errorf("reported: samples: %v must be ≥ 0", r.Samples)
		}
	case "finished":
		if r.ID == "" {
			return r, errors.New("finished: id: missing")
		}
		switch hpo.Outcome(r.Outcome) {
		case "", hpo.OutcomeCompleted, hpo.OutcomeStopped:
		default:
			return r, fmt.Errorf("finished: outcome: %q is not one of completed, stopped", r.Outcome)
		}
	case "restore":
		if len(r.Snapshot) == 0 {
			return r, errors.New("restore: snapshot: missing")
		}
	case "":
		return r, errors.New("event: missing (want initial, created, reported, finished, failed, snapshot or restore)")
	default:
		return r, fmt.Errorf("event: %q is not one of initial, created, reported, finished, failed, snapshot, restore", r.Event)
	}
	return r, nil
}

// Serve runs a session: cfg's searcher answers every request line of in
// on out, until in ends. It returns an error only when the streams fail
// or the searcher cannot be made; a bad request is answered with an error
// line.
func Serve(cfg hpo.Config, in io.Reader, out io.Writer) error {
	s, err := hpo.NewSearcher(cfg)
	if err != nil {
		return err
	}
	return serve(cfg, s, in, out)
}

// serve is Serve with the searcher made; a restore replaces it with one
// made from cfg.
func serve(cfg hpo.Config, s hpo.Searcher, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ans := answer(cfg, &s, line)
		if err := enc.Encode(ans); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}

func answer(cfg hpo.Config, s *hpo.Searcher, line []byte) Answer {
	r, err := ParseRequest(line)
	if err != nil {
		return Answer{Actions: []Action{}, Error: err.Error(), Progress: (*s).Progress()}
	}
	var acts []hpo.Action
	switch r.Event {
	case "initial":
		acts = (*s).Initial()
	case "created":
		acts = (*s).TrialCreated(r.ID)
	case "reported":
		acts = (*s).TrialReported(r.ID, r.Samples, *r.Metric)
	case "finished":
		metric := math.NaN()
		if r.Metric != nil {
			metric = *r.Metric
		}
		outcome := hpo.Outcome(r.Outcome)
		if outcome == "" {
			outcome = hpo.OutcomeCompleted
		}
		acts = (*s).TrialFinished(r.ID, metric, outcome)
	case "failed":
		acts = (*s).TrialFailed(r.ID)
	case "snapshot":
		snap, err := (*s).Snapshot()
		if err != nil {
			return Answer{Actions: []Action{}, Error: err.Error(), Progress: (*s).Progress()}
		}
		return Answer{Actions: []Action{}, Snapshot: snap, Progress: (*s).Progress()}
	case "restore":
		restored, err := hpo.RestoreSearcher(cfg, r.Snapshot)
		if err != nil {
			return Answer{Actions: []Action{}, Error: err.Error(), Progress: (*s).Progress()}
		}
		*s = restored
	}
	out := Answer{Actions: []Action{}, Progress: (*s).Progress()}
	for _, a := range acts {
		w, ok := actionOf(a)
		if !ok {
			out.Error = fmt.Sprintf("the searcher returned an action of type %T, not create, continue, stop or shutdown", a)
			continue
		}
		out.Actions = append(out.Actions, w)
	}
	return out
}
