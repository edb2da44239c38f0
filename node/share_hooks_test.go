package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareWait bounds each wait of the share hooks' tests for what the
// hooks do in the background.
const shareWait = 20 * time.Second

// TestShareHooks: a share member that leaves gets its acquired records
// released at once (available again, the delivery count kept), not at
// its locks' expiry; one whose session expires too; and a deleted share
// group's share-partition state is dropped and its deletion list emptied,
// both right after DeleteGroups and, for a deletion a crash left undone
// (the hooks stopped before it), at the next start.
func TestShareHooks(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{KafkaListen: "127.0.0.1:0", GRPCListen: "-", HTTPListen: "-", DataDir: dir}
	cfg.Groups = coordinator.Config{Shards: 2, InitialRebalanceDelay: -1, ShareSessionTimeout: 3 * time.Second, ShareHeartbeatInterval: time.Second}
	// Locks far longer than the test: a record available again was
	// released, not expired.
	cfg.ShareState.Limits.LockDuration = time.Hour
	n := startShareNode(t, cfg)
	cl := shareClient(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctx, 1, 1, nil, "t")
	if err != nil || created.Err != nil {
		t.Fatalf("create topic: %v %v", err, created.Err)
	}
	key := func(group string) sharestate.Key {
		return sharestate.Key{Group: group, TopicID: created.ID, Partition: 0}
	}

	// A member that leaves: its records come back at once. (Members
	// take their records before they join, so that no expiry can come
	// first on a slow machine: the share coordinator does not check
	// membership.)
	acquire(t, n, key("g"), "m1", 0, 9)
	wantRuns(t, n, key("g"), "0-9 acquired by m1 (1)")
	join(t, cl, "g", "m1")
	heartbeat(t, cl, "g", "m1", -1)
	waitRuns(t, n, key("g"), "0-9 available (1)")

	// A member whose session expires: likewise.
	acquire(t, n, key("g"), "m2", 0, 4)
	wantRuns(t, n, key("g"), "0-4 acquired by m2 (2), 5-9 available (1)")
	join(t, cl, "g", "m2")
	waitRuns(t, n, key("g"), "0-4 available (2), 5-9 available (1)")

	// A deleted group: its state goes, and so does its deletion list.
	deleteGroup(t, adm, "g")
	waitRuns(t, n, key("g"), "no state")
	waitNoDeletions(t, n)

	// A deletion the hooks never saw (stopped, as in a crash between
	// DeleteGroups and the drop) is done at the next start.
	acquire(t, n, key("h"), "m3", 0, 2)
	join(t, cl, "h", "m3")
	heartbeat(t, cl, "h", "m3", -1)
	waitRuns(t, n, key("h"), "0-2 available (1)")
	n.shareHooks.stop()
	deleteGroup(t, adm, "h")
	if got := runs(t, n, key("h")); got != "0-2 available (1)" {
		t.Fatalf("with the hooks stopped, the deleted group's state is %q", got)
	}
	cl.Close()
	shutdown(t, n)
	n = startShareNode(t, cfg)
	waitRuns(t, n, key("h"), "no state")
	waitNoDeletions(t, n)
}

func startShareNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, n) })
	return n
}

func shutdown(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func shareClient(t *testing.T, n *Node) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// heartbeat sends member's ShareGroupHeartbeat of epoch (0: a join to
// topic t, -1: its leave) and returns the epoch it is given.
func heartbeat(t *testing.T, cl *kgo.Client, group, member string, epoch int32) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shareWait)
	defer cancel()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{"t"}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("share heartbeat of %s, epoch %d: %v %v", member, epoch, err, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.MemberEpoch
}

func join(t *testing.T, cl *kgo.Client, group, member string) {
	t.Helper()
	if epoch := heartbeat(t, cl, group, member, 0); epoch < 1 {
		t.Fatalf("%s joined at epoch %d", member, epoch)
	}
}

// acquire has member take records first to last of k, as a ShareFetch
// does: where to read, then what the log had there.
func acquire(t *testing.T, n *Node, k sharestate.Key, member string, first, last int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shareWait)
	defer cancel()
	sc := n.ShareCoordinator()
	next := sc.Next(ctx, sharestate.NextCmd{Key: k, Log: sharestate.Log{Start: 0, Latest: 10, AtTime: -1}, Reset: sharestate.ResetEarliest})
	if next.Code != 0 || next.Offset != first {
		t.Fatalf("next of %v: %v at %d, want %d", k, kerr.ErrorForCode(next.Code), next.Offset, first)
	}
	got := sc.Acquire(ctx, sharestate.AcquireCmd{Key: k, Member: member, FetchOffset: first, Batches: []sharestate.Range{{First: first, Last: last}},
		MaxRecords: int(last - first + 1), Mode: sharestate.RecordLimit})
	if got.Code != 0 || len(got.Records) != 1 || got.Records[0].First != first || got.Records[0].Last != last {
		t.Fatalf("acquire %d-%d of %v for %s: %v %+v", first, last, k, member, kerr.ErrorForCode(got.Code), got.Records)
	}
}

// runs describes k's records: "first-last state [by member] (delivery
// count)", comma-separated, or "no state".
func runs(t *testing.T, n *Node, k sharestate.Key) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shareWait)
	defer cancel()
	d := n.ShareCoordinator().Describe(ctx, sharestate.DescribeCmd{Tenant: k.Tenant, Group: k.Group, Partitions: []sharestate.Key{k}})[0]
	switch d.Code {
	case 0:
	case kerr.GroupIDNotFound.Code:
		return "no state"
	default:
		t.Fatalf("describe %v: %v", k, kerr.ErrorForCode(d.Code))
	}
	s := ""
	for i, r := range d.Runs {
		if i > 0 {
			s += ", "
		}
		state := map[record.ShareState]string{record.ShareAvailable: "available", record.ShareAcquired: "acquired", record.ShareAcknowledged: "acknowledged", record.ShareArchived: "archived"}[r.State]
		if r.Member != "" {
			state += " by " + r.Member
		}
		s += fmt.Sprintf("%d-%d %s (%d)", r.First, r.Last, state, r.DeliveryCount)
	}
	return s
}

func wantRuns(t *testing.T, n *Node, k sharestate.Key, want string) {
	t.Helper()
	if got := runs(t, n, k); got != want {
		t.Fatalf("%v: %s, want %s", k, got, want)
	}
}

// waitRuns waits for k's records to be described as one of want.
func waitRuns(t *testing.T, n *Node, k sharestate.Key, want ...string) {
	t.Helper()
	deadline := time.Now().Add(shareWait)
	for {
		got := runs(t, n, k)
		for _, w := range want {
			if got == w {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v: %s, want one of %q", k, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func deleteGroup(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shareWait)
	defer cancel()
	resp, err := adm.DeleteGroup(ctx, group)
	if err != nil || resp.Err != nil {
		t.Fatalf("delete %s: %v %v", group, err, resp.Err)
	}
}

// waitNoDeletions waits for every group shard to have no share-partition
// state left to drop.
func waitNoDeletions(t *testing.T, n *Node) {
	t.Helper()
	deadline := time.Now().Add(shareWait)
	for {
		left := 0
		for i := range n.Coordinator().Shards() {
			ctx, cancel := context.WithTimeout(context.Background(), shareWait)
			ds, code, err := n.Coordinator().ShareDeletions(ctx, i)
			cancel()
			if err != nil || code != 0 {
				t.Fatalf("shard %d's deletions: %v %v", i, err, kerr.ErrorForCode(code))
			}
			left += len(ds)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deleted share groups' state still to drop", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
