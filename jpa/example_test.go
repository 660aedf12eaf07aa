package jpa_test

import (
	"fmt"
	"time"

	"github.com/gleaner-hpc/gleaner/jpa"
)

// A trial reports cumulative samples; the profiler drops the warm-up and
// keeps the median rate, then measures what growing to 2 nodes cost.
func ExampleProfiler() {
	p, _ := jpa.NewProfiler(&jpa.Config{WarmupIntervals: 1})
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, r := range []jpa.Progress{
		{TrialID: "t1", Nodes: 1, Samples: 0, Time: at(0)},
		{TrialID: "t1", Nodes: 1, Samples: 200, Time: at(10)}, // warm-up
		{TrialID: "t1", Nodes: 1, Samples: 1200, Time: at(20)},
		{TrialID: "t1", Nodes: 1, Samples: 2200, Time: at(30)},
		{TrialID: "t1", Nodes: 2, Samples: 2200, Time: at(60)}, // restarted on 2 nodes
		{TrialID: "t1", Nodes: 2, Samples: 3000, Time: at(70)}, // warm-up
		{TrialID: "t1", Nodes: 2, Samples: 4800, Time: at(80)},
	} {
		p.Ingest(r)
	}
	for _, e := range p.Estimates("t1") {
		fmt.Printf("%d nodes: %.0f samples/s\n", e.Nodes, e.Throughput)
	}
	up, _ := p.RescaleCosts("t1")
	fmt.Printf("growing cost %.1f s\n", up.Seconds)
	// Output:
	// 1 nodes: 100 samples/s
	// 2 nodes: 180 samples/s
	// growing cost 35.6 s
}

// Two measured counts and a library of profiled curves give the whole
// curve, exact where measured; the allocator gets it with optimism on one
// uncertain count.
func ExamplePredict() {
	lib, _ := jpa.NewLibrary([]jpa.PriorCurve{
		{Name: "resnet", NodeType: "a100", Points: []jpa.Point{{Nodes: 1, Throughput: 100}, {Nodes: 2, Throughput: 190}, {Nodes: 4, Throughput: 360}, {Nodes: 8, Throughput: 640}}},
		{Name: "bert", NodeType: "a100", Points: []jpa.Point{{Nodes: 1, Throughput: 50}, {Nodes: 2, Throughput: 90}, {Nodes: 4, Throughput: 160}, {Nodes: 8, Throughput: 260}}},
	})
	obs := []jpa.Observation{
		{Nodes: 1, NodeType: "a100", Throughput: 1000},
		{Nodes: 2, NodeType: "a100", Throughput: 1850},
	}
	pred, _ := jpa.Predict(obs, lib, jpa.Query{MinNodes: 1, MaxNodes: 8}, nil)
	for _, p := range pred.Points {
		if p.Measured || p.Nodes == 4 || p.Nodes == 8 {
			fmt.Printf("%d: %.0f ± %.0f measured=%v\n", p.Nodes, p.Throughput, p.Sigma, p.Measured)
		}
	}
	_, explore := pred.Optimistic(nil)
	fmt.Println("explore:", explore, "curve points:", len(pred.AllocatorCurve(true)))
	// Output:
	// 1: 1000 ± 20 measured=true
	// 2: 1850 ± 37 measured=true
	// 4: 3399 ± 376 measured=false
	// 8: 5852 ± 1302 measured=false
	// explore: [8] curve points: 8
}
