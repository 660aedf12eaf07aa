package gleaner_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
)

// FailedTrialReport finds the final report in a failed trial's error
// without importing Temporal: it names Temporal's application error by
// its methods. These are the errors Temporal hands a client or a parent.
func TestFailedTrialReport(t *testing.T) {
	final := gleaner.TrialReport{TrialID: "t00007", State: gleaner.TrialFailed, Final: true, Error: "exit 3"}
	failed := temporal.NewNonRetryableApplicationError("trial failed", gleaner.ErrTypeTrialFailed, nil, final)
	for _, c := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"the workflow's error", failed, true},
		{"wrapped", fmt.Errorf("child workflow: %w", failed), true},
		{"another application error", temporal.NewNonRetryableApplicationError("x", "InvalidTrial", nil, final), false},
		{"a report that is not final", temporal.NewApplicationError("trial failed", gleaner.ErrTypeTrialFailed,
			gleaner.TrialReport{TrialID: "t00007"}), false},
		{"no details", temporal.NewApplicationError("trial failed", gleaner.ErrTypeTrialFailed), false},
		{"not Temporal's", errors.New("trial failed"), false},
		{"canceled", temporal.NewCanceledError(final), false},
	} {
		r, ok := gleaner.FailedTrialReport(c.err)
		if ok != c.ok || (ok && (r.TrialID != final.TrialID || r.Error != final.Error)) {
			t.Errorf("%s: got %+v, %v; want ok=%v", c.name, r, ok, c.ok)
		}
	}
}

