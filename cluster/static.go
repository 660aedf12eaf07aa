package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// StaticSource is a fixed set of local slots that are always idle, with
// no known reclaim time: the pool of a workstation or a dedicated
// allocation.
type StaticSource struct {
	nodes []Node // sorted by id
}

// NewStaticSource offers slots local slots ("local-0", ...) of type
// nodeType ("" when unknown).
func NewStaticSource(slots int, nodeType string) (*StaticSource, error) {
	if slots < 1 {
		return nil, fmt.Errorf("static source: slots: %d: %w", slots, errNoSlots)
	}
	nodes := make([]Node, slots)
	for i := range nodes {
		nodes[i] = Node{ID: SlotID(i), Type: nodeType}
	}
	return newStaticSource(nodes), nil
}

func newStaticSource(nodes []Node) *StaticSource {
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return &StaticSource{nodes: nodes}
}

// Idle returns every slot, sorted by id.
func (s *StaticSource) Idle(ctx context.Context, _ time.Time) ([]Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return slices.Clone(s.nodes), nil
}
