package nethosts

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// MarkerDir holds one marker file per host set made by Up, named by its
// prefix and holding the creating process and the subnet. The script's
// `down` removes the marker too.
const MarkerDir = "/run/gleaner-netns"

// prefixPattern is the shape of the prefixes Up picks: only sets of this
// shape are ever swept as stale, so hosts made by hand with the script
// under another prefix are left alone.
var prefixPattern = regexp.MustCompile(`^gl[a-z]{4}$`)

// owner identifies a process across pid reuse: its pid and its start time
// (field 22 of /proc/PID/stat, in clock ticks since boot).
type owner struct {
	pid   int
	start uint64
}

func self() (owner, error) {
	pid := os.Getpid()
	start, err := processStart(pid)
	if err != nil {
		return owner{}, err
	}
	return owner{pid: pid, start: start}, nil
}

// alive reports whether the process that wrote a marker still runs.
func (o owner) alive() bool {
	start, err := processStart(o.pid)
	return err == nil && start == o.start
}

func processStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("nethosts: odd /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[i+1:]) // fields 3, 4, ...
	if len(fields) < 20 {
		return 0, fmt.Errorf("nethosts: short /proc/%d/stat", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// marker is the content of MarkerDir/PREFIX.
type marker struct {
	owner owner
	octet int // the subnet is 10.octet.0.0/24
}

func (m marker) String() string {
	return fmt.Sprintf("pid=%d start=%d octet=%d\n", m.owner.pid, m.owner.start, m.octet)
}

func readMarker(path string) (marker, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return marker{}, err
	}
	var m marker
	if _, err := fmt.Sscanf(string(b), "pid=%d start=%d octet=%d", &m.owner.pid, &m.owner.start, &m.octet); err != nil {
		return marker{}, fmt.Errorf("nethosts: marker %s: %w", path, err)
	}
	return m, nil
}

// reservation is what reserve decided under the lock.
type reservation struct {
	prefix string
	octet  int
	swept  []string // what the sweep of stale sets did, for the test log
}

// reserve takes the lock on MarkerDir, removes the sets whose creating
// process is gone, and picks a prefix and a subnet that no set and no
// interface or route of the root namespace uses, writing the marker that
// holds them for o.
func reserve(script string, o owner) (reservation, error) {
	if err := os.MkdirAll(MarkerDir, 0o755); err != nil {
		return reservation{}, fmt.Errorf("nethosts: %w", err)
	}
	unlock, err := lockFile(filepath.Join(MarkerDir, ".lock"))
	if err != nil {
		return reservation{}, err
	}
	defer unlock()

	var r reservation
	live, err := sweep(script, &r.swept)
	if err != nil {
		return r, err
	}
	taken, err := namesInUse()
	if err != nil {
		return r, err
	}
	for tries := 0; r.prefix == ""; tries++ {
		if tries == 100 {
			return r, errors.New("nethosts: no free prefix after 100 tries")
		}
		p := randomPrefix()
		if _, ok := live[p]; !ok && !taken(p) {
			r.prefix = p
		}
	}
	if r.octet, err = freeOctet(live); err != nil {
		return r, err
	}
	m := marker{owner: o, octet: r.octet}
	if err := os.WriteFile(filepath.Join(MarkerDir, r.prefix), []byte(m.String()), 0o644); err != nil {
		return r, fmt.Errorf("nethosts: %w", err)
	}
	return r, nil
}

// sweep removes every set of Up's prefix shape whose creating process is
// gone, and returns the markers of the live ones by prefix.
func sweep(script string, log *[]string) (map[string]marker, error) {
	entries, err := os.ReadDir(MarkerDir)
	if err != nil {
		return nil, fmt.Errorf("nethosts: %w", err)
	}
	live := map[string]marker{}
	for _, e := range entries {
		prefix := e.Name()
		if !prefixPattern.MatchString(prefix) {
			continue
		}
		m, err := readMarker(filepath.Join(MarkerDir, prefix))
		if err != nil {
			// Unreadable: treat it as live (never remove what we cannot
			// tell is stale), and keep its prefix out of use.
			*log = append(*log, err.Error())
			live[prefix] = marker{octet: -1}
			continue
		}
		if m.owner.alive() {
			live[prefix] = m
			continue
		}
		out, err := exec.Command("bash", script, "down", prefix).CombinedOutput()
		if err != nil {
			*log = append(*log, fmt.Sprintf("removing stale hosts %s (pid %d is gone): %v\n%s", prefix, m.owner.pid, err, out))
			live[prefix] = m // keep its subnet out of use
			continue
		}
		*log = append(*log, fmt.Sprintf("removed stale hosts %s (pid %d is gone)", prefix, m.owner.pid))
	}
	return live, nil
}

func randomPrefix() string {
	b := []byte("gl")
	for range 4 {
		b = append(b, byte('a'+rand.IntN(26)))
	}
	return string(b)
}

// namesInUse reports, for a prefix, whether a namespace PREFIX<digits> or an
// interface PREFIXbr already exists (made by hand, or by a run whose marker
// was lost).
func namesInUse() (func(prefix string) bool, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("nethosts: ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return func(prefix string) bool {
		if _, err := net.InterfaceByName(prefix + "br"); err == nil {
			return true
		}
		re := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + "[0-9]+$")
		for _, n := range names {
			if re.MatchString(n) {
				return true
			}
		}
		return false
	}, nil
}

// freeOctet picks X such that 10.X.0.0/24 overlaps no live set's subnet and
// no address or route of the root namespace: 77 first (the script's
// default), then upwards, then below.
func freeOctet(live map[string]marker) (int, error) {
	used := map[int]bool{}
	for _, m := range live {
		used[m.octet] = true
	}
	var nets []*net.IPNet
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, fmt.Errorf("nethosts: %w", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			nets = append(nets, n)
		}
	}
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return 0, fmt.Errorf("nethosts: ip route: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if routeTypes[dst] && len(f) > 1 {
			dst = f[1]
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if _, n, err := net.ParseCIDR(dst); err == nil { // "default" does not parse
			nets = append(nets, n)
		}
	}
	for _, x := range append(seq(77, 254), seq(2, 76)...) {
		if used[x] {
			continue
		}
		mine := &net.IPNet{IP: net.IPv4(10, byte(x), 0, 0).To4(), Mask: net.CIDRMask(24, 32)}
		free := true
		for _, n := range nets {
			if ones, _ := n.Mask.Size(); ones < 16 {
				// A wide route (10.0.0.0/8 of a cluster network) loses to
				// the bridge's more specific /24 and does not collide.
				continue
			}
			if n.Contains(mine.IP) || mine.Contains(n.IP) {
				free = false
				break
			}
		}
		if free {
			return x, nil
		}
	}
	return 0, errors.New("nethosts: no free subnet 10.X.0.0/24")
}

// routeTypes are the words `ip route` may print before a destination.
var routeTypes = map[string]bool{
	"unicast": true, "local": true, "broadcast": true, "multicast": true, "anycast": true,
	"unreachable": true, "blackhole": true, "prohibit": true, "throw": true, "nat": true,
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}
