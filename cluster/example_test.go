package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster"
)

// Replaying testdata/replay-small.csv ten times faster than real time: one
// wall second is ten trace seconds, so n1's busy event at trace 1030 (30 s
// after the start at 1000) comes 3 s after WallStart.
func ExampleReplaySource() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	src, err := cluster.OpenReplaySource("testdata/replay-small.csv", cluster.ReplayOptions{
		Slots: 3, Factor: 10, WallStart: start,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("slots replay", src.TraceNodes())
	for _, wall := range []time.Duration{0, 2 * time.Second, 3 * time.Second, 4 * time.Second} {
		now := start.Add(wall)
		nodes, _ := src.Idle(context.Background(), now)
		fmt.Printf("wall +%v = trace %d:", wall, src.TraceTime(now).Unix())
		for _, n := range nodes {
			if n.IdleUntil.IsZero() {
				fmt.Printf(" %s", n.ID)
			} else {
				fmt.Printf(" %s(until +%v)", n.ID, n.IdleUntil.Sub(start))
			}
		}
		fmt.Println()
	}
	// Output:
	// slots replay [n1 n2 n3]
	// wall +0s = trace 1000: local-0(until +3s) local-1(until +1s)
	// wall +2s = trace 1020: local-0(until +3s) local-2(until +3s)
	// wall +3s = trace 1030:
	// wall +4s = trace 1040: local-1
}
