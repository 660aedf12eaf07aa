package slurmdemo

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/slurm"
)

// Holder is what held a node at an instant.
type Holder byte

const (
	// Free: no batch job and no pilot (idle, or a pilot's node being
	// given back).
	Free Holder = '.'
	// Batch: a replayed batch job.
	Batch Holder = 'B'
	// Trial: a pilot whose agent's node a trial holds (the pool's
	// assignment).
	Trial Holder = 'T'
	// Pilot: a pilot whose node no trial holds.
	Pilot Holder = 'P'
)

// Holders lists every Holder, in display order.
var Holders = []Holder{Batch, Trial, Pilot, Free}

// PoolView is what the monitor saw of the pool at one instant.
type PoolView struct {
	// Agents are the live agents (a pilot's agent is its Slurm node).
	Agents []string
	// TrialOf maps each node a trial holds to the trial (its id).
	TrialOf map[string]string
}

// Snapshot is one sample: every job squeue listed, and the pool.
type Snapshot struct {
	At   time.Time
	Jobs []slurm.Job
	// Pool is nil when there is no pool (the baseline pass) or it did not
	// answer; then no node counts as held by a trial.
	Pool *PoolView
}

// JobRecord is what the monitor learnt of one Slurm job.
type JobRecord struct {
	ID        string
	Name      string // the comment: swf-<id> for a batch job
	Partition string
	State     string // the last seen
	Nodes     []string
	// FirstSeen and LastSeen are the samples that listed it.
	FirstSeen, LastSeen time.Time
	// Start and End are Slurm's: Start once it ran, End once it ended
	// (Ended), else its expected end.
	Start, End time.Time
	Ended      bool
	// PlannedEnd is the end its time limit set, as first seen running.
	PlannedEnd time.Time
	// lead is the timeline's PilotLead (pilots only).
	lead time.Duration
	// Shortened: its expected end moved earlier while it ran, as Slurm
	// does when it preempts a job with a GraceTime (end = now + grace).
	Shortened bool
}

// Ran reports whether the job started.
func (j *JobRecord) Ran() bool { return !j.Start.IsZero() && j.State != "PENDING" }

// EarlyEnd is how much sooner than its time limit a job must end, not
// cancelled, for Preempted to count it when the pilots' lead is unknown
// (a pilot's agent leaves at most this long before its time limit).
const EarlyEnd = time.Minute

// limitSlack is how far from "time limit less lead" a pilot may end and
// still have ended by its time limit (Slurm's times are whole seconds).
const limitSlack = 3 * time.Second

// Preempted reports whether Slurm preempted the job: its state says so;
// or its expected end was brought forward while it ran (Slurm sets it to
// now + GraceTime); or it ended by itself, not cancelled, before its time
// limit and not when the limit's own signal came (PilotLead before it;
// unknown lead: more than EarlyEnd before it). With
// preempt_send_user_signal a pilot whose agent leaves at the SIGTERM ends
// COMPLETED, often within the second, so the state alone does not tell.
// The backfill scheduler may start a pilot with a limit as short as its
// --time-min, so the limit is the one Slurm gave it (PlannedEnd).
func (j *JobRecord) Preempted() bool {
	switch {
	case j.State == "PREEMPTED":
		return true
	case j.State == "CANCELLED" || !j.Ended:
		return j.Shortened && j.State != "CANCELLED"
	case j.Shortened:
		return true
	case j.PlannedEnd.IsZero():
		return false
	case j.lead <= 0:
		return j.End.Before(j.PlannedEnd.Add(-EarlyEnd))
	}
	signal := j.PlannedEnd.Add(-j.lead)
	atLimit := !j.End.Before(signal.Add(-limitSlack)) && !j.End.After(signal.Add(limitSlack)) ||
		!j.End.Before(j.PlannedEnd.Add(-limitSlack))
	return !atLimit
}

// Span is an interval during which one holder held a node.
type Span struct {
	Node     string
	Holder   Holder
	From, To time.Time
	// Job is the batch job's name or the pilot's id; Trial the trial's id.
	Job, Trial string
}

// Timeline is the monitor's bookkeeping: per node, what held it over
// time, and every job seen. It is pure: Observe takes the samples.
type Timeline struct {
	Nodes []string
	// BatchPartition and PilotPartition tell the replayed jobs and the
	// pilots apart (jobs of other partitions are ignored).
	BatchPartition, PilotPartition string
	// Batch are the batch jobs by name, Pilots the pilots by id.
	Batch  map[string]*JobRecord
	Pilots map[string]*JobRecord
	// PilotLimit is the pilots' time limit, when known: the planned end
	// of a pilot never seen running (it ran under a second) for Preempted.
	PilotLimit time.Duration
	// PilotLead is how long before its time limit a pilot's agent is told
	// to leave (--signal=B:TERM@lead), when known: a pilot that ends then
	// ran out of time, any other early end is a preemption.
	PilotLead time.Duration
	// Replayed names the replayed batch jobs, when known: Counts and
	// BatchStarts leave out the batch partition's other jobs (someone
	// else's on a shared cluster: a pass once counted 62 of 60 jobs done),
	// whose nodes still count as held by a batch job.
	Replayed map[string]bool

	spans []Span
	open  map[string]*Span
	first time.Time
	last  time.Time
}

