package trial

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

var (
	stopOnce sync.Once
	stopCh   = make(chan struct{})
)

// Stopping returns a channel that is closed when the process receives
// SIGTERM (Gleaner's stop request, sent to the whole process group) or
// SIGINT. The first call installs the handler, so call it before training
// starts; from then on those signals no longer kill the process, and the
// training loop must notice the channel, checkpoint, report the
// checkpoint, and exit 0 within the grace period:
//
//	stop := trial.Stopping()
//	for step := ...; ; step++ {
//		select {
//		case <-stop:
//			path, _ := env.SaveCheckpoint(...)
//			rep.Report(trial.Report{Step: step, Checkpoint: path})
//			os.Exit(0)
//		default:
//		}
//		...
//	}
func Stopping() <-chan struct{} {
	stopOnce.Do(func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
		go func() {
			<-sigs
			close(stopCh)
		}()
	})
	return stopCh
}

// StopRequested reports, without blocking, whether a stop signal has
// arrived. It installs the handler on first use, like Stopping.
func StopRequested() bool {
	select {
	case <-Stopping():
		return true
	default:
		return false
	}
}
