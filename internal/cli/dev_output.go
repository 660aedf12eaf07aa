package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// devProgressLine is one update:
//
//	0:14 trials 3/20 done, 4 running | nodes ##o#..o# 7 nodes, 4 in use | best val_loss 0.0821 (trial 2)
//
// The trials not ended are counted in status's words
// (CampaignStatus.Census), the nodes as pool status counts them
// (PoolState.NodeUse).
func devProgressLine(elapsed time.Duration, p client.Progress, slots int) string {
	s := p.Status
	var b strings.Builder
	sec := int(elapsed.Round(time.Second) / time.Second)
	fmt.Fprintf(&b, "%3d:%02d trials %d/%d done, %s", sec/60, sec%60, s.Ended(), s.MaxTrials, strings.Join(s.Census(), ", "))
	if s.Failed > 0 {
		fmt.Fprintf(&b, ", %d failed", s.Failed)
	}
	if s.State != workflows.CampaignRunning {
		fmt.Fprintf(&b, " (%s)", s.State)
	}
	b.WriteString(" | nodes ")
	if p.Pool == nil {
		b.WriteString("- (the pool is starting)")
	} else {
		idle := map[string]bool{}
		for _, n := range p.Pool.Nodes {
			idle[n.ID] = true
		}
		used := map[string]bool{}
		for _, t := range p.Pool.Trials {
			for _, n := range t.Nodes {
				used[n] = true
			}
		}
		if slots > 0 && slots <= 64 {
			for i := 0; i < slots; i++ {
				id := cluster.SlotID(i)
				switch {
				case used[id]:
					b.WriteByte('#')
				case idle[id]:
					b.WriteByte('o')
				default:
					b.WriteByte('.')
				}
			}
			b.WriteByte(' ')
		}
		inUse, total := p.Pool.NodeUse()
		fmt.Fprintf(&b, "%d nodes, %d in use", total, inUse)
	}
	b.WriteString(" | best ")
	switch {
	case s.Pareto != nil:
		fmt.Fprintf(&b, "front %d, hypervolume %.4g", s.Pareto.Size, s.Pareto.Hypervolume)
	case s.Best == nil:
		b.WriteString("-")
	default:
		fmt.Fprintf(&b, "%s %.4g (trial %d)", s.Objective, s.Best.Score, s.Best.Number)
	}
	return b.String()
}

// devWriteLeaderboard prints the top 10, best first, in the table
// `leaderboard` and `submit --wait` print (writeLeaderboard; for several
// objectives, the front and the trials by non-dominated rank:
// writeParetoLeaderboard).
func devWriteLeaderboard(w io.Writer, res workflows.CampaignResult, spec gleaner.CampaignSpec) {
	l := res.Leaderboard
	if spec.MultiObjective() && res.Pareto != nil {
		if len(l) == 0 {
			fmt.Fprintln(w, "leaderboard: empty (no trial reported every objective: "+goalsText(spec.ObjectiveList(), spec.Constraints)+")")
			return
		}
		l = topN(l, 10)
		fmt.Fprintf(w, "\nleaderboard (top %d, by non-dominated rank):\n", len(l))
		writeParetoLeaderboard(w, l, res.Pareto, spec.ObjectiveList(), spec.Constraints) // pareto.go
		return
	}
	obj := spec.PrimaryObjective()
	if len(l) == 0 {
		fmt.Fprintln(w, "leaderboard: empty (no trial reported "+obj.Metric+")")
		return
	}
	l = topN(l, 10)
	better := "lowest"
	if obj.Mode == "max" {
		better = "highest"
	}
	fmt.Fprintf(w, "\nleaderboard (top %d, %s %s first):\n", len(l), better, obj.Metric)
	writeLeaderboard(w, l)
}

