package jpa

import (
	"errors"
	"math"
	"testing"
	"time"
)

// decodeReports turns arbitrary bytes into a report sequence, 5 bytes a
// report: trial, node count (0 is invalid), node type and restart flag,
// samples step (negative steps go backwards; two codes are NaN and +Inf),
// time step (zero and negative steps included).
func decodeReports(data []byte) []Progress {
	var out []Progress
	now := t0
	samples := map[string]float64{}
	for len(data) >= 5 {
		b := data[:5]
		data = data[5:]
		id := string(rune('a' + b[0]%3))
		s := samples[id]
		switch b[3] {
		case 255:
			s = math.NaN()
		case 254:
			s = math.Inf(1)
		default:
			s += float64(int8(b[3])) * 37
		}
		if !math.IsNaN(s) && !math.IsInf(s, 0) {
			samples[id] = s
		}
		now = now.Add(time.Duration(int8(b[4])) * time.Second)
		out = append(out, Progress{
			TrialID: id, Nodes: int(b[1] % 6), NodeType: []string{"", "v100"}[b[2]&1],
			Samples: s, Time: now, Restart: b[2]&2 != 0,
		})
	}
	return out
}

func FuzzIngest(f *testing.F) {
	f.Add([]byte{0, 1, 0, 10, 10, 0, 1, 0, 10, 10, 0, 1, 0, 10, 10, 0, 1, 0, 10, 10})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := NewProfiler(&Config{WarmupIntervals: 1, Window: 4})
		if err != nil {
			t.Fatal(err)
		}
		lib, err := NewLibrary([]PriorCurve{uslCurve("a", "", USL{X1: 10, Alpha: 0.1}, 6)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range decodeReports(data) {
			p.Ingest(r)
		}
		for _, id := range []string{"a", "b", "c"} {
			for _, e := range p.Estimates(id) {
				for _, v := range []float64{e.Throughput, e.Spread, e.StdErr} {
					if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
						t.Fatalf("estimate %+v not finite and non-negative", e)
					}
				}
			}
			up, down := p.RescaleCosts(id)
			for _, c := range []RescaleCost{up, down} {
				if math.IsNaN(c.Seconds) || math.IsInf(c.Seconds, 0) || c.Seconds < 0 {
					t.Fatalf("rescale cost %+v not finite and non-negative", c)
				}
			}
			obs := p.Observations(id)
			if len(obs) == 0 {
				continue
			}
			pred, err := Predict(obs, lib, Query{MinNodes: 1, MaxNodes: 8}, nil)
			if errors.Is(err, ErrNoData) {
				continue // every estimate is a stall (0 samples/s)
			}
			if err != nil {
				t.Fatalf("Predict: %v", err)
			}
			for _, pt := range pred.AllocatorCurve(true) {
				if math.IsNaN(pt.Throughput) || math.IsInf(pt.Throughput, 0) || pt.Throughput < 0 {
					t.Fatalf("curve point %+v", pt)
				}
			}
		}
	})
}
