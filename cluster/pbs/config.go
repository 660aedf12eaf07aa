package pbs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Queue is a queue as `qmgr -c 'list queue Q'` describes it.
type Queue struct {
	Name string
	Type string // Execution or Route
	// Priority orders queues; at or above the scheduler's
	// preempt_queue_prio the queue is an express queue whose jobs preempt.
	Priority         int
	Enabled, Started bool
	// KillDelay is the time between SIGTERM and SIGKILL when a job is
	// deleted, preempted or over its walltime; KillDelaySet: the queue
	// sets it (else PBS's default, DefaultKillDelay).
	KillDelay    time.Duration
	KillDelaySet bool
	// MaxWalltime is resources_max.walltime (0: none).
	MaxWalltime time.Duration
	// SoftLimits names the queue's soft limits (max_run_soft, ...): jobs
	// over one fall into the queue_softlimits preemption class.
	SoftLimits []string
}

// DefaultKillDelay is kill_delay where a queue does not set it.
const DefaultKillDelay = 10 * time.Second

// Server is the server as `qmgr -c 'list server'` describes it.
type Server struct {
	Name    string
	Version string // pbs_version
	// SchedulerIteration is the longest time between scheduling cycles
	// (PBS also runs one when a job is queued or ends); 0 if unset.
	SchedulerIteration time.Duration
	// MaxWalltime is resources_max.walltime (0: none).
	MaxWalltime  time.Duration
	DefaultQueue string
}

// Sched is the preemption configuration of a scheduler: `qmgr -c 'list
// sched'` (OpenPBS 19 and later, PBS Professional 2020 and later) or its
// sched_config file.
type Sched struct {
	Name string
	// PreemptOrder is preempt_order as PBS printed it ("SCR", "R", "SCR 80
	// SC 50 S"); empty if the scheduler did not say.
	PreemptOrder string
	// PreemptQueuePrio is preempt_queue_prio: queues at or above this
	// priority are express queues (PBS's default 150).
	PreemptQueuePrio int
	// PreemptPrio is preempt_prio: which classes preempt which ("express_queue, normal_jobs").
	PreemptPrio string
	// Source says where it was read: "qmgr list sched", a file's path.
	Source string
}

// DefaultPreemptQueuePrio is preempt_queue_prio's default.
const DefaultPreemptQueuePrio = 150

// qmgrHeader: qmgr lists each object under an unindented "Queue NAME",
// "Server NAME" or "Sched NAME".
func qmgrHeader(line string) bool {
	return line != "" && line[0] != ' ' && line[0] != '\t' && !strings.Contains(line, " = ")
}

// parseQmgr reads `qmgr -c 'list KIND ...'`: the objects of kind
// ("Queue", "Server", "Sched").
func parseQmgr(out []byte, kind string) ([]attrBlock, error) {
	cmd := "qmgr -c 'list " + strings.ToLower(kind) + "'"
	blocks, err := readBlocks(cmd, out, qmgrHeader)
	if err != nil {
		return nil, err
	}
	for _, b := range blocks {
		k, name, ok := strings.Cut(b.Header, " ")
		if !ok || k != kind || strings.TrimSpace(name) == "" {
			return nil, &ParseError{Command: cmd, Where: fmt.Sprintf("line %d", b.Line), Value: b.Header, Reason: "want " + kind + " NAME"}
		}
	}
	if len(blocks) == 0 {
		return nil, &ParseError{Command: cmd, Reason: "no " + kind + " listed"}
	}
	return blocks, nil
}

// blockName is the object's name from its header.
func blockName(b attrBlock) string {
	_, name, _ := strings.Cut(b.Header, " ")
	return strings.TrimSpace(name)
}

// attrError is an attribute PBS printed that Gleaner cannot read.
func attrError(cmd string, b attrBlock, attr string, err error) error {
	return &ParseError{Command: cmd, Where: blockName(b) + ": " + attr, Value: b.Attrs[attr], Reason: err.Error()}
}

// ParseQueue reads `qmgr -c 'list queue Q'`.
func ParseQueue(out []byte) (Queue, error) {
	const cmd = "qmgr -c 'list queue'"
	blocks, err := parseQmgr(out, "Queue")
	if err != nil {
		return Queue{}, err
	}
	b := blocks[0]
	q := Queue{Name: blockName(b), Type: b.Attrs["queue_type"],
		Enabled: strings.EqualFold(b.Attrs["enabled"], "True"), Started: strings.EqualFold(b.Attrs["started"], "True")}
	if v, ok := b.Attrs["priority"]; ok {
		if q.Priority, err = strconv.Atoi(v); err != nil {
			return q, attrError(cmd, b, "priority", fmt.Errorf("want an integer"))
		}
	}
	q.KillDelay = DefaultKillDelay
	if v, ok := b.Attrs["kill_delay"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1<<31 {
			return q, attrError(cmd, b, "kill_delay", fmt.Errorf("want seconds ≥ 0"))
		}
		q.KillDelay, q.KillDelaySet = time.Duration(n)*time.Second, true
	}
	if v, ok := b.Attrs["resources_max.walltime"]; ok {
		if q.MaxWalltime, err = ParseDuration(v); err != nil {
			return q, attrError(cmd, b, "resources_max.walltime", err)
		}
	}
	for k := range b.Attrs {
		if strings.HasSuffix(k, "_soft") || strings.Contains(k, "_soft.") {
			q.SoftLimits = append(q.SoftLimits, k)
		}
	}
	return q, nil
}

