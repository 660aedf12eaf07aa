package trial

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// hostLayout is the rendezvous a launcher gives each host of a run whose
// hosts hold locals[r] nodes each.
func hostLayout(master string, port int, locals ...int) []Rendezvous {
	nodes := 0
	for _, n := range locals {
		nodes += n
	}
	out := make([]Rendezvous, len(locals))
	offset := 0
	for r, n := range locals {
		out[r] = Rendezvous{
			NodeRank: r, NumHosts: len(locals), Nodes: nodes, LocalNodes: n, NodeOffset: offset,
			HostAddr: fmt.Sprintf("10.0.0.%d", r+1), MasterAddr: master, MasterPort: port,
		}
		offset += n
	}
	return out
}

// rendezvousVars is what a launcher sets for r: its Vars and GLEANER_NODES.
func rendezvousVars(r Rendezvous) map[string]string {
	m := map[string]string{EnvNodes: strconv.Itoa(r.Nodes)}
	for _, kv := range r.Vars() {
		m[kv[0]] = kv[1]
	}
	return m
}

func TestLoadRendezvousSingleHostDefaults(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want Rendezvous
	}{
		{"no rendezvous at all", map[string]string{EnvNodes: "3"},
			Rendezvous{NumHosts: 1, Nodes: 3, LocalNodes: 3, HostAddr: "127.0.0.1", MasterAddr: "127.0.0.1"}},
		{"one host, as a launcher sets it", map[string]string{EnvNodes: "2", EnvNumHosts: "1", EnvNodeRank: "0", EnvLocalNodes: "2", EnvNodeOffset: "0", EnvHostAddr: "10.1.2.3", EnvMasterAddr: "10.1.2.3", EnvMasterPort: "29500"},
			Rendezvous{NumHosts: 1, Nodes: 2, LocalNodes: 2, HostAddr: "10.1.2.3", MasterAddr: "10.1.2.3", MasterPort: 29500}},
		{"host address only", map[string]string{EnvNodes: "1", EnvHostAddr: "10.1.2.3"},
			Rendezvous{NumHosts: 1, Nodes: 1, LocalNodes: 1, HostAddr: "10.1.2.3", MasterAddr: "10.1.2.3"}},
		{"master address only", map[string]string{EnvNodes: "1", EnvMasterAddr: " ::1 ", EnvMasterPort: "80"},
			Rendezvous{NumHosts: 1, Nodes: 1, LocalNodes: 1, HostAddr: "::1", MasterAddr: "::1", MasterPort: 80}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoadRendezvousFrom(lookupIn(c.vars))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("rendezvous = %+v, want %+v", got, c.want)
			}
			if got.MultiHost() {
				t.Error("MultiHost on one host")
			}
		})
	}
}

// What a launcher sets (Rendezvous.Vars) is what a trainer reads, and the
// torch names carry the same facts.
func TestRendezvousVarsRoundTrip(t *testing.T) {
	for _, r := range append(hostLayout("10.0.0.1", 29500, 2, 1, 3), hostLayout("127.0.0.1", 0, 4)...) {
		vars := rendezvousVars(r)
		got, err := LoadRendezvousFrom(lookupIn(vars))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if got != r {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
		}
		port := ""
		if r.MasterPort != 0 {
			port = strconv.Itoa(r.MasterPort)
		}
		torch := map[string]string{
			EnvTorchMasterAddr: r.MasterAddr, EnvTorchMasterPort: port, EnvTorchWorldSize: strconv.Itoa(r.NumHosts),
			EnvTorchRank: strconv.Itoa(r.NodeRank), EnvTorchLocalRank: "0",
		}
		for k, v := range torch {
			if vars[k] != v {
				t.Errorf("host %d: %s=%q, want %q", r.NodeRank, k, vars[k], v)
			}
		}
		set := map[string]string{}
		for _, kv := range r.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			set[k] = v
		}
		if len(set) != len(r.Vars()) {
			t.Errorf("Environ has %d distinct names, Vars %d", len(set), len(r.Vars()))
		}
	}
	if got := (Rendezvous{MasterAddr: "fd00::1", MasterPort: 29500}).MasterHostPort(); got != "[fd00::1]:29500" {
		t.Errorf("MasterHostPort = %q", got)
	}
}

