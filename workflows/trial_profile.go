package workflows

import (
	"math"
	"time"

	"github.com/gleaner-hpc/gleaner/jpa"
)

// profileChange is the relative change of a throughput estimate that is
// worth telling the pool. Part of the trial's JPA tuning: see
// trialProfiler.
const profileChange = 0.05

// trialProfiler is the JPA tuning a trial workflow measures its
// throughput with (jpa.Profiler runs in workflow code: which estimates it
// makes decides which profile signals the trial sends, so a different
// tuning replays a running trial's history differently). It is spelled
// out here rather than taken from jpa's defaults, so that retuning jpa
// (the simulator, `gleaner jpa eval`) cannot change running trials. To
// change it: keep this value, add the new one under a workflow.GetVersion
// branch in newTrial, and record a history that exercises it
// (internal/integration/record_test.go); TestReplayRecordedHistories
// replays the recorded profiled trial, and TestReplayDetectsProfilerTuning
// shows that history fails to replay under another tuning.
var trialProfiler = jpa.Config{WarmupIntervals: 2, Window: 20}

// inlineProfiler is the tuning an inline campaign measures its trials'
// throughput with (pinned for the same reason as trialProfiler). An
// inline run is quiet: it reports once, when it ends, so its one interval
// (launch to end) is the measure, warm-up included: for the short trials
// that run inline the start-up is part of what a trial costs.
var inlineProfiler = jpa.Config{WarmupIntervals: -1, Window: 20}

// profileKey is a count and node type a profile was sent for: the pool
// keeps one per both.
type profileKey struct {
	nodes    int
	nodeType string
}

// profileSender measures a job's throughput (a trial workflow's, or an
// inline campaign's trials') and decides when the pool hears of it: an
// estimate new at its count and node type, one that moved by more than
// profileChange, new rescale costs, or another model or batch.
type profileSender struct {
	profiler *jpa.Profiler
	sent     map[profileKey]float64 // throughput last sent, per count and node type
	sentUp   float64
	sentDown float64
	// toldModel and toldBatch are the model and batch the pool was last
	// told (registration or profile).
	toldModel string
	toldBatch int
}

func newProfileSender(cfg jpa.Config) (*profileSender, error) {
	prof, err := jpa.NewProfiler(&cfg)
	if err != nil {
		return nil, err
	}
	return &profileSender{profiler: prof, sent: map[profileKey]float64{}}, nil
}

// told notes the model and batch the pool was told at registration.
func (s *profileSender) told(model string, batch int) { s.toldModel, s.toldBatch = model, batch }

// next is the profile to send for job id at n nodes of nodeType, if one
// is due. byType is asked only once an estimate exists (it may record a
// workflow version): false keys what was sent by count alone, as trial
// workflows did before profile-sent-per-type.
func (s *profileSender) next(id string, n int, nodeType, model string, batch int, byType func() bool) (ThroughputProfile, bool) {
	est, found := s.profiler.Estimate(id, n, nodeType)
	up, down := s.profiler.RescaleCosts(id)
	if !found || est.Throughput <= 0 {
		return ThroughputProfile{}, false
	}
	key := profileKey{n, nodeType}
	if !byType() {
		key.nodeType = ""
	}
	old, had := s.sent[key]
	costsMoved := up.Seconds != s.sentUp || down.Seconds != s.sentDown
	modelMoved := model != s.toldModel || batch != s.toldBatch
	if had && math.Abs(est.Throughput-old) <= profileChange*old && !costsMoved && !modelMoved {
		return ThroughputProfile{}, false
	}
	s.sent[key], s.sentUp, s.sentDown = est.Throughput, up.Seconds, down.Seconds
	s.told(model, batch)
	return ThroughputProfile{
		TrialID:         id,
		Nodes:           n,
		NodeType:        nodeType,
		Throughput:      est.Throughput,
		Spread:          est.Spread,
		RescaleUpCost:   up.Seconds,
		RescaleDownCost: down.Seconds,
		Model:           model,
		Batch:           batch,
	}, true
}

// runClock lays an inline campaign's runs end to end, a second apart:
// they overlap in time, but the profiler takes one job's reports in
// order, and each run is a segment of its own (a start after a pause,
// then its end), so only each run's length and samples matter, not when
// it ran.
type runClock struct{ at time.Time }

// ingestRun feeds the profiler one quiet run of job id on nodes of
// nodeType that trained from samples from to to in d.
func (s *profileSender) ingestRun(c *runClock, id string, nodes int, nodeType string, from, to float64, d time.Duration) {
	if d <= 0 || to <= from {
		return
	}
	if c.at.IsZero() {
		c.at = time.Unix(0, 0).UTC()
	}
	start := c.at.Add(time.Second)
	c.at = start.Add(d)
	s.profiler.Ingest(jpa.Progress{TrialID: id, Nodes: nodes, NodeType: nodeType, Samples: from, Time: start, Restart: true, AfterPause: true})
	s.profiler.Ingest(jpa.Progress{TrialID: id, Nodes: nodes, NodeType: nodeType, Samples: to, Time: c.at})
}
