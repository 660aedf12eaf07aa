package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/internal/sdklog"
)

// PinnedVersion is the `temporal` CLI version Gleaner is tested with; `make
// temporal` installs it with `go install
// github.com/temporalio/cli/cmd/temporal@v1.5.1`.
const PinnedVersion = "v1.5.1"

// EnvCLI names the `temporal` binary to use, overriding PATH.
const EnvCLI = "TEMPORAL_CLI"

// ErrCLINotFound is returned by FindCLI when no `temporal` binary exists.
var ErrCLINotFound = errors.New("temporal CLI not found (set " + EnvCLI +
	" or put it on PATH); install it with: go install github.com/temporalio/cli/cmd/temporal@" + PinnedVersion +
	" (in a checkout: make temporal)")

// DefaultSearchAttributes are Gleaner's typed search attributes (name →
// Temporal type). workflows/searchattrs.go declares the same list; it is
// repeated here so that this package does not import workflows.
func DefaultSearchAttributes() map[string]string {
	return map[string]string{
		"GleanerCampaign":      "Keyword",
		"GleanerKind":          "Keyword",
		"GleanerStatus":        "Keyword",
		"GleanerBestScore":     "Double",
		"GleanerHypervolume":   "Double",
		"GleanerTrialsDone":    "Int",
		"GleanerTrialsRunning": "Int",
		"GleanerTrial":         "Keyword",
		"GleanerPool":          "Keyword",
	}
}

