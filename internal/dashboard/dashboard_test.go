package dashboard

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
)

func TestTokenGuardsEveryPathAndSetsACookie(t *testing.T) {
	s := New(nil, Options{Token: "s3cret"})
	get := func(path string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	require.Equal(t, http.StatusUnauthorized, get("/", nil).Code)
	require.Equal(t, http.StatusUnauthorized, get("/api/stats", map[string]string{"Authorization": "Bearer wrong"}).Code)
	require.Equal(t, http.StatusUnauthorized, get("/app.js?token=wrong", nil).Code)
	require.Equal(t, http.StatusOK, get("/api/stats", map[string]string{"Authorization": "Bearer s3cret"}).Code)
	w := get("/?token=s3cret", nil)
	require.Equal(t, http.StatusSeeOther, w.Code, "the cookie is set and the token leaves the address")
	require.Equal(t, "/", w.Header().Get("Location"))
	cookie := w.Result().Cookies()
	require.Len(t, cookie, 1)
	require.True(t, cookie[0].HttpOnly)
	w = get("/", map[string]string{"Cookie": cookie[0].Name + "=" + cookie[0].Value})
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), "<script src=\"app.js\">")

	// Read-only: nothing but GET and HEAD.
	r := httptest.NewRequest(http.MethodPost, "/api/stats", nil)
	r.Header.Set("Authorization", "Bearer s3cret")
	pw := httptest.NewRecorder()
	s.ServeHTTP(pw, r)
	require.Equal(t, http.StatusMethodNotAllowed, pw.Code)
}

// local is a request to the dashboard on this machine.
func local(method, path string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Host = "127.0.0.1:8234"
	return r
}

// Without a token, only requests addressed to this machine are answered
// (a page elsewhere may rebind its name to 127.0.0.1); with one, any.
func TestWithoutATokenOnlyLocalHostsAreAnswered(t *testing.T) {
	s := New(nil, Options{})
	for host, want := range map[string]int{"127.0.0.1:8234": 200, "localhost:8234": 200, "[::1]:8234": 200,
		"evil.example:8234": 403, "10.0.0.5:8234": 403} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, want, w.Code, host)
	}
	s = New(nil, Options{Token: "t"})
	r := httptest.NewRequest(http.MethodGet, "/app.js", nil)
	r.Host = "dash.example.org"
	r.Header.Set("Authorization", "Bearer t")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.Code)
}

func TestBadNamesAndParametersAreNamed(t *testing.T) {
	s := New(nil, Options{})
	for path, want := range map[string]string{
		"/api/campaigns/has%20space":          "campaign",
		"/api/campaigns/ok?since=-1":          "since",
		"/api/pools/ok?window=1":              "window",
		"/api/campaigns/ok/export?format=xml": "format",
	} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, local(http.MethodGet, path))
		require.Equal(t, http.StatusBadRequest, w.Code, path)
		require.Contains(t, w.Body.String(), want, path)
	}
}

func TestAssetsAreEmbedded(t *testing.T) {
	s := New(nil, Options{})
	for _, p := range []string{"/", "/app.js", "/style.css"} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, local(http.MethodGet, p))
		require.Equal(t, http.StatusOK, w.Code, p)
		require.NotEmpty(t, w.Body.Bytes(), p)
	}
}

func TestRowOfScoresByTheObjective(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tr := gleaner.TrialStatus{TrialID: "t00042", Params: hpo.Params{"lr": hpo.Float(0.01), "opt": hpo.String("adam")},
		TrialProgress: gleaner.TrialProgress{State: gleaner.TrialFailed, Metrics: map[string]float64{"val_loss": 0.5, "acc": 0.9},
			History: []gleaner.MetricPoint{{Samples: 1, Value: 0.9}, {Samples: 2, Value: 0.3}, {Samples: 3, Value: 0.5}},
			Error:   "trial t00042: exit status 1\nlog: /x/run.log\nTraceback", Started: start, Ended: start.Add(time.Minute), Restarts: 2}}
	r := rowOf(tr, "val_loss", "min")
	require.Equal(t, 42, r.N)
	require.Equal(t, 0.5, *r.Value)
	require.Equal(t, 0.3, *r.Best, "the best over its history")
	require.Equal(t, "exit status 1", r.Error, "the first line, without the trial's id")
	require.Equal(t, start.UnixMilli(), r.Started)
	require.Equal(t, start.Add(time.Minute).UnixMilli(), r.Ended)
	require.Equal(t, map[string]any{"lr": 0.01, "opt": "adam"}, r.Params)

	r = rowOf(tr, "val_loss", "max")
	require.Equal(t, 0.9, *r.Best)
	r = rowOf(tr, "missing", "min")
	require.Nil(t, r.Value)
}

