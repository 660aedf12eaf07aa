package workflows

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// This file is pure: what a campaign remembers of trials that never
// reported its objective metric, the warning it shows for them, and the
// metric name it suggests instead. No workflow calls, no clock, no maps
// iterated in an order that matters.

// add records one trial that finished without the objective metric;
// metrics are the last metrics it reported (nil: none). It keeps the
// first missedTrialsKept trial ids and at most missedMetricsKept metric
// names, sorted: the smallest names win, so the set is the same whatever
// the order the trials finished in once it is full.
func (m *MissedObjective) add(trialID string, metrics map[string]float64) {
	if len(m.Trials) < missedTrialsKept {
		m.Trials = append(m.Trials, trialID)
	}
	if len(metrics) == 0 {
		m.Silent++
		return
	}
	names := make([]string, 0, len(metrics))
	for n := range metrics {
		names = append(names, n)
	}
	m.Metrics = mergeNames(m.Metrics, names)
	if len(m.Metrics) > missedMetricsKept {
		m.Metrics, m.MetricsCut = m.Metrics[:missedMetricsKept], true
	}
}

// mergeNames is the sorted union of the sorted set a and the names b.
func mergeNames(a, b []string) []string {
	out := append([]string{}, a...)
	for _, n := range b {
		i := sort.SearchStrings(out, n)
		if i < len(out) && out[i] == n {
			continue
		}
		out = append(out, "")
		copy(out[i+1:], out[i:])
		out[i] = n
	}
	return out
}

// missedObjectiveWarning is the warning a campaign shows once missing of
// its finished trials (completed or stopped, finished in all) never
// reported objective, or "" when none did. It names the first such trials,
// lists the metrics they reported instead and suggests the closest name,
// or, when they reported nothing, points at the report file.
func missedObjectiveWarning(objective string, m *MissedObjective, missing, finished int) string {
	if missing == 0 || m == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d finished trials never reported objective metric %q", missing, finished, objective)
	if len(m.Trials) > 0 {
		more := ""
		if missing > len(m.Trials) {
			more = ", …"
		}
		fmt.Fprintf(&b, " (%s%s)", strings.Join(m.Trials, ", "), more)
	}
	const noMetrics = "does the trainer append JSON lines to $GLEANER_REPORT_FILE? (see docs/protocol.md)"
	if len(m.Metrics) == 0 {
		b.WriteString(" and reported no metrics at all: " + noMetrics)
		return b.String()
	}
	more := ""
	if m.MetricsCut {
		more = ", …"
	}
	fmt.Fprintf(&b, "; they reported: %s%s", strings.Join(m.Metrics, ", "), more)
	if i := sort.SearchStrings(m.Metrics, objective); i < len(m.Metrics) && m.Metrics[i] == objective {
		fmt.Fprintf(&b, " (%s only as NaN or ±Inf)", objective)
	} else if s := SuggestMetric(objective, m.Metrics); s != "" {
		fmt.Fprintf(&b, " (did you mean %q?)", s)
	}
	if m.Silent > 0 {
		fmt.Fprintf(&b, "; %d reported no metrics at all", m.Silent)
	}
	return b.String()
}

// SuggestMetric returns the name among reported that objective most
// likely meant, or "" when none is close. Closeness, strongest first:
//
//  1. equal ignoring case: Val_Loss → val_loss;
//  2. equal once lower-cased with '_', '-', '.', '/' and spaces removed:
//     valloss → val_loss, val-loss → val_loss;
//  3. a Levenshtein distance of at most ⌊n/4⌋ (and at most 2) between those
//     normalized forms, n the longer one's length: val_los → val_loss,
//     accuarcy → accuracy; never for names of 3 characters or fewer (mse
//     is not mae);
//  4. one normalized form a prefix of the other, the shorter at least 3
//     characters long, and only one name so related: acc → accuracy (but
//     loss with loss_scale and loss_rpn reported suggests nothing).
//
// Within a tier the smaller distance wins, then the smaller name, so the
// answer does not depend on the order of reported. The objective itself is
// never suggested.
func SuggestMetric(objective string, reported []string) string {
	const (
		tierCase = iota
		tierNormalized
		tierEdit
		tierPrefix
		tierNone
	)
	norm := normalizeMetric(objective)
	best, bestTier, bestDist := "", tierNone, 0
	prefixes := 0
	for _, name := range reported {
		if name == objective || name == "" {
			continue
		}
		n := normalizeMetric(name)
		tier, dist := tierNone, 0
		switch {
		case strings.EqualFold(name, objective):
			tier = tierCase
		case n == norm && n != "":
			tier = tierNormalized
		default:
			if d, ok := closeEdit(norm, n); ok {
				tier, dist = tierEdit, d
			} else if isLongPrefix(norm, n) {
				tier = tierPrefix
				prefixes++
			}
		}
		if tier < bestTier || tier == bestTier && (dist < bestDist || dist == bestDist && name < best) {
			best, bestTier, bestDist = name, tier, dist
		}
	}
	if bestTier == tierNone || bestTier == tierPrefix && prefixes > 1 {
		return ""
	}
	return best
}

// normalizeMetric lower-cases name and drops the separators people use
// interchangeably in metric names.
func normalizeMetric(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', '/', ' ':
			return -1
		}
		return r
	}, strings.ToLower(name))
}

// closeEdit reports whether a and b are within ⌊n/4⌋ ≤ 2 edits, n the
// longer one's length in runes, and the distance.
func closeEdit(a, b string) (int, bool) {
	n := max(utf8.RuneCountInString(a), utf8.RuneCountInString(b))
	limit := min(2, n/4)
	if limit == 0 {
		return 0, false
	}
	d := levenshtein([]rune(a), []rune(b))
	return d, d <= limit
}

// isLongPrefix reports whether the shorter of a and b, at least 3 runes
// long, is a prefix of the longer.
func isLongPrefix(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return utf8.RuneCountInString(a) >= 3 && strings.HasPrefix(b, a)
}

// levenshtein is the edit distance (insertions, deletions, substitutions)
// between a and b, by the Wagner–Fischer dynamic programme with one row.
func levenshtein(a, b []rune) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			next := min(row[j]+1, row[j-1]+1, diag+cost)
			diag, row[j] = row[j], next
		}
	}
	return row[len(b)]
}

// EndedWithoutObjective reports whether a trial that ended in state counts as
// one that never reported the campaign's objective metric (seen: it did):
// it completed, or was stopped after reporting something — stopped before
// its first report, it had no chance to. The campaign counts these trials
// (CampaignCounts.ObjectiveMissing) and `gleaner trials` marks them.
func EndedWithoutObjective(state TrialState, seen bool, metrics map[string]float64) bool {
	if seen {
		return false
	}
	// Parked and stopped at its rung are a completed segment as its
	// campaign shows it (ClassifyTrial).
	return state == TrialCompleted || state == TrialParked || state == TrialAtRung || state == TrialStopped && len(metrics) > 0
}
