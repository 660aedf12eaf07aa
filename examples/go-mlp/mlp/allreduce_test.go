package mlp

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// joinLoopback joins size hosts over loopback, one goroutine each, and
// returns their groups by rank.
func joinLoopback(t *testing.T, size int, timeout time.Duration) []*hostGroup {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	groups := make([]*hostGroup, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r == 0 {
				groups[r], errs[r] = serveGroup(l, size, timeout, timeout, nil)
			} else {
				groups[r], errs[r] = dialGroup(l.Addr().String(), r, size, timeout, timeout, nil)
			}
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		for _, g := range groups {
			g.close()
		}
	})
	return groups
}

// eachHost runs f for every rank at once and returns their errors.
func eachHost(groups []*hostGroup, f func(r int, g *hostGroup) error) []error {
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for r, g := range groups {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(r, g) }()
	}
	wg.Wait()
	return errs
}

func TestAllReduceSumsInRankOrder(t *testing.T) {
	groups := joinLoopback(t, 3, 5*time.Second)
	// Values whose sum depends on the order of addition.
	input := func(r, round int) []float64 {
		return []float64{[]float64{1e16, 1, -1e16}[r], float64(r + round), math.Pi * float64(r+1), -0.1 * float64(round)}
	}
	for round := range 4 {
		got := make([][]float64, 3)
		errs := eachHost(groups, func(r int, g *hostGroup) error {
			got[r] = input(r, round)
			return g.allReduce(got[r])
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("round %d, rank %d: %v", round, r, err)
			}
		}
		want := input(0, round)
		for r := 1; r < 3; r++ {
			for i, v := range input(r, round) {
				want[i] += v
			}
		}
		for r := range 3 {
			for i := range want {
				if math.Float64bits(got[r][i]) != math.Float64bits(want[i]) {
					t.Errorf("round %d, rank %d: %v, want %v (bit for bit)", round, r, got[r], want)
					break
				}
			}
		}
	}
	// A one-element barrier works between vectors of other lengths.
	if errs := eachHost(groups, func(_ int, g *hostGroup) error { return g.allReduce([]float64{1}) }); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
}

func TestAllReduceFailsOnADeadPeer(t *testing.T) {
	groups := joinLoopback(t, 3, 5*time.Second)
	groups[2].close() // rank 2's trainer died
	errs := eachHost(groups[:2], func(r int, g *hostGroup) error {
		err := g.allReduce([]float64{1, 2})
		if r == 0 {
			g.close() // as its trainer exits on the error
		}
		return err
	})
	if err := errs[0]; err == nil || !strings.Contains(err.Error(), "host rank 2") || !strings.Contains(err.Error(), "connection closed") {
		t.Errorf("rank 0: %v, want an error naming host rank 2", err)
	}
	if err := errs[1]; err == nil || !strings.Contains(err.Error(), "host rank 0") {
		t.Errorf("rank 1: %v, want an error naming host rank 0", err)
	}
}

func TestAllReduceTimesOutOnAHungPeer(t *testing.T) {
	groups := joinLoopback(t, 3, 300*time.Millisecond)
	// Rank 2 never takes part; ranks 0 and 1 must not wait forever.
	errs := eachHost(groups[:2], func(r int, g *hostGroup) error {
		err := g.allReduce([]float64{1})
		if r == 0 {
			g.close() // as its trainer exits on the error
		}
		return err
	})
	if err := errs[0]; err == nil || !strings.Contains(err.Error(), "host rank 2") || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("rank 0: %v, want a timeout naming host rank 2", err)
	}
	// Rank 1 waits longer than rank 0, so it hears of rank 0's exit.
	if err := errs[1]; err == nil || !strings.Contains(err.Error(), "host rank 0") || !strings.Contains(err.Error(), "connection closed") {
		t.Errorf("rank 1: %v, want rank 0's exit", err)
	}
}

func TestAllReduceRejectsAMismatchedVector(t *testing.T) {
	groups := joinLoopback(t, 2, 5*time.Second)
	errs := eachHost(groups, func(r int, g *hostGroup) error {
		err := g.allReduce(make([]float64, 2+r))
		g.close()
		return err
	})
	if err := errs[0]; err == nil || !strings.Contains(err.Error(), "host rank 1") || !strings.Contains(err.Error(), "sent 3 values, want 2") {
		t.Errorf("rank 0: %v", err)
	}
	if errs[1] == nil {
		t.Error("rank 1: no error")
	}
}

