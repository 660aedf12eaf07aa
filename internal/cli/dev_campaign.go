package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/gleaner-hpc/gleaner"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/examples"
	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// devCampaignFile is the demo's campaign in a checkout; elsewhere its copy
// built into the binary (examples.GoMLPCampaign) runs.
const devCampaignFile = "examples/go-mlp/campaign.yaml"

// devCampaign is the campaign a run submits, and where its spec came from.
type devCampaign struct {
	spec gleaner.CampaignSpec
	from string // the file, or the built-in copy
}

// nodeSource is --nodes, or its default, the built-in Summit trace.
func (d *devRun) nodeSource(given bool) (worker.NodeSourceConfig, error) {
	n, err := worker.ParseNodeSource(d.o.nodes)
	if err == nil {
		err = n.Validate()
	}
	if err != nil && given {
		err = withCode(ExitUsage, err) // it names --nodes
	}
	return n, err
}

// loadCampaign loads --campaign (or the demo's campaign), names it
// uniquely for this run, gives bin/go-mlp the example trainer built into
// this binary, and checks it.
func (d *devRun) loadCampaign() (devCampaign, error) {
	c := devCampaign{from: d.o.campaign}
	var err error
	switch {
	case c.from != "":
		c.spec, err = gleaner.LoadSpec(c.from)
	case devInCheckout():
		c.from = devCampaignFile
		c.spec, err = gleaner.LoadSpec(c.from)
	default:
		c.from = "the built-in " + devCampaignFile
		c.spec, err = gleaner.DecodeSpec(examples.GoMLPCampaign, gleaner.FormatYAML)
	}
	bad := func(err error) (devCampaign, error) {
		return c, withCode(ExitUsage, fmt.Errorf("--campaign %s: %w", c.from, err))
	}
	if err != nil {
		return bad(err)
	}
	spec := &c.spec
	if spec.Name == "" {
		spec.Name = strings.TrimSuffix(filepath.Base(c.from), filepath.Ext(c.from))
	}
	if err := gleaner.ValidateName("name", spec.Name); err != nil {
		return bad(err)
	}
	// A name of its own per run, so that a rerun on the same --db starts
	// a new campaign instead of colliding with the last one; the name is
	// cut to leave the suffix room within gleaner.MaxNameLength.
	suffix := "-" + d.now().Format("20060102-150405")
	spec.Name = spec.Name[:min(len(spec.Name), gleaner.MaxNameLength-len(suffix))] + suffix
	if err := spec.WithDefaults().Validate(); err != nil {
		return bad(err)
	}
	if devBuiltinTrainer(*spec) {
		// The worker runs it with this binary (startWorker).
		if d.exe, err = d.executable(); err != nil {
			return c, fmt.Errorf("finding this gleaner binary, which carries the example trainer %s: %w", examples.GoMLPCommand, err)
		}
		return c, nil
	}
	// Any other trainer, from a spec file (the built-in copy runs the
	// built-in trainer): its paths are the file's, as gleaner submit
	// reads them, and a trainer that is not there stops us here.
	if c.spec, err = resolveTrainer(*spec, c.from); err != nil {
		return bad(err)
	}
	return c, nil
}

// devBuiltinTrainer reports whether the campaign runs the example trainer
// as the examples name it, bin/go-mlp in the worker's directory, which
// gleaner dev's worker runs with the trainer built into this binary: the
// spec keeps bin/go-mlp, so a campaign resumed by a later run (the same
// --db) finds the binary of that run.
func devBuiltinTrainer(spec gleaner.CampaignSpec) bool {
	return len(spec.Command) > 0 && filepath.Clean(spec.Command[0]) == examples.GoMLPCommand && spec.WorkDir == ""
}

// submit starts the campaign and says where to follow it.
func (d *devRun) submit(ctx context.Context, c *client.Client, camp devCampaign) (client.Campaign, error) {
	started, err := c.Submit(ctx, camp.spec)
	if err != nil {
		return started, err
	}
	spec := camp.spec.WithDefaults()
	d.say("submitted campaign %s (%s): %d trials, at most %d at a time, on %d–%d nodes each, %s",
		started.Name, camp.from, spec.Budget.MaxTrials, spec.Budget.MaxConcurrent,
		spec.Resources.MinNodes, spec.Resources.MaxNodes, spec.ObjectiveText())
	if devBuiltinTrainer(spec) {
		d.say("its trainer, %s: the Go example trainer built into %s (gleaner %s)", examples.GoMLPCommand, d.exe, ExampleTrainerCommand)
	}
	d.say("campaign in the UI: %s", started.UIURL)
	d.say("follow it from another shell: %s", commandHint(d.conn, "status", started.Name, "--watch"))
	if d.slots > 0 && d.slots <= 64 {
		d.say("progress every %v; node map: # running a trial, o idle and free, . taken back by the batch scheduler", d.o.interval)
	}
	return started, nil
}

// noteEarlierCampaigns says which campaigns of an earlier run on the same
// --db are still running: they resume on this worker and share its nodes.
func (d *devRun) noteEarlierCampaigns(ctx context.Context, srv *devserver.Server) {
	q := fmt.Sprintf("%s = %q AND ExecutionStatus = %q", workflows.GleanerKind.GetName(), workflows.WorkflowKindCampaign, "Running")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := srv.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, PageSize: 20})
	if err != nil || len(resp.GetExecutions()) == 0 {
		return
	}
	var names []string
	for _, e := range resp.GetExecutions() {
		names = append(names, strings.TrimPrefix(e.GetExecution().GetWorkflowId(), workflows.CampaignWorkflowID("")))
	}
	sort.Strings(names)
	d.say("note: %d campaign(s) of an earlier run are still running and resume on this worker, sharing its nodes: %s (stop one with: %s)",
		len(names), strings.Join(names, " "), commandHint(d.conn, "stop", "NAME"))
}
