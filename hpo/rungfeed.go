package hpo

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// revisionOneRung is the revision from which ASHA and Hyperband fit a TPE
// sampler's l and g on the results at one rung only, as BOHB fits its
// model (Falkner, Klein and Hutter, "BOHB: Robust and Efficient
// Hyperparameter Optimization at Scale", ICML 2018, §4.2): the results
// at the largest budget that has at least nMin of them (complete trials
// above every rung), every trial that reached it ranked by its metric
// there, and no other trial at all. A slow starter's value at a low rung
// is so never compared with a fast starter's at a high one, nor a trial
// judged early with one judged late. Revision 3 (rungrank.go) ranked
// every trial at the highest rung it reached; on curves that cross it
// left ASHA's TPE behind random sampling (docs/benchmarks.md). BOHB's
// other guard, a third of its proposals at random (random_fraction), is
// not taken: on both crossing families it did worse than without in
// seven of eight settings (docs/benchmarks.md).
const revisionOneRung = 4

// levelComplete is the level of a complete result (the trial ran its
// whole budget): above every rung's.
const levelComplete = math.MaxInt32

// rungFeed is a TPE sampler fed results by rung (revisionOneRung). ASHA
// and Hyperband tell it each result at each rung a trial reaches
// (result); before each proposal it gives its TPE, as that TPE's only
// observations, the results at the rung fit chooses. The TPE is told of
// trial ends without a metric, so it learns from nothing else.
//
// It keeps, per trial that has a result, its row and its results: at
// most as many trials as the TPE keeps observations (max_observations).
type rungFeed struct {
	t *tpe
	// nMin is how many results a rung needs to be fitted on:
	// max(n_startup_trials, d+2), BOHB's d+1 points plus one so that l
	// and g each have one (BOHB's min_points_in_model is d+1).
	nMin int
	st   rungFeedState
}

// rungFeedState is the snapshot: the TPE's (its observations left out:
// fit puts them back before each proposal) and the results.
type rungFeedState struct {
	Sampler json.RawMessage `json:"sampler"`
	Trials  []rungTrial     `json:"trials,omitempty"`
}

// rungTrial is one trial's results, losses oriented lower is better
// (±Inf as ±MaxFloat64): Loss[j] at level First+j, contiguous; Final its
// complete result when Complete. A warm start's results are complete,
// their ID empty.
type rungTrial struct {
	ID       string    `json:"id,omitempty"`
	Row      []float64 `json:"row"`
	First    int       `json:"first,omitempty"`
	Loss     []float64 `json:"loss,omitempty"`
	Final    float64   `json:"final,omitempty"`
	Complete bool      `json:"complete,omitempty"`
}

// at is the trial's loss at level, and whether it has one.
func (r *rungTrial) at(level int) (float64, bool) {
	if level == levelComplete {
		return r.Final, r.Complete
	}
	j := level - r.First
	if j < 0 || j >= len(r.Loss) {
		return 0, false
	}
	return r.Loss[j], true
}

// newRungFeed feeds t by rung; t's warm start becomes complete results.
func newRungFeed(t *tpe) *rungFeed {
	f := &rungFeed{t: t, nMin: max(t.set.nStartup, len(t.dims)+2)}
	for i, row := range t.st.Observed {
		f.st.Trials = append(f.st.Trials, rungTrial{Row: row, Final: f.loss(t.st.Metrics[i]), Complete: true})
	}
	return f
}

// loss orients a metric as the TPE's mode would: lower is better.
func (f *rungFeed) loss(metric float64) float64 {
	if f.t.cfg.Mode == "max" {
		metric = -metric
	}
	return clamp(metric, -math.MaxFloat64, math.MaxFloat64)
}

