// Package nethosts gives a test several "hosts" on one machine: network
// namespaces made by scripts/netns-hosts.sh, each with its own IP on a
// bridge in the root namespace, so that multi-host code (one agent and one
// trainer per host, rank 0's MASTER_ADDR, a Temporal server every host
// dials) runs for real without more machines. The hosts share the
// filesystem and the PID space; only the network is separate.
//
// Up makes a set for one test and removes it when the test ends (also when
// it fails or panics). It needs root and iproute2's `ip`; without them it
// skips, unless GLEANER_REQUIRE_NETNS=1, where it fails. A set left behind
// by a test binary that was killed (a -timeout panic, SIGKILL) is removed by
// the next Up on the machine; one left by a process that is still alive is
// never touched. By hand: `make netns-clean`, or
// `scripts/netns-hosts.sh down PREFIX` for each PREFIX in /run/gleaner-netns.
// A TestMain that wants Ctrl-C to clean up too calls CleanupOnSignal.
//
// What the hosts do not separate: the hostname (one UTS namespace, so
// os.Hostname is the same on every host: give agents --node-prefix), and
// /etc/hosts and /etc/resolv.conf (shared, unless /etc/netns/NAME/ holds
// overrides, which `ip netns exec` bind-mounts). 127.0.0.1 inside a host is
// that host's own loopback: a server the hosts must reach listens on
// BridgeIP (or 0.0.0.0), not on 127.0.0.1.
//
// It is test support: it imports testing, and only tests import it.
package nethosts
