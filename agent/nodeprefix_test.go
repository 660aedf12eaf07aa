package agent

import "testing"

// A PBS pilot's agent is named after its vnode, brackets and all.
func TestNodePrefixMayBeAPBSVnode(t *testing.T) {
	for prefix, ok := range map[string]bool{"g1": true, "gleaner-pbs[4]": true, "x1000c0s0b0n0[0]": true,
		"[4]": false, "a b[1]": false, "a/b": false, "a[1]/0": false} {
		if err := validateNodePrefix(prefix); (err == nil) != ok {
			t.Errorf("validateNodePrefix(%q) = %v, want ok %v", prefix, err, ok)
		}
	}
}
