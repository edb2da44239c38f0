package logs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/logs"
	"github.com/cohort-dev/cohort/store"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func newLogs(level slog.Level, opts logs.Options) (*logs.Observer, *buffer) {
	var buf buffer
	return logs.New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})), opts), &buf
}

// TestFencedAtInfo: a write fenced by the shard's next owner, and the
// shard's unloading for it, are INFO (a cluster's planned moves fence
// the last owner when it still writes); other failures stay WARN.
func TestFencedAtInfo(t *testing.T) {
	o, buf := newLogs(slog.LevelInfo, logs.Options{})
	defer o.Close()
	fenced := fmt.Errorf("etcd store: apply under %q: %w", "c", store.ErrFenced)
	o.BatchWritten(observe.Batch{Shard: 9, Records: 1, Err: fenced})
	o.Shard(observe.ShardEvent{Kind: observe.ShardUnloaded, Shard: 9, Reason: observe.ReasonFenced})
	o.BatchWritten(observe.Batch{Shard: 4, Records: 2, Err: errors.New("disk")})
	out := buf.String()
	for _, want := range []string{
		`level=INFO msg="store write fenced: another node has the shard" shard=9 records=1`,
		`level=INFO msg="shard unloaded" shard=9 reason="fenced: another owner has the shard"`,
		`level=WARN msg="store write failed" shard=4 records=2 err=disk`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
}

func TestRebalancesAtInfo(t *testing.T) {
	o, buf := newLogs(slog.LevelInfo, logs.Options{})
	defer o.Close()
	ctx := context.Background()
	o.Group(ctx, observe.GroupEvent{Kind: observe.MemberJoined, Group: "g", Protocol: "classic", Member: "m1"})
	o.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceStarted, Group: "g", Protocol: "classic", Generation: 1, Members: 1, Reason: "Adding new member m1",
		Cause: observe.CauseMemberJoined, Member: "m1"})
	o.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Group: "g", Protocol: "classic", Generation: 1, Members: 1, Duration: 3 * time.Second,
		Cause: observe.CauseMemberJoined, Member: "m1", Phases: observe.Phases{Join: 2500 * time.Millisecond, Sync: 500 * time.Millisecond}, PartitionsMoved: 4})
	o.Group(ctx, observe.GroupEvent{Kind: observe.RebalanceCompleted, Group: "c", Protocol: "consumer", Generation: 7, Members: 2, Duration: 2 * time.Second,
		Cause: observe.CauseMemberLeft, Member: "m2", Phases: observe.Phases{Revocation: 1500 * time.Millisecond, Sync: 500 * time.Millisecond}, PartitionsMoved: 3})
	o.Group(ctx, observe.GroupEvent{Kind: observe.MemberExpired, Group: "g", Protocol: "classic", Member: "m1", Reason: "session timed out"})
	o.Shard(observe.ShardEvent{Kind: observe.ShardUnloaded, Shard: 3, Reason: "store write failed: disk"})
	o.BatchWritten(observe.Batch{Shard: 3, Records: 2, Err: errors.New("disk")})
	out := buf.String()
	for _, want := range []string{
		`level=INFO msg="rebalance started" group=g type=classic generation=1 members=1 cause=member-joined member=m1 reason="Adding new member m1"`,
		`level=INFO msg="rebalance completed" group=g type=classic generation=1 members=1 cause=member-joined member=m1 took=3s partitions_moved=4 join=2.5s sync=500ms`,
		`level=INFO msg="rebalance completed" group=c type=consumer generation=7 members=2 cause=member-left member=m2 took=2s partitions_moved=3 assignment=0s revocation=1.5s reconciliation=500ms`,
		`level=INFO msg="member expired" group=g type=classic generation=0 members=0 member=m1 reason="session timed out"`,
		`level=WARN msg="shard unloaded" shard=3 reason="store write failed: disk"`,
		`level=WARN msg="store write failed" shard=3 records=2 err=disk`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "member joined") {
		t.Errorf("a DEBUG line at INFO:\n%s", out)
	}
	if o.WantsRequests() {
		t.Error("wants requests at INFO: the wire server would pay for nothing")
	}
}

func TestRequestsAtDebug(t *testing.T) {
	o, buf := newLogs(slog.LevelDebug, logs.Options{})
	defer o.Close()
	if !o.WantsRequests() || !observe.WantsRequests(observe.Multi(o, observe.Nop{})) {
		t.Fatal("does not want requests at DEBUG")
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = 25
	o.RequestAnswered(context.Background(), observe.Request{Key: 12, Version: 4, ClientID: "c", Host: "127.0.0.1"}, observe.Answer{Resp: resp, Latency: time.Millisecond})
	if want := `level=DEBUG msg=request api=Heartbeat version=4 client_id=c host=127.0.0.1 bytes=0 latency=1ms error_code=25 answered=true`; !strings.Contains(buf.String(), want) {
		t.Fatalf("missing %s in:\n%s", want, buf.String())
	}
}

// A flapping group cannot flood the log: past the burst, lines of a kind
// are counted and reported once.
func TestRateLimited(t *testing.T) {
	o, buf := newLogs(slog.LevelInfo, logs.Options{Burst: 5, Interval: time.Hour})
	for i := range 50 {
		o.Group(context.Background(), observe.GroupEvent{Kind: observe.RebalanceStarted, Group: "flapping", Generation: int32(i)})
	}
	o.Close()
	out := buf.String()
	if n := strings.Count(out, `msg="rebalance started"`); n != 5 {
		t.Errorf("%d lines logged, want the burst of 5:\n%s", n, out)
	}
	if !strings.Contains(out, `warning="rebalance started" suppressed=45`) {
		t.Errorf("no suppressed count:\n%s", out)
	}
}

// TestClusterEventsAtInfo: a cluster's node events are INFO lines naming
// the node, with the counts after them.
func TestClusterEventsAtInfo(t *testing.T) {
	o, buf := newLogs(slog.LevelInfo, logs.Options{})
	defer o.Close()
	o.Cluster(observe.ClusterEvent{Kind: observe.NodeLost, Node: 3, Kafka: "h:9092", Reason: "lease expired or revoked", Serving: 2})
	o.Cluster(observe.ClusterEvent{Kind: observe.NodeSuspended, Node: 1, Self: true, Serving: 1, Suspended: 1})
	out := buf.String()
	for _, want := range []string{
		`level=INFO msg="cluster node lost" node=3 kafka=h:9092 reason="lease expired or revoked" serving=2 draining=0 suspended=0`,
		`level=INFO msg="cluster node suspended" node=1 self=true serving=1 draining=0 suspended=1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
}
