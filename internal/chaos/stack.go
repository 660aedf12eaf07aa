package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Components of the stack that Stack can start, stop, kill and restart
// (deploy/stack/stack.sh's names).
const (
	Postgres = "postgres"
	Temporal = "temporal"
	Worker   = "worker"
	Agent    = "agent"
)

// Options configure a Stack.
type Options struct {
	// Repo is the checkout whose deploy/stack/stack.sh runs the stack.
	Repo string
	// Dir holds the stack's state (GLEANER_STACK_DIR). PostgreSQL runs as
	// an unprivileged user when root starts it: every directory above Dir
	// must be searchable by others.
	Dir string
	// Gleaner is the gleaner binary (GLEANER_BIN); empty: the script's.
	Gleaner string
	// Env is added to the script's environment (KEY=VALUE), after the
	// ports Stack chose.
	Env []string
}

// Stack is a live stack of deploy/stack/stack.sh on free ports.
type Stack struct {
	opts    Options
	env     []string
	address string
}

// New prepares a stack on free ports; Start starts it.
func New(opts Options) (*Stack, error) {
	ports, err := freePorts(11)
	if err != nil {
		return nil, err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	s := &Stack{opts: opts, address: "127.0.0.1:" + p(1)}
	s.env = append(os.Environ(),
		"GLEANER_STACK_DIR="+opts.Dir,
		"GLEANER_STACK_PG_PORT="+p(0),
		"GLEANER_STACK_FRONTEND_PORT="+p(1),
		"GLEANER_STACK_FRONTEND_HTTP_PORT="+p(2),
		"GLEANER_STACK_HISTORY_PORT="+p(3),
		"GLEANER_STACK_MATCHING_PORT="+p(4),
		"GLEANER_STACK_WORKER_PORT="+p(5),
		"GLEANER_STACK_MEMBERSHIP_PORTS="+strings.Join([]string{p(6), p(7), p(8), p(9)}, ","),
		"GLEANER_STACK_UI_PORT="+p(10),
		"GLEANER_STACK_BIND_IP=127.0.0.1",
		"TEMPORAL_NAMESPACE=default",
		"GLEANER_TASK_QUEUE=gleaner",
		"GLEANER_POOL=default",
		"GLEANER_DATA="+filepath.Join(opts.Dir, "data"),
	)
	if opts.Gleaner != "" {
		s.env = append(s.env, "GLEANER_BIN="+opts.Gleaner)
	}
	s.env = append(s.env, opts.Env...)
	return s, nil
}

// freePorts returns n distinct TCP ports free on 127.0.0.1 a moment ago,
// below 32768: Temporal keeps membership ports in a smallint column, so
// the kernel's ephemeral ports (32768 and up) do not fit.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("no %d free ports below 32768 on 127.0.0.1", n)
		}
		port := 10000 + rand.IntN(32768-10000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// Address is the Temporal frontend's host:port.
func (s *Stack) Address() string { return s.address }

// DataDir is the worker's and the agent's --data-dir.
func (s *Stack) DataDir() string { return filepath.Join(s.opts.Dir, "data") }

// LogDir holds every component's log.
func (s *Stack) LogDir() string { return filepath.Join(s.opts.Dir, "logs") }

// Run runs `stack.sh ARGS...` with extra environment (KEY=VALUE), and
// returns its output; an error carries the output.
func (s *Stack) Run(ctx context.Context, extraEnv []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(s.opts.Repo, "deploy", "stack", "stack.sh")}, args...)...)
	cmd.Dir = s.opts.Repo
	cmd.Env = append(append([]string(nil), s.env...), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tail := out.String()
		if len(tail) > 4000 {
			tail = "…" + tail[len(tail)-4000:]
		}
		return out.String(), fmt.Errorf("stack.sh %s: %w\n%s", strings.Join(args, " "), err, tail)
	}
	return out.String(), nil
}

// Start starts the named components (none: the whole stack, in order,
// with the schema and namespace set-up) and waits until they serve.
func (s *Stack) Start(ctx context.Context, components ...string) error {
	_, err := s.Run(ctx, nil, append([]string{"start"}, components...)...)
	return err
}

// Stop stops the named components (none: all, in reverse order).
func (s *Stack) Stop(ctx context.Context, components ...string) error {
	_, err := s.Run(ctx, nil, append([]string{"stop"}, components...)...)
	return err
}

// Kill crashes a component: SIGKILL (PostgreSQL: an immediate shutdown).
func (s *Stack) Kill(ctx context.Context, component string) error {
	_, err := s.Run(ctx, nil, "kill", component)
	return err
}

// RestartPostgres restarts PostgreSQL with pg_ctl's shutdown mode (fast:
// clients disconnected, a clean checkpoint; immediate: as a crash,
// recovery from the WAL).
func (s *Stack) RestartPostgres(ctx context.Context, mode string) error {
	_, err := s.Run(ctx, []string{"GLEANER_STACK_PG_MODE=" + mode}, "restart", Postgres)
	return err
}

// LogTail is the last n bytes of a component's log.
func (s *Stack) LogTail(component string, n int64) string {
	b, err := os.ReadFile(filepath.Join(s.LogDir(), component+".log"))
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}
