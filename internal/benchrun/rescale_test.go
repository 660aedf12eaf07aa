package benchrun

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// trialHistory builds a trial's history, one event a second from t0:
// "run:R:N" schedules RunTrial run R on N nodes, "start:R", "cancel:R",
// "canceled:R" and "failed:R" follow that run, "assign" is the pool's
// assignment signal.
func trialHistory(t *testing.T, t0 time.Time, spec ...string) []*historypb.HistoryEvent {
	t.Helper()
	scheduled := map[string]int64{}
	var evs []*historypb.HistoryEvent
	for i, s := range spec {
		ev := &historypb.HistoryEvent{EventId: int64(i + 1), EventTime: timestamppb.New(t0.Add(time.Duration(i) * time.Second))}
		what, run, _ := strings.Cut(s, ":")
		run, nodes, _ := strings.Cut(run, ":")
		switch what {
		case "run":
			n, _ := strconv.Atoi(nodes)
			r, _ := strconv.Atoi(run)
			in := workflows.RunTrialInput{Run: r}
			for k := range n {
				in.Nodes = append(in.Nodes, "n"+strconv.Itoa(k))
			}
			p, err := converter.GetDefaultDataConverter().ToPayloads(in)
			if err != nil {
				t.Fatal(err)
			}
			scheduled[run] = ev.EventId
			ev.EventType = enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
			ev.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: workflows.RunTrialActivityName}, Input: p}}
		case "start":
			ev.EventType = enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED
			ev.Attributes = &historypb.HistoryEvent_ActivityTaskStartedEventAttributes{ActivityTaskStartedEventAttributes: &historypb.ActivityTaskStartedEventAttributes{
				ScheduledEventId: scheduled[run]}}
		case "cancel":
			ev.EventType = enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED
			ev.Attributes = &historypb.HistoryEvent_ActivityTaskCancelRequestedEventAttributes{ActivityTaskCancelRequestedEventAttributes: &historypb.ActivityTaskCancelRequestedEventAttributes{
				ScheduledEventId: scheduled[run]}}
		case "canceled":
			ev.EventType = enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED
			ev.Attributes = &historypb.HistoryEvent_ActivityTaskCanceledEventAttributes{ActivityTaskCanceledEventAttributes: &historypb.ActivityTaskCanceledEventAttributes{
				ScheduledEventId: scheduled[run]}}
		case "failed":
			ev.EventType = enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED
			ev.Attributes = &historypb.HistoryEvent_ActivityTaskFailedEventAttributes{ActivityTaskFailedEventAttributes: &historypb.ActivityTaskFailedEventAttributes{
				ScheduledEventId: scheduled[run]}}
		case "assign":
			ev.EventType = enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
			ev.Attributes = &historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes{WorkflowExecutionSignaledEventAttributes: &historypb.WorkflowExecutionSignaledEventAttributes{
				SignalName: workflows.SignalAssignment}}
		default:
			t.Fatalf("trialHistory: unknown event %q", s)
		}
		evs = append(evs, ev)
	}
	return evs
}

// A rescale is a relaunch on another number of nodes. A relaunch on as
// many nodes as before (after a failed run, or an assignment that moved
// the trial without resizing it), which a loaded machine brings about, is
// reported apart, not as a rescale from 2 nodes to 2.
func TestAnalyzeRescalesCountsOnlyRelaunchesOnOtherNodeCounts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := trialHistory(t, t0,
		"assign", "run:1:2", "start:1",
		"assign", "cancel:1", "canceled:1", "run:2:2", "start:2", // moved, not resized
		"failed:2", "assign", "run:3:2", "start:3", // failed, relaunched as it was
		"assign", "cancel:3", "canceled:3", "run:4:4", "start:4", // 2 → 4
		"assign", "cancel:4", "canceled:4", "run:5:2", "start:5", // 4 → 2
	)
	rep, err := analyzeRescales(evs, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	type flip struct{ From, To, Run int }
	var got []flip
	for _, s := range rep.Samples {
		got = append(got, flip{s.From, s.To, s.Run})
	}
	if want := []flip{{2, 4, 4}, {4, 2, 5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("rescales %+v, want %+v", got, want)
	}
	if want := []Relaunch{{Run: 2, Nodes: 2, Cancelled: true}, {Run: 3, Nodes: 2}}; !reflect.DeepEqual(rep.OtherRelaunches, want) {
		t.Errorf("other relaunches %+v, want %+v", rep.OtherRelaunches, want)
	}
	if rep.LatencyMS.N != 2 || rep.LatencyMS.Max != 4000 {
		t.Errorf("latency %+v, want 2 samples of 4 s (assignment → started)", rep.LatencyMS)
	}
	if rep.RunTrialFailures != 1 {
		t.Errorf("%d failed RunTrials, want 1", rep.RunTrialFailures)
	}
}
