package benchrun

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// TrialPhases is where a trial workflow's time goes, in seconds, by the
// server's event times: start → RegisterTrial completed → first
// assignment signal → RunTrial started → RunTrial completed → closed.
type TrialPhases struct {
	Register   Stats `json:"register_s"`
	Assignment Stats `json:"wait_for_assignment_s"`
	Launch     Stats `json:"assignment_to_run_started_s"`
	Run        Stats `json:"run_s"`
	Finish     Stats `json:"run_completed_to_closed_s"`
	// Relaunched counts the trials that ran their trainer more than once
	// (a RunTrial scheduled again: a rescale, a move to other nodes, a
	// preemption and resume); Trials is how many trial workflows were read.
	Relaunched int `json:"relaunched"`
	Trials     int `json:"trials"`
}

// WorkflowTaskLatency is how long one workflow's tasks wait in the queue
// (scheduled → started) and how long the worker takes (started →
// completed), in milliseconds; ChildStart is StartChildWorkflowExecution
// initiated → child started.
type WorkflowTaskLatency struct {
	Queue      Stats `json:"queue_ms"`
	Processing Stats `json:"processing_ms"`
	ChildStart Stats `json:"child_start_ms,omitempty"`
	// Tasks counts workflow tasks.
	Tasks int `json:"tasks"`
}

type phaseSamples struct {
	reg, assign, launch, run, finish []float64
	trials, relaunched               int
}

// addTrial folds one trial's history into s.
func (s *phaseSamples) addTrial(evs []*historypb.HistoryEvent) {
	var start, registered, assigned, runStarted, runDone, closed time.Time
	regIDs := map[int64]bool{}
	runIDs := map[int64]bool{}
	for _, ev := range evs {
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			start = at
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			switch ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() {
			case workflows.RegisterTrialActivityName:
				regIDs[ev.GetEventId()] = true
			case workflows.RunTrialActivityName:
				runIDs[ev.GetEventId()] = true
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if runIDs[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()] && runStarted.IsZero() {
				runStarted = at
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			id := ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
			if regIDs[id] && registered.IsZero() {
				registered = at
			}
			if runIDs[id] {
				runDone = at
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			if ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == workflows.SignalAssignment && assigned.IsZero() {
				assigned = at
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			closed = at
		}
	}
	add := func(xs *[]float64, a, b time.Time) {
		if !a.IsZero() && !b.IsZero() {
			*xs = append(*xs, b.Sub(a).Seconds())
		}
	}
	add(&s.reg, start, registered)
	add(&s.assign, registered, assigned)
	add(&s.launch, assigned, runStarted)
	add(&s.run, runStarted, runDone)
	add(&s.finish, runDone, closed)
	s.trials++
	if len(runIDs) > 1 {
		s.relaunched++
	}
}

func (s *phaseSamples) stats() TrialPhases {
	return TrialPhases{Register: summarize(s.reg), Assignment: summarize(s.assign), Launch: summarize(s.launch),
		Run: summarize(s.run), Finish: summarize(s.finish), Relaunched: s.relaunched, Trials: s.trials}
}

// taskLatency measures the workflow tasks of the given runs.
func taskLatency(ctx context.Context, c client.Client, runs []RunInfo) (WorkflowTaskLatency, error) {
	var queue, proc, child []float64
	tasks := 0
	for _, ri := range runs {
		evs, err := history(ctx, c, ri.WorkflowID, ri.RunID)
		if err != nil {
			return WorkflowTaskLatency{}, err
		}
		sched := map[int64]time.Time{}
		started := map[int64]time.Time{}
		initiated := map[int64]time.Time{}
		for _, ev := range evs {
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				sched[ev.GetEventId()] = at
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				if t, ok := sched[ev.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId()]; ok {
					queue = append(queue, float64(at.Sub(t).Microseconds())/1000)
				}
				started[ev.GetEventId()] = at
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if t, ok := started[ev.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId()]; ok {
					proc = append(proc, float64(at.Sub(t).Microseconds())/1000)
					tasks++
				}
			case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
				initiated[ev.GetEventId()] = at
			case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
				if t, ok := initiated[ev.GetChildWorkflowExecutionStartedEventAttributes().GetInitiatedEventId()]; ok {
					child = append(child, float64(at.Sub(t).Microseconds())/1000)
				}
			}
		}
	}
	return WorkflowTaskLatency{Queue: summarize(queue), Processing: summarize(proc), ChildStart: summarize(child), Tasks: tasks}, nil
}
