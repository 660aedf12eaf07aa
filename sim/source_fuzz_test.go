package sim

import (
	"bytes"
	"testing"
)

// FuzzReadIdleEvents: the reader never panics, and whatever it accepts
// satisfies checkTrace's invariants. Seeds: testdata/fuzz/FuzzReadIdleEvents.
func FuzzReadIdleEvents(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, minHole, from, to float64) {
		opts := SourceOptions{Window: [2]float64{from, to}, MinHole: minHole}
		tr, err := ReadIdleEvents(bytes.NewReader(data), opts)
		if err != nil {
			return
		}
		checkTrace(t, tr, minHole)
	})
}

// FuzzReadSWF: as FuzzReadIdleEvents, for SWF logs. maxNodes is reduced
// to a small machine so that one input stays fast.
func FuzzReadSWF(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, maxNodes int, minHole float64) {
		opts := SourceOptions{MaxNodes: maxNodes % 65, MinHole: minHole}
		tr, err := ReadSWF(bytes.NewReader(data), opts)
		if err != nil {
			return
		}
		if tr.Report.ClippedJobs > tr.Report.Jobs || tr.Report.ClippedNodeSeconds < 0 {
			t.Fatalf("report %+v: clipping out of range", tr.Report)
		}
		checkTrace(t, tr, minHole)
	})
}
