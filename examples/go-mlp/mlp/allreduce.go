package mlp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"time"
)

// hostGroup joins the trainer processes of a run on several hosts, one
// process per host, in a star around host rank 0 (the master): rank 0
// listens on GLEANER_MASTER_PORT, every other rank connects to it. An
// all-reduce is a gather to rank 0, a sum there in rank order (so every
// host gets the same bits, run after run), and a broadcast of the sum.
//
// On the wire every message is a frame: a big-endian uint32 count n, then
// n little-endian IEEE 754 float64s. Joining is a hello frame from each
// rank, {helloMagic, rank, size}, answered by rank 0 with {size} once all
// have joined. Every read and write has a deadline, so a peer that died or
// hangs fails the run instead of stalling it; errors name the peer.
type hostGroup struct {
	rank    int
	conns   []*peerConn // rank 0: conns[r] is rank r (conns[0] nil); other ranks: conns[0] is rank 0
	timeout time.Duration
	recv    []float64
}

type peerConn struct {
	rank int
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	buf  []byte
}

// helloMagic opens a hello, so a stray connection is told apart from a
// trainer of another kind or version.
const helloMagic = 0x676c6e72 // "glnr"

// maxFrame bounds a frame's count: a garbage length fails, it does not
// allocate gigabytes. The largest network (hidden 4096) has under 30 000
// weights; an architecture's at most maxWeights.
const maxFrame = 1 << 24

var errStopped = errors.New("stopped before every host joined")

func (p *peerConn) String() string {
	return fmt.Sprintf("host rank %d (%s)", p.rank, p.conn.RemoteAddr())
}

func newPeerConn(rank int, c net.Conn) *peerConn {
	return &peerConn{rank: rank, conn: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}
}

func (p *peerConn) writeFrame(v []float64) error {
	p.buf = binary.BigEndian.AppendUint32(p.buf[:0], uint32(len(v)))
	for _, x := range v {
		p.buf = binary.LittleEndian.AppendUint64(p.buf, math.Float64bits(x))
	}
	if _, err := p.w.Write(p.buf); err != nil {
		return err
	}
	return p.w.Flush()
}

// readFrame reads a frame into dst, which it grows as needed.
func (p *peerConn) readFrame(dst []float64) ([]float64, error) {
	var head [4]byte
	if _, err := io.ReadFull(p.r, head[:]); err != nil {
		return dst, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > maxFrame {
		return dst, fmt.Errorf("frame of %d values, more than %d: not a go-mlp peer?", n, maxFrame)
	}
	if cap(p.buf) < 8*int(n) {
		p.buf = make([]byte, 8*int(n))
	}
	b := p.buf[:8*int(n)]
	if _, err := io.ReadFull(p.r, b); err != nil {
		return dst, unexpectedEOF(err)
	}
	dst = dst[:0]
	for i := range int(n) {
		dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return dst, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// explain turns a deadline into words a person can act on.
func explain(err error, timeout time.Duration) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("no answer within %v (the host died, hangs, or cannot reach this one): %w", timeout, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("connection closed (the trainer there exited): %w", err)
	}
	return err
}

// stopWatch cuts short whatever waits on the listener and connections it
// was given once stop is closed, until done is called.
type stopWatch struct {
	mu      sync.Mutex
	stopped bool
	waits   []interface{ SetDeadline(time.Time) error }
	quit    chan struct{}
}

func watchStop(stop <-chan struct{}) *stopWatch {
	w := &stopWatch{quit: make(chan struct{})}
	go func() {
		select {
		case <-stop:
			w.mu.Lock()
			w.stopped = true
			for _, x := range w.waits {
				x.SetDeadline(time.Unix(1, 0)) // in the past: pending I/O returns now
			}
			w.mu.Unlock()
		case <-w.quit:
		}
	}()
	return w
}

// add registers x and sets its deadline (at once in the past if stopped).
func (w *stopWatch) add(x interface{ SetDeadline(time.Time) error }, deadline time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		deadline = time.Unix(1, 0)
	}
	x.SetDeadline(deadline)
	w.waits = append(w.waits, x)
}

func (w *stopWatch) wasStopped() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopped
}

func (w *stopWatch) done() { close(w.quit) }

