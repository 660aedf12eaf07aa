//go:build !linux

package nethosts

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
