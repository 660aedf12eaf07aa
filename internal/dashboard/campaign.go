package dashboard

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
)

// A campaign's page: its trials as rows, versioned, so that a page asks
// only for the rows that changed since the version it holds.

// Row is a trial in the page's table and charts: short keys, since a
// campaign of 100,000 trials sends 100,000 of them on the first load.
type Row struct {
	ID    string             `json:"id"`
	N     int                `json:"n"`           // the trial's number
	State gleaner.TrialState `json:"s"`           // as its campaign classifies it
	Stage string             `json:"g,omitempty"` // rung, generation
	// Value is the objective's latest value; Best its best reported
	// (nil: never reported).
	Value *float64 `json:"v,omitempty"`
	Best  *float64 `json:"b,omitempty"`
	// Started and Ended are Unix milliseconds (0: unknown, or in flight).
	Started  int64          `json:"t0,omitempty"`
	Ended    int64          `json:"t1,omitempty"`
	Samples  float64        `json:"m,omitempty"`
	Restarts int            `json:"r,omitempty"`
	Rescales int            `json:"x,omitempty"`
	Nodes    int            `json:"k,omitempty"`
	Params   map[string]any `json:"p,omitempty"`
	Error    string         `json:"e,omitempty"` // its first line
	// Values and Infeasible are set in a campaign of several objectives
	// or with constraints (campaign_pareto.go): its objectives' latest
	// values, in the spec's order (nil until a report carried every
	// one), and whether that report breaks a constraint.
	Values     []float64 `json:"vs,omitempty"`
	Infeasible bool      `json:"inf,omitempty"`
	// Version is the campaign's version when the row last changed.
	Version int64 `json:"-"`
}

// CampaignPage is what a page polls: the campaign and the rows changed
// since the version it asked from.
type CampaignPage struct {
	Name string `json:"name"`
	// Epoch names the server's watcher of the campaign: a page holding
	// a version of another epoch (the server restarted, or forgot the
	// campaign while no page asked) starts again from version 0.
	Epoch   int64                  `json:"epoch"`
	Version int64                  `json:"version"`
	Total   int                    `json:"total"`
	Status  gleaner.CampaignStatus `json:"status"`
	Spec    SpecView               `json:"spec"`
	// Rows are the trials changed since the version asked (all of them
	// from 0), by column: a column per Row field, by its JSON name.
	Rows Columns `json:"rows"`
	// Importance ranks the parameters (PED-ANOVA over the trials that
	// reported the objective); ImportanceNote says why it is empty.
	Importance     []hpo.ParamImportance `json:"importance,omitempty"`
	ImportanceNote string                `json:"importance_note,omitempty"`
	AsOf           time.Time             `json:"as_of"`
	UIURL          string                `json:"ui_url,omitempty"`
}

// SpecView is what the page needs of the campaign's spec.
type SpecView struct {
	// Objective and Mode are the first objective's: the one the history,
	// the learning curves, the parallel coordinates, the slices and the
	// importance follow.
	Objective string `json:"objective"`
	Mode      string `json:"mode"`
	// Objectives and Constraints are set in a campaign of several
	// objectives or with constraints (gleaner.CampaignSpec.MultiObjective):
	// its rows carry Values, its status a Pareto front.
	Objectives  []hpo.Objective  `json:"objectives,omitempty"`
	Constraints []hpo.Constraint `json:"constraints,omitempty"`
	// ReferencePoint is the spec's reference_point (the status's Pareto
	// says the one its hypervolume is measured at).
	ReferencePoint []float64 `json:"reference_point,omitempty"`
	Algorithm      string    `json:"algorithm"`
	Pool           string    `json:"pool"`
	Inline         bool      `json:"inline,omitempty"`
	BudgetUnit     string    `json:"budget_unit"`
	Space          hpo.Space `json:"space"`
	// Boundaries are the budgets, in BudgetUnit, at which the search
	// decides (ASHA and Hyperband rungs, PBT generations).
	Boundaries     []float64 `json:"boundaries,omitempty"`
	BoundariesKind string    `json:"boundaries_kind,omitempty"` // "rung" or "generation"
}

