package workflows

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestObjectiveSuggestMetric(t *testing.T) {
	for _, c := range []struct {
		objective string
		reported  []string
		want      string
	}{
		// 1. case
		{"Val_Loss", []string{"loss", "val_loss"}, "val_loss"},
		{"ACCURACY", []string{"accuracy"}, "accuracy"},
		// 2. separators
		{"valloss", []string{"loss", "val_loss"}, "val_loss"},
		{"val-loss", []string{"val_loss"}, "val_loss"},
		{"val.loss", []string{"Val Loss"}, "Val Loss"},
		{"eval/loss", []string{"eval_loss"}, "eval_loss"},
		// 3. a typo or two, relative to the length
		{"val_los", []string{"loss", "val_loss"}, "val_loss"},
		{"accuarcy", []string{"accuracy", "loss"}, "accuracy"},
		{"validation_loss", []string{"validaton_los"}, "validaton_los"},
		{"mse", []string{"mae"}, ""}, // 3 characters: no typo allowed
		{"loss", []string{"val_loss"}, ""},
		{"val_mse", []string{"val_mse_x2", "val_mae"}, "val_mae"}, // distance 1 beats distance 2
		// 4. an unambiguous prefix of at least 3 characters
		{"acc", []string{"accuracy", "loss"}, "accuracy"},
		{"accuracy", []string{"acc", "loss"}, "acc"},
		{"loss", []string{"loss_scale", "loss_rpn"}, ""}, // ambiguous
		{"lr", []string{"lr_schedule"}, ""},              // too short
		// the strongest tier wins over order; ties by name
		{"valloss", []string{"vallos", "val_loss"}, "val_loss"},
		{"valloss", []string{"val_loss", "val-loss"}, "val-loss"},
		{"valloss", []string{"val-loss", "val_loss"}, "val-loss"},
		// unrelated, or nothing to suggest
		{"valloss", []string{"throughput", "step"}, ""},
		{"valloss", nil, ""},
		{"val_loss", []string{"val_loss"}, ""}, // never the objective itself
		{"val_loss", []string{"", "lr"}, ""},
	} {
		if got := SuggestMetric(c.objective, c.reported); got != c.want {
			t.Errorf("SuggestMetric(%q, %q) = %q, want %q", c.objective, c.reported, got, c.want)
		}
	}
}

// The suggestion does not depend on the order trials reported names in.
func TestObjectiveSuggestMetricOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"val_loss", "val-loss", "vallos", "accuracy", "acc_top5", "loss", "Val_Loss", "lr"}
	for _, objective := range []string{"valloss", "VAL_LOSS", "acc", "accuracy", "los", "x"} {
		want := SuggestMetric(objective, names)
		for i := 0; i < 20; i++ {
			shuffled := slices.Clone(names)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if got := SuggestMetric(objective, shuffled); got != want {
				t.Fatalf("SuggestMetric(%q, %q) = %q, but %q for %q", objective, shuffled, got, want, names)
			}
		}
	}
}

// levenshtein against the textbook recursion on small random strings.
func TestObjectiveLevenshteinOracle(t *testing.T) {
	var naive func(a, b []rune) int
	naive = func(a, b []rune) int {
		switch {
		case len(a) == 0:
			return len(b)
		case len(b) == 0:
			return len(a)
		case a[0] == b[0]:
			return naive(a[1:], b[1:])
		}
		return 1 + min(naive(a[1:], b), naive(a, b[1:]), naive(a[1:], b[1:]))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	word := func() []rune {
		r := make([]rune, rng.IntN(7))
		for i := range r {
			r[i] = []rune("abcé")[rng.IntN(4)]
		}
		return r
	}
	for i := 0; i < 2000; i++ {
		a, b := word(), word()
		if got, want := levenshtein(a, b), naive(a, b); got != want {
			t.Fatalf("levenshtein(%q, %q) = %d, want %d", string(a), string(b), got, want)
		}
	}
}

func TestObjectiveMissedWarning(t *testing.T) {
	var m MissedObjective
	if w := missedObjectiveWarning("valloss", &m, 0, 4); w != "" {
		t.Errorf("no trial missed it: warning %q", w)
	}
	if w := missedObjectiveWarning("valloss", nil, 0, 4); w != "" {
		t.Errorf("nil: warning %q", w)
	}

	m.add("t00001", map[string]float64{"val_loss": 1, "loss": 2})
	m.add("t00002", map[string]float64{"loss": 1.5})
	m.add("t00003", map[string]float64{"step": 3, "loss": 1})
	want := `3 of 3 finished trials never reported objective metric "valloss" (t00001, t00002, t00003); ` +
		`they reported: loss, step, val_loss (did you mean "val_loss"?)`
	if got := missedObjectiveWarning("valloss", &m, 3, 3); got != want {
		t.Errorf("warning\n got %s\nwant %s", got, want)
	}
	m.add("t00004", nil)
	m.add("t00005", nil)
	m.add("t00006", map[string]float64{})
	want = `6 of 9 finished trials never reported objective metric "valloss" (t00001, t00002, t00003, t00004, t00005, …); ` +
		`they reported: loss, step, val_loss (did you mean "val_loss"?); 3 reported no metrics at all`
	if got := missedObjectiveWarning("valloss", &m, 6, 9); got != want {
		t.Errorf("warning\n got %s\nwant %s", got, want)
	}
	if got := missedObjectiveWarning("throughput_x", &m, 6, 9); strings.Contains(got, "did you mean") {
		t.Errorf("unrelated objective: %s", got)
	}
	if got := missedObjectiveWarning("val_loss", &m, 6, 9); !strings.Contains(got, "(val_loss only as NaN or ±Inf)") {
		t.Errorf("objective reported but never finite: %s", got)
	}

	var silent MissedObjective
	silent.add("t00001", nil)
	want = `1 of 1 finished trials never reported objective metric "loss" (t00001) and reported no metrics at all: ` +
		`does the trainer append JSON lines to $GLEANER_REPORT_FILE? (see docs/protocol.md)`
	if got := missedObjectiveWarning("loss", &silent, 1, 1); got != want {
		t.Errorf("warning\n got %s\nwant %s", got, want)
	}
}

// MissedObjective stays bounded and keeps the same names whatever the
// order trials finish in.
func TestObjectiveMissedBounded(t *testing.T) {
	reports := make([]map[string]float64, 40)
	for i := range reports {
		reports[i] = map[string]float64{fmt.Sprintf("m%02d", i): 1, "loss": math.NaN()}
	}
	var a, b MissedObjective
	for i := range reports {
		a.add(fmt.Sprintf("t%05d", i+1), reports[i])
		b.add(fmt.Sprintf("t%05d", i+1), reports[len(reports)-1-i])
	}
	if len(a.Trials) != missedTrialsKept || len(a.Metrics) != missedMetricsKept || !a.MetricsCut {
		t.Fatalf("%+v: want %d trials, %d metrics, cut", a, missedTrialsKept, missedMetricsKept)
	}
	if !slices.IsSorted(a.Metrics) || !slices.Equal(a.Metrics, b.Metrics) || a.Metrics[0] != "loss" || a.Metrics[19] != "m18" {
		t.Errorf("metrics %q and %q: want the same 20 smallest names, sorted", a.Metrics, b.Metrics)
	}
	if w := missedObjectiveWarning("los", &a, 40, 40); !strings.Contains(w, "m18, …") {
		t.Errorf("warning %s: want the cut shown", w)
	}
}
