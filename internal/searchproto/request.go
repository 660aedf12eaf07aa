package searchproto

// Decoding one request line and checking its fields. Every event lists
// its fields in requestFields; every field has one entry in fields (how
// to read it, write it and say it is missing, and whether another field
// stands in for it). A new field is one entry there and its name in each
// event that carries it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Request is one line from the caller. Its JSON is the wire format's:
// MarshalJSON writes its event's fields, UnmarshalJSON is ParseRequest.
type Request struct {
	Event   string
	ID      string   // the trial's: created, reported, finished, failed
	Samples float64  // reported: the trial's progress, in the search's budget unit
	Metric  *float64 // reported, finished: the objective (a search of one); nil for a trial that finished without one
	// Values (reported, finished; a search of several objectives instead
	// of Metric) has one value per objective, in the config's order; nil
	// where a finished trial has none. Constraints (reported, finished;
	// a search with constraints) has one per constraint, nil likewise.
	Values      []*float64
	Constraints []*float64
	Outcome     string          // finished: completed or stopped
	Snapshot    json.RawMessage // restore: a snapshot that a snapshot request answered
}

// UnmarshalJSON reads one request as ParseRequest does.
func (r *Request) UnmarshalJSON(b []byte) error {
	q, err := ParseRequest(b)
	if err != nil {
		return err
	}
	*r = q
	return nil
}

// The events of the protocol, in the order the docs list them.
const (
	EventInitial  = "initial"
	EventCreated  = "created"
	EventReported = "reported"
	EventFinished = "finished"
	EventFailed   = "failed"
	EventSnapshot = "snapshot"
	EventRestore  = "restore"
	EventFront    = "front"
)

// requestFields lists, per event, every field besides "event" that it
// carries, each required unless its entry in fields says otherwise (an
// alternative to another field, or optional); a field not listed is
// refused.
var requestFields = map[string][]string{
	EventInitial:  nil,
	EventCreated:  {"id"},
	EventReported: {"id", "samples", "metric", "values", "constraints"},
	EventFinished: {"id", "metric", "values", "constraints", "outcome"},
	EventFailed:   {"id"},
	EventSnapshot: nil,
	EventRestore:  {"snapshot"},
	EventFront:    nil,
}

var eventNames = []string{EventInitial, EventCreated, EventReported, EventFinished, EventFailed, EventSnapshot, EventRestore, EventFront}

// A requestField is one field of the wire format: how to read it into a
// Request (or say what is wrong with its value; the caller names the
// field), how to write it back, and what to say when it is missing.
type requestField struct {
	parse   func(raw json.RawMessage, r *Request) error
	value   func(r Request) any
	missing string
	// or names the field that stands in for this one: a request carries
	// exactly one of the two (metric for one objective, values for
	// several). optional: a request may leave it out (constraints, for a
	// search without any). present says whether a Request carries such a
	// field, for MarshalJSON.
	or       string
	optional bool
	present  func(r Request) bool
}

