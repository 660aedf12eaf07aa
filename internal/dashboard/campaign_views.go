package dashboard

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
)

// The views of a campaign that read more of each trial than its row:
// learning curves, the timeline, one trial, the export.

// curvePoints bounds a learning curve as sent: the server downsamples.
const curvePoints = 48

// Curves is the learning-curve view.
type Curves struct {
	Unit           string    `json:"unit"` // the x axis: samples
	Boundaries     []float64 `json:"boundaries,omitempty"`
	BoundariesKind string    `json:"boundaries_kind,omitempty"`
	BoundariesNote string    `json:"boundaries_note,omitempty"`
	Curves         []Curve   `json:"curves"`
	// Of is how many trials have a curve; Curves holds the top ones and
	// the newest others.
	Of int `json:"of"`
}

// Curve is one trial's objective over samples, downsampled.
type Curve struct {
	ID     string             `json:"id"`
	N      int                `json:"n"`
	State  gleaner.TrialState `json:"s"`
	Stage  string             `json:"g,omitempty"`
	Top    bool               `json:"top,omitempty"`
	Points [][2]float64       `json:"pts"`
}

func (s *Server) curves(w http.ResponseWriter, r *http.Request) {
	top, err := intParam(r, "top", 10, 0, 1000)
	if err == nil {
		var others int64
		others, err = intParam(r, "others", 100, 0, 2000)
		if err == nil {
			cw, ferr := s.freshCampaign(r)
			if ferr != nil {
				httpError(w, ferr)
				return
			}
			writeJSON(w, r, cw.curves(int(top), int(others)))
			return
		}
	}
	httpError(w, err)
}

func (cw *campaignWatch) curves(top, others int) Curves {
	cw.mu.Lock()
	trials := cw.list.Trials
	spec := cw.page.Spec
	rows := cw.rows
	var with []gleaner.TrialStatus
	best := map[string]float64{}
	for _, t := range trials {
		if len(t.History) == 0 {
			continue
		}
		with = append(with, t)
		if e := rows[t.TrialID]; e != nil && e.row.Best != nil {
			best[t.TrialID] = *e.row.Best
		}
	}
	cw.mu.Unlock()
	out := Curves{Unit: gleaner.BudgetSamples, Of: len(with), Curves: []Curve{}}
	if spec.BudgetUnit == gleaner.BudgetSamples {
		out.Boundaries, out.BoundariesKind = spec.Boundaries, spec.BoundariesKind
	} else if len(spec.Boundaries) > 0 {
		out.BoundariesNote = fmt.Sprintf("%ss are in %s; the curves are over samples", spec.BoundariesKind, spec.BudgetUnit)
	}
	// The top trials by their best value, then the newest others.
	ranked := slices.Clone(with)
	slices.SortStableFunc(ranked, func(a, b gleaner.TrialStatus) int {
		va, oka := best[a.TrialID]
		vb, okb := best[b.TrialID]
		switch {
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		case spec.Mode == "max":
			return cmp.Compare(vb, va)
		}
		return cmp.Compare(va, vb)
	})
	chosen := map[string]bool{}
	for _, t := range ranked[:min(top, len(ranked))] {
		chosen[t.TrialID] = true
		out.Curves = append(out.Curves, curveOf(t, true))
	}
	for i := len(with) - 1; i >= 0 && others > 0; i-- {
		if !chosen[with[i].TrialID] {
			out.Curves = append(out.Curves, curveOf(with[i], false))
			others--
		}
	}
	return out
}

func curveOf(t gleaner.TrialStatus, top bool) Curve {
	c := Curve{ID: t.TrialID, N: trialNumber(t.TrialID), State: t.State, Stage: t.Stage, Top: top}
	h := t.History
	step := max(1, (len(h)+curvePoints-2)/(curvePoints-1))
	for i := 0; i < len(h); i += step {
		if finite(h[i].Value) {
			c.Points = append(c.Points, [2]float64{h[i].Samples, h[i].Value})
		}
	}
	if last := h[len(h)-1]; (len(h)-1)%step != 0 && finite(last.Value) {
		c.Points = append(c.Points, [2]float64{last.Samples, last.Value})
	}
	return c
}

// TimelineTrial is a trial's periods for the timeline.
type TimelineTrial struct {
	ID      string             `json:"id"`
	N       int                `json:"n"`
	State   gleaner.TrialState `json:"s"`
	Started int64              `json:"t0,omitempty"`
	Ended   int64              `json:"t1,omitempty"`
	Spans   []TimelineSpan     `json:"spans"`
	Dropped int                `json:"dropped,omitempty"`
}

// TimelineSpan is a period: from (Unix ms), state, nodes, why it began.
type TimelineSpan struct {
	From  int64              `json:"f"`
	State gleaner.TrialState `json:"s"`
	Nodes int                `json:"k,omitempty"`
	Why   string             `json:"w,omitempty"`
}

// Timeline is the trial timeline view: the newest trials.
type Timeline struct {
	Trials []TimelineTrial `json:"trials"`
	Of     int             `json:"of"`
	Now    int64           `json:"now"`
}

