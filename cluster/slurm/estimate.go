package slurm

import "time"

// Estimate is the expected end of a pilot's node's idle time and what
// decided it.
type Estimate struct {
	Until time.Time
	// Why names what ends it first: "pilot end", "job 123 (batch)", or
	// "reservation maint".
	Why string
	// Claimed: a pending job or a reservation takes the node at Until (not
	// the pilot's own time limit).
	Claimed bool
}

// IdleUntil estimates when the batch scheduler takes node back from the
// pilot holding it: the earliest of the pilot's end time (its time limit),
// the expected start of a pending job the backfill plan puts on the node,
// and the start of a reservation that holds it. Pending pilots (jobs in
// pilotPartition) are not batch work and do not count. A planned start
// already past is a job about to start: now. A reservation already active
// is one the pilot runs in, and ends nothing. The zero Estimate means
// nothing is known.
//
// A planned start is the scheduler's promise for the job, not a bound:
// jobs ending early move it sooner, so the estimate errs late, and the
// pool keeps reading it afresh every backfill cycle.
func IdleUntil(node string, now, pilotEnd time.Time, pilotPartition string, plan []PlannedJob, resv []Reservation) Estimate {
	var e Estimate
	take := func(t time.Time, why string, claimed bool) {
		if t.IsZero() || !t.After(now) {
			return
		}
		if e.Until.IsZero() || t.Before(e.Until) {
			e = Estimate{Until: t, Why: why, Claimed: claimed}
		}
	}
	take(pilotEnd, "pilot end", false)
	for _, j := range plan {
		if j.Partition == pilotPartition || !contains(j.Nodes, node) {
			continue
		}
		start := j.Start
		if !start.IsZero() && !start.After(now) {
			start = now.Add(time.Nanosecond) // overdue: any moment now
		}
		take(start, "job "+j.ID+" ("+j.Partition+")", true)
	}
	for _, r := range resv {
		if contains(r.Nodes, node) {
			take(r.Start, "reservation "+r.Name, true)
		}
	}
	return e
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
