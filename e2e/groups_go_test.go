package e2e

// Classic consumer groups with the Go clients, against Cohort's group
// coordinator (startGroupNode).
//
// Every test runs the same scenario (runGroupTest, in
// groups_common_test.go) for each client and assignment strategy, with
// its own node, topic (6 partitions) and group of 3 members that ask for
// a 6 s session timeout, 1 s heartbeats and commits every 200 ms.
// franz-go produces records with keys hashed over all 6 partitions: 600
// before the first member starts, 300 while the others join, 600 once
// the group is stable.
//
//   - One member joins alone: it owns all 6 partitions, DescribeGroups
//     shows the group Stable with the strategy's protocol name and that
//     assignment, and the member consumes and commits every record.
//   - Two more members join the Stable group at once: it rebalances
//     (eager strategies: everyone rejoins after revoking everything;
//     cooperative-sticky: two rebalances, the first member revoking 4
//     partitions in between). Eventually each member owns exactly 2
//     partitions, disjoint and covering the topic, as the members'
//     clients report it and as DescribeGroups shows it.
//   - Together the members consume every record produced, at the
//     produced offsets with the produced keys and values, and nothing
//     else; the clients that commit everything they consumed before they
//     give a partition up (all but kafka-go) consume each record once,
//     which needs the commits made during the rebalance to be accepted
//     and kept.
//   - The group's committed offsets (OffsetFetch through kadm) reach the
//     end of every partition, so every member committed its partitions;
//     franz-go and librdkafka also report each member's own commits.
//   - No rebalance once the group is stable, and no client error other
//     than rebalance signals while it forms.
//   - The members close and the group is Empty within half a session
//     timeout, so they left (LeaveGroup) rather than being expired.
//
// The clients and what they exercise:
//
//   - TestGroupGoFranz: franz-go kgo, JoinGroup v9 (MEMBER_ID_REQUIRED
//     first), with each balancer: cooperative-sticky, sticky, range,
//     roundrobin; commits on revoke, as kgo's default does.
//   - TestGroupGoSarama: Sarama's ConsumerGroup at its newest protocol
//     versions, with range, roundrobin, sticky and cooperative-sticky
//     (incremental rebalancing, new in Sarama 1.61's ConsumerGroup).
//   - TestGroupGoKafkaGo: segmentio/kafka-go's Reader with a GroupID:
//     FindCoordinator v0, JoinGroup v1/v2, SyncGroup, Heartbeat and
//     LeaveGroup v0, OffsetCommit v2, OffsetFetch v1; range and
//     roundrobin.
//   - TestGroupGoConfluent: confluent-kafka-go (librdkafka 2.15) with
//     range and cooperative-sticky, whose protocol debug log must show no
//     malformed or refused exchange and the group requests sent.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupGoFranz: three franz-go consumers in a group, per balancer.
func TestGroupGoFranz(t *testing.T) {
	longTest(t)
	for _, tc := range []struct {
		protocol string
		balancer func() kgo.GroupBalancer
	}{
		{"cooperative-sticky", kgo.CooperativeStickyBalancer},
		{"sticky", kgo.StickyBalancer},
		{"range", kgo.RangeBalancer},
		{"roundrobin", kgo.RoundRobinBalancer},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			g := newGroupCheck(t, startGroupNode(t), "franz-"+tc.protocol, "franz-group-"+tc.protocol)
			runGroupTest(t, g, groupTestOpts{protocol: tc.protocol, commitsReported: true, noDups: true}, func(ctx context.Context, g *groupCheck, m int) func() error {
				return franzGroupMember(ctx, t, g, m, tc.balancer())
			})
		})
	}
}

