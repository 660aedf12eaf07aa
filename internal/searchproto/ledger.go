package searchproto

// The session's ledger of trials: which the searcher asked for, which the
// caller created, which ended. It refuses events out of order.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The rules of a trial's life a request can break; a refusal wraps one
// (errors.Is) inside a *RequestError naming the event and the id.
var (
	ErrUnknownTrial = errors.New("no create action named this trial")
	ErrNotCreated   = errors.New("not created yet: send created when it starts (failed if it cannot start)")
	ErrRunning      = errors.New("already created and running")
	ErrFinished     = errors.New("already finished")
	ErrFailed       = errors.New("already failed")
	ErrInitialSent  = errors.New("already sent: the first actions went out (restore a snapshot to go back)")
)

// phase is where a trial is in its life, as the session saw it.
type phase uint8

const (
	unknown  phase = iota
	asked          // a create or continue named it; not created yet
	running        // created
	finished       // finished: completed or stopped; a continue may ask for it again
	failed
	// legacy: a trial a searcher restored from its own snapshot (no
	// session's) may have asked for, created or ended before it; the
	// session cannot tell which, so it takes any event for it.
	legacy
)

// ledger keeps what a session needs to check events, in memory bounded
// at any campaign length: the trials in flight (asked or running: at most
// max_concurrent, and the creates a shutdown left unstarted) by id, and
// the ended ones as two bit sets over the trial's number, 2 bits per
// trial created (25 KB after 100,000). Every Gleaner searcher numbers its
// ids (t00001, t00002, …); an id of another form that ends is kept as a
// string.
type ledger struct {
	initialSent bool
	live        map[string]phase // asked or running
	ended       map[string]phase // ended trials whose ids are not numbered
	finished    bitSet
	failed      bitSet
	// legacyCreated: the session began from a searcher's own snapshot
	// that had created this many trials; those of them the session has
	// heard nothing of since are legacy.
	legacyCreated int
}

func newLedger() *ledger {
	return &ledger{live: map[string]phase{}, ended: map[string]phase{}}
}

func (l *ledger) phase(id string) phase {
	if p, ok := l.live[id]; ok {
		return p
	}
	if n, ok := trialNumber(id); ok {
		switch {
		case l.finished.has(n):
			return finished
		case l.failed.has(n):
			return failed
		case n <= l.legacyCreated:
			return legacy
		}
		return unknown
	}
	return l.ended[id]
}

func (l *ledger) set(id string, p phase) {
	delete(l.live, id)
	n, numbered := trialNumber(id)
	if numbered {
		l.finished.clear(n)
		l.failed.clear(n)
	} else {
		delete(l.ended, id)
	}
	switch {
	case p == asked || p == running:
		l.live[id] = p
	case numbered && p == finished:
		l.finished.add(n)
	case numbered && p == failed:
		l.failed.add(n)
	case p != unknown:
		l.ended[id] = p
	}
}

// check refuses a request the session's state does not allow: the rule it
// breaks, nil if none.
func (l *ledger) check(r Request) error {
	if r.Event == EventInitial && l.initialSent {
		return ErrInitialSent
	}
	if r.ID == "" {
		return nil
	}
	p := l.phase(r.ID)
	if p == legacy {
		return nil
	}
	switch r.Event {
	case EventCreated:
		switch p {
		case asked:
			return nil
		case finished:
			return fmt.Errorf("%w; created again only after a continue names it", ErrFinished)
		}
	case EventReported, EventFinished:
		if p == running {
			return nil
		}
	case EventFailed:
		if p == asked || p == running {
			return nil
		}
	}
	switch p {
	case unknown:
		return ErrUnknownTrial
	case asked:
		return ErrNotCreated
	case running:
		return ErrRunning
	case finished:
		return ErrFinished
	}
	return ErrFailed
}

// took books a request the searcher has taken.
func (l *ledger) took(r Request) {
	switch r.Event {
	case EventInitial:
		l.initialSent = true
	case EventCreated, EventReported:
		l.set(r.ID, running)
	case EventFinished:
		l.set(r.ID, finished)
	case EventFailed:
		l.set(r.ID, failed)
	}
}

// asked books the searcher's actions: a create asks for a new trial; a
// continue asks again for one that finished at its budget (or for one
// that cannot be continued, which the caller answers with failed).
func (l *ledger) asked(acts []Action) {
	for _, a := range acts {
		switch {
		case a.Create != nil && l.phase(a.Create.ID) == unknown:
			l.set(a.Create.ID, asked)
		case a.Continue != nil && l.phase(a.Continue.TrialID) != running:
			l.set(a.Continue.TrialID, asked)
		}
	}
}