// FindCLI returns the path of the `temporal` binary: $TEMPORAL_CLI, then
// PATH, then $(go env GOPATH)/bin/temporal.
func FindCLI() (string, error) {
	if p := os.Getenv(EnvCLI); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("%s=%q is not an executable file", EnvCLI, p)
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	for _, dir := range gopathBins() {
		p := filepath.Join(dir, "temporal")
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", ErrCLINotFound
}

func gopathBins() []string {
	var dirs []string
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		dirs = append(dirs, gobin)
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	for _, p := range filepath.SplitList(gopath) {
		dirs = append(dirs, filepath.Join(p, "bin"))
	}
	return dirs
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Options configure a dev server. The zero value is an in-memory server on
// free ports with Gleaner's search attributes and no UI.
type Options struct {
	// DBFile is the SQLite file the server persists to; empty keeps
	// everything in memory (and then Restart loses it all). A file is
	// written ahead (journal_mode=WAL, synchronous=NORMAL, as
	// FilePragmas): a commit survives the server's death, kill -9
	// included; only a crash of the machine may lose the last ones.
	DBFile string
	// IP to bind; default 127.0.0.1.
	IP string
	// Port of the frontend gRPC service; 0 picks a free port.
	Port int
	// UI enables the web UI, on UIPort (0 picks a free port).
	UI     bool
	UIPort int
	// Namespace is created at start and used by Client; default "default".
	Namespace string
	// SearchAttributes to register (name → Keyword, Text, Int, Double,
	// Bool, Datetime or KeywordList); nil means DefaultSearchAttributes(),
	// an empty non-nil map none.
	SearchAttributes map[string]string
	// CLIPath is the `temporal` binary; empty means FindCLI.
	CLIPath string
	// LogLevel of the server: debug, info, warn (default), error.
	LogLevel string
	// DynamicConfig are dynamic config values (KEY=VALUE) of the server,
	// the value in JSON, e.g. history.timerProcessorMaxTimeShift="10ms".
	DynamicConfig []string
	// Output receives the server's stdout and stderr (default: discarded;
	// the last few KiB are kept for error messages, see Server.OutputTail).
	Output io.Writer
	// Logger is the SDK client's logger; default: warnings to stderr.
	Logger log.Logger
	// StartTimeout bounds how long Start and Restart wait for the server to
	// answer; default 5 minutes (a server starts in seconds alone, and in
	// well over a minute on a loaded 2-core machine). Each probe within it
	// gets at most ProbeTimeout.
	StartTimeout time.Duration
}

// Server is a running dev server. Its methods are safe for concurrent use.
type Server struct {
	opts  Options // resolved: CLIPath, IP, ports, namespace, attributes set
	attrs map[string]enumspb.IndexedValueType
	out   *tail

	// onePartition: new tasks go to one partition (onePartition, args.go).
	onePartition bool

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	client  client.Client
	stopped bool
}

// Start starts a dev server and waits until it answers, its namespace
// exists and every search attribute is registered.
//
// Ports left at 0 are picked free; should another process take one before
// the server binds it, the server exits and Start tries again with new
// ports (three attempts).
func Start(ctx context.Context, opts Options) (*Server, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var s *Server
		if s, err = prepare(opts); err != nil {
			return nil, err
		}
		if s.onePartition, err = onePartition(s.opts.DBFile); err != nil {
			return nil, err
		}
		if err = s.launch(); err != nil {
			return nil, err
		}
		var c client.Client
		if c, err = s.waitReady(ctx); err == nil {
			s.client = c
			return s, nil
		}
		s.kill()
		if !errors.Is(err, errExited) || (opts.Port != 0 && (!opts.UI || opts.UIPort != 0)) {
			break
		}
	}
	return nil, err
}

// DefaultStartTimeout is Options.StartTimeout's default.
const DefaultStartTimeout = 5 * time.Minute

// ProbeTimeout bounds one readiness probe (dial, list and add search
// attributes). A server that has just started can accept a call and not
// answer it: the probe gives up and the next one asks again, rather than
// one call waiting out the whole StartTimeout.
const ProbeTimeout = 10 * time.Second

// errExited marks a server that exited before it was ready.
var errExited = errors.New("exited before it was ready")

func prepare(opts Options) (*Server, error) {
	if opts.CLIPath == "" {
		p, err := FindCLI()
		if err != nil {
			return nil, err
		}
		opts.CLIPath = p
	}
	if opts.IP == "" {
		opts.IP = "127.0.0.1"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "warn"
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.SearchAttributes == nil {
		opts.SearchAttributes = DefaultSearchAttributes()
	}
	attrs, err := parseSearchAttributes(opts.SearchAttributes)
	if err != nil {
		return nil, err
	}
	if opts.DBFile != "" {
		abs, err := filepath.Abs(opts.DBFile)
		if err != nil {
			return nil, fmt.Errorf("devserver: DBFile %q: %w", opts.DBFile, err)
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return nil, fmt.Errorf("devserver: DBFile %q: %w", opts.DBFile, err)
		}
		opts.DBFile = abs
	}
	if opts.Port == 0 {
		if opts.Port, err = FreePort(opts.IP); err != nil {
			return nil, err
		}
	}
	if opts.UI && opts.UIPort == 0 {
		if opts.UIPort, err = FreePort(opts.IP); err != nil {
			return nil, err
		}
	}
	if opts.Logger == nil {
		opts.Logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr,
			&slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	return &Server{opts: opts, attrs: attrs, out: newTail(16 << 10)}, nil
}

func parseSearchAttributes(in map[string]string) (map[string]enumspb.IndexedValueType, error) {
	out := make(map[string]enumspb.IndexedValueType, len(in))
	for name, typ := range in {
		var vt enumspb.IndexedValueType
		for short, ord := range enumspb.IndexedValueType_shorthandValue {
			if strings.EqualFold(short, typ) {
				vt = enumspb.IndexedValueType(ord)
			}
		}
		if vt == enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED || name == "" {
			return nil, fmt.Errorf("devserver: search attribute %q: unknown type %q (want Keyword, Text, Int, Double, Bool, Datetime or KeywordList)", name, typ)
		}
		out[name] = vt
	}
	return out, nil
}

// launch starts the server process; s.mu is held or s is not shared yet.
func (s *Server) launch() error {
	cmd := exec.Command(s.opts.CLIPath, s.args()...)
	var w io.Writer = s.out
	if s.opts.Output != nil {
		w = io.MultiWriter(s.out, s.opts.Output)
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("devserver: starting %s: %w", s.opts.CLIPath, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	return nil
}

// waitReady probes until the server answers and has every search
// attribute (registering missing ones), within StartTimeout or ctx,
// whichever ends first. It returns the connected client.
func (s *Server) waitReady(ctx context.Context) (client.Client, error) {
	start, parent := time.Now(), ctx
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	probes := 0
	for {
		probes++
		c, err := s.probe(ctx)
		if err == nil {
			return c, nil
		}
		lastErr = err
		select {
		case <-s.done:
			return nil, fmt.Errorf("devserver: %s %w (%s):\n%s",
				s.opts.CLIPath, errExited, s.cmd.ProcessState, s.out.String())
		case <-ctx.Done():
			deadline := fmt.Sprintf("StartTimeout %v", s.opts.StartTimeout)
			if parent.Err() != nil {
				deadline = "the caller's deadline"
			}
			return nil, fmt.Errorf("devserver: pid %d runs but is not ready at %s after %v (%d probes; %s): %w (last error: %v)\nserver output (tail):\n%s",
				s.cmd.Process.Pid, s.Address(), time.Since(start).Round(time.Second), probes, deadline, ctx.Err(), lastErr, s.out.String())
		case <-tick.C:
		}
	}
}

// probe dials the server and checks its search attributes, within
// ProbeTimeout.
func (s *Server) probe(ctx context.Context) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  s.Address(),
		Namespace: s.opts.Namespace,
		Logger:    sdklog.Logger(s.opts.Logger),
	})
	if err != nil {
		return nil, err
	}
	if err := s.ensureSearchAttributes(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// ensureSearchAttributes registers the search attributes the namespace
// lacks (the CLI registers them only when it creates a database) and fails
// on a type conflict.
func (s *Server) ensureSearchAttributes(ctx context.Context, c client.Client) error {
	if len(s.attrs) == 0 {
		return nil
	}
	resp, err := c.OperatorService().ListSearchAttributes(ctx,
		&operatorservice.ListSearchAttributesRequest{Namespace: s.opts.Namespace})
	if err != nil {
		return fmt.Errorf("listing search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, want := range s.attrs {
		got, ok := resp.GetCustomAttributes()[name]
		if !ok {
			missing[name] = want
		} else if got != want {
			return fmt.Errorf("devserver: search attribute %s is %v on the server, want %v", name, got, want)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        s.opts.Namespace,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("adding search attributes: %w", err)
	}
	return nil
}

// Address is the frontend's host:port.
func (s *Server) Address() string {
	return net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.Port))
}

// PID is the server process's id (0 when it is not running).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Namespace is the namespace the server was started with.
func (s *Server) Namespace() string { return s.opts.Namespace }

// UIURL is the web UI's address, or "" without UI.
func (s *Server) UIURL() string {
	if !s.opts.UI {
		return ""
	}
	return "http://" + net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.UIPort))
}

// DBFile is the absolute path of the SQLite file, or "" in memory.
func (s *Server) DBFile() string { return s.opts.DBFile }

// Client is a client connected to the server's namespace. It is the same
// client across Restart (it reconnects by itself) and is closed by Stop.
func (s *Server) Client() client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// OutputTail is the last few KiB the server printed.
func (s *Server) OutputTail() string { return s.out.String() }

// Stop stops the server gracefully (SIGINT, then SIGKILL after 30 s) and
// closes Client. It is idempotent.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	if s.client != nil {
		s.client.Close()
	}
	return s.stopProcess(30 * time.Second)
}