// serveGroup is rank 0's side of joining: it accepts size-1 peers on l
// within join, then every collective has timeout to complete. Closing
// stop abandons the join with errStopped. The caller closes l.
func serveGroup(l net.Listener, size int, join, timeout time.Duration, stop <-chan struct{}) (_ *hostGroup, err error) {
	g := &hostGroup{rank: 0, conns: make([]*peerConn, size), timeout: timeout}
	deadline := time.Now().Add(join)
	watch := watchStop(stop)
	defer watch.done()
	defer func() {
		if err != nil {
			g.close()
			if watch.wasStopped() {
				err = errStopped
			}
		}
	}()
	dl, ok := l.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return nil, fmt.Errorf("listener %T has no deadline", l)
	}
	watch.add(dl, deadline)
	defer dl.SetDeadline(time.Time{})
	for joined := 1; joined < size; {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("waiting on %s for the other hosts: %d of %d joined within %v", l.Addr(), joined, size, join)
			}
			return nil, fmt.Errorf("waiting on %s for the other hosts: %w", l.Addr(), err)
		}
		watch.add(c, deadline)
		p := newPeerConn(-1, c)
		hello, err := p.readFrame(nil)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("hello from %s: %w", c.RemoteAddr(), explain(unexpectedEOF(err), join))
		}
		if len(hello) != 3 || hello[0] != helloMagic {
			c.Close()
			return nil, fmt.Errorf("hello from %s: %v is not a go-mlp hello", c.RemoteAddr(), hello)
		}
		rank, theirSize := int(hello[1]), int(hello[2])
		switch {
		case float64(rank) != hello[1] || rank < 1 || rank >= size:
			err = fmt.Errorf("hello from %s: rank %v, want 1..%d", c.RemoteAddr(), hello[1], size-1)
		case float64(theirSize) != hello[2] || theirSize != size:
			err = fmt.Errorf("hello from %s (rank %d): %v hosts, this host has %d", c.RemoteAddr(), rank, hello[2], size)
		case g.conns[rank] != nil:
			err = fmt.Errorf("hello from %s: rank %d already joined from %s", c.RemoteAddr(), rank, g.conns[rank].conn.RemoteAddr())
		}
		if err != nil {
			c.Close()
			return nil, err
		}
		p.rank = rank
		g.conns[rank] = p
		joined++
	}
	for _, p := range g.conns[1:] {
		if err := p.writeFrame([]float64{float64(size)}); err != nil {
			return nil, fmt.Errorf("welcoming %s: %w", p, explain(err, join))
		}
	}
	for _, p := range g.conns[1:] {
		p.conn.SetDeadline(time.Time{})
	}
	return g, nil
}

// dialGroup is the side of every rank but 0: it connects to rank 0 at
// master, retrying while rank 0 is not listening yet, and waits for every
// host to join, within join; then every collective has timeout to
// complete. Closing stop abandons the join with errStopped.
func dialGroup(master string, rank, size int, join, timeout time.Duration, stop <-chan struct{}) (_ *hostGroup, err error) {
	deadline := time.Now().Add(join)
	var c net.Conn
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		d := net.Dialer{Deadline: deadline}
		if c, err = d.Dial("tcp", master); err == nil {
			break
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("connecting to host rank 0 at %s: no answer within %v: %w", master, join, err)
		}
		select { // rank 0 may not listen yet: try again
		case <-stop:
			return nil, errStopped
		case <-time.After(wait):
		}
	}
	watch := watchStop(stop)
	defer watch.done()
	watch.add(c, deadline)
	p := newPeerConn(0, c)
	g := &hostGroup{rank: rank, conns: []*peerConn{p}, timeout: timeout}
	if err := p.writeFrame([]float64{helloMagic, float64(rank), float64(size)}); err != nil {
		g.close()
		if watch.wasStopped() {
			return nil, errStopped
		}
		return nil, fmt.Errorf("joining %s: %w", p, explain(err, join))
	}
	ack, err := p.readFrame(nil)
	if err == nil && (len(ack) != 1 || ack[0] != float64(size)) {
		err = fmt.Errorf("welcome %v, want [%d]", ack, size)
	}
	if err != nil {
		g.close()
		if watch.wasStopped() {
			return nil, errStopped
		}
		return nil, fmt.Errorf("joining %s: %w (it refuses a peer it cannot place: see its log)", p, explain(err, join))
	}
	c.SetDeadline(time.Time{})
	return g, nil
}

// allReduce replaces v, on every host, by the sum over the hosts of their
// v, added in rank order. Every host must pass a vector of the same length.
func (g *hostGroup) allReduce(v []float64) error {
	if g.rank != 0 {
		// Rank 0 waits on every host for up to timeout; wait longer here,
		// so the error comes from rank 0, naming the host at fault, and
		// reaches this one as rank 0's exit.
		p := g.conns[0]
		p.conn.SetDeadline(time.Now().Add(2 * g.timeout))
		if err := p.writeFrame(v); err != nil {
			return fmt.Errorf("all-reduce: sending to %s: %w", p, explain(err, 2*g.timeout))
		}
		var err error
		if g.recv, err = p.readFrame(g.recv); err != nil {
			return fmt.Errorf("all-reduce: receiving from %s: %w", p, explain(unexpectedEOF(err), 2*g.timeout))
		}
		if len(g.recv) != len(v) {
			return fmt.Errorf("all-reduce: %s sent %d values, want %d", p, len(g.recv), len(v))
		}
		copy(v, g.recv)
		return nil
	}
	deadline := time.Now().Add(g.timeout)
	for _, p := range g.conns[1:] {
		p.conn.SetDeadline(deadline)
		var err error
		if g.recv, err = p.readFrame(g.recv); err != nil {
			return fmt.Errorf("all-reduce: receiving from %s: %w", p, explain(unexpectedEOF(err), g.timeout))
		}
		if len(g.recv) != len(v) {
			return fmt.Errorf("all-reduce: %s sent %d values, want %d", p, len(g.recv), len(v))
		}
		for i, x := range g.recv {
			v[i] += x
		}
	}
	for _, p := range g.conns[1:] {
		if err := p.writeFrame(v); err != nil {
			return fmt.Errorf("all-reduce: sending to %s: %w", p, explain(err, g.timeout))
		}
	}
	return nil
}

// close closes every connection.
func (g *hostGroup) close() {
	for _, p := range g.conns {
		if p != nil {
			p.conn.Close()
		}
	}
}
