package etcdtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stopTimeout bounds how long Stop waits for a member to exit after
// SIGTERM before it kills it and fails the test.
const stopTimeout = 10 * time.Second

// Cluster is an etcd cluster of separate etcd processes, started by
// StartProcs. Its methods are for the test's goroutine: they are not
// safe for concurrent use, and they fail the test (t.Fatal) rather than
// return errors.
type Cluster struct {
	t       testing.TB
	bin     string
	base    string // the test's temporary directory
	members []*proc
	flags   []string // extra etcd flags for every member
	started bool     // the cluster came up; a failed start has shown its logs
}

// proc is one member: its fixed identity (name, ports, data directory)
// and, while it runs, its process.
type proc struct {
	name   string
	client string // client URL
	log    string // path of the file taking the process's stdout and stderr
	args   []string

	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited; err is then set
	err  error
}

// StartProcs starts an n-member etcd cluster of /usr/bin/etcd processes
// (Debian's etcd-server, 3.4) on 127.0.0.1, each with its data directory
// and log file under t.TempDir(), and returns once every member answers a
// linearizable read. The members are killed when t ends; if t failed,
// the tails of their logs are logged first.
//
// A member that cannot bind its port (another process took it between
// the pick and the bind) makes StartProcs start the whole cluster again
// on other ports, up to three times. Any other failure, or no answer
// within 30 s, fails the test with the cause and the members' log tails.
func StartProcs(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartProcsWith(t, n)
}

// StartProcsWith is StartProcs with extra command-line flags for every
// member (etcd's own, such as "--quota-backend-bytes=4194304").
func StartProcsWith(t testing.TB, n int, flags ...string) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("etcdtest: StartProcs(%d): need at least one member", n)
	}
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcdtest: %v: ./test.sh installs it (Debian package etcd-server)", err)
	}
	// TempDir before Cleanup: cleanups run last-registered first, so the
	// members are killed before their directory is removed.
	c := &Cluster{t: t, bin: bin, base: t.TempDir(), flags: flags}
	t.Cleanup(c.cleanup)
	for attempt := 1; ; attempt++ {
		err := c.tryStart(n, attempt)
		if err == nil {
			c.started = true
			return c
		}
		c.killAll()
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			t.Fatalf("etcdtest: start %d etcd processes (attempt %d of %d): %v", n, attempt, startAttempts, err)
		}
		t.Logf("etcdtest: start attempt %d: a port was taken; trying other ports", attempt)
	}
}

func (c *Cluster) tryStart(n, attempt int) error {
	addrs, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	dir := filepath.Join(c.base, fmt.Sprintf("attempt%d", attempt))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	peers := make([]string, n)
	for i := range peers {
		u := httpURL(addrs[2*i+1])
		peers[i] = fmt.Sprintf("m%d=%s", i, u.String())
	}
	// The token keeps members of two clusters of one test apart should
	// a port be reused between them.
	token := fmt.Sprintf("etcdtest-%s-%d", filepath.Base(c.base), attempt)
	c.members = make([]*proc, n)
	for i := range c.members {
		client, peer := httpURL(addrs[2*i]), httpURL(addrs[2*i+1])
		name := fmt.Sprintf("m%d", i)
		c.members[i] = &proc{
			name:   name,
			client: client.String(),
			log:    filepath.Join(dir, name+".log"),
			args: []string{
				"--name", name,
				"--data-dir", filepath.Join(dir, name+".etcd"),
				"--listen-client-urls", client.String(),
				"--advertise-client-urls", client.String(),
				"--listen-peer-urls", peer.String(),
				"--initial-advertise-peer-urls", peer.String(),
				"--initial-cluster", strings.Join(peers, ","),
				"--initial-cluster-state", "new",
				"--initial-cluster-token", token,
				"--heartbeat-interval", fmt.Sprint(tickMs),
				"--election-timeout", fmt.Sprint(electionMs),
				"--logger", "zap",
				"--log-level", "error",
			},
		}
		c.members[i].args = append(c.members[i].args, c.flags...)
	}
	for _, p := range c.members {
		if err := p.start(c.bin); err != nil {
			return err
		}
	}
	err = waitReadable(c.Endpoints(), time.Now().Add(readyTimeout), c.exited)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, c.tails())
	}
	return nil
}

