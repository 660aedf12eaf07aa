package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gleaner-hpc/gleaner/internal/benchrun"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// runJSON runs the CLI and decodes its stdout both as a generic object
// (for the key contract) and into v.
func runJSON(t *testing.T, v any, args ...string) map[string]any {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := Run(args, &stdout, &stderr); err != nil {
		t.Fatalf("gleaner %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	var obj map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &obj); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		t.Fatal(err)
	}
	return obj
}

func requireKeys(t *testing.T, obj map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

func TestBenchCampaignTiny(t *testing.T) {
	testenv.SkipIfNoCLI(t)
	var r benchrun.CampaignReport
	obj := runJSON(t, &r, "bench", "campaign", "--trials", "6", "--concurrent", "3", "--nodes", "3",
		"--trial-seconds", "0.5", "--progress-every", "2s", "--json")
	requireKeys(t, obj, "trials", "concurrent", "nodes", "trial_seconds", "cpus", "state", "completed", "failed",
		"wall_seconds", "trials_per_second", "trials_per_second_per_core", "events_per_trial",
		"trial_event_types", "campaign_runs", "campaign_continued_as_new", "pool_runs", "pool_continued_as_new",
		"peak_history", "peak_history_run", "history_limit", "ray_tune", "per_core_vs_ray_tune")
	if r.State != "completed" || r.Completed != 6 || r.Failed != 0 || r.Stopped != 0 {
		t.Errorf("campaign %s: %d completed, %d failed, %d stopped; want 6 completed", r.State, r.Completed, r.Failed, r.Stopped)
	}
	if r.EventsPerTrial.N != 6 || !(r.EventsPerTrial.Mean > 0) || r.EventsPerTrial.Max < r.EventsPerTrial.Mean {
		t.Errorf("events per trial %+v", r.EventsPerTrial)
	}
	if !(r.WallSeconds > 0) || !(r.TrialsPerSecond > 0) || !(r.TrialsPerSecondPerCore > 0) || r.CPUs < 1 {
		t.Errorf("wall %v s, %v trials/s, %v per core, %d CPUs", r.WallSeconds, r.TrialsPerSecond, r.TrialsPerSecondPerCore, r.CPUs)
	}
	if len(r.CampaignRuns) != r.CampaignContinuedAsNew+1 || r.CampaignRuns[len(r.CampaignRuns)-1].Status != "completed" {
		t.Errorf("campaign runs %+v, %d continued as new", r.CampaignRuns, r.CampaignContinuedAsNew)
	}
	if len(r.PoolRuns) != r.PoolContinuedAsNew+1 || r.PoolRuns[len(r.PoolRuns)-1].Status != "running" {
		t.Errorf("pool runs %+v, %d continued as new", r.PoolRuns, r.PoolContinuedAsNew)
	}
	if r.PeakHistory < int64(r.EventsPerTrial.Max) || r.PeakHistoryRun.WorkflowID == "" || r.HistoryLimit != benchrun.HistoryLimit {
		t.Errorf("peak history %d (%+v), events per trial max %v", r.PeakHistory, r.PeakHistoryRun, r.EventsPerTrial.Max)
	}
	if r.RayTune.Trials != 10_000 || !(r.PerCoreVsRayTune > 0) {
		t.Errorf("Ray Tune comparison %+v, ratio %v", r.RayTune, r.PerCoreVsRayTune)
	}
	if r.TrialEventTypes["WorkflowExecutionStarted"] != 1 {
		t.Errorf("trial 1's event types %v", r.TrialEventTypes)
	}
}

func TestBenchRescaleTiny(t *testing.T) {
	testenv.SkipIfNoCLI(t)
	var r benchrun.RescaleReport
	obj := runJSON(t, &r, "bench", "rescale", "--rescales", "2", "--json")
	requireKeys(t, obj, "rescales", "cpus", "latency_ms", "target_p50_ms", "signal_to_cancel_requested_ms",
		"cancel_requested_to_old_closed_ms", "old_closed_to_new_scheduled_ms", "new_scheduled_to_started_ms",
		"trainer_first_report_ms", "samples", "other_relaunches", "trial_history_length", "trial_state", "run_trial_failures")
	if r.Rescales != 2 || len(r.Samples) < 2 || r.LatencyMS.N != len(r.Samples) {
		t.Fatalf("rescales %d, %d samples, latency %+v", r.Rescales, len(r.Samples), r.LatencyMS)
	}
	for i, s := range r.Samples {
		if !(s.LatencyMS > 0) || s.SignalToCancelRequestedMS < 0 || s.CancelRequestedToClosedMS < 0 ||
			s.ClosedToScheduledMS < 0 || s.ScheduledToStartedMS < 0 {
			t.Errorf("sample %d: %+v", i, s)
		}
		if (s.From == 2) == (s.To == 2) || s.From+s.To != 6 {
			t.Errorf("sample %d went from %d to %d nodes, want 2 ↔ 4", i, s.From, s.To)
		}
	}
	// Samples are relaunches onto another node count; on a loaded machine
	// a run may also fail, or be moved without a resize, and be relaunched
	// as it was: reported apart, not a rescale.
	if len(r.OtherRelaunches) > 0 {
		t.Logf("%d relaunches on as many nodes as before: %+v", len(r.OtherRelaunches), r.OtherRelaunches)
	}
	if !(r.LatencyMS.P50 > 0) || r.LatencyMS.Max < r.LatencyMS.P50 || r.TargetMS != 1000 {
		t.Errorf("latency %+v, target %v", r.LatencyMS, r.TargetMS)
	}
	if r.TrialHistoryLength <= 0 {
		t.Errorf("trial history length %d", r.TrialHistoryLength)
	}
	if r.TrialState != "stopped" || r.RunTrialFailures != 0 {
		// Not a benchmark failure: the latencies are measured before the
		// stop. RunTrial can panic when a cancellation meets a progress
		// signal (activity.GetLogger(context.Background()) in
		// activities/runtrial.go), failing the trial.
		t.Logf("the trial ended %s after the stop (%s), %d failed RunTrial attempts", r.TrialState, r.TrialError, r.RunTrialFailures)
	}
}

// An inline campaign of random search is pipelined: the report says so,
// measures the nodes' idle time between trainers, and counts the
// trainers' CPU; --vs-floor adds the same trials at Temporal's floor.
func TestBenchCampaignInlineTiny(t *testing.T) {
	testenv.SkipIfNoCLI(t)
	var r benchrun.CampaignReport
	obj := runJSON(t, &r, "bench", "campaign", "--inline", "--trials", "6", "--concurrent", "3", "--nodes", "3",
		"--trial-seconds", "0.5", "--progress-every", "2s", "--vs-floor", "--json")
	requireKeys(t, obj, "trainer_cpu_seconds", "node_idle_seconds", "server_cpu_seconds", "worker_cpu_seconds", "ramp", "floor", "vs_floor")
	if f := r.Floor; f == nil || f.Mode != "activity" || f.Trials != 6 || f.Completed != 6 || !(r.VsFloor > 0) {
		t.Errorf("floor %+v, vs floor %v: want 6 trials completed, an activity each", f, r.VsFloor)
	}
	if rm := r.Ramp; rm.Nodes != 3 || !(rm.FirstSeconds > 0) || rm.AllSeconds < rm.FirstSeconds ||
		rm.AllSeconds > r.WallSeconds || rm.TailSeconds < 0 || rm.TailSeconds > r.WallSeconds {
		t.Errorf("ramp %+v over %.2f s: want 3 nodes, 0 < first ≤ all ≤ wall, 0 ≤ tail ≤ wall", rm, r.WallSeconds)
	}
	if r.State != "completed" || r.Completed != 6 || r.Failed != 0 {
		t.Errorf("campaign %s: %d completed, %d failed; want 6 completed", r.State, r.Completed, r.Failed)
	}
	if !r.Pipelined {
		t.Error("an inline campaign of random search, 3 in flight, is not reported pipelined")
	}
	if r.NodeIdle.N != 3 || r.NodeIdle.Max < 0 {
		t.Errorf("node idle %+v: want the three launches that followed a trainer on its node", r.NodeIdle)
	}
	if !(r.TrainerCPUSeconds > 0) || !(r.ServerCPUSeconds > 0) || !(r.WorkerCPUSeconds > 0) {
		t.Errorf("CPU: server %v s, worker %v s, trainers %v s", r.ServerCPUSeconds, r.WorkerCPUSeconds, r.TrainerCPUSeconds)
	}
}
