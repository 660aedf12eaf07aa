package client

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gleaner-hpc/gleaner"
)

// Pools names the namespace's pools whose workflow runs, sorted (from the
// visibility store: GleanerKind = "pool").
func (c *Client) Pools(ctx context.Context) ([]string, error) {
	ids, open, err := c.listWorkflows(ctx, fmt.Sprintf("%s = %q", gleaner.SearchAttrKind, gleaner.WorkflowKindPool))
	if err != nil {
		return nil, fmt.Errorf("listing pools: %w", err)
	}
	prefix := gleaner.PoolWorkflowID("")
	var out []string
	for _, id := range ids {
		if open[id] && strings.HasPrefix(id, prefix) {
			out = append(out, strings.TrimPrefix(id, prefix))
		}
	}
	slices.Sort(out)
	return out, nil
}
