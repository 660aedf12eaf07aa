package pilot

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckServerRefusesLoopbackUnlessTheNodesAreHere(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		nodesHere bool
		loopback  bool
	}{
		{"127.0.0.1:7233", false, true},
		{"127.3.4.5:7233", false, true},
		{"[::1]:7233", false, true},
		{"localhost:7233", false, true},
		{"LOCALHOST.:7233", false, true},
		{"temporal.localhost:7233", false, true},
		{"0.0.0.0:7233", false, true},
		{"localhost", false, true},
		{"127.0.0.1:7233", true, false},
		{"10.0.0.7:7233", false, false},
		{"[fd00::7]:7233", false, false},
		{"login1.cluster.example:7233", false, false},
		{"ns.acct.tmprl.cloud:7233", false, false},
	} {
		err := CheckServer(tc.addr, tc.nodesHere)
		assert.Equal(t, tc.loopback, errors.Is(err, ErrLoopbackServer), "%s (nodes here %v): %v", tc.addr, tc.nodesHere, err)
		if tc.loopback {
			assert.ErrorContains(t, err, "server "+tc.addr+": a loopback address")
			assert.ErrorContains(t, err, "give --address a host name or IP address the compute nodes reach")
		}
	}
	assert.ErrorContains(t, CheckServer(":7233", false), `server ":7233": no host`)
}