// ParseServer reads `qmgr -c 'list server'`.
func ParseServer(out []byte) (Server, error) {
	const cmd = "qmgr -c 'list server'"
	blocks, err := parseQmgr(out, "Server")
	if err != nil {
		return Server{}, err
	}
	b := blocks[0]
	s := Server{Name: blockName(b), Version: b.Attrs["pbs_version"], DefaultQueue: b.Attrs["default_queue"]}
	if v, ok := b.Attrs["scheduler_iteration"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1<<31 {
			return s, attrError(cmd, b, "scheduler_iteration", fmt.Errorf("want seconds ≥ 0"))
		}
		s.SchedulerIteration = time.Duration(n) * time.Second
	}
	if v, ok := b.Attrs["resources_max.walltime"]; ok {
		if s.MaxWalltime, err = ParseDuration(v); err != nil {
			return s, attrError(cmd, b, "resources_max.walltime", err)
		}
	}
	return s, nil
}

// ParseSched reads `qmgr -c 'list sched'`: the default scheduler's
// preemption settings (the one named "default", else the first).
func ParseSched(out []byte) (Sched, error) {
	const cmd = "qmgr -c 'list sched'"
	blocks, err := parseQmgr(out, "Sched")
	if err != nil {
		return Sched{}, err
	}
	b := blocks[0]
	for _, o := range blocks {
		if blockName(o) == "default" {
			b = o
		}
	}
	s := Sched{Name: blockName(b), PreemptOrder: unquote(b.Attrs["preempt_order"]), PreemptPrio: unquote(b.Attrs["preempt_prio"]),
		PreemptQueuePrio: DefaultPreemptQueuePrio, Source: "qmgr -c 'list sched'"}
	if v, ok := b.Attrs["preempt_queue_prio"]; ok {
		if s.PreemptQueuePrio, err = strconv.Atoi(v); err != nil {
			return s, attrError(cmd, b, "preempt_queue_prio", fmt.Errorf("want an integer"))
		}
	}
	return s, nil
}

// ParseSchedConfig reads a scheduler's sched_config file
// ($PBS_HOME/sched_priv/sched_config): "name: value [prime|non_prime|all]"
// lines, # comments. Older PBS keeps preempt_order there.
func ParseSchedConfig(out []byte, path string) (Sched, error) {
	s := Sched{Name: "default", PreemptQueuePrio: DefaultPreemptQueuePrio, Source: path}
	for n, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue // PBS ignores what it cannot read too
		}
		value = strings.TrimSpace(value)
		if strings.HasPrefix(value, `"`) {
			if end := strings.Index(value[1:], `"`); end >= 0 {
				value = value[1 : end+1]
			}
		} else if f := strings.Fields(value); len(f) > 0 {
			value = f[0]
		}
		switch strings.TrimSpace(name) {
		case "preempt_order":
			s.PreemptOrder = value
		case "preempt_prio":
			s.PreemptPrio = value
		case "preempt_queue_prio":
			v, err := strconv.Atoi(value)
			if err != nil {
				return s, &ParseError{Command: path, Where: fmt.Sprintf("line %d", n+1), Value: line, Reason: "preempt_queue_prio: want an integer"}
			}
			s.PreemptQueuePrio = v
		}
	}
	return s, nil
}

func unquote(s string) string { return strings.Trim(strings.TrimSpace(s), `"`) }

// PreemptMethods reads a preempt_order: method letters (S suspend, C
// checkpoint, R requeue, D delete), optionally alternating with the
// percentage of its walltime a job has used below which the next letters
// apply ("SCR 80 SC 50 S"). It returns the letters' groups.
func PreemptMethods(order string) ([]string, error) {
	var groups []string
	for i, tok := range strings.Fields(unquote(order)) {
		if i%2 == 1 {
			if n, err := strconv.Atoi(tok); err != nil || n < 0 || n > 100 {
				return nil, fmt.Errorf("preempt_order %q: %q: want a percentage between method groups", order, tok)
			}
			continue
		}
		if tok == "" || strings.Trim(strings.ToUpper(tok), "SCRD") != "" {
			return nil, fmt.Errorf("preempt_order %q: %q: want letters of S, C, R, D", order, tok)
		}
		groups = append(groups, strings.ToUpper(tok))
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("preempt_order %q: empty", order)
	}
	return groups, nil
}
