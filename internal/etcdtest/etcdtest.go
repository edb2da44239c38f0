// Package etcdtest gives tests real etcd clusters: separate etcd
// processes they can kill and restart (StartProcs, StartProcsWith; a
// one-member cluster is ready in about 0.1 s, as fast as an in-process
// one, so the project's module needs no etcd server), TCP proxies that cut one client off from etcd
// (NewProxy, ProxyAll) and a client closed when the test ends (NewClient).
//
// Everything it starts listens on 127.0.0.1 only, keeps its data under
// t.TempDir() and is stopped by t.Cleanup. It is for tests: production
// code must not import it, and it never skips a test — a missing etcd
// binary or a cluster that does not come up fails the test, naming the
// cause.
package etcdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	// startAttempts is how many times a cluster start is tried with
	// fresh ports when a member could not bind one (another process took
	// it between freePorts and etcd's listen).
	startAttempts = 3
	// readyTimeout bounds the wait for a cluster, or a restarted member,
	// to answer a linearizable read.
	readyTimeout = 30 * time.Second
	// tickMs and electionMs are etcd's heartbeat interval and election
	// timeout in milliseconds: etcd's defaults, short enough for a
	// failover within a test, and giving leases their minimum TTL of
	// 1.5 × electionMs, rounded up: 2 s.
	tickMs     = 100
	electionMs = 1000
)

// NewClient returns an etcd client of endpoints, closed when t ends. It
// does not sync its endpoint list from the cluster, so a client given a
// ProxySet's endpoints stays behind the proxies.
func NewClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcd client of %v: %v", endpoints, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// freePorts returns n distinct ports of 127.0.0.1 that were free a moment
// ago: it binds :0 n times, then closes the listeners. etcd must be told
// its peers' URLs before any member starts, so it cannot bind :0 itself;
// another process may take a port in between, which callers detect and
// retry.
func freePorts(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		ls = append(ls, l)
		addrs[i] = l.Addr().String()
	}
	return addrs, nil
}

// httpURL returns the http URL of addr (host:port).
func httpURL(addr string) url.URL { return url.URL{Scheme: "http", Host: addr} }

// readable reports whether endpoint answers a linearizable read within
// a second: it has joined a cluster with a leader and caught up with the
// leader's commit index.
func readable(ctx context.Context, cli *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := cli.Get(ctx, "etcdtest-ready")
	return err
}

// waitReadable polls every endpoint, each through its own client, until
// each answers a linearizable read, until deadline, or until exited
// returns an error (a member process died or an embedded server failed).
// Every member must answer, not just a quorum, so that a test may kill
// any of them as soon as the start helper returns.
func waitReadable(endpoints []string, deadline time.Time, exited func() error) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for _, ep := range endpoints {
		// Wait for the port first: a gRPC client that finds it closed
		// backs off a second before it tries again.
		if err := pollListening(ctx, ep, exited); err != nil {
			return fmt.Errorf("%s: %w", ep, err)
		}
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   []string{ep},
			DialTimeout: time.Second,
			Logger:      zap.NewNop(),
		})
		if err != nil {
			return fmt.Errorf("etcd client of %s: %w", ep, err)
		}
		err = pollReadable(ctx, cli, exited)
		cli.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", ep, err)
		}
	}
	return nil
}

// pollInterval is the pause between two failed readiness probes that
// failed fast (a refused connection), so the poll does not spin.
const pollInterval = 20 * time.Millisecond

// pollListening polls until the endpoint's address accepts a TCP
// connection.
func pollListening(ctx context.Context, endpoint string, exited func() error) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	var d net.Dialer
	for {
		if err := exited(); err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := d.DialContext(dctx, "tcp", u.Host)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not listening within %v: last error: %w", readyTimeout, err)
		case <-time.After(pollInterval):
		}
	}
}

func pollReadable(ctx context.Context, cli *clientv3.Client, exited func() error) error {
	for {
		if err := exited(); err != nil {
			return err
		}
		err := readable(ctx, cli)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no linearizable read within %v: last error: %w", readyTimeout, err)
		case <-time.After(pollInterval):
		}
	}
}

// errPortTaken marks a start that failed because a port picked by
// freePorts was taken before etcd bound it: the start is worth retrying
// with other ports.
var errPortTaken = errors.New("port taken")

// isPortTaken reports whether text (an error or a log) says a listen
// failed because the address was in use.
func isPortTaken(text string) bool {
	return strings.Contains(text, "address already in use")
}

// tailLines is how many of a member log's last lines a failure shows.
const tailLines = 20

// logTail returns the last tailLines lines of the file at path, or a note
// saying why it could not be read.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	b = bytes.TrimRight(b, "\n")
	if len(b) == 0 {
		return "(empty log)"
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
