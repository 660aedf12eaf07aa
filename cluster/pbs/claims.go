package pbs

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// Reservation is an advance, standing or maintenance reservation as
// `pbs_rstat -f` describes it.
type Reservation struct {
	ID    string // R123.server
	Name  string // Reserve_Name ("NULL" when it has none)
	State string // reserve_state: RESV_CONFIRMED, RESV_RUNNING, RESV_UNCONFIRMED, ...
	Start time.Time
	End   time.Time
	// Nodes are resv_nodes' vnodes: empty until the reservation is
	// confirmed.
	Nodes []string
}

// ParseReservations reads `pbs_rstat -f`, times in loc.
func ParseReservations(out []byte, loc *time.Location) ([]Reservation, error) {
	const cmd = "pbs_rstat -f"
	blocks, err := readBlocks(cmd, out, func(line string) bool { return strings.HasPrefix(line, "Resv ID:") })
	if err != nil {
		return nil, err
	}
	rs := make([]Reservation, 0, len(blocks))
	for _, b := range blocks {
		r := Reservation{ID: strings.TrimSpace(strings.TrimPrefix(b.Header, "Resv ID:")),
			Name: b.Attrs["reserve_name"], State: b.Attrs["reserve_state"]}
		bad := func(attr string, err error) error {
			return &ParseError{Command: cmd, Where: "reservation " + r.ID + ": " + attr, Value: b.Attrs[attr], Reason: err.Error()}
		}
		if r.ID == "" || strings.ContainsAny(r.ID, " \t") {
			return nil, &ParseError{Command: cmd, Where: "reservation", Value: b.Header, Reason: "want Resv ID: ID"}
		}
		if r.Start, err = ParseTime(b.Attrs["reserve_start"], loc); err != nil {
			return nil, bad("reserve_start", err)
		}
		if r.Start.IsZero() {
			return nil, bad("reserve_start", errMissing)
		}
		if r.End, err = ParseTime(b.Attrs["reserve_end"], loc); err != nil {
			return nil, bad("reserve_end", err)
		}
		if r.Nodes, err = ParseExecVnode(b.Attrs["resv_nodes"]); err != nil {
			return nil, bad("resv_nodes", err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

var errMissing = errors.New("missing")

// startPastPilots is queued job j's planned start had the pilots on its
// vnodes left: where running pilots hold some of them, the latest end of
// the other running jobs there, if that is earlier than PBS's estimate
// (and known); where pilots alone hold them (the rest free), its
// submission: the job could have started as soon as they left, so the
// claim is overdue and they yield at once; else the estimate.
func startPastPilots(j Job, jobs []Job, pilotQueue string) time.Time {
	want := map[string]bool{}
	for _, n := range j.EstimatedNodes {
		want[n] = true
	}
	var pilots bool
	var others time.Time
	for _, o := range jobs {
		if o.State != "R" || !slices.ContainsFunc(o.Nodes, func(n string) bool { return want[n] }) {
			continue
		}
		switch {
		case o.Queue == pilotQueue:
			pilots = true
		case o.End.IsZero():
			return j.EstimatedStart // an end PBS does not know: its estimate
		case o.End.After(others):
			others = o.End
		}
	}
	switch {
	case !pilots:
	case others.IsZero() && !j.Created.IsZero() && j.Created.Before(j.EstimatedStart):
		// Seen live (OpenPBS 23.06, a 3-node job, two of its vnodes
		// free, one a pilot's): planned at the pilot's walltime end, 30
		// min ahead, and never preempting it.
		return j.Created
	case !others.IsZero() && others.Before(j.EstimatedStart):
		return others
	}
	return j.EstimatedStart
}

// Claims are the vnodes the scheduler's plan (queued jobs' estimated
// start and vnodes) and the reservations take, in pilot's terms: the
// planned jobs first, in id order, then the reservations. Jobs in
// pilotQueue (the pool's pilots or another pool's) are not batch work and
// claim nothing, nor do jobs outside the plan.
//
// PBS plans a job on vnodes that pilots hold at the pilots' walltime end:
// its estimate does not count on preempting them (seen on OpenPBS 23: a
// job wanting every vnode, behind a 40 s blocker on half of them, planned
// 30 min ahead at the pilots' end; it started at the blocker's end by
// preempting them; and a 3-node job, one of its vnodes a pilot's, the
// others free, planned at the pilot's end and never started by
// preemption). Such a claim starts instead when the last other job on its
// vnodes ends, or, where pilots alone stand in its way, at its submission
// (overdue), so that the pilots yield rather than keep it waiting.
func Claims(jobs []Job, resv []Reservation, pilotQueue string) []pilot.Claim {
	var cs []pilot.Claim
	for _, j := range jobs {
		if j.Queue == pilotQueue || j.State != "Q" || len(j.EstimatedNodes) == 0 {
			continue
		}
		cs = append(cs, pilot.Claim{Kind: pilot.ClaimJob, Nodes: j.EstimatedNodes, Start: startPastPilots(j, jobs, pilotQueue), By: "job " + j.ID + " (" + j.Queue + ")"})
	}
	for _, r := range resv {
		if len(r.Nodes) == 0 {
			continue
		}
		by := "reservation " + r.ID
		if r.Name != "" && r.Name != "NULL" {
			by = "reservation " + r.Name
		}
		cs = append(cs, pilot.Claim{Kind: pilot.ClaimReservation, Nodes: r.Nodes, Start: r.Start, By: by})
	}
	return cs
}

// pilotState is a pilot job's job_state as the policy counts it: queued,
// waiting for its time or in transit is Pending; running is Running;
// held, suspended, exiting or finished is Other.
func pilotState(state string) pilot.State {
	switch state {
	case "Q", "W", "T":
		return pilot.Pending
	case "R":
		return pilot.Running
	}
	return pilot.Other
}
