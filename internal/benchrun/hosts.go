package benchrun

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gleaner-hpc/gleaner/agent"
	"github.com/gleaner-hpc/gleaner/client"
)

// benchHosts are agents in this process, each with its own task queue and
// two CPU slots, for the rescale benchmark across hosts.
type benchHosts struct {
	e       *env
	log     io.Writer
	running map[string]rescaleAgent
}

type rescaleAgent struct {
	cancel context.CancelFunc
	done   chan error
}

// start starts agent prefix and waits until the pool has its nodes.
func (h *benchHosts) start(ctx context.Context, prefix string) error {
	if h.running == nil {
		h.running = map[string]rescaleAgent{}
	}
	cfg := agent.DefaultConfig()
	cfg.Connection = client.Connection{HostPort: h.e.srv.Address(), Namespace: h.e.srv.Namespace(), TaskQueue: TaskQueue, ConnectTimeout: time.Minute}
	cfg.Pool, cfg.Slots, cfg.NodePrefix, cfg.GPUs = RescaleCampaign, 2, prefix, "none"
	cfg.AdvertiseAddr, cfg.DataDir, cfg.StopTimeout = "127.0.0.1", h.e.dataDir, 30*time.Second
	a, err := agent.New(ctx, cfg, func(format string, args ...any) { fmt.Fprintf(h.log, "bench: "+format+"\n", args...) })
	if err != nil {
		return fmt.Errorf("agent %s: %w", prefix, err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.RunWith(actx, h.e.c) }()
	h.running[prefix] = rescaleAgent{cancel: cancel, done: done}
	return nil
}

// leave stops agent prefix (it leaves the pool) and waits until it has.
func (h *benchHosts) leave(prefix string) {
	if a, ok := h.running[prefix]; ok {
		a.cancel()
		if err := <-a.done; err != nil {
			fmt.Fprintf(h.log, "bench: agent %s: %v\n", prefix, err)
		}
		delete(h.running, prefix)
	}
}

func (h *benchHosts) stop() {
	for p := range h.running {
		h.leave(p)
	}
}
