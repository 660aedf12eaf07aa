package worker

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	tclient "go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/activities"
	"github.com/gleaner-hpc/gleaner/client"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// Components are the workflow functions and activity functions (usually
// bound methods of an activities.Activities) a worker runs. Each is
// registered under its name in workflows/api.go.
type Components struct {
	CampaignWorkflow any // workflows.CampaignWorkflowName
	TrialWorkflow    any // workflows.TrialWorkflowName
	PoolWorkflow     any // workflows.PoolWorkflowName
	TrialRecords     any // workflows.TrialRecordsWorkflowName
	PoolRecords      any // workflows.PoolRecordsWorkflowName

	RunTrial      any // workflows.RunTrialActivityName
	Allocate      any // workflows.AllocateActivityName
	PollNodes     any // workflows.PollNodesActivityName
	RegisterTrial any // workflows.RegisterTrialActivityName
	AgentLease    any // workflows.AgentLeaseActivityName (agents only)
	WarmStart     any // workflows.WarmStartActivityName

	// ActivityDeps, when set, is the struct behind the activity methods;
	// New gives it the worker's client and task queue if it has none.
	ActivityDeps *activities.Activities
}

type component struct {
	field, name string
	workflow    bool
	fn          any
}

func (c Components) list() []component {
	return []component{
		{"CampaignWorkflow", workflows.CampaignWorkflowName, true, c.CampaignWorkflow},
		{"TrialWorkflow", workflows.TrialWorkflowName, true, c.TrialWorkflow},
		{"PoolWorkflow", workflows.PoolWorkflowName, true, c.PoolWorkflow},
		{"TrialRecords", workflows.TrialRecordsWorkflowName, true, c.TrialRecords},
		{"PoolRecords", workflows.PoolRecordsWorkflowName, true, c.PoolRecords},
		{"RunTrial", workflows.RunTrialActivityName, false, c.RunTrial},
		{"Allocate", workflows.AllocateActivityName, false, c.Allocate},
		{"PollNodes", workflows.PollNodesActivityName, false, c.PollNodes},
		{"RegisterTrial", workflows.RegisterTrialActivityName, false, c.RegisterTrial},
		{"AgentLease", workflows.AgentLeaseActivityName, false, c.AgentLease},
		{"WarmStart", workflows.WarmStartActivityName, false, c.WarmStart},
	}
}

// Workflows and Activities are the registered names of the components
// that are set.
func (c Components) Workflows() []string  { return c.names(true, true) }
func (c Components) Activities() []string { return c.names(false, true) }

// Missing names the components that are not set; AgentLease, which only
// agents serve, is never missing.
func (c Components) Missing() []string {
	missing := append(c.names(true, false), c.names(false, false)...)
	return slices.DeleteFunc(missing, func(n string) bool { return n == workflows.AgentLeaseActivityName })
}

func (c Components) names(workflow, set bool) []string {
	var out []string
	for _, e := range c.list() {
		if e.workflow == workflow && (e.fn != nil) == set {
			out = append(out, e.name)
		}
	}
	return out
}

// Registrar is the part of an SDK worker that registration needs;
// worker.Worker and the SDK's test environment satisfy it.
type Registrar interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers every component that is set under its name. A set
// component that is not a function is an error naming it.
func Register(r Registrar, c Components) error {
	var errs []error
	for _, e := range c.list() {
		if e.fn == nil {
			continue
		}
		if reflect.TypeOf(e.fn).Kind() != reflect.Func {
			errs = append(errs, fmt.Errorf("worker: component %s (%s) is a %T, want a function", e.field, e.name, e.fn))
			continue
		}
		if e.workflow {
			r.RegisterWorkflowWithOptions(e.fn, workflow.RegisterOptions{Name: e.name})
		} else {
			r.RegisterActivityWithOptions(e.fn, activity.RegisterOptions{Name: e.name})
		}
	}
	return errors.Join(errs...)
}

// New creates a worker polling cfg.TaskQueue with every set component
// registered. Start it with Run or Start; components that are not set
// (Components.Missing) are simply not served.
func New(c tclient.Client, cfg Config, comps Components) (sdkworker.Worker, error) {
	if cfg.TaskQueue == "" {
		return nil, client.NewFieldError("task-queue", client.EnvTaskQueue, "", "must be set")
	}
	if a := comps.ActivityDeps; a != nil {
		if a.Client == nil {
			a.Client = c
		}
		if a.TaskQueue == "" {
			a.TaskQueue = cfg.TaskQueue
		}
	}
	w := sdkworker.New(c, cfg.TaskQueue, sdkworker.Options{
		WorkerStopTimeout: cfg.StopTimeout,
		// RunTrial learns of a cancellation (resize, preemption, stop) from
		// a heartbeat's response: heartbeat often, so a rescale is quick.
		MaxHeartbeatThrottleInterval:     heartbeatThrottle,
		DefaultHeartbeatThrottleInterval: heartbeatThrottle,
		// Many short trials end and start at once: more pollers than the
		// SDK's 2 keep RunTrial tasks from queueing behind one another.
		MaxConcurrentActivityTaskPollers: 8,
		MaxConcurrentWorkflowTaskPollers: 4,
	})
	if err := Register(w, comps); err != nil {
		return nil, err
	}
	return w, nil
}

// heartbeatThrottle bounds how long a cancellation waits for RunTrial's
// next heartbeat to reach the server.
const heartbeatThrottle = 500 * time.Millisecond
