package dashboard

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner"
)

// A pool's page: who held which node when (from the pool's log, which
// it keeps in durable chunks), the allocation log, throughput curves and
// harvest figures.

// maxSolves bounds the allocation log a page gets: the newest solves.
const maxSolves = 300

// PoolPage is the pool view over a window ending now.
type PoolPage struct {
	Name   string             `json:"name"`
	Status gleaner.PoolStatus `json:"status"`
	From   int64              `json:"from"` // Unix ms
	Now    int64              `json:"now"`
	// Nodes are every node that was in the pool in the window, sorted.
	Nodes []PoolNode `json:"nodes"`
	// Spans are the nodes' periods in the window: held by a trial, or
	// idle in the pool (Trial ""); a node in no span was not the pool's
	// (its batch scheduler had it).
	Spans []PageSpan `json:"spans"`
	// Markers are rescales, preemptions, starts and resumes in the window.
	Markers []Marker `json:"markers"`
	// Solves are the newest allocations in the window, newest last.
	Solves  []Solve   `json:"solves"`
	Harvest Harvest   `json:"harvest"`
	Chunks  int       `json:"chunks"`
	AsOf    time.Time `json:"as_of"`
	UIURL   string    `json:"ui_url,omitempty"`
}

// PoolNode is a node of the view; IdleUntil (Unix ms, 0: unknown) is the
// batch scheduler's estimate of when it takes the node back.
type PoolNode struct {
	ID        string `json:"id"`
	Type      string `json:"type,omitempty"`
	Host      string `json:"host,omitempty"`
	IdleUntil int64  `json:"idle_until,omitempty"`
	Present   bool   `json:"present"` // in the pool now
}

// PageSpan is a node's period: [From, To) in Unix ms (To 0: open).
type PageSpan struct {
	Node     string `json:"node"`
	From     int64  `json:"f"`
	To       int64  `json:"t,omitempty"`
	Trial    string `json:"trial,omitempty"`
	Campaign string `json:"campaign,omitempty"`
}

// Marker is a change of a trial's nodes.
type Marker struct {
	At     int64    `json:"at"`
	Trial  string   `json:"trial"`
	Change string   `json:"change"`
	Nodes  []string `json:"nodes,omitempty"`
	Before int      `json:"before"`
	After  int      `json:"after"`
}

// Solve is an allocation in the log.
type Solve struct {
	At      int64                `json:"at"`
	Epoch   int64                `json:"epoch"`
	Trigger string               `json:"trigger,omitempty"`
	Summary gleaner.SolveSummary `json:"summary"`
	Changes []gleaner.NodeChange `json:"changes,omitempty"`
}

// Harvest sums the window: node-hours the pool held (the idle nodes it
// harvested), those used by trials,
// and an estimate of those lost to rescales and preemptions (each
// change's nodes × the trial's measured rescale cost), and the trials'
// measured samples/s over time.
type Harvest struct {
	HeldNodeHours    float64      `json:"held_node_hours"`
	UsedNodeHours    float64      `json:"used_node_hours"`
	RescaleNodeHours float64      `json:"rescale_node_hours"`
	PreemptNodeHours float64      `json:"preempt_node_hours"`
	Rescales         int          `json:"rescales"`
	Preemptions      int          `json:"preemptions"`
	SamplesPerSecond [][2]float64 `json:"samples_per_s"` // [Unix ms, samples/s]
}

type poolWatch struct {
	name string
	ref  refresher

	mu     sync.Mutex
	chunks map[int]gleaner.PoolRecords // read once each, by chunk number
	live   gleaner.PoolLog
	status gleaner.PoolStatus
}

func (s *Server) watchPool(name string) *poolWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.pools[name]
	if w == nil {
		w = &poolWatch{name: name, chunks: map[int]gleaner.PoolRecords{}}
		s.pools[name] = w
	}
	return w
}

func (s *Server) readPool(ctx context.Context, w *poolWatch) error {
	status, err := s.c.PoolStatus(ctx, w.name)
	s.calls.Add(1)
	if err != nil {
		return err
	}
	w.mu.Lock()
	from := 0 // after the newest held: older ones past retention are gone
	for n := range w.chunks {
		from = max(from, n+1)
	}
	w.mu.Unlock()
	chunks, live, err := s.c.PoolLog(ctx, w.name, from)
	s.calls.Add(2 + int64(len(chunks)))
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range chunks {
		w.chunks[c.Chunk] = c
	}
	w.live, w.status = live, status
	return nil
}

// sortedChunks are the held chunks by number.
func (w *poolWatch) sortedChunks() []gleaner.PoolRecords {
	out := make([]gleaner.PoolRecords, 0, len(w.chunks))
	for _, c := range w.chunks {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b gleaner.PoolRecords) int { return a.Chunk - b.Chunk })
	return out
}

func (s *Server) pool(w http.ResponseWriter, r *http.Request) {
	name, err := pathName(r, "pool")
	if err != nil {
		httpError(w, err)
		return
	}
	window, err := intParam(r, "window", 3600, 60, 31*24*3600)
	if err != nil {
		httpError(w, err)
		return
	}
	pw := s.watchPool(name)
	if err := pw.ref.fresh(r.Context(), s.opts.Now(), s.opts.Refresh, func(ctx context.Context) error { return s.readPool(ctx, pw) }); err != nil {
		httpError(w, err)
		return
	}
	s.forget()
	now := s.opts.Now()
	pw.mu.Lock()
	page := poolPage(name, pw.sortedChunks(), pw.live, pw.status, now.Add(-time.Duration(window)*time.Second), now)
	pw.mu.Unlock()
	page.UIURL = s.workflowURL(gleaner.PoolWorkflowID(name))
	writeJSON(w, r, page)
}

