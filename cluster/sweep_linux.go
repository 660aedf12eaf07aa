package cluster

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/gleaner-hpc/gleaner/trial"
)

// A trainer's processes are found three ways, because each alone misses
// some: its process group (a child that calls setsid leaves it), its
// cgroup where cgroup v2 is writable (see cgroup_linux.go; a process can
// leave it only with write access elsewhere in the hierarchy), and its
// run token, an environment variable every descendant inherits unless it
// clears its environment. This file is the third: a scan of /proc.

// procRoot is the process table; the scan's tests use a fake one.
const procRoot = "/proc"

// sweepTimeout bounds each wait for killed processes to be gone: a
// process in uninterruptible sleep (a hung file system, a GPU driver)
// may take that long to die, or longer.
const sweepTimeout = 10 * time.Second

// newRunToken returns a token unique to one launch: the trial key, a
// dash, and 64 random bits in hex.
func newRunToken(key string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	return key + "-" + hex.EncodeToString(b[:])
}

// trialKey is the key of the trial with checkpoint directory dir among
// this launcher's runs: a host with a prefix (an agent) keys its runs by
// prefix too, so the ranks other agents on the same machine run for the
// same trial are not its leftovers.
func (l *LocalLauncher) trialKey(dir string) string {
	if l.host.Prefix == "" {
		return trialKey(dir)
	}
	return trialKey(l.host.Prefix + "\x00" + dir)
}

// trialKey names a trial by its absolute checkpoint directory, stable
// across runs and short enough for a cgroup name.
func trialKey(checkpointDir string) string {
	sum := sha256.Sum256([]byte(checkpointDir))
	return hex.EncodeToString(sum[:6])
}

// envMatch selects processes by the environment they were exec'd with,
// a NUL-separated NAME=value block (/proc/PID/environ).
type envMatch func(environ []byte) bool

// runMatch selects the processes of one run.
func runMatch(token string) envMatch {
	needle := []byte(EnvRunToken + "=" + token)
	return func(environ []byte) bool {
		if !bytes.Contains(environ, needle) {
			return false // the common case, without splitting
		}
		v, ok := environValue(environ, EnvRunToken)
		return ok && v == token
	}
}

// leftoverMatch selects the processes of every run a launcher started
// for the trial whose absolute checkpoint directory is dir, with trial
// key key (the run token's first part). The run token must be present,
// so that a shell where someone exported GLEANER_CHECKPOINT_DIR by hand
// is never taken for a trainer.
func leftoverMatch(dir, key string) envMatch {
	needle := []byte(trial.EnvCheckpointDir + "=" + dir)
	return func(environ []byte) bool {
		if !bytes.Contains(environ, needle) {
			return false
		}
		token, ok := environValue(environ, EnvRunToken)
		v, _ := environValue(environ, trial.EnvCheckpointDir)
		return ok && strings.HasPrefix(token, key+"-") && v == dir
	}
}

// environValue returns the value of the first entry for name, as getenv
// would.
func environValue(environ []byte, name string) (string, bool) {
	for len(environ) > 0 {
		entry := environ
		if i := bytes.IndexByte(environ, 0); i >= 0 {
			entry, environ = environ[:i], environ[i+1:]
		} else {
			environ = nil
		}
		if len(entry) > len(name) && entry[len(name)] == '=' && string(entry[:len(name)]) == name {
			return string(entry[len(name)+1:]), true
		}
	}
	return "", false
}

// liveLeaders are the trainers this process launched and has not reaped,
// whatever the launcher: each such pid is that trainer (an unreaped
// child's pid is never reused) and carries its own run token only, so a
// scan for another run's token skips it unread (scanRunProcs). With one
// trainer per node of a full host, that is a third or more of the scan.
var liveLeaders sync.Map // pid (int) → struct{}

// scanRunProcs is scanProcs for a run token's match: the processes of one
// run, where the run's own leader is the only trainer leader that could
// match (and, exited, is a zombie that does not).
func scanRunProcs(root string, match envMatch, leader int) []int {
	return scanProcsSkipping(root, match, func(pid int) bool {
		_, live := liveLeaders.Load(pid)
		return live && pid != leader
	})
}

// scanProcs lists the processes under root (a procfs) whose environment
// matches, in directory order. It skips this process and every process
// whose environment cannot be read: gone since the listing, another
// user's, or a kernel thread or zombie (an empty environment).
func scanProcs(root string, match envMatch) []int {
	return scanProcsSkipping(root, match, nil)
}

