package allocator_test

import (
	"fmt"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// Two trials compete for four idle nodes. "resnet" runs on n1, n2 and n3
// (rate O(3) = 240 samples/s, interpolated between the points at 2 and 4);
// "bert" waits and can only run on exactly 2 nodes. With T_fwd = 600 s the
// value of each choice is T_fwd·O(k) minus the rescale cost times the
// current rate (bert does not run, so starting it costs nothing):
//
//	resnet  k=4: 600·300 − 30·240 = 172800   (grows)
//	        k=3: 600·240          = 144000   (stays)
//	        k=2: 600·180 − 20·240 = 103200   (shrinks)
//	        k=1: 600·100 − 20·240 =  55200
//	        k=0:         − 20·240 =  −4800   (preempted)
//	bert    k=2: 600·200          = 120000;  k=0: 0
//
// Within 4 nodes the pairs are (4,0) 172800, (3,0) 144000, (2,2) 223200,
// (1,2) 175200, (0,2) 115200: shrinking resnet to 2 and starting bert is
// the optimum. resnet keeps the nodes that stay idle longest — n3 (no
// announced end) and n2 (12:00), listed in the order it holds them — and
// releases n1 (10:00); bert takes the free nodes longest-idle first: n4
// (11:00), then n1.
func ExampleSolve_paper() {
	at := func(h int) time.Time { return time.Date(2025, 6, 1, h, 0, 0, 0, time.UTC) }
	p := &allocator.Problem{
		Nodes: []allocator.Node{
			{ID: "n1", IdleUntil: at(10)},
			{ID: "n2", IdleUntil: at(12)},
			{ID: "n3"}, // no announced end: idle longest
			{ID: "n4", IdleUntil: at(11)},
		},
		Trials: []allocator.Trial{{
			ID: "resnet", Nodes: []string{"n1", "n2", "n3"}, MinNodes: 1, MaxNodes: 4,
			Curve:         allocator.Curve{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 180}, {Nodes: 4, Throughput: 300}},
			RescaleUpCost: 30, RescaleDownCost: 20,
		}, {
			ID: "bert", MinNodes: 2, MaxNodes: 2,
			Curve: allocator.Curve{{Nodes: 2, Throughput: 200}},
		}},
		Lookahead: 10 * time.Minute,
	}
	res, err := allocator.Solve(p, &allocator.Settings{Formulation: allocator.FormulationPaper})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.Objective)
	for _, a := range res.Allocations {
		fmt.Println(a.TrialID, a.Count, a.Nodes)
	}
	// Output:
	// optimal 223200
	// resnet 2 [n2 n3]
	// bert 2 [n4 n1]
}
