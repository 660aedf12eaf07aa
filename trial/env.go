package trial

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
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
}

// Vars are the GLEANER_* variables a launcher sets for e, as name and
// value pairs in a fixed order (what LoadEnvFrom reads back): TrialID,
// CampaignID, ParamsFile, Nodes, Hostfile, CheckpointDir, ResumeFrom and
// ReportFile. Params and Hosts are the files' contents, not variables.
func (e Env) Vars() [][2]string {
	return [][2]string{
		{EnvTrialID, e.TrialID},
		{EnvCampaignID, e.CampaignID},
		{EnvParamsFile, e.ParamsFile},
		{EnvNodes, strconv.Itoa(e.Nodes)},
		{EnvHostfile, e.Hostfile},
		{EnvCheckpointDir, e.CheckpointDir},
		{EnvResumeFrom, e.ResumeFrom},
		{EnvReportFile, e.ReportFile},
	}
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
// GLEANER_RESUME_FROM, when set, must name an existing file. Every error
// names the variable at fault.
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
	return e, nil
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
