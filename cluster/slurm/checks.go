package slurm

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gleaner-hpc/gleaner/cluster/pilot"
)

// The start checks that go beyond the partition itself: preemption by a
// QOS, the preempted pilot's signal, where the nodes are; and the gres a
// pilot asks for.

// NodeAddrFormat is sinfo's -o format that ParseNodeAddrs reads, with -N:
// each node and its NodeAddr.
const NodeAddrFormat = "%N|%o"

// ParseNodeAddrs reads `sinfo -h -N -p PARTITION -o NodeAddrFormat`: node
// name → NodeAddr.
func ParseNodeAddrs(out []byte) (map[string]string, error) {
	const cmd = "sinfo -N -o " + NodeAddrFormat
	addrs := map[string]string{}
	err := lines(out, func(n int, line string) error {
		f, err := splitFields(cmd, 2, line, n)
		if err != nil {
			return err
		}
		if f[0] == "" {
			return &ParseError{Command: cmd, Line: n, Field: "node (%N)", Value: line, Reason: "empty"}
		}
		addrs[f[0]] = f[1]
		return nil
	})
	return addrs, err
}

// nodesHere reports nodes that are all this machine: each one's NodeAddr
// is a loopback address (a one-machine test cluster).
func nodesHere(addrs map[string]string) bool {
	for _, a := range addrs {
		if !pilot.IsLoopbackHost(a) {
			return false
		}
	}
	return len(addrs) > 0
}

// QOSFormat is what ParseQOS reads:
// `sacctmgr -n -P show qos format=QOSFormat`.
const QOSFormat = "Name,Preempt,PreemptMode"

// QOS is what Gleaner reads of a Slurm QOS.
type QOS struct {
	Name string
	// Preempt are the QOS whose jobs this QOS's jobs may preempt.
	Preempt []string
	// PreemptMode is how its jobs are preempted; "cluster" (or empty):
	// the cluster's PreemptMode.
	PreemptMode string
}

// ParseQOS reads `sacctmgr -n -P show qos format=QOSFormat`: one QOS a
// line, Name|Preempt|PreemptMode, Preempt a comma-separated list.
func ParseQOS(out []byte) ([]QOS, error) {
	const cmd = "sacctmgr show qos format=" + QOSFormat
	var qs []QOS
	err := lines(out, func(n int, line string) error {
		f, err := splitFields(cmd, 3, line, n)
		if err != nil {
			return err
		}
		if f[0] == "" {
			return &ParseError{Command: cmd, Line: n, Field: "Name", Value: line, Reason: "empty"}
		}
		q := QOS{Name: f[0], PreemptMode: f[2]}
		for _, p := range strings.Split(f[1], ",") {
			if p = strings.TrimSpace(p); p != "" {
				q.Preempt = append(q.Preempt, p)
			}
		}
		qs = append(qs, q)
		return nil
	})
	return qs, err
}

