package hpo

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func FuzzSpaceSample(f *testing.F) {
	f.Add(uint8(0), 0.0, 1.0, false, uint64(1))
	f.Add(uint8(0), 1e-6, 1.0, true, uint64(2))
	f.Add(uint8(1), -3.5, 7.2, false, uint64(3))
	f.Add(uint8(1), 1.0, 1e6, true, uint64(4))
	f.Add(uint8(1), 2.0, 2.0, false, uint64(5))
	f.Add(uint8(0), -1e308, 1e308, false, uint64(6))
	f.Add(uint8(1), -1e300, 1e300, false, uint64(7))
	f.Add(uint8(2), 0.0, 0.0, false, uint64(8))
	f.Fuzz(func(t *testing.T, typ uint8, lo, hi float64, log bool, seed uint64) {
		p := Param{Name: "x", Min: lo, Max: hi, Log: log}
		switch typ % 3 {
		case 0:
			p.Type = ParamFloat
		case 1:
			p.Type = ParamInt
		default:
			p.Type, p.Min, p.Max, p.Log = ParamChoice, 0, 0, false
			p.Choices = []string{"a", "b", "c"}[:1+seed%3]
		}
		s := Space{p}
		if s.Validate() != nil {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		for range 32 {
			v := s.Sample(rng)
			if err := s.Contains(v); err != nil {
				t.Fatalf("%+v: %v", p, err)
			}
		}
	})
}

// Log scale is respected: a log-uniform sample on [1e-4, 1] has its median
// near the geometric mean 1e-2 (a uniform one would be near 0.5), and
// each decade gets about a quarter of the samples.
func TestSampleLogScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []ParamType{ParamFloat, ParamInt} {
		p := Param{Name: "x", Type: typ, Min: 1e-4, Max: 1, Log: true}
		if typ == ParamInt {
			p.Min, p.Max = 1, 1e4
		}
		s := Space{p}
		const n = 4000
		xs := make([]float64, n)
		decades := make([]int, 4)
		for i := range xs {
			xs[i] = s.Sample(rng)["x"].Num
			d := int(math.Floor(math.Log10(xs[i]/p.Min) + 1e-12))
			decades[min(d, 3)]++
		}
		sort.Float64s(xs)
		median := xs[n/2]
		geo := math.Sqrt(p.Min * p.Max)
		if median < geo/2 || median > geo*2 {
			t.Errorf("%s: median %v, want near %v", typ, median, geo)
		}
		for d, c := range decades {
			if c < n/4-n/10 || c > n/4+n/10 {
				t.Errorf("%s: decade %d has %d of %d samples, want about a quarter", typ, d, c, n)
			}
		}
	}
}

// Integers are uniform over their range and hit both ends.
func TestSampleIntUniform(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := Space{{Name: "k", Type: ParamInt, Min: 0.5, Max: 4.9}} // integers 1..4
	counts := map[float64]int{}
	for range 4000 {
		counts[s.Sample(rng)["k"].Num]++
	}
	for k := 1.0; k <= 4; k++ {
		if c := counts[k]; c < 850 || c > 1150 {
			t.Errorf("k=%v drawn %d times of 4000, want about 1000", k, c)
		}
	}
	if len(counts) != 4 {
		t.Errorf("drew %v, want only 1..4", counts)
	}
}

func TestContainsRejects(t *testing.T) {
	s := testSpace()
	good := s.Sample(rand.New(rand.NewPCG(1, 1)))
	if err := s.Contains(good); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(Params){
		"missing":      func(p Params) { delete(p, "lr") },
		"extra":        func(p Params) { p["zz"] = Float(1) },
		"out of range": func(p Params) { p["dropout"] = Float(0.9) },
		"not integer":  func(p Params) { p["layers"] = Float(2.5) },
		"bad choice":   func(p Params) { p["opt"] = String("rmsprop") },
		"string num":   func(p Params) { p["lr"] = String("0.1") },
	} {
		p := Params{}
		for k, v := range good {
			p[k] = v
		}
		edit(p)
		if err := s.Contains(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
