package worker

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/cluster/slurm"
	"github.com/gleaner-hpc/gleaner/data"
)

// NodeSourceKind names a kind of node source.
type NodeSourceKind string

const (
	// NodeSourceStatic is N local slots that never leave: "static:N".
	NodeSourceStatic NodeSourceKind = "static"
	// NodeSourceReplay replays an idle-node trace onto local slots:
	// "replay:FILE,slots=K,factor=F,offset=S".
	NodeSourceReplay NodeSourceKind = "replay"
	// NodeSourceNone is no local nodes: "none". The pool's nodes are its
	// agents' (gleaner agent, docs/cluster.md).
	NodeSourceNone NodeSourceKind = "none"
	// NodeSourceSlurm harvests a Slurm cluster's idle nodes with pilot
	// jobs whose agents join the pool:
	// "slurm:partition=P[,pool=NAME][,max_pending=K]..." (docs/slurm.md).
	NodeSourceSlurm NodeSourceKind = "slurm"
	// NodeSourcePBS harvests a PBS Professional or OpenPBS cluster's idle
	// vnodes with pilot jobs: "pbs:queue=Q[,pool=NAME]..." (docs/pbs.md).
	NodeSourcePBS NodeSourceKind = "pbs"
)

// PilotJobs reports a batch scheduler's source: pilot jobs (package
// cluster/pilot) whose agents hold the pool's nodes, with the options of
// PilotNodes. A new scheduler is one more kind here, its options in
// ParseNodeSource and String, and its case in NewPilots.
func (k NodeSourceKind) PilotJobs() bool {
	return k == NodeSourceSlurm || k == NodeSourcePBS
}

// NodeSourceConfig is a parsed --nodes value. Of Static, Replay and Slurm,
// only the one of Kind is meaningful; Pilots, for every kind whose
// PilotJobs is true.
type NodeSourceConfig struct {
	Kind   NodeSourceKind
	Static StaticNodes
	Replay ReplayNodes
	Slurm  SlurmNodes
	PBS    PBSNodes
	Pilots PilotNodes
	// NoGPUs ("gpus=none") makes the local slots plain CPU slots even on
	// a host with GPUs; by default ("gpus=auto") each slot owns one GPU
	// when the host has any, so there can be no more slots than GPUs.
	NoGPUs bool
}

// StaticNodes is "static:N[,type=T][,gpus=none]".
type StaticNodes struct {
	Nodes int    // local slots, ≥ 1
	Type  string // node type reported for every slot, optional
}

// ReplayNodes is
// "replay:FILE[,slots=K][,factor=F][,offset=S][,loop=true][,type=T][,gpus=none]".
type ReplayNodes struct {
	// File is an idle-node trace (like data/traces/summit-idle-*.csv in
	// the repository); a name with data.Prefix is one of the built-in
	// traces ("embedded:traces/summit-idle-2021-02-10_14.csv").
	File string
	// Slots is how many local slots the trace's nodes map onto (default 4).
	Slots int
	// Factor compresses trace time: trace seconds per wall second
	// (default 1; 60 replays an hour in a minute).
	Factor float64
	// Offset is where in the trace to start (trace time; default 0). In
	// the spec: a Go duration ("90m") or seconds ("5400").
	Offset time.Duration
	// Loop restarts the trace after its end (default false: the state
	// after the last event holds).
	Loop bool
	// Type is the node type reported for every slot, optional.
	Type string
}

// SlurmNodes is "slurm:partition=P[,qos=Q][,account=A][,gres=G]" and the
// options of PilotNodes: pilot jobs in partition P (docs/slurm.md).
type SlurmNodes struct {
	Partition, QOS, Account string
	// Gres is slurm.Settings.Gres: sbatch --gres items beside gpus=N,
	// separated by commas here and by + in the spec
	// ("gres=gpu:a100:4+nvme:1").
	Gres string
}

// PBSNodes is "pbs:queue=Q[,account=A][,select=CHUNK][,place=P]" and
// the options of PilotNodes: pilot jobs in queue Q (docs/pbs.md), each
// qsub -l select=1:CHUNK (GPUs add ngpus=N) -l place=P (default excl).
type PBSNodes struct {
	Queue, Account, Select, Place string
}

// pbsExample is a --nodes value for PBS, for messages.
const pbsExample = "pbs:queue=preemptable,select=system=polaris"

// slurmExample is a --nodes value for Slurm, for messages.
const slurmExample = "slurm:partition=glean,max_pending=4"

