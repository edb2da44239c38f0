package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/internal/etcdtest"
)

const (
	testTTL   = 2 * time.Second
	testUnits = 12
)

// units is a cluster.Units that records what the Member asks of it.
type units struct {
	mu        sync.Mutex
	held      map[int]bool
	warm      map[int]bool
	preloaded map[int]bool // ever preloaded since its last load
	coldLoads int          // loads of a unit that was not preloaded
	loads     int
	leases    []clientv3.LeaseID
}

func newUnits() *units {
	return &units{held: map[int]bool{}, warm: map[int]bool{}, preloaded: map[int]bool{}}
}

func (f *units) Load(u int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held[u] {
		return nil
	}
	f.held[u] = true
	f.loads++
	if !f.warm[u] {
		f.coldLoads++
	}
	delete(f.warm, u)
	return nil
}

func (f *units) Unload(u int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, u)
}

func (f *units) Preload(u int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warm[u] = true
	return nil
}

func (f *units) Forget(u int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.warm, u)
}

func (f *units) Holds(u int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[u]
}

func (f *units) Lease(id clientv3.LeaseID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leases = append(f.leases, id)
}

func (f *units) heldList() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for u := range f.held {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

func (f *units) counts() (loads, cold int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loads, f.coldLoads
}

type node struct {
	id    int32
	m     *cluster.Member
	units *units
}

func join(t *testing.T, endpoints []string, prefix string, id int32) *node {
	t.Helper()
	return joinLogged(t, endpoints, prefix, id, nil)
}

// joinLogged is join with the member logging to logger (nil: nowhere).
func joinLogged(t *testing.T, endpoints []string, prefix string, id int32, logger *slog.Logger) *node {
	t.Helper()
	return joinConfig(t, endpoints, nodeConfig(prefix, id, logger))
}

// nodeConfig is node id's Config: testUnits units, no others.
func nodeConfig(prefix string, id int32, logger *slog.Logger) cluster.Config {
	return cluster.Config{
		Prefix:    prefix,
		NodeID:    id,
		KafkaAddr: fmt.Sprintf("127.0.0.1:%d", 9000+id),
		DirID:     fmt.Sprintf("dir-%d", id),
		LeaseTTL:  testTTL,
		Units:     testUnits,
		Logger:    logger,
	}
}

// joinConfig joins a node with cfg (its Client set here) and runs it on
// a units recorder.
func joinConfig(t *testing.T, endpoints []string, cfg cluster.Config) *node {
	t.Helper()
	cfg.Client = etcdtest.NewClient(t, endpoints)
	m, err := cluster.Join(context.Background(), cfg)
	if err != nil {
		t.Fatalf("join node %d: %v", cfg.NodeID, err)
	}
	n := &node{id: cfg.NodeID, m: m, units: newUnits()}
	m.Run(n.units)
	t.Cleanup(m.Close)
	return n
}

// waitSpread waits until the nodes hold every unit exactly once, each
// ⌊U/N⌋ or ⌈U/N⌉ of them.
func waitSpread(t *testing.T, within time.Duration, nodes ...*node) {
	t.Helper()
	deadline := time.Now().Add(within)
	lo, hi := testUnits/len(nodes), (testUnits+len(nodes)-1)/len(nodes)
	var last string
	for time.Now().Before(deadline) {
		seen := map[int]int{}
		ok := true
		last = ""
		for _, n := range nodes {
			h := n.units.heldList()
			last += fmt.Sprintf(" node %d: %v;", n.id, h)
			if len(h) < lo || len(h) > hi {
				ok = false
			}
			for _, u := range h {
				seen[u]++
			}
		}
		for u := range testUnits {
			if seen[u] != 1 {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("units not spread over %d nodes within %v:%s", len(nodes), within, last)
}

// TestSpreadAndJoin: three nodes share the units evenly; a fourth joins
// and takes its share warm (every unit it loads was preloaded first),
// with only the minimum number of units moving.
func TestSpreadAndJoin(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	a := join(t, ep, "/t", 1)
	b := join(t, ep, "/t", 2)
	c := join(t, ep, "/t", 3)
	waitSpread(t, 10*time.Second, a, b, c)
	before := map[int]int32{}
	for _, n := range []*node{a, b, c} {
		for _, u := range n.units.heldList() {
			before[u] = n.id
		}
	}
	d := join(t, ep, "/t", 4)
	waitSpread(t, 10*time.Second, a, b, c, d)
	moved := 0
	for _, n := range []*node{a, b, c, d} {
		for _, u := range n.units.heldList() {
			if before[u] != n.id {
				moved++
			}
		}
	}
	if moved != 3 { // 12 units: 4,4,4 → 3,3,3,3
		t.Fatalf("%d units moved when a fourth node joined, want 3", moved)
	}
	if loads, cold := d.units.counts(); loads != 3 || cold != 0 {
		t.Fatalf("the new node loaded %d units, %d of them cold; want 3 warm", loads, cold)
	}
}

// TestCrashFailover: a node that dies without leaving (no lease
// revocation) loses its units to the others once its lease expires.
func TestCrashFailover(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	a := join(t, ep, "/t", 1)
	b := join(t, ep, "/t", 2)
	c := join(t, ep, "/t", 3)
	waitSpread(t, 10*time.Second, a, b, c)
	crashed := time.Now()
	c.m.Crash()
	waitSpread(t, testTTL+5*time.Second, a, b)
	t.Logf("failover after a crash took %v (lease TTL %v)", time.Since(crashed), testTTL)
}

// TestLeaveHandsOffWarm: a node that leaves (SIGTERM) hands every unit
// off warm before its lease goes, and the others serve them all.
func TestLeaveHandsOffWarm(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	a := join(t, ep, "/t", 1)
	b := join(t, ep, "/t", 2)
	c := join(t, ep, "/t", 3)
	waitSpread(t, 10*time.Second, a, b, c)
	aLoads, aCold0 := a.units.counts()
	bLoads, bCold0 := b.units.counts()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if h := c.units.heldList(); len(h) != 0 {
		t.Fatalf("the leaving node still holds %v", h)
	}
	waitSpread(t, 5*time.Second, a, b)
	t.Logf("leave took %v", time.Since(start))
	a2, aCold := a.units.counts()
	b2, bCold := b.units.counts()
	if a2-aLoads+b2-bLoads != 4 {
		t.Fatalf("the others loaded %d units, want the leaving node's 4", a2-aLoads+b2-bLoads)
	}
	if cold := aCold - aCold0 + bCold - bCold0; cold != 0 {
		t.Fatalf("%d of the leaving node's units were loaded cold", cold)
	}
}

// TestIsolatedNodeStopsServing: a node cut off from etcd stops serving
// every unit before its lease can have expired, the others take them
// over after it expires, and the node serves again once it can reach
// etcd.
func TestIsolatedNodeStopsServing(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	proxies := etcdtest.ProxyAll(t, ep)
	a := join(t, ep, "/t", 1)
	b := join(t, ep, "/t", 2)
	var logs syncBuffer
	c := joinLogged(t, proxies.Endpoints(), "/t", 3, slog.New(slog.NewTextHandler(&logs, nil)))
	waitSpread(t, 10*time.Second, a, b, c)
	cut := time.Now()
	proxies.Cut()
	deadline := cut.Add(testTTL)
	for len(c.units.heldList()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the isolated node still serves %v a lease TTL after it was cut off", c.units.heldList())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := time.Since(cut)
	// Its lease has not expired yet: its registration is still there.
	resp, err := etcdtest.NewClient(t, ep).Get(context.Background(), "/t/cluster/nodes/3")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("the isolated node stopped serving %v after the cut, after its lease expired", stopped)
	}
	// The log says why: renewals failing since the cut. (The watchdog
	// may unload the units before the loop logs.)
	var line string
	for end := time.Now().Add(5 * time.Second); line == "" && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		line = logs.line("cannot renew the lease in time")
	}
	if !strings.Contains(line, "last_err=") || !strings.Contains(line, "failed_attempts=") {
		t.Errorf("the suspension's log line does not say why: %q", line)
	}
	waitSpread(t, testTTL+5*time.Second, a, b)
	t.Logf("isolated node stopped serving %v after the cut; others took over after %v", stopped, time.Since(cut))
	proxies.Heal()
	waitSpread(t, 15*time.Second, a, b, c)
}

// TestRestartTakesRegistrationOver: a node killed and started again on
// the same data directory (same DirID) before its lease expired revokes
// its previous lease at once, rather than waiting for it to expire, and
// gets its share back; another process with the same node id and another
// directory is refused.
func TestRestartTakesRegistrationOver(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	a := join(t, ep, "/t", 1)
	b := join(t, ep, "/t", 2)
	waitSpread(t, 10*time.Second, a, b)
	old := b.m.Lease()
	b.m.Crash()
	b2 := join(t, ep, "/t", 2)
	cli := etcdtest.NewClient(t, ep)
	ttl, err := cli.TimeToLive(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL != -1 {
		t.Fatalf("the previous life's lease has %ds left; want it revoked", ttl.TTL)
	}
	waitSpread(t, 10*time.Second, a, b2)

	_, err = cluster.Join(context.Background(), cluster.Config{
		Client: cli, Prefix: "/t", NodeID: 2, KafkaAddr: "127.0.0.1:1", DirID: "another-dir",
		LeaseTTL: testTTL, Units: testUnits,
	})
	if err == nil || !strings.Contains(err.Error(), "registered by another live node") {
		t.Fatalf("a second live node 2 joined: %v", err)
	}
}

// syncBuffer is a log sink safe for the member's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// line returns the first line containing msg, or "".
func (s *syncBuffer) line(msg string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range strings.Split(s.b.String(), "\n") {
		if strings.Contains(l, msg) {
			return l
		}
	}
	return ""
}
