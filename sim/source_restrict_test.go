package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Restricting a trace keeps the first n nodes' events, drops the events
// left empty, and sizes the machine to n.
func TestTraceRestrict(t *testing.T) {
	tr, err := ReadIdleEvents(strings.NewReader("unix_time,event,nodes\n10,idle,b a c\n20,busy,c\n30,busy,a\n40,idle,c\n"), SourceOptions{})
	require.NoError(t, err)
	small, err := tr.Restrict(2)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, small.Nodes)
	assert.Equal(t, 2, small.Size)
	require.Len(t, small.Events, 2, "the events about c alone are dropped")
	assert.ElementsMatch(t, []string{"a", "b"}, small.Events[0].Idle)
	assert.Equal(t, []string{"a"}, small.Events[1].Busy)
	assert.Equal(t, 3, len(tr.Nodes), "the original is unchanged")
	assert.Len(t, tr.Events, 4)

	same, err := tr.Restrict(3)
	require.NoError(t, err)
	assert.Same(t, tr, same)
	_, err = tr.Restrict(0)
	assert.ErrorContains(t, err, "at least 1")
}