func TestLoadRendezvousErrorsNameTheVariable(t *testing.T) {
	cases := []struct {
		name   string
		change func(m map[string]string)
		want   string
	}{
		{"no nodes", func(m map[string]string) { delete(m, EnvNodes) }, EnvNodes},
		{"bad nodes", func(m map[string]string) { m[EnvNodes] = "x" }, EnvNodes},
		{"zero hosts", func(m map[string]string) { m[EnvNumHosts] = "0" }, EnvNumHosts},
		{"more hosts than nodes", func(m map[string]string) { m[EnvNumHosts] = "7" }, EnvNumHosts},
		{"no rank", func(m map[string]string) { delete(m, EnvNodeRank) }, EnvNodeRank},
		{"rank out of range", func(m map[string]string) { m[EnvNodeRank] = "3" }, EnvNodeRank},
		{"negative rank", func(m map[string]string) { m[EnvNodeRank] = "-1" }, EnvNodeRank},
		{"no local nodes", func(m map[string]string) { delete(m, EnvLocalNodes) }, EnvLocalNodes},
		{"zero local nodes", func(m map[string]string) { m[EnvLocalNodes] = "0" }, EnvLocalNodes},
		{"local nodes starve the others", func(m map[string]string) { m[EnvLocalNodes] = "5" }, EnvLocalNodes},
		{"no offset", func(m map[string]string) { delete(m, EnvNodeOffset) }, EnvNodeOffset},
		{"offset overlaps a lower host", func(m map[string]string) { m[EnvNodeOffset] = "0" }, EnvNodeOffset},
		{"offset leaves no node above", func(m map[string]string) { m[EnvNodeOffset] = "5" }, EnvNodeOffset},
		{"no host address", func(m map[string]string) { m[EnvHostAddr] = " " }, EnvHostAddr},
		{"no master address", func(m map[string]string) { delete(m, EnvMasterAddr) }, EnvMasterAddr},
		{"no master port", func(m map[string]string) { delete(m, EnvMasterPort) }, EnvMasterPort},
		{"port zero", func(m map[string]string) { m[EnvMasterPort] = "0" }, EnvMasterPort},
		{"port too large", func(m map[string]string) { m[EnvMasterPort] = "65536" }, EnvMasterPort},
		{"port not a number", func(m map[string]string) { m[EnvMasterPort] = "http" }, EnvMasterPort},
		{"one host, not every node", func(m map[string]string) {
			m[EnvNumHosts], m[EnvNodeRank], m[EnvNodeOffset] = "1", "0", "0"
		}, EnvLocalNodes},
		{"no hosts variable, not every node", func(m map[string]string) {
			delete(m, EnvNumHosts)
			m[EnvNodeRank], m[EnvNodeOffset] = "0", "0"
		}, EnvLocalNodes},
		{"rank 0 not at node 0", func(m map[string]string) { m[EnvNodeRank] = "0" }, EnvNodeOffset},
		{"last rank not at the end", func(m map[string]string) { m[EnvNodeRank] = "2" }, EnvNodeOffset},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars := rendezvousVars(hostLayout("10.0.0.1", 29500, 2, 2, 2)[1]) // rank 1: nodes 2 and 3 of 6
			c.change(vars)
			_, err := LoadRendezvousFrom(lookupIn(vars))
			if err == nil || !strings.HasPrefix(err.Error(), c.want+":") {
				t.Errorf("error = %v, want one naming %s", err, c.want)
			}
		})
	}
}

// Oracle: the layouts accepted are exactly those of some partition of the
// nodes into hosts of at least one node each, by brute force on small runs.
func TestLoadRendezvousAcceptsExactlyPartitions(t *testing.T) {
	type place struct{ hosts, rank, local, offset int }
	for nodes := 1; nodes <= 6; nodes++ {
		valid := map[place]bool{}
		var parts func(prefix []int, left int)
		parts = func(prefix []int, left int) {
			if left == 0 {
				off := 0
				for r, n := range prefix {
					valid[place{len(prefix), r, n, off}] = true
					off += n
				}
				return
			}
			for n := 1; n <= left; n++ {
				parts(append(prefix, n), left-n)
			}
		}
		parts(nil, nodes)
		for hosts := 1; hosts <= nodes+1; hosts++ {
			for rank := 0; rank <= hosts; rank++ {
				for local := 0; local <= nodes+1; local++ {
					for offset := 0; offset <= nodes+1; offset++ {
						vars := map[string]string{
							EnvNodes: strconv.Itoa(nodes), EnvNumHosts: strconv.Itoa(hosts), EnvNodeRank: strconv.Itoa(rank),
							EnvLocalNodes: strconv.Itoa(local), EnvNodeOffset: strconv.Itoa(offset),
							EnvHostAddr: "h", EnvMasterAddr: "m", EnvMasterPort: "1",
						}
						_, err := LoadRendezvousFrom(lookupIn(vars))
						p := place{hosts, rank, local, offset}
						if got := err == nil; got != valid[p] {
							t.Errorf("%d nodes, %+v: accepted %v (%v), want %v", nodes, p, got, err, valid[p])
						}
					}
				}
			}
		}
	}
}
