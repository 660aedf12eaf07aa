package worker_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/gleaner-hpc/gleaner/worker"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// recorder is a worker.Registrar that records what was registered.
type recorder struct{ workflows, activities []string }

func (r *recorder) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows = append(r.workflows, o.Name)
}

func (r *recorder) RegisterActivityWithOptions(_ any, o activity.RegisterOptions) {
	r.activities = append(r.activities, o.Name)
}

func fakeWorkflow(workflow.Context) error      { return nil }
func fakeActivity(context.Context) error       { return nil }
func otherActivity(context.Context, int) error { return nil }

func TestRegisterUsesTheNamesOfTheAPI(t *testing.T) {
	comps := worker.Components{
		CampaignWorkflow: fakeWorkflow, TrialWorkflow: fakeWorkflow, PoolWorkflow: fakeWorkflow, TrialRecords: fakeWorkflow, PoolRecords: fakeWorkflow,
		RunTrial: fakeActivity, Allocate: otherActivity, PollNodes: fakeActivity, RegisterTrial: otherActivity, WarmStart: fakeActivity,
	}
	var r recorder
	if err := worker.Register(&r, comps); err != nil {
		t.Fatal(err)
	}
	wantWF := []string{workflows.CampaignWorkflowName, workflows.TrialWorkflowName, workflows.PoolWorkflowName, workflows.TrialRecordsWorkflowName,
		workflows.PoolRecordsWorkflowName}
	wantAct := []string{workflows.RunTrialActivityName, workflows.AllocateActivityName, workflows.PollNodesActivityName, workflows.RegisterTrialActivityName, workflows.WarmStartActivityName}
	if !slices.Equal(r.workflows, wantWF) || !slices.Equal(r.activities, wantAct) {
		t.Errorf("registered workflows %v activities %v; want %v and %v", r.workflows, r.activities, wantWF, wantAct)
	}
	if m := comps.Missing(); len(m) != 0 {
		t.Errorf("Missing() = %v with every component set", m)
	}
	if !slices.Equal(comps.Workflows(), wantWF) || !slices.Equal(comps.Activities(), wantAct) {
		t.Errorf("Workflows() = %v, Activities() = %v", comps.Workflows(), comps.Activities())
	}
}

func TestRegisterSkipsUnsetAndRejectsNonFunctions(t *testing.T) {
	var r recorder
	err := worker.Register(&r, worker.Components{PoolWorkflow: fakeWorkflow, RunTrial: "not a function"})
	if err == nil || !strings.Contains(err.Error(), "RunTrial") || !strings.Contains(err.Error(), workflows.RunTrialActivityName) {
		t.Fatalf("Register with a string as RunTrial: err = %v, want one naming RunTrial", err)
	}
	if !slices.Equal(r.workflows, []string{workflows.PoolWorkflowName}) || len(r.activities) != 0 {
		t.Errorf("registered %v / %v, want only the pool workflow", r.workflows, r.activities)
	}
	missing := worker.Components{PoolWorkflow: fakeWorkflow}.Missing()
	want := []string{workflows.CampaignWorkflowName, workflows.TrialWorkflowName, workflows.TrialRecordsWorkflowName, workflows.PoolRecordsWorkflowName,
		workflows.RunTrialActivityName, workflows.AllocateActivityName, workflows.PollNodesActivityName, workflows.RegisterTrialActivityName,
		workflows.WarmStartActivityName}
	if !slices.Equal(missing, want) {
		t.Errorf("Missing() = %v, want %v", missing, want)
	}
}
