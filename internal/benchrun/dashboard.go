package benchrun

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	gclient "github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/dashboard"
)

// DashboardFigure is what the dashboard costs for the benchmark's
// campaign once it ended: the trials read as its server reads them
// (client.TrialFollower) the first time and again, and its first answer
// to a page (every trial, by column) over HTTP, cold and warm.
type DashboardFigure struct {
	FirstReadSeconds float64 `json:"first_read_s"`
	FirstReadCalls   int     `json:"first_read_calls"`
	AgainSeconds     float64 `json:"again_s"`
	AgainCalls       int     `json:"again_calls"`
	Trials           int     `json:"trials"`
	// PageColdSeconds is a new dashboard's first answer for the
	// campaign (it reads every trial); PageWarmSeconds the next page's.
	PageColdSeconds float64 `json:"page_cold_s"`
	PageWarmSeconds float64 `json:"page_warm_s"`
	PageBytes       int     `json:"page_bytes_gzipped"`
}

// dashboardFigure measures the dashboard on campaign name.
func dashboardFigure(ctx context.Context, c *gclient.Client, name string) (DashboardFigure, error) {
	var f DashboardFigure
	fol := c.FollowTrials(name)
	t0 := time.Now()
	l, st, err := fol.Read(ctx)
	if err != nil {
		return f, fmt.Errorf("reading the trials as the dashboard does: %w", err)
	}
	f.FirstReadSeconds, f.FirstReadCalls, f.Trials = time.Since(t0).Seconds(), st.Calls(), len(l.Trials)
	t0 = time.Now()
	if _, st, err = fol.Read(ctx); err != nil {
		return f, fmt.Errorf("reading the trials again: %w", err)
	}
	f.AgainSeconds, f.AgainCalls = time.Since(t0).Seconds(), st.Calls()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return f, err
	}
	srv := &http.Server{Handler: dashboard.New(c, dashboard.Options{}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	get := func() (float64, int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ln.Addr().String()+"/api/campaigns/"+name+"?since=0", nil)
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set("Accept-Encoding", "gzip")
		t0 := time.Now()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("the dashboard answered %s: %s", resp.Status, b)
		}
		return time.Since(t0).Seconds(), len(b), err
	}
	if f.PageColdSeconds, f.PageBytes, err = get(); err != nil {
		return f, err
	}
	f.PageWarmSeconds, _, err = get()
	return f, err
}