// NewTimeline starts the bookkeeping of nodes.
func NewTimeline(nodes []string, batchPartition, pilotPartition string) *Timeline {
	return &Timeline{
		Nodes: slices.Clone(nodes), BatchPartition: batchPartition, PilotPartition: pilotPartition,
		Batch: map[string]*JobRecord{}, Pilots: map[string]*JobRecord{},
		open: map[string]*Span{},
	}
}

// Slurm job states.
var (
	activeStates = map[string]bool{"RUNNING": true, "CONFIGURING": true, "COMPLETING": true, "SUSPENDED": true,
		"STOPPED": true, "SIGNALING": true, "STAGE_OUT": true, "RESIZING": true}
	endedStates = map[string]bool{"COMPLETED": true, "CANCELLED": true, "FAILED": true, "TIMEOUT": true, "PREEMPTED": true,
		"NODE_FAIL": true, "BOOT_FAIL": true, "DEADLINE": true, "OUT_OF_MEMORY": true, "REVOKED": true, "SPECIAL_EXIT": true}
)

// Active reports whether a job in state holds its nodes.
func Active(state string) bool { return activeStates[state] }

// Ended reports whether state is final.
func Ended(state string) bool { return endedStates[state] }

// Observe records one sample and returns what held each node then, in
// Nodes order.
func (t *Timeline) Observe(s Snapshot) []Holder {
	if t.first.IsZero() {
		t.first = s.At
	}
	if s.At.Before(t.last) {
		s.At = t.last // samples out of order keep time monotone
	}
	t.last = s.At
	type holding struct {
		h          Holder
		job, trial string
	}
	held := map[string]holding{}
	pilotOn := map[string]string{}
	for _, j := range s.Jobs {
		switch j.Partition {
		case t.BatchPartition:
			name := j.Comment
			if name == "" || name == "(null)" {
				name = "job-" + j.ID
			}
			t.record(t.Batch, name, j, s.At)
			if Active(j.State) {
				for _, n := range j.Nodes {
					held[n] = holding{h: Batch, job: name}
				}
			}
		case t.PilotPartition:
			t.record(t.Pilots, j.ID, j, s.At)
			rec := t.Pilots[j.ID]
			rec.lead = t.PilotLead
			if rec.PlannedEnd.IsZero() && t.PilotLimit > 0 && rec.Ran() {
				rec.PlannedEnd = rec.Start.Add(t.PilotLimit)
			}
			if Active(j.State) {
				for _, n := range j.Nodes {
					pilotOn[n] = j.ID
				}
			}
		}
	}
	out := make([]Holder, len(t.Nodes))
	for i, n := range t.Nodes {
		h, ok := held[n]
		if !ok {
			h = holding{h: Free}
			if id, ok := pilotOn[n]; ok {
				h = holding{h: Pilot, job: id}
				if s.Pool != nil {
					if tr, ok := s.Pool.TrialOf[n]; ok {
						h = holding{h: Trial, job: id, trial: tr}
					}
				}
			}
		}
		out[i] = h.h
		sp := t.open[n]
		if sp != nil && sp.Holder == h.h && sp.Job == h.job && sp.Trial == h.trial {
			continue
		}
		if sp != nil {
			sp.To = s.At
			t.spans = append(t.spans, *sp)
		}
		t.open[n] = &Span{Node: n, Holder: h.h, From: s.At, Job: h.job, Trial: h.trial}
	}
	return out
}

// record updates (or creates) the record of j in m under key.
func (t *Timeline) record(m map[string]*JobRecord, key string, j slurm.Job, at time.Time) {
	rec := m[key]
	if rec == nil {
		rec = &JobRecord{ID: j.ID, Name: key, Partition: j.Partition, FirstSeen: at}
		m[key] = rec
	}
	if rec.ID != j.ID {
		// A name seen again under a new id (a resubmission): the newer wins.
		*rec = JobRecord{ID: j.ID, Name: key, Partition: j.Partition, FirstSeen: at}
	}
	rec.LastSeen = at
	rec.State = j.State
	if len(j.Nodes) > 0 {
		rec.Nodes = j.Nodes
	}
	if j.State != "PENDING" && !j.Start.IsZero() {
		rec.Start = j.Start
	}
	if j.State == "RUNNING" && !j.End.IsZero() {
		if rec.PlannedEnd.IsZero() {
			rec.PlannedEnd = j.End
		} else if j.End.Before(rec.End) {
			rec.Shortened = true
		}
	}
	if !j.End.IsZero() && (j.State != "PENDING") {
		rec.End = j.End
	}
	rec.Ended = Ended(j.State)
}

