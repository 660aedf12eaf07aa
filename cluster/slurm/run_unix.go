//go:build unix

package slurm

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts cmd in a process group of its own: the terminal's
// SIGINT goes to the foreground group, not to it.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
