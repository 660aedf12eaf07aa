package trial

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Env is a trial's assignment, read from the GLEANER_* variables the
// launcher sets (see the Env* constants).
type Env struct {
	TrialID    string
	CampaignID string
	// ParamsFile is the path of the JSON object of the trial's parameters;
	// Params holds its members undecoded.
	ParamsFile string
	Params     map[string]json.RawMessage
	// Nodes is the node count (≥ 1); Hosts are the hostfile's non-blank
	// lines, one per node.
	Nodes    int
	Hostfile string
	Hosts    []string
	// CheckpointDir is stable for the trial across restarts.
	CheckpointDir string
	// ResumeFrom is the last completed checkpoint; empty at first start.
	ResumeFrom string
	// ReportFile is where report lines are appended.
	ReportFile string
	// Budget, when > 0, is where this run ends: once the report counter
	// BudgetUnit names (cumulative since the trial first started) reaches
	// it, the trainer checkpoints, reports and exits 0 (see BudgetReached).
	// 0: no budget; the trainer trains to its own end.
	Budget float64
	// BudgetUnit is BudgetSamples, BudgetSteps or BudgetEpochs; empty
	// without a budget.
	BudgetUnit string
}

// Vars are the GLEANER_* variables a launcher sets for e, as name and
// value pairs in a fixed order (what LoadEnvFrom reads back): TrialID,
// CampaignID, ParamsFile, Nodes, Hostfile, CheckpointDir, ResumeFrom,
// ReportFile, Budget and BudgetUnit (both empty when Budget is not > 0, so
// that no budget of the launcher's own environment leaks into the
// trial's). Params and Hosts are the files' contents, not variables.
func (e Env) Vars() [][2]string {
	budget, unit := "", ""
	if e.Budget > 0 {
		budget, unit = formatBudget(e.Budget), e.BudgetUnit
	}
	return [][2]string{
		{EnvTrialID, e.TrialID},
		{EnvCampaignID, e.CampaignID},
		{EnvParamsFile, e.ParamsFile},
		{EnvNodes, strconv.Itoa(e.Nodes)},
		{EnvHostfile, e.Hostfile},
		{EnvCheckpointDir, e.CheckpointDir},
		{EnvResumeFrom, e.ResumeFrom},
		{EnvReportFile, e.ReportFile},
		{EnvBudget, budget},
		{EnvBudgetUnit, unit},
	}
}

// formatBudget writes a budget the way encoding/json writes a number:
// plain decimals (64000, not 6.4e+04) except for the very small or large.
// It reads back exactly.
func formatBudget(b float64) string {
	if b < 1e-6 || b >= 1e21 {
		return strconv.FormatFloat(b, 'g', -1, 64)
	}
	return strconv.FormatFloat(b, 'f', -1, 64)
}

// BudgetReached reports whether a run at these counters (a report's,
// cumulative since the trial first started) has reached its budget: the
// BudgetUnit counter is at or past Budget. Then the trainer checkpoints,
// reports and exits 0. Always false without a budget.
func (e Env) BudgetReached(samples float64, step int64, epoch float64) bool {
	if !(e.Budget > 0) {
		return false
	}
	switch e.BudgetUnit {
	case BudgetSamples:
		return samples >= e.Budget
	case BudgetSteps:
		return float64(step) >= e.Budget
	case BudgetEpochs:
		return epoch >= e.Budget
	}
	return false
}

// Environ is Vars as NAME=value strings, for exec.Cmd.Env.
func (e Env) Environ() []string {
	vars := e.Vars()
	out := make([]string, len(vars))
	for i, kv := range vars {
		out[i] = kv[0] + "=" + kv[1]
	}
	return out
}

// LoadEnv reads the trial's assignment from the process environment.
func LoadEnv() (Env, error) { return LoadEnvFrom(os.LookupEnv) }

