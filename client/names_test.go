package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
)

// Bad campaign and pool names are errors naming the field, before any call
// to the server: the client has no Temporal client, and would panic.
func TestClientRejectsBadNamesWithoutCallingTheServer(t *testing.T) {
	c := client.New(nil, client.Options{})
	ctx := context.Background()
	byName := map[string]func(name string) error{
		"Status":      func(n string) error { _, err := c.Status(ctx, n); return err },
		"Leaderboard": func(n string) error { _, err := c.Leaderboard(ctx, n); return err },
		"Trials":      func(n string) error { _, err := c.Trials(ctx, n); return err },
		"Pause":       func(n string) error { _, err := c.Pause(ctx, n, ""); return err },
		"Resume":      func(n string) error { _, err := c.Resume(ctx, n, ""); return err },
		"Stop":        func(n string) error { _, err := c.Stop(ctx, n, ""); return err },
		"Wait":        func(n string) error { _, err := c.Wait(ctx, n); return err },
		"Spec":        func(n string) error { _, err := c.Spec(ctx, n); return err },
		"Watch": func(n string) error {
			var last error
			for p := range c.Watch(ctx, n, 0) {
				last = p.Err
			}
			return last
		},
	}
	for _, bad := range []string{"", "../x", "a b", strings.Repeat("n", 64), "-x"} {
		for call, f := range byName {
			err := f(bad)
			if !errors.Is(err, client.ErrInvalidName) || !strings.Contains(err.Error(), "campaign: ") {
				t.Errorf("%s(%q): %v, want ErrInvalidName naming the campaign", call, bad, err)
			}
		}
		if _, err := c.PoolStatus(ctx, bad); !errors.Is(err, client.ErrInvalidName) || !strings.Contains(err.Error(), "pool: ") {
			t.Errorf("PoolStatus(%q): %v, want ErrInvalidName naming the pool", bad, err)
		}
	}

	spec := gleaner.CampaignSpec{Name: "ok", Command: []string{"t"},
		Objective: gleaner.ObjectiveSpec{Metric: "m"}, Budget: gleaner.Budget{MaxTrials: 1}}
	for _, tc := range []struct{ name, pool, field string }{
		{"a/b", "", "name: "}, {"ok", "gpu pool", "pool: "}, {"", "", "name: "},
	} {
		s := spec
		s.Name, s.Pool = tc.name, tc.pool
		_, err := c.Submit(ctx, s)
		if !errors.Is(err, client.ErrInvalidSpec) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Submit with name %q pool %q: %v, want ErrInvalidSpec naming %q", tc.name, tc.pool, err, tc.field)
		}
	}
}