// Columns are rows by column, each column as long as ID: far fewer bytes
// to send and to parse than an object per row. (Started is left out: the
// page does not show it; the export has it.)
type Columns struct {
	ID    []string             `json:"id"`
	N     []int                `json:"n"`
	State []gleaner.TrialState `json:"s"`
	// Stage and Error are sparse, by index: most trials have none.
	Stage    map[int]string `json:"g"`
	Value    []*float64     `json:"v"`
	Best     []*float64     `json:"b"`
	Ended    []int64        `json:"t1"`
	Samples  []float64      `json:"m"`
	Restarts []int          `json:"r"`
	Rescales []int          `json:"x"`
	Nodes    []int          `json:"k"`
	Error    map[int]string `json:"e"`
	// Params are a column per parameter: nil where a trial has none.
	Params map[string][]any `json:"p"`
	// Values and Infeasible only in a campaign of several objectives or
	// with constraints (Row.Values; Infeasible sparse, by index).
	Values     [][]float64  `json:"vs,omitempty"`
	Infeasible map[int]bool `json:"inf,omitempty"`
}

func columnsOf(rows []*rowEntry, spec SpecView) Columns {
	space := spec.Space
	n := len(rows)
	c := Columns{ID: make([]string, n), N: make([]int, n), State: make([]gleaner.TrialState, n), Stage: map[int]string{},
		Value: make([]*float64, n), Best: make([]*float64, n), Ended: make([]int64, n),
		Samples: make([]float64, n), Restarts: make([]int, n), Rescales: make([]int, n), Nodes: make([]int, n),
		Error: map[int]string{}, Params: map[string][]any{}}
	for _, p := range space {
		c.Params[p.Name] = make([]any, n)
	}
	multi := spec.Objectives != nil
	if multi {
		c.Values, c.Infeasible = make([][]float64, n), map[int]bool{}
	}
	for i, e := range rows {
		r := e.row
		c.ID[i], c.N[i], c.State[i], c.Value[i], c.Best[i] = r.ID, r.N, r.State, r.Value, r.Best
		c.Ended[i], c.Samples[i], c.Restarts[i], c.Rescales[i], c.Nodes[i] = r.Ended, r.Samples, r.Restarts, r.Rescales, r.Nodes
		if r.Stage != "" {
			c.Stage[i] = r.Stage
		}
		if r.Error != "" {
			c.Error[i] = r.Error
		}
		if multi {
			c.Values[i] = r.Values
			if r.Infeasible {
				c.Infeasible[i] = true
			}
		}
		for name, v := range r.Params {
			col, ok := c.Params[name]
			if !ok {
				col = make([]any, n)
				c.Params[name] = col
			}
			col[i] = v
		}
	}
	return c
}

type rowEntry struct {
	row Row
}

// sameRow reports whether two rows of a trial show the same.
func sameRow(a, b Row) bool {
	same := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.ID == b.ID && a.N == b.N && a.State == b.State && a.Stage == b.Stage && same(a.Value, b.Value) && same(a.Best, b.Best) &&
		a.Started == b.Started && a.Ended == b.Ended && a.Samples == b.Samples && a.Restarts == b.Restarts &&
		a.Rescales == b.Rescales && a.Nodes == b.Nodes && a.Error == b.Error && maps.Equal(a.Params, b.Params) &&
		slices.Equal(a.Values, b.Values) && a.Infeasible == b.Infeasible
}

type campaignWatch struct {
	name  string
	epoch int64
	ref   refresher
	f     TrialReader

	mu      sync.Mutex
	version int64
	rows    map[string]*rowEntry
	list    client.TrialList
	page    CampaignPage // without Rows
	// impAt: the version importance was computed at, and when.
	impVersion int64
	impAt      time.Time
	// full is the gzipped answer from version 0 until the next read:
	// every new page asks for it.
	full []byte
}

func (s *Server) watchCampaign(name string) *campaignWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.campaigns[name]
	if w == nil {
		w = &campaignWatch{name: name, epoch: s.opts.Now().UnixNano(), f: s.opts.FollowTrials(name), rows: map[string]*rowEntry{}, impVersion: -1}
		s.campaigns[name] = w
	}
	return w
}

// fresh reads the campaign again when its data is Refresh old.
func (s *Server) freshCampaign(r *http.Request) (*campaignWatch, error) {
	name, err := pathName(r, "campaign")
	if err != nil {
		return nil, err
	}
	w := s.watchCampaign(name)
	err = w.ref.fresh(r.Context(), s.opts.Now(), s.opts.Refresh, func(ctx context.Context) error { return s.readCampaign(ctx, w) })
	return w, err
}

