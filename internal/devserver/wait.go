package devserver

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/taskqueue/v1"
)

// Pollers returns the workers seen polling taskQueue for tasks of type
// typ recently (the server forgets a poller a few minutes after its last
// poll).
func (s *Server) Pollers(ctx context.Context, taskQueue string, typ enumspb.TaskQueueType) ([]*taskqueue.PollerInfo, error) {
	resp, err := s.Client().DescribeTaskQueue(ctx, taskQueue, typ)
	if err != nil {
		return nil, fmt.Errorf("describing task queue %s: %w", taskQueue, err)
	}
	return resp.GetPollers(), nil
}

// WaitForPoller waits until some worker whose identity satisfies match
// (nil: any) polls taskQueue for both workflow and activity tasks. It
// returns that identity.
func (s *Server) WaitForPoller(ctx context.Context, taskQueue string, match func(identity string) bool) (string, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		found := map[string]int{}
		for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
			pollers, err := s.Pollers(ctx, taskQueue, typ)
			if err != nil {
				lastErr = err
				break
			}
			for _, p := range pollers {
				if match == nil || match(p.GetIdentity()) {
					found[p.GetIdentity()]++
				}
			}
		}
		for id, n := range found {
			if n == 2 {
				return id, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no worker polls task queue %s on %s: %w (last error: %v)", taskQueue, s.Address(), ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}