func TestCurvesAreDownsampledKeepingTheLastPoint(t *testing.T) {
	var h []gleaner.MetricPoint
	for i := range 256 {
		h = append(h, gleaner.MetricPoint{Samples: float64(i), Value: float64(1000 - i)})
	}
	c := curveOf(gleaner.TrialStatus{TrialID: "t00001", TrialProgress: gleaner.TrialProgress{History: h}}, true)
	require.LessOrEqual(t, len(c.Points), curvePoints)
	require.Equal(t, [2]float64{0, 1000}, c.Points[0])
	require.Equal(t, [2]float64{255, 745}, c.Points[len(c.Points)-1])
}

func TestBoundariesOfTheSearch(t *testing.T) {
	spec := gleaner.CampaignSpec{Objective: gleaner.ObjectiveSpec{Metric: "loss"}}
	spec.Search.ASHA = &hpo.ASHASettings{MinBudget: 100, ReductionFactor: 3, MaxBudget: 2700}
	v := specView(spec)
	require.Equal(t, "rung", v.BoundariesKind)
	require.InDeltaSlice(t, []float64{100, 300, 900, 2700}, v.Boundaries, 1e-9)

	spec.Search.ASHA = nil
	spec.Search.PBT = &hpo.PBTSettings{Interval: 500, MaxBudget: 2000}
	v = specView(spec)
	require.Equal(t, "generation", v.BoundariesKind)
	require.Equal(t, []float64{500, 1000, 1500, 2000}, v.Boundaries)
}

func TestTrialsCSV(t *testing.T) {
	v := 0.25
	rows := []Row{{ID: "t00001", N: 1, State: gleaner.TrialCompleted, Value: &v, Best: &v, Params: map[string]any{"lr": 0.01, "opt": "sgd"}},
		{ID: "t00002", N: 2, State: gleaner.TrialFailed, Error: `exit 1, "oom"`}}
	spec := SpecView{Objective: "val_loss", Space: hpo.Space{{Name: "lr"}, {Name: "opt", Choices: []string{"sgd"}}}}
	recs, err := csv.NewReader(bytes.NewReader(trialsCSV(rows, spec))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"trial", "number", "state", "stage", "val_loss", "best_val_loss", "started", "ended", "samples", "restarts", "rescales", "lr", "opt", "error"}, recs[0])
	require.Equal(t, "0.25", recs[1][4])
	require.Equal(t, "0.01", recs[1][11])
	require.Equal(t, "sgd", recs[1][12])
	require.Equal(t, `exit 1, "oom"`, recs[2][13])
	require.Equal(t, "", recs[2][11])
}

// Many pages at once make one read; a read younger than the refresh
// period is shared.
func TestRefresherReadsOncePerPeriod(t *testing.T) {
	var f refresher
	var reads atomic.Int32
	release := make(chan struct{})
	read := func(context.Context) error { reads.Add(1); <-release; return nil }
	now := time.Unix(1000, 0)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); require.NoError(t, f.fresh(context.Background(), now, time.Second, read)) }()
	}
	// Wait until one read runs and the others wait for it.
	require.Eventually(t, func() bool { return reads.Load() == 1 }, 5*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	require.EqualValues(t, 1, reads.Load())
	require.NoError(t, f.fresh(context.Background(), now.Add(500*time.Millisecond), time.Second, read))
	require.EqualValues(t, 1, reads.Load())
	// A stale answer comes at once; the next read runs behind it.
	release = make(chan struct{})
	require.NoError(t, f.fresh(context.Background(), now.Add(2*time.Second), time.Second, read))
	require.Eventually(t, func() bool { return reads.Load() == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, f.fresh(context.Background(), now.Add(2*time.Second), time.Second, read), "while it runs, no other")
	close(release)
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.running == nil
	}, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 2, reads.Load())
}

