package integration_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/internal/testenv"
)

// TestWorkerProcessSmoke starts a dev server and a `gleaner worker`
// process, checks that it polls its task queue and says where it
// connected, then SIGKILLs and restarts it, and finally stops it with
// SIGTERM: the life cycle the campaign scenarios build on. An in-process
// worker (worker.Build + worker.New) polls beside it.
func TestWorkerProcessSmoke(t *testing.T) {
	srv := startServer(t, devserver.Options{})
	w := startWorkerProcess(t, srv, WorkerProcessOptions{TaskQueue: "smoke"})

	testenv.Worker(t, srv, "smoke-in-process", nil)
	ctx := testContext(t, time.Minute)
	if _, err := srv.WaitForPoller(ctx, "smoke-in-process", nil); err != nil {
		t.Fatal(err)
	}

	waitFor(t, 2*time.Minute, "the worker to print where it connected", func() (bool, error) {
		return strings.Contains(w.Log(), "connected to "+srv.Address()), nil
	})
	if !strings.Contains(w.Log(), "nodes=static:4") {
		t.Errorf("worker output lacks its node source:\n%s", w.Log())
	}

	first := w.PID()
	w.Restart() // SIGKILL, start again, wait until the new process polls
	if w.PID() == first {
		t.Fatalf("Restart kept pid %d", first)
	}

	w.Stop(time.Minute)
	if !w.Exited() || w.ExitCode() != 0 {
		t.Errorf("after SIGTERM: exited %v, exit code %d; want a clean exit\n%s", w.Exited(), w.ExitCode(), w.Log())
	}
	if !strings.Contains(w.Log(), "stopped after") {
		t.Errorf("worker output lacks its stop message:\n%s", w.Log())
	}
}