var fields = map[string]requestField{
	"id": {
		parse: func(raw json.RawMessage, r *Request) error {
			s, err := parseString(raw)
			if err != nil {
				return err
			}
			if s == "" {
				return errors.New(`"" is empty; want the id of a create action`)
			}
			r.ID = s
			return nil
		},
		value: func(r Request) any { return r.ID },
	},
	"samples": {
		parse: func(raw json.RawMessage, r *Request) error {
			x, err := parseNumber(raw)
			if err != nil {
				return err
			}
			if x == nil {
				return errors.New("null; want the trial's progress, a number ≥ 0")
			}
			if *x < 0 {
				return fmt.Errorf("%v must be ≥ 0", *x)
			}
			r.Samples = *x
			return nil
		},
		value:   func(r Request) any { return r.Samples },
		missing: "; the trial's progress, a number ≥ 0",
	},
	"metric": {
		parse: func(raw json.RawMessage, r *Request) error {
			x, err := parseNumber(raw)
			if err != nil {
				return err
			}
			if x == nil && r.Event == EventReported {
				return errors.New("null; a report carries a value (null is for a trial that finished without one)")
			}
			r.Metric = x
			return nil
		},
		value:   func(r Request) any { return r.Metric },
		missing: "; a number, or null for a trial that finished without one",
		or:      "values",
		present: func(r Request) bool { return r.Values == nil },
	},
	"values": {
		parse: func(raw json.RawMessage, r *Request) (err error) {
			r.Values, err = parseNumbers(raw, r.Event, "objective")
			return err
		},
		value:   func(r Request) any { return r.Values },
		missing: "; one number per objective (null for one a finished trial has none of)",
		or:      "metric",
		present: func(r Request) bool { return r.Values != nil },
	},
	"constraints": {
		parse: func(raw json.RawMessage, r *Request) (err error) {
			r.Constraints, err = parseNumbers(raw, r.Event, "constraint")
			return err
		},
		value:    func(r Request) any { return r.Constraints },
		missing:  "; one number per constraint (null for one a finished trial has none of)",
		optional: true,
		present:  func(r Request) bool { return r.Constraints != nil },
	},
	"outcome": {
		parse: func(raw json.RawMessage, r *Request) error {
			s, err := parseString(raw)
			if err != nil {
				return err
			}
			switch hpo.Outcome(s) {
			case hpo.OutcomeCompleted, hpo.OutcomeStopped:
			default:
				return fmt.Errorf("%q is not one of completed, stopped", s)
			}
			r.Outcome = s
			return nil
		},
		value:   func(r Request) any { return r.Outcome },
		missing: "; one of completed, stopped",
	},
	"snapshot": {
		parse: func(raw json.RawMessage, r *Request) error {
			if !bytes.HasPrefix(raw, []byte("{")) {
				return fmt.Errorf("%s is not an object; want a snapshot that gleaner search answered", short(raw))
			}
			r.Snapshot = raw
			return nil
		},
		value: func(r Request) any { return r.Snapshot },
	},
}

