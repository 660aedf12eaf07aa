package trial

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A trainer may say what it trains (model, batch); bad values make the
// line malformed, like bad counters.
func TestParseReportModelAndBatch(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Report
		bad  bool
	}{
		{line: `{"samples":640,"model":"resnet50","batch":64}`, want: Report{Samples: 640, Model: "resnet50", Batch: 64}},
		{line: `{"model":"bert-large"}`, want: Report{Model: "bert-large"}},
		{line: `{"samples":1,"batch":0}`, want: Report{Samples: 1}},
		{line: `{"batch":-1}`, bad: true},
		{line: `{"batch":64.5}`, bad: true},
		{line: `{"batch":"64"}`, bad: true},
		{line: `{"model":7}`, bad: true},
		{line: `{"model":"` + strings.Repeat("m", MaxModelName+1) + `"}`, bad: true},
		{line: `{"model":"` + strings.Repeat("m", MaxModelName) + `"}`, want: Report{Model: strings.Repeat("m", MaxModelName)}},
	} {
		r, err := ParseReport([]byte(tc.line))
		if tc.bad {
			if !errors.Is(err, ErrMalformedReport) {
				t.Errorf("ParseReport(%s) = %+v, %v; want ErrMalformedReport", tc.line, r, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(r, tc.want) {
			t.Errorf("ParseReport(%s) = %+v, %v; want %+v", tc.line, r, err, tc.want)
			continue
		}
		enc, err := EncodeReport(r)
		if err != nil {
			t.Fatalf("EncodeReport(%+v): %v", r, err)
		}
		if back, err := ParseReport(enc); err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("round trip of %s: %+v, %v", enc, back, err)
		}
	}
}
