package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/log"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
)

// startServer starts the Temporal dev server (its log beside --db) and
// says where it and its UI are; stop stops it.
func (d *devRun) startServer(ctx context.Context, logger log.Logger) (srv *devserver.Server, stop func(), err error) {
	o := d.o
	opts := devserver.Options{IP: o.ip, Port: o.port, UI: true, UIPort: o.uiPort, DBFile: o.db, Logger: logger}
	var serverLog string
	closeLog := func() {}
	if o.db != "" {
		serverLog = strings.TrimSuffix(o.db, filepath.Ext(o.db)) + ".log"
		if err := os.MkdirAll(filepath.Dir(serverLog), 0o755); err != nil {
			return nil, nil, fmt.Errorf("--db %s: %w", o.db, err)
		}
		lf, err := os.OpenFile(serverLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--db %s: server log: %w", o.db, err)
		}
		closeLog = func() { _ = lf.Close() }
		opts.Output = lf
	}
	where := "in memory"
	if o.db != "" {
		where = "state in " + o.db
	}
	d.say("starting Temporal dev server on %s (%s)…", net.JoinHostPort(o.ip, strconv.Itoa(o.port)), where)
	start := d.now()
	srv, err = devserver.Start(ctx, opts)
	if err != nil {
		closeLog()
		if errors.Is(err, devserver.ErrCLINotFound) {
			return nil, nil, err // says how to install it
		}
		return nil, nil, fmt.Errorf("starting the Temporal dev server: %w", err)
	}
	d.ui = devUIBase(srv.UIURL(), o.ip)
	d.conn = devConnectionHint(srv.Address(), srv.Namespace(), d.ui)
	d.say("Temporal dev server ready at %s in %v (namespace %s)", srv.Address(), d.now().Sub(start).Round(100*time.Millisecond), srv.Namespace())
	d.say("Temporal web UI:  %s", d.ui)
	if serverLog != "" {
		d.say("server log:       %s", serverLog)
	}
	return srv, func() {
		d.say("stopping the Temporal dev server…")
		if err := srv.Stop(); err != nil {
			d.warn("%v", err)
		}
		closeLog()
		d.say("stopped")
	}, nil
}

// portsFree fails early, with flags to try, when a port is taken.
func (d *devRun) portsFree() error {
	o := d.o
	var taken []string
	for _, p := range []struct {
		flag, what string
		port       int
	}{{"port", "the dev server", o.port}, {"ui-port", "the web UI", o.uiPort}, {"dashboard-port", "the dashboard", max(o.dashboardPort, 0)}} {
		if p.port != 0 && !devPortFree(o.ip, p.port) {
			taken = append(taken, fmt.Sprintf("--%s %d (%s)", p.flag, p.port, p.what))
		}
	}
	if len(taken) == 0 {
		return nil
	}
	hint := "--port 0 --ui-port 0 --dashboard-port 0 (free ports)"
	for off := 10; off <= 500; off += 10 {
		p, u, b := o.port+off, o.uiPort+off, o.dashboardPort+off
		if p <= 65535 && u <= 65535 && b <= 65535 && p != u && b != p && b != u && devPortFree(o.ip, p) && devPortFree(o.ip, u) && devPortFree(o.ip, b) {
			hint = fmt.Sprintf("--port %d --ui-port %d --dashboard-port %d", p, u, b)
			break
		}
	}
	return fmt.Errorf("%s on %s: already in use — is another Temporal dev server running (`make devserver`, an earlier `gleaner dev`)?\n"+
		"stop it, or run beside it: gleaner dev %s", strings.Join(taken, " and "), o.ip, hint)
}

func devPortFree(ip string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// devConnectionHint is the connection flags (connectionHint) a gleaner
// command run beside `gleaner dev` needs to reach its server: --address
// and --namespace unless they are the defaults, and --ui unless the
// command finds the UI by itself, at the server's port + 1000.
func devConnectionHint(address, namespace, ui string) string {
	return connectionHint(func(flag string) (string, bool) {
		switch flag {
		case "address":
			return address, address != client.DefaultHostPort
		case "namespace":
			return namespace, namespace != client.DefaultNamespace
		case "ui":
			_, found, ok := devServerUI(address)
			return ui, ui != "" && (!ok || found != ui)
		}
		return "", false
	}, true)
}