func (s *Server) readCampaign(ctx context.Context, w *campaignWatch) error {
	l, st, err := w.f.Read(ctx)
	s.calls.Add(int64(st.Calls()))
	if err != nil {
		return err
	}
	spec := specView(l.Spec)
	values := newRowValues(spec) // campaign_pareto.go
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range l.Trials {
		row := rowOf(t, spec.Objective, spec.Mode)
		values.set(&row, t)
		if e := w.rows[t.TrialID]; e != nil && sameRow(e.row, row) {
			continue
		}
		w.version++
		row.Version = w.version
		w.rows[t.TrialID] = &rowEntry{row: row}
	}
	w.list = l
	var status gleaner.CampaignStatus
	if l.Status != nil {
		status = *l.Status
	}
	w.full = nil // the page is new: its as-of time, its importance
	w.page = CampaignPage{Name: w.name, Epoch: w.epoch, Version: w.version, Total: len(w.rows), Status: status, Spec: spec,
		AsOf: s.opts.Now(), UIURL: s.workflowURL(gleaner.CampaignWorkflowID(w.name)),
		Importance: w.page.Importance, ImportanceNote: w.page.ImportanceNote}
	// Importance is worth recomputing when trials ended, at most every
	// 10 s (it reads every trial).
	if w.impVersion != w.version && s.opts.Now().Sub(w.impAt) >= 10*time.Second {
		w.page.Importance, w.page.ImportanceNote = importance(l.Spec, l.Trials)
		w.impVersion, w.impAt = w.version, s.opts.Now()
	}
	return nil
}