func TestJoinErrors(t *testing.T) {
	listen := func(t *testing.T) net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	join := func(l net.Listener, size int, dial func(addr string) error) (serveErr, dialErr error) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			var g *hostGroup
			if g, serveErr = serveGroup(l, size, 2*time.Second, 2*time.Second, nil); g != nil {
				g.close()
			}
		}()
		dialErr = dial(l.Addr().String())
		<-done
		return serveErr, dialErr
	}
	dialAs := func(rank, size int) func(string) error {
		return func(addr string) error {
			g, err := dialGroup(addr, rank, size, 2*time.Second, 2*time.Second, nil)
			if g != nil {
				g.close()
			}
			return err
		}
	}

	t.Run("rank out of range", func(t *testing.T) {
		serveErr, dialErr := join(listen(t), 2, dialAs(2, 2))
		if serveErr == nil || !strings.Contains(serveErr.Error(), "rank 2, want 1..1") {
			t.Errorf("serve: %v", serveErr)
		}
		if dialErr == nil || !strings.Contains(dialErr.Error(), "host rank 0") {
			t.Errorf("dial: %v", dialErr)
		}
	})
	t.Run("host counts differ", func(t *testing.T) {
		serveErr, _ := join(listen(t), 2, dialAs(1, 3))
		if serveErr == nil || !strings.Contains(serveErr.Error(), "(rank 1): 3 hosts, this host has 2") {
			t.Errorf("serve: %v", serveErr)
		}
	})
	t.Run("rank twice", func(t *testing.T) {
		serveErr, _ := join(listen(t), 3, func(addr string) error {
			errs := make(chan error, 2)
			for range 2 {
				go func() { errs <- dialAs(1, 3)(addr) }()
			}
			return errors.Join(<-errs, <-errs)
		})
		if serveErr == nil || !strings.Contains(serveErr.Error(), "rank 1 already joined") {
			t.Errorf("serve: %v", serveErr)
		}
	})
	t.Run("a stranger", func(t *testing.T) {
		serveErr, _ := join(listen(t), 2, func(addr string) error {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return err
			}
			defer c.Close()
			fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
			buf := make([]byte, 1)
			c.Read(buf) // until rank 0 hangs up
			return nil
		})
		if serveErr == nil || !strings.Contains(serveErr.Error(), "hello from 127.0.0.1:") {
			t.Errorf("serve: %v", serveErr)
		}
	})
	t.Run("nobody listening", func(t *testing.T) {
		l := listen(t)
		addr := l.Addr().String()
		l.Close()
		_, err := dialGroup(addr, 1, 2, 300*time.Millisecond, time.Minute, nil)
		if err == nil || !strings.Contains(err.Error(), "connecting to host rank 0 at "+addr) {
			t.Errorf("dial: %v", err)
		}
	})
	t.Run("nobody comes", func(t *testing.T) {
		_, err := serveGroup(listen(t), 3, 300*time.Millisecond, time.Minute, nil)
		if err == nil || !strings.Contains(err.Error(), "1 of 3 joined within 300ms") {
			t.Errorf("serve: %v", err)
		}
	})
	t.Run("stopped while waiting", func(t *testing.T) {
		stop := make(chan struct{})
		close(stop)
		if _, err := serveGroup(listen(t), 2, time.Minute, time.Minute, stop); !errors.Is(err, errStopped) {
			t.Errorf("serve: %v, want errStopped", err)
		}
		l := listen(t)
		addr := l.Addr().String()
		l.Close()
		if _, err := dialGroup(addr, 1, 2, time.Minute, time.Minute, stop); !errors.Is(err, errStopped) {
			t.Errorf("dial: %v, want errStopped", err)
		}
	})
}

// Three hosts holding nodes {0,1}, {2} and {3} of four take the same steps
// as one host with four nodes: the same shards, summed in the same order,
// so bit for bit the same weights.
func TestHostsTrainLikeOneHost(t *testing.T) {
	checkHostsTrainLikeOne(t, mlp{in: 2, hidden: 8, classes: 3}, 4, []nodeSpan{{4, 0, 2}, {4, 2, 1}, {4, 3, 1}})
}

// checkHostsTrainLikeOne trains m for 5 steps on one host with all nodes
// and on hosts holding spans of them, and requires the same losses and
// weights, bit for bit.
func checkHostsTrainLikeOne(t *testing.T, m mlp, nodes int, spans []nodeSpan) {
	t.Helper()
	data := spiral(3, 100, 0.2, 1)
	one := newTrainer(m, data, 0.1, 0.9, 30, allNodes(nodes), 5)
	hosts := make([]*trainer, len(spans))
	for r, s := range spans {
		hosts[r] = newTrainer(m, data, 0.1, 0.9, 30, s, 5)
	}
	groups := joinLoopback(t, len(spans), 5*time.Second)
	for step := range 5 {
		want, _ := one.step(nil)
		losses := make([]float64, len(hosts))
		errs := eachHost(groups, func(r int, g *hostGroup) (err error) {
			losses[r], err = hosts[r].step(g.allReduce)
			return err
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for r, l := range losses {
			if l != want {
				t.Fatalf("step %d: host %d's loss %v, one host's %v", step, r, l, want)
			}
		}
	}
	for r, h := range hosts {
		for i := range one.weights {
			if h.weights[i] != one.weights[i] {
				t.Fatalf("host %d, weight %d: %v, one host's %v", r, i, h.weights[i], one.weights[i])
			}
		}
	}
}
