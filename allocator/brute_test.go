package allocator

import "math"

// bruteForce is the oracle for tiny instances: it enumerates every decision
// (per trial: 0, or a count min..max of one type it may use), keeps those
// within every type's capacity, and scores them with in.objective. It
// returns a best decision and its value.
func bruteForce(in *instance) (decision, float64) {
	best, bestVal := newDecision(len(in.trials)), math.Inf(-1)
	cur := newDecision(len(in.trials))
	used := make([]int, len(in.types))
	var walk func(j int)
	walk = func(j int) {
		if j == len(in.trials) {
			if v := in.objective(cur); v > bestVal {
				bestVal = v
				copy(best.counts, cur.counts)
				copy(best.types, cur.types)
			}
			return
		}
		cur.counts[j], cur.types[j] = 0, 0
		walk(j + 1)
		for _, c := range in.trials[j].choices {
			for k := c.min; k <= c.max() && used[c.typ]+k <= in.capacity[c.typ]; k++ {
				cur.counts[j], cur.types[j] = k, c.typ
				used[c.typ] += k
				walk(j + 1)
				used[c.typ] -= k
			}
		}
		cur.counts[j], cur.types[j] = 0, 0
	}
	walk(0)
	return best, bestVal
}