// start starts p's process, its output appended to p.log.
func (p *proc) start(bin string) error {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("member %s log: %w", p.name, err)
	}
	defer f.Close() // the child has its own descriptor
	cmd := exec.Command(bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = environ()
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("member %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		p.err = cmd.Wait()
		close(done)
	}()
	return nil
}

// environ is this process's environment without ETCD_* variables: etcd
// reads its flags from them too, and one set around the test must not
// change the members.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	return env
}

// running reports whether p's process has been started and not exited.
func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exitErr returns an error if p's process has exited, wrapping
// errPortTaken when its log says it could not bind a port.
func (p *proc) exitErr() error {
	if p.cmd == nil || p.running() {
		return nil
	}
	if isPortTaken(logTail(p.log)) {
		return fmt.Errorf("member %s exited (%v): %w", p.name, p.err, errPortTaken)
	}
	return fmt.Errorf("member %s exited: %v", p.name, p.err)
}

// exited returns the first member's exit error, if any has exited.
func (c *Cluster) exited() error {
	for _, p := range c.members {
		if err := p.exitErr(); err != nil {
			return err
		}
	}
	return nil
}

// signal sends sig to p's process and waits up to timeout for it to exit,
// reporting whether it did.
func (p *proc) signal(sig os.Signal, timeout time.Duration) bool {
	if !p.running() {
		return true
	}
	// An error means the process has already exited, which done shows.
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Endpoints returns the members' client URLs, member i's at index i.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, p := range c.members {
		eps[i] = p.client
	}
	return eps
}

func (c *Cluster) member(i int) *proc {
	c.t.Helper()
	if i < 0 || i >= len(c.members) {
		c.t.Fatalf("etcdtest: no member %d in a %d-member cluster", i, len(c.members))
	}
	return c.members[i]
}

// Kill kills member i with SIGKILL and waits for the process to exit: a
// crash, with no chance to flush or tell its peers.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	p := c.member(i)
	if !p.signal(syscall.SIGKILL, stopTimeout) {
		c.t.Fatalf("etcdtest: member %s still running %v after SIGKILL", p.name, stopTimeout)
	}
}

// Stop stops member i with SIGTERM and waits for it to exit. If it has
// not within 10 s, Stop kills it and fails the test.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	p := c.member(i)
	if !p.signal(syscall.SIGTERM, stopTimeout) {
		p.signal(syscall.SIGKILL, stopTimeout)
		c.t.Fatalf("etcdtest: member %s ignored SIGTERM for %v; killed it\n%s", p.name, stopTimeout, logTail(p.log))
	}
}

// Restart starts member i again, after Kill or Stop, with its data
// directory and ports, and waits until it answers a linearizable read:
// it has rejoined and caught up. If its ports are taken for a moment it
// tries again (three times in all); it cannot move to others, since its
// peers know it by them.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	p := c.member(i)
	if p.running() {
		c.t.Fatalf("etcdtest: Restart(%d): member %s is running", i, p.name)
	}
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err = p.start(c.bin); err != nil {
			break
		}
		err = waitReadable([]string{p.client}, time.Now().Add(readyTimeout), p.exitErr)
		if err == nil {
			return
		}
		p.signal(syscall.SIGKILL, stopTimeout)
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	c.t.Fatalf("etcdtest: restart member %s: %v\n%s", p.name, err, c.tails())
}

// killAll kills every running member and waits for each to exit.
func (c *Cluster) killAll() {
	for _, p := range c.members {
		p.signal(syscall.SIGKILL, stopTimeout)
	}
}

func (c *Cluster) cleanup() {
	c.killAll()
	if c.t.Failed() && c.started {
		c.t.Logf("etcdtest: etcd logs:\n%s", c.tails())
	}
}

// tails returns the tail of every member's log, each under its name.
func (c *Cluster) tails() string {
	var b strings.Builder
	for _, p := range c.members {
		fmt.Fprintf(&b, "--- %s (%s):\n%s\n", p.name, p.log, logTail(p.log))
	}
	return b.String()
}
