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
	Front    *Front          `json:"front,omitempty"`
	Progress float64         `json:"progress"`
	Error    string          `json:"error,omitempty"`
}

// Config is a session's: its searcher's, and for a search of several
// objectives or with constraints where its front's hypervolume is
// measured. Its JSON is hpo.Config's with "reference_point".
type Config struct {
	hpo.Config
	// ReferencePoint has one value per objective, in its own units (as a
	// campaign spec's reference_point); nil: derived from the front
	// (hpo.Goals.ReferencePoint), and the answer says so.
	ReferencePoint []float64 `json:"reference_point,omitempty"`
}

// Validate checks the config; errors name the field.
func (c Config) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	return c.validateReferencePoint()
}

func (c Config) validateReferencePoint() error {
	r := c.ReferencePoint
	if len(r) == 0 {
		return nil
	}
	n := len(c.Goals().Modes)
	switch {
	case !c.MultiObjective():
		return errors.New("reference_point: a hypervolume needs several objectives or a constraint; one objective has a best value")
	case len(r) != n:
		return fmt.Errorf("reference_point: %s for %s: give one per objective, in its own units", count(len(r), "value"), count(n, "objective"))
	}
	for i, v := range r {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("reference_point[%d]: %v is not a finite number", i, v)
		}
	}
	return nil
}

// Serve runs a session: cfg's searcher answers every request line of in
// on out, until in ends. It returns an error only when the streams fail
// or the searcher cannot be made; a bad request is answered with an error
// line.
func Serve(cfg Config, in io.Reader, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s, err := hpo.NewSearcher(cfg.Config)
	if err != nil {
		return err
	}
	return serve(newSession(cfg, s), in, out)
}

// newSession is a session of cfg's searcher s; a restore replaces s with
// one made from cfg.
func newSession(cfg Config, s hpo.Searcher) *searchSession {
	objs := objectivesOf(cfg.Config)
	return &searchSession{cfg: cfg, searcher: s, trials: newLedger(), objs: objs, best: newBest(objs, cfg.ReferencePoint),
		restoreSearcher: func(snapshot []byte) (hpo.Searcher, error) { return hpo.RestoreSearcher(cfg.Config, snapshot) }}
}

// serve answers every request line of in on out, until in ends.
func serve(ss *searchSession, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
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

// searchSession is one searcher, the ledger of its trials and its best.
type searchSession struct {
	cfg             Config
	objs            *objectives
	searcher        hpo.Searcher
	restoreSearcher func(snapshot []byte) (hpo.Searcher, error)
	trials          *ledger
	best            *best
}

// sessionSnapshot is what a snapshot answers and a restore takes. Front
// is absent in a snapshot from before sessions kept their front.
type sessionSnapshot struct {
	Searcher json.RawMessage `json:"searcher"`
	Trials   ledgerState     `json:"trials"`
	Front    *frontState     `json:"front,omitempty"`
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
	r, err := parseRequest(line, ss.objs)
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
		res := ss.objs.result(r)
		ss.best.offer(r.ID, res)
		acts = hpo.Report(ss.searcher, r.ID, r.Samples, res)
	case EventFinished:
		res := ss.objs.result(r)
		ss.best.offer(r.ID, res)
		ss.best.ended(r.ID, hpo.Outcome(r.Outcome))
		acts = hpo.Finish(ss.searcher, r.ID, res, hpo.Outcome(r.Outcome))
	case EventFailed:
		ss.best.ended(r.ID, "")
		acts = ss.searcher.TrialFailed(r.ID)
	case EventSnapshot:
		searcher, err := ss.searcher.Snapshot()
		if err != nil {
			return refuse(err)
		}
		snap, err := json.Marshal(sessionSnapshot{Searcher: searcher, Trials: ss.trials.state(), Front: ss.best.state()})
		if err != nil {
			return refuse(err)
		}
		return Answer{Actions: []Action{}, Snapshot: snap, Progress: ss.searcher.Progress()}
	case EventFront:
		return Answer{Actions: []Action{}, Front: ss.best.answer(), Progress: ss.searcher.Progress()}
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
	ss.best.asked(out.Actions)
	return out
}

// restore replaces the searcher, the ledger and the front with a
// snapshot's. A searcher's own snapshot ({"type":…,"state":…}, what
// gleaner search answered before sessions kept their trials) restores
// the searcher with a legacy ledger and an empty front.
func (ss *searchSession) restore(raw json.RawMessage) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err == nil && top["type"] != nil && top["searcher"] == nil {
		s, err := ss.restoreSearcher(raw)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		ss.searcher, ss.trials, ss.best = s, legacyLedger(searcherCreated(raw)), newBest(ss.objs, ss.cfg.ReferencePoint)
		return nil
	}
	var snap sessionSnapshot
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&snap); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if len(snap.Searcher) == 0 {
		return errors.New("snapshot: searcher: missing")
	}
	s, err := ss.restoreSearcher(snap.Searcher)
	if err != nil {
		return fmt.Errorf("snapshot: searcher: %w", err)
	}
	b, err := bestFrom(ss.objs, ss.cfg.ReferencePoint, snap.Front)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	ss.searcher, ss.trials, ss.best = s, ledgerFrom(snap.Trials), b
	return nil
}
