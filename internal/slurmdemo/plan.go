package slurmdemo

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// PlanSettings choose the window of an SWF log to replay and how it is
// fitted to the cluster. Zero optional fields take the documented
// defaults.
type PlanSettings struct {
	// Offset is where the window starts, in trace time after the first
	// replayable job's submission: the window's first job is the first
	// submitted at or after it.
	Offset time.Duration
	// Jobs is how many jobs the window holds (required, ≥ 1).
	Jobs int
	// ClusterNodes is the size of the cluster replayed onto (required).
	ClusterNodes int
	// TraceNodes is the size of the logged machine (default: the log's
	// MaxNodes header).
	TraceNodes int
	// Compression is how many trace seconds pass in one wall-clock second
	// (required, > 0): submit times, run times and time limits are all
	// divided by it.
	Compression float64
	// MinRun is the shortest run time of a replayed job (default 1 s):
	// a job shorter than it after compression runs MinRun.
	MinRun time.Duration
}

// PlannedJob is one batch job of a replay.
type PlannedJob struct {
	// Name is the Slurm job name and comment: "swf-<trace id>".
	Name    string
	TraceID int64
	// At is when it is submitted, after the replay's start.
	At time.Duration
	// Nodes is its scaled size, in 1..ClusterNodes.
	Nodes int
	// Run is how long its process runs.
	Run time.Duration
	// Limit is its --time: the compressed requested time (the run time if
	// that is longer, or unknown), rounded up to whole minutes.
	Limit time.Duration
	// TraceNodes and TraceRun are the job as logged.
	TraceNodes int
	TraceRun   time.Duration
}

// Plan is a window of an SWF log fitted to a cluster.
type Plan struct {
	Settings PlanSettings
	Jobs     []PlannedJob
	// TraceStart is the unix time of the window's first submission.
	TraceStart int64
	// Span is when the last job is submitted, after the replay's start.
	Span time.Duration
	// NodeSeconds is the work of the replayed jobs: Σ nodes × run.
	NodeSeconds float64
	// TraceLoad and Load are the window's offered load on the logged
	// machine and on the cluster: node-seconds ÷ (machine size × Span).
	// Load exceeds TraceLoad where rounding sizes up to one node inflates
	// small jobs.
	TraceLoad, Load float64
	// LongestRun is the longest replayed run time: the replay ends no
	// sooner than Span + LongestRun after its start.
	LongestRun time.Duration
}

// Plan errors.
var (
	ErrEmptyWindow = errors.New("no job in the window")
)

// ScaleNodes maps a job of n nodes on a machine of traceNodes to a
// cluster of clusterNodes: n × clusterNodes / traceNodes rounded to the
// nearest whole node, at least 1 and at most the cluster. A job of the
// whole machine takes the whole cluster; on Theta (4,360 nodes) onto 6,
// the 128- to 363-node jobs take 1 node, 1,024 nodes take 1, 2,048 take
// 3.
func ScaleNodes(n, traceNodes, clusterNodes int) int {
	if traceNodes <= 0 || clusterNodes <= 0 {
		panic("slurmdemo: ScaleNodes: machine sizes must be positive")
	}
	k := int(math.Round(float64(n) * float64(clusterNodes) / float64(traceNodes)))
	return min(max(k, 1), clusterNodes)
}

// Compress divides a trace duration of secs seconds by factor, to the
// millisecond.
func Compress(secs int64, factor float64) time.Duration {
	ms := math.Round(float64(secs) * 1000 / factor)
	return time.Duration(ms) * time.Millisecond
}

// CeilMinutes rounds d up to whole minutes, at least one: Slurm's --time
// takes minutes.
func CeilMinutes(d time.Duration) time.Duration {
	m := (d + time.Minute - 1) / time.Minute
	return max(m, 1) * time.Minute
}

