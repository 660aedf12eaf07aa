package integration_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

func startCampaign(t testing.TB, c client.Client, tq string, spec gleaner.CampaignSpec) client.WorkflowRun {
	t.Helper()
	return startCampaignInput(t, c, tq, workflows.CampaignInput{Spec: spec})
}

// startCampaignInput starts a campaign with its whole input (a Tuning).
func startCampaignInput(t testing.TB, c client.Client, tq string, in workflows.CampaignInput) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(testContext(t, time.Minute), client.StartWorkflowOptions{
		ID: workflows.CampaignWorkflowID(in.Spec.Name), TaskQueue: tq,
	}, workflows.CampaignWorkflowName, in)
	if err != nil {
		t.Fatalf("starting campaign %s: %v", in.Spec.Name, err)
	}
	return run
}

func campaignResult(t testing.TB, run client.WorkflowRun, timeout time.Duration) workflows.CampaignResult {
	t.Helper()
	var res workflows.CampaignResult
	if err := run.Get(testContext(t, timeout), &res); err != nil {
		t.Fatalf("campaign %s: %v", run.GetID(), err)
	}
	return res
}

// trialReports fetches every trial's own final report.
func trialReports(t testing.TB, c client.Client, campaign string, n int) []workflows.TrialReport {
	t.Helper()
	var out []workflows.TrialReport
	for i := 1; i <= n; i++ {
		var r workflows.TrialReport
		id := workflows.TrialWorkflowID(workflows.CampaignWorkflowID(campaign), i)
		if err := c.GetWorkflow(testContext(t, time.Minute), id, "").Get(testContext(t, time.Minute), &r); err != nil {
			// A failed trial's workflow fails, its report in the error.
			failed, ok := workflows.FailedTrialReport(err)
			if !ok {
				t.Fatalf("trial %s: %v", id, err)
			}
			r = failed
		}
		out = append(out, r)
	}
	return out
}

func trialStatus(t testing.TB, c client.Client, wfID string) (workflows.TrialStatus, error) {
	v, err := c.QueryWorkflow(testContext(t, 10*time.Second), wfID, "", workflows.QueryStatus)
	if err != nil {
		return workflows.TrialStatus{}, err
	}
	var s workflows.TrialStatus
	return s, v.Get(&s)
}

// (a) A campaign of 20 real trials completes, and its leaderboard ranks
// them by the best val_loss each reported, best first: each entry's latest
// is the trial's own final val_loss, its score no worse than that, and no
// trial left off the board ended better than the last one on it.
func TestCampaignOfTwentyTrialsCompletes(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	testenv.Worker(t, srv, "campaign-a", nil)
	spec := testenv.MLPSpec(t, "twenty", 20, 4, 40, 5)
	res := campaignResult(t, startCampaign(t, srv.Client(), "campaign-a", spec), 5*time.Minute)

	if res.State != workflows.CampaignCompleted || res.Completed != 20 || res.Failed != 0 {
		t.Fatalf("result %s %+v, want 20 completed", res.State, res.CampaignCounts)
	}
	final := map[string]float64{}
	for _, r := range trialReports(t, srv.Client(), spec.Name, 20) {
		if r.State != workflows.TrialCompleted {
			t.Errorf("trial %s: %s (%s)", r.TrialID, r.State, r.Error)
		}
		v, ok := r.Metrics["val_loss"]
		if !ok || math.IsNaN(v) {
			t.Fatalf("trial %s reported no val_loss: %v", r.TrialID, r.Metrics)
		}
		final[r.TrialID] = v
	}
	if len(res.Leaderboard) != 10 {
		t.Fatalf("leaderboard has %d entries, want 10", len(res.Leaderboard))
	}
	listed := map[string]bool{}
	for i, e := range res.Leaderboard {
		listed[e.TrialID] = true
		if e.Latest != final[e.TrialID] {
			t.Errorf("leaderboard[%d] %s latest %.6g, want its final val_loss %.6g", i, e.TrialID, e.Latest, final[e.TrialID])
		}
		if e.Score > e.Latest {
			t.Errorf("leaderboard[%d] %s score %.6g is worse than its latest %.6g", i, e.TrialID, e.Score, e.Latest)
		}
		if i > 0 && e.Score < res.Leaderboard[i-1].Score {
			t.Errorf("leaderboard[%d] %s %.6g ranks below a worse score %.6g", i, e.TrialID, e.Score, res.Leaderboard[i-1].Score)
		}
	}
	last := res.Leaderboard[len(res.Leaderboard)-1].Score
	for id, v := range final {
		if !listed[id] && v < last {
			t.Errorf("trial %s ended at %.6g, better than the board's last %.6g, yet is not on it", id, v, last)
		}
	}
	if res.Best == nil || res.Best.TrialID != res.Leaderboard[0].TrialID || res.Best.Score != res.Leaderboard[0].Score {
		t.Errorf("best %+v, want the board's first %+v", res.Best, res.Leaderboard[0])
	}
}

// nodeSet is a node source the test drives: nodes come and go on cue.
type nodeSet struct {
	mu    sync.Mutex
	nodes []cluster.Node
}

func newNodeSet(n int) *nodeSet {
	s := &nodeSet{}
	s.set(n)
	return s
}

// set makes slots local-0 … local-(n−1) idle.
func (s *nodeSet) set(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = nil
	for i := 0; i < n; i++ {
		s.nodes = append(s.nodes, cluster.Node{ID: cluster.SlotID(i), Type: cluster.CPUNodeType})
	}
}

func (s *nodeSet) Idle(context.Context, time.Time) ([]cluster.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nodes), nil
}

