package etcdtest

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Embedded is an etcd cluster of members running inside the test binary,
// started by StartEmbedded: quicker to start than processes, but a
// member can only be stopped, not crashed. Its methods are for the test's
// goroutine.
type Embedded struct {
	t         testing.TB
	endpoints []string
	stops     []func() // stops[i] closes member i, at most once
}

// StartEmbedded starts an n-member etcd cluster in process
// (go.etcd.io/etcd/server/v3/embed) on 127.0.0.1, each member's data
// under t.TempDir(), and returns once every member answers a
// linearizable read. The members are closed when t ends. n = 1 is the
// common case: a real etcd for a Go test in a fraction of a second.
//
// As StartProcs, it starts again on other ports when one was taken
// before etcd bound it, and fails the test with the cause on any other
// failure or after 30 s. etcd's own log is off below fatal: it logs an
// error on every ordinary Close, and failures show through the clients'
// errors.
func StartEmbedded(t testing.TB, n int) *Embedded {
	t.Helper()
	if n < 1 {
		t.Fatalf("etcdtest: StartEmbedded(%d): need at least one member", n)
	}
	base := t.TempDir() // before Cleanup: the members close before their data goes
	c := &Embedded{t: t}
	t.Cleanup(c.closeAll)
	for attempt := 1; ; attempt++ {
		err := c.tryStart(base, n, attempt)
		if err == nil {
			return c
		}
		c.closeAll()
		if !isPortTaken(err.Error()) || attempt == startAttempts {
			t.Fatalf("etcdtest: start %d embedded etcd members (attempt %d of %d): %v", n, attempt, startAttempts, err)
		}
		t.Logf("etcdtest: start attempt %d: a port was taken; trying other ports", attempt)
	}
}

func (c *Embedded) tryStart(base string, n, attempt int) error {
	addrs, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	peers := make([]string, n)
	for i := range peers {
		u := httpURL(addrs[2*i+1])
		peers[i] = fmt.Sprintf("m%d=%s", i, u.String())
	}
	c.endpoints, c.stops = nil, nil
	var members []*embed.Etcd
	for i := range n {
		client, peer := httpURL(addrs[2*i]), httpURL(addrs[2*i+1])
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(base, fmt.Sprintf("attempt%d", attempt), cfg.Name)
		cfg.LogLevel = "fatal"
		cfg.ListenClientUrls = []url.URL{client}
		cfg.AdvertiseClientUrls = []url.URL{client}
		cfg.ListenPeerUrls = []url.URL{peer}
		cfg.AdvertisePeerUrls = []url.URL{peer}
		cfg.InitialCluster = strings.Join(peers, ",")
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.InitialClusterToken = fmt.Sprintf("etcdtest-%s-%d", filepath.Base(base), attempt)
		cfg.TickMs, cfg.ElectionMs = tickMs, electionMs
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			return fmt.Errorf("member %s: %w", cfg.Name, err)
		}
		members = append(members, e)
		c.endpoints = append(c.endpoints, client.String())
		c.stops = append(c.stops, sync.OnceFunc(e.Close))
	}
	// A member's Err channel carries a failure to serve; none is expected
	// while starting.
	exited := func() error {
		for i, e := range members {
			select {
			case err := <-e.Err():
				return fmt.Errorf("member m%d: %w", i, err)
			default:
			}
		}
		return nil
	}
	return waitReadable(c.endpoints, time.Now().Add(readyTimeout), exited)
}

// Endpoints returns the members' client URLs, member i's at index i.
func (c *Embedded) Endpoints() []string { return c.endpoints }

// Stop closes member i: it stops serving and releases its ports. In a
// cluster of several it takes about a second: etcd's Close waits up to
// that long for its peers' connections to go idle, which live peers'
// never do.
func (c *Embedded) Stop(i int) {
	c.t.Helper()
	if i < 0 || i >= len(c.stops) {
		c.t.Fatalf("etcdtest: no member %d in a %d-member cluster", i, len(c.stops))
	}
	c.stops[i]()
}

// closeAll closes every member, one after another: closed together, a
// leader's hand-over to a peer that is closing too waits out etcd's
// request timeout (7 s here) where one by one takes a second a member.
func (c *Embedded) closeAll() {
	for _, stop := range c.stops {
		stop()
	}
}
