package etcdtest

import "syscall"

// dataDirSysProcAttr has Linux kill a DataDirMember's process when the
// test binary dies (a panic, go test's -timeout), so no etcd outlives its
// test.
func dataDirSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
