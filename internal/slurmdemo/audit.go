package slurmdemo

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/stats"
	"github.com/gleaner-hpc/gleaner/trial"
)

// The audit reads what every run of every trial reported, from the
// worker's data directory (DataDir/<campaign>/<trial>/runs/<n>/report.jsonl,
// docs/protocol.md): the trainers' own account, independent of what the
// workflows concluded.

// RunAudit is one run (launch) of a trial, from its report file.
type RunAudit struct {
	Run int `json:"run"`
	// Start is the samples the run started from (its first report: the
	// example trainer's first line says where it resumed).
	Start float64 `json:"start_samples"`
	// Max is the most samples it reported; Checkpoint the samples of its
	// last reported checkpoint (-1: none).
	Max        float64 `json:"max_samples"`
	Checkpoint float64 `json:"checkpoint_samples"`
	// First and Last are its first and last report's times.
	First, Last time.Time `json:"-"`
	Reports     int       `json:"reports"`
	Malformed   int       `json:"malformed,omitempty"`
	// Finished: it trained to the budget (started below it and reported
	// it). A run that started at the budget trains nothing: Idle.
	Finished bool `json:"finished,omitempty"`
	Idle     bool `json:"idle,omitempty"`
	// points are (time, samples) of its reports, in order.
	points []samplePoint
}

type samplePoint struct {
	t       time.Time
	samples float64
}

// StopLoss is the training one stopped run lost: what it trained beyond
// the checkpoint the next run resumed from.
type StopLoss struct {
	Trial string    `json:"trial"`
	Run   int       `json:"run"`
	At    time.Time `json:"at"`
	// Trained is the most samples the run reported, Resumed the samples
	// the next run started from; Lost = max(Trained − Resumed, 0).
	Trained float64 `json:"trained"`
	Resumed float64 `json:"resumed"`
	Lost    float64 `json:"lost"`
}

// TrialAudit is one trial's runs.
type TrialAudit struct {
	ID   string     `json:"id"`
	Runs []RunAudit `json:"runs"`
	// FinishedRuns counts runs that trained to the budget: 1 for a trial
	// completed once. IdleRuns counts runs launched after the budget was
	// reached (they resume at the budget and train nothing).
	FinishedRuns int `json:"finished_runs"`
	IdleRuns     int `json:"idle_runs,omitempty"`
	// Overlaps counts runs that reported after the next run started (two
	// trainers of one trial at once).
	Overlaps int `json:"overlaps,omitempty"`
	// Regressions counts runs that resumed from before the previous run's
	// last reported checkpoint (a checkpoint lost).
	Regressions int `json:"regressions,omitempty"`
}

// Audit is every trial's account.
type Audit struct {
	Trials []TrialAudit `json:"-"`
	// Budget is a trial's samples; CheckpointEvery the samples between
	// two periodic checkpoints.
	Budget          float64 `json:"budget_samples"`
	CheckpointEvery float64 `json:"checkpoint_every_samples"`
	// Started counts trials with a run; Finished those that trained to
	// their budget; FinishedTwice those with more than one run that did,
	// or that trained past it; RelaunchedDone those launched again after
	// a run had finished the budget (the extra run trains nothing);
	// Overlapping those with two runs at once; Regressed those that
	// resumed from before a checkpoint they had.
	Started        int `json:"started"`
	Finished       int `json:"finished"`
	FinishedTwice  int `json:"finished_twice"`
	RelaunchedDone int `json:"relaunched_done"`
	Overlapping    int `json:"overlapping"`
	Regressed      int `json:"regressed"`
	Runs           int `json:"runs"`
	// Stops are the runs that ended before their budget and were resumed.
	Stops []StopLoss `json:"-"`
	// LostPerStop summarises Stops' Lost, in samples; LostStops counts
	// those that lost anything.
	LostPerStop stats.Summary `json:"lost_per_stop_samples"`
	LostStops   int           `json:"stops_that_lost"`
	// Rate is the median samples/s of a run on one node (the runs of at
	// least 10 s of reports): the dedicated rate.
	Rate float64 `json:"rate_samples_per_s"`
	// Malformed counts report lines skipped.
	Malformed int `json:"malformed,omitempty"`
}

