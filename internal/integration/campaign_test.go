package integration_test

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

var (
	mlpOnce sync.Once
	mlpPath string
	mlpErr  error
)

// goMLP builds the Go example trainer once and returns its path.
func goMLP(t testing.TB) string {
	t.Helper()
	mlpOnce.Do(func() {
		mlpPath = filepath.Join(binDir, "go-mlp")
		cmd := exec.Command("go", "build", "-o", mlpPath, "github.com/gleaner-hpc/gleaner/examples/go-mlp")
		if out, err := cmd.CombinedOutput(); err != nil {
			mlpErr = fmt.Errorf("go build ./examples/go-mlp: %w\n%s", err, out)
		}
	})
	if mlpErr != nil {
		t.Fatal(mlpErr)
	}
	return mlpPath
}

// fixed is a search dimension with one value: how a spec passes a constant
// parameter to every trial.
func fixed(name, value string) hpo.Param {
	return hpo.Param{Name: name, Type: hpo.ParamChoice, Choices: []string{value}}
}

// mlpSpec is a campaign of go-mlp trials of `steps` steps, each step_ms
// long, checkpointing every 10 steps; extra dimensions are appended.
func mlpSpec(t testing.TB, name string, trials, concurrent, steps, stepMS int, extra ...hpo.Param) gleaner.CampaignSpec {
	space := hpo.Space{
		{Name: "lr", Type: hpo.ParamFloat, Min: 0.01, Max: 0.5, Log: true},
		{Name: "hidden", Type: hpo.ParamInt, Min: 4, Max: 32},
		fixed("batch", "32"),
		fixed("steps", fmt.Sprint(steps)),
		fixed("step_ms", fmt.Sprint(stepMS)),
		fixed("report_every", "5"),
		fixed("checkpoint_every", "10"),
	}
	return gleaner.CampaignSpec{
		Name:      name,
		Pool:      name,
		Command:   []string{goMLP(t)},
		Space:     append(space, extra...),
		Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"},
		Budget:    gleaner.Budget{MaxTrials: trials, MaxConcurrent: concurrent},
		Resources: gleaner.Resources{MinNodes: 1, MaxNodes: 2},
		Trial:     gleaner.TrialPolicy{GracePeriod: gleaner.Duration(5 * time.Second), MaxRestarts: 2},
	}
}

// fastPool makes pools started by this worker poll and decide quickly.
var fastPool = workflows.PoolInput{PollInterval: 500 * time.Millisecond, Debounce: 200 * time.Millisecond, AllocatePeriod: 5 * time.Second}

// inProcessWorker runs worker.Build's components in the test process, with
// an optional node source in place of the configured one.
func inProcessWorker(t testing.TB, srv *devserver.Server, tq string, src cluster.NodeSource) worker.Config {
	t.Helper()
	cfg := workerConfig(t, srv, tq)
	comps, cleanup, err := worker.Build(testContext(t, time.Minute), cfg)
	if err != nil {
		t.Fatalf("worker.Build: %v", err)
	}
	t.Cleanup(cleanup)
	comps.ActivityDeps.Pool = fastPool
	if src != nil {
		comps.ActivityDeps.Default = src
	}
	startInProcessWorker(t, srv, cfg, comps)
	return cfg
}

func startCampaign(t testing.TB, c client.Client, tq string, spec gleaner.CampaignSpec) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(testContext(t, time.Minute), client.StartWorkflowOptions{
		ID: workflows.CampaignWorkflowID(spec.Name), TaskQueue: tq,
	}, workflows.CampaignWorkflowName, workflows.CampaignInput{Spec: spec})
	if err != nil {
		t.Fatalf("starting campaign %s: %v", spec.Name, err)
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
			t.Fatalf("trial %s: %v", id, err)
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

// (a) A campaign of 20 real trials completes, and its leaderboard is the
// trials' own final val_loss, best first.
func TestCampaignOfTwentyTrialsCompletes(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	inProcessWorker(t, srv, "campaign-a", nil)
	spec := mlpSpec(t, "twenty", 20, 4, 40, 5)
	res := campaignResult(t, startCampaign(t, srv.Client(), "campaign-a", spec), 5*time.Minute)

	if res.State != workflows.CampaignCompleted || res.Completed != 20 || res.Failed != 0 {
		t.Fatalf("result %s %+v, want 20 completed", res.State, res.CampaignCounts)
	}
	reports := trialReports(t, srv.Client(), spec.Name, 20)
	type scored struct {
		id    string
		score float64
	}
	var want []scored
	for _, r := range reports {
		if r.State != workflows.TrialCompleted {
			t.Errorf("trial %s: %s (%s)", r.TrialID, r.State, r.Error)
		}
		v, ok := r.Metrics["val_loss"]
		if !ok || math.IsNaN(v) {
			t.Fatalf("trial %s reported no val_loss: %v", r.TrialID, r.Metrics)
		}
		want = append(want, scored{r.TrialID, v})
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i].score < want[j].score })
	if len(res.Leaderboard) != 10 {
		t.Fatalf("leaderboard has %d entries, want 10", len(res.Leaderboard))
	}
	for i, e := range res.Leaderboard {
		if e.TrialID != want[i].id || e.Score != want[i].score {
			t.Errorf("leaderboard[%d] = %s %.6g, want %s %.6g", i, e.TrialID, e.Score, want[i].id, want[i].score)
		}
	}
	if res.Best == nil || res.Best.TrialID != want[0].id {
		t.Errorf("best %+v, want %s", res.Best, want[0].id)
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
	inProcessWorker(t, srv, "campaign-b", nodes)
	spec := mlpSpec(t, "preempt", 1, 1, 600, 20)
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
	inProcessWorker(t, srv, "campaign-c", nodes)
	spec := mlpSpec(t, "resize", 1, 1, 600, 20)
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
