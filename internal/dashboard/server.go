package dashboard

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
)

//go:embed assets
var assets embed.FS

// DefaultRefresh is how often a watched campaign or pool is read again.
const DefaultRefresh = 2 * time.Second

// forgetAfter: a watcher no page asked for this long is dropped.
const forgetAfter = 5 * time.Minute

// Options configure a Server.
type Options struct {
	// Token, when set, is required: "Authorization: Bearer <Token>", or
	// ?token=<Token> once, which sets a cookie for the page's own calls.
	Token string
	// Refresh is the longest a page's data is behind the server's
	// (DefaultRefresh when ≤ 0): a watched campaign or pool is read at most
	// this often, whatever the number of pages.
	Refresh time.Duration
	// UIBase is the Temporal web UI's base URL, for links ("" for none).
	UIBase string
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
	// FollowTrials, when set, reads a campaign's trials instead of the
	// client's TrialFollower (benchmarks feed synthetic campaigns so).
	FollowTrials func(name string) TrialReader
}

// TrialReader reads a campaign's trials again and again
// (client.TrialFollower).
type TrialReader interface {
	Read(ctx context.Context) (client.TrialList, client.FollowStats, error)
}

// Server serves the dashboard from one Gleaner client.
type Server struct {
	c    *client.Client
	opts Options
	mux  *http.ServeMux

	mu        sync.Mutex
	campaigns map[string]*campaignWatch
	pools     map[string]*poolWatch
	list      *listWatch

	// calls counts the calls to the Temporal server, for /api/stats.
	calls atomic.Int64
}

// New returns a Server reading through c.
func New(c *client.Client, opts Options) *Server {
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FollowTrials == nil {
		opts.FollowTrials = func(name string) TrialReader { return c.FollowTrials(name) }
	}
	s := &Server{c: c, opts: opts, campaigns: map[string]*campaignWatch{}, pools: map[string]*poolWatch{}}
	s.list = &listWatch{s: s}
	s.routes()
	return s
}

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	m.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	m.HandleFunc("GET /api/overview", s.overview)
	m.HandleFunc("GET /api/campaigns/{name}", s.campaign)
	m.HandleFunc("GET /api/campaigns/{name}/curves", s.curves)
	m.HandleFunc("GET /api/campaigns/{name}/timeline", s.timeline)
	m.HandleFunc("GET /api/campaigns/{name}/trials/{id}", s.trial)
	m.HandleFunc("GET /api/campaigns/{name}/export", s.export)
	m.HandleFunc("GET /api/pools/{name}", s.pool)
	m.HandleFunc("GET /api/stats", s.stats)
	s.mux = m
}