// checkPreemption refuses pilots that could delay batch jobs: no
// preemption at all, a partition (or, under preempt/qos, the pilots' QOS)
// whose PreemptMode is OFF, a QOS that no other QOS preempts. It warns of
// SUSPEND (a suspended pilot's agent and trainers hold the node, frozen)
// and of a preempted pilot that hears nothing until its GraceTime is over
// (preempt_send_user_signal not set).
func (s *Scheduler) checkPreemption(ctx context.Context, logf func(string, ...any)) error {
	ptype := s.conf.PreemptType
	how := "make it preemptible (PreemptType=preempt/partition_prio, the partition's PreemptMode=CANCEL or REQUEUE, a GraceTime), or name a QOS other QOS preempt under PreemptType=preempt/qos (docs/slurm.md)"
	var mode, what string
	switch {
	case ptype == "" || strings.Contains(ptype, "none"):
		return fmt.Errorf("slurm: PreemptType=%s: no job preempts another, so %w until their time limit; %s", ptype, ErrNotPreemptible, how)
	case strings.Contains(ptype, "qos") && s.set.QOS != "":
		q, err := s.readQOS(ctx)
		if err != nil {
			return err
		}
		var by []string
		for _, o := range s.qos {
			if slices.Contains(o.Preempt, q.Name) {
				by = append(by, o.Name)
			}
		}
		if len(by) == 0 {
			return fmt.Errorf("slurm: qos %s: no QOS lists it in its Preempt, so %w until their time limit; %s (sacctmgr modify qos BATCHQOS set Preempt+=%s)", q.Name, ErrNotPreemptible, how, q.Name)
		}
		mode, what = q.PreemptMode, "qos "+q.Name
		if m := strings.ToUpper(mode); m == "" || m == "CLUSTER" {
			mode, what = s.conf.PreemptMode, "qos "+q.Name+" (the cluster's PreemptMode)"
		}
	default:
		mode, what = s.part.PreemptMode, "partition "+s.part.Name
	}
	switch m := strings.ToUpper(mode); {
	case m == "" || strings.Contains(m, "OFF"):
		return fmt.Errorf("slurm: %s: PreemptMode=%s, PreemptType=%s: %w until their time limit; %s", what, mode, ptype, ErrNotPreemptible, how)
	case strings.Contains(m, "SUSPEND"):
		logf("slurm: warning: %s: PreemptMode=%s: a suspended pilot's agent and trainers stay on the node, frozen, holding its memory and GPUs, and checkpoint nothing; CANCEL or REQUEUE let them leave (docs/slurm.md)", what, mode)
	}
	if !s.conf.SendsUserSignal() {
		logf("slurm: warning: neither PreemptParameters=send_user_signal nor SlurmctldParameters=preempt_send_user_signal is set: a preempted pilot's agent hears nothing until GraceTime is over, so the batch job waits that long for the node (14.9 s instead of 1–3 s on the test cluster) and the trainers have only KillWait to checkpoint; set it in slurm.conf (docs/slurm.md)")
	}
	return nil
}

// readQOS reads the QOS list (sacctmgr) and returns the pilots' QOS.
func (s *Scheduler) readQOS(ctx context.Context) (QOS, error) {
	out, err := s.run.Run(ctx, "sacctmgr", "-n", "-P", "show", "qos", "format="+QOSFormat)
	if err != nil {
		return QOS{}, fmt.Errorf("slurm: qos %s: reading the QOS list (PreemptType=%s makes the QOS decide preemption): %w", s.set.QOS, s.conf.PreemptType, err)
	}
	if s.qos, err = ParseQOS(out); err != nil {
		return QOS{}, fmt.Errorf("slurm: qos %s: %w", s.set.QOS, err)
	}
	for _, q := range s.qos {
		if q.Name == s.set.QOS {
			return q, nil
		}
	}
	return QOS{}, fmt.Errorf("slurm: qos %s: no such QOS (sacctmgr show qos lists %d)", s.set.QOS, len(s.qos))
}

// gresItem is one gres request: name[:type][:count], as sbatch --gres
// takes it.
var gresItem = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(:[A-Za-z0-9_.\-]+)?(:[1-9][0-9]*[KMG]?)?$`)

// CheckGres checks a pilot's gres request: items name[:type][:count]
// (gpu:a100:4, nvme:1, shard:2), separated by commas. gpus, when > 0, is
// asked as gpu:N beside it, so a gpu item then asks twice.
func CheckGres(gres string, gpus int) error {
	if gres == "" {
		return nil
	}
	for _, item := range strings.Split(gres, ",") {
		if !gresItem.MatchString(item) {
			return fmt.Errorf("gres %q: item %q: want name[:type][:count] (gpu:a100:4, nvme:1)", gres, item)
		}
		if name, _, _ := strings.Cut(item, ":"); name == "gpu" && gpus > 0 {
			return fmt.Errorf("gres %q asks for GPUs and so does gpus=%d: give one of them", gres, gpus)
		}
	}
	return nil
}

// gresArg is sbatch's --gres for req and the settings' Gres, or "".
func (s *Scheduler) gresArg(req pilot.Request) string {
	var items []string
	if req.GPUs > 0 {
		items = append(items, fmt.Sprintf("gpu:%d", req.GPUs))
	}
	if s.set.Gres != "" {
		items = append(items, s.set.Gres)
	}
	if len(items) == 0 {
		return ""
	}
	return "--gres=" + strings.Join(items, ",")
}
