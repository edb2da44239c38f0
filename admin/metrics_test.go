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

func TestReasonCategory(t *testing.T) {
	for reason, want := range map[string]string{
		"Adding new member m-1 with group instance id None; client reason: not provided": "member-joined",
		"Leader m-1 re-joining group during Stable; client reason: session timed out":    "member-joined",
		"Updating metadata for member m-1 during Stable; client reason: not provided":    "metadata-changed",
		"Removing member m-1 on LeaveGroup; client reason: the consumer is being closed": "member-left",
		"removing member m-1 on heartbeat expiration":                                    "member-expired",
		"Removing [m-1, m-2] on pending sync request expiration":                         "timeout",
		"member m-1 joined":                       "member-joined",
		"member m-1 changed its subscription":     "subscription-changed",
		"the subscribed topics' metadata changed": "metadata-changed",
		"member m-1 left":                         "member-left",
		"member m-1's session expired":            "member-expired",
		"member m-1 failed to revoke its partitions within its rebalance timeout":                  "timeout",
		"Freshly-loaded group is over capacity (3). Rebalancing in order to give a chance for ...": "other",
	} {
		if got := admin.ReasonCategory(reason); got != want {
			t.Errorf("%q: %s, want %s", reason, got, want)
		}
	}
}

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
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceStarted, Protocol: "classic", Reason: "member m joined"})
	m.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Protocol: "classic", Duration: 2 * time.Second})
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
	check("rebalances", value(t, reg, "cohort_rebalances_total", map[string]string{"type": "classic", "reason": "member-joined"}), 1)
	check("expiries", value(t, reg, "cohort_group_member_events_total", map[string]string{"type": "consumer", "event": "expired"}), 1)
	check("batches ok", value(t, reg, "cohort_store_batches_total", map[string]string{"outcome": "ok"}), 1)
	check("batches failed", value(t, reg, "cohort_store_batches_total", map[string]string{"outcome": "error"}), 1)
	check("shards loaded", value(t, reg, "cohort_shards_loaded", nil), 3)
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
