package uitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/dashboard"
)

// EnvDashboardTrials sets how many trials BenchmarkDashboardOpensACampaign
// gives its campaign (default 100,000).
const EnvDashboardTrials = "GLEANER_BENCH_DASHBOARD_TRIALS"

// syntheticTrials is a campaign of n ended trials as the demo's would be
// (its space, val_loss, a 32-point learning curve, three spans), seeded.
func syntheticTrials(n int) client.TrialList {
	rng := rand.New(rand.NewPCG(1, 2))
	space := hpo.Space{
		{Name: "lr", Type: hpo.ParamFloat, Min: 0.003, Max: 0.5, Log: true},
		{Name: "hidden", Type: hpo.ParamInt, Min: 4, Max: 64, Log: true},
		{Name: "batch", Type: hpo.ParamChoice, Choices: []string{"16", "32", "64", "128"}},
		{Name: "steps", Type: hpo.ParamChoice, Choices: []string{"600"}},
	}
	spec := gleaner.CampaignSpec{Name: "bench", Space: space, Objective: gleaner.ObjectiveSpec{Metric: "val_loss", Mode: "min"}, Pool: "default"}
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	trials := make([]gleaner.TrialStatus, n)
	for i := range trials {
		lr := math.Exp(math.Log(0.003) + rng.Float64()*math.Log(0.5/0.003))
		hidden := math.Round(math.Exp(math.Log(4) + rng.Float64()*math.Log(16)))
		final := 0.05 + math.Abs(math.Log10(lr)+1.3)*0.3 + 2/hidden + rng.NormFloat64()*0.02
		start := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		var h []gleaner.MetricPoint
		for k := range 32 {
			h = append(h, gleaner.MetricPoint{Samples: float64(k+1) * 1000, Value: final + 2/float64(k+1)})
		}
		trials[i] = gleaner.TrialStatus{TrialID: fmt.Sprintf("t%05d", i+1),
			Params: hpo.Params{"lr": hpo.Float(lr), "hidden": hpo.Float(hidden), "batch": hpo.String([]string{"16", "32", "64", "128"}[rng.IntN(4)]), "steps": hpo.String("600")},
			TrialProgress: gleaner.TrialProgress{State: gleaner.TrialCompleted, Samples: 32000, Metrics: map[string]float64{"val_loss": final},
				History: h, Started: start, Ended: start.Add(4 * time.Second),
				Spans: []gleaner.TrialSpan{{From: start, State: gleaner.TrialPending, Why: "start"}, {From: start.Add(time.Second), State: gleaner.TrialRunning, Nodes: 1},
					{From: start.Add(4 * time.Second), State: gleaner.TrialCompleted, Why: "end"}}}}
	}
	st := gleaner.CampaignStatus{Campaign: "bench", State: gleaner.CampaignCompleted, CampaignCounts: gleaner.CampaignCounts{Created: n, Completed: n},
		MaxTrials: n, Objective: "val_loss", Mode: "min"}
	return client.TrialList{Trials: trials, Spec: spec, Status: &st}
}

// staticReader answers the same trials at every read, changing the
// first `change` of them each time.
type staticReader struct {
	mu     sync.Mutex
	l      client.TrialList
	change int
	reads  int
}

func (r *staticReader) Read(context.Context) (client.TrialList, client.FollowStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	for i := range min(r.change, len(r.l.Trials)) {
		r.l.Trials[i].Samples++
	}
	return r.l, client.FollowStats{}, nil
}

// How long a campaign of many trials takes to open in Chromium: from
// navigation to its first chart drawn (the optimisation history, every
// trial in it) and to every chart drawn, with the dashboard's server
// already holding the trials (the server reads each records chunk once,
// then keeps them); and what a page's poll transfers afterwards.
//
//	go test -run '^$' -bench DashboardOpensACampaign -benchtime 3x ./internal/uitest
func BenchmarkDashboardOpensACampaign(b *testing.B) {
	chromium := findChromium()
	if chromium == "" {
		b.Skip("no chromium")
	}
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv(EnvDashboardTrials)); err == nil && v > 0 {
		n = v
	}
	reader := &staticReader{l: syntheticTrials(n)}
	srv := httptest.NewServer(dashboard.New(nil, dashboard.Options{FollowTrials: func(string) dashboard.TrialReader { return reader }}))
	defer srv.Close()
	// The server's first read of the trials (what it keeps afterwards).
	start := time.Now()
	full := fetchBytes(b, srv.URL+"/api/campaigns/bench?since=0")
	b.Logf("%d trials: the server's first read and answer took %v; the first load is %.1f MB (%.1f MB gzipped)",
		n, time.Since(start).Round(time.Millisecond), float64(full.raw)/1e6, float64(full.gzipped)/1e6)

	br := startBrowser(b, chromium, 1600, 1200)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var first, all []float64
	b.ResetTimer()
	for range b.N {
		br.navigate("about:blank")
		br.navigate(srv.URL + "/#/c/bench")
		for {
			raw, err := br.eval(`[window.firstChartAt || 0, +(document.querySelector("#history .plot") || {dataset: {}}).dataset.points || 0, document.querySelector("#t-table table") ? performance.now() : 0]`)
			var v [3]float64
			if err == nil && json.Unmarshal(raw, &v) == nil && v[0] > 0 && v[2] > 0 {
				if int(v[1]) != n {
					b.Fatalf("the history holds %v points, want %d", v[1], n)
				}
				first, all = append(first, v[0]), append(all, v[2])
				marks, _ := br.eval(`JSON.stringify([performance.getEntriesByType("navigation")[0].responseEnd, performance.getEntriesByType("resource").map(e => [e.name.slice(-30), e.startTime, e.responseEnd]), window.marks])`)
				b.Logf("marks: %s", marks)
				break
			}
			if ctx.Err() != nil {
				b.Fatalf("the page never drew its charts")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	b.StopTimer()
	b.ReportMetric(mean(first), "ms-first-chart")
	b.ReportMetric(mean(all), "ms-all-charts")

	// A page's poll after the first load: only the changed rows.
	var page dashboard.CampaignPage
	_ = json.Unmarshal(full.body, &page)
	reader.mu.Lock()
	reader.change = 100
	reader.mu.Unlock()
	time.Sleep(dashboard.DefaultRefresh)
	upd := fetchBytes(b, srv.URL+"/api/campaigns/bench?since="+strconv.FormatInt(page.Version, 10))
	b.ReportMetric(float64(upd.gzipped), "B-poll-100-changed")
	b.Logf("first chart %.0f ms, all charts %.0f ms (mean of %d); a poll after 100 trials changed: %d B (%d gzipped)",
		mean(first), mean(all), len(first), upd.raw, upd.gzipped)
}

type fetched struct {
	body         []byte
	raw, gzipped int
}

// fetchBytes GETs url twice: as is, and gzipped (as browsers ask).
func fetchBytes(b *testing.B, url string) fetched {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	z, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return fetched{body: body, raw: len(body), gzipped: len(z)}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}
