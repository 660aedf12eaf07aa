package integration_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// An inline campaign (trial.inline) on a real server: 30 go-mlp trials, 6
// in flight on the worker's 4 slots, run as activities of the campaign.
// Every trial completes with its own val_loss, the best is theirs, the
// campaign leaves its pool, and every
// trial is readable afterwards from the records workflows (chunks of 7)
// and the campaign: all of them, or the newest few.
func TestInlineCampaignCompletesAndKeepsEveryTrial(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	testenv.Worker(t, srv, "inline", nil)
	spec := testenv.MLPSpec(t, "inline", 30, 6, 10, 10)
	spec.Resources.MaxNodes = 1
	spec.Trial.Inline = true
	run := startCampaignInput(t, srv.Client(), "inline", workflows.CampaignInput{Spec: spec, Tuning: &workflows.Tuning{RecordsChunk: 7}})
	var res workflows.CampaignResult
	// On a timeout, say where the campaign, its pool and its trials stand.
	if err := run.Get(testContext(t, time.Minute), &res); err != nil {
		c := client.New(srv.Client(), client.Options{TaskQueue: "inline", Namespace: srv.Namespace(), UIBase: "-"})
		st, _ := c.Status(testContext(t, 10*time.Second), spec.Name)
		ps, _ := c.PoolStatus(testContext(t, 10*time.Second), spec.Pool)
		v, _ := srv.Client().QueryWorkflow(testContext(t, 10*time.Second), run.GetID(), "", workflows.QueryTrials)
		var live []workflows.TrialStatus
		if v != nil {
			_ = v.Get(&live)
		}
		t.Logf("campaign status: %+v", st)
		t.Logf("pool: %d nodes, trials %+v, releasing %+v", len(ps.Nodes), ps.Trials, ps.Releasing)
		for _, l := range live {
			t.Logf("in flight: %s %s, %d runs, nodes %v", l.TrialID, l.State, l.Runs, l.Nodes)
		}
		t.Fatalf("campaign: %v", err)
	}
	if res.State != workflows.CampaignCompleted || res.Completed != 30 || res.Failed != 0 {
		t.Fatalf("result %s %+v (%s), want 30 completed", res.State, res.CampaignCounts, res.Reason)
	}

	c := client.New(srv.Client(), client.Options{TaskQueue: "inline", Namespace: srv.Namespace(), UIBase: "-"})
	list, err := c.TrialsNewest(testContext(t, time.Minute), spec.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	trials := list.Trials
	if len(trials) != 30 {
		t.Fatalf("%d trials readable, want 30", len(trials))
	}
	best := math.Inf(1)
	for i, tr := range trials {
		if want := fmt.Sprintf("t%05d", i+1); tr.TrialID != want {
			t.Errorf("trials[%d] = %s, want %s", i, tr.TrialID, want)
		}
		v, ok := tr.Metrics["val_loss"]
		if tr.State != workflows.TrialCompleted || !ok || tr.Samples <= 0 || tr.Runs != 1 {
			t.Errorf("trial %s: %s, val_loss %v (%v), %v samples, %d runs", tr.TrialID, tr.State, v, ok, tr.Samples, tr.Runs)
		}
		best = math.Min(best, v)
	}
	if res.Best == nil || res.Best.Score != best {
		t.Errorf("best %+v, want val_loss %v", res.Best, best)
	}
	l5, err := c.TrialsNewest(testContext(t, time.Minute), spec.Name, 5)
	if err != nil {
		t.Fatal(err)
	}
	newest := l5.Trials
	if len(newest) != 5 || newest[0].TrialID != "t00026" || newest[4].TrialID != "t00030" {
		t.Errorf("newest 5: %v", trialIDs(newest))
	}
	// A client that cannot wait for the campaign reads its memo snapshot:
	// the final status and the top of the leaderboard.
	defer func(d time.Duration) { client.QueryPatience = d }(client.QueryPatience)
	client.QueryPatience = 0
	st, err := c.Status(testContext(t, time.Minute), spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if st.AsOf.IsZero() || st.State != workflows.CampaignCompleted || st.Completed != 30 || st.Best == nil || st.Best.Score != best {
		t.Errorf("status from the snapshot: %+v", st)
	}
	lb, err := c.Leaderboard(testContext(t, time.Minute), spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(lb) != 10 || lb[0].Score != best {
		t.Errorf("leaderboard from the snapshot: %d entries %+v, want 10 from val_loss %v", len(lb), lb, best)
	}
	// trials lists the chunks alone, and says so; an ended campaign's
	// chunks hold every trial.
	busy, err := c.TrialsNewest(testContext(t, time.Minute), spec.Name, 0)
	if err != nil || !busy.Busy || len(busy.Trials) != 30 {
		t.Errorf("trials of a campaign that does not answer: busy %v, %d trials, %v; want busy, 30", busy.Busy, len(busy.Trials), err)
	}
	client.QueryPatience = time.Minute
	// The pool no longer counts the campaign.
	waitFor(t, time.Minute, "the campaign to leave its pool", func() (bool, error) {
		ps, err := c.PoolStatus(testContext(t, 10*time.Second), spec.Pool)
		return err == nil && len(ps.Trials) == 0, err
	})
}

func trialIDs(ts []workflows.TrialStatus) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.TrialID)
	}
	return out
}
