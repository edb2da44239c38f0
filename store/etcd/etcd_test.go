package etcd_test

import (
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/etcd"
	"github.com/cohort-dev/cohort/store/storetest"
)

// startEtcd starts a single-member etcd (an etcd process, see
// etcdtest.StartProcs), stopped when t ends, and returns its client
// endpoint.
func startEtcd(t testing.TB) string {
	t.Helper()
	ep, _ := startEtcdServer(t)
	return ep
}

// startEtcdServer is startEtcd, also returning a function that stops the
// server with SIGTERM; the test's cleanup kills what is still running.
func startEtcdServer(t testing.TB, flags ...string) (string, func()) {
	t.Helper()
	c := etcdtest.StartProcsWith(t, 1, flags...)
	return c.Endpoints()[0], func() { c.Stop(0) }
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