// MarshalJSON writes the request as the wire format has it: "event", then
// every field of that event, in requestFields' order, so that ParseRequest
// reads back what was written.
func (r Request) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	event, err := json.Marshal(r.Event)
	if err != nil {
		return nil, err
	}
	b.WriteString(`{"event":`)
	b.Write(event)
	for _, name := range requestFields[r.Event] {
		if f := fields[name]; f.present != nil && !f.present(r) {
			continue
		}
		v, err := json.Marshal(fields[name].value(r))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(&b, ",%q:%s", name, v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ErrNotJSON: the line is not one JSON object.
var ErrNotJSON = errors.New("not a JSON object")

// RequestError is a request the session refused: the request (its event
// and id, as far as the line said them, or else its line) and the rule it
// broke.
type RequestError struct {
	Line  int    // the line of the session, counted from 1; 0 when not known
	Event string // "" when the line named no valid event
	ID    string // "" when the line named no id
	Err   error
}

func (e *RequestError) Error() string {
	event := e.Event
	if event == "" {
		event = "request"
	}
	switch {
	case e.ID != "":
		return fmt.Sprintf("%s %q: %v", event, e.ID, e.Err)
	case e.Event != "":
		return fmt.Sprintf("%s: %v", event, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return e.Err.Error()
}

func (e *RequestError) Unwrap() error { return e.Err }

// ParseRequest decodes one request line and checks its fields (not the
// session's state: which trials exist). A refusal is a *RequestError that
// names the event, the id and the field.
func ParseRequest(line []byte) (Request, error) { return parseRequest(line, nil) }

// parseRequest is ParseRequest for a search of these objectives: a
// result must be the one they want (nil: any).
func parseRequest(line []byte, want *objectives) (Request, error) {
	decoded, err := decodeObject(line)
	if err != nil {
		if at, tok, key, ok := notJSONNumber(line, err); ok {
			// NaN or Infinity (Python's json.dumps writes them): say so,
			// and name the request as the rest of the line does.
			event, id := named(append(append(append([]byte{}, line[:at]...), "null"...), line[at+len(tok):]...))
			return Request{}, &RequestError{Event: event, ID: id, Err: nonJSONNumber{key: key, token: tok}}
		}
		return Request{}, &RequestError{Err: err}
	}
	return checkRequest(decoded, want)
}

// checkRequest validates one decoded request: its event, then every field
// that event carries, in requestFields' order, then its result against
// the search's objectives (want; nil: any).
func checkRequest(line map[string]json.RawMessage, want *objectives) (Request, error) {
	var r Request
	fail := func(format string, a ...any) (Request, error) {
		return Request{}, &RequestError{Event: r.Event, ID: r.ID, Err: fmt.Errorf(format, a...)}
	}
	// The id first, so that every later refusal can name it.
	if raw, ok := line["id"]; ok {
		if s, err := parseString(raw); err == nil {
			r.ID = s
		}
	}
	rawEvent, ok := line["event"]
	if !ok {
		return fail("event: missing; one of %s", strings.Join(eventNames, ", "))
	}
	event, err := parseString(rawEvent)
	if err != nil {
		return fail("event: %v", err)
	}
	allowed, ok := requestFields[event]
	if !ok {
		return fail("event: %q is not one of %s", event, strings.Join(eventNames, ", "))
	}
	r.Event = event
	if !slices.Contains(allowed, "id") {
		r.ID = "" // named only where the event carries one
	}
	for _, name := range slices.Sorted(maps.Keys(line)) {
		if name != "event" && !slices.Contains(allowed, name) {
			return fail("%s: not a field of %s (%s)", name, event, fieldList(allowed))
		}
	}
	for _, name := range allowed {
		f := fields[name]
		raw, ok := line[name]
		_, alternative := line[f.or]
		switch {
		case !ok && (f.optional || alternative):
			continue
		case !ok && want != nil && f.or != "" && want.field() != name:
			continue // the search wants the other one: missing, named there
		case !ok:
			return fail("%s: missing%s", name, f.missing)
		case alternative && slices.Index(allowed, f.or) < slices.Index(allowed, name):
			return fail("%s: sent with %s; send metric for a search of one objective, values for one of several", name, f.or)
		}
		if err := f.parse(raw, &r); err != nil {
			var item itemError
			if errors.As(err, &item) {
				return fail("%s[%d]: %v", name, item.i, item.err)
			}
			return fail("%s: %v", name, err)
		}
	}
	if want != nil {
		if err := want.check(r); err != nil {
			return fail("%v", err)
		}
	}
	return r, nil
}

// decodeObject decodes the line as one JSON object, its fields raw.
func decodeObject(line []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, fmt.Errorf("%w: %s", ErrNotJSON, short(line))
		}
		return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotJSON, short(line)) // null
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value on the line", ErrNotJSON)
	}
	return obj, nil
}

// nonJSONNumber: a field's value is NaN, Infinity or -Infinity, which
// JSON does not have. It is ErrNotJSON.
type nonJSONNumber struct{ key, token string }

func (e nonJSONNumber) Error() string {
	key, hint := e.key, ""
	if key == "" {
		key = `""`
	}
	switch strings.TrimRight(e.key, "[0123456789]") {
	case "metric", "values", "constraints":
		hint = "; send null for no value"
	}
	return fmt.Sprintf("%s: %s is not JSON%s", key, e.token, hint)
}

func (e nonJSONNumber) Unwrap() error { return ErrNotJSON }

// valueKey finds the key before a value that ends a line's prefix;
// itemKey the key of a list of plain values that the prefix ends in.
var (
	valueKey = regexp.MustCompile(`"([^"\\]*)"\s*:\s*$`)
	itemKey  = regexp.MustCompile(`"([^"\\]*)"\s*:\s*\[([^\[\]{}"]*)$`)
)

// notJSONNumber says whether the syntax error err stopped at NaN,
// Infinity or -Infinity, where that token starts, and the key whose value
// it is.
func notJSONNumber(line []byte, err error) (at int, tok, key string, ok bool) {
	var syn *json.SyntaxError
	if !errors.As(err, &syn) || syn.Offset < 1 || int(syn.Offset) > len(line) {
		return 0, "", "", false
	}
	at = int(syn.Offset) - 1
	switch rest := line[at:]; {
	case bytes.HasPrefix(rest, []byte("Infinity")) && at > 0 && line[at-1] == '-':
		at, tok = at-1, "-Infinity"
	case bytes.HasPrefix(rest, []byte("Infinity")):
		tok = "Infinity"
	case bytes.HasPrefix(rest, []byte("NaN")):
		tok = "NaN"
	default:
		return 0, "", "", false
	}
	if m := valueKey.FindSubmatch(line[:at]); m != nil {
		return at, tok, string(m[1]), true
	}
	if m := itemKey.FindSubmatch(line[:at]); m != nil {
		return at, tok, fmt.Sprintf("%s[%d]", m[1], bytes.Count(m[2], []byte(","))), true
	}
	return 0, "", "", false
}

// named returns the event and id a request line names, as far as it
// names them, refused or not.
func named(line []byte) (event, id string) {
	r, err := ParseRequest(line)
	var re *RequestError
	if errors.As(err, &re) {
		return re.Event, re.ID
	}
	return r.Event, r.ID
}

func parseString(raw json.RawMessage) (string, error) {
	var s string
	if !bytes.HasPrefix(raw, []byte(`"`)) || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%s is not a string", short(raw))
	}
	return s, nil
}