// LoadEnvFrom reads the trial's assignment through lookup (os.LookupEnv in
// production, a map in tests). GLEANER_PARAMS_FILE, GLEANER_NODES,
// GLEANER_CHECKPOINT_DIR and GLEANER_REPORT_FILE are required;
// GLEANER_HOSTFILE, when set, must list exactly GLEANER_NODES hosts;
// GLEANER_RESUME_FROM, when set, must name an existing file;
// GLEANER_BUDGET, when set, must be a decimal number greater than 0 (and
// finite), and then GLEANER_BUDGET_UNIT one of samples, steps and epochs
// (a unit without a budget is ignored). Every error names the variable at
// fault.
func LoadEnvFrom(lookup func(string) (string, bool)) (Env, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	required := func(name string) (string, error) {
		v := get(name)
		if v == "" {
			return "", fmt.Errorf("%s: not set; the trial launcher sets it (see docs/protocol.md)", name)
		}
		return v, nil
	}

	e := Env{
		TrialID:    get(EnvTrialID),
		CampaignID: get(EnvCampaignID),
		Hostfile:   get(EnvHostfile),
		ResumeFrom: get(EnvResumeFrom),
	}
	var err error
	if e.ParamsFile, err = required(EnvParamsFile); err != nil {
		return Env{}, err
	}
	if e.CheckpointDir, err = required(EnvCheckpointDir); err != nil {
		return Env{}, err
	}
	if e.ReportFile, err = required(EnvReportFile); err != nil {
		return Env{}, err
	}
	nodes, err := required(EnvNodes)
	if err != nil {
		return Env{}, err
	}
	if e.Nodes, err = strconv.Atoi(nodes); err != nil || e.Nodes < 1 {
		return Env{}, fmt.Errorf("%s: %q is not a node count of at least 1", EnvNodes, nodes)
	}

	raw, err := os.ReadFile(e.ParamsFile)
	if err != nil {
		return Env{}, fmt.Errorf("%s: %w", EnvParamsFile, err)
	}
	if err := json.Unmarshal(raw, &e.Params); err != nil || e.Params == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return Env{}, fmt.Errorf("%s: %s is not a JSON object: %v", EnvParamsFile, e.ParamsFile, err)
	}

	if e.Hostfile != "" {
		if e.Hosts, err = readHostfile(e.Hostfile); err != nil {
			return Env{}, fmt.Errorf("%s: %w", EnvHostfile, err)
		}
		if len(e.Hosts) != e.Nodes {
			return Env{}, fmt.Errorf("%s: %s lists %d hosts but %s is %d", EnvHostfile, e.Hostfile, len(e.Hosts), EnvNodes, e.Nodes)
		}
	}
	if e.ResumeFrom != "" {
		if _, err := os.Stat(e.ResumeFrom); err != nil {
			return Env{}, fmt.Errorf("%s: %w", EnvResumeFrom, err)
		}
	}
	if e.Budget, e.BudgetUnit, err = parseBudget(get(EnvBudget), get(EnvBudgetUnit)); err != nil {
		return Env{}, err
	}
	return e, nil
}

// decimalNumber is the form GLEANER_BUDGET takes: a decimal number with an
// optional exponent, and none of the other forms strconv.ParseFloat (or
// Python's float) reads: hexadecimal, underscores, inf, nan.
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// parseBudget reads the values of GLEANER_BUDGET and GLEANER_BUDGET_UNIT.
// An empty budget is none, whatever the unit.
func parseBudget(budget, unit string) (float64, string, error) {
	if budget == "" {
		return 0, "", nil
	}
	b, err := strconv.ParseFloat(budget, 64)
	if !decimalNumber.MatchString(budget) || err != nil || !(b > 0) || math.IsInf(b, 0) {
		return 0, "", fmt.Errorf("%s: %q is not a finite decimal number greater than 0", EnvBudget, budget)
	}
	switch unit {
	case BudgetSamples, BudgetSteps, BudgetEpochs:
		return b, unit, nil
	case "":
		return 0, "", fmt.Errorf("%s: not set, but %s is %s; a launcher sets both (see docs/protocol.md)", EnvBudgetUnit, EnvBudget, budget)
	}
	return 0, "", fmt.Errorf("%s: %q is not %s, %s or %s", EnvBudgetUnit, unit, BudgetSamples, BudgetSteps, BudgetEpochs)
}

// Rendezvous is where a trainer process stands among the hosts of its run.
// A run on H hosts starts one trainer process per host; together they
// train the run's Nodes nodes data-parallel, this process the LocalNodes
// of them numbered NodeOffset, NodeOffset+1, … among all the run's nodes.
// Host rank 0 reports and writes checkpoints; the processes meet at
// MasterAddr:MasterPort, a port on rank 0's host. See docs/protocol.md,
// "Many hosts: the rendezvous".
type Rendezvous struct {
	NodeRank   int // this host's rank, 0..NumHosts-1
	NumHosts   int // ≥ 1
	Nodes      int // the run's nodes over all hosts (GLEANER_NODES)
	LocalNodes int // ≥ 1
	NodeOffset int // the sum of LocalNodes over the lower ranks
	HostAddr   string
	MasterAddr string
	// MasterPort is 0 when none was assigned, which only a single-host
	// run may leave out: its trainer then picks a free local port.
	MasterPort int
}

// MultiHost reports whether the run spans more than one host.
func (r Rendezvous) MultiHost() bool { return r.NumHosts > 1 }

