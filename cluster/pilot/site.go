package pilot

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// ErrLoopbackServer: the pilots' agents would connect to their own node,
// not to the Temporal server.
var ErrLoopbackServer = errors.New("a loopback address: the pilots' agents connect to it from the compute nodes and would reach their own node, not this server")

// CheckServer refuses a Temporal frontend address (host:port) that the
// pilots' agents cannot reach from the compute nodes: a loopback address
// (127.0.0.0/8, ::1, localhost) or the unspecified one (0.0.0.0, ::),
// unless every node is this machine (nodesHere: Limits.NodesHere, a
// one-machine test cluster). Names are not resolved: a host name that
// means this host here (127.0.1.1 in /etc/hosts) may well mean it on the
// nodes too, through their DNS.
func CheckServer(hostport string, nodesHere bool) error {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "" {
		return fmt.Errorf("server %q: no host: the pilots' agents need an address the compute nodes reach", hostport)
	}
	if nodesHere || !IsLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("server %s: %w; give --address a host name or IP address the compute nodes reach (this host's on the cluster network; docs/slurm.md, \"Connecting pilots to Temporal\")",
		hostport, ErrLoopbackServer)
}

// IsLoopbackHost reports a host (name or IP, no port) that means this
// machine wherever it is used: loopback, unspecified, localhost.
func IsLoopbackHost(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || ip.IsUnspecified()
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	switch h {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return true
	}
	return strings.HasSuffix(h, ".localhost") // RFC 6761
}