// ledgerState is the ledger in a session's snapshot.
type ledgerState struct {
	InitialSent bool     `json:"initial_sent,omitempty"`
	Asked       []string `json:"asked,omitempty"`
	Running     []string `json:"running,omitempty"`
	// Finished and Failed are bit sets over trial numbers (bit n%8 of byte
	// n/8 for t<n>), base64 in JSON.
	Finished []byte `json:"finished,omitempty"`
	Failed   []byte `json:"failed,omitempty"`
	// FinishedIDs and FailedIDs are the ended trials whose ids are not
	// numbered.
	FinishedIDs []string `json:"finished_ids,omitempty"`
	FailedIDs   []string `json:"failed_ids,omitempty"`
	// LegacyCreated: the session began from a searcher's own snapshot of
	// this many trials created (legacyLedger).
	LegacyCreated int `json:"legacy_created,omitempty"`
}

func (l *ledger) state() ledgerState {
	s := ledgerState{InitialSent: l.initialSent, Finished: l.finished.bytes(), Failed: l.failed.bytes(), LegacyCreated: l.legacyCreated}
	for id, p := range l.live {
		if p == asked {
			s.Asked = append(s.Asked, id)
		} else {
			s.Running = append(s.Running, id)
		}
	}
	for id, p := range l.ended {
		if p == finished {
			s.FinishedIDs = append(s.FinishedIDs, id)
		} else {
			s.FailedIDs = append(s.FailedIDs, id)
		}
	}
	for _, ids := range [][]string{s.Asked, s.Running, s.FinishedIDs, s.FailedIDs} {
		sort.Strings(ids)
	}
	return s
}

func ledgerFrom(s ledgerState) *ledger {
	l := newLedger()
	l.initialSent, l.legacyCreated = s.InitialSent, s.LegacyCreated
	l.finished, l.failed = bitSetOf(s.Finished), bitSetOf(s.Failed)
	for _, ids := range []struct {
		ids []string
		p   phase
	}{{s.FinishedIDs, finished}, {s.FailedIDs, failed}, {s.Asked, asked}, {s.Running, running}} {
		for _, id := range ids.ids {
			l.set(id, ids.p)
		}
	}
	return l
}

// legacyLedger is the ledger of a session restored from a searcher's own
// snapshot ({"type":…,"state":…}, what gleaner search answered before
// sessions kept their trials): it knows none of the trials, so it takes
// any event for one the searcher could have asked for before the
// snapshot (numbered up to created, the snapshot's count) until it hears
// of it, and refuses the rest as any session does. created < 0: the
// snapshot did not say; every numbered id could have been asked for.
func legacyLedger(created int) *ledger {
	l := newLedger()
	if created < 0 {
		created = math.MaxInt32
	}
	l.legacyCreated, l.initialSent = created, created > 0
	return l
}

// trialNumber is n for the id t<n> that Gleaner's searchers write
// (fmt "t%05d"), false for any other id.
func trialNumber(id string) (int, bool) {
	if len(id) < 6 || id[0] != 't' {
		return 0, false
	}
	n, err := strconv.Atoi(id[1:])
	if err != nil || n < 1 || fmt.Sprintf("t%05d", n) != id {
		return 0, false
	}
	return n, true
}

// bitSet is a set of small non-negative ints.
type bitSet struct{ b []byte }

func bitSetOf(b []byte) bitSet { return bitSet{b: append([]byte(nil), b...)} }

func (s *bitSet) has(n int) bool { return n/8 < len(s.b) && s.b[n/8]&(1<<(n%8)) != 0 }

func (s *bitSet) add(n int) {
	for n/8 >= len(s.b) {
		s.b = append(s.b, 0)
	}
	s.b[n/8] |= 1 << (n % 8)
}

func (s *bitSet) clear(n int) {
	if n/8 < len(s.b) {
		s.b[n/8] &^= 1 << (n % 8)
	}
}

func (s *bitSet) bytes() []byte { return s.b }

// searcherCreated reads how many trials a searcher's snapshot had
// created: every Gleaner searcher keeps its in-flight window (hpo's
// window: "created", "ended") in its state, a stopping searcher inside
// its sampler's; the largest count found. -1 when none is found.
func searcherCreated(snapshot []byte) int {
	var v any
	if err := json.Unmarshal(snapshot, &v); err != nil {
		return -1
	}
	created := -1
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			c, okC := v["created"].(float64)
			_, okE := v["ended"].(float64)
			if okC && okE && c == math.Trunc(c) && c >= 0 && c < math.MaxInt32 {
				created = max(created, int(c))
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			// A sampler's snapshot kept as a JSON string.
			if strings.HasPrefix(v, "{") {
				var inner any
				if json.Unmarshal([]byte(v), &inner) == nil {
					walk(inner)
				}
			}
		}
	}
	walk(v)
	return created
}