// MasterHostPort is MasterAddr:MasterPort, bracketed for IPv6.
func (r Rendezvous) MasterHostPort() string {
	return net.JoinHostPort(r.MasterAddr, strconv.Itoa(r.MasterPort))
}

// Vars are the variables a launcher sets for r, as name and value pairs
// in a fixed order: the GLEANER_* rendezvous (what LoadRendezvousFrom
// reads back, with GLEANER_NODES from Env.Vars), then the torch env://
// names MASTER_ADDR, MASTER_PORT, WORLD_SIZE (hosts), RANK (host rank) and
// LOCAL_RANK (0: one process per host). A MasterPort of 0 is written as an
// empty value. GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME are the
// launcher's own to add.
func (r Rendezvous) Vars() [][2]string {
	port := ""
	if r.MasterPort > 0 {
		port = strconv.Itoa(r.MasterPort)
	}
	return [][2]string{
		{EnvNodeRank, strconv.Itoa(r.NodeRank)},
		{EnvNumHosts, strconv.Itoa(r.NumHosts)},
		{EnvLocalNodes, strconv.Itoa(r.LocalNodes)},
		{EnvNodeOffset, strconv.Itoa(r.NodeOffset)},
		{EnvHostAddr, r.HostAddr},
		{EnvMasterAddr, r.MasterAddr},
		{EnvMasterPort, port},
		{EnvTorchMasterAddr, r.MasterAddr},
		{EnvTorchMasterPort, port},
		{EnvTorchWorldSize, strconv.Itoa(r.NumHosts)},
		{EnvTorchRank, strconv.Itoa(r.NodeRank)},
		{EnvTorchLocalRank, "0"},
	}
}

// Environ is Vars as NAME=value strings, for exec.Cmd.Env.
func (r Rendezvous) Environ() []string {
	vars := r.Vars()
	out := make([]string, len(vars))
	for i, kv := range vars {
		out[i] = kv[0] + "=" + kv[1]
	}
	return out
}

// defaultAddr is the master and host address of a single-host run that
// was given none.
const defaultAddr = "127.0.0.1"

// LoadRendezvous reads the rendezvous from the process environment.
func LoadRendezvous() (Rendezvous, error) { return LoadRendezvousFrom(os.LookupEnv) }

