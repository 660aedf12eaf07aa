package benchrun

import (
	"context"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// inlineHistories measures an inline campaign (trial.inline): its trials
// are RunTrial activities of the campaign's runs, so their phases come
// from the campaign's histories: a run waits for nodes from the moment a
// slot frees (the latest RunTrial completion before it; the first wave,
// which waits for nothing, is left out) until it is scheduled, then for a
// worker to start it, then trains. Events per trial are the campaign's
// events (every run) divided by the trials.
func (r *CampaignReport) inlineHistories(ctx context.Context, c client.Client, trials int) error {
	var wait, launch, run []float64
	var events int64
	for _, ri := range r.CampaignRuns {
		events += ri.HistoryLength
		evs, err := history(ctx, c, ri.WorkflowID, ri.RunID)
		if err != nil {
			return err
		}
		sched := map[int64]time.Time{}
		started := map[int64]time.Time{}
		var lastDone time.Time
		for _, ev := range evs {
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() != workflows.RunTrialActivityName {
					continue
				}
				sched[ev.GetEventId()] = at
				if !lastDone.IsZero() {
					wait = append(wait, at.Sub(lastDone).Seconds())
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				id := ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()
				if s, ok := sched[id]; ok {
					started[id] = at
					launch = append(launch, at.Sub(s).Seconds())
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				id := ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
				if s, ok := started[id]; ok {
					run = append(run, at.Sub(s).Seconds())
					lastDone = at
				}
			}
		}
	}
	r.TrialPhases = TrialPhases{Assignment: summarize(wait), Launch: summarize(launch), Run: summarize(run)}
	if trials > 0 {
		per := float64(events) / float64(trials)
		r.EventsPerTrial = Stats{N: 1, Mean: per, P50: per, P95: per, Max: per}
	}
	return nil
}
