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
// still needs most tightly (freePool.take).
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
	pools := make([]*freePool, len(in.types))
	for t := range free {
		sortByIdleDesc(nodes, free[t])
		pools[t] = newFreePool(nodes, free[t])
	}
	for j := range out {
		a := &out[j]
		if a.Count == 0 {
			continue
		}
		typ := d.types[j]
		a.NodeType = in.types[typ]
		need := a.Count - len(a.Nodes)
		if need > pools[typ].len() {
			panic("allocator: decision exceeds the capacity of node type " + a.NodeType)
		}
		for _, i := range pools[typ].take(need, a.Nodes, in.nodeIdx) {
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

// freePool is the free nodes of one type, longest-idle first, grouped by
// host, as trial after trial takes from it. It is built once per solve,
// so mapping costs O(nodes + trials·hosts), not O(trials·nodes).
type freePool struct {
	nodes  []Node
	plain  []int            // without hosts (fewer than two): what is left, in order
	byHost map[string][]int // with hosts: each host's free nodes, in order
	hosts  []string         // with hosts: every host, in order of first free node
	rank   map[int]int      // with hosts: node index → position in the free order
	left   int
}

func newFreePool(nodes []Node, free []int) *freePool {
	p := &freePool{nodes: nodes, left: len(free)}
	for _, i := range free {
		if nodes[i].Host != nodes[free[0]].Host {
			p.byHost = map[string][]int{}
			break
		}
	}
	if p.byHost == nil {
		p.plain = free
		return p
	}
	p.rank = make(map[int]int, len(free))
	for r, i := range free {
		h := nodes[i].Host
		if _, ok := p.byHost[h]; !ok {
			p.hosts = append(p.hosts, h)
		}
		p.byHost[h] = append(p.byHost[h], i)
		p.rank[i] = r
	}
	return p
}

func (p *freePool) len() int { return p.left }

// take removes need nodes for a trial that holds the nodes named in has.
// Without hosts it takes the first need. With hosts it fills the hosts the
// trial is on first, then repeatedly the host with the fewest free nodes
// that still cover what is needed, or, if none does, the one with the
// most; ties go to the host whose first free node is the longest idle.
func (p *freePool) take(need int, has []string, idIdx map[string]int) []int {
	p.left -= need
	if p.byHost == nil {
		picked := p.plain[:need]
		p.plain = p.plain[need:]
		return picked
	}
	var picked []int
	takeFrom := func(h string, n int) {
		picked = append(picked, p.byHost[h][:n]...)
		p.byHost[h] = p.byHost[h][n:]
		need -= n
	}
	for _, id := range has {
		if need == 0 {
			break
		}
		if i, ok := idIdx[id]; ok {
			if h := p.nodes[i].Host; len(p.byHost[h]) > 0 {
				takeFrom(h, min(need, len(p.byHost[h])))
			}
		}
	}
	for need > 0 {
		best, found := "", false
		for _, h := range p.hosts {
			if len(p.byHost[h]) > 0 && (!found || p.better(h, best, need)) {
				best, found = h, true
			}
		}
		takeFrom(best, min(need, len(p.byHost[best])))
	}
	return picked
}

// better reports whether host h is a better pick than host b for need
// nodes: one that covers it beats one that does not; of two that cover
// it, the tighter; of two that do not, the larger; of two as large, the
// one whose first free node is the longest idle.
func (p *freePool) better(h, b string, need int) bool {
	n, m := len(p.byHost[h]), len(p.byHost[b])
	switch {
	case n == m:
		return p.rank[p.byHost[h][0]] < p.rank[p.byHost[b][0]]
	case n >= need && m >= need:
		return n < m
	case n >= need || m >= need:
		return n >= need
	default:
		return n > m
	}
}
