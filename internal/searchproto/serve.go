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
	ss := &searchSession{cfg: cfg, searcher: s, trials: newLedger()}
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := enc.Encode(ss.answer(n, line)); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}

// searchSession is one searcher and the ledger of its trials.
type searchSession struct {
	cfg      hpo.Config
	searcher hpo.Searcher
	trials   *ledger
}

// sessionSnapshot is what a snapshot answers and a restore takes.
type sessionSnapshot struct {
	Searcher json.RawMessage `json:"searcher"`
	Trials   ledgerState     `json:"trials"`
}

// answer answers the request on line n.
func (ss *searchSession) answer(n int, line []byte) Answer {
	refuse := func(err error) Answer {
		var re *RequestError
		if errors.As(err, &re) && re.Line == 0 {
			re.Line = n
		}
		return Answer{Actions: []Action{}, Error: err.Error(), Progress: ss.searcher.Progress()}
	}
	r, err := ParseRequest(line)
	if err != nil {
		return refuse(err)
	}
	if err := ss.trials.check(r); err != nil {
		return refuse(&RequestError{Line: n, Event: r.Event, ID: r.ID, Err: err})
	}
	var acts []hpo.Action
	switch r.Event {
	case EventInitial:
		acts = ss.searcher.Initial()
	case EventCreated:
		acts = ss.searcher.TrialCreated(r.ID)
	case EventReported:
		acts = ss.searcher.TrialReported(r.ID, r.Samples, *r.Metric)
	case EventFinished:
		metric := math.NaN()
		if r.Metric != nil {
			metric = *r.Metric
		}
		acts = ss.searcher.TrialFinished(r.ID, metric, hpo.Outcome(r.Outcome))
	case EventFailed:
		acts = ss.searcher.TrialFailed(r.ID)
	case EventSnapshot:
		searcher, err := ss.searcher.Snapshot()
		if err != nil {
			return refuse(err)
		}
		snap, err := json.Marshal(sessionSnapshot{Searcher: searcher, Trials: ss.trials.state()})
		if err != nil {
			return refuse(err)
		}
		return Answer{Actions: []Action{}, Snapshot: snap, Progress: ss.searcher.Progress()}
	case EventRestore:
		if err := ss.restore(r.Snapshot); err != nil {
			return refuse(&RequestError{Line: n, Event: r.Event, Err: err})
		}
	}
	ss.trials.took(r)
	out := Answer{Actions: []Action{}, Progress: ss.searcher.Progress()}
	for _, a := range acts {
		w, ok := actionOf(a)
		if !ok {
			out.Error = fmt.Sprintf("the searcher returned an action of type %T, not create, continue, stop or shutdown", a)
			continue
		}
		out.Actions = append(out.Actions, w)
	}
	ss.trials.asked(out.Actions)
	return out
}

// restore replaces the searcher and the ledger with a snapshot's.
func (ss *searchSession) restore(raw json.RawMessage) error {
	var snap sessionSnapshot
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&snap); err != nil {
		if bytes.Contains(raw, []byte(`"type"`)) {
			return errors.New(`snapshot: a searcher's snapshot ({"type":…}), not a session's ({"searcher":…,"trials":…}); restore one that gleaner search answered`)
		}
		return fmt.Errorf("snapshot: %w", err)
	}
	if len(snap.Searcher) == 0 {
		return errors.New("snapshot: searcher: missing")
	}
	s, err := hpo.RestoreSearcher(ss.cfg, snap.Searcher)
	if err != nil {
		return fmt.Errorf("snapshot: searcher: %w", err)
	}
	ss.searcher, ss.trials = s, ledgerFrom(snap.Trials)
	return nil
}
