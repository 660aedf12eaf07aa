package sim

// Event is a change of the idle-node set at one instant of simulated time
// (seconds, e.g. unix time of the trace). Idle nodes became usable; Busy
// nodes were taken back by the batch scheduler (a preemption for anything
// running on them). A node is in at most one of the two lists.
type Event struct {
	Time float64
	Idle []string
	Busy []string
}