// PilotNodes are the options of every batch scheduler's source:
// "[pool=NAME][,max_pending=K][,max_pilots=N][,time=D][,time_min=D]
// [,lead=D][,interval=D][,idle_release=D][,yield=D|off][,type=T]
// [,gpus=auto|none|N]": pilots whose agents join pool NAME. Zero fields
// take the defaults of pilot.Settings and of the scheduler
// (slurm.Settings).
type PilotNodes struct {
	Pool                          string
	MaxPending, MaxPilots         int
	Time, TimeMin, Lead, Interval time.Duration
	// IdleRelease is pilot.Settings.IdleRelease.
	IdleRelease time.Duration
	// GPUs is the GPUs per node each pilot asks the scheduler for
	// ("gpus=N"; 0: none asked, the node's own are used).
	GPUs int
	// Yield is pilot.Settings.Yield: how long before a batch job's planned
	// start on its node a pilot leaves by itself (0: the default, one
	// plan cycle; negative, "off" in the spec: never).
	Yield time.Duration
	// Type is the agents' node type (--type), optional.
	Type string
}

// pilotOptions are the keys of PilotNodes in a spec (and gpus).
var pilotOptions = []string{"pool", "max_pending", "max_pilots", "time", "time_min", "lead", "interval", "idle_release", "yield", "type", "gpus"}

// parsePilotOptions reads PilotNodes from a spec's options.
func parsePilotOptions(opts map[string]string) (PilotNodes, error) {
	pl := PilotNodes{Pool: opts["pool"], Type: opts["type"]}
	for key, dst := range map[string]*int{"max_pending": &pl.MaxPending, "max_pilots": &pl.MaxPilots} {
		if v, ok := opts[key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return pl, fmt.Errorf("%s %q: want an integer ≥ 1", key, v)
			}
			*dst = n
		}
	}
	if v, ok := opts["gpus"]; ok && v != "auto" && v != "none" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return pl, fmt.Errorf("gpus %q: want auto, none, or the GPUs per node each pilot asks for (an integer ≥ 1)", v)
		}
		pl.GPUs = n
	}
	for key, dst := range map[string]*time.Duration{"time": &pl.Time, "time_min": &pl.TimeMin, "lead": &pl.Lead, "interval": &pl.Interval, "idle_release": &pl.IdleRelease} {
		if v, ok := opts[key]; ok {
			d, err := parseSeconds(v)
			if err != nil || d <= 0 {
				return pl, fmt.Errorf("%s %q: want a duration > 0 (\"90m\") or seconds (\"5400\")", key, v)
			}
			*dst = d
		}
	}
	if v, ok := opts["yield"]; ok {
		d, err := parseSeconds(v)
		switch {
		case v == "off":
			pl.Yield = -1
		case err != nil || d < 0:
			return pl, fmt.Errorf("yield %q: want a duration ≥ 0 (\"2s\"), seconds, or off", v)
		case d == 0:
			pl.Yield = time.Nanosecond // only jobs already due; 0 would be the default
		default:
			pl.Yield = d
		}
	}
	return pl, nil
}

// String is the options of p that ParseNodeSource reads back, each after
// a comma, type last.
func (p PilotNodes) String() string {
	var s string
	if p.Pool != "" {
		s += ",pool=" + p.Pool
	}
	for _, kv := range []struct {
		k string
		v int
	}{{"max_pending", p.MaxPending}, {"max_pilots", p.MaxPilots}} {
		if kv.v != 0 {
			s += fmt.Sprintf(",%s=%d", kv.k, kv.v)
		}
	}
	for _, kv := range []struct {
		k string
		v time.Duration
	}{{"time", p.Time}, {"time_min", p.TimeMin}, {"lead", p.Lead}, {"interval", p.Interval}, {"idle_release", p.IdleRelease}} {
		if kv.v != 0 {
			s += "," + kv.k + "=" + kv.v.String()
		}
	}
	switch {
	case p.Yield < 0:
		s += ",yield=off"
	case p.Yield > 0:
		s += ",yield=" + p.Yield.String()
	}
	if p.GPUs > 0 {
		s += fmt.Sprintf(",gpus=%d", p.GPUs)
	}
	if p.Type != "" {
		s += ",type=" + p.Type
	}
	return s
}

// DefaultReplaySlots is the slot count of a replay source without slots=.
const DefaultReplaySlots = 4

