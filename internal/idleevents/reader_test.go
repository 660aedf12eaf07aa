package idleevents

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func readAll(t *testing.T, src string) ([]Event, *Reader, error) {
	t.Helper()
	r := NewReader(strings.NewReader(src))
	var evs []Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs, r, nil
		}
		if err != nil {
			return evs, r, err
		}
		evs = append(evs, ev)
	}
}

func TestReadsEventsCommentsAndHeader(t *testing.T) {
	src := "# Summit, 4 nodes\n\nunix_time,event,nodes\n10,idle, a b \n10.5 , busy ,a\n\n# later\n20,idle,c\n"
	evs, r, err := readAll(t, src)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Line: 4, Time: 10, Idle: true, Nodes: []string{"a", "b"}},
		{Line: 5, Time: 10.5, Nodes: []string{"a"}},
		{Line: 8, Time: 20, Idle: true, Nodes: []string{"c"}},
	}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events\n got %+v\nwant %+v", evs, want)
	}
	if r.Lines() != 8 || r.DeclaredNodes() != 4 || !r.EndedWithNewline() {
		t.Errorf("lines %d, declared %d, newline %v; want 8, 4, true", r.Lines(), r.DeclaredNodes(), r.EndedWithNewline())
	}
}

func TestLastLineWithoutNewline(t *testing.T) {
	evs, r, err := readAll(t, "1,idle,a\n2,busy,a")
	if err != nil || len(evs) != 2 || r.Lines() != 2 || r.EndedWithNewline() {
		t.Errorf("%d events, %d lines, newline %v, error %v; want 2, 2, false, nil", len(evs), r.Lines(), r.EndedWithNewline(), err)
	}
	if _, r, _ := readAll(t, ""); r.Lines() != 0 || !r.EndedWithNewline() {
		t.Errorf("empty input: %d lines, newline %v", r.Lines(), r.EndedWithNewline())
	}
}

func TestErrorsNameTheLineAndField(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"1,idle,a\n1,busy\n", "line 2: 2 comma-separated fields, want 3 (unix_time,event,nodes)"},
		{"unix_time,event,nodes\n1,idle,a\nx,busy,a\n", `line 3: field 1 (unix_time): "x" is not a finite number`},
		{"Inf,idle,a\n", `line 1: field 1 (unix_time): "Inf" is not a finite number`},
		{"1,idle,a\n2,free,a\n", `line 2: field 2 (event): "free" is neither idle nor busy`},
		{"# c\n1,idle,a\n2,busy,  \n", "line 3: field 3 (nodes): no node"},
		{"5,idle,a\n4,busy,a\n", "line 2: field 1 (unix_time): 4 is before the previous event's 5"},
		{"1,idle,a\nunix_time,event,nodes\n", `line 2: field 1 (unix_time): "unix_time" is not a finite number`},
		{"1,idle,a\n2,busy," + strings.Repeat("n", MaxLineBytes) + "\n", "line 2: longer than 1048576 bytes"},
	} {
		_, _, err := readAll(t, c.src)
		if err == nil || err.Error() != c.want {
			t.Errorf("%.40q: error %v, want %q", c.src, err, c.want)
		}
	}
}

// A line of exactly MaxLineBytes, its newline included, is read.
func TestLongestLine(t *testing.T) {
	prefix := "1,idle,"
	name := strings.Repeat("n", MaxLineBytes-len(prefix)-1)
	evs, _, err := readAll(t, prefix+name+"\n")
	if err != nil || len(evs) != 1 || evs[0].Nodes[0] != name {
		t.Errorf("%d events, error %v; want the one event", len(evs), err)
	}
}
