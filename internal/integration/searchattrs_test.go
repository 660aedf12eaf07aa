package integration_test

import (
	"testing"

	"github.com/gleaner-hpc/gleaner/internal/devserver"
	"github.com/gleaner-hpc/gleaner/workflows"
)

// TestDevServerRegistersTheWorkflowsSearchAttributes keeps the dev
// server's default search attributes (which cannot import workflows) equal
// to those the workflows set.
func TestDevServerRegistersTheWorkflowsSearchAttributes(t *testing.T) {
	want := map[string]string{}
	for _, k := range workflows.SearchAttributes {
		want[k.GetName()] = workflows.SearchAttributeTypeName(k.GetValueType())
	}
	got := devserver.DefaultSearchAttributes()
	for name, typ := range want {
		if got[name] != typ {
			t.Errorf("devserver.DefaultSearchAttributes()[%q] = %q, want %q (workflows.SearchAttributes)", name, got[name], typ)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("devserver.DefaultSearchAttributes() has %q, which workflows.SearchAttributes lacks", name)
		}
	}
}
