// Package etcdserver_test runs Cohort's etcd store against the etcd server
// of the version its client is built with (go.etcd.io/etcd/server/v3,
// in process), where the rest of the suite uses Debian's etcd 3.4
// processes: the conformance suite, and what only a newer server says
// (its backend quota in the Status response). It lives in the test
// module so that the project's own module does not require etcd's server.
package etcdserver_test

import (
	"bytes"
	"errors"
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

// start runs a single-member etcd in process on free 127.0.0.1 ports,
// with its data under t.TempDir() and cfg changed by configure, and
// returns a client of it; both end with t. A port taken between the pick
// and etcd's bind makes it try again with others (three times).
func start(t *testing.T, configure func(*embed.Config)) *clientv3.Client {
	t.Helper()
	var err error
	for range 3 {
		var e *embed.Etcd
		if e, err = tryStart(t, configure); err == nil {
			t.Cleanup(e.Close)
			select {
			case <-e.Server.ReadyNotify():
			case <-time.After(30 * time.Second):
				t.Fatal("etcd did not become ready within 30 s")
			}
			cli, err := clientv3.New(clientv3.Config{
				Endpoints:   []string{e.Clients[0].Addr().String()},
				DialTimeout: 5 * time.Second,
				Logger:      zap.NewNop(),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cli.Close() })
			return cli
		}
	}
	t.Fatalf("start etcd in process: %v", err)
	return nil
}

func tryStart(t *testing.T, configure func(*embed.Config)) (*embed.Etcd, error) {
	urls, err := freeURLs(2)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "fatal" // etcd logs "mux: server closed" at error level on every Close
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = urls[:1], urls[:1]
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = urls[1:], urls[1:]
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	configure(cfg)
	return embed.StartEtcd(cfg)
}

// freeURLs returns n http URLs of 127.0.0.1 on distinct ports that were
// free a moment ago (all n listeners open at once, closed on return).
func freeURLs(n int) ([]url.URL, error) {
	var urls []url.URL
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		urls = append(urls, url.URL{Scheme: "http", Host: l.Addr().String()})
	}
	return urls, nil
}

var prefixes atomic.Int64

func freshPrefix() string { return fmt.Sprintf("/cohort-test/%d", prefixes.Add(1)) }

func open(t *testing.T, opts etcd.Options) *etcd.Store {
	t.Helper()
	s, err := etcd.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance: the store conformance suite, as store/etcd runs it on
// etcd 3.4, on the current etcd server.
func TestConformance(t *testing.T) {
	cli := start(t, func(*embed.Config) {})
	var mu sync.Mutex
	prefix := map[store.Store]string{}
	openAt := func(t *testing.T, p string) store.Store {
		s := open(t, etcd.Options{Client: cli, Prefix: p})
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

// TestReportedQuota: with no QuotaBytes of its own, the store reports the
// backend quota etcd gives in its Status response (etcd 3.6 and later;
// 3.4 gives none, and the store then assumes etcd's default of 2 GiB),
// and once etcd raises its NOSPACE alarm, writes fail with ErrQuota.
func TestReportedQuota(t *testing.T) {
	const quota = 4 << 20
	cli := start(t, func(cfg *embed.Config) { cfg.QuotaBackendBytes = quota })
	var reported atomic.Int64
	s := open(t, etcd.Options{
		Client:        cli,
		Prefix:        freshPrefix(),
		CheckInterval: 50 * time.Millisecond,
		OnUsage:       func(_, q int64) { reported.Store(q) },
	})
	defer s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for used, _ := s.Usage(); used == 0; used, _ = s.Usage() {
		if time.Now().After(deadline) {
			t.Fatal("no usage check within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, q := s.Usage(); q != quota {
		t.Fatalf("Usage quota = %d, want etcd's %d", q, quota)
	}
	if reported.Load() != quota {
		t.Fatalf("OnUsage quota = %d, want %d", reported.Load(), quota)
	}
	value := bytes.Repeat([]byte("x"), 256<<10)
	var werr error
	for i := 0; i < 200 && werr == nil; i++ {
		var b store.Batch
		b.Put(fmt.Appendf(nil, "big/%d", i), value)
		werr = s.Apply(&b)
	}
	if !errors.Is(werr, etcd.ErrQuota) {
		t.Fatalf("write to a full etcd = %v, want ErrQuota", werr)
	}
}
