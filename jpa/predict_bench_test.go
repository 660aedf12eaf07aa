package jpa

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkPredict predicts a trial measured at three counts over 1..64
// nodes with a library of 32 siblings measured at up to seven counts each
// (the simulator's and the pool's steady state for one large campaign).
func BenchmarkPredict(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var curves []PriorCurve
	for i := 0; i < DefaultSiblingsPerGroup; i++ {
		c := PriorCurve{Name: fmt.Sprintf("t%02d", i), Group: "campaign"}
		for n := 1; n <= 64; n *= 2 {
			if n > 1 && rng.IntN(4) == 0 {
				continue
			}
			c.Points = append(c.Points, Point{Nodes: n, Throughput: 2800 * math.Pow(float64(n), 0.95) * math.Exp(0.05*rng.NormFloat64())})
		}
		curves = append(curves, c)
	}
	lib, err := NewLibrary(curves)
	if err != nil {
		b.Fatal(err)
	}
	obs := []Observation{{Nodes: 1, Throughput: 2831, Sigma: 50}, {Nodes: 4, Throughput: 9988, Sigma: 200}, {Nodes: 16, Throughput: 38895, Sigma: 800}}
	q := Query{MinNodes: 1, MaxNodes: 64, Group: "campaign", Self: "me"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Predict(obs, lib, q, nil); err != nil {
			b.Fatal(err)
		}
	}
}
