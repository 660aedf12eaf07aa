//go:build !linux

package integration_test

import "syscall"

func workerProcAttr() *syscall.SysProcAttr { return nil }
