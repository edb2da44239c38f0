package etcdtest

// A single etcd process on a data directory that exists already: a
// cluster's etcd data kept from another run (an upgrade fixture),
// started again on free ports, with the process handling of StartProcs.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// DataDirMember is a single-member etcd cluster of one /usr/bin/etcd
// process on an existing data directory, started by StartDataDir. Its
// methods are for the test's goroutine and fail the test rather than
// return errors.
type DataDirMember struct {
	t   testing.TB
	bin string
	dir string // the data directory
	p   *proc
}

// StartDataDir starts etcd as the single member name on the data
// directory dir, which a single-member etcd (3.4, Debian's etcd-server)
// wrote, on free 127.0.0.1 ports, and returns once it answers a
// linearizable read. The member keeps its identity, data and membership
// (its old peer URL is not dialled: it has no peers). The process is
// killed when t ends; if t failed, its log's tail is logged. A port
// taken between its pick and etcd's bind makes it try again on other
// ports, three times in all.
func StartDataDir(t testing.TB, dir, name string) *DataDirMember {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcdtest: %v: ./test.sh installs it (Debian package etcd-server)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "member")); err != nil {
		t.Fatalf("etcdtest: %s is no etcd data directory: %v", dir, err)
	}
	m := &DataDirMember{t: t, bin: bin, dir: dir, p: &proc{name: name, log: filepath.Join(t.TempDir(), name+".log")}}
	t.Cleanup(func() {
		m.p.signal(syscall.SIGKILL, stopTimeout)
		if t.Failed() {
			t.Logf("etcdtest: etcd log (%s):\n%s", m.p.log, logTail(m.p.log))
		}
	})
	m.start()
	return m
}

// Endpoints are the member's client URL.
func (m *DataDirMember) Endpoints() []string { return []string{m.p.client} }

// Stop stops the member with SIGTERM and waits for it to exit; if it has
// not within 10 s, Stop kills it and fails the test.
func (m *DataDirMember) Stop() {
	m.t.Helper()
	if !m.p.signal(syscall.SIGTERM, stopTimeout) {
		m.p.signal(syscall.SIGKILL, stopTimeout)
		m.t.Fatalf("etcdtest: etcd ignored SIGTERM for %v; killed it\n%s", stopTimeout, logTail(m.p.log))
	}
}

// Restart starts the member again after Stop, on its data directory and
// other free ports.
func (m *DataDirMember) Restart() {
	m.t.Helper()
	if m.p.running() {
		m.t.Fatal("etcdtest: Restart: etcd is running")
	}
	m.start()
}

func (m *DataDirMember) start() {
	m.t.Helper()
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err = m.tryStart(); err == nil {
			return
		}
		m.p.signal(syscall.SIGKILL, stopTimeout)
		if !errors.Is(err, errPortTaken) {
			break
		}
		m.t.Logf("etcdtest: start attempt %d: a port was taken; trying other ports", attempt)
	}
	m.t.Fatalf("etcdtest: start etcd on %s: %v\n%s", m.dir, err, logTail(m.p.log))
}

func (m *DataDirMember) tryStart() error {
	addrs, err := freePorts(2)
	if err != nil {
		return err
	}
	cu, pu := httpURL(addrs[0]), httpURL(addrs[1])
	client, peer := cu.String(), pu.String()
	// The --initial-* flags are ignored for a data directory that has a
	// member already; they are given so that etcd does not fall back to
	// its defaults' ports.
	m.p.client = client
	m.p.args = []string{
		"--name", m.p.name, "--data-dir", m.dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", m.p.name + "=" + peer, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-level", "error",
	}
	if err := m.p.start(m.bin); err != nil {
		return err
	}
	if err := waitReadable(m.Endpoints(), time.Now().Add(readyTimeout), m.p.exitErr); err != nil {
		return fmt.Errorf("%w\n%s", err, logTail(m.p.log))
	}
	return nil
}
