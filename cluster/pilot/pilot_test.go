package pilot

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestIdleUntilTakesTheEarliestClaim(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	claims := []Claim{
		{Kind: ClaimJob, Nodes: []string{"g1"}, Start: at(20), By: "job 8"},
		{Kind: ClaimJob, Nodes: []string{"g2", "g5"}, Start: at(5), By: "job 9"},
		{Kind: ClaimJob, Nodes: []string{"g3"}, Start: at(-1), By: "job 10"}, // overdue
		{Kind: ClaimJob, Nodes: []string{"g4"}, By: "job 11"},                // no start yet
		{Kind: ClaimReservation, Nodes: []string{"g1"}, Start: at(10), By: "reservation maint"},
		{Kind: ClaimReservation, Nodes: []string{"g5"}, Start: at(-5), By: "reservation active"},
	}
	for _, tc := range []struct {
		node string
		end  time.Time
		want Estimate
	}{
		{"g1", at(60), Estimate{Until: at(10), Why: "reservation maint", Claimed: true}},
		{"g2", at(60), Estimate{Until: at(5), Why: "job 9", Claimed: true}},
		{"g2", at(3), Estimate{Until: at(3), Why: "pilot end"}},
		{"g3", at(60), Estimate{Until: t0.Add(time.Nanosecond), Why: "job 10", Claimed: true}},
		{"g4", at(60), Estimate{Until: at(60), Why: "pilot end"}},
		{"g4", time.Time{}, Estimate{}},
		{"g5", time.Time{}, Estimate{Until: at(5), Why: "job 9", Claimed: true}},
		{"g6", at(-1), Estimate{}},
	} {
		assert.Equal(t, tc.want, IdleUntil(tc.node, t0, tc.end, claims), "%s until %v", tc.node, tc.end)
	}
}
