package slurmdemo

import (
	"errors"
	"strings"
	"testing"
)

func TestReadSWF(t *testing.T) {
	const log = `; UnixStartTime: 1000
; MaxNodes: 4360
; Note: comments and blank lines are skipped

1 100 52645 10849 128 -1 -1 128 10800 -1 0 -1 -1 -1 -1 -1 -1 0
2 200 0 0 640 -1 -1 640 12600 -1 0 -1 -1 -1 -1 -1 -1 0
3 300 5 7172 -1 -1 -1 256 -1 -1 0 -1 -1 -1 -1 -1 -1 0
4 -1 5 60 1 -1 -1 1 60 -1 0 -1 -1 -1 -1 -1 -1 0
5 400 5 60.0 2 -1 -1 2 120 -1 0 -1 -1 -1 -1 -1 -1 0
`
	got, err := ReadSWF(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := []SWFJob{
		{ID: 1, Submit: 1100, Wait: 52645, Run: 10849, Nodes: 128, ReqTime: 10800},
		{ID: 3, Submit: 1300, Wait: 5, Run: 7172, Nodes: 256, ReqTime: -1}, // requested processors when allocated is unknown
		{ID: 5, Submit: 1400, Wait: 5, Run: 60, Nodes: 2, ReqTime: 120},    // "60.0" is a whole number
	}
	if got.MaxNodes != 4360 || got.Skipped != 2 || len(got.Jobs) != len(want) {
		t.Fatalf("got MaxNodes %d, %d skipped, %d jobs %+v; want 4360, 2 skipped (zero run time, unknown submit), %d jobs", got.MaxNodes, got.Skipped, len(got.Jobs), got.Jobs, len(want))
	}
	for i := range want {
		if got.Jobs[i] != want[i] {
			t.Errorf("job %d: got %+v, want %+v", i, got.Jobs[i], want[i])
		}
	}
}

func TestReadSWFErrorsNameLineAndField(t *testing.T) {
	const ok = "1 100 0 60 1 -1 -1 1 60 -1 0 -1 -1 -1 -1 -1 -1 0"
	for _, tc := range []struct{ name, log, want string }{
		{"short line", "; MaxNodes: 8\n1 2 3\n", "line 2: 3 fields, want 18"},
		{"not a number", ok + "\n1 x 0 60 1 -1 -1 1 60 -1 0 -1 -1 -1 -1 -1 -1 0\n", `line 2: field 2 (submit time): "x" is not a whole number`},
		{"fraction", "1 100 0 60 1.5 -1 -1 1 60 -1 0 -1 -1 -1 -1 -1 -1 0\n", `line 1: field 5 (allocated processors): "1.5"`},
		{"negative", "1 100 0 -7 1 -1 -1 1 60 -1 0 -1 -1 -1 -1 -1 -1 0\n", "field 4 (run time): -7 is out of range"},
		{"bad header", "; MaxNodes: many\n", "line 1: header MaxNodes"},
		{"huge size", "1 100 0 60 99999999999 -1 -1 1 60 -1 0 -1 -1 -1 -1 -1 -1 0\n", "field 5 (allocated processors)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSWF(strings.NewReader(tc.log))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrSWF) {
				t.Fatalf("got %v, want an ErrSWF containing %q", err, tc.want)
			}
		})
	}
}

// FuzzReadSWF: any input gives jobs the replay can use, or an error, never
// a panic.
func FuzzReadSWF(f *testing.F) {
	f.Add([]byte("; UnixStartTime: 0\n; MaxNodes: 4360\n1 1641021254 52645 10849 128 -1 -1 128 10800 -1 0 -1 -1 -1 -1 -1 -1 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		log, err := ReadSWF(strings.NewReader(string(b)))
		if err != nil {
			if !errors.Is(err, ErrSWF) || !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error %q: want an ErrSWF naming the line", err)
			}
			return
		}
		for _, j := range log.Jobs {
			if j.Run <= 0 || j.Nodes <= 0 || j.Nodes > maxSWFNodes || j.Submit < 0 || j.ReqTime < -1 {
				t.Fatalf("job %+v: not replayable", j)
			}
		}
		if log.MaxNodes < 0 || log.MaxNodes > maxSWFNodes {
			t.Fatalf("MaxNodes %d", log.MaxNodes)
		}
	})
}
