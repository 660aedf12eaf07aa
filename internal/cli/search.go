package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	gleaner "github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/hpo"
	"github.com/gleaner-hpc/gleaner/internal/searchproto"
)

func newSearchCmd() *cobra.Command {
	var specPath, configPath string
	cmd := &cobra.Command{
		Use:   "search (--spec FILE | --config FILE)",
		Short: "Run a Gleaner searcher over JSON lines on stdin and stdout, without Temporal",
		Long: `Speaks the Searcher contract as JSON lines, so any program can drive any
Gleaner searcher (docs/search.md, "Driving a searcher from any language"):
it reads one request per line on stdin and answers each with one line on
stdout, until stdin ends.

The searcher is the one a campaign spec describes (--spec: its space,
search, objective(s), constraints, reference point and budget), or an
hpo.Config in JSON (--config: {"algorithm":"tpe","space":[...],"seed":1,
"max_trials":100,"max_concurrent":8,"mode":"min","settings":{"tpe":{...}}};
several objectives: "objectives":[{"metric":"loss","mode":"min"},
{"metric":"latency","mode":"min"}], with "constraints":[{"metric":"mem",
"max":4}] and "reference_point":[1,50] (one per objective) if wanted; mode
then defaults to the first objective's). A config without "revision" gets
this build's decision rules (hpo.Revision), as a new campaign does; name an
older revision to replay its rules.

Requests: {"event":"initial"}, {"event":"created","id":ID},
{"event":"reported","id":ID,"samples":N,"metric":M},
{"event":"finished","id":ID,"metric":M,"outcome":"completed"|"stopped"},
{"event":"failed","id":ID}, {"event":"snapshot"},
{"event":"restore","snapshot":S}, {"event":"front"}.
Each request carries exactly these fields, every one ("metric" may be
null in finished only; no NaN or Infinity). A search of several objectives
sends "values":[V1,V2,...] (one per objective) instead of "metric", one
with constraints adds "constraints":[C1,...] (one per constraint); null
in finished only. A trial's life: a create (or continue) action asks for
it, created starts it, reported while it runs, then finished, or failed
(also before created). Answers:
{"actions":[{"create":{"id":ID,"params":{...}}}, {"continue":{"trial_id":ID,"budget":B}},
{"stop":{"trial_id":ID}}, {"shutdown":{"reason":WHY}}],"progress":P}; a snapshot
also has "snapshot" (the searcher's state, its trials and its front); a
front has "front": the Pareto front ({"trials":[{"id","params","values",
"constraints","feasible"}],"hypervolume":H,"reference_point":[...]},
"reference_derived":true when no reference_point was given), or for one
objective the best trial (with "metric"). A request that breaks a rule (a
field missing, misspelt, of the wrong type; values for one objective or
too few for several; an id no create named; finished twice, reported after
finished, …) gets "error" naming the event, the id and the rule (finished
"t00007": already finished), the searcher does not see it, and the session
goes on. A searcher's own snapshot ({"type":…}, from before sessions kept
their trials) restores too.`,
		Example: `  printf '{"event":"initial"}\n' | gleaner search --spec examples/go-mlp/campaign.yaml
  python3 scripts/search_vs_optuna.py          # drives gleaner search from Python`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := searchConfig(specPath, configPath)
			if err != nil {
				return err
			}
			return searchproto.Serve(cfg, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&specPath, "spec", "", "campaign spec (YAML or JSON) whose searcher to run")
	cmd.Flags().StringVar(&configPath, "config", "", "searcher config (JSON, hpo.Config) to run")
	return cmd
}

func searchConfig(specPath, configPath string) (searchproto.Config, error) {
	switch {
	case (specPath == "") == (configPath == ""):
		return searchproto.Config{}, fmt.Errorf("give one of --spec and --config")
	case specPath != "":
		spec, err := gleaner.LoadAndValidate(specPath)
		if err != nil {
			return searchproto.Config{}, err
		}
		cfg := searchproto.Config{Config: spec.SearchConfig(), ReferencePoint: spec.ReferencePoint}
		cfg.Revision = hpo.Revision // a new search, as a new campaign
		return cfg, nil
	}
	b, err := os.ReadFile(configPath)
	if err != nil {
		return searchproto.Config{}, fmt.Errorf("--config: %w", err)
	}
	var cfg searchproto.Config // hpo.Config's fields and reference_point
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return searchproto.Config{}, fmt.Errorf("--config %s: %w", configPath, err)
	}
	if cfg.Mode == "" && len(cfg.Objectives) > 0 {
		cfg.Mode = cfg.Objectives[0].Mode // the first objective's, as a spec's
	}
	// A config that names no revision is a new search: it gets this
	// build's rules, as a new campaign does (hpo.Revision).
	var named struct {
		Revision *int `json:"revision"`
	}
	if err := json.Unmarshal(b, &named); err == nil && named.Revision == nil {
		cfg.Revision = hpo.Revision
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if err := cfg.Validate(); err != nil {
		return searchproto.Config{}, fmt.Errorf("--config %s: %w", configPath, err)
	}
	return cfg, nil
}
