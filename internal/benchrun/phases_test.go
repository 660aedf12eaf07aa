package benchrun

import (
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// scheduled is an ActivityTaskScheduled event of activity type name.
func scheduled(id int64, name string) *historypb.HistoryEvent {
	return &historypb.HistoryEvent{EventId: id, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
		Attributes: &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{
			ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{ActivityType: &commonpb.ActivityType{Name: name}}}}
}

// A trial whose trainer was launched twice (a RunTrial scheduled again)
// counts as relaunched; registering is not a launch.
func TestPhasesCountRelaunchedTrials(t *testing.T) {
	var s phaseSamples
	s.addTrial([]*historypb.HistoryEvent{scheduled(5, workflows.RegisterTrialActivityName), scheduled(9, workflows.RunTrialActivityName)})
	s.addTrial([]*historypb.HistoryEvent{scheduled(5, workflows.RegisterTrialActivityName), scheduled(9, workflows.RunTrialActivityName),
		scheduled(14, workflows.RunTrialActivityName)})
	if ph := s.stats(); ph.Trials != 2 || ph.Relaunched != 1 {
		t.Errorf("trials %d, relaunched %d; want 2 and 1", ph.Trials, ph.Relaunched)
	}
}
