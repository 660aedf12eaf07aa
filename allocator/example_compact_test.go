package allocator_test

import (
	"fmt"
	"time"

	"github.com/gleaner-hpc/gleaner/allocator"
)

// Three idle nodes, four trials, a one-minute look-ahead (values in
// samples). Trial a runs on n1 at 100 samples/s, so shrinking it to 0
// costs 5 s × 100 = 500 and growing it costs 10 s × 100 = 1000:
//
//	a: v(0) = −500, v(1) = 60·100 = 6000, v(2) = 60·180 − 1000 = 9800
//	b: v(0) = 0,    v(2) = 60·150 = 9000, v(3) = 60·200 = 12000
//
// With 3 nodes the candidates are a1+b2 = 15000, a0+b3 = 11500,
// a2+b0 = 9800: keep a at one node and start b on two. b takes the free
// nodes expected to stay idle longest (n3, whose end is unknown, then n2).
// c needs 4 nodes and d would train nothing, so each gets a reason.
func ExampleSolve() {
	nine := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	p := &allocator.Problem{
		Nodes: []allocator.Node{
			{ID: "n1", IdleUntil: nine},
			{ID: "n2", IdleUntil: nine.Add(time.Hour)},
			{ID: "n3"},
		},
		Trials: []allocator.Trial{
			{ID: "a", Nodes: []string{"n1"}, MinNodes: 1, MaxNodes: 2,
				Curve:         allocator.Curve{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 180}},
				RescaleUpCost: 10, RescaleDownCost: 5},
			{ID: "b", MinNodes: 2, MaxNodes: 3,
				Curve: allocator.Curve{{Nodes: 2, Throughput: 150}, {Nodes: 3, Throughput: 200}}},
			{ID: "c", MinNodes: 4, MaxNodes: 4, Curve: allocator.Curve{{Nodes: 4, Throughput: 1000}}},
			{ID: "d", MinNodes: 1, MaxNodes: 1, Curve: allocator.Curve{{Nodes: 1, Throughput: 0}}},
		},
		Lookahead: time.Minute,
	}
	res, err := allocator.Solve(p, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range res.Allocations {
		if a.Count > 0 {
			fmt.Println(a.TrialID, a.Count, a.Nodes)
		} else {
			fmt.Println(a.TrialID, a.Count, a.Reason)
		}
	}
	fmt.Println(res.Objective, res.Status)
	// Output:
	// a 1 [n1]
	// b 2 [n3 n2]
	// c 0 pool-too-small
	// d 0 no-gain
	// 15000 optimal
}

// A validation error names the trial and the field at fault.
func ExampleProblem_Validate() {
	p := &allocator.Problem{
		Nodes:     []allocator.Node{{ID: "n1"}},
		Trials:    []allocator.Trial{{ID: "t1", MinNodes: 4, MaxNodes: 2, Curve: allocator.Curve{{Nodes: 4, Throughput: 1}}}},
		Lookahead: time.Minute,
	}
	fmt.Println(p.Validate())
	// Output:
	// invalid allocation problem: trial "t1": min_nodes 4 > max_nodes 2
}