func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 100, 1, 2000)
	if err != nil {
		httpError(w, err)
		return
	}
	cw, err := s.freshCampaign(r)
	if err != nil {
		httpError(w, err)
		return
	}
	cw.mu.Lock()
	trials := cw.list.Trials
	cw.mu.Unlock()
	out := Timeline{Of: len(trials), Now: s.opts.Now().UnixMilli(), Trials: []TimelineTrial{}}
	for i := len(trials) - 1; i >= 0 && len(out.Trials) < int(limit); i-- {
		t := trials[i]
		tt := TimelineTrial{ID: t.TrialID, N: trialNumber(t.TrialID), State: t.State, Started: unixMilli(t.Started),
			Ended: unixMilli(t.Ended), Dropped: t.SpansDropped}
		tt.Spans = []TimelineSpan{}
		for _, sp := range t.Spans {
			tt.Spans = append(tt.Spans, TimelineSpan{From: unixMilli(sp.From), State: sp.State, Nodes: sp.Nodes, Why: sp.Why})
		}
		out.Trials = append(out.Trials, tt)
	}
	slices.Reverse(out.Trials)
	writeJSON(w, r, out)
}

// TrialDetail is one trial whole, with its failure described as `gleaner
// failures` does (its error, log path and the log's last lines).
type TrialDetail struct {
	gleaner.TrialStatus
	Failure string `json:"failure,omitempty"`
}

func (s *Server) trial(w http.ResponseWriter, r *http.Request) {
	cw, err := s.freshCampaign(r)
	if err != nil {
		httpError(w, err)
		return
	}
	id := r.PathValue("id")
	cw.mu.Lock()
	i := slices.IndexFunc(cw.list.Trials, func(t gleaner.TrialStatus) bool { return t.TrialID == id })
	var d TrialDetail
	if i >= 0 {
		d.TrialStatus = cw.list.Trials[i]
	}
	cw.mu.Unlock()
	if i < 0 {
		httpError(w, fmt.Errorf("campaign %q has no trial %q: %w", cw.name, id, client.ErrNotFound))
		return
	}
	if d.State == gleaner.TrialFailed {
		d.Failure = client.DescribeFailure(d.TrialStatus)
	}
	writeJSON(w, r, d)
}

func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format != "csv" && format != "json" {
		httpError(w, fmt.Errorf("%w: format=%q: want csv or json", errBadRequest, format))
		return
	}
	cw, err := s.freshCampaign(r)
	if err != nil {
		httpError(w, err)
		return
	}
	cw.mu.Lock()
	trials := cw.list.Trials
	spec := cw.page.Spec
	rows := make([]Row, len(trials))
	for i, t := range trials {
		if e := cw.rows[t.TrialID]; e != nil {
			rows[i] = e.row
		}
	}
	cw.mu.Unlock()
	file := fmt.Sprintf("%s-trials.%s", cw.name, format)
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", file))
	if format == "json" {
		b, err := json.MarshalIndent(trials, "", "  ")
		if err != nil {
			httpError(w, err)
			return
		}
		writeRaw(w, r, "application/json", b)
		return
	}
	writeRaw(w, r, "text/csv; charset=utf-8", trialsCSV(rows, spec))
}

// trialsCSV is the trial table as CSV: a row per trial, a column per
// parameter; in a campaign of several objectives, a value_METRIC column
// per objective (its latest complete result) and, with constraints,
// feasible (yes, no; empty without a result).
func trialsCSV(rows []Row, spec SpecView) []byte {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	head := []string{"trial", "number", "state", "stage", spec.Objective, "best_" + spec.Objective, "started", "ended",
		"samples", "restarts", "rescales"}
	for _, o := range spec.Objectives {
		head = append(head, "value_"+o.Metric)
	}
	if spec.Objectives != nil && len(spec.Constraints) > 0 {
		head = append(head, "feasible")
	}
	for _, p := range spec.Space {
		head = append(head, p.Name)
	}
	_ = cw.Write(append(head, "error"))
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'g', -1, 64)
	}
	when := func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
	}
	for _, r := range rows {
		rec := []string{r.ID, strconv.Itoa(r.N), string(r.State), r.Stage, num(r.Value), num(r.Best), when(r.Started), when(r.Ended),
			strconv.FormatFloat(r.Samples, 'g', -1, 64), strconv.Itoa(r.Restarts), strconv.Itoa(r.Rescales)}
		for i := range spec.Objectives {
			if r.Values == nil {
				rec = append(rec, "")
			} else {
				rec = append(rec, strconv.FormatFloat(r.Values[i], 'g', -1, 64))
			}
		}
		if spec.Objectives != nil && len(spec.Constraints) > 0 {
			rec = append(rec, feasibleText(r))
		}
		for _, p := range spec.Space {
			switch v := r.Params[p.Name].(type) {
			case nil:
				rec = append(rec, "")
			case float64:
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			default:
				rec = append(rec, fmt.Sprint(v))
			}
		}
		_ = cw.Write(append(rec, r.Error))
	}
	cw.Flush()
	return b.Bytes()
}
