package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/observe"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMetricsCountEvents(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := admin.NewMetrics(reg)
	ctx := context.Background()
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = 27
	for range 3 {
		m.RequestAnswered(ctx, observe.Request{Key: 12, Version: 4}, observe.Answer{Resp: resp, Latency: time.Millisecond})
	}
	m.RequestAnswered(ctx, observe.Request{Key: 0, Version: 9}, observe.Answer{})
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceStarted, Protocol: "classic", Cause: observe.CauseMemberJoined, Reason: "Adding new member m-1 with group instance id null; client reason: not provided"})
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceStarted, Protocol: "classic", Cause: observe.CauseMemberJoined, Reason: "Adding new member m-2 with group instance id null; client reason: not provided"})
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Protocol: "classic", Cause: observe.CauseMemberJoined, Duration: 2 * time.Second,
		Phases: observe.Phases{Join: 1500 * time.Millisecond, Sync: 500 * time.Millisecond}, PartitionsMoved: 3})
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceStarted, Protocol: "consumer", Cause: observe.CauseMetadataChanged, Reason: "the subscribed topics' metadata changed"})
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Protocol: "consumer", Cause: observe.CauseMetadataChanged, Duration: time.Second,
		Phases: observe.Phases{Revocation: time.Second}, PartitionsMoved: 0})
	// A classic group of another protocol type: nothing moved is known.
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Protocol: "classic", Cause: observe.CauseMemberLeft, Duration: time.Second,
		Phases: observe.Phases{Join: time.Second}, PartitionsMoved: -1})
	// A consumer rebalance under way when its shard loaded: its duration
	// (0) only.
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Protocol: "consumer", PartitionsMoved: -1})
	m.Group(ctx, observe.GroupEvent{Kind: observe.MemberExpired, Protocol: "consumer"})
	m.BatchWritten(observe.Batch{Records: 5, Latency: time.Millisecond})
	m.BatchWritten(observe.Batch{Err: errors.New("disk")})
	for i := range 4 {
		m.Shard(observe.ShardEvent{Kind: observe.ShardLoaded, Shard: uint16(i)})
	}
	m.Shard(observe.ShardEvent{Kind: observe.ShardUnloaded, Shard: 1, Reason: "store write failed: disk"})
	// Given up after a failed write, then unloaded (cluster mode: the
	// node lost its lease): one shard less, not two.
	m.Shard(observe.ShardEvent{Kind: observe.ShardUnloaded, Shard: 1, Reason: "unloaded"})
	// Unloaded while it was loading: never counted.
	m.Shard(observe.ShardEvent{Kind: observe.ShardUnloaded, Shard: 9, Reason: "unloaded"})

	check := func(name string, got, want float64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("heartbeats with REBALANCE_IN_PROGRESS", value(t, reg, "cohort_requests_total", map[string]string{"api": "Heartbeat", "version": "4", "error_code": "27"}), 3)
	check("produce without a response", value(t, reg, "cohort_requests_total", map[string]string{"api": "Produce", "version": "9", "error_code": "-1"}), 1)
	check("rebalances", value(t, reg, "cohort_rebalances_total", map[string]string{"type": "classic", "cause": "member-joined"}), 2)
	check("rebalances", value(t, reg, "cohort_rebalances_total", map[string]string{"type": "consumer", "cause": "metadata-changed"}), 1)
	n, sum := histogram(t, reg, "cohort_join_barrier_wait_seconds", nil)
	check("join barriers", n, 2)
	check("join barrier seconds", sum, 2.5)
	n, sum = histogram(t, reg, "cohort_rebalance_partitions_moved", map[string]string{"type": "classic"})
	check("classic rebalances with partitions moved known", n, 1)
	check("classic partitions moved", sum, 3)
	n, _ = histogram(t, reg, "cohort_rebalance_partitions_moved", map[string]string{"type": "consumer"})
	check("consumer rebalances with partitions moved known", n, 1)
	n, _ = histogram(t, reg, "cohort_rebalance_duration_seconds", map[string]string{"type": "consumer"})
	check("consumer rebalances completed", n, 2)
	check("expiries", value(t, reg, "cohort_group_member_events_total", map[string]string{"type": "consumer", "event": "expired"}), 1)
	check("batches ok", value(t, reg, "cohort_store_batches_total", map[string]string{"outcome": "ok"}), 1)
	check("batches failed", value(t, reg, "cohort_store_batches_total", map[string]string{"outcome": "error"}), 1)
	check("shards loaded", value(t, reg, "cohort_shards_loaded", nil), 3)
}

// histogram gathers reg and returns the sample count and sum of the
// histogram name whose labels include labels.
func histogram(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (count, sum float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metrics
				}
			}
			h := m.GetHistogram()
			return float64(h.GetSampleCount()), h.GetSampleSum()
		}
	}
	t.Errorf("no histogram %s%v", name, labels)
	return -1, -1
}

// value gathers reg and returns the counter or gauge of the series name
// whose labels include labels.
func value(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Errorf("no series %s%v", name, labels)
	return -1
}

// TestMetricsCluster: cluster events are counted by kind, and the nodes
// in each state are the last event's counts.
func TestMetricsCluster(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := admin.NewMetrics(reg)
	m.Cluster(observe.ClusterEvent{Kind: observe.NodeJoined, Node: 1, Serving: 1})
	m.Cluster(observe.ClusterEvent{Kind: observe.NodeJoined, Node: 2, Serving: 2})
	m.Cluster(observe.ClusterEvent{Kind: observe.NodeDraining, Node: 2, Serving: 1, Draining: 1})
	m.Cluster(observe.ClusterEvent{Kind: observe.NodeSuspended, Node: 1, Self: true, Draining: 1, Suspended: 1})
	m.Cluster(observe.ClusterEvent{Kind: 200}) // not of the set: ignored
	for event, want := range map[string]float64{"joined": 2, "draining": 1, "suspended": 1} {
		if got := value(t, reg, "cohort_cluster_node_events_total", map[string]string{"event": event}); got != want {
			t.Errorf("events %s: %v, want %v", event, got, want)
		}
	}
	for state, want := range map[string]float64{"serving": 0, "draining": 1, "suspended": 1} {
		if got := value(t, reg, "cohort_cluster_nodes", map[string]string{"state": state}); got != want {
			t.Errorf("nodes %s: %v, want %v", state, got, want)
		}
	}
}
