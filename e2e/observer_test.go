package e2e

// The observer seam, end to end: a node started with an observer reports
// what real clients make it do, and the context of the request that
// caused a group event travels from the connection, through the
// coordinator and its shard's runtime, to the event.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/observetest"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupEvents returns the events of group g, in order.
func groupEvents(s observetest.Snapshot, g string) []observetest.GroupEvent {
	var out []observetest.GroupEvent
	for _, e := range s.Groups {
		if e.Group == g {
			out = append(out, e)
		}
	}
	return out
}

func countKind(evs []observetest.GroupEvent, k observe.GroupEventKind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// pollingMember starts a franz-go client that polls until ctx ends or
// it is closed: a group member that keeps its session.
func pollingMember(ctx context.Context, t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for !cl.PollFetches(ctx).IsClientClosed() && ctx.Err() == nil {
		}
	}()
	return cl
}

// causedBy returns the API key of the request whose context an event
// carries, or -1 for none (a timer).
func causedBy(e observetest.GroupEvent) int16 {
	if r, ok := observetest.Received(e.Ctx); ok {
		return r.Key
	}
	return -1
}

func TestObserverSeesGroupsOfRealClients(t *testing.T) {
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) { testObserverSeesGroups(t, proto) })
	}
}

func testObserverSeesGroups(t *testing.T, proto string) {
	rec := &observetest.Recorder{}
	cfg := node.Config{Observer: rec}
	cfg.Groups.InitialRebalanceDelay = 3 * time.Second
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	cfg.Groups.ConsumerHeartbeatInterval = 500 * time.Millisecond
	cfg.Groups.ConsumerAssignmentInterval = -1
	n := testkit.StartNode(t, cfg)
	topic, group := "observed-"+proto, "observed-group-"+proto

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	extCreateTopic(t, n.KafkaAddr(), topic, 4)

	// Every shard was reported loading and loaded at start.
	shards := n.Coordinator().Shards()
	if s, ok := rec.Wait(10*time.Second, func(s observetest.Snapshot) bool {
		loaded := 0
		for _, e := range s.Shards {
			if e.Kind == observe.ShardLoaded && e.Err == nil && int(e.Shard) < shards {
				loaded++
			}
		}
		return loaded == shards
	}); !ok {
		t.Fatalf("shard events at start: %+v", s.Shards)
	}

	member := func(i int) *kgo.Client {
		opts := []kgo.Opt{
			kgo.SeedBrokers(n.KafkaAddr()),
			kgo.ClientID(fmt.Sprintf("observed-%d", i)),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.FetchMaxWait(100 * time.Millisecond),
		}
		if proto == "consumer" {
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
		}
		return pollingMember(ctx, t, opts...)
	}
	a, b := member(1), member(2)
	defer a.Close()

	// Both members joined and a rebalance completed with both in it.
	s, ok := rec.Wait(30*time.Second, func(s observetest.Snapshot) bool {
		evs := groupEvents(s, group)
		for _, e := range evs {
			if e.Kind == observe.RebalanceCompleted && e.Members == 2 {
				return countKind(evs, observe.MemberJoined) >= 2
			}
		}
		return false
	})
	evs := groupEvents(s, group)
	if !ok {
		t.Fatalf("no completed rebalance with both members: %+v", evs)
	}
	wantProto := proto
	for _, e := range evs {
		if e.Protocol != wantProto || e.Tenant != "" {
			t.Fatalf("event %+v: protocol %q, want %q, default tenant", e.GroupEvent, e.Protocol, wantProto)
		}
	}
	// The events carry the context of the request that caused them,
	// which the wire server made when it read that request.
	join, sync, heartbeat := kmsg.JoinGroup.Int16(), kmsg.SyncGroup.Int16(), kmsg.ConsumerGroupHeartbeat.Int16()
	for _, e := range evs {
		key := causedBy(e)
		switch {
		case proto == "classic" && e.Kind == observe.MemberJoined && key != join,
			proto == "classic" && e.Kind == observe.RebalanceCompleted && key != sync,
			proto == "consumer" && e.Kind == observe.MemberJoined && key != heartbeat:
			t.Errorf("%v of %s came with the context of API %d", e.Kind, e.Member, key)
		}
		if e.Kind == observe.RebalanceCompleted && (e.Generation < 1 || e.Duration < 0) {
			t.Errorf("completed rebalance %+v", e.GroupEvent)
		}
	}
	// Its shard's batches were reported written.
	want := uint16(n.Coordinator().ShardFor("", group))
	found := false
	for _, bt := range s.Batches {
		if bt.Shard == want && bt.Err == nil && bt.Records > 0 && bt.Bytes > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no batch written for shard %d: %+v", want, s.Batches)
	}

	// A member that leaves is reported as leaving, with its leave
	// request's context.
	b.Close()
	leave := heartbeat
	if proto == "classic" {
		leave = kmsg.LeaveGroup.Int16()
	}
	s, ok = rec.Wait(30*time.Second, func(s observetest.Snapshot) bool {
		return countKind(groupEvents(s, group), observe.MemberLeft) >= 1
	})
	if !ok {
		t.Fatalf("no MemberLeft after a member closed: %+v", groupEvents(s, group))
	}
	for _, e := range groupEvents(s, group) {
		if e.Kind == observe.MemberLeft && causedBy(e) != leave {
			t.Errorf("MemberLeft came with the context of API %d, want %d", causedBy(e), leave)
		}
	}
}

// TestServeLogsRebalances: `cohort serve` at its default log level says
// when a group rebalances, why, and how long it took.
func TestServeLogsRebalances(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir(), "--group-initial-rebalance-delay", "100ms")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	extCreateTopic(t, p.Addr, "logged", 2)
	defer pollingMember(ctx, t, kgo.SeedBrokers(p.Addr), kgo.ConsumerGroup("logged-group"), kgo.ConsumeTopics("logged"), kgo.FetchMaxWait(100*time.Millisecond)).Close()
	testkit.Eventually(t, 30*time.Second, "no rebalance lines in the log", func() bool {
		log := p.Log()
		return strings.Contains(log, `level=INFO msg="rebalance started" group=logged-group type=classic generation=1`) &&
			strings.Contains(log, `level=INFO msg="rebalance completed" group=logged-group type=classic generation=1 members=1`)
	})
}