// result records trial id's loss at level (levelComplete: its complete
// result). A trial the feed has no result of yet must be outstanding in
// the TPE (its row is taken there); otherwise the result is dropped. A
// trial that passed several rungs at one report has this loss at each.
func (f *rungFeed) result(id string, level int, loss float64) {
	loss = clamp(loss, -math.MaxFloat64, math.MaxFloat64)
	k := slices.IndexFunc(f.st.Trials, func(r rungTrial) bool { return r.ID == id })
	if k < 0 {
		i := slices.Index(f.t.st.Outstanding, id)
		if i < 0 {
			return
		}
		f.st.Trials = append(f.st.Trials, rungTrial{ID: id, Row: f.t.st.Pending[i], First: level})
		k = len(f.st.Trials) - 1
		if keep := max(f.t.set.maxObs, f.t.set.gammaMax+1); len(f.st.Trials) > keep+keep/10 {
			f.st.Trials = slices.Delete(f.st.Trials, 0, len(f.st.Trials)-keep)
			k = len(f.st.Trials) - 1
		}
	}
	r := &f.st.Trials[k]
	switch {
	case level == levelComplete:
		r.Final, r.Complete = loss, true
	case len(r.Loss) == 0:
		r.First, r.Loss = level, []float64{loss}
	case level >= r.First:
		for len(r.Loss) <= level-r.First {
			r.Loss = append(r.Loss, loss)
		}
		r.Loss[level-r.First] = loss
	}
}

// level is the rung fit fits the TPE on: the highest level (complete
// results above all) with at least nMin results; 0 if none has.
func (f *rungFeed) level() int {
	n := map[int]int{}
	for _, r := range f.st.Trials {
		if r.Complete {
			n[levelComplete]++
		}
		for j := range r.Loss {
			n[r.First+j]++
		}
	}
	best := 0
	for lv, c := range n {
		if c >= f.nMin && lv > best {
			best = lv
		}
	}
	return best
}

// fit gives the TPE the results at f.level() as its observations, in
// the order the trials first had a result; none before a rung has nMin
// (the TPE then samples at random, nMin being at least its
// n_startup_trials).
func (f *rungFeed) fit() {
	t := f.t
	t.st.Observed, t.st.Metrics, t.st.Stopped, t.st.Seq = nil, nil, nil, nil
	if lv := f.level(); lv > 0 {
		for _, r := range f.st.Trials {
			if v, ok := r.at(lv); ok {
				if t.cfg.Mode == "max" {
					v = -v
				}
				t.st.Observed = append(t.st.Observed, r.Row)
				t.st.Metrics = append(t.st.Metrics, v)
			}
		}
	}
	t.reindex()
}

func (f *rungFeed) Initial() []Action {
	f.fit()
	return f.t.Initial()
}

func (f *rungFeed) TrialCreated(id string) []Action { return f.t.TrialCreated(id) }

func (f *rungFeed) TrialReported(id string, samples, metric float64) []Action {
	return f.t.TrialReported(id, samples, metric)
}

// TrialFinished ends the trial in the TPE without a metric: its results
// came by result.
func (f *rungFeed) TrialFinished(id string, _ float64, o Outcome) []Action {
	f.fit()
	return f.t.TrialFinished(id, math.NaN(), o)
}

func (f *rungFeed) TrialFailed(id string) []Action {
	f.fit()
	return f.t.TrialFailed(id)
}

func (f *rungFeed) Progress() float64 { return f.t.Progress() }

func (f *rungFeed) Snapshot() ([]byte, error) {
	t := f.t
	obs, met, stop, seq := t.st.Observed, t.st.Metrics, t.st.Stopped, t.st.Seq
	t.st.Observed, t.st.Metrics, t.st.Stopped, t.st.Seq = nil, nil, nil, nil
	inner, err := t.Snapshot()
	t.st.Observed, t.st.Metrics, t.st.Stopped, t.st.Seq = obs, met, stop, seq
	if err != nil {
		return nil, err
	}
	return marshalSnapshot(AlgorithmTPE+"-by-rung", rungFeedState{Sampler: inner, Trials: f.st.Trials})
}

func (f *rungFeed) Restore(snapshot []byte) error {
	var st rungFeedState
	if err := unmarshalSnapshot(AlgorithmTPE+"-by-rung", snapshot, &st); err != nil {
		return err
	}
	for _, r := range st.Trials {
		if len(r.Row) != len(f.t.dims) || r.First < 0 || len(r.Loss) == 0 && !r.Complete {
			return fmt.Errorf("restore tpe-by-rung searcher: trial %q: row of %d for %d parameters, first level %d, %d results", r.ID, len(r.Row), len(f.t.dims), r.First, len(r.Loss))
		}
	}
	if err := f.t.Restore(st.Sampler); err != nil {
		return err
	}
	f.st = rungFeedState{Trials: st.Trials}
	f.fit()
	return nil
}
