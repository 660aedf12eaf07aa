package trial

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

// FuzzParseReport: any input either fails with ErrMalformedReport or yields
// a report whose counters are finite and non-negative, with no NaN metric,
// that EncodeReport renders to a line ParseReport reads back unchanged.
// Seeds live in testdata/fuzz/FuzzParseReport.
func FuzzParseReport(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseReport(line)
		if err != nil {
			if !errors.Is(err, ErrMalformedReport) {
				t.Fatalf("error %v does not wrap ErrMalformedReport", err)
			}
			if !reflect.DeepEqual(r, Report{}) {
				t.Fatalf("error %v with non-zero report %+v", err, r)
			}
			return
		}
		if !finiteNonNeg(r.Samples) || r.Step < 0 || !finiteNonNeg(r.Epoch) || !finiteNonNeg(r.Time) {
			t.Fatalf("accepted bad progress: %+v", r)
		}
		for name, v := range r.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("metric %q = %v", name, v)
			}
		}
		enc, err := EncodeReport(r)
		if errors.Is(err, errLineTooLong) {
			return // re-encoding may escape characters and outgrow the limit
		}
		if err != nil {
			t.Fatalf("EncodeReport(%+v): %v", r, err)
		}
		back, err := ParseReport(enc)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
		if len(r.Metrics) == 0 {
			r.Metrics = nil // only null metrics: encoded as none
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", back, r)
		}
	})
}