// Close ends every open span at at: the end of the measurement.
func (t *Timeline) Close(at time.Time) {
	for _, n := range t.Nodes {
		if sp := t.open[n]; sp != nil {
			sp.To = laterOf(at, sp.From)
			t.spans = append(t.spans, *sp)
			delete(t.open, n)
		}
	}
}

// Spans are the closed spans, node by node in time order.
func (t *Timeline) Spans() []Span {
	out := slices.Clone(t.spans)
	slices.SortStableFunc(out, func(a, b Span) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return a.From.Compare(b.From)
	})
	return out
}

// First and Last are the first and the last sample's times (Close
// does not move Last).
func (t *Timeline) First() time.Time { return t.first }
func (t *Timeline) Last() time.Time  { return t.last }

// NodeSeconds sums, per holder, the node-seconds of the closed spans
// within [from, to).
func (t *Timeline) NodeSeconds(from, to time.Time) map[Holder]float64 {
	sum := map[Holder]float64{}
	for _, sp := range t.spans {
		a, b := laterOf(sp.From, from), earlierOf(sp.To, to)
		if b.After(a) {
			sum[sp.Holder] += b.Sub(a).Seconds()
		}
	}
	return sum
}

// Counts are the figures of one progress line.
type Counts struct {
	BatchDone, BatchRunning, BatchPending int
	PilotsRunning, PilotsPending          int
	// PilotsStarted and Preempted count every pilot so far.
	PilotsStarted, Preempted int
}

// Counts are the job counts as of the last sample.
func (t *Timeline) Counts() Counts {
	var c Counts
	for name, j := range t.Batch {
		if !t.replayed(name) {
			continue
		}
		switch {
		case j.Ended:
			c.BatchDone++
		case Active(j.State):
			c.BatchRunning++
		case j.LastSeen.Equal(t.last):
			c.BatchPending++
		}
	}
	for _, j := range t.Pilots {
		if j.Ran() {
			c.PilotsStarted++
		}
		if j.Preempted() {
			c.Preempted++
		}
		if !j.LastSeen.Equal(t.last) || j.Ended {
			continue
		}
		if Active(j.State) {
			c.PilotsRunning++
		} else if j.State == "PENDING" {
			c.PilotsPending++
		}
	}
	return c
}

// replayed reports whether the batch job name is one of the replay's.
func (t *Timeline) replayed(name string) bool {
	return t.Replayed == nil || t.Replayed[name]
}

// Foreign are the batch partition's jobs that are not the replay's, by
// name.
func (t *Timeline) Foreign() []string {
	var out []string
	for name := range t.Batch {
		if !t.replayed(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlierOf(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// WriteSpans writes the closed spans as CSV: node, holder (B, T, P or
// .), from and to (unix seconds), job, trial.
func (t *Timeline) WriteSpans(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"node", "holder", "from", "to", "job", "trial"})
	for _, sp := range t.Spans() {
		_ = cw.Write([]string{sp.Node, string(sp.Holder), unixText(sp.From), unixText(sp.To), sp.Job, sp.Trial})
	}
	cw.Flush()
	return cw.Error()
}

// WriteJobs writes every job seen as CSV: kind (batch or pilot), id,
// name, last state, nodes, start, end (unix seconds, empty if unknown),
// preempted.
func (t *Timeline) WriteJobs(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"kind", "id", "name", "state", "nodes", "start", "end", "preempted"})
	for _, kind := range []struct {
		name string
		m    map[string]*JobRecord
	}{{"batch", t.Batch}, {"pilot", t.Pilots}} {
		recs := make([]*JobRecord, 0, len(kind.m))
		for _, j := range kind.m {
			recs = append(recs, j)
		}
		slices.SortFunc(recs, func(a, b *JobRecord) int { return a.FirstSeen.Compare(b.FirstSeen) })
		for _, j := range recs {
			end := ""
			if j.Ended {
				end = unixText(j.End)
			}
			start := ""
			if j.Ran() {
				start = unixText(j.Start)
			}
			_ = cw.Write([]string{kind.name, j.ID, j.Name, j.State, strings.Join(j.Nodes, " "), start, end, strconv.FormatBool(j.Preempted())})
		}
	}
	cw.Flush()
	return cw.Error()
}

func unixText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64)
}