// poolPage builds the view of [from, now] from the pool's log.
func poolPage(name string, chunks []gleaner.PoolRecords, live gleaner.PoolLog, status gleaner.PoolStatus, from, now time.Time) PoolPage {
	// The window starts no earlier than the log does.
	if first := logStart(chunks, live); !first.IsZero() && first.After(from) {
		from = first
	}
	p := PoolPage{Name: name, Status: status, From: from.UnixMilli(), Now: now.UnixMilli(), Chunks: live.Chunks, AsOf: now,
		Nodes: []PoolNode{}, Spans: []PageSpan{}, Markers: []Marker{}, Solves: []Solve{}, Harvest: Harvest{SamplesPerSecond: [][2]float64{}}}
	if p.Status.Nodes == nil {
		p.Status.Nodes = []gleaner.Node{}
	}
	if p.Status.Trials == nil {
		p.Status.Trials = []gleaner.PoolTrial{}
	}
	present := map[string]gleaner.Node{}
	for _, n := range status.Nodes {
		present[n.ID] = n
	}
	nodes := map[string]PoolNode{}
	for _, sp := range gleaner.NodeSpans(chunks, live) {
		if !sp.To.IsZero() && sp.To.Before(from) {
			continue
		}
		f := sp.From
		if f.Before(from) {
			f = from
		}
		ps := PageSpan{Node: sp.Node, From: f.UnixMilli(), Trial: sp.Trial, Campaign: sp.Campaign}
		if !sp.To.IsZero() {
			ps.To = sp.To.UnixMilli()
		}
		p.Spans = append(p.Spans, ps)
		if _, ok := nodes[sp.Node]; !ok {
			nodes[sp.Node] = PoolNode{ID: sp.Node, Type: sp.Type}
		}
		// Held node-hours; idle ones are the node's whole presence.
		to := now
		if !sp.To.IsZero() {
			to = sp.To
		}
		h := to.Sub(f).Hours()
		p.Harvest.HeldNodeHours += h
		if sp.Trial != "" {
			p.Harvest.UsedNodeHours += h
		}
	}
	for id, n := range present {
		pn := nodes[id]
		pn.ID, pn.Type, pn.Host, pn.Present = id, n.Type, n.Host, true
		if !n.IdleUntil.IsZero() {
			pn.IdleUntil = n.IdleUntil.UnixMilli()
		}
		nodes[id] = pn
	}
	for _, n := range nodes {
		p.Nodes = append(p.Nodes, n)
	}
	slices.SortFunc(p.Nodes, func(a, b PoolNode) int { return cmp.Compare(a.ID, b.ID) })

	cost := rescaleCosts(status)
	var events []gleaner.PoolEvent
	for _, c := range chunks {
		events = append(events, c.Events...)
	}
	events = append(events, live.Events...)
	for _, e := range events {
		if e.At.Before(from) || e.Kind != gleaner.PoolEventSolve {
			continue
		}
		at := e.At.UnixMilli()
		sv := Solve{At: at, Epoch: e.Epoch, Trigger: e.Trigger, Changes: e.Changes}
		if e.Solve != nil {
			sv.Summary = *e.Solve
		}
		p.Solves = append(p.Solves, sv)
		p.Harvest.SamplesPerSecond = append(p.Harvest.SamplesPerSecond, [2]float64{float64(at), e.Measured})
		for _, c := range e.Changes {
			p.Markers = append(p.Markers, Marker{At: at, Trial: c.Trial, Change: c.Change, Nodes: c.Nodes,
				Before: len(c.Before), After: len(c.Nodes)})
			up, down := cost(c.Trial)
			switch c.Change {
			case "preempt":
				p.Harvest.Preemptions++
				p.Harvest.PreemptNodeHours += float64(len(c.Before)) * down / 3600
			case "grow", "shrink", "move", "resume":
				p.Harvest.Rescales++
				s := up
				if c.Change == "shrink" {
					s = down
				}
				p.Harvest.RescaleNodeHours += float64(len(c.Nodes)) * s / 3600
			}
		}
	}
	if len(p.Solves) > maxSolves {
		p.Solves = p.Solves[len(p.Solves)-maxSolves:]
	}
	return p
}

// rescaleCosts are each registered trial's measured rescale costs in
// seconds (its registration's priors until measured); a trial no longer
// registered costs the median of those known.
func rescaleCosts(st gleaner.PoolStatus) func(trial string) (up, down float64) {
	type pair struct{ up, down float64 }
	known := map[string]pair{}
	var ups, downs []float64
	for _, t := range st.Trials {
		c := pair{t.RescaleUpCost, t.RescaleDownCost}
		if c.up == 0 {
			c.up = t.Registration.RescaleUpCost.Seconds()
		}
		if c.down == 0 {
			c.down = t.Registration.RescaleDownCost.Seconds()
		}
		known[t.Registration.TrialID] = c
		ups, downs = append(ups, c.up), append(downs, c.down)
	}
	median := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	def := pair{median(ups), median(downs)}
	return func(trial string) (float64, float64) {
		c, ok := known[trial]
		if !ok {
			c = def
		}
		return c.up, c.down
	}
}

// logStart is when the pool's log begins: its first entry (zero for an
// empty log).
func logStart(chunks []gleaner.PoolRecords, live gleaner.PoolLog) time.Time {
	for _, c := range chunks {
		if len(c.Events) > 0 {
			return c.Events[0].At
		}
	}
	if len(live.Events) > 0 {
		return live.Events[0].At
	}
	return time.Time{}
}
