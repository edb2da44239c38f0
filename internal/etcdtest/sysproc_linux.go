package etcdtest

import "syscall"

// sysProcAttr has Linux kill a member when the test binary dies (a panic,
// go test's -timeout), so no etcd outlives its test. Linux sends the
// signal when the thread that started the child exits; Go keeps its
// threads unless a goroutine exits while locked to one, which nothing
// here does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
