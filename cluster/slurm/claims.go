package slurm

import (
	"time"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// Claims are the nodes the backfill plan (squeue --start) and the
// reservations take, in pilot's terms: the planned jobs first, then the
// reservations, each in Slurm's order. Pending pilots (jobs in
// pilotPartition, the pool's or another's) are not batch work and claim
// nothing.
func Claims(plan []PlannedJob, resv []Reservation, pilotPartition string) []pilot.Claim {
	var cs []pilot.Claim
	for _, j := range plan {
		if j.Partition == pilotPartition {
			continue
		}
		cs = append(cs, pilot.Claim{Kind: pilot.ClaimJob, Nodes: j.Nodes, Start: j.Start, By: "job " + j.ID + " (" + j.Partition + ")"})
	}
	for _, r := range resv {
		cs = append(cs, pilot.Claim{Kind: pilot.ClaimReservation, Nodes: r.Nodes, Start: r.Start, By: "reservation " + r.Name})
	}
	return cs
}

// IdleUntil estimates when Slurm takes node back from the pilot holding
// it: pilot.IdleUntil over the Claims of plan and resv.
func IdleUntil(node string, now, pilotEnd time.Time, pilotPartition string, plan []PlannedJob, resv []Reservation) pilot.Estimate {
	return pilot.IdleUntil(node, now, pilotEnd, Claims(plan, resv, pilotPartition))
}

// pilotState is a pilot job's Slurm state as the policy counts it.
func pilotState(state string) pilot.State {
	switch state {
	case "PENDING":
		return pilot.Pending
	case "RUNNING", "CONFIGURING":
		return pilot.Running
	}
	return pilot.Other
}