// ServeHTTP checks the token and serves the page and its API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
		return
	}
	if s.opts.Token == "" && !localHost(r.Host) {
		// Without a token the dashboard is for this machine alone: a page
		// elsewhere that rebinds its name to 127.0.0.1 is not let in.
		http.Error(w, "forbidden: without a token (--auth-token-file) the dashboard answers only to localhost and loopback addresses", http.StatusForbidden)
		return
	}
	if s.opts.Token != "" && !s.authorized(w, r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="gleaner dashboard"`)
		http.Error(w, "unauthorized: open the dashboard with ?token=<its token>, or send Authorization: Bearer <token>", http.StatusUnauthorized)
		return
	}
	if q := r.URL.Query(); q.Has("token") && r.URL.Path == "/" {
		// The cookie is set: the address bar and history keep no token.
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// localHost reports whether a request's Host names this machine: localhost
// or a loopback address, with any port.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

const tokenCookie = "gleaner_dashboard_token"

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	same := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1 }
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(got) {
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value) {
		return true
	}
	if got := r.URL.Query().Get("token"); got != "" && same(got) {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: got, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		return true
	}
	return false
}

// stats says what the server costs the Temporal server.
type stats struct {
	Calls     int64   `json:"calls"`
	Campaigns int     `json:"campaigns_watched"`
	Pools     int     `json:"pools_watched"`
	RefreshS  float64 `json:"refresh_s"`
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	st := stats{Calls: s.calls.Load(), Campaigns: len(s.campaigns), Pools: len(s.pools), RefreshS: s.opts.Refresh.Seconds()}
	s.mu.Unlock()
	writeJSON(w, r, st)
}

// Calls is how many calls the server has made to the Temporal server.
func (s *Server) Calls() int64 { return s.calls.Load() }

// writeJSON writes v, gzipped when the client accepts it.
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, r, "application/json", b)
}

// gzipBytes is b gzipped (fastest).
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	z, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = z.Write(b)
	_ = z.Close()
	return buf.Bytes()
}

// writeGzipped writes a gzipped JSON answer.
func writeGzipped(w http.ResponseWriter, z []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Encoding", "gzip")
	_, _ = w.Write(z)
}

func writeRaw(w http.ResponseWriter, r *http.Request, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	if len(b) > 1024 && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		_, _ = z.Write(b)
		_ = z.Close()
		return
	}
	_, _ = w.Write(b)
}

// httpError writes err with the status it calls for: 404 for what does
// not exist, 400 for a bad name, 502 for the Temporal server's errors.
func httpError(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	switch {
	case errors.Is(err, client.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

var errBadRequest = errors.New("bad request")

// intParam reads an integer query parameter, def when absent.
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s=%q: want an integer in [%d, %d]", errBadRequest, name, v, lo, hi)
	}
	return n, nil
}

// pathName is the {name} of the request, checked as a campaign or pool
// name.
func pathName(r *http.Request, what string) (string, error) {
	name := r.PathValue("name")
	if err := gleaner.ValidateName(what, name); err != nil {
		return "", fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return name, nil
}

// refresher runs one read at a time and at most every Refresh. Before
// the first read ends, callers wait for it; afterwards they get what the
// last read left at once, and a caller that finds it Refresh old starts
// the next read in the background (the page's next poll sees it): a
// page never waits on the Temporal server for data it already has.
type refresher struct {
	mu      sync.Mutex
	running chan struct{}
	at      time.Time // when the last read began (zero: none yet)
	err     error
	asked   time.Time
}

// fresh reads with read when the last read is every old (or there was
// none), waiting for it only when there was none.
func (f *refresher) fresh(ctx context.Context, now time.Time, every time.Duration, read func(context.Context) error) error {
	f.mu.Lock()
	f.asked = now
	have := !f.at.IsZero()
	if have && (now.Sub(f.at) < every || f.running != nil) {
		err := f.err
		f.mu.Unlock()
		return err
	}
	ch := f.running
	if ch == nil {
		ch = make(chan struct{})
		f.running = ch
		// The read outlives the page that started it: others use it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		go func() {
			err := safely(rctx, read)
			cancel()
			f.mu.Lock()
			f.running, f.at, f.err = nil, now, err
			f.mu.Unlock()
			close(ch)
		}()
	}
	if have {
		err := f.err
		f.mu.Unlock()
		return err
	}
	f.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// safely runs read, turning a panic into its error: a read runs on its
// own goroutine, where a panic would end the whole server.
func safely(ctx context.Context, read func(context.Context) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reading: %v", p)
		}
	}()
	return read(ctx)
}

func (f *refresher) idle(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running == nil && now.Sub(f.asked) > forgetAfter
}

// forget drops the watchers no page asked for lately.
func (s *Server) forget() {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.campaigns {
		if w.ref.idle(now) {
			delete(s.campaigns, k)
		}
	}
	for k, w := range s.pools {
		if w.ref.idle(now) {
			delete(s.pools, k)
		}
	}
}

// workflowURL opens a workflow in the Temporal web UI ("" without one).
func (s *Server) workflowURL(id string) string {
	if s.c == nil {
		return ""
	}
	return s.c.WorkflowURL(id)
}