// A timeline carried in a parked trial's resume is written compactly and
// read back the same: hand-written cases, then seeded random ones
// (decode ∘ encode = identity). Spans it cannot write compactly go as an
// array of spans and come back the same too.
func TestTrialTimelineRoundTrips(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 123e6, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	ascending := gleaner.TrialTimeline{
		{From: at(0), State: gleaner.TrialPending, Why: gleaner.SpanStart},
		{From: at(time.Second), State: gleaner.TrialRunning, Nodes: 2, Why: gleaner.SpanStart},
		{From: at(2 * time.Second), State: gleaner.TrialRunning, Nodes: 12, Why: gleaner.SpanRescale},
		{From: at(3 * time.Second), State: gleaner.TrialPaused, Why: gleaner.SpanPreempt},
		{From: at(time.Hour), State: gleaner.TrialRunning, Nodes: 1, Why: gleaner.SpanResume},
		{From: at(time.Hour), State: gleaner.TrialCompleted, Why: gleaner.SpanEnd},
	}
	for _, c := range []struct {
		name    string
		tl      gleaner.TrialTimeline
		compact string // "": written as an array
	}{
		{"a trial's life", ascending, `"1767268800123p0S,1000r2S,1000r12R,1000a0P,3597000r1U,0c0E"`},
		{"a start before the one before it", gleaner.TrialTimeline{
			{From: at(time.Second), State: gleaner.TrialPaused, Why: gleaner.SpanPause},
			{From: at(0), State: gleaner.TrialStopped}}, `"1767268801123a0A,-1000s0-"`},
		{"before 1970", gleaner.TrialTimeline{{From: time.UnixMilli(-5).UTC(), State: gleaner.TrialFailed, Why: gleaner.SpanEnd}}, `"-5f0E"`},
		{"empty", gleaner.TrialTimeline{}, `""`},
		{"finer than a millisecond", gleaner.TrialTimeline{{From: t0.Add(time.Microsecond), State: gleaner.TrialRunning}}, ""},
		{"not in UTC", gleaner.TrialTimeline{{From: t0.In(time.FixedZone("CET", 3600)), State: gleaner.TrialRunning}}, ""},
		{"an unknown why", gleaner.TrialTimeline{{From: t0, State: gleaner.TrialRunning, Why: "moved"}}, ""},
		{"an unknown state", gleaner.TrialTimeline{{From: t0, State: "parked"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.tl)
			if err != nil {
				t.Fatal(err)
			}
			if c.compact != "" && string(b) != c.compact {
				t.Errorf("written %s, want %s", b, c.compact)
			}
			if c.compact == "" && !strings.HasPrefix(string(b), "[") {
				t.Errorf("written %s, want an array of spans", b)
			}
			var back gleaner.TrialTimeline
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("reading %s: %v", b, err)
			}
			if len(c.tl) == 0 {
				if len(back) != 0 {
					t.Errorf("read back %v, want none", back)
				}
				return
			}
			if !sameSpans(back, c.tl) {
				t.Errorf("read back %v\nwant        %v", back, c.tl)
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	states := []gleaner.TrialState{gleaner.TrialPending, gleaner.TrialRunning, gleaner.TrialPaused, gleaner.TrialCompleted, gleaner.TrialStopped, gleaner.TrialFailed}
	whys := []string{"", gleaner.SpanStart, gleaner.SpanRescale, gleaner.SpanPreempt, gleaner.SpanResume, gleaner.SpanPause, gleaner.SpanRestart, gleaner.SpanEnd}
	for i := range 200 {
		var tl gleaner.TrialTimeline
		from := time.UnixMilli(rng.Int64N(4e12) - 1e12).UTC()
		for range 1 + rng.IntN(gleaner.TrialSpansMax) {
			from = from.Add(time.Duration(rng.Int64N(1e7)-1e6) * time.Millisecond)
			tl = append(tl, gleaner.TrialSpan{From: from, State: states[rng.IntN(len(states))], Nodes: rng.IntN(300), Why: whys[rng.IntN(len(whys))]})
		}
		b, err := json.Marshal(tl)
		if err != nil || b[0] != '"' {
			t.Fatalf("case %d: written %.80s…, %v; want a string", i, b, err)
		}
		var back gleaner.TrialTimeline
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tl) {
			t.Fatalf("case %d: %s read back %v, %v", i, b, back, err)
		}
		if per := len(b) / len(tl); len(tl) >= 8 && per > 16 {
			t.Errorf("case %d: %d bytes a span", i, per)
		}
	}
}

// sameSpans compares spans by instant (JSON keeps a zone's offset, not
// its name).
func sameSpans(a, b gleaner.TrialTimeline) bool {
	return slices.EqualFunc(a, b, func(x, y gleaner.TrialSpan) bool {
		return x.From.Equal(y.From) && x.State == y.State && x.Nodes == y.Nodes && x.Why == y.Why
	})
}

// A timeline string that is not one names the span and what is wrong.
func TestTrialTimelineRejectsWhatItDidNotWrite(t *testing.T) {
	for text, want := range map[string]string{
		`"1000"`:        `span 1 "1000": no state`,
		`"p0S"`:         `span 1 "p0S": start`,
		`"1000x0S"`:     `span 1 "1000x0S": state: unknown letter 'x'`,
		`"1000p0S,5r"`:  `span 2 "5r": want the nodes`,
		`"1000pS"`:      `span 1 "1000pS": nodes`,
		`"1000p1Z"`:     `span 1 "1000p1Z": why: unknown letter 'Z'`,
		`"1000p1SS"`:    `span 1 "1000p1SS": want the nodes`,
		`"1000p0S,,"`:   `span 2 "": no state`,
		`"--1p0S"`:      `span 1 "--1p0S": start`,
		`"-p0S"`:        `span 1 "-p0S": start`,
		`"1000p0S,1r-"`: `span 2 "1r-": nodes`,
	} {
		var tl gleaner.TrialTimeline
		err := json.Unmarshal([]byte(text), &tl)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", text, err, want)
		}
	}
}

// A segment that continues a parked trial begins with its timeline.
func TestTrialResumeCarriesTheTimeline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := gleaner.TrialResume{Owner: "o", Runs: 2, Started: t0, SpansDropped: 3,
		Spans: gleaner.TrialTimeline{{From: t0, State: gleaner.TrialCompleted, Why: gleaner.SpanEnd}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back gleaner.TrialResume
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("%s read back %+v, %v", b, back, err)
	}
	p := back.Progress()
	if !p.Started.Equal(t0) || p.SpansDropped != 3 || !reflect.DeepEqual(p.Spans, []gleaner.TrialSpan(r.Spans)) || !p.Ended.IsZero() {
		t.Errorf("progress %+v", p)
	}
	p.Spans[0].Why = "changed"
	if r.Spans[0].Why != gleaner.SpanEnd {
		t.Error("the progress shares its spans with the resume")
	}
}
