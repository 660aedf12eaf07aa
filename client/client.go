package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/gleaner-hpc/gleaner"
)

// Options say where Gleaner's workflows run. The zero value suits a local
// dev server.
type Options struct {
	// TaskQueue is where campaigns are started (default gleaner.TaskQueue,
	// "gleaner"); a Gleaner worker must poll it.
	TaskQueue string
	// UIBase is the Temporal web UI's address, for links (default
	// http://localhost:8233); "-" means there is no UI: links are "".
	UIBase string
	// Namespace is the Temporal client's namespace (default "default"),
	// for links and for the history reads the client makes itself: set it
	// to the namespace the client was dialled with (Connection.Client
	// does).
	Namespace string
	// DataConverter decodes the payloads the client reads from histories:
	// the Temporal client's own (client.Connection.DataConverter; default
	// Temporal's default, which cannot read encrypted payloads).
	DataConverter converter.DataConverter
}

func (o Options) withDefaults() Options {
	if o.TaskQueue == "" {
		o.TaskQueue = gleaner.TaskQueue
	}
	if o.UIBase == "" {
		o.UIBase = "http://localhost:8233"
	}
	o.UIBase = strings.TrimRight(o.UIBase, "/")
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.DataConverter == nil {
		o.DataConverter = converter.GetDefaultDataConverter()
	}
	return o
}

// Client submits and steers campaigns.
type Client struct {
	tc   tclient.Client
	opts Options
}

// New wraps a Temporal client. Connection.Dial makes one (address,
// namespace, TLS or mTLS, API key); so does go.temporal.io's client.Dial.
// The Client does not own tc: close it yourself.
func New(tc tclient.Client, opts Options) *Client {
	return &Client{tc: tc, opts: opts.withDefaults()}
}

// Temporal returns the underlying Temporal client.
func (c *Client) Temporal() tclient.Client { return c.tc }

// Errors, for errors.Is.
var (
	// ErrNotFound: no campaign (or pool) of that name.
	ErrNotFound = errors.New("not found")
	// ErrExists: a campaign of that name exists already (running or ended:
	// names are never reused).
	ErrExists = errors.New("already exists")
	// ErrInvalidSpec: Submit was given a spec that does not validate;
	// nothing was started.
	ErrInvalidSpec = errors.New("invalid campaign spec")
	// ErrRejected: the campaign refused a Pause, Resume or Stop in its
	// current state (already paused, not paused, already ended, …).
	ErrRejected = errors.New("rejected")
	// ErrInvalidName: a campaign or pool name that gleaner.ValidateName
	// rejects; the error names the field, and the server was not asked.
	ErrInvalidName = errors.New("invalid name")
)

