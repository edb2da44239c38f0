package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// TestGroupStatusNoBetterThanItsPartitions: a member holds the only
// partition of events and has committed nothing, so the partition has no
// lag status; neither has the group in GET /api/v1/groups/{group}, which
// `cohort groups describe --admin-url` shows (it said OK, the partition
// UNKNOWN); nor in the list, which said OK while the detail said
// nothing.
func TestGroupStatusNoBetterThanItsPartitions(t *testing.T) {
	n := testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0", LagSampleInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "events"); err != nil || r.Err != nil {
		t.Fatalf("create events: %v %v", err, r.Err)
	}
	join(t, n.Coordinator(), "", "orders")
	// Sampled: the tracker has the group, with no partition it can sample.
	var list struct{ Groups []admin.GroupSummary }
	testkit.Eventually(t, 10*time.Second, "orders in the sampled list", func() bool {
		getJSON(t, n.HTTPAddr(), "/api/v1/groups", &list)
		return len(list.Groups) == 1 && list.Groups[0].Group == "orders"
	})
	// The list (and /metrics, from the same tracker) agrees: the held
	// partition is not evaluated, so neither is the group.
	if list.Groups[0].Status != admin.StatusUnknown {
		t.Errorf("the list's status %q while the group's only partition has none, want none", list.Groups[0].Status)
	}
	var d admin.GroupDetail
	getJSON(t, n.HTTPAddr(), "/api/v1/groups/orders", &d)
	if len(d.Partitions) != 1 || d.Partitions[0].MemberID == "" || d.Partitions[0].Status != admin.StatusUnknown {
		t.Fatalf("partitions %+v, want events/0 held, with no status", d.Partitions)
	}
	if d.Status != admin.StatusUnknown {
		t.Errorf("group status %q while its only partition has none, want none", d.Status)
	}
}
