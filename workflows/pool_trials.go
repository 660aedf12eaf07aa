package workflows

import (
	"slices"
	"sort"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner"
)

func (p *pool) register(now time.Time, r RegisterTrial) {
	i, found := p.trial(r.TrialID)
	if found {
		// Registered again (the trial continued as new, or resumed after a
		// pause): keep what was measured, hear the assignment again.
		p.st.Trials[i].Registration = r
		p.resend[r.TrialID] = true
	} else {
		t := PoolTrial{Registration: r}
		if j := slices.Index(p.st.Departed, r.TrialID); j >= 0 {
			t.Held = true // back from a pause: its next start resumes it
			p.st.Departed = slices.Delete(p.st.Departed, j, j+1)
		}
		p.st.Trials = slices.Insert(p.st.Trials, i, t)
	}
	p.changed(gleaner.PoolTriggerRegister)
	p.logEvent(now, PoolEvent{Kind: gleaner.PoolEventRegister, Trial: r.TrialID, Campaign: r.CampaignID})
}

// DepartedMax bounds PoolState.Departed: the trials that held nodes and
// left the pool that it remembers, so that a trial back from a pause is
// logged as resumed.
const DepartedMax = 1024

// deregister takes a trial out of the pool; what it measured stays in
// the library.
func (p *pool) deregister(id string, now time.Time) {
	if i, found := p.trial(id); found {
		campaign := p.st.Trials[i].Registration.CampaignID
		if t := p.st.Trials[i]; t.Held || len(t.Nodes) > 0 {
			p.st.Departed = append(p.st.Departed, id)
			if n := len(p.st.Departed) - DepartedMax; n > 0 {
				p.st.Departed = slices.Delete(p.st.Departed, 0, n)
			}
		}
		p.st.Library = Learn(p.st.Library, LearnedCurves(p.st.Trials[i], now)...)
		p.st.Trials = slices.Delete(p.st.Trials, i, i+1)
		delete(p.resend, id)
		p.changed(gleaner.PoolTriggerDeregister)
		p.logEvent(now, PoolEvent{Kind: gleaner.PoolEventDeregister, Trial: id, Campaign: campaign})
	}
	// A trial deregisters once its trainer has stopped.
	p.st.Releasing = slices.DeleteFunc(p.st.Releasing, func(r Releasing) bool { return r.TrialID == id })
}

// released frees the nodes a trial confirmed it left and tells the trials
// waiting for them.
func (p *pool) released(ctx workflow.Context, r Released) {
	n := len(p.st.Releasing)
	p.st.Releasing = slices.DeleteFunc(p.st.Releasing, func(x Releasing) bool {
		return x.TrialID == r.TrialID && x.Epoch <= r.Epoch
	})
	if len(p.st.Releasing) != n {
		p.flush(ctx, false)
	}
}

// expireReleases stops waiting for confirmations past their deadline.
func (p *pool) expireReleases(ctx workflow.Context) {
	now := workflow.Now(ctx)
	if p.in.asleep(p.awake, now) {
		// The hold ran out while the pool was not running: the stop may
		// not even have reached the trainer yet (it goes out as the server
		// comes back). Hold the due nodes ReleaseMargin more.
		for i, x := range p.st.Releasing {
			if !now.Before(p.releaseDeadline(x)) {
				p.st.Releasing[i].Until = now.Add(ReleaseMargin)
			}
		}
		return
	}
	n := len(p.st.Releasing)
	p.st.Releasing = slices.DeleteFunc(p.st.Releasing, func(x Releasing) bool {
		return !now.Before(p.releaseDeadline(x))
	})
	if len(p.st.Releasing) != n {
		workflow.GetLogger(ctx).Warn("nodes handed over without confirmation", "pool", p.in.Name, "count", n-len(p.st.Releasing))
		p.flush(ctx, false)
	}
}

func (p *pool) profile(r ThroughputProfile) {
	i, found := p.trial(r.TrialID)
	if !found || r.Nodes <= 0 || !(r.Throughput > 0) {
		return
	}
	t := &p.st.Trials[i]
	pt := ProfilePoint{Nodes: r.Nodes, NodeType: r.NodeType, Throughput: r.Throughput, Spread: r.Spread}
	j := slices.IndexFunc(t.Profile, func(q ProfilePoint) bool { return q.Nodes == r.Nodes && q.NodeType == r.NodeType })
	if j >= 0 {
		t.Profile[j] = pt
	} else {
		t.Profile = append(t.Profile, pt)
		sort.Slice(t.Profile, func(a, b int) bool {
			if t.Profile[a].NodeType != t.Profile[b].NodeType {
				return t.Profile[a].NodeType < t.Profile[b].NodeType
			}
			return t.Profile[a].Nodes < t.Profile[b].Nodes
		})
	}
	if r.RescaleUpCost > 0 {
		t.RescaleUpCost = r.RescaleUpCost
	}
	if r.RescaleDownCost > 0 {
		t.RescaleDownCost = r.RescaleDownCost
	}
	// The trial knows best what it trains (its campaign's spec, else its
	// trainer's reports): the newest it said.
	if r.Model != "" {
		t.Registration.Model = r.Model
	}
	if r.Batch > 0 {
		t.Registration.Batch = r.Batch
	}
	// New measurements are used at the next periodic allocation: reacting
	// to each would make trials chase noise.
	p.note(gleaner.PoolTriggerProfile)
}