// waitTrial polls a trial's status until cond holds; on timeout it fails
// t showing the last status seen.
func waitTrial(t testing.TB, c client.Client, wfID string, timeout time.Duration, what string, cond func(workflows.TrialStatus) bool) workflows.TrialStatus {
	t.Helper()
	var last workflows.TrialStatus
	err := waitUntil(testContext(t, timeout), func() (bool, error) {
		s, err := trialStatus(t, c, wfID)
		if err != nil {
			return false, nil // not started yet
		}
		last = s
		return cond(s), nil
	})
	if err != nil {
		t.Logf("history of %s:\n%s", wfID, historyDump(t, c, wfID))
		t.Fatalf("waiting for %s: %v; last status: %+v", what, err, last)
	}
	return last
}

// historyDump lists a workflow's events (time, type, signal or activity
// name) for failure messages.
func historyDump(t testing.TB, c client.Client, wfID string) string {
	var b strings.Builder
	it := c.GetWorkflowHistory(testContext(t, 30*time.Second), wfID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
			break
		}
		detail := ""
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil {
			detail = a.GetSignalName()
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			detail = a.GetActivityType().GetName()
		}
		if a := e.GetActivityTaskFailedEventAttributes(); a != nil {
			detail = a.GetFailure().GetMessage()
		}
		fmt.Fprintf(&b, "%s %3d %s %s\n", e.GetEventTime().AsTime().Format("15:04:05.000"), e.GetEventId(), e.GetEventType(), detail)
	}
	return b.String()
}

// (b) Nodes leave mid-trial: the trial checkpoints, waits at 0 nodes,
// resumes from the checkpoint when nodes return and finishes, training
// every sample exactly once (no more lost than one checkpoint interval).
func TestNodesLeaveMidTrialResumeFromCheckpoint(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	nodes := newNodeSet(2)
	testenv.Worker(t, srv, "campaign-b", nodes)
	spec := testenv.MLPSpec(t, "preempt", 1, 1, 600, 20)
	run := startCampaign(t, srv.Client(), "campaign-b", spec)
	trialID := workflows.TrialWorkflowID(run.GetID(), 1)

	before := waitTrial(t, srv.Client(), trialID, time.Minute, "the trial to train and checkpoint", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && s.Step >= 40 && s.Checkpoint != ""
	})
	nodes.set(0) // the batch scheduler takes every node back
	t.Cleanup(func() {
		if t.Failed() {
			v, err := srv.Client().QueryWorkflow(context.Background(), workflows.PoolWorkflowID(spec.Pool), "", workflows.QueryStatus)
			if err == nil {
				var ps workflows.PoolStatus
				_ = v.Get(&ps)
				t.Logf("pool status: %+v", ps)
			}
			s, _ := trialStatus(t, srv.Client(), trialID)
			t.Logf("trial status: %+v", s)
		}
	})
	paused := waitTrial(t, srv.Client(), trialID, time.Minute, "the trial to be preempted", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialPaused
	})
	if paused.Step < before.Step || paused.Checkpoint == "" {
		t.Fatalf("preempted at step %d with checkpoint %q; it was at step %d", paused.Step, paused.Checkpoint, before.Step)
	}
	nodes.set(2)
	res := campaignResult(t, run, 3*time.Minute)
	if res.Completed != 1 {
		t.Fatalf("result %+v", res)
	}
	final := trialReports(t, srv.Client(), spec.Name, 1)[0]
	if final.State != workflows.TrialCompleted || final.Restarts != 0 {
		t.Fatalf("final %+v", final)
	}
	// 600 steps × 32 samples, each trained once: the resumed run continued
	// from the checkpoint rather than from 0, and nothing was counted twice.
	if final.Samples != 600*32 {
		t.Errorf("samples %v, want %d", final.Samples, 600*32)
	}
	s, err := trialStatus(t, srv.Client(), trialID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rescales != 0 {
		t.Errorf("rescales %d: a resume after 0 nodes is a start", s.Rescales)
	}
}

// (c) Resize up and down mid-trial: the pool grows the trial when nodes
// join and shrinks it when they leave; each change relaunches it from a
// checkpoint and it finishes.
func TestResizeUpAndDownMidTrial(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	nodes := newNodeSet(1)
	testenv.Worker(t, srv, "campaign-c", nodes)
	spec := testenv.MLPSpec(t, "resize", 1, 1, 600, 20)
	spec.Resources = gleaner.Resources{MinNodes: 1, MaxNodes: 4}
	run := startCampaign(t, srv.Client(), "campaign-c", spec)
	trialID := workflows.TrialWorkflowID(run.GetID(), 1)

	waitTrial(t, srv.Client(), trialID, time.Minute, "the trial to run on 1 node", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && len(s.Nodes) == 1 && s.Step >= 20
	})
	nodes.set(4)
	waitTrial(t, srv.Client(), trialID, time.Minute, "the trial to grow to 4 nodes", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && len(s.Nodes) == 4 && s.Rescales >= 1
	})
	nodes.set(2)
	waitTrial(t, srv.Client(), trialID, time.Minute, "the trial to shrink to 2 nodes", func(s workflows.TrialStatus) bool {
		return s.State == workflows.TrialRunning && len(s.Nodes) == 2 && s.Rescales >= 2
	})
	res := campaignResult(t, run, 3*time.Minute)
	final := trialReports(t, srv.Client(), spec.Name, 1)[0]
	if res.Completed != 1 || final.State != workflows.TrialCompleted || final.Rescales < 2 {
		t.Fatalf("result %+v, trial %+v", res.CampaignCounts, final)
	}
	if final.Samples != 600*32 {
		t.Errorf("samples %v, want %d: every step trained once across resizes", final.Samples, 600*32)
	}
}
