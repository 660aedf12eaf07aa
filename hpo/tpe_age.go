package hpo

import (
	"cmp"
	"slices"
)

// Age weights. Within l and within g an observation weighs by its age
// (defaultWeight: the newest 25 fully, the older on a ramp), as Optuna's
// default_weights. Optuna orders by trial number: the trials in the
// order they were opened, a running trial (the constant liar's) among
// them at its own number. Before revision 5 TPE ordered its observations
// as they finished and put the liars after them, the newest; on an
// asynchronous pool a trial that ran long then weighs as new when it
// ends, and a liar opened long ago as new while it runs. From revision 5
// (revisionTrialOrder) the order is the trials' creation numbers
// (tpeState.Seq, PendingSeq), which makes l and g Optuna 3.1's to the
// last digit on a long asynchronous search
// (TestTPEJointModelsAsOptuna31OnALongSearch).

// revisionTrialOrder is the revision from which TPE weighs by the order
// trials were opened.
const revisionTrialOrder = 5

// inTrialOrder says whether the observations and liars weigh by their
// trials' creation numbers: from revision 5, where each one's is known.
// A sampler fed by rung (rungfeed.go) rebuilds its observations in
// creation order and keeps no numbers: it weighs by position, liars
// last.
func (t *tpe) inTrialOrder() bool {
	return t.set.trialOrder && len(t.st.Seq) == len(t.st.Metrics) && len(t.st.PendingSeq) == len(t.st.Pending)
}

// ageKeys is the members' creation numbers, the observations obs
// (indices) then the liars (indices into Pending), for ageWeights: nil
// unless inTrialOrder.
func (t *tpe) ageKeys(obs []int32, liars []int) []int {
	if !t.inTrialOrder() {
		return nil
	}
	return seqKeys(t.scr.ageKey[:0], t.st.Seq, t.st.PendingSeq, obs, liars)
}

// seqKeys appends to dst seq[i] for each observation i of obs, then
// pendingSeq[j] for each liar j of liars.
func seqKeys(dst, seq, pendingSeq []int, obs []int32, liars []int) []int {
	for _, i := range obs {
		dst = append(dst, seq[i])
	}
	for _, j := range liars {
		dst = append(dst, pendingSeq[j])
	}
	return dst
}

// ageWeights appends to w the age weight of each of n members, oldest
// first by keys (ties in member order), or in member order where keys is
// nil.
func (s *tpeScratch) ageWeights(w []float64, n int, keys []int) []float64 {
	if keys == nil {
		for k := range n {
			w = append(w, defaultWeight(k, n))
		}
		return w
	}
	s.ageOrder = s.ageOrder[:0]
	for k := range n {
		s.ageOrder = append(s.ageOrder, k)
	}
	slices.SortStableFunc(s.ageOrder, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	w = slices.Grow(w, n)[:len(w)+n]
	at := w[len(w)-n:]
	for rank, k := range s.ageOrder {
		at[k] = defaultWeight(rank, n)
	}
	return w
}

// weighG sets sp.wg (per observation, 0 where g does not model it) and
// sp.wLiar to the age weights of g's members, the observations
// scr.ageObs then the liars, keys their creation numbers (nil: in that
// order).
func (s *tpeScratch) weighG(sp *tpeSplit, n int, keys []int) {
	s.ageW = s.ageWeights(s.ageW[:0], len(s.ageObs)+len(sp.liars), keys)
	sp.wg = resize(sp.wg, n)
	clear(sp.wg)
	for k, i := range s.ageObs {
		sp.wg[i] = s.ageW[k]
	}
	sp.wLiar = append(sp.wLiar[:0], s.ageW[len(s.ageObs):]...)
}