// NewPlan fits the window s chooses of log to the cluster.
func NewPlan(log *SWFLog, s PlanSettings) (Plan, error) {
	p := Plan{Settings: s}
	if s.TraceNodes == 0 {
		s.TraceNodes = log.MaxNodes
	}
	if s.MinRun == 0 {
		s.MinRun = time.Second
	}
	p.Settings = s
	switch {
	case s.Jobs < 1:
		return p, fmt.Errorf("jobs: %d: want at least 1", s.Jobs)
	case s.ClusterNodes < 1:
		return p, fmt.Errorf("cluster nodes: %d: want at least 1", s.ClusterNodes)
	case s.TraceNodes < 1:
		return p, errors.New(`trace nodes: the log has no "; MaxNodes:" header; give the machine size`)
	case !(s.Compression > 0) || math.IsInf(s.Compression, 0):
		return p, fmt.Errorf("compression: %v: want a finite factor > 0", s.Compression)
	case s.Offset < 0:
		return p, fmt.Errorf("offset: %v: want ≥ 0", s.Offset)
	case s.MinRun < 0:
		return p, fmt.Errorf("min run: %v: want ≥ 0", s.MinRun)
	}
	jobs := slices.Clone(log.Jobs)
	slices.SortStableFunc(jobs, func(a, b SWFJob) int { return cmp.Compare(a.Submit, b.Submit) })
	if len(jobs) == 0 {
		return p, ErrEmptyWindow
	}
	from := jobs[0].Submit + int64(s.Offset/time.Second)
	i, _ := slices.BinarySearchFunc(jobs, from, func(j SWFJob, t int64) int { return cmp.Compare(j.Submit, t) })
	if i >= len(jobs) {
		return p, fmt.Errorf("offset %v: %w (the log's last submission is %v after its first)", s.Offset, ErrEmptyWindow,
			time.Duration(jobs[len(jobs)-1].Submit-jobs[0].Submit)*time.Second)
	}
	window := jobs[i:min(i+s.Jobs, len(jobs))]
	if len(window) < s.Jobs {
		return p, fmt.Errorf("jobs: %d from offset %v: the log has only %d from there", s.Jobs, s.Offset, len(window))
	}
	p.TraceStart = window[0].Submit
	var traceNodeSecs float64
	for _, j := range window {
		run := max(Compress(j.Run, s.Compression), s.MinRun)
		limit := run
		if j.ReqTime > 0 {
			limit = max(limit, Compress(j.ReqTime, s.Compression))
		}
		pj := PlannedJob{
			Name:    fmt.Sprintf("swf-%d", j.ID),
			TraceID: j.ID,
			At:      Compress(j.Submit-p.TraceStart, s.Compression),
			Nodes:   ScaleNodes(j.Nodes, s.TraceNodes, s.ClusterNodes),
			Run:     run,
			Limit:   CeilMinutes(limit),
			// The log's own numbers, for people and the report.
			TraceNodes: j.Nodes,
			TraceRun:   time.Duration(j.Run) * time.Second,
		}
		p.Jobs = append(p.Jobs, pj)
		p.NodeSeconds += float64(pj.Nodes) * pj.Run.Seconds()
		traceNodeSecs += float64(min(j.Nodes, s.TraceNodes)) * float64(j.Run)
		p.LongestRun = max(p.LongestRun, run)
	}
	p.Span = p.Jobs[len(p.Jobs)-1].At
	if span := float64(window[len(window)-1].Submit - p.TraceStart); span > 0 {
		p.TraceLoad = traceNodeSecs / (float64(s.TraceNodes) * span)
		p.Load = p.NodeSeconds / (float64(s.ClusterNodes) * p.Span.Seconds())
	}
	return p, nil
}

// String summarises the plan in one line.
func (p Plan) String() string {
	s := p.Settings
	return fmt.Sprintf("%d jobs from trace offset %s (unix %d), %.0f× faster: submitted over %v, longest run %v; sizes %d→%d nodes; offered load %.2f (%.2f on the logged machine)",
		len(p.Jobs), TraceTime(s.Offset), p.TraceStart, s.Compression, p.Span.Round(time.Second), p.LongestRun.Round(time.Second),
		s.TraceNodes, s.ClusterNodes, p.Load, p.TraceLoad)
}