// parseNumber decodes a finite number, or nil for null.
func parseNumber(raw json.RawMessage) (*float64, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	if bytes.HasPrefix(raw, []byte(`"`)) {
		return nil, fmt.Errorf("%s is a string; want a number", short(raw))
	}
	var x float64
	if err := json.Unmarshal(raw, &x); err != nil {
		if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			return nil, fmt.Errorf("%s is not a finite float64", short(raw))
		}
		return nil, fmt.Errorf("%s is not a number", short(raw))
	}
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil, fmt.Errorf("%s is not a finite float64", short(raw))
	}
	return &x, nil
}

// parseNumbers decodes a list of one number per objective (what says
// which) or constraint: null only where a finished trial has none.
func parseNumbers(raw json.RawMessage, event, what string) ([]*float64, error) {
	if !bytes.HasPrefix(raw, []byte("[")) {
		return nil, fmt.Errorf("%s is not a list; want one number per %s", short(raw), what)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", short(raw), err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("[] is empty; want one number per %s", what)
	}
	out := make([]*float64, len(items))
	for i, item := range items {
		x, err := parseNumber(item)
		if err != nil {
			return nil, itemError{i, err}
		}
		if x == nil && event == EventReported {
			return nil, itemError{i, errors.New("null; a report carries every value (null is for a trial that finished without one)")}
		}
		out[i] = x
	}
	return out, nil
}

// itemError: the i-th item of a list is wrong.
type itemError struct {
	i   int
	err error
}

func (e itemError) Error() string { return fmt.Sprintf("[%d]: %v", e.i, e.err) }

func fieldList(names []string) string {
	if len(names) == 0 {
		return "it carries no other field"
	}
	var list []string
	for i, name := range names {
		switch or := fields[name].or; {
		case or != "" && slices.Index(names, or) < i:
			continue // written with its alternative
		case or != "":
			name += " or " + or
		}
		list = append(list, name)
	}
	return "its fields: event, " + strings.Join(list, ", ")
}

// short quotes a value for a message, cut to a readable length.
func short(b []byte) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
