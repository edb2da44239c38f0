package sharecoord_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/store/etcd"
)

const (
	clusterPrefix     = "/share"
	clusterTTL        = 2 * time.Second
	clusterShareUnits = 4
)

// clusterNode is a node of a cluster on etcd serving share-state shards
// as cohort's node does: a member, the shared store, the global unit, a
// standby group coordinator (its units come first) and a standby share
// coordinator, driven by the member.
type clusterNode struct {
	id int32
	m  *cluster.Member
	h  *sharecoord.Host
}

func startClusterNode(t *testing.T, endpoints []string, id int32) *clusterNode {
	t.Helper()
	cli := etcdtest.NewClient(t, endpoints)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := cluster.Join(ctx, cluster.Config{
		Client: cli, Prefix: clusterPrefix, NodeID: id, KafkaAddr: fmt.Sprintf("127.0.0.1:%d", 9000+id),
		DirID: fmt.Sprint("dir-", id), LeaseTTL: clusterTTL,
		Units: 2, TxnUnits: 1, ShareUnits: clusterShareUnits,
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := etcd.Open(etcd.Options{Client: cli, Prefix: cluster.DataPrefix(clusterPrefix), Lease: m.Lease()})
	if err != nil {
		t.Fatal(err)
	}
	u, err := coordinator.StartGlobal(coordinator.GlobalConfig{Store: st, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	co, err := coordinator.Start(coordinator.Config{Shards: m.Meta().Units - 1}, coordinator.Options{Store: st, Global: u, Standby: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := sharecoord.Start(sharecoord.Config{Store: st, Global: u, Shards: m.Meta().ShareUnits, Standby: true,
		Machine: sharestate.Config{Limits: sharestate.Limits{DeliveryLimit: plLimit, LockDuration: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	if h.Shards() != clusterShareUnits {
		t.Fatalf("node %d: %d share-state shards, the cluster has %d units", id, h.Shards(), clusterShareUnits)
	}
	m.Run(&cluster.Shards{Coordinator: co, Store: st, Share: h, TxnUnits: m.Meta().TxnUnits})
	t.Cleanup(func() {
		m.Close()
		h.Close()
		co.Close()
		u.Close()
		st.Close()
	})
	return &clusterNode{id: id, m: m, h: h}
}

// TestClusterFailover: two nodes on etcd serve the share-state shards,
// each some. Consumers acknowledge records of partitions whose shards
// the first node serves, through it, and that node is cut off from etcd
// under the load (as a node that dies: it can no longer write, and its
// lease expires). The second takes its shards over: the records the
// consumers held are still theirs (their acceptances, sent to the second
// node as a client retries them, succeed), nothing whose acknowledgement
// was answered is delivered again, and every record ends finished (the
// drain of TestPowerLoss).
func TestClusterFailover(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	proxies := etcdtest.ProxyAll(t, ep)
	a := startClusterNode(t, proxies.Endpoints(), 1)
	// Healed before the first node stops, so that its closing does not
	// wait on etcd.
	t.Cleanup(proxies.Heal)
	b := startClusterNode(t, ep, 2)
	spread := func() bool {
		ha, hb := a.h.Held(), b.h.Held()
		all := append(slices.Clone(ha), hb...)
		slices.Sort(all)
		return len(ha) > 0 && len(hb) > 0 && slices.Equal(all, []int{0, 1, 2, 3})
	}
	testkit.Eventually(t, 20*time.Second, "the share-state shards spread over both nodes", spread)
	if m := a.m.Meta(); m.ShareUnits != clusterShareUnits || m.Total() != 2+1+clusterShareUnits {
		t.Fatalf("meta %+v", m)
	}

	// Partitions on the shards the first node serves.
	var keys []sharestate.Key
	for q := int32(0); len(keys) < plParts; q++ {
		if k := key("g", q); a.h.Holds(a.h.ShardFor(k)) {
			keys = append(keys, k)
		}
	}
	l := plog{end: plLogEnd, batch: 10}
	m := &plModel{}
	var never atomic.Bool // every answer counts: an answer is a write etcd committed
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for c := range 3 {
		wg.Go(func() {
			consume(ctx, a.h, keys, l, m, &never, fmt.Sprintf("m%d", c), rand.New(rand.NewPCG(7, uint64(c))))
		})
	}
	testkit.Eventually(t, 30*time.Second, "40 acknowledgements answered", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.acks >= 40
	})
	cut := time.Now()
	proxies.Cut()
	testkit.Eventually(t, clusterTTL+15*time.Second, "the second node serves every share-state shard", func() bool {
		return slices.Equal(b.h.Held(), []int{0, 1, 2, 3}) && b.h.Ready() == nil && len(a.h.Held()) == 0
	})
	took := time.Since(cut)
	cancel()
	wg.Wait()
	m.mu.Lock()
	acks := m.acks
	m.mu.Unlock()
	redelivered, kept := drain(t, b.h, keys, l, m)
	t.Logf("failover took %v (lease TTL %v); %d acknowledgements answered; %d records held at the failover accepted by their members after it; %d records acquired on the dead node delivered again",
		took, clusterTTL, acks, kept, redelivered)
	if kept == 0 {
		t.Error("no record was held at the failover: the test checked nothing of locks kept")
	}
}
