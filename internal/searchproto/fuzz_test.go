package searchproto

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Request lines come from any program: none may crash a session, every
// line gets exactly one answer line, a refusal names its request (event,
// or else its line), and an accepted request written back reads back the
// same (decode ∘ encode = identity).
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"event":"initial"}`,
		`{"event":"created","id":"t00001"}`,
		`{"event":"reported","id":"t00001","samples":640,"metric":0.5}`,
		`{"event":"finished","id":"t00001","metric":null,"outcome":"stopped"}`,
		`{"event":"finished","id":"t00002","metric":-0.5,"outcome":"completed"}`, // paused at its budget
		`{"event":"failed","id":"t00002"}`,
		`{"event":"restore","snapshot":{"searcher":{"type":"random","state":{"rng":"AAAA"}},"trials":{}}}`,
		`{"event":"snapshot"}`,
		`{"event":1e999}`,
		`{"event":"reported","id":"t00001","samples":1,"metric":NaN}`,
		`{"event":"reported","id":"t00001","samples":-Infinity,"metric":1}`,
		`{"event":"finished","id":"t00001","metrc":1,"outcome":"completed"}`,
		`{"event":"created","id":7}`,
		`[{"event":"initial"}]`,
		`{"event":"reported","id":"t00001","samples":1,"values":[0.5,12],"constraints":[3.5]}`,
		`{"event":"finished","id":"t00001","values":[0.5,null],"constraints":[null],"outcome":"stopped"}`,
		`{"event":"finished","id":"t00001","values":[1, NaN],"outcome":"completed"}`,
		`{"event":"reported","id":"t00001","samples":1,"values":[-Infinity]}`,
		`{"event":"finished","id":"t00001","metric":1,"values":[1],"outcome":"completed"}`,
		`{"event":"reported","id":"t00001","samples":1,"values":[],"constraints":[[1]]}`,
		`{"event":"front"}`,
		`{"event":"restore","snapshot":{"type":"random","state":{"created":2,"ended":0}}}`,
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := ParseRequest([]byte(line))
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%q: refused with %T, not a *RequestError: %v", line, err, err)
			}
			if re.Event == "" && re.ID == "" && !errors.Is(err, ErrNotJSON) && !strings.HasPrefix(re.Err.Error(), "event: ") {
				t.Fatalf("%q: %v names neither the request nor the rule", line, err)
			}
		} else {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			back, err := ParseRequest(b)
			if err != nil {
				t.Fatalf("%q written as %s reads back refused: %v", line, b, err)
			}
			if !same(t, back.Snapshot, r.Snapshot) {
				t.Fatalf("%q written as %s reads back snapshot %s", line, b, back.Snapshot)
			}
			back.Snapshot, r.Snapshot = nil, nil
			if !reflect.DeepEqual(back, r) {
				t.Fatalf("%q written as %s reads back %#v, want %#v", line, b, back, r)
			}
		}
		if strings.ContainsAny(line, "\n\r") {
			return
		}
		var out strings.Builder
		if err := Serve(testConfig(), strings.NewReader(`{"event":"initial"}`+"\n"+line+"\n"), &out); err != nil {
			t.Fatal(err)
		}
		want := 2
		if strings.TrimSpace(line) == "" {
			want = 1
		}
		if got := strings.Count(out.String(), "\n"); got != want {
			t.Fatalf("%d answer lines for %d requests:\n%s", got, want, out.String())
		}
		if want == 2 {
			vectorSession(t, twoObjectives(), `{"event":"initial"}`, line) // one answer each, and no panic
		}
	})
}

// An action line decodes to the action that was written (decode ∘ encode
// = identity), for creates with budgets and sources and for continues.
func FuzzActionRoundTrip(f *testing.F) {
	f.Add("t00002", "t00001", "gen 1", 1200.0, true)
	f.Add("t00001", "", "rung 1", 3600.0, false)
	f.Add("", "", "", 0.0, true)
	f.Fuzz(func(t *testing.T, id, from, stage string, budget float64, create bool) {
		if math.IsNaN(budget) || math.IsInf(budget, 0) || !utf8.ValidString(id) || !utf8.ValidString(from) || !utf8.ValidString(stage) {
			return // JSON has no such numbers, and strings are UTF-8
		}
		var want hpo.Action = hpo.Continue{TrialID: id, Budget: budget, Stage: stage}
		if create {
			want = hpo.Create{ID: id, Params: hpo.Params{"lr": hpo.Float(0.5)}, Budget: budget, From: from, Stage: stage}
		}
		w, ok := actionOf(want)
		if !ok {
			t.Fatalf("%v: not written", want)
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		var got Action
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		var back hpo.Action
		switch {
		case create && got.Create != nil:
			back = *got.Create
		case !create && got.Continue != nil:
			back = *got.Continue
		}
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("%s decodes to %#v, want %#v", b, back, want)
		}
	})
}

// same says whether two raw JSON values are the same value (json.Marshal
// writes "&" as "\u0026").
func same(t *testing.T, a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
