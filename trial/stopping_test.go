package trial

import (
	"syscall"
	"testing"
	"time"
)

func TestStoppingClosesOnSIGTERM(t *testing.T) {
	stop := Stopping()
	if StopRequested() {
		t.Fatal("stop requested before any signal")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stop:
	case <-time.After(5 * time.Second):
		t.Fatal("Stopping not closed 5s after SIGTERM")
	}
	if !StopRequested() || Stopping() != stop {
		t.Error("stop state not sticky")
	}
}
