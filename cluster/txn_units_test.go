package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
)

// TestTxnUnitsAddedToOlderCluster: a cluster whose meta predates the
// transaction coordinator's units (no txn_units) gets them once, as many
// as it has coordinator shards, whatever the joining nodes configure;
// the units it had keep their owners (the assignment grows, it is not
// redone), and the new units are served.
func TestTxnUnitsAddedToOlderCluster(t *testing.T) {
	unitsAdded(t, 0, func(i int) (txn, share int) { return 5 + i, 0 }, func(m cluster.Meta) cluster.Meta {
		m.TxnUnits = testUnits - 1
		return m
	})
}

// TestShareUnitsAddedToOlderCluster: the same for the share
// coordinator's units (share_units), in a cluster that has transaction
// units: they come after those.
func TestShareUnitsAddedToOlderCluster(t *testing.T) {
	unitsAdded(t, testUnits-1, func(i int) (txn, share int) { return 7, 5 + i }, func(m cluster.Meta) cluster.Meta {
		m.ShareUnits = testUnits - 1
		return m
	})
}

// TestUnitsAddedToOldestCluster: a cluster older than both gets both at
// once.
func TestUnitsAddedToOldestCluster(t *testing.T) {
	unitsAdded(t, 0, func(i int) (txn, share int) { return 3, 4 + i }, func(m cluster.Meta) cluster.Meta {
		m.TxnUnits, m.ShareUnits = testUnits-1, testUnits-1
		return m
	})
}

