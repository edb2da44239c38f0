package e2e

// The rebalance timeline (observe/timeline), end to end: real franz-go
// consumers in a classic and a KIP-848 group; a third member joins and
// one leaves, and the timeline, installed as the node's observer, tells
// each rebalance: its cause, who caused it, the generation or epoch, the
// time of its phases and the partitions it moved.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe/timeline"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTimelineOfRealGroups(t *testing.T) {
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) { testTimeline(t, proto) })
	}
}

func testTimeline(t *testing.T, proto string) {
	tl := timeline.New(timeline.Options{})
	cfg := node.Config{Observer: tl}
	cfg.Groups.InitialRebalanceDelay = 3 * time.Second
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	cfg.Groups.ConsumerHeartbeatInterval = 200 * time.Millisecond
	cfg.Groups.ConsumerAssignmentInterval = -1
	n := testkit.StartNode(t, cfg)
	topic, group := "timeline-"+proto, "timeline-group-"+proto
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	extCreateTopic(t, n.KafkaAddr(), topic, 6)

	member := func(i int) *kgo.Client {
		opts := []kgo.Opt{
			kgo.SeedBrokers(n.KafkaAddr()),
			kgo.ClientID(fmt.Sprintf("timeline-%d", i)),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.FetchMaxWait(100 * time.Millisecond),
		}
		if proto == "consumer" {
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
		} else {
			// Eager: the rebalance a newcomer starts moves the
			// partitions itself (a cooperative one would move them in
			// a second round).
			opts = append(opts, kgo.Balancers(kgo.RangeBalancer()), kgo.HeartbeatInterval(200*time.Millisecond))
		}
		return pollingMember(ctx, t, opts...)
	}
	// completed returns the newest completed rebalance that f accepts.
	completed := func(f func(timeline.Rebalance) bool) (timeline.Rebalance, bool) {
		for _, r := range tl.Rebalances("", group) {
			if !r.InProgress && f(r) {
				return r, true
			}
		}
		return timeline.Rebalance{}, false
	}
	waitFor := func(what string, f func(timeline.Rebalance) bool) timeline.Rebalance {
		t.Helper()
		var r timeline.Rebalance
		testkit.Eventually(t, time.Minute, what, func() bool {
			var ok bool
			r, ok = completed(f)
			return ok
		})
		return r
	}
	dump := func() {
		for _, r := range tl.Rebalances("", group) {
			t.Logf("timeline: %+v", r)
		}
	}

	a, b := member(1), member(2)
	defer a.Close()
	defer b.Close()
	first := waitFor("no rebalance completed with two members", func(r timeline.Rebalance) bool { return r.Members == 2 })
	if first.Protocol != proto || first.Cause != "member-joined" {
		dump()
		t.Fatalf("the first rebalance: %+v", first)
	}

	// A third member joins: its rebalance names it.
	c := member(3)
	var cID string
	var cGen int32
	testkit.Eventually(t, time.Minute, "the third member never joined", func() bool {
		cID, cGen = c.GroupMetadata()
		return cID != "" && cGen > 0
	})
	joined := waitFor("no rebalance completed caused by the third member", func(r timeline.Rebalance) bool {
		return r.Cause == "member-joined" && r.MemberID == cID && r.Members == 3
	})
	if joined.Generation <= first.Generation || joined.MembersBefore != 2 || joined.PartitionsMoved <= 0 ||
		joined.StartedAt.IsZero() || !joined.CompletedAt.After(joined.StartedAt) || joined.Duration != joined.CompletedAt.Sub(joined.StartedAt) {
		dump()
		t.Fatalf("the third member's rebalance: %+v", joined)
	}
	p := joined.Phases
	if p.Join+p.Sync+p.Assignment+p.Revocation != joined.Duration {
		t.Errorf("phases %+v do not add up to %v", p, joined.Duration)
	}
	if proto == "classic" {
		// The others had to learn of it and rejoin (the join barrier),
		// then the leader had to send its assignment (sync).
		if p.Join <= 0 || p.Sync <= 0 || p.Assignment != 0 || p.Revocation != 0 {
			t.Errorf("classic phases %+v", p)
		}
	} else {
		// The others had partitions to give up before the newcomer could
		// have them.
		if p.Revocation <= 0 || p.Join != 0 {
			t.Errorf("consumer phases %+v", p)
		}
	}

	// The third member leaves: the rebalance names it.
	c.Close()
	left := waitFor("no rebalance completed caused by the third member leaving", func(r timeline.Rebalance) bool {
		return r.Cause == "member-left" && r.MemberID == cID
	})
	if left.Generation <= joined.Generation || left.MembersBefore != 3 || left.Members != 2 || left.PartitionsMoved <= 0 {
		dump()
		t.Fatalf("the third member's leaving: %+v", left)
	}
	var sawLeave bool
	for _, e := range left.MemberEvents {
		sawLeave = sawLeave || (e.Kind == "member-left" && e.MemberID == cID)
	}
	if !sawLeave {
		t.Errorf("the leave is not among its rebalance's member events: %+v", left.MemberEvents)
	}
}