// LoadRendezvousFrom reads and checks the rendezvous through lookup.
// GLEANER_NODES is required. Without GLEANER_NUM_HOSTS (or with 1) the run
// is on one host: rank 0 of 1, every node local, offset 0, and the
// addresses default to each other, then to 127.0.0.1; a port may be
// absent. With more hosts every GLEANER_* rendezvous variable is required.
// The layout must be one a partition of the nodes over the hosts gives:
// every host has at least one node, rank 0 starts at node 0, the last rank
// ends at the last node. Every error names the variable at fault.
func LoadRendezvousFrom(lookup func(string) (string, bool)) (Rendezvous, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	var r Rendezvous
	var err error
	count := func(name string, min int, what string) (int, error) {
		s := get(name)
		n, err := strconv.Atoi(s)
		if err != nil || n < min {
			return 0, fmt.Errorf("%s: %q is not %s", name, s, what)
		}
		return n, nil
	}
	if get(EnvNodes) == "" {
		return Rendezvous{}, fmt.Errorf("%s: not set; the trial launcher sets it (see docs/protocol.md)", EnvNodes)
	}
	if r.Nodes, err = count(EnvNodes, 1, "a node count of at least 1"); err != nil {
		return Rendezvous{}, err
	}
	r.NumHosts = 1
	if get(EnvNumHosts) != "" {
		if r.NumHosts, err = count(EnvNumHosts, 1, "a host count of at least 1"); err != nil {
			return Rendezvous{}, err
		}
	}
	if r.NumHosts > r.Nodes {
		return Rendezvous{}, fmt.Errorf("%s: %d hosts for %s=%d nodes; every host runs at least one", EnvNumHosts, r.NumHosts, EnvNodes, r.Nodes)
	}
	// Absent on a single host: the defaults. Required on more.
	layout := func(name string, def, min int, what string) (int, error) {
		if get(name) != "" {
			return count(name, min, what)
		}
		if r.MultiHost() {
			return 0, fmt.Errorf("%s: not set; required when %s is %d (see docs/protocol.md)", name, EnvNumHosts, r.NumHosts)
		}
		return def, nil
	}
	if r.NodeRank, err = layout(EnvNodeRank, 0, 0, "a host rank"); err != nil {
		return Rendezvous{}, err
	}
	if r.LocalNodes, err = layout(EnvLocalNodes, r.Nodes, 1, "a node count of at least 1"); err != nil {
		return Rendezvous{}, err
	}
	if r.NodeOffset, err = layout(EnvNodeOffset, 0, 0, "a node index"); err != nil {
		return Rendezvous{}, err
	}
	if r.NodeRank >= r.NumHosts {
		return Rendezvous{}, fmt.Errorf("%s: rank %d of %s=%d hosts; ranks are 0..%d", EnvNodeRank, r.NodeRank, EnvNumHosts, r.NumHosts, r.NumHosts-1)
	}
	others := r.NumHosts - 1
	if r.NumHosts == 1 && r.LocalNodes != r.Nodes {
		return Rendezvous{}, fmt.Errorf("%s: %d, but on one host it is %s=%d", EnvLocalNodes, r.LocalNodes, EnvNodes, r.Nodes)
	}
	if r.LocalNodes > r.Nodes-others {
		return Rendezvous{}, fmt.Errorf("%s: %d of %s=%d nodes leaves fewer than one for each of the %d other hosts", EnvLocalNodes, r.LocalNodes, EnvNodes, r.Nodes, others)
	}
	// Every lower rank holds at least one node, every higher one too.
	lo, hi := r.NodeRank, r.Nodes-r.LocalNodes-(others-r.NodeRank)
	if r.NodeRank == 0 {
		hi = 0
	}
	if r.NodeRank == others {
		lo = r.Nodes - r.LocalNodes
	}
	if r.NodeOffset < lo || r.NodeOffset > hi {
		want := fmt.Sprintf("%d..%d", lo, hi)
		if lo == hi {
			want = strconv.Itoa(lo)
		}
		return Rendezvous{}, fmt.Errorf("%s: %d, but host %d of %d with %d of the %d nodes starts at node %s", EnvNodeOffset, r.NodeOffset, r.NodeRank, r.NumHosts, r.LocalNodes, r.Nodes, want)
	}

	r.HostAddr, r.MasterAddr = get(EnvHostAddr), get(EnvMasterAddr)
	port := get(EnvMasterPort)
	if r.MultiHost() {
		for _, v := range [][2]string{{EnvHostAddr, r.HostAddr}, {EnvMasterAddr, r.MasterAddr}, {EnvMasterPort, port}} {
			if v[1] == "" {
				return Rendezvous{}, fmt.Errorf("%s: not set; required when %s is %d (see docs/protocol.md)", v[0], EnvNumHosts, r.NumHosts)
			}
		}
	}
	switch {
	case r.MasterAddr == "" && r.HostAddr == "":
		r.MasterAddr, r.HostAddr = defaultAddr, defaultAddr
	case r.MasterAddr == "":
		r.MasterAddr = r.HostAddr
	case r.HostAddr == "":
		r.HostAddr = r.MasterAddr
	}
	if port != "" {
		if r.MasterPort, err = strconv.Atoi(port); err != nil || r.MasterPort < 1 || r.MasterPort > 65535 {
			return Rendezvous{}, fmt.Errorf("%s: %q is not a TCP port (1..65535)", EnvMasterPort, port)
		}
	}
	return r, nil
}

func readHostfile(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var hosts []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if h := strings.TrimSpace(sc.Text()); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts, sc.Err()
}

// Resuming reports whether this run continues from a checkpoint.
func (e Env) Resuming() bool { return e.ResumeFrom != "" }

// DecodeParams decodes the params file into v, typically a pointer to a
// struct pre-filled with defaults: members absent from the file keep them.
// Choice parameters arrive as JSON strings; fields of type Number and Flag
// accept those as well as bare numbers and booleans.
func (e Env) DecodeParams(v any) error {
	raw, err := json.Marshal(e.Params)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvParamsFile, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %s: %w", EnvParamsFile, e.ParamsFile, err)
	}
	return nil
}

// Number is a numeric parameter that decodes from a JSON number or from a
// string holding one ("64"), the form the search space gives choice values.
type Number float64

// Int returns the number truncated to an int.
func (n Number) Int() int { return int(n) }

func (n *Number) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	if len(s) > 0 && s[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("%s is not a number", b)
	}
	*n = Number(v)
	return nil
}

// Flag is a boolean parameter that decodes from true/false, "true"/"false"
// (any case), or a number (non-zero is true).
type Flag bool

func (f *Flag) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	if len(s) > 0 && s[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	if v, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(s))); err == nil {
		*f = Flag(v)
		return nil
	}
	if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		*f = v != 0
		return nil
	}
	return fmt.Errorf("%s is not a boolean", b)
}
