package uitest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gleaner-hpc/gleaner/workflows"
)

// The search attributes that `make stack` registers (deploy/stack/stack.sh's
// SEARCH_ATTRIBUTES, passed to deploy/setup-temporal.sh) are exactly
// workflows.SearchAttributes, as compose's are (TestComposeSearchAttributes).
func TestStackSearchAttributes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "deploy", "stack", "stack.sh"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?m)^SEARCH_ATTRIBUTES=\(\n((?:[ \t]+[^\n]*\n)*)\)`).FindSubmatch(data)
	if block == nil {
		t.Fatal("deploy/stack/stack.sh: no SEARCH_ATTRIBUTES=( ... ) list, one NAME=TYPE a line")
	}
	got := strings.Fields(string(block[1]))
	if !strings.Contains(string(data), `setup-temporal.sh" "${SEARCH_ATTRIBUTES[@]}"`) {
		t.Error(`deploy/stack/stack.sh does not pass "${SEARCH_ATTRIBUTES[@]}" to deploy/setup-temporal.sh`)
	}
	var want []string
	for _, k := range workflows.SearchAttributes {
		want = append(want, k.GetName()+"="+workflows.SearchAttributeTypeName(k.GetValueType()))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("deploy/stack/stack.sh registers\n  %q\nbut workflows.SearchAttributes are\n  %q", got, want)
	}
}
