package client_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// A TrialFollower lists what Trials lists, for either kind of campaign,
// and reads what cannot change (an inline campaign's records chunks, a
// closed trial workflow) once: read again, it asks only for the list,
// the status and what is in flight.
func TestTrialFollowerReadsWhatEndedOnce(t *testing.T) {
	srv := testenv.DevServer(t, devserver.Options{})
	testenv.Worker(t, srv, taskQueue, nil)
	c := client.New(srv.Client(), client.Options{TaskQueue: taskQueue, Namespace: srv.Namespace()})
	for _, inline := range []bool{false, true} {
		name := map[bool]string{false: "follow-workflows", true: "follow-inline"}[inline]
		spec := mlpSpec(t, name, 5, 3, 40, 30)
		spec.Resources.MaxNodes = 1
		spec.Trial.Inline = inline
		if _, err := c.Submit(timeout(t, time.Minute), spec); err != nil {
			t.Fatalf("Submit %s: %v", name, err)
		}
		f := c.FollowTrials(name)
		// While it runs: every read lists what Trials would, classified.
		l, _, err := f.Read(timeout(t, time.Minute))
		if err != nil || l.Status == nil || l.Spec.Name != name {
			t.Fatalf("%s: Read while running = %+v, %v", name, l, err)
		}
		if res, err := c.Wait(timeout(t, 3*time.Minute), name); err != nil || res.Completed != 5 {
			t.Fatalf("Wait %s = %+v, %v; want 5 completed", name, res, err)
		}
		var first client.FollowStats
		eventually(t, 30*time.Second, name+": five trials", func() error {
			l, first, err = f.Read(timeout(t, time.Minute))
			if err == nil && len(l.Trials) != 5 {
				err = fmt.Errorf("%d trials", len(l.Trials))
			}
			return err
		})
		for _, tr := range l.Trials {
			if tr.State != gleaner.TrialCompleted || tr.Started.IsZero() || tr.Ended.Before(tr.Started) || len(tr.Spans) == 0 || len(tr.History) == 0 {
				t.Errorf("%s: %s = %+v; want completed with its times, spans and history", name, tr.TrialID, tr)
			}
		}
		again, st, err := f.Read(timeout(t, time.Minute))
		if err != nil || len(again.Trials) != 5 {
			t.Fatalf("%s: read again = %d trials, %v", name, len(again.Trials), err)
		}
		if st.Calls() != 0 {
			t.Errorf("%s: read again made %+v (first read after the end: %+v); want none: the campaign's workflow has closed", name, st, first)
		}
		t.Logf("%s: read after the end %+v, read again %+v", name, first, st)
	}
}
