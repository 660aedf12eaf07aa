package client_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// Trials reads an inline campaign's trials (its records workflows and
// its own answer) as it reads a campaign's trial workflows: the same
// trials, in the same shape, through the same call. (It once returned
// nothing for an inline campaign.)
func TestTrialsListsInlineAndWorkflowCampaignsAlike(t *testing.T) {
	srv := testenv.DevServer(t, devserver.Options{})
	testenv.Worker(t, srv, taskQueue, nil)
	c := client.New(srv.Client(), client.Options{TaskQueue: taskQueue, Namespace: srv.Namespace()})

	lists := map[bool][]gleaner.TrialStatus{}
	for _, inline := range []bool{false, true} {
		name := map[bool]string{false: "per-workflow", true: "inline"}[inline]
		spec := mlpSpec(t, name, 5, 3, 40, 30)
		spec.Resources.MaxNodes = 1
		spec.Trial.Inline = inline
		if _, err := c.Submit(timeout(t, time.Minute), spec); err != nil {
			t.Fatalf("Submit %s: %v", name, err)
		}
		res, err := c.Wait(timeout(t, 3*time.Minute), name)
		if err != nil || res.Completed != 5 {
			t.Fatalf("Wait %s = %+v, %v; want 5 completed", name, res, err)
		}
		var trials []gleaner.TrialStatus
		eventually(t, 30*time.Second, name+": five trials", func() error {
			trials, err = c.Trials(timeout(t, time.Minute), name)
			if err == nil && len(trials) != 5 {
				err = fmt.Errorf("%d trials", len(trials))
			}
			return err
		})
		for i, s := range trials {
			if s.TrialID != fmt.Sprintf("t%05d", i+1) || s.State != gleaner.TrialCompleted || s.Step != 40 ||
				len(s.Params) != 7 || !s.ObjectiveSeen || len(s.History) == 0 || s.Runs != 1 {
				t.Errorf("%s: trial %d: %+v, want completed at step 40 with its 7 params, its objective and history", name, i, s)
			}
		}
		newest, err := c.TrialsNewest(timeout(t, time.Minute), name, 2)
		if err != nil || len(newest.Trials) != 2 || newest.Trials[1].TrialID != trials[4].TrialID {
			t.Errorf("%s: TrialsNewest(2) = %+v, %v; want the last two", name, newest.Trials, err)
		}
		if failed, err := c.FailedTrials(timeout(t, time.Minute), name, 0); err != nil || len(failed) != 0 {
			t.Errorf("%s: FailedTrials = %+v, %v; want none", name, failed, err)
		}
		t.Logf("%s: a trial sets %v", name, shape(t, trials[0]))
		lists[inline] = trials
	}
	for i := range lists[true] {
		if w, in := shape(t, lists[false][i]), shape(t, lists[true][i]); !slices.Equal(w, in) {
			t.Errorf("trial %d: a trial workflow's status has %v, an inline trial's %v", i, w, in)
		}
	}
}

// shape is the fields a trial's status sets, as JSON names.
func shape(t *testing.T, s gleaner.TrialStatus) []string {
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range m {
		if v == nil || v == 0.0 || v == "" || v == false {
			delete(m, k)
		}
	}
	return slices.Sorted(maps.Keys(m))
}
