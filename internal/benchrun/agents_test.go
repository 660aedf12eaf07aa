package benchrun

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/gleaner-hpc/gleaner/internal/testenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// events builds a history: "s:<name>" a signal, "ts" "tc" "tf" a
// workflow task started, completed, failed, "a:<n>" an allocation over n
// nodes, "p" a poll's result; one second apart from t0.
func events(t *testing.T, t0 time.Time, spec ...string) []*historypb.HistoryEvent {
	t.Helper()
	var evs []map[string]any
	for i, s := range spec {
		ev := map[string]any{"eventId": strconv.Itoa(i + 1), "eventTime": t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)}
		switch s {
		case "ts":
			ev["eventType"] = "EVENT_TYPE_WORKFLOW_TASK_STARTED"
		case "tc":
			ev["eventType"] = "EVENT_TYPE_WORKFLOW_TASK_COMPLETED"
		case "tf":
			ev["eventType"] = "EVENT_TYPE_WORKFLOW_TASK_FAILED"
		case "p":
			ev["eventType"] = "EVENT_TYPE_MARKER_RECORDED"
			ev["markerRecordedEventAttributes"] = marker(t, []string{"n1"})
		default:
			if n, ok := strings.CutPrefix(s, "a:"); ok {
				nodes, _ := strconv.Atoi(n)
				ev["eventType"] = "EVENT_TYPE_MARKER_RECORDED"
				ev["markerRecordedEventAttributes"] = marker(t, workflows.AllocateResult{Summary: workflows.SolveSummary{
					Formulation: "compact", Nodes: nodes, At: t0.Add(time.Duration(i) * time.Second),
				}})
				break
			}
			ev["eventType"] = "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"
			ev["workflowExecutionSignaledEventAttributes"] = map[string]any{"signalName": s[2:]}
		}
		evs = append(evs, ev)
	}
	js, err := json.Marshal(map[string]any{"events": evs})
	if err != nil {
		t.Fatal(err)
	}
	h, err := client.HistoryFromJSON(bytes.NewReader(js), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	return h.GetEvents()
}

// marker is a local activity marker's attributes with result v.
func marker(t *testing.T, v any) map[string]any {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"markerName": "LocalActivity", "details": map[string]any{"result": map[string]any{"payloads": []any{
		map[string]any{"metadata": map[string]any{"encoding": base64.StdEncoding.EncodeToString(p.GetMetadata()["encoding"])},
			"data": base64.StdEncoding.EncodeToString(p.GetData())},
	}}}}
}

func TestAllocationsAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := func(s *workflows.SolveSummary) int {
		if s == nil {
			return -1
		}
		return s.Nodes
	}
	tests := []struct {
		name              string
		runs              [][]*historypb.HistoryEvent
		wantFull, wantAny int
	}{
		{"the allocation with every node after the last join", [][]*historypb.HistoryEvent{
			events(t, t0, "a:4", "s:join", "ts", "tc", "p", "a:6", "s:join", "ts", "tc", "a:8", "a:10")}, 10, 8},
		{"an agent lost before it", [][]*historypb.HistoryEvent{
			events(t, t0, "s:join", "a:10", "s:join", "ts", "tc", "a:8")}, -1, 8},
		{"not yet", [][]*historypb.HistoryEvent{events(t, t0, "a:10", "s:join", "ts", "tc", "p")}, -1, -1},
		{"in the next run", [][]*historypb.HistoryEvent{
			events(t, t0, "s:join", "ts", "tc"), events(t, t0.Add(time.Minute), "p", "a:10")}, 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := analyzeSignals(tt.runs, "join", time.Time{})
			full, first := allocationsAfter(tt.runs, sp, 10)
			if nodes(full) != tt.wantFull || nodes(first) != tt.wantAny {
				t.Errorf("full %d, first %d; want %d, %d", nodes(full), nodes(first), tt.wantFull, tt.wantAny)
			}
		})
	}
}

func TestAnalyzeSignals(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	tests := []struct {
		name  string
		runs  [][]*historypb.HistoryEvent
		since time.Time
		want  signalSpan
	}{{
		name: "a signal during a task is taken by the next one",
		// 0 s, 1 ts, 2 s (buffered), 3 tc, 4 ts, 5 tc
		runs: [][]*historypb.HistoryEvent{events(t, t0, "s:join", "ts", "s:join", "tc", "ts", "tc")},
		want: signalSpan{Count: 2, First: at(0), Last: at(2), Handled: at(5), Tasks: 2, lastIndex: 2},
	}, {
		name:  "signals before since and of other names do not count",
		runs:  [][]*historypb.HistoryEvent{events(t, t0, "s:join", "ts", "tc", "s:other", "s:join", "ts", "tc")},
		since: at(1),
		want:  signalSpan{Count: 1, First: at(4), Last: at(4), Handled: at(6), Tasks: 1, lastIndex: 4},
	}, {
		name: "a failed task does not take it; the signal's run continued as new",
		runs: [][]*historypb.HistoryEvent{
			events(t, t0, "s:join", "ts", "tf", "ts", "tc"),
			events(t, at(10), "s:join", "ts", "tc"),
		},
		want: signalSpan{Count: 2, First: at(0), Last: at(10), Handled: at(12), Tasks: 2, lastRun: 1},
	}, {
		name: "not taken yet",
		runs: [][]*historypb.HistoryEvent{events(t, t0, "ts", "tc", "s:join")},
		want: signalSpan{Count: 1, First: at(2), Last: at(2), lastIndex: 2},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := analyzeSignals(tt.runs, "join", tt.since); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAgentID(t *testing.T) {
	for _, c := range []struct {
		i, n int
		want string
	}{{7, 100, "a007"}, {99, 100, "a099"}, {3, 5, "a003"}, {12, 5000, "a0012"}} {
		if got := agentID(c.i, c.n); got != c.want {
			t.Errorf("agentID(%d, %d) = %q, want %q", c.i, c.n, got, c.want)
		}
	}
}

// TestRunAgentsTiny runs the whole benchmark on a real dev server.
func TestRunAgentsTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev server")
	}
	testenv.SkipIfNoCLI(t)
	rep, err := RunAgents(context.Background(), AgentsOptions{Agents: 3, Slots: 2, Trials: 2, Burst: 2, Duration: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Nodes != 6 || rep.Join.Solve.Nodes != 6 || rep.Burst.Signals != 6 || rep.Refused != 0 {
		t.Errorf("nodes %d, solve %+v, burst %d signals, %d refused", rep.Nodes, rep.Join.Solve, rep.Burst.Signals, rep.Refused)
	}
	if rep.AgentsLive != 3 || rep.NodesLive != 6 {
		t.Errorf("%d agents, %d nodes live at the end; leases lost: %+v", rep.AgentsLive, rep.NodesLive, rep.LeasesLost)
	}
	if !(rep.Burst.SignalsPerSecond > 0) || rep.Burst.Tasks < 1 || !(rep.Steady.Seconds >= 6) || rep.Steady.Events <= 0 || !(rep.Steady.EventsPerHour > 0) {
		t.Errorf("burst %+v, steady %+v", rep.Burst, rep.Steady)
	}
	if len(rep.PoolRuns) == 0 || rep.PeakHistory <= 0 || rep.LeaseStarts < 3 {
		t.Errorf("pool runs %+v, peak %d, %d lease starts", rep.PoolRuns, rep.PeakHistory, rep.LeaseStarts)
	}
}