// ParseNodeSource parses a --nodes value. Errors are *client.FieldError for
// field "nodes" and name the part that is wrong.
func ParseNodeSource(spec string) (NodeSourceConfig, error) {
	bad := func(format string, args ...any) (NodeSourceConfig, error) {
		return NodeSourceConfig{}, client.NewFieldError("nodes", "", spec, format, args...)
	}
	if strings.TrimSpace(spec) == string(NodeSourceNone) {
		return NodeSourceConfig{Kind: NodeSourceNone}, nil
	}
	kind, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if NodeSourceKind(strings.ToLower(kind)) == NodeSourceSlurm && strings.TrimSpace(rest) == "" {
		return bad("slurm: the options are missing: partition=NAME is required (the preemptible partition the pilots run in), e.g. --nodes %s (docs/slurm.md)", slurmExample)
	}
	if NodeSourceKind(strings.ToLower(kind)) == NodeSourcePBS && strings.TrimSpace(rest) == "" {
		return bad("pbs: the options are missing: queue=NAME is required (the preemptible queue the pilots run in), e.g. --nodes %s (docs/pbs.md)", pbsExample)
	}
	if !ok || rest == "" {
		return bad("want static:N, replay:FILE,slots=K,factor=F,offset=S, slurm:partition=P or none")
	}
	parts := strings.Split(rest, ",")
	opts := map[string]string{}
	optParts := parts[1:]
	if NodeSourceKind(strings.ToLower(kind)).PilotJobs() {
		optParts = parts // options only
	}
	for _, p := range optParts {
		k, v, ok := strings.Cut(p, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return bad("option %q: want key=value", p)
		}
		if _, dup := opts[k]; dup {
			return bad("option %s given twice", k)
		}
		opts[k] = v
	}
	allow := func(keys ...string) error {
		for k := range opts {
			found := false
			for _, a := range keys {
				found = found || k == a
			}
			if !found {
				return fmt.Errorf("unknown option %q for %s (want %s)", k, kind, strings.Join(keys, ", "))
			}
		}
		return nil
	}
	first := strings.TrimSpace(parts[0])
	var noGPUs bool
	switch v, ok := opts["gpus"]; {
	case !ok || v == "auto":
	case v == "none":
		noGPUs = true
	case NodeSourceKind(strings.ToLower(kind)).PilotJobs():
		// gpus=N: parsePilotOptions
	default:
		return bad("gpus %q: want auto or none", v)
	}
	switch NodeSourceKind(strings.ToLower(kind)) {
	case NodeSourceStatic:
		if err := allow("type", "gpus"); err != nil {
			return bad("%v", err)
		}
		n, err := strconv.Atoi(first)
		if err != nil || n < 1 {
			return bad("node count %q: want an integer ≥ 1", first)
		}
		return NodeSourceConfig{Kind: NodeSourceStatic, Static: StaticNodes{Nodes: n, Type: opts["type"]}, NoGPUs: noGPUs}, nil
	case NodeSourceReplay:
		if err := allow("slots", "factor", "offset", "loop", "type", "gpus"); err != nil {
			return bad("%v", err)
		}
		if first == "" {
			return bad("trace file: missing")
		}
		r := ReplayNodes{File: first, Slots: DefaultReplaySlots, Factor: 1, Type: opts["type"]}
		if v, ok := opts["slots"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return bad("slots %q: want an integer ≥ 1", v)
			}
			r.Slots = n
		}
		if v, ok := opts["factor"]; ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f > 0) || math.IsInf(f, 0) {
				return bad("factor %q: want a number > 0 (trace seconds per wall second)", v)
			}
			r.Factor = f
		}
		if v, ok := opts["offset"]; ok {
			d, err := parseSeconds(v)
			if err != nil || d < 0 {
				return bad("offset %q: want a duration ≥ 0 (\"90m\") or seconds (\"5400\")", v)
			}
			r.Offset = d
		}
		if v, ok := opts["loop"]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return bad("loop %q: want true or false", v)
			}
			r.Loop = b
		}
		return NodeSourceConfig{Kind: NodeSourceReplay, Replay: r, NoGPUs: noGPUs}, nil
	case NodeSourceSlurm:
		if err := allow(append([]string{"partition", "qos", "account", "gres"}, pilotOptions...)...); err != nil {
			return bad("%v", err)
		}
		sl := SlurmNodes{Partition: opts["partition"], QOS: opts["qos"], Account: opts["account"], Gres: strings.ReplaceAll(opts["gres"], "+", ",")}
		if sl.Partition == "" {
			return bad("partition: missing (the preemptible partition the pilots run in), e.g. --nodes %s", slurmExample)
		}
		pl, err := parsePilotOptions(opts)
		if err != nil {
			return bad("%v", err)
		}
		if err := slurm.CheckGres(sl.Gres, pl.GPUs); err != nil {
			return bad("%v", err)
		}
		return NodeSourceConfig{Kind: NodeSourceSlurm, Slurm: sl, Pilots: pl, NoGPUs: noGPUs}, nil
	case NodeSourcePBS:
		if err := allow(append([]string{"queue", "account", "select", "place"}, pilotOptions...)...); err != nil {
			return bad("%v", err)
		}
		pb := PBSNodes{Queue: opts["queue"], Account: opts["account"], Select: opts["select"], Place: opts["place"]}
		if pb.Queue == "" {
			return bad("queue: missing (the preemptible queue the pilots run in), e.g. --nodes %s", pbsExample)
		}
		pl, err := parsePilotOptions(opts)
		if err != nil {
			return bad("%v", err)
		}
		return NodeSourceConfig{Kind: NodeSourcePBS, PBS: pb, Pilots: pl, NoGPUs: noGPUs}, nil
	default:
		return bad("unknown source %q (want static, replay, slurm, pbs or none)", kind)
	}
}

