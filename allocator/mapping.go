package allocator

import "sort"

// mapNodes turns counts and types into node ids without migration.
// Departed nodes are already gone from the instance. A shrinking trial
// keeps the nodes expected to stay idle longest; a growing trial keeps all
// it has and takes free nodes of its type, longest-idle first, so the
// nodes the batch scheduler will reclaim soonest are the ones left free.
// Where nodes have hosts, a trial's nodes are packed onto few hosts
// first: a shrinking trial keeps the hosts holding most of its nodes, a
// growing one fills the hosts it is on, then the host that fits what it
// still needs most tightly (packHosts).
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
			keepHosts(nodes, keep)
			if len(keep) > a.Count {
				keep = keep[:a.Count]
			}
			// In the order the trial holds them: an unchanged set comes
			// back unchanged (the pool and the trial compare lists), and
			// its rank 0 stays where it was.
			kept := make(map[int]bool, len(keep))
			for _, i := range keep {
				kept[i] = true
			}
			keep = keep[:0]
			for _, i := range ti.curNodes {
				if kept[i] {
					keep = append(keep, i)
				}
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
		var picked []int
		picked, free[typ] = packHosts(nodes, free[typ], need, a.Nodes, in.nodeIdx)
		for _, i := range picked {
			a.Nodes = append(a.Nodes, nodes[i].ID)
		}
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

// keepHosts reorders a trial's nodes (sorted longest-idle first) so the
// hosts holding most of them come first, each host's nodes together,
// keeping the idle order within a host and between hosts that hold as
// many; without hosts it changes nothing.
func keepHosts(nodes []Node, idx []int) {
	count := map[string]int{}
	first := map[string]int{}
	for k, i := range idx {
		h := nodes[i].Host
		if count[h]++; count[h] == 1 {
			first[h] = k
		}
	}
	if len(count) < 2 {
		return
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ha, hb := nodes[idx[a]].Host, nodes[idx[b]].Host
		if count[ha] != count[hb] {
			return count[ha] > count[hb]
		}
		return first[ha] < first[hb]
	})
}

// packHosts takes need nodes from free (longest-idle first) for a trial
// that holds the nodes named in has, and returns them and what is left of
// free, in order. Without hosts it takes free's first need. With hosts it
// fills the hosts the trial is on first, then repeatedly the host with the
// fewest free nodes that still cover what is needed, or, if none does,
// the one with the most; ties go to the longest idle.
func packHosts(nodes []Node, free []int, need int, has []string, idIdx map[string]int) (picked, rest []int) {
	if need == 0 {
		return nil, free
	}
	byHost := map[string][]int{}
	var order []string
	for _, i := range free {
		h := nodes[i].Host
		if _, ok := byHost[h]; !ok {
			order = append(order, h)
		}
		byHost[h] = append(byHost[h], i)
	}
	if len(order) < 2 {
		return free[:need], free[need:]
	}
	take := func(h string, n int) {
		got := byHost[h][:n]
		picked = append(picked, got...)
		byHost[h] = byHost[h][n:]
		need -= n
	}
	for _, id := range has {
		if need == 0 {
			break
		}
		if i, ok := idIdx[id]; ok {
			if h := nodes[i].Host; len(byHost[h]) > 0 {
				take(h, min(need, len(byHost[h])))
			}
		}
	}
	for need > 0 {
		best := ""
		found := false
		for _, h := range order {
			n := len(byHost[h])
			if n == 0 {
				continue
			}
			b := len(byHost[best])
			switch {
			case !found:
				best, found = h, true
			case n >= need && (b < need || n < b):
				best = h // covers it, more tightly
			case b < need && n > b:
				best = h // neither covers it: the larger
			}
		}
		take(best, min(need, len(byHost[best])))
	}
	taken := map[int]bool{}
	for _, i := range picked {
		taken[i] = true
	}
	for _, i := range free {
		if !taken[i] {
			rest = append(rest, i)
		}
	}
	return picked, rest
}
