//go:build !linux

package etcdtest

import "syscall"

// sysProcAttr: outside Linux a member that outlives a crashed test binary
// is not killed for it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