// devWriteUI prints where to look in the web UI.
func devWriteUI(w io.Writer, ui, namespace string, camp client.Campaign) {
	q := fmt.Sprintf("%s = %q", workflows.GleanerCampaign.GetName(), camp.Name)
	fmt.Fprintf(w, "\nTemporal web UI: %s\n", ui)
	fmt.Fprintf(w, "  the campaign:    %s\n", camp.UIURL)
	fmt.Fprintf(w, "  its workflows:   %s/namespaces/%s/workflows?query=%s\n", ui, url.PathEscape(namespace), url.QueryEscape(q))
	fmt.Fprintf(w, "  queries to paste into the UI's search:\n")
	fmt.Fprintf(w, "    %s\n", q)
	fmt.Fprintf(w, "    %s AND %s = %q\n", q, workflows.GleanerKind.GetName(), workflows.WorkflowKindTrial)
	fmt.Fprintf(w, "    %s = %q\n", workflows.GleanerKind.GetName(), workflows.WorkflowKindPool)
}

// devUIBase is the web UI's address for people: localhost for a loopback
// server.
func devUIBase(raw, ip string) string {
	if raw == "" {
		return ""
	}
	if ip == "127.0.0.1" || ip == "::1" || ip == "localhost" {
		if u, err := url.Parse(raw); err == nil {
			u.Host = net.JoinHostPort("localhost", u.Port())
			return u.String()
		}
	}
	return raw
}

// devOrMemory is where --db keeps the server's state, for messages.
func devOrMemory(db string) string {
	if db == "" {
		return "memory until then"
	}
	return db
}

// follow prints the campaign's progress every --interval until it ends,
// then its result, its leaderboard and where to look in the web UI. It
// returns nil at once when ctx is cancelled (Ctrl-C).
func (d *devRun) follow(ctx context.Context, c *client.Client, camp client.Campaign, spec gleaner.CampaignSpec, namespace string) error {
	submitted := d.now()
	var last client.Progress
	for p := range c.Watch(ctx, camp.Name, d.o.interval) {
		if p.Err != nil {
			if errors.Is(p.Err, client.ErrNotFound) {
				return fmt.Errorf("campaign %s vanished: %w", camp.Name, p.Err)
			}
			continue // not answering yet (its first task), or a transient error
		}
		last = p
		line := devProgressLine(d.now().Sub(submitted), p, d.slots)
		if d.tty {
			// Redraw in place; auto-wrap off while writing, so that a line
			// wider than the terminal is clipped rather than wrapped (a
			// wrapped line would defeat the carriage return).
			fmt.Fprintf(d.stdout, "\r\x1b[K\x1b[?7l%s\x1b[?7h", line)
		} else {
			fmt.Fprintln(d.stdout, line)
		}
	}
	if d.tty {
		fmt.Fprintln(d.stdout)
	}
	if ctx.Err() != nil {
		return nil
	}
	if !last.Done() {
		return fmt.Errorf("campaign %s: progress stopped before it ended", camp.Name)
	}
	res, waitErr := c.Wait(ctx, camp.Name)
	if ctx.Err() != nil {
		return nil
	}
	fmt.Fprintf(d.stdout, "\ncampaign %s %s after %v: %d completed, %d stopped, %d failed\n",
		camp.Name, res.State, d.now().Sub(submitted).Round(time.Second), res.Completed, res.Stopped, res.Failed)
	if res.Reason != "" {
		fmt.Fprintf(d.stdout, "  reason: %s\n", res.Reason)
	}
	devWriteLeaderboard(d.stdout, res, spec.WithDefaults())
	devWriteUI(d.stdout, d.ui, namespace, camp)
	if d.dashboard != "" {
		fmt.Fprintf(d.stdout, "\nGleaner dashboard: %s\n  the campaign:    %s#/c/%s\n  its pool:        %s#/p/%s\n",
			d.dashboard, d.dashboard, url.PathEscape(camp.Name), d.dashboard, url.PathEscape(spec.WithDefaults().Pool))
	}
	if waitErr != nil && !d.o.exitWhenDone {
		d.warn("%v", waitErr)
		return nil
	}
	return waitErr
}
