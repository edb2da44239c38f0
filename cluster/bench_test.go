package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/internal/etcdtest"
)

// BenchmarkJoinMoves: a fourth node joins three that share 48 shards
// (16 each) on an embedded etcd. Reported: the shards that moved (the
// goal, and the minimum: exactly 12), how many of them were loaded cold
// (not preloaded first), and the time from the join until the four
// nodes serve 12 each.
func BenchmarkJoinMoves(b *testing.B) {
	for range b.N {
		b.StopTimer()
		ep := etcdtest.StartProcs(b, 1).Endpoints()
		prefix := fmt.Sprintf("/bench-%d", time.Now().UnixNano())
		var nodes []*benchNode
		for id := int32(1); id <= 3; id++ {
			nodes = append(nodes, benchJoin(b, ep, prefix, id))
		}
		waitHeld(b, nodes, 16)
		before := map[int]int32{}
		for _, n := range nodes {
			for _, u := range n.units.heldList() {
				before[u] = n.id
			}
		}
		b.StartTimer()
		t0 := time.Now()
		nodes = append(nodes, benchJoin(b, ep, prefix, 4))
		waitHeld(b, nodes, 12)
		took := time.Since(t0)
		b.StopTimer()
		moved := 0
		for _, n := range nodes {
			for _, u := range n.units.heldList() {
				if before[u] != n.id {
					moved++
				}
			}
		}
		_, cold := nodes[3].units.counts()
		b.ReportMetric(float64(moved), "moved")
		b.ReportMetric(float64(cold), "cold")
		b.ReportMetric(float64(took.Milliseconds()), "ms")
		for _, n := range nodes {
			n.m.Close()
		}
	}
}

type benchNode struct {
	id    int32
	m     *cluster.Member
	units *units
}

func benchJoin(b *testing.B, endpoints []string, prefix string, id int32) *benchNode {
	cli := etcdtest.NewClient(b, endpoints)
	m, err := cluster.Join(context.Background(), cluster.Config{
		Client: cli, Prefix: prefix, NodeID: id, KafkaAddr: fmt.Sprintf("127.0.0.1:%d", 9000+id),
		LeaseTTL: testTTL, Units: 48,
	})
	if err != nil {
		b.Fatal(err)
	}
	n := &benchNode{id: id, m: m, units: newUnits()}
	m.Run(n.units)
	b.Cleanup(m.Close)
	return n
}

func waitHeld(b *testing.B, nodes []*benchNode, each int) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, n := range nodes {
			ok = ok && len(n.units.heldList()) == each
		}
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("the nodes did not reach %d shards each", each)
}