func TestPoolPageFromTheLog(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	n := func(id string) gleaner.Node { return gleaner.Node{ID: id, Type: "cpu"} }
	chunk := gleaner.PoolRecords{Pool: "p", Chunk: 0, Start: gleaner.PoolSnapshot{At: t0}, Events: []gleaner.PoolEvent{
		{At: at(0), Kind: gleaner.PoolEventNodes, Added: []gleaner.Node{n("a"), n("b")}},
		{At: at(1), Kind: gleaner.PoolEventRegister, Trial: "tr1", Campaign: "c"},
		{At: at(2), Kind: gleaner.PoolEventSolve, Epoch: 1, Trigger: "register", Solve: &gleaner.SolveSummary{Status: "optimal"}, Measured: 100,
			Changes: []gleaner.NodeChange{{Trial: "tr1", Campaign: "c", Nodes: []string{"a", "b"}, Change: "start"}}},
	}}
	live := gleaner.PoolLog{Pool: "p", Chunks: 1, Start: gleaner.PoolSnapshot{At: at(2), Nodes: []gleaner.Node{n("a"), n("b")},
		Holders: map[string][]string{"tr1": {"a", "b"}}, Campaigns: map[string]string{"tr1": "c"}}, Events: []gleaner.PoolEvent{
		{At: at(3600), Kind: gleaner.PoolEventNodes, Removed: []string{"b"}},
		{At: at(3601), Kind: gleaner.PoolEventSolve, Epoch: 2, Trigger: "nodes", Solve: &gleaner.SolveSummary{Status: "optimal"}, Measured: 60,
			Changes: []gleaner.NodeChange{{Trial: "tr1", Campaign: "c", Nodes: []string{"a"}, Before: []string{"a", "b"}, Change: "shrink"}}},
	}}
	status := gleaner.PoolStatus{Name: "p", PoolState: gleaner.PoolState{Nodes: []gleaner.Node{n("a")}, Trials: []gleaner.PoolTrial{
		{Registration: gleaner.RegisterTrial{TrialID: "tr1", CampaignID: "c"}, Nodes: []string{"a"}, RescaleUpCost: 36, RescaleDownCost: 18}}}}
	p := poolPage("p", []gleaner.PoolRecords{chunk}, live, status, t0, at(7200))
	require.Len(t, p.Nodes, 2)
	require.True(t, p.Nodes[0].Present)
	require.False(t, p.Nodes[1].Present, "b was taken back")
	require.Len(t, p.Solves, 2)
	require.Equal(t, "nodes", p.Solves[1].Trigger)
	require.Len(t, p.Markers, 2)
	require.Equal(t, "shrink", p.Markers[1].Change)
	// a held 2 h, b held 1 h: 3 node-hours used of 3 harvested (a 1 s idle
	// gap at the start aside).
	require.InDelta(t, 3, p.Harvest.UsedNodeHours, 0.01)
	require.InDelta(t, 3, p.Harvest.HeldNodeHours, 0.01)
	require.Equal(t, 1, p.Harvest.Rescales)
	require.InDelta(t, 1*18.0/3600, p.Harvest.RescaleNodeHours, 1e-9, "a shrink costs the trial's down cost on the nodes it keeps")
	require.Equal(t, [][2]float64{{float64(at(2).UnixMilli()), 100}, {float64(at(3601).UnixMilli()), 60}}, p.Harvest.SamplesPerSecond)
	held := map[string][]PageSpan{}
	for _, sp := range p.Spans {
		if sp.Trial == "tr1" {
			held[sp.Node] = append(held[sp.Node], sp)
		}
	}
	require.Len(t, held["a"], 1, "a held by tr1 throughout: %v", p.Spans)
	require.Zero(t, held["a"][0].To, "still held")
	require.Len(t, held["b"], 1, "%v", p.Spans)
	require.Equal(t, at(3600).UnixMilli(), held["b"][0].To, "b's span ends when the scheduler took it back")
	// A window that starts later clips the spans and drops older solves.
	p = poolPage("p", []gleaner.PoolRecords{chunk}, live, status, at(1800), at(7200))
	require.Len(t, p.Solves, 1)
	require.NotEmpty(t, p.Spans)
	for _, sp := range p.Spans {
		require.GreaterOrEqual(t, sp.From, at(1800).UnixMilli())
	}
}

// fakeReader answers its trials; reads counts the reads.
type fakeReader struct {
	mu     sync.Mutex
	trials []gleaner.TrialStatus
	reads  int
}

func (f *fakeReader) Read(context.Context) (client.TrialList, client.FollowStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	st := gleaner.CampaignStatus{Campaign: "c", State: gleaner.CampaignRunning}
	spec := gleaner.CampaignSpec{Name: "c", Objective: gleaner.ObjectiveSpec{Metric: "loss", Mode: "min"},
		Space: hpo.Space{{Name: "lr", Type: hpo.ParamFloat, Min: 0, Max: 1}}}
	return client.TrialList{Trials: slices.Clone(f.trials), Spec: spec, Status: &st}, client.FollowStats{Queries: 1}, nil
}

func (f *fakeReader) set(i int, samples float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trials[i].Samples = samples
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func trialsN(n int) []gleaner.TrialStatus {
	out := make([]gleaner.TrialStatus, n)
	for i := range out {
		out[i] = gleaner.TrialStatus{TrialID: fmt.Sprintf("t%05d", i+1), Params: hpo.Params{"lr": hpo.Float(0.1)},
			TrialProgress: gleaner.TrialProgress{State: gleaner.TrialRunning, Samples: 1}}
	}
	return out
}

func getPage(t *testing.T, s *Server, path string) CampaignPage {
	t.Helper()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, local(http.MethodGet, path))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var p CampaignPage
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
	return p
}

