//go:build !linux

package etcdtest

import "syscall"

// dataDirSysProcAttr: only Linux can tie the child's life to ours.
func dataDirSysProcAttr() *syscall.SysProcAttr { return nil }
