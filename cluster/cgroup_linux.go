package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Where cgroup v2 is mounted and this process may create cgroups under its
// own, each run gets a cgroup of its own, entered at fork
// (CLONE_INTO_CGROUP, so not even the trainer's first instruction runs
// outside it) and ended with cgroup.kill, which kills every member at
// once, forks in flight included, whatever its session or environment.
// Everywhere else the launcher falls back, silently, to the run token
// (sweep_linux.go).

// runCgroupPrefix starts the name of every run cgroup:
// "gleaner-<trial key>-<random>", the run token after the prefix.
const runCgroupPrefix = "gleaner-"

// cgroupHome is this process's own cgroup v2, under which run cgroups are
// created. The zero value means none: runs are tracked by token only.
type cgroupHome struct {
	dir string // in the file system
	rel string // as /proc/PID/cgroup names it
}

// runCgroup is one run's cgroup; the zero value means the run has none.
type runCgroup cgroupHome

// probeCgroups returns the home for run cgroups, or the zero value when
// cgroup v2 is not mounted, has no cgroup.kill (Linux < 5.14), or will
// not let this process create a cgroup under its own.
func probeCgroups() cgroupHome {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return cgroupHome{}
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroupHome{}
	}
	h, ok := findCgroup2(mountinfo, self)
	if !ok {
		return cgroupHome{}
	}
	probe := filepath.Join(h.dir, runCgroupPrefix+"probe-"+newRunToken(trialKey(h.dir)))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return cgroupHome{}
	}
	_, err = os.Stat(filepath.Join(probe, "cgroup.kill")) // the root cgroup has none
	if rmErr := syscall.Rmdir(probe); err != nil || rmErr != nil {
		return cgroupHome{}
	}
	return h
}

// findCgroup2 returns the directory of this process's cgroup v2, given
// its /proc/self/mountinfo and /proc/self/cgroup; both pure v2 and
// hybrid (v2 at /sys/fs/cgroup/unified) layouts qualify, and a mount of
// a subtree (a container without a cgroup namespace) is mapped through
// its root.
func findCgroup2(mountinfo, selfCgroup []byte) (cgroupHome, bool) {
	rel := ""
	for _, line := range strings.Split(string(selfCgroup), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
			break
		}
	}
	if !strings.HasPrefix(rel, "/") {
		return cgroupHome{}, false
	}
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) || f[sep+1] != "cgroup2" {
			continue
		}
		root, mnt := unescapeMountinfo(f[3]), unescapeMountinfo(f[4])
		switch {
		case root == "/":
			return cgroupHome{dir: filepath.Join(mnt, rel), rel: rel}, true
		case rel == root || strings.HasPrefix(rel, root+"/"):
			return cgroupHome{dir: filepath.Join(mnt, strings.TrimPrefix(rel, root)), rel: rel}, true
		}
	}
	return cgroupHome{}, false
}

// unescapeMountinfo undoes the octal escapes (\040 for a space, ...) of a
// mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// create makes the cgroup of the run with token and opens it for
// CLONE_INTO_CGROUP; the caller closes fd once the trainer has started.
func (h cgroupHome) create(token string) (runCgroup, int, error) {
	name := runCgroupPrefix + token
	c := runCgroup{dir: filepath.Join(h.dir, name), rel: path.Join(h.rel, name)}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		return runCgroup{}, -1, err
	}
	fd, err := syscall.Open(c.dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = syscall.Rmdir(c.dir)
		return runCgroup{}, -1, err
	}
	return c, fd, nil
}

// leftovers removes the cgroups of earlier runs of the trial with key,
// killing what is left in them. It returns the pids killed.
func (h cgroupHome) leftovers(key string, deadline time.Time) ([]int, error) {
	d, err := os.Open(h.dir)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var killed []int
	var errs []error
	for _, name := range names {
		if token, ok := strings.CutPrefix(name, runCgroupPrefix+key+"-"); ok {
			c := runCgroup{dir: filepath.Join(h.dir, name), rel: path.Join(h.rel, name)}
			pids, err := c.remove(deadline)
			killed = append(killed, pids...)
			if err != nil {
				errs = append(errs, fmt.Errorf("run %s: %w", token, err))
			}
		}
	}
	return killed, errors.Join(errs...)
}

// pruneEmpty removes the run cgroups under h that no process is in: those
// of runs whose worker died, which nothing else would remove until their
// trial is launched here again. rmdir fails on a populated cgroup, so a
// live run's is left alone. A cgroup another launcher has just created
// and not yet started its trainer in may go too; that launch then runs
// without one, tracked by its token.
func (h cgroupHome) pruneEmpty() {
	d, err := os.Open(h.dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		if isRunCgroup(name) {
			_ = syscall.Rmdir(filepath.Join(h.dir, name)) // EBUSY: in use
		}
	}
}

// isRunCgroup reports whether name is that of a run cgroup,
// runCgroupPrefix and a run token.
func isRunCgroup(name string) bool {
	token, ok := strings.CutPrefix(name, runCgroupPrefix)
	key, random, ok2 := strings.Cut(token, "-")
	return ok && ok2 && isHex(key, 12) && isHex(random, 16)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// procs lists the processes in the cgroup.
func (c runCgroup) procs() []int {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// holds reports whether pid is in the cgroup.
func (c runCgroup) holds(pid int) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p == c.rel
		}
	}
	return false
}

// kill SIGKILLs every process in the cgroup.
func (c runCgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// remove kills the cgroup's processes, waits until it is empty, and
// removes it. It returns the pids it found there.
func (c runCgroup) remove(deadline time.Time) ([]int, error) {
	pids := c.procs()
	if err := c.kill(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // removed already
		}
		return pids, fmt.Errorf("cgroup %s: %w", c.dir, err)
	}
	if !c.waitEmpty(deadline) {
		return pids, fmt.Errorf("cgroup %s: processes %v %w", c.dir, c.procs(), errStillAlive)
	}
	if err := syscall.Rmdir(c.dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		return pids, fmt.Errorf("cgroup %s: %w", c.dir, err)
	}
	return pids, nil
}

var errStillAlive = errors.New("still alive after SIGKILL")

// waitEmpty waits until the cgroup has no live process or deadline
// passes. cgroup.events signals a change of "populated" to poll(2) as
// POLLPRI; the poll is capped in case a change slips between read and
// poll.
func (c runCgroup) waitEmpty(deadline time.Time) bool {
	for {
		f, err := os.Open(filepath.Join(c.dir, "cgroup.events"))
		if err != nil {
			return errors.Is(err, os.ErrNotExist)
		}
		b := make([]byte, 256)
		n, _ := f.Read(b)
		if bytes.Contains(b[:n], []byte("populated 0")) {
			f.Close()
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			f.Close()
			return false
		}
		_ = ppoll([]pollFd{{fd: int32(f.Fd()), events: pollPri}}, min(left, 50*time.Millisecond))
		f.Close()
	}
}