// rowOf is trial t as a row; its Version is set by the caller.
func rowOf(t gleaner.TrialStatus, objective, mode string) Row {
	r := Row{ID: t.TrialID, N: trialNumber(t.TrialID), State: t.State, Stage: t.Stage, Samples: t.Samples,
		Restarts: t.Restarts, Rescales: t.Rescales, Nodes: len(t.Nodes), Started: unixMilli(t.Started), Ended: unixMilli(t.Ended)}
	if v, ok := t.Metrics[objective]; ok && finite(v) {
		r.Value = &v
	}
	for _, p := range t.History {
		if !finite(p.Value) {
			continue
		}
		if r.Best == nil || (mode == "max") == (p.Value > *r.Best) {
			v := p.Value
			r.Best = &v
		}
	}
	if r.Value != nil && (r.Best == nil || (mode == "max") == (*r.Value > *r.Best)) {
		v := *r.Value
		r.Best = &v
	}
	if len(t.Params) > 0 {
		r.Params = make(map[string]any, len(t.Params))
		for name, v := range t.Params {
			if v.IsStr {
				r.Params[name] = hpo.DescribeValue(v)
			} else if finite(v.Num) {
				r.Params[name] = v.Num
			}
		}
	}
	if t.Error != "" {
		first, _, _ := strings.Cut(strings.TrimPrefix(t.Error, "trial "+t.TrialID+": "), "\n")
		if len(first) > 160 {
			first = first[:157] + "…"
		}
		r.Error = first
	}
	return r
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// trialNumber is the number a trial id ends in ("t00042" → 42).
func trialNumber(id string) int {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(id[i:])
	return n
}

func specView(spec gleaner.CampaignSpec) SpecView {
	first := spec.PrimaryObjective()
	v := SpecView{Objective: first.Metric, Mode: first.Mode, Algorithm: spec.Search.Algorithm,
		Pool: spec.Pool, Inline: spec.Trial.Inline, BudgetUnit: spec.Search.BudgetUnit, Space: spec.Space}
	if v.BudgetUnit == "" {
		v.BudgetUnit = gleaner.BudgetSamples
	}
	if spec.MultiObjective() {
		v.Objectives, v.Constraints, v.ReferencePoint = spec.ObjectiveList(), spec.Constraints, spec.ReferencePoint
	}
	ladder := func(min, eta, maxB float64) []float64 {
		if !(min > 0) || !(eta > 1) || !(maxB >= min) {
			return nil
		}
		var out []float64
		for b := min; b <= maxB*(1+1e-9) && len(out) < 64; b *= eta {
			out = append(out, b)
		}
		return out
	}
	set := spec.Search.Settings
	switch {
	case set.ASHA != nil:
		maxB := set.ASHA.MaxBudget
		if maxB == 0 {
			maxB = set.ASHA.MinBudget * math.Pow(cmp.Or(set.ASHA.ReductionFactor, 3), 6)
		}
		v.Boundaries, v.BoundariesKind = ladder(set.ASHA.MinBudget, cmp.Or(set.ASHA.ReductionFactor, 3), maxB), "rung"
	case set.Hyperband != nil:
		v.Boundaries, v.BoundariesKind = ladder(set.Hyperband.MinBudget, cmp.Or(set.Hyperband.ReductionFactor, 3), set.Hyperband.MaxBudget), "rung"
	case set.PBT != nil && set.PBT.Interval > 0:
		for b := set.PBT.Interval; b <= set.PBT.MaxBudget*(1+1e-9) && len(v.Boundaries) < 256; b += set.PBT.Interval {
			v.Boundaries = append(v.Boundaries, b)
		}
		v.BoundariesKind = "generation"
	}
	return v
}

// importance ranks the space's numeric and categorical parameters over
// the trials that reported the objective.
func importance(spec gleaner.CampaignSpec, trials []gleaner.TrialStatus) ([]hpo.ParamImportance, string) {
	// The first objective's: a campaign of several ranks its parameters
	// by that one (the page says so).
	first := spec.PrimaryObjective()
	var in []hpo.Observation
	for _, t := range trials {
		ended := t.State == gleaner.TrialCompleted || t.State == gleaner.TrialStopped || t.State == gleaner.TrialAtRung ||
			t.State == gleaner.TrialParked
		// A trial's score as the leaderboard counts it: its best value.
		if best := rowOf(t, first.Metric, first.Mode).Best; best != nil && ended && len(t.Params) > 0 {
			// Stopped before their budget: their value is an intermediate
			// one, ranked after every completed trial's.
			in = append(in, hpo.Observation{Params: t.Params, Metric: *best, Stopped: t.State != gleaner.TrialCompleted})
		}
	}
	// Every trial counts up to 20,000; past that, an even sample.
	if len(in) > 20_000 {
		step := float64(len(in)) / 20_000
		sample := make([]hpo.Observation, 0, 20_000)
		for i := 0.0; int(i) < len(in); i += step {
			sample = append(sample, in[int(i)])
		}
		in = sample
	}
	imp, err := hpo.Importance(spec.Space, in, first.Mode != "max", 0)
	if err != nil {
		return nil, err.Error()
	}
	return imp, ""
}

func (s *Server) campaign(w http.ResponseWriter, r *http.Request) {
	since, err := intParam(r, "since", 0, 0, math.MaxInt64)
	if err != nil {
		httpError(w, err)
		return
	}
	cw, err := s.freshCampaign(r)
	if err != nil {
		httpError(w, err)
		return
	}
	s.forget()
	gz := strings.Contains(r.Header.Get("Accept-Encoding"), "gzip")
	b, zipped, err := cw.answer(since, gz)
	if err != nil {
		httpError(w, err)
		return
	}
	// Written once the watcher is free again: a slow reader holds no lock.
	if zipped {
		writeGzipped(w, b)
		return
	}
	writeRaw(w, r, "application/json", b)
}

// answer is the page with the rows changed since the version given (all
// of them from 0, or from a version the watcher never had), gzipped
// when zip; every new page's answer is kept until the next read.
func (cw *campaignWatch) answer(since int64, zip bool) (b []byte, zipped bool, err error) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if since > cw.version {
		since = 0
	}
	if since == 0 && zip && cw.full != nil {
		return cw.full, true, nil
	}
	page := cw.page
	entries := make([]*rowEntry, 0, len(cw.rows))
	for _, e := range cw.rows {
		if e.row.Version > since {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b *rowEntry) int { return a.row.N - b.row.N })
	page.Rows = columnsOf(entries, page.Spec)
	if b, err = json.Marshal(page); err != nil {
		return nil, false, err
	}
	if since == 0 && zip {
		cw.full = gzipBytes(b)
		return cw.full, true, nil
	}
	return b, false, nil
}
