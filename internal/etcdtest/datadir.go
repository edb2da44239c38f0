package etcdtest

// A single etcd process on a data directory that exists already: a
// cluster's etcd data kept from another run (an upgrade fixture),
// started again on free ports. It shares nothing with the other files
// of the package but its name, so that they can change on their own.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// dataDirTimeout bounds a member's start-up (until it answers a
// linearizable read) and its exit after SIGTERM.
const dataDirTimeout = 30 * time.Second

// DataDirMember is a single-member etcd cluster of one /usr/bin/etcd
// process on an existing data directory, started by StartDataDir. Its
// methods are for the test's goroutine and fail the test rather than
// return errors.
type DataDirMember struct {
	t    testing.TB
	bin  string
	dir  string // the data directory
	name string // the member's --name
	log  string // the process's stdout and stderr

	client string // client URL while it runs
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
}

// StartDataDir starts etcd as the single member name on the data
// directory dir, which a single-member etcd (3.4, Debian's etcd-server)
// wrote, on free 127.0.0.1 ports, and returns once it answers a
// linearizable read. The member keeps its identity, data and
// membership (its old peer URL is not dialled: it has no peers). The
// process is killed when t ends; if t failed, its log's tail is logged.
// A port taken between its pick and etcd's bind makes it try again on
// other ports, three times in all.
func StartDataDir(t testing.TB, dir, name string) *DataDirMember {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcdtest: %v: ./test.sh installs it (Debian package etcd-server)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "member")); err != nil {
		t.Fatalf("etcdtest: %s is no etcd data directory: %v", dir, err)
	}
	m := &DataDirMember{t: t, bin: bin, dir: dir, name: name, log: filepath.Join(t.TempDir(), name+".log")}
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			t.Logf("etcdtest: etcd log (%s):\n%s", m.log, dataDirTail(m.log))
		}
	})
	m.start()
	return m
}

// Endpoints are the member's client URL.
func (m *DataDirMember) Endpoints() []string { return []string{m.client} }

// Stop stops the member with SIGTERM and waits for it to exit; if it has
// not within 30 s, Stop kills it and fails the test.
func (m *DataDirMember) Stop() {
	m.t.Helper()
	if !m.running() {
		return
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(dataDirTimeout):
		m.kill()
		m.t.Fatalf("etcdtest: etcd ignored SIGTERM for %v; killed it\n%s", dataDirTimeout, dataDirTail(m.log))
	}
}

// Restart starts the member again after Stop, on its data directory and
// other free ports.
func (m *DataDirMember) Restart() {
	m.t.Helper()
	if m.running() {
		m.t.Fatal("etcdtest: Restart: etcd is running")
	}
	m.start()
}

func (m *DataDirMember) start() {
	m.t.Helper()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if err = m.tryStart(); err == nil {
			return
		}
		m.kill()
		if !strings.Contains(dataDirTail(m.log), "address already in use") {
			break
		}
		m.t.Logf("etcdtest: start attempt %d: a port was taken; trying other ports", attempt)
	}
	m.t.Fatalf("etcdtest: start etcd on %s: %v\n%s", m.dir, err, dataDirTail(m.log))
}

func (m *DataDirMember) tryStart() error {
	ports, err := dataDirPorts(2)
	if err != nil {
		return err
	}
	client, peer := "http://"+ports[0], "http://"+ports[1]
	f, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	// The --initial-* flags are ignored for a data directory that has a
	// member already; they are given so that etcd does not fall back to
	// its defaults' ports.
	cmd := exec.Command(m.bin,
		"--name", m.name, "--data-dir", m.dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", m.name+"="+peer, "--initial-cluster-state", "new",
		"--logger", "zap", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dataDirSysProcAttr()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv) // etcd reads its flags from ETCD_* too
		}
	}
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	m.cmd, m.done, m.client = cmd, done, client
	return m.waitReadable(ports[0])
}

// waitReadable waits until the member listens on addr and answers a
// linearizable read, or exits.
func (m *DataDirMember) waitReadable(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), dataDirTimeout)
	defer cancel()
	poll := func(try func() error) error {
		for {
			err := try()
			if err == nil {
				return nil
			}
			select {
			case <-m.done:
				return fmt.Errorf("etcd exited: %v", m.cmd.ProcessState)
			case <-ctx.Done():
				return fmt.Errorf("etcd not ready within %v: %v", dataDirTimeout, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	// The port first: a gRPC client that finds it closed backs off.
	err := poll(func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.client}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	return poll(func() error {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cli.Get(rctx, "etcdtest-ready")
		return err
	})
}

func (m *DataDirMember) running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

func (m *DataDirMember) kill() {
	if m.running() {
		m.cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
	}
}

// dataDirPorts returns n distinct ports of 127.0.0.1 that were free a
// moment ago.
func dataDirPorts(n int) ([]string, error) {
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// dataDirTail is the last 20 lines of the file at path.
func dataDirTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
