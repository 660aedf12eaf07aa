package gleaner_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// Node and ExitStatus are in recorded workflow histories: their JSON must
// read back what was written before they moved here from cluster.
func TestNodeTypesJSONShape(t *testing.T) {
	until := time.Date(2026, 11, 21, 19, 44, 9, 0, time.UTC)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"node", gleaner.Node{ID: "local-0"}, `{"id":"local-0"}`},
		{"node full", gleaner.Node{ID: "n1", Type: "a100", IdleUntil: until},
			`{"id":"n1","type":"a100","idle_until":"2026-11-21T19:44:09Z"}`},
		{"exit", gleaner.ExitStatus{}, `{"Code":0,"Signal":"","Killed":false}`},
		{"exit killed", gleaner.ExitStatus{Code: -1, Signal: "killed", Killed: true},
			`{"Code":-1,"Signal":"killed","Killed":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("json.Marshal = %s, want %s", got, tc.want)
			}
		})
	}
	var n gleaner.Node
	if err := json.Unmarshal([]byte(`{"id":"n1","type":"a100","idle_until":"2026-11-21T19:44:09Z"}`), &n); err != nil {
		t.Fatal(err)
	}
	if want := (gleaner.Node{ID: "n1", Type: "a100", IdleUntil: until}); n != want {
		t.Errorf("decoded %+v, want %+v", n, want)
	}
}

func TestExitStatusOK(t *testing.T) {
	for _, tc := range []struct {
		e    gleaner.ExitStatus
		want bool
	}{
		{gleaner.ExitStatus{}, true},
		{gleaner.ExitStatus{Code: 1}, false},
		{gleaner.ExitStatus{Code: -1, Signal: "terminated"}, false},
		{gleaner.ExitStatus{Code: 0, Signal: "killed", Killed: true}, false},
	} {
		if got := tc.e.OK(); got != tc.want {
			t.Errorf("%+v.OK() = %v, want %v", tc.e, got, tc.want)
		}
	}
}