func parseSeconds(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64/float64(time.Second) {
			return 0, errors.New("out of range")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	return time.ParseDuration(v)
}

// String is the spec ParseNodeSource reads back.
func (n NodeSourceConfig) String() string {
	var s, typ string
	switch n.Kind {
	case NodeSourceStatic:
		s, typ = fmt.Sprintf("static:%d", n.Static.Nodes), n.Static.Type
	case NodeSourceReplay:
		r := n.Replay
		s = fmt.Sprintf("replay:%s,slots=%d,factor=%s,offset=%s", r.File, r.Slots,
			strconv.FormatFloat(r.Factor, 'g', -1, 64), r.Offset)
		if r.Loop {
			s += ",loop=true"
		}
		typ = r.Type
	case NodeSourceSlurm:
		sl := n.Slurm
		s = "slurm:partition=" + sl.Partition
		for _, kv := range [][2]string{{"qos", sl.QOS}, {"account", sl.Account}, {"gres", strings.ReplaceAll(sl.Gres, ",", "+")}} {
			if kv[1] != "" {
				s += "," + kv[0] + "=" + kv[1]
			}
		}
		s += n.Pilots.String()
	case NodeSourcePBS:
		pb := n.PBS
		s = "pbs:queue=" + pb.Queue
		for _, kv := range [][2]string{{"account", pb.Account}, {"select", pb.Select}, {"place", pb.Place}} {
			if kv[1] != "" {
				s += "," + kv[0] + "=" + kv[1]
			}
		}
		s += n.Pilots.String()
	default:
		return string(n.Kind)
	}
	if typ != "" {
		s += ",type=" + typ
	}
	if n.NoGPUs {
		s += ",gpus=none"
	}
	return s
}

// Set and Type make *NodeSourceConfig a flag value (pflag.Value).
func (n *NodeSourceConfig) Set(spec string) error {
	v, err := ParseNodeSource(spec)
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// Type names the flag's value in help.
func (n *NodeSourceConfig) Type() string { return "source" }

// Validate checks a node source built in code (ParseNodeSource already
// validates), and that a replay trace is readable.
func (n NodeSourceConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return client.NewFieldError("nodes", EnvNodeSource, n.String(), format, args...)
	}
	switch n.Kind {
	case NodeSourceStatic:
		if n.Static.Nodes < 1 {
			return bad("node count must be ≥ 1")
		}
	case NodeSourceReplay:
		r := n.Replay
		switch {
		case r.File == "":
			return bad("trace file: missing")
		case r.Slots < 1:
			return bad("slots must be ≥ 1")
		case !(r.Factor > 0):
			return bad("factor must be > 0")
		case r.Offset < 0:
			return bad("offset must be ≥ 0")
		}
		if data.IsEmbedded(r.File) {
			f, err := data.Open(r.File)
			if err != nil {
				return bad("trace file: %v", err)
			}
			f.Close()
		} else if st, err := os.Stat(r.File); err != nil {
			return bad("trace file: %v", errors.Unwrap(err))
		} else if st.IsDir() {
			return bad("trace file %s is a directory", r.File)
		}
	case NodeSourceSlurm:
		if n.Slurm.Partition == "" {
			return bad("partition: missing")
		}
	case NodeSourcePBS:
		if n.PBS.Queue == "" {
			return bad("queue: missing")
		}
	case NodeSourceNone:
	case "":
		return client.NewFieldError("nodes", EnvNodeSource, "", "must be set (static:N or replay:FILE,...)")
	default:
		return bad("unknown source %q (want static, replay, slurm, pbs or none)", n.Kind)
	}
	return nil
}
