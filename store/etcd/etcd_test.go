package etcd_test

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/etcd"
	"github.com/cohort-dev/cohort/store/storetest"
)

// freeURLs returns n http URLs on 127.0.0.1, with distinct ports the
// kernel just handed out: all n listeners are open at once, so no two URLs
// share a port, and closed before returning.
func freeURLs(t testing.TB, n int) []url.URL {
	t.Helper()
	var urls []url.URL
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		urls = append(urls, url.URL{Scheme: "http", Host: l.Addr().String()})
	}
	return urls
}

// startEtcd starts a single-member etcd in process, with its data under
// t.TempDir(), stopped when t ends, and returns its client endpoint. The
// ports are free ones (see freeURLs); if another process takes one before
// etcd binds it, it tries again with others.
func startEtcd(t testing.TB) string {
	t.Helper()
	ep, _ := startEtcdServer(t)
	return ep
}

// startEtcdServer is startEtcd, also returning a function that stops the
// server (at most once, whoever calls it first: the test or its cleanup).
func startEtcdServer(t testing.TB) (string, func()) {
	t.Helper()
	return startEtcdWith(t, func(*embed.Config) {})
}

// startEtcdWith is startEtcdServer with the configuration changed by
// configure.
func startEtcdWith(t testing.TB, configure func(*embed.Config)) (string, func()) {
	t.Helper()
	var err error
	for range 3 {
		var ep string
		var stop func()
		if ep, stop, err = tryStartEtcd(t, configure); err == nil {
			return ep, stop
		}
	}
	t.Fatalf("start etcd: %v", err)
	return "", nil
}

func tryStartEtcd(t testing.TB, configure func(*embed.Config)) (string, func(), error) {
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	// Not "error": etcd logs "mux: server closed" at error level on every
	// Close, in the middle of test and benchmark output. Failures show
	// through the client's errors.
	cfg.LogLevel = "fatal"
	urls := freeURLs(t, 2)
	client, peer := urls[0], urls[1]
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	configure(cfg)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, err
	}
	stop := sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd did not become ready within 30s")
	}
	return client.String(), stop, nil
}

// newClient returns a client of the etcd at endpoint, closed when t ends.
func newClient(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

var prefixes atomic.Int64

// freshPrefix returns a key prefix no other store of this test binary uses.
func freshPrefix() string {
	return fmt.Sprintf("/cohort-test/%d", prefixes.Add(1))
}

func mustOpen(t testing.TB, opts etcd.Options) *etcd.Store {
	t.Helper()
	s, err := etcd.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	runConformance(t, etcd.Options{Client: newClient(t, startEtcd(t))}, func(_ *testing.T, s *etcd.Store) store.Store { return s })
}

// runConformance runs the store conformance suite on stores opened with
// opts, each wrapped by wrap; a reopened store opens the old one's prefix.
func runConformance(t *testing.T, opts etcd.Options, wrap func(*testing.T, *etcd.Store) store.Store) {
	var mu sync.Mutex
	prefix := map[store.Store]string{}
	openAt := func(t *testing.T, p string) store.Store {
		o := opts
		o.Prefix = p
		s := wrap(t, mustOpen(t, o))
		mu.Lock()
		defer mu.Unlock()
		prefix[s] = p
		return s
	}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return openAt(t, freshPrefix()) },
		Reopen: func(t *testing.T, old store.Store) store.Store {
			mu.Lock()
			p := prefix[old]
			mu.Unlock()
			return openAt(t, p)
		},
	})
}

// scopeRoot is the etcd key under which the log of scope is kept.
func scopeRoot(prefix, scope string) string {
	return prefix + "/s/" + hex.EncodeToString([]byte(scope))
}

// openPeer opens a store on prefix through a client of its own, as
// another node would.
func openPeer(t testing.TB, endpoint, prefix string) *etcd.Store {
	t.Helper()
	return mustOpen(t, etcd.Options{Client: newClient(t, endpoint), Prefix: prefix})
}
