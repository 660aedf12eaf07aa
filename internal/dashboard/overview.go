package dashboard

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
)

// overviewLimit is how many campaigns the list shows, newest first.
const overviewLimit = 200

// Overview is the first page: every campaign and pool.
type Overview struct {
	Campaigns []CampaignItem `json:"campaigns"`
	Pools     []PoolItem     `json:"pools"`
	AsOf      time.Time      `json:"as_of"`
	UIBase    string         `json:"ui_base,omitempty"`
}

// CampaignItem is a campaign in the list.
type CampaignItem struct {
	client.CampaignSummary
	Pool string `json:"pool,omitempty"`
	// Counts are its trials by state, for a campaign that runs (its own
	// status); nil for one that ended (its summary says how many ended).
	Counts map[gleaner.TrialState]int `json:"counts,omitempty"`
}

// PoolItem is a pool in the list.
type PoolItem struct {
	Name   string               `json:"name"`
	Nodes  int                  `json:"nodes"`
	InUse  int                  `json:"in_use"`
	Trials int                  `json:"trials"`
	Inline int                  `json:"inline_campaigns"`
	Last   gleaner.SolveSummary `json:"last"`
	Error  string               `json:"error,omitempty"`
}

type listWatch struct {
	s   *Server
	ref refresher
	mu  sync.Mutex
	ov  Overview
	// pools: a campaign's pool, which its spec names, read once.
	pools map[string]string
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	l := s.list
	err := l.ref.fresh(r.Context(), s.opts.Now(), s.opts.Refresh, l.read)
	if err != nil {
		httpError(w, err)
		return
	}
	s.forget()
	l.mu.Lock()
	ov := l.ov
	l.mu.Unlock()
	writeJSON(w, r, ov)
}

func (l *listWatch) read(ctx context.Context) error {
	s := l.s
	sums, err := s.c.List(ctx, client.ListOptions{Limit: overviewLimit})
	s.calls.Add(1 + int64(len(sums)))
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.pools == nil {
		l.pools = map[string]string{}
	}
	known := l.pools
	l.mu.Unlock()
	items := make([]CampaignItem, len(sums))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, sum := range sums {
		items[i] = CampaignItem{CampaignSummary: sum}
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			pool, ok := known[sum.Name]
			mu.Unlock()
			if !ok {
				spec, err := s.c.Spec(ctx, sum.Name)
				s.calls.Add(1)
				if err == nil {
					pool = spec.Pool
					mu.Lock()
					known[sum.Name] = pool
					mu.Unlock()
				}
			}
			items[i].Pool = pool
			if sum.Ended() {
				return
			}
			st, err := s.c.Status(ctx, sum.Name)
			s.calls.Add(1)
			if err != nil {
				return
			}
			items[i].Counts = countStates(st)
		}()
	}
	wg.Wait()
	names, err := s.c.Pools(ctx)
	s.calls.Add(1)
	if err != nil {
		return err
	}
	pools := make([]PoolItem, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pools[i] = PoolItem{Name: name}
			st, err := s.c.PoolStatus(ctx, name)
			s.calls.Add(1)
			if err != nil {
				pools[i].Error = err.Error()
				return
			}
			pools[i].InUse, pools[i].Nodes = st.NodeUse()
			pools[i].Trials, pools[i].Inline = st.Registrations()
			pools[i].Last = st.Last
		}()
	}
	wg.Wait()
	l.mu.Lock()
	l.ov = Overview{Campaigns: items, Pools: pools, AsOf: s.opts.Now(), UIBase: s.opts.UIBase}
	l.mu.Unlock()
	return nil
}

// countStates is a running campaign's trials by the state its status
// classifies them in.
func countStates(st gleaner.CampaignStatus) map[gleaner.TrialState]int {
	return map[gleaner.TrialState]int{
		gleaner.TrialCompleted: st.Completed,
		gleaner.TrialStopped:   st.Stopped,
		gleaner.TrialFailed:    st.Failed,
		gleaner.TrialRunning:   st.Running,
		gleaner.TrialPending:   st.Waiting,
		gleaner.TrialPaused:    st.Paused,
		gleaner.TrialParked:    st.Parked,
		gleaner.TrialAtRung:    st.AtRung,
	}
}