// unitsAdded starts a cluster of one node with testUnits units and
// oldTxn transaction units (an older version's layout), then two newer
// nodes at once configuring the unit counts newer gives them: both must
// read the meta want makes of the old one, stored once; once the old
// node goes, the new leader plans every unit, keeping the owners of the
// old ones.
func unitsAdded(t *testing.T, oldTxn int, newer func(i int) (txn, share int), want func(cluster.Meta) cluster.Meta) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	cfg := nodeConfig("/t", 1, nil)
	cfg.TxnUnits = oldTxn
	old := joinConfig(t, ep, cfg)
	oldMeta := old.m.Meta()
	if oldMeta.TxnUnits != oldTxn || oldMeta.ShareUnits != 0 || oldMeta.Total() != testUnits+oldTxn {
		t.Fatalf("older cluster's meta %+v", oldMeta)
	}
	testkit.Eventually(t, 10*time.Second, "the older cluster's units all served", func() bool {
		return len(old.units.heldList()) == oldMeta.Total()
	})
	before := old.m.Assignment()

	// Two newer nodes join at once: one of them writes the new units,
	// both read the same.
	var wg sync.WaitGroup
	ms := make([]*cluster.Member, 2)
	for i := range ms {
		wg.Go(func() {
			txn, share := newer(i)
			m, err := cluster.Join(context.Background(), cluster.Config{
				Client: etcdtest.NewClient(t, ep), Prefix: "/t", NodeID: int32(2 + i),
				KafkaAddr: fmt.Sprintf("127.0.0.1:%d", 9002+i), DirID: fmt.Sprintf("dir-%d", 2+i),
				LeaseTTL: testTTL, Units: 99, TxnUnits: txn, ShareUnits: share,
			})
			if err != nil {
				t.Errorf("join: %v", err)
				return
			}
			ms[i] = m
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	wantMeta := want(oldMeta)
	for i, m := range ms {
		if m.Meta() != wantMeta {
			t.Fatalf("node %d read %+v, want %+v", 2+i, m.Meta(), wantMeta)
		}
	}
	cli := etcdtest.NewClient(t, ep)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/t/cluster/meta")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read meta: %v", err)
	}
	var stored cluster.Meta
	if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil || stored != wantMeta {
		t.Fatalf("stored meta %s, want %+v", resp.Kvs[0].Value, wantMeta)
	}

	// The new nodes lead nothing (node 1 leads, with its older view),
	// so promote one: close node 1; the new leader plans every unit.
	n2, n3 := &node{id: 2, m: ms[0], units: newUnits()}, &node{id: 3, m: ms[1], units: newUnits()}
	n2.m.Run(n2.units)
	n3.m.Run(n3.units)
	t.Cleanup(n2.m.Close)
	t.Cleanup(n3.m.Close)
	old.m.Close()
	total := wantMeta.Total()
	deadline := time.Now().Add(15 * time.Second)
	for {
		held := map[int]int{}
		for _, n := range []*node{n2, n3} {
			for _, u := range n.units.heldList() {
				held[u]++
			}
		}
		all := len(held) == total
		for _, c := range held {
			all = all && c == 1
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("units held %v, want each of %d once", held, total)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if a := n2.m.Assignment(); len(a.Owner) != total || a.Epoch <= before.Epoch {
		t.Fatalf("assignment %+v after %+v", a, before)
	}
}

// TestPlanGrowsKeepingOwners: an assignment with fewer units than the
// cluster has (transaction units added) keeps its units' owners and
// owners; the new units go to the nodes with room.
func TestPlanGrowsKeepingOwners(t *testing.T) {
	cur := cluster.Assignment{Epoch: 7, Owner: []int32{1, 2, 1, 2}, Next: []int32{cluster.None, cluster.None, cluster.None, cluster.None}, Since: []int64{0, 0, 0, 0}}
	next, changed := cluster.Plan([]int{8}, cur, []int32{1, 2}, nil, nil, nil)
	if !changed || len(next.Owner) != 8 {
		t.Fatalf("plan %+v, changed %v", next, changed)
	}
	for u := range 4 {
		if next.Owner[u] != cur.Owner[u] {
			t.Errorf("unit %d moved from %d to %d cold", u, cur.Owner[u], next.Owner[u])
		}
	}
	count := map[int32]int{}
	for _, o := range next.Owner[4:] {
		count[o]++
	}
	if count[1]+count[2] != 4 {
		t.Errorf("new units owned %v", next.Owner[4:])
	}
}

// TestProducerIDsUniqueAcrossNodes: producer id blocks reserved through
// etcd by several nodes at once (the topic log reserves 1,000 at a time,
// as Kafka's ProducerIdManager) never overlap.
func TestProducerIDsUniqueAcrossNodes(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	var members []*cluster.Member
	for id := int32(1); id <= 3; id++ {
		members = append(members, join(t, ep, "/t", id).m)
	}
	const block, perNode = 1000, 20
	var mu sync.Mutex
	firsts := map[int64]int32{}
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Go(func() {
			for range perNode {
				first, err := m.ReserveProducerIDs(block)
				if err != nil {
					t.Errorf("node %d: %v", m.NodeID(), err)
					return
				}
				mu.Lock()
				if other, dup := firsts[first]; dup {
					t.Errorf("block at %d handed to nodes %d and %d", first, other, m.NodeID())
				}
				firsts[first] = m.NodeID()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(firsts) != 3*perNode {
		t.Fatalf("%d blocks, want %d", len(firsts), 3*perNode)
	}
	for first := range firsts {
		if first%block != 0 {
			t.Errorf("block at %d: not a multiple of %d", first, block)
		}
		for other := range firsts {
			if other != first && other > first && other < first+block {
				t.Errorf("blocks at %d and %d overlap", first, other)
			}
		}
	}
}

// TestPlanBalancesEachClass: the group coordinator's units and the
// transaction coordinator's are each spread over the nodes. One balance
// over all units kept a node with every transaction shard and another
// with every group shard (a cluster test found no group coordinated by
// node 1).
func TestPlanBalancesEachClass(t *testing.T) {
	// 17 group+assigner units all on node 2, 16 transaction units all on
	// node 1: balanced as a whole (17/16), not per class.
	cur := cluster.Assignment{Epoch: 3}
	for u := range 33 {
		o := int32(2)
		if u >= 17 {
			o = 1
		}
		cur.Owner = append(cur.Owner, o)
		cur.Next = append(cur.Next, cluster.None)
		cur.Since = append(cur.Since, 0)
	}
	next, _ := cluster.Plan([]int{17, 16}, cur, []int32{1, 2}, nil, nil, map[int]bool{})
	for _, class := range [][2]int{{0, 17}, {17, 33}} {
		count := map[int32]int{}
		for u := class[0]; u < class[1]; u++ {
			target := next.Owner[u]
			if next.Next[u] != cluster.None {
				target = next.Next[u]
			}
			count[target]++
		}
		k := class[1] - class[0]
		if count[1] < k/2 || count[2] < k/2 {
			t.Errorf("units %d-%d go to %v, want about half each", class[0], class[1]-1, count)
		}
	}
}

// TestPlanClassesAndTotalsEven: on three nodes, each class and the totals
// are within one unit of even.
func TestPlanClassesAndTotalsEven(t *testing.T) {
	next, _ := cluster.Plan([]int{17, 16}, cluster.Assignment{}, []int32{1, 2, 3}, nil, nil, nil)
	spread := func(m map[int32]int) int {
		lo, hi := 1<<30, 0
		for _, n := range []int32{1, 2, 3} {
			lo, hi = min(lo, m[n]), max(hi, m[n])
		}
		return hi - lo
	}
	total := map[int32]int{}
	for _, class := range [][2]int{{0, 17}, {17, 33}} {
		count := map[int32]int{}
		for u := class[0]; u < class[1]; u++ {
			count[next.Owner[u]]++
			total[next.Owner[u]]++
		}
		if spread(count) > 1 {
			t.Errorf("units %d-%d: %v", class[0], class[1]-1, count)
		}
	}
	if spread(total) > 1 {
		t.Errorf("totals %v, want within one", total)
	}
}
