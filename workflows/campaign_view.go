package workflows

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// searchAttrValues are the campaign's search attributes as last upserted.
type searchAttrValues struct {
	status         string
	best           float64
	hasBest        bool
	ended, running int64
}

// publish upserts the search attributes that changed (all of them once per
// run) and refreshes the markdown details the UI shows.
func (c *campaign) publish(ctx workflow.Context) {
	now := searchAttrValues{status: string(c.phase()), ended: int64(c.st.Counts.Ended()), running: int64(len(c.st.InFlight))}
	if b := c.best(); b != nil {
		now.best, now.hasBest = b.Score, true
	}
	var ups []temporal.SearchAttributeUpdate
	prev := c.sa
	if prev == nil {
		prev = &searchAttrValues{status: "\x00", ended: -1, running: -1}
		ups = append(ups, GleanerCampaign.ValueSet(c.spec.Name), GleanerKind.ValueSet(KindCampaign))
	}
	// An inline campaign ends trials in most of its workflow tasks: its
	// search attributes and memo snapshot go out at most every
	// InlineCountsEvery, or when its status changes.
	if c.inline == nil || now.status != prev.status || workflow.Now(ctx).Sub(c.countsAt) >= InlineCountsEvery {
		if now.status != prev.status {
			ups = append(ups, GleanerStatus.ValueSet(now.status))
		}
		if now.hasBest && (!prev.hasBest || now.best != prev.best) {
			ups = append(ups, GleanerBestScore.ValueSet(now.best))
		}
		if now.ended != prev.ended {
			ups = append(ups, GleanerTrialsDone.ValueSet(now.ended))
		}
		if now.running != prev.running {
			ups = append(ups, GleanerTrialsRunning.ValueSet(now.running))
		}
	}
	if len(ups) > 0 {
		if err := workflow.UpsertTypedSearchAttributes(ctx, ups...); err != nil {
			c.logger.Warn("search attributes not upserted", "error", err)
		}
		c.sa = &now
		c.countsAt = workflow.Now(ctx)
		if c.inline != nil {
			c.upsertSnapshot(ctx)
		}
	}
	// Details are workflow metadata, not history: refreshing them is free.
	workflow.SetCurrentDetails(ctx, c.details())
}

// details is the markdown the Temporal UI shows for the campaign: one
// summary line and the top of the leaderboard.
func (c *campaign) details() string {
	var b strings.Builder
	s := c.status()
	fmt.Fprintf(&b, "**%s** · %s · %d/%d trials ended (%d completed, %d stopped, %d failed) · %d running",
		s.Campaign, s.State, s.Ended(), s.MaxTrials, s.Completed, s.Stopped, s.Failed, s.Running)
	if s.Parked > 0 {
		fmt.Fprintf(&b, " · %d paused at their budget", s.Parked)
	}
	if s.Reason != "" {
		fmt.Fprintf(&b, " · %s", s.Reason)
	}
	b.WriteString("\n\n")
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "**Warning:** %s\n\n", escapeMarkdown(w))
	}
	if len(c.st.Leaderboard) == 0 {
		b.WriteString("No trial has reported " + c.spec.Objective.Metric + " yet.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "| # | trial | %s (%s) | state | samples | params |\n|---:|---|---:|---|---:|---|\n",
		c.spec.Objective.Metric, c.spec.Objective.Mode)
	for i, e := range c.st.Leaderboard {
		if i == detailsLeaderboardN {
			break
		}
		state := string(e.State)
		if e.Stage != "" {
			state += " (" + escapeMarkdown(e.Stage) + ")"
		}
		fmt.Fprintf(&b, "| %d | %s | %.6g | %s | %.0f | %s |\n", i+1, e.TrialID, e.Score, state, e.Samples,
			strings.ReplaceAll(formatParams(e.Params), "|", `\|`))
	}
	return b.String()
}

// escapeMarkdown keeps text the trainers chose (metric names) from turning
// into markup, links or HTML in the UI.
var escapeMarkdown = strings.NewReplacer(`\`, `\\`, "_", `\_`, "*", `\*`, "`", "\\`", "|", `\|`,
	"<", `\<`, "[", `\[`).Replace

func formatParams(p hpo.Params) string {
	parts := make([]string, 0, len(p))
	for _, n := range p.Names() {
		parts = append(parts, n+"="+hpo.DescribeValue(p[n]))
	}
	return strings.Join(parts, " ")
}

// MemoSnapshot is the memo key of an inline campaign's CampaignSnapshot.
const MemoSnapshot = "gleaner.snapshot"

// capped drops leaderboard entries, worst first, until the snapshot's
// JSON is at most max bytes (or the leaderboard is empty).
func (s CampaignSnapshot) capped(max int) CampaignSnapshot {
	for len(s.Leaderboard) > 0 && jsonSize(s) > max {
		s.Leaderboard = s.Leaderboard[:len(s.Leaderboard)-1]
	}
	return s
}

// jsonSize is the length of v as JSON (0 when it cannot be encoded):
// deterministic, so workflow code may decide on it.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// CampaignSnapshot is an inline campaign's status and the top of its
// leaderboard, in its memo, refreshed with its search attributes (at
// most every InlineCountsEvery): a busy campaign answers queries only
// between its workflow tasks, and a client that cannot wait reads this
// instead (client.Status, client.Leaderboard).
type CampaignSnapshot struct {
	Status      CampaignStatus     `json:"status"`
	Leaderboard []LeaderboardEntry `json:"leaderboard,omitempty"`
}

// MemoSnapshotMax bounds the snapshot in the memo, as JSON: Temporal
// refuses a memo over 32 KB (limit.memoSize.error) and fails the workflow
// task that upserts it, so large parameters (a NAS architecture) cost
// leaderboard entries, never the campaign.
const MemoSnapshotMax = 16 << 10

func (c *campaign) upsertSnapshot(ctx workflow.Context) {
	snap := CampaignSnapshot{Status: c.status()}
	snap.Status.AsOf = workflow.Now(ctx)
	snap.Leaderboard = c.st.Leaderboard[:min(len(c.st.Leaderboard), detailsLeaderboardN)]
	snap = snap.capped(MemoSnapshotMax)
	if err := workflow.UpsertMemo(ctx, map[string]any{MemoSnapshot: snap}); err != nil {
		c.logger.Warn("memo not upserted", "error", err)
	}
}