// Kill kills the server process (SIGKILL), as a crash would; Restart
// brings it back. Client stays open.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kill()
}

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// stopProcess interrupts the process and waits for it; s.mu is held.
func (s *Server) stopProcess(grace time.Duration) error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		s.kill()
		return nil
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.done:
		return nil
	case <-t.C:
		s.kill()
		return fmt.Errorf("devserver: did not stop within %v after SIGINT; killed", grace)
	}
}

// Restart stops the server (if it still runs) and starts it again on the
// same port and database, waiting until it is ready. Client keeps working.
func (s *Server) Restart(ctx context.Context) error { return s.RestartAfter(ctx, nil) }

// RestartAfter is Restart with an outage: down (if not nil) runs while the
// server is stopped, and the server starts again once it returns; an
// error from down is returned after the restart.
func (s *Server) RestartAfter(ctx context.Context, down func(context.Context) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.New("devserver: Restart after Stop")
	}
	if err := s.stopProcess(30 * time.Second); err != nil {
		return err
	}
	var downErr error
	if down != nil {
		downErr = down(ctx)
	}
	s.out.Reset()
	if err := s.launch(); err != nil {
		return err
	}
	c, err := s.waitReady(ctx)
	if err != nil {
		s.kill()
		return err
	}
	c.Close()
	return downErr
}

// FreePort returns a TCP port on ip that is free now. The port is left in
// TIME_WAIT so that the kernel does not hand it out again for a while.
func FreePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("devserver: finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	addr := l.Addr().(*net.TCPAddr)
	// Connect and close from the server side: the port sits in TIME_WAIT,
	// which keeps bind(:0) from reallocating it while an explicit bind
	// with SO_REUSEADDR (Go's default) still succeeds.
	r, err := net.DialTCP("tcp", nil, addr)
	if err != nil {
		return 0, fmt.Errorf("devserver: finding a free port: %w", err)
	}
	defer func() { _ = r.Close() }()
	c, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("devserver: finding a free port: %w", err)
	}
	_ = c.Close()
	return addr.Port, nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func (t *tail) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = t.buf[:0]
}