// AuditCampaign reads campaignDir (DataDir/<campaign>): every trial's
// runs, in run order.
func AuditCampaign(campaignDir string, budget, checkpointEvery float64) (Audit, error) {
	a := Audit{Budget: budget, CheckpointEvery: checkpointEvery}
	trialDirs, err := os.ReadDir(campaignDir)
	if err != nil {
		return a, fmt.Errorf("audit: %w", err)
	}
	var rates []float64
	for _, td := range trialDirs {
		if !td.IsDir() {
			continue
		}
		ta, err := auditTrial(filepath.Join(campaignDir, td.Name()), td.Name(), budget)
		if err != nil {
			return a, err
		}
		if len(ta.Runs) == 0 {
			continue
		}
		a.Trials = append(a.Trials, ta)
		a.Started++
		a.Runs += len(ta.Runs)
		last := ta.Runs[len(ta.Runs)-1]
		if ta.FinishedRuns > 0 {
			a.Finished++
		}
		if ta.FinishedRuns > 1 || last.Max > budget {
			a.FinishedTwice++
		}
		if ta.IdleRuns > 0 {
			a.RelaunchedDone++
		}
		if ta.Overlaps > 0 {
			a.Overlapping++
		}
		if ta.Regressions > 0 {
			a.Regressed++
		}
		for i, r := range ta.Runs {
			a.Malformed += r.Malformed
			if d := r.Last.Sub(r.First).Seconds(); d >= 10 {
				rates = append(rates, (r.Max-r.Start)/d)
			}
			if i+1 < len(ta.Runs) {
				next := ta.Runs[i+1]
				s := StopLoss{Trial: ta.ID, Run: r.Run, At: r.Last, Trained: r.Max, Resumed: next.Start, Lost: math.Max(r.Max-next.Start, 0)}
				a.Stops = append(a.Stops, s)
			}
		}
	}
	lost := make([]float64, len(a.Stops))
	for i, s := range a.Stops {
		lost[i] = s.Lost
		if s.Lost > 0 {
			a.LostStops++
		}
	}
	a.LostPerStop = stats.Summarize(lost)
	a.Rate = stats.Summarize(rates).P50
	return a, nil
}

// auditTrial reads one trial directory's runs.
func auditTrial(dir, id string, budget float64) (TrialAudit, error) {
	ta := TrialAudit{ID: id}
	entries, err := os.ReadDir(filepath.Join(dir, "runs"))
	if os.IsNotExist(err) {
		return ta, nil
	}
	if err != nil {
		return ta, fmt.Errorf("audit: trial %s: %w", id, err)
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() || n < 1 {
			continue
		}
		r, err := auditRun(filepath.Join(dir, "runs", e.Name(), "report.jsonl"), n, budget)
		if err != nil {
			return ta, fmt.Errorf("audit: trial %s: %w", id, err)
		}
		if r.Reports > 0 {
			ta.Runs = append(ta.Runs, r)
		}
	}
	sort.Slice(ta.Runs, func(i, j int) bool { return ta.Runs[i].Run < ta.Runs[j].Run })
	for i, r := range ta.Runs {
		if r.Finished {
			ta.FinishedRuns++
		}
		if r.Idle {
			ta.IdleRuns++
		}
		if i == 0 {
			continue
		}
		prev := ta.Runs[i-1]
		if prev.Last.After(r.First) {
			ta.Overlaps++
		}
		if prev.Checkpoint >= 0 && r.Start < prev.Checkpoint {
			ta.Regressions++
		}
	}
	return ta, nil
}

// auditRun reads one run's report file.
func auditRun(path string, run int, budget float64) (RunAudit, error) {
	r := RunAudit{Run: run, Checkpoint: -1}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), trial.MaxReportLine+1)
	for sc.Scan() {
		rep, err := trial.ParseReport(sc.Bytes())
		if err != nil {
			r.Malformed++
			continue
		}
		t := time.Unix(0, int64(rep.Time*1e9))
		if r.Reports == 0 {
			r.Start, r.First = rep.Samples, t
		}
		r.Reports++
		r.Max = math.Max(r.Max, rep.Samples)
		r.Last = t
		if rep.Checkpoint != "" {
			r.Checkpoint = rep.Samples
		}
		if budget > 0 && rep.Samples >= budget {
			r.Finished = r.Start < budget
			r.Idle = r.Start >= budget
		}
		r.points = append(r.points, samplePoint{t: t, samples: rep.Samples})
	}
	return r, sc.Err()
}

// SamplesIn is the training the audited runs did within [from, to): each
// run's reported progress over the window (the samples at its last
// report before to, less those at its last report before from or at its
// start), less what stops within the window lost and was trained again.
func (a Audit) SamplesIn(from, to time.Time) float64 {
	var sum float64
	for _, ta := range a.Trials {
		for _, r := range ta.Runs {
			at := func(t time.Time) float64 {
				v := r.Start
				for _, p := range r.points {
					if p.t.After(t) {
						break
					}
					v = p.samples
				}
				return v
			}
			sum += math.Max(at(to)-at(from), 0)
		}
	}
	for _, s := range a.Stops {
		if !s.At.Before(from) && s.At.Before(to) {
			sum -= s.Lost
		}
	}
	return math.Max(sum, 0)
}

// Worst are the stops that lost the most, up to n.
func (a Audit) Worst(n int) []StopLoss {
	s := slices.Clone(a.Stops)
	slices.SortStableFunc(s, func(x, y StopLoss) int {
		switch {
		case x.Lost > y.Lost:
			return -1
		case x.Lost < y.Lost:
			return 1
		}
		return 0
	})
	return s[:min(n, len(s))]
}
