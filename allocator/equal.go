package allocator

// solveEqual is BFTrainer's equal-share baseline. Each trial is given a
// node type (a running trial keeps its own; a new one takes the usable
// type with the most idle nodes per trial already placed on it); on each
// type, every trial gets ⌊N_t/J_t⌋ clamped to its bounds (0 if the share
// is below its minimum), and the leftover nodes go to trials in problem
// order (first come, first served), up to each trial's maximum. It reads
// no curve and no cost: it is what the MILP is measured against.
func solveEqual(in *instance) decision {
	d := newDecision(len(in.trials))
	members := make([][]int, len(in.types))
	for j := range in.trials {
		ti := &in.trials[j]
		best := -1
		for ci := range ti.choices {
			t := ti.choices[ci].typ
			if best < 0 || share(in.capacity[t], len(members[t])) > share(in.capacity[best], len(members[best])) {
				best = t
			}
		}
		if best >= 0 {
			d.types[j] = best
			members[best] = append(members[best], j)
		}
	}
	for t, js := range members {
		if len(js) == 0 {
			continue
		}
		left := in.capacity[t]
		each := in.capacity[t] / len(js)
		for _, j := range js {
			c := in.trials[j].choice(t)
			if k := min(each, c.max()); k >= c.min {
				d.counts[j] = k
				left -= k
			}
		}
		for _, j := range js {
			c := in.trials[j].choice(t)
			k := d.counts[j]
			if k == 0 {
				if left >= c.min {
					k = min(c.max(), left)
				}
			} else {
				k = min(c.max(), k+left)
			}
			left -= k - d.counts[j]
			d.counts[j] = k
		}
	}
	return d
}

func share(capacity, placed int) float64 { return float64(capacity) / float64(placed+1) }
