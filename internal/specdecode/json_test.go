package specdecode

import (
	"bytes"
	"context"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// oneLineSpec is the part of a campaign spec that oneLineJSONSpec writes:
// the decoder knows no Gleaner type, and neither need its tests.
type oneLineSpec struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	Space   []struct {
		Name string  `json:"name"`
		Type string  `json:"type"`
		Min  float64 `json:"min"`
		Max  float64 `json:"max"`
	} `json:"space"`
	Objective struct {
		Metric string `json:"metric"`
	} `json:"objective"`
	Budget struct {
		MaxTrials int `json:"max_trials"`
	} `json:"budget"`
}

// oneLineJSONSpec is a spec of about size bytes on one line, most of it a
// long command: the shape of the reported 12 MB spec.
func oneLineJSONSpec(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"name":"big","command":["t"`)
	for b.Len() < size-200 {
		b.WriteString(`,"--flag"`)
	}
	b.WriteString(`],"space":[{"name":"lr","type":"float","min":0.01,"max":0.1}],"objective":{"metric":"m"},"budget":{"max_trials":1}}`)
	return b.Bytes()
}

// Regression: every value's line and column were computed by rescanning the
// input from its start, so a one-line 12 MB spec took more than ten
// minutes. Position lookups must read the input once in all, whatever its
// size and shape. (Before the fix, this fails after the first few thousand
// of its ~400,000 values.)
func TestJSONPositionLookupsReadTheInputOnce(t *testing.T) {
	data := oneLineJSONSpec(4 << 20)
	p := newJSONParser(context.Background(), data)
	read := 0
	p.scanned = func(n int) {
		if read += n; read > 2*len(data) {
			t.Fatalf("position lookups have read %d bytes of a %d-byte spec: more than twice its size", read, len(data))
		}
	}
	n, err := p.parse()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(n.Content); got != 10 {
		t.Fatalf("the spec's mapping has %d nodes, want 10", got)
	}
	last := n.Content[9] // budget's value
	if last.Line != 1 || last.Column != len(data)-len(`{"max_trials":1}}`)+1 {
		t.Errorf("budget's value at %d:%d, want 1:%d", last.Line, last.Column, len(data)-len(`{"max_trials":1}}`)+1)
	}
}

// naivePos is the oracle: line and column (1-based, in bytes) of off.
func naivePos(data []byte, off int) (line, col int) {
	line, col = 1, 1
	for _, c := range data[:min(off, len(data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func TestJSONPositionsMatchTheOracle(t *testing.T) {
	inputs := []string{"", "x", "\n", "\n\n", "ab\ncd", "ab\r\ncd\r\n", "\nab\n\n\ncd\n", strings.Repeat("a", 100)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		b := make([]byte, rng.IntN(300))
		for i := range b {
			b[i] = "ab \n"[rng.IntN(4)]
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		p := newJSONParser(context.Background(), []byte(in))
		for off := 0; off <= len(in)+2; off++ {
			wantLine, wantCol := naivePos([]byte(in), off)
			if line, col := p.pos(off); line != wantLine || col != wantCol {
				t.Fatalf("%q offset %d: %d:%d, want %d:%d", in, off, line, col, wantLine, wantCol)
			}
		}
	}
}

// BenchmarkDecodeOneLine decodes one-line JSON specs of growing size
// (under the 65,536-value bound): the time per byte stays flat (linear
// decoding).
//
//	go test -run '^$' -bench DecodeOneLine -benchtime 5x ./internal/specdecode
func BenchmarkDecodeOneLine(b *testing.B) {
	for _, size := range []int{32 << 10, 128 << 10, 512 << 10} {
		data := oneLineJSONSpec(size)
		b.Run(strconv.Itoa(len(data)>>10)+"KiB", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(context.Background(), data, true, reflect.TypeFor[oneLineSpec](), 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
