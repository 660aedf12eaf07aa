package allocator

import "container/heap"

// solveGreedy is the marginal-gain baseline: starting from every trial at
// 0 nodes, repeatedly apply the single upgrade (start a trial at some
// count, or grow a started one on its type) with the highest value gained
// per node added, while one with positive gain fits. Rescale costs are in
// the values, so keeping a running trial at its current size is an
// upgrade worth its saved shrink cost.
//
// Upgrades are kept in a max-heap; capacity only shrinks, so a stale entry
// can only have become worse, and is re-scored when it surfaces (lazy
// evaluation).
func solveGreedy(in *instance) decision {
	return greedyFrom(in, newDecision(len(in.trials)))
}

// greedyFrom applies the greedy upgrades to a feasible start decision
// (trials at 0 start from nothing, others grow on their type) and returns
// the result; start is not modified.
func greedyFrom(in *instance, start decision) decision {
	d := newDecision(len(in.trials))
	copy(d.counts, start.counts)
	left := append([]int(nil), in.capacity...)
	for j := range d.types {
		d.types[j] = -1
		if d.counts[j] > 0 {
			d.types[j] = start.types[j]
			left[d.types[j]] -= d.counts[j]
		}
	}
	h := &upgradeHeap{}
	for j := range in.trials {
		if u, ok := bestUpgrade(in, d, left, j); ok {
			heap.Push(h, u)
		}
	}
	for h.Len() > 0 {
		u := heap.Pop(h).(upgrade)
		cur, ok := bestUpgrade(in, d, left, u.trial)
		if !ok {
			continue
		}
		if cur != u {
			heap.Push(h, cur)
			continue
		}
		left[u.typ] -= u.k - d.counts[u.trial]
		d.counts[u.trial], d.types[u.trial] = u.k, u.typ
		if next, ok := bestUpgrade(in, d, left, u.trial); ok {
			heap.Push(h, next)
		}
	}
	for j := range d.types {
		if d.counts[j] == 0 {
			d.types[j] = 0
		}
	}
	return d
}

// upgrade moves a trial to k nodes of type typ, gaining ratio per node.
type upgrade struct {
	trial, typ, k int
	ratio, gain   float64
}

// bestUpgrade finds trial j's best upgrade under the capacity left.
func bestUpgrade(in *instance, d decision, left []int, j int) (upgrade, bool) {
	ti := &in.trials[j]
	k0, base := d.counts[j], ti.zero
	best, found := upgrade{}, false
	for ci := range ti.choices {
		c := &ti.choices[ci]
		if k0 > 0 {
			if c.typ != d.types[j] {
				continue
			}
			base = c.value(k0)
		}
		lo := max(c.min, k0+1)
		hi := min(c.max(), k0+left[c.typ])
		for k := lo; k <= hi; k++ {
			gain := c.value(k) - base
			if gain <= 0 {
				continue
			}
			ratio := gain / float64(k-k0)
			if !found || ratio > best.ratio || (ratio == best.ratio && gain > best.gain) {
				best, found = upgrade{trial: j, typ: c.typ, k: k, ratio: ratio, gain: gain}, true
			}
		}
	}
	return best, found
}

type upgradeHeap []upgrade

func (h upgradeHeap) Len() int { return len(h) }
func (h upgradeHeap) Less(a, b int) bool {
	if h[a].ratio != h[b].ratio {
		return h[a].ratio > h[b].ratio
	}
	return h[a].trial < h[b].trial
}
func (h upgradeHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *upgradeHeap) Push(x any)   { *h = append(*h, x.(upgrade)) }
func (h *upgradeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
