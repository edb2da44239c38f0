package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/observetest"
)

// waitEvent waits until r has recorded an event of kind about node.
func waitEvent(t *testing.T, r *observetest.Recorder, within time.Duration, who string, kind observe.ClusterEventKind, node int32) observe.ClusterEvent {
	t.Helper()
	var found observe.ClusterEvent
	s, ok := r.Wait(within, func(s observetest.Snapshot) bool {
		for _, e := range s.Cluster {
			if e.Kind == kind && e.Node == node {
				found = e
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("%s saw no %v of node %d within %v; saw %+v", who, kind, node, within, s.Cluster)
	}
	return found
}

// TestNodeEventsOnEtcd: every node reports the others joining; a node
// that stops renewing its lease (killed) is lost to the others once it
// expires, and rejoined when it registers again; one that leaves is
// draining, then lost.
func TestNodeEventsOnEtcd(t *testing.T) {
	ep := etcdtest.StartProcs(t, 1).Endpoints()
	recs := map[int32]*observetest.Recorder{}
	start := func(id int32) *node {
		r := &observetest.Recorder{}
		recs[id] = r
		cfg := nodeConfig("/ev", id, nil)
		cfg.OnNodeEvent = func(e observe.ClusterEvent) { r.Cluster(e) }
		return joinConfig(t, ep, cfg)
	}
	_, b, c := start(1), start(2), start(3)
	for id := int32(1); id <= 3; id++ {
		for other := int32(1); other <= 3; other++ {
			waitEvent(t, recs[id], 5*time.Second, fmt.Sprintf("node %d", id), observe.NodeJoined, other)
		}
	}
	c.m.Crash()
	for _, id := range []int32{1, 2} {
		e := waitEvent(t, recs[id], 3*testTTL, "a survivor", observe.NodeLost, 3)
		if e.Self || e.Serving != 2 || e.Draining != 0 || e.Suspended != 0 || e.Reason != "lease expired or revoked" {
			t.Errorf("node %d's lost event: %+v", id, e)
		}
	}
	start(3)
	for _, id := range []int32{1, 2} {
		if e := waitEvent(t, recs[id], 5*time.Second, "a survivor", observe.NodeRejoined, 3); e.Serving != 3 {
			t.Errorf("node %d's rejoined event: %+v", id, e)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.m.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, recs[1], 5*time.Second, "node 1", observe.NodeDraining, 2)
	if e := waitEvent(t, recs[1], 5*time.Second, "node 1", observe.NodeLost, 2); e.Reason != "left after draining" || e.Serving != 2 {
		t.Errorf("node 1's lost event of the node that left: %+v", e)
	}
}
