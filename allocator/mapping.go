package allocator

import "sort"

// mapNodes turns counts and types into node ids without migration.
// Departed nodes are already gone from the instance. A shrinking trial
// keeps the nodes expected to stay idle longest; a growing trial keeps all
// it has and takes free nodes of its type, longest-idle first, so the
// nodes the batch scheduler will reclaim soonest are the ones left free.
func mapNodes(in *instance, d decision) []Allocation {
	nodes := in.p.Nodes
	held := make([]bool, len(nodes))
	out := make([]Allocation, len(in.trials))
	for j := range in.trials {
		ti := &in.trials[j]
		a := Allocation{TrialID: in.p.Trials[j].ID, Count: d.counts[j], Nodes: []string{}}
		if a.Count > 0 && ti.cur > 0 {
			keep := append([]int(nil), ti.curNodes...)
			sortByIdleDesc(nodes, keep)
			if len(keep) > a.Count {
				keep = keep[:a.Count]
			}
			for _, i := range keep {
				held[i] = true
				a.Nodes = append(a.Nodes, nodes[i].ID)
			}
		}
		out[j] = a
	}
	free := make([][]int, len(in.types))
	for i := range nodes {
		if !held[i] {
			t := in.typeIdx[nodes[i].Type]
			free[t] = append(free[t], i)
		}
	}
	for t := range free {
		sortByIdleDesc(nodes, free[t])
	}
	for j := range out {
		a := &out[j]
		if a.Count == 0 {
			continue
		}
		typ := d.types[j]
		a.NodeType = in.types[typ]
		need := a.Count - len(a.Nodes)
		if need > len(free[typ]) {
			panic("allocator: decision exceeds the capacity of node type " + a.NodeType)
		}
		for _, i := range free[typ][:need] {
			a.Nodes = append(a.Nodes, nodes[i].ID)
		}
		free[typ] = free[typ][need:]
	}
	return out
}

// sortByIdleDesc orders node indices by expected idle end, latest first
// (unknown counts as latest), then by id for determinism.
func sortByIdleDesc(nodes []Node, idx []int) {
	sort.SliceStable(idx, func(a, b int) bool {
		na, nb := nodes[idx[a]], nodes[idx[b]]
		ua, ub := na.IdleUntil.IsZero(), nb.IdleUntil.IsZero()
		if ua != ub {
			return ua
		}
		if !na.IdleUntil.Equal(nb.IdleUntil) {
			return na.IdleUntil.After(nb.IdleUntil)
		}
		return na.ID < nb.ID
	})
}