// franzGroupMember starts a kgo group consumer that autocommits, and
// reports its assignment changes, records, commits and errors to g. Like
// kgo's default, it commits what it polled before giving partitions up,
// so no record should be consumed twice.
func franzGroupMember(ctx context.Context, t *testing.T, g *groupCheck, m int, balancer kgo.GroupBalancer) func() error {
	onCommit := func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				g.problem(m, rebalanceSignal(err), "commit: %v", err)
			}
			return
		}
		sent := map[int32]int64{}
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				sent[rp.Partition] = rp.Offset
			}
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					g.problem(m, rebalanceSignal(err), "commit of partition %d (generation %d): %v", rp.Partition, req.Generation, err)
				} else if rt.Topic == g.topic {
					g.committed(m, rp.Partition, sent[rp.Partition])
				}
			}
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(g.addr),
		kgo.ClientID(fmt.Sprintf("cohort-e2e-kgo-%d", m)),
		kgo.ConsumerGroup(g.group),
		kgo.ConsumeTopics(g.topic),
		kgo.Balancers(balancer),
		kgo.SessionTimeout(groupSessionTimeout),
		kgo.HeartbeatInterval(groupHeartbeat),
		kgo.RebalanceTimeout(groupRebalance),
		kgo.AutoCommitInterval(groupCommitInterval),
		kgo.AutoCommitCallback(onCommit),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			g.assigned(m, a[g.topic]...)
		}),
		// Setting OnPartitionsRevoked replaces kgo's default, which
		// commits; so commit here, as kgo would: for an eager balancer
		// while the group prepares its rebalance, for cooperative-sticky
		// between its two rebalances.
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			cl.CommitOffsetsSync(ctx, cl.UncommittedOffsets(), onCommit)
			g.revoked(m, r[g.topic]...)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			g.revoked(m, l[g.topic]...)
			g.problem(m, false, "partitions lost: %v", l)
		}),
	)
	if err != nil {
		t.Fatalf("member %d: %v", m, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
					g.problem(m, rebalanceSignal(err), "fetch %s/%d: %v", topic, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				g.consumed(m, rec{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
			})
		}
	}()
	return func() error {
		<-done
		cl.Close() // leaves the group
		return nil
	}
}

// TestGroupGoSarama: three Sarama ConsumerGroup members, per strategy.
// Sarama (at sarama.MaxVersion) marks each message and autocommits.
func TestGroupGoSarama(t *testing.T) {
	longTest(t)
	for _, tc := range []struct {
		protocol string
		strategy func() sarama.BalanceStrategy
	}{
		{"range", sarama.NewBalanceStrategyRange},
		{"roundrobin", sarama.NewBalanceStrategyRoundRobin},
		{"sticky", sarama.NewBalanceStrategySticky},
		{"cooperative-sticky", sarama.NewBalanceStrategyCooperativeSticky},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			g := newGroupCheck(t, startGroupNode(t), "sarama-"+tc.protocol, "sarama-group-"+tc.protocol)
			runGroupTest(t, g, groupTestOpts{protocol: tc.protocol, noDups: true}, func(ctx context.Context, g *groupCheck, m int) func() error {
				return saramaGroupMember(ctx, t, g, m, tc.strategy())
			})
		})
	}
}

