package searchproto

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// Request lines come from any program: none may crash a session, and
// every line gets exactly one answer line.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"event":"initial"}`,
		`{"event":"created","id":"t00001"}`,
		`{"event":"reported","id":"t00001","samples":640,"metric":0.5}`,
		`{"event":"finished","id":"t00001","metric":null,"outcome":"stopped"}`,
		`{"event":"finished","id":"t00002","metric":-0.5,"outcome":"completed"}`, // paused at its budget
		`{"event":"restore","snapshot":{"type":"random","state":{"rng":"AAAA"}}}`,
		`{"event":"snapshot"}`,
		`{"event":1e999}`,
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_, _ = ParseRequest([]byte(line))
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