// checkName is gleaner.ValidateName as an ErrInvalidName; field is
// "campaign" or "pool".
func checkName(field, name string) error {
	if err := gleaner.ValidateName(field, name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return nil
}

// Campaign identifies a submitted campaign.
type Campaign struct {
	Name       string `json:"name"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// UIURL opens the campaign in the Temporal web UI.
	UIURL string `json:"ui_url,omitempty"`
}

// Submit validates spec (after its defaults) and starts the campaign. An
// invalid spec (its name and pool included: gleaner.ValidateName) is an
// ErrInvalidSpec naming the field, and nothing is started; a name in use (by a running or an ended campaign) is ErrExists.
func (c *Client) Submit(ctx context.Context, spec gleaner.CampaignSpec) (Campaign, error) {
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return Campaign{}, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	spec = spec.WithTrialMode() // trial.mode auto decides here, once
	id := gleaner.CampaignWorkflowID(spec.Name)
	run, err := c.tc.ExecuteWorkflow(ctx, tclient.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                c.opts.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without this the SDK answers a duplicate with the existing run.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            fmt.Sprintf("%s campaign %s: %d trials, %s", spec.Kind, spec.Name, spec.Budget.MaxTrials, spec.ObjectiveText()),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrCampaign).ValueSet(spec.Name),
			temporal.NewSearchAttributeKeyKeyword(gleaner.SearchAttrKind).ValueSet(gleaner.WorkflowKindCampaign),
		),
	}, gleaner.CampaignWorkflowName, gleaner.CampaignInput{Spec: spec})
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return Campaign{}, fmt.Errorf("campaign %q: %w (names are unique; pick another)", spec.Name, ErrExists)
		}
		return Campaign{}, fmt.Errorf("starting campaign %q: %w", spec.Name, err)
	}
	return Campaign{Name: spec.Name, WorkflowID: id, RunID: run.GetRunID(), UIURL: c.WorkflowURL(id)}, nil
}

// WorkflowURL is the web UI's page of a workflow, or "" with UIBase "-".
func (c *Client) WorkflowURL(workflowID string) string {
	if c.opts.UIBase == "-" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", c.opts.UIBase, url.PathEscape(c.opts.Namespace), url.PathEscape(workflowID))
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// Trials is the state of every trial the campaign has started, by trial
// id, whichever way it runs them (a workflow per trial, or inline): see
// listTrials. It waits for a busy inline campaign's answer as long as ctx
// allows.
func (c *Client) Trials(ctx context.Context, name string) ([]gleaner.TrialStatus, error) {
	l, err := c.listTrials(ctx, name, trialSelect{patient: true})
	return l.Trials, err
}

// latestSegments keeps, of the workflow ids of a trial's segments
// (gleaner.TrialSegmentWorkflowID: "…-trial-00007", "…-trial-00007.2",
// …), the latest one's: a trial continued by its searcher is one trial.
func latestSegments(ids []string) []string {
	seg := func(id string) (string, int) {
		i := strings.LastIndexByte(id, '.')
		if i < 0 {
			return id, 1
		}
		n, err := strconv.Atoi(id[i+1:])
		if err != nil || n < 2 {
			return id, 1
		}
		return id[:i], n
	}
	latest := map[string]int{}
	for _, id := range ids {
		base, n := seg(id)
		latest[base] = max(latest[base], n)
	}
	var out []string
	for _, id := range ids {
		if base, n := seg(id); latest[base] == n {
			out = append(out, id)
		}
	}
	return out
}

// trialFromResult is an ended trial's status as its result tells it.
func (c *Client) trialFromResult(ctx context.Context, workflowID string) (gleaner.TrialStatus, error) {
	var r gleaner.TrialReport
	if err := c.tc.GetWorkflow(ctx, workflowID, "").Get(ctx, &r); err != nil {
		failed, ok := gleaner.FailedTrialReport(err)
		if !ok {
			return gleaner.TrialStatus{}, fmt.Errorf("reading the result of trial %s: %w", workflowID, err)
		}
		r = failed
	}
	// The result says only whether the objective was missing at the end
	// (and nothing for trials older than that flag): seen unless it was.
	return gleaner.TrialStatus{TrialID: r.TrialID, Params: r.Params, TrialProgress: gleaner.TrialProgress{
		State: r.State, Samples: r.Samples, Metrics: r.Metrics, Restarts: r.Restarts, Rescales: r.Rescales, Error: r.Error,
		ObjectiveSeen: !r.ObjectiveMissing, Started: r.Started, Ended: r.Ended, Spans: r.Spans, SpansDropped: r.SpansDropped,
	}}, nil
}

// describe returns the latest run of a campaign's workflow, or ErrNotFound.
func (c *Client) describe(ctx context.Context, name string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	d, err := c.tc.DescribeWorkflowExecution(ctx, gleaner.CampaignWorkflowID(name), "")
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("campaign %q: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("describing campaign %q: %w", name, err)
	}
	return d, nil
}

// startInput decodes the input of a workflow's latest run.
func (c *Client) startInput(ctx context.Context, workflowID string, out any) error {
	// One event, not the first page: a busy campaign's run holds thousands.
	resp, err := c.tc.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace: c.opts.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID}, MaximumPageSize: 1,
	})
	switch {
	case isNotFound(err):
		return fmt.Errorf("%s: %w", workflowID, ErrNotFound)
	case err != nil:
		return fmt.Errorf("reading the history of %s: %w", workflowID, err)
	case len(resp.GetHistory().GetEvents()) == 0:
		return fmt.Errorf("%s: %w", workflowID, ErrNotFound)
	}
	e := resp.GetHistory().GetEvents()[0]
	attrs := e.GetWorkflowExecutionStartedEventAttributes()
	if attrs == nil {
		return fmt.Errorf("%s: first event is %s", workflowID, e.GetEventType())
	}
	return c.opts.DataConverter.FromPayloads(attrs.GetInput(), out)
}

// Spec returns the spec a campaign runs with (its defaults applied).
func (c *Client) Spec(ctx context.Context, name string) (gleaner.CampaignSpec, error) {
	var in gleaner.CampaignInput
	if err := checkName("campaign", name); err != nil {
		return gleaner.CampaignSpec{}, err
	}
	if err := c.startInput(ctx, gleaner.CampaignWorkflowID(name), &in); err != nil {
		return gleaner.CampaignSpec{}, fmt.Errorf("campaign %q: %w", name, err)
	}
	return in.Spec, nil
}
