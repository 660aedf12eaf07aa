package nethosts

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// CleanupOnSignal makes SIGINT and SIGTERM remove every set this process
// made (DownAll) before the process dies of the signal, as it would have
// without the handler. A TestMain calls it first and stop before exiting:
//
//	func TestMain(m *testing.M) {
//		stop := nethosts.CleanupOnSignal()
//		code := m.Run()
//		stop()
//		os.Exit(code)
//	}
//
// Neither it nor t.Cleanup runs when go test's -timeout panics or the
// process is SIGKILLed; the next Up on the machine removes those sets.
func CleanupOnSignal() (stop func()) {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-ch:
			if err := DownAll(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
			signal.Reset(sig)
			s := sig.(syscall.Signal)
			_ = syscall.Kill(os.Getpid(), s)
			// The signal's default action ends the process; should it be
			// blocked somewhere, exit as a shell reports a signal death.
			time.Sleep(time.Second)
			os.Exit(128 + int(s))
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
		if err := DownAll(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}