// scanProcsSkipping is scanProcs that does not read the processes skip
// names (nil: none).
func scanProcsSkipping(root string, match envMatch, skip func(pid int) bool) []int {
	d, err := os.Open(root)
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	self := os.Getpid()
	var pids []int
	var buf []byte
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 || pid == self || skip != nil && skip(pid) {
			continue
		}
		if buf, err = readFileInto(filepath.Join(root, name, "environ"), buf); err == nil && match(buf) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readFileInto reads path into buf's storage, growing it as needed
// (procfs files have no size to preallocate from), with plain system
// calls: a scan reads one file per process.
func readFileInto(path string, buf []byte) ([]byte, error) {
	buf = buf[:0]
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return buf, err
	}
	defer syscall.Close(fd)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return buf, err
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// environMatches reports whether the environment of pid matches.
func environMatches(pid int, match envMatch) bool {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "environ"))
	return err == nil && match(b)
}

// processGroup returns the process group of pid, from /proc.
func processGroup(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 3 {
		return 0, false
	}
	pgid, err := strconv.Atoi(f[2])
	return pgid, err == nil
}

// signalProcs sends sig to each of pids that still passes verify once a
// pidfd pins it: a pid that was reused since it was listed is either
// rejected by verify or names a process that has exited, which the pidfd
// cannot signal. It returns the pidfds of the processes signalled, for
// waitPidfds, and their pids.
func signalProcs(pids []int, verify func(pid int) bool, sig syscall.Signal) (fds, signalled []int) {
	for _, pid := range pids {
		fd, err := pidfdOpen(pid)
		if err != nil {
			continue // gone
		}
		if verify(pid) && pidfdSignal(fd, sig) == nil {
			fds = append(fds, fd)
			signalled = append(signalled, pid)
			continue
		}
		syscall.Close(fd)
	}
	return fds, signalled
}

// sweep SIGKILLs every process find lists that verify accepts, waits for
// them to be gone, and scans again until find lists none that verify
// accepts (a process forked between a scan and the kill is found by the
// next scan) or deadline passes. It returns every pid killed and those
// still alive at deadline.
func sweep(find func() []int, verify func(pid int) bool, deadline time.Time) (killed, alive []int) {
	for {
		fds, pids := signalProcs(find(), verify, syscall.SIGKILL)
		if len(fds) == 0 {
			return killed, nil
		}
		killed = append(killed, pids...)
		alive = waitPidfds(fds, pids, deadline)
		for _, fd := range fds {
			syscall.Close(fd)
		}
		if len(alive) > 0 || !time.Now().Before(deadline) {
			return killed, alive
		}
	}
}

// Raw system calls the syscall package does not wrap; their numbers are
// the same on every architecture.
const (
	sysPidfdSendSignal = 424 // Linux 5.1
	sysPidfdOpen       = 434 // Linux 5.3
	pollIn             = 0x1
	pollPri            = 0x2
)

// pidfdOpen returns a close-on-exec pidfd of pid.
func pidfdOpen(pid int) (int, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func pidfdSignal(fd int, sig syscall.Signal) error {
	_, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(fd), uintptr(sig), 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// pollFd is struct pollfd.
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// ppoll waits up to d for an event on fds; EINTR counts as a timeout.
func ppoll(fds []pollFd, d time.Duration) error {
	ts := syscall.NsecToTimespec(max(int64(d), 0))
	_, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
		uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if errno != 0 && errno != syscall.EINTR {
		return errno
	}
	return nil
}

// waitPidfds waits until every process of fds (pidfds, of pids) has exited
// or deadline passes, and returns the pids still alive. A pidfd becomes
// readable when its process exits, whoever its parent is.
func waitPidfds(fds, pids []int, deadline time.Time) []int {
	poll := make([]pollFd, len(fds))
	for i, fd := range fds {
		poll[i] = pollFd{fd: int32(fd), events: pollIn}
	}
	pids = append([]int(nil), pids...)
	for len(poll) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if err := ppoll(poll, left); err != nil {
			break
		}
		n := 0
		for i, p := range poll {
			if p.revents == 0 {
				poll[n], pids[n] = pollFd{fd: p.fd, events: p.events}, pids[i]
				n++
			}
		}
		poll, pids = poll[:n], pids[:n]
	}
	return pids
}