// settled waits until the campaign's watcher has no read running.
func settled(t *testing.T, s *Server, name string) {
	t.Helper()
	s.mu.Lock()
	w := s.campaigns[name]
	s.mu.Unlock()
	require.Eventually(t, func() bool {
		w.ref.mu.Lock()
		defer w.ref.mu.Unlock()
		return w.ref.running == nil
	}, 5*time.Second, time.Millisecond)
}

// A page asks with the version it holds and gets only the trials that
// changed since; a version from another watcher (the server restarted)
// gets everything, with the new epoch.
func TestPagesGetOnlyWhatChanged(t *testing.T) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	r := &fakeReader{trials: trialsN(3)}
	s := New(nil, Options{Now: clk.Now, Refresh: time.Second, FollowTrials: func(string) TrialReader { return r }})
	p := getPage(t, s, "/api/campaigns/c?since=0")
	require.Equal(t, []string{"t00001", "t00002", "t00003"}, p.Rows.ID)
	v := p.Version
	require.Equal(t, p.Rows.ID, getPage(t, s, "/api/campaigns/c?since=0").Rows.ID, "the same answer again")
	require.Empty(t, getPage(t, s, fmt.Sprintf("/api/campaigns/c?since=%d", v)).Rows.ID)

	r.set(1, 500)
	clk.add(2 * time.Second)
	getPage(t, s, fmt.Sprintf("/api/campaigns/c?since=%d", v)) // starts the read behind the answer
	settled(t, s, "c")
	p = getPage(t, s, fmt.Sprintf("/api/campaigns/c?since=%d", v))
	require.Equal(t, []string{"t00002"}, p.Rows.ID)
	require.Equal(t, []float64{500}, p.Rows.Samples)
	require.Greater(t, p.Version, v)
	require.Equal(t, p.Rows.ID, getPage(t, s, fmt.Sprintf("/api/campaigns/c?since=%d", v)).Rows.ID)
	full := getPage(t, s, "/api/campaigns/c?since=0")
	require.Len(t, full.Rows.ID, 3, "a new page gets every trial, changed ones as they are now")
	require.Equal(t, 500.0, full.Rows.Samples[1])

	// Another server (a restart): another epoch; a version it never had
	// gets every trial.
	clk.add(time.Minute)
	s2 := New(nil, Options{Now: clk.Now, Refresh: time.Second, FollowTrials: func(string) TrialReader { return r }})
	p2 := getPage(t, s2, fmt.Sprintf("/api/campaigns/c?since=%d", p.Version+1000))
	require.NotEqual(t, p.Epoch, p2.Epoch)
	require.Len(t, p2.Rows.ID, 3)
}

// However many pages poll, a watched campaign is read at most once per
// refresh period.
func TestManyPagesOneReadPerRefresh(t *testing.T) {
	clk := &clock{now: time.Unix(1_000_000, 0)}
	r := &fakeReader{trials: trialsN(50)}
	s := New(nil, Options{Now: clk.Now, Refresh: 2 * time.Second, FollowTrials: func(string) TrialReader { return r }})
	const rounds, pages = 5, 10
	for range rounds {
		var wg sync.WaitGroup
		for range pages {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := httptest.NewRecorder()
				s.ServeHTTP(w, local(http.MethodGet, "/api/campaigns/c?since=0"))
				require.Equal(t, http.StatusOK, w.Code)
			}()
		}
		wg.Wait()
		settled(t, s, "c")
		clk.add(2 * time.Second)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	require.LessOrEqual(t, r.reads, rounds, "%d reads for %d pages × %d polls", r.reads, pages, rounds)
	require.GreaterOrEqual(t, r.reads, rounds-1)
}

// A campaign with nothing yet: every view answers empty lists, not null.
func TestAnEmptyCampaignAnswersEmptyLists(t *testing.T) {
	r := &fakeReader{}
	s := New(nil, Options{FollowTrials: func(string) TrialReader { return r }})
	for path, want := range map[string]string{
		"/api/campaigns/c/curves":   `"curves":[]`,
		"/api/campaigns/c/timeline": `"trials":[]`,
	} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, local(http.MethodGet, path))
		require.Equal(t, http.StatusOK, w.Code)
		require.Contains(t, w.Body.String(), want, path)
	}
	p := getPage(t, s, "/api/campaigns/c?since=0")
	require.Zero(t, p.Total)
	require.NotEmpty(t, p.ImportanceNote, "why there is no importance")
	pp := poolPage("p", nil, gleaner.PoolLog{}, gleaner.PoolStatus{}, time.Unix(0, 0), time.Unix(3600, 0))
	b, err := json.Marshal(pp)
	require.NoError(t, err)
	for _, want := range []string{`"nodes":[]`, `"spans":[]`, `"markers":[]`, `"solves":[]`, `"trials":[]`, `"samples_per_s":[]`} {
		require.Contains(t, string(b), want)
	}
}
