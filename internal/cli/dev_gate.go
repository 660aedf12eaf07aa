package cli

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gleaner-hpc/gleaner/internal/devenv"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// devTrainerGate wraps RunTrial so that, on shutdown, the running trainers
// are stopped at once (SIGTERM, SIGKILL after their grace period) while
// the server still records how far they got, and so that shutdown can
// wait until they have exited.
type devTrainerGate struct {
	mu      sync.Mutex
	closed  bool
	running int
	stop    chan struct{}
	wg      sync.WaitGroup
}

func newDevTrainerGate() *devTrainerGate { return &devTrainerGate{stop: make(chan struct{})} }

func (g *devTrainerGate) wrap(run devenv.RunTrialFunc) devenv.RunTrialFunc {
	return func(ctx context.Context, in workflows.RunTrialInput) (workflows.RunTrialResult, error) {
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			return workflows.RunTrialResult{}, errors.New("gleaner dev is stopping: the trial runs again when a worker does")
		}
		g.running++
		g.wg.Add(1)
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			g.running--
			g.mu.Unlock()
			g.wg.Done()
		}()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-g.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		return run(ctx, in)
	}
}

// close stops new trainers and cancels the running ones; it returns how
// many were running.
func (g *devTrainerGate) close() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		close(g.stop)
	}
	return g.running
}

// wait waits until every trainer has stopped, up to timeout.
func (g *devTrainerGate) wait(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
