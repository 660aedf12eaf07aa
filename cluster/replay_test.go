package cluster

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/data"
	"github.com/gleaner-hpc/gleaner/internal/idleevents"
)

var w0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func openSmall(t *testing.T, opts ReplayOptions) *ReplaySource {
	t.Helper()
	if opts.WallStart.IsZero() {
		opts.WallStart = w0
	}
	s, err := OpenReplaySource(filepath.Join("testdata", "replay-small.csv"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// idleAt renders Idle(now) as "local-0@+3s local-1@never", IdleUntil
// relative to w0.
func idleAt(t *testing.T, s *ReplaySource, now time.Time) string {
	t.Helper()
	nodes, err := s.Idle(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, n := range nodes {
		until := "never"
		if !n.IdleUntil.IsZero() {
			until = "+" + n.IdleUntil.Sub(w0).String()
		}
		parts = append(parts, n.ID+"@"+until)
	}
	return strings.Join(parts, " ")
}

func TestReplaySmallTrace(t *testing.T) {
	// Factor 10: one wall second is ten trace seconds; n1, n2, n3 are the
	// first distinct nodes, on local-0, local-1, local-2.
	s := openSmall(t, ReplayOptions{Slots: 3, Factor: 10})
	if got := s.TraceNodes(); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Errorf("TraceNodes %v", got)
	}
	cases := []struct {
		wall time.Duration
		want string
	}{
		{-time.Second, "local-0@+2s local-1@+0s"}, // before WallStart: the trace start, one second early
		{0, "local-0@+3s local-1@+1s"},
		{1500 * time.Millisecond, "local-0@+3s"},
		{2 * time.Second, "local-0@+3s local-2@+3s"},
		{3 * time.Second, ""},
		{4 * time.Second, "local-1@never"},
		{100 * time.Hour, "local-1@never"}, // after the end, the last state holds
	}
	for _, tc := range cases {
		if got := idleAt(t, s, w0.Add(tc.wall)); got != tc.want {
			t.Errorf("at +%v: %q, want %q", tc.wall, got, tc.want)
		}
	}
	if got := s.TraceTime(w0.Add(2 * time.Second)); got != time.Unix(1020, 0).UTC() {
		t.Errorf("TraceTime %v, want 1020", got)
	}
	if first, last := s.Span(); first.Unix() != 1000 || last.Unix() != 1040 {
		t.Errorf("Span %v..%v", first, last)
	}
}

func TestReplayOffsetLoopAndNodes(t *testing.T) {
	s := openSmall(t, ReplayOptions{Slots: 3, Factor: 10, Offset: 20 * time.Second})
	if got, want := idleAt(t, s, w0), "local-0@+1s local-2@+1s"; got != want {
		t.Errorf("offset 20s: %q, want %q", got, want)
	}

	// Looped, the trace lasts 41 s; n2 is idle at its end and at its start,
	// so it stays idle across the wrap until 1010 of the next pass.
	s = openSmall(t, ReplayOptions{Slots: 3, Factor: 10, Loop: true})
	for _, tc := range []struct {
		wall time.Duration
		want string
	}{
		{4 * time.Second, "local-1@+5.1s"},
		{4100 * time.Millisecond, "local-0@+7.1s local-1@+5.1s"},
		{4100*time.Millisecond + 41*time.Second, "local-0@+48.1s local-1@+46.1s"},
	} {
		if got := idleAt(t, s, w0.Add(tc.wall)); got != tc.want {
			t.Errorf("loop at +%v: %q, want %q", tc.wall, got, tc.want)
		}
	}

	// Looped, a node idle at the end of the trace but busy at its start
	// goes busy at the wrap.
	src := "1,idle,a\n2,idle,b\n5,busy,b\n7,idle,b\n"
	s, err := NewReplaySource(strings.NewReader(src), "inline", ReplayOptions{Nodes: []string{"b"}, Loop: true, WallStart: w0})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := idleAt(t, s, w0.Add(6*time.Second)), "local-0@+7s"; got != want {
		t.Errorf("wrap to busy: %q, want %q", got, want)
	}

	s = openSmall(t, ReplayOptions{Nodes: []string{"n3", "n1"}, Factor: 10, Type: "gpu"})
	nodes, _ := s.Idle(context.Background(), w0.Add(2*time.Second))
	want := []Node{{ID: "local-0", Type: "gpu", IdleUntil: w0.Add(3 * time.Second)}, {ID: "local-1", Type: "gpu", IdleUntil: w0.Add(3 * time.Second)}}
	if fmt.Sprint(nodes) != fmt.Sprint(want) {
		t.Errorf("configured nodes: %v, want %v", nodes, want)
	}
}

func TestReplayWallStartDefaultsToFirstCall(t *testing.T) {
	s, err := OpenReplaySource(filepath.Join("testdata", "replay-small.csv"), ReplayOptions{Slots: 3, Factor: 10})
	if err != nil {
		t.Fatal(err)
	}
	first := w0.Add(time.Hour)
	if got := s.TraceTime(first); got.Unix() != 1000 {
		t.Errorf("first call at trace %v, want 1000", got.Unix())
	}
	if got := s.TraceTime(first.Add(time.Second)); got.Unix() != 1010 {
		t.Errorf("one second later at trace %v, want 1010", got.Unix())
	}
}

func TestReplaySortsIDsAndMapsManySlots(t *testing.T) {
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, "%d,idle,node%02d\n", 100+i, i)
	}
	s, err := NewReplaySource(strings.NewReader(b.String()), "inline", ReplayOptions{Slots: 12, WallStart: w0})
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := s.Idle(context.Background(), w0.Add(time.Minute))
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	if len(ids) != 12 || !slices.IsSorted(ids) {
		t.Errorf("ids %v, want 12 sorted by id", ids)
	}
}

func TestReplayErrors(t *testing.T) {
	cases := []struct {
		name, src string
		opts      ReplayOptions
		want      string
	}{
		{"bad event", "1,idle,a\n2,wake,a\n", ReplayOptions{Slots: 1}, `line 2: field 2 (event): "wake" is neither idle nor busy`},
		{"bad time", "# c\nx,idle,a\n", ReplayOptions{Slots: 1}, `line 2: field 1 (unix_time): "x" is not a finite number`},
		{"fields", "1,idle\n", ReplayOptions{Slots: 1}, "line 1: 2 comma-separated fields"},
		{"no nodes", "1,idle, \n", ReplayOptions{Slots: 1}, "line 1: field 3 (nodes): no node"},
		{"too few nodes", "1,idle,a b\n", ReplayOptions{Slots: 3}, "3 requested but the trace names only 2 nodes"},
		{"unknown node", "1,idle,a b\n", ReplayOptions{Nodes: []string{"a", "zz"}}, `nodes: "zz" has no events`},
		{"empty", "# only a comment\n", ReplayOptions{Slots: 1}, "no events"},
		{"no slots", "1,idle,a\n", ReplayOptions{}, "slots: set the number"},
		{"factor", "1,idle,a\n", ReplayOptions{Slots: 1, Factor: -2}, "factor: -2"},
		{"offset", "1,idle,a\n", ReplayOptions{Slots: 1, Offset: -time.Second}, "offset: -1s"},
		{"nodes vs slots", "1,idle,a\n", ReplayOptions{Slots: 2, Nodes: []string{"a"}}, "1 trace nodes for 2 slots"},
		{"long line", "1,idle," + strings.Repeat("a", idleevents.MaxLineBytes) + "\n", ReplayOptions{Slots: 1}, "line 1: longer than"},
		{"time goes back", "5,idle,a\n4,busy,a\n", ReplayOptions{Slots: 1}, "line 2: field 1 (unix_time): 4 is before the previous event's 5"},
		{"negative time", "-5,idle,a\n", ReplayOptions{Slots: 1}, "line 1: field 1 (unix_time): -5 is not a unix time in seconds"},
	}
	for _, tc := range cases {
		_, err := NewReplaySource(strings.NewReader(tc.src), "t.csv", tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.csv") {
			t.Errorf("%s: error %v, want it to name t.csv and contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := OpenReplaySource(filepath.Join(t.TempDir(), "missing.csv"), ReplayOptions{Slots: 1}); err == nil {
		t.Error("missing file accepted")
	}
	missing := data.Prefix + "traces/missing.csv"
	if _, err := OpenReplaySource(missing, ReplayOptions{Slots: 1}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing built-in trace: error %v, want it to name %s", err, missing)
	}
}

// summitTrace is the built-in Summit trace, as a user names it on the
// command line.
const summitTrace = data.Prefix + data.SummitIdle

// On the real Summit trace, compressed 600×, slots do come and go within a
// minute of wall time, and IdleUntil says when each goes.
func TestReplaySummitTrace(t *testing.T) {
	const k = 8
	s, err := OpenReplaySource(summitTrace, ReplayOptions{Slots: k, Factor: 600, WallStart: w0})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.TraceNodes(); len(got) != k || got[0] != "h50n16" {
		t.Errorf("TraceNodes %v, want the first %d distinct nodes, h50n16 first", got, k)
	}
	step := 100 * time.Millisecond // one trace minute
	prev := map[string]Node{}
	joins, leaves := 0, 0
	for now := w0; !now.After(w0.Add(time.Minute)); now = now.Add(step) {
		nodes, err := s.Idle(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		cur := map[string]Node{}
		for _, n := range nodes {
			cur[n.ID] = n
			if _, ok := prev[n.ID]; !ok {
				joins++
			}
			if !n.IdleUntil.IsZero() && !n.IdleUntil.After(now) {
				t.Fatalf("%s idle at %v until %v", n.ID, now, n.IdleUntil)
			}
		}
		for id, n := range prev {
			if _, ok := cur[id]; !ok {
				leaves++
				// It left no earlier than announced, and within one step of it.
				if n.IdleUntil.IsZero() || n.IdleUntil.After(now) || now.Sub(n.IdleUntil) > step {
					t.Errorf("%s left at %v, announced IdleUntil %v", id, now.Sub(w0), n.IdleUntil.Sub(w0))
				}
			}
		}
		prev = cur
	}
	if joins == 0 || leaves == 0 {
		t.Errorf("in 10 trace hours: %d joins, %d leaves; want nodes to come and go", joins, leaves)
	}
	t.Logf("first %d Summit nodes at 600x over 60 s wall: %d joins, %d leaves", k, joins, leaves)
}

func FuzzReplayParse(f *testing.F) {
	f.Add([]byte("1000,idle,n1 n2\n1010,busy,n2\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, loop bool) {
		s, err := NewReplaySource(bytes.NewReader(data), "fuzz", ReplayOptions{Slots: 1, Factor: 7, Loop: loop, WallStart: w0})
		if err != nil {
			if !strings.Contains(err.Error(), "replay fuzz") {
				t.Fatalf("error does not name the source: %v", err)
			}
			return
		}
		for _, d := range []time.Duration{0, time.Millisecond, time.Second, time.Hour, 1 << 62} {
			now := w0.Add(d)
			nodes, err := s.Idle(context.Background(), now)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) > 1 || (len(nodes) == 1 && nodes[0].ID != "local-0") {
				t.Fatalf("Idle = %v from one slot", nodes)
			}
			for _, n := range nodes {
				if !n.IdleUntil.IsZero() && n.IdleUntil.Before(now) {
					t.Fatalf("IdleUntil %v before now %v", n.IdleUntil, now)
				}
			}
		}
	})
}