func saramaGroupMember(ctx context.Context, t *testing.T, g *groupCheck, m int, strategy sarama.BalanceStrategy) func() error {
	cfg := saramaConfig()
	cfg.ClientID = fmt.Sprintf("cohort-e2e-sarama-%d", m)
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	cfg.Consumer.Group.Session.Timeout = groupSessionTimeout
	cfg.Consumer.Group.Heartbeat.Interval = groupHeartbeat
	cfg.Consumer.Group.Rebalance.Timeout = groupRebalance
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = true
	cfg.Consumer.Offsets.AutoCommit.Interval = groupCommitInterval
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cg, err := sarama.NewConsumerGroup([]string{g.addr}, g.group, cfg)
	if err != nil {
		t.Fatalf("member %d: %v", m, err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for err := range cg.Errors() { // closed by cg.Close
			g.problem(m, rebalanceSignal(err), "consumer group: %v", err)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := saramaHandler{g: g, m: m}
		// Consume returns at the end of each generation; ctx bounds the
		// loop.
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{g.topic}, h); err != nil && ctx.Err() == nil {
				g.problem(m, rebalanceSignal(err), "consume: %v", err)
				select { // a short backoff against a tight loop of errors
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return func() error {
		<-done
		err := cg.Close() // leaves the group
		<-drained
		return err
	}
}

// saramaHandler reports a Sarama member's claims and messages to the
// check, and marks every message for autocommit. A claim is owned while
// its ConsumeClaim runs: with an eager strategy every claim ends with its
// session (generation), with cooperative-sticky a session outlives
// rebalances and only a revoked claim ends.
type saramaHandler struct {
	g *groupCheck
	m int
}

func (h saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	if c.Topic() != h.g.topic {
		h.g.problem(h.m, false, "claim of %s/%d", c.Topic(), c.Partition())
		return nil
	}
	h.g.assigned(h.m, c.Partition())
	defer h.g.revoked(h.m, c.Partition())
	for {
		select {
		case msg, ok := <-c.Messages():
			if !ok {
				return nil
			}
			h.g.consumed(h.m, rec{Partition: msg.Partition, Offset: msg.Offset, Key: msg.Key, Value: msg.Value})
			s.MarkMessage(msg, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// TestGroupGoKafkaGo: three segmentio/kafka-go Readers with a GroupID,
// per balancer. ReadMessage commits asynchronously every 200 ms.
func TestGroupGoKafkaGo(t *testing.T) {
	longTest(t)
	for _, tc := range []struct {
		protocol string
		balancer kafkago.GroupBalancer
	}{
		{"range", kafkago.RangeGroupBalancer{}},
		{"roundrobin", kafkago.RoundRobinGroupBalancer{}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			g := newGroupCheck(t, startGroupNode(t), "kafkago-"+tc.protocol, "kafkago-group-"+tc.protocol)
			// Not noDups: at a generation's end the Reader keeps the
			// messages it buffered and hands them out later, and the
			// partition's next owner reads them again from the last
			// commit (as kafka-go's Reader.unsubscribe says).
			runGroupTest(t, g, groupTestOpts{protocol: tc.protocol}, func(ctx context.Context, g *groupCheck, m int) func() error {
				return kafkaGoGroupMember(ctx, g, m, tc.balancer)
			})
		})
	}
}

// kafkaGoSubscribed matches the partitions in the Reader's log line for
// a new generation, "subscribed to topics and partitions:
// map[{topic:t partition:3}:-2 ...]".
var kafkaGoSubscribed = regexp.MustCompile(`partition:(\d+)\}`)

func kafkaGoGroupMember(ctx context.Context, g *groupCheck, m int, balancer kafkago.GroupBalancer) func() error {
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:           []string{g.addr},
		GroupID:           g.group,
		Topic:             g.topic,
		Dialer:            &kafkago.Dialer{ClientID: fmt.Sprintf("cohort-e2e-kafkago-%d", m), Timeout: 5 * time.Second},
		GroupBalancers:    []kafkago.GroupBalancer{balancer},
		SessionTimeout:    groupSessionTimeout,
		HeartbeatInterval: groupHeartbeat,
		RebalanceTimeout:  groupRebalance,
		JoinGroupBackoff:  100 * time.Millisecond,
		CommitInterval:    groupCommitInterval,
		StartOffset:       kafkago.FirstOffset,
		// The Reader's read deadline for a Fetch is MaxWait, and it asks
		// the broker to wait a second less, or a quarter less below a
		// second: with 250 ms that left 62 ms, and a busy -race run timed
		// Fetches out before the broker's answer arrived.
		MaxWait: 2 * time.Second,
		// The Reader tells of its assignment only in its log: a line
		// when a generation starts, another when its commit loop stops
		// at the generation's end.
		Logger: kafkago.LoggerFunc(func(format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			switch {
			case strings.HasPrefix(msg, "subscribed to topics and partitions"):
				var ps []int32
				for _, sm := range kafkaGoSubscribed.FindAllStringSubmatch(msg, -1) {
					p, _ := strconv.Atoi(sm[1])
					ps = append(ps, int32(p))
				}
				g.setOwned(m, ps)
			case strings.HasPrefix(msg, "stopped commit for group"):
				g.setOwned(m, nil)
			}
		}),
		ErrorLogger: kafkago.LoggerFunc(func(format string, args ...any) {
			rebalance := false
			for _, a := range args {
				if err, ok := a.(error); ok && rebalanceSignal(err) {
					rebalance = true
				}
			}
			g.problem(m, rebalance, "kafka-go: "+format, args...)
		}),
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			msg, err := r.ReadMessage(ctx)
			if err != nil {
				if ctx.Err() == nil {
					g.problem(m, rebalanceSignal(err), "read: %v", err)
					select {
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
				}
				continue
			}
			g.consumed(m, rec{Partition: int32(msg.Partition), Offset: msg.Offset, Key: msg.Key, Value: msg.Value})
		}
	}()
	return func() error {
		<-done
		return r.Close() // a final commit, then LeaveGroup
	}
}

// TestGroupGoConfluent: three confluent-kafka-go consumers, per
// partition.assignment.strategy, autocommitting every 200 ms; their
// OffsetsCommitted events tell each member's commits. librdkafka's
// protocol debug log must show each member sending the group requests
// (JoinGroup v5, SyncGroup v3, Heartbeat v3, OffsetCommit v9, OffsetFetch
// v9 from librdkafka 2.15) and no protocol problem.
func TestGroupGoConfluent(t *testing.T) {
	longTest(t)
	for _, protocol := range []string{"range", "cooperative-sticky"} {
		t.Run(protocol, func(t *testing.T) {
			logs := newRdLog()
			logsClosed := false
			defer func() {
				if !logsClosed {
					logs.close()
				}
			}()
			g := newGroupCheck(t, startGroupNode(t), "confluent-"+protocol, "confluent-group-"+protocol)
			runGroupTest(t, g, groupTestOpts{protocol: protocol, commitsReported: true, noDups: true}, func(ctx context.Context, g *groupCheck, m int) func() error {
				return confluentGroupMember(ctx, t, g, m, protocol, logs)
			})
			logs.close()
			logsClosed = true
			t.Logf("librdkafka debug: %d lines; requests sent:%s", logs.lines, logs.summary())
			for m := range groupTestMembers {
				sent := logs.sent[fmt.Sprintf("cohort-e2e-confluent-%d", m)]
				var missing []string
				// Not LeaveGroup: confluent-kafka-go stops forwarding the
				// log as Close starts. That the members left shows in the
				// group going Empty before their sessions could expire.
				for _, r := range []string{"FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "OffsetFetch", "OffsetCommit"} {
					if len(sent[r]) == 0 {
						missing = append(missing, r)
					}
				}
				sort.Strings(missing)
				if len(missing) > 0 {
					t.Errorf("member %d sent no %v request", m, missing)
				}
			}
			logs.reportProblems(t)
		})
	}
}

func confluentGroupMember(ctx context.Context, t *testing.T, g *groupCheck, m int, strategy string, logs *rdLog) func() error {
	c, err := kafka.NewConsumer(rdConfig(g.addr, fmt.Sprintf("cohort-e2e-confluent-%d", m), logs, kafka.ConfigMap{
		"group.id":                      g.group,
		"partition.assignment.strategy": strategy,
		"session.timeout.ms":            int(groupSessionTimeout.Milliseconds()),
		"heartbeat.interval.ms":         int(groupHeartbeat.Milliseconds()),
		"max.poll.interval.ms":          int(groupRebalance.Milliseconds()), // librdkafka's rebalance timeout
		"auto.offset.reset":             "earliest",
		"enable.auto.commit":            true,
		"auto.commit.interval.ms":       int(groupCommitInterval.Milliseconds()),
		"fetch.wait.max.ms":             250,
	}))
	if err != nil {
		t.Fatalf("member %d: %v", m, err)
	}
	if err := c.Subscribe(g.topic, nil); err != nil {
		c.Close()
		t.Fatalf("member %d: subscribe: %v", m, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			// Without a rebalance callback, Poll assigns and revokes
			// (incrementally for cooperative-sticky) by itself.
			switch ev := c.Poll(100).(type) {
			case *kafka.Message:
				if ev.TopicPartition.Error != nil {
					g.problem(m, false, "message: %v", ev.TopicPartition.Error)
					break
				}
				g.consumed(m, rec{Partition: ev.TopicPartition.Partition, Offset: int64(ev.TopicPartition.Offset), Key: ev.Key, Value: ev.Value})
			case kafka.OffsetsCommitted:
				var ke kafka.Error
				if errors.As(ev.Error, &ke) && ke.Code() == kafka.ErrNoOffset {
					break // an autocommit with nothing new to commit
				}
				if ev.Error != nil {
					g.problem(m, rebalanceSignal(ev.Error), "commit: %v", ev.Error)
					break
				}
				for _, tp := range ev.Offsets {
					if tp.Error != nil {
						g.problem(m, rebalanceSignal(tp.Error), "commit of partition %d: %v", tp.Partition, tp.Error)
					} else if *tp.Topic == g.topic && tp.Offset >= 0 {
						g.committed(m, tp.Partition, int64(tp.Offset))
					}
				}
			case kafka.Error:
				g.problem(m, rebalanceSignal(ev), "%v (code %v)", ev, ev.Code())
			}
			parts, err := c.Assignment()
			if err != nil {
				g.problem(m, false, "assignment: %v", err)
				continue
			}
			var ps []int32
			for _, tp := range parts {
				if *tp.Topic == g.topic {
					ps = append(ps, tp.Partition)
				}
			}
			g.setOwned(m, ps)
		}
	}()
	return func() error {
		<-done
		return c.Close() // commits, then LeaveGroup
	}
}

// rebalanceSignal says whether err, from any of the clients, is one of
// the errors with which a coordinator tells a member to rejoin:
// REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID.
func rebalanceSignal(err error) bool {
	return errorIn(err, []kafka.ErrorCode{kafka.ErrRebalanceInProgress, kafka.ErrIllegalGeneration, kafka.ErrUnknownMemberID},
		kerr.RebalanceInProgress, kerr.IllegalGeneration, kerr.UnknownMemberID,
		sarama.ErrRebalanceInProgress, sarama.ErrIllegalGeneration, sarama.ErrUnknownMemberId,
		kafkago.RebalanceInProgress, kafkago.IllegalGeneration, kafkago.UnknownMemberId)
}

// errorIn says whether err, from any of the clients, is one of these
// Kafka errors: by code for librdkafka's errors, else as one of errs
// (franz-go's kerr, sarama's and kafka-go's values).
func errorIn(err error, codes []kafka.ErrorCode, errs ...error) bool {
	var ke kafka.Error
	if errors.As(err, &ke) {
		return slices.Contains(codes, ke.Code())
	}
	for _, e := range errs {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
