package e2e

// Mixed groups with real clients (issue 14): a rolling upgrade of a
// consuming group from the classic protocol to the consumer protocol
// (KIP-848) and back, one member restarted at a time, while records are
// produced; and the same with a kill -9 of the server in the middle.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	mixPartitions = 12
	// mixSession is the session timeout of both kinds of members: the
	// longest the group may stop consuming while one member is replaced.
	mixSession = 15 * time.Second
)

// mixedGroupConfig: consumer-protocol members heartbeat every 200 ms and
// the assignor is not throttled, so that each step converges quickly.
var mixedGroupConfig = coordinator.Config{
	ConsumerHeartbeatInterval:  200 * time.Millisecond,
	ConsumerSessionTimeout:     mixSession,
	ConsumerAssignmentInterval: -1,
	InitialRebalanceDelay:      -1,
}

// mixCheck follows one group through a migration: which member owns which
// partition as its client reports it, every record produced and consumed,
// the longest time nothing was consumed while records were waiting, and
// the offset commits acknowledged.
type mixCheck struct {
	t            *testing.T
	topic, group string
	addr         func() string
	// start starts member m with the consumer protocol (kip848) or the
	// classic one; the function it returns stops it, leaving the group.
	start func(m int, kip848 bool) (stop func())

	mu         sync.Mutex
	want, seen map[[2]int64]bool
	// by says who consumed each record, when, in which phase (for a
	// failure's story).
	by         map[[2]int64]string
	dups       int
	owner      map[int32]int
	owned      map[int]map[int32]bool
	violations []string
	notes      []string
	// lastConsumed is when a record was last consumed; stall the longest
	// time between two consumptions while records were produced and not
	// yet consumed, and stallAt when it ended.
	lastConsumed time.Time
	stall        time.Duration
	stallAt      string
	phase        string
	// acked is, per partition, the highest offset commit acknowledged.
	acked map[int32]int64
}

func newMixCheck(t *testing.T, addr func() string, topic, group string) *mixCheck {
	c := &mixCheck{t: t, addr: addr, topic: topic, group: group,
		want: map[[2]int64]bool{}, seen: map[[2]int64]bool{}, by: map[[2]int64]string{}, owner: map[int32]int{}, owned: map[int]map[int32]bool{},
		acked: map[int32]int64{}}
	c.start = c.franzMember
	return c
}

func (c *mixCheck) setPhase(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phase = p
}

func (c *mixCheck) assigned(m int, parts ...int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owned[m] == nil {
		c.owned[m] = map[int32]bool{}
	}
	for _, p := range parts {
		if o, ok := c.owner[p]; ok && o != m {
			c.violations = append(c.violations, fmt.Sprintf("%s: member %d got partition %d while member %d owns it", c.phase, m, p, o))
		}
		c.owner[p] = m
		c.owned[m][p] = true
	}
}

func (c *mixCheck) revoked(m int, parts ...int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range parts {
		if c.owner[p] == m {
			delete(c.owner, p)
		}
		delete(c.owned[m], p)
	}
}

func (c *mixCheck) consumed(m int, p int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.owner[p]; ok && o != m {
		c.violations = append(c.violations, fmt.Sprintf("%s: member %d consumed partition %d offset %d while member %d owns it", c.phase, m, p, offset, o))
	} else if !ok {
		c.violations = append(c.violations, fmt.Sprintf("%s: member %d consumed partition %d offset %d, which it does not own", c.phase, m, p, offset))
	}
	k := [2]int64{int64(p), offset}
	if c.seen[k] {
		c.dups++
	}
	c.seen[k] = true
	c.by[k] = fmt.Sprintf("member %d at %s in %q", m, time.Now().Format("15:04:05.000"), c.phase)
	at := time.Now()
	if gap := at.Sub(c.lastConsumed); !c.lastConsumed.IsZero() && gap > c.stall {
		c.stall, c.stallAt = gap, c.phase
	}
	c.lastConsumed = at
}

func (c *mixCheck) produced(p int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want[[2]int64{int64(p), offset}] = true
}

func (c *mixCheck) committed(p int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acked[p] = max(c.acked[p], offset)
}

// commitAcked notes the offsets an OffsetCommit response acknowledged.
func (c *mixCheck) commitAcked(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	if err != nil || resp == nil {
		return
	}
	// The group consumes one topic; v10 names it by id only.
	sent := map[int32]int64{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			sent[p.Partition] = p.Offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if o, ok := sent[p.Partition]; ok && p.ErrorCode == 0 {
				c.committed(p.Partition, o)
			}
		}
	}
}

func (c *mixCheck) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.notes) < 50 {
		c.notes = append(c.notes, fmt.Sprintf(format, args...))
	}
}

// produce produces to the topic until ctx ends, a record every 10 ms to
// each partition in turn,
// noting each one acknowledged. It returns when it has stopped.
func (c *mixCheck) produce(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.DefaultProduceTopic(c.topic), kgo.ClientID("cohort-e2e-mix-producer"),
			kgo.ProducerLinger(0), kgo.RecordRetries(1000), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		if err != nil {
			c.note("producer: %v", err)
			return
		}
		defer cl.Close()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r := &kgo.Record{Value: []byte(fmt.Sprintf("mix-%d", i))}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err == nil {
					c.produced(r.Partition, r.Offset)
				}
			})
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// franzMember starts member m as a franz-go consumer with the consumer
// protocol (kgo.ServerSideBalancer) or the classic one
// (cooperative-sticky); the returned function stops it, leaving the
// group.
func (c *mixCheck) franzMember(m int, kip848 bool) func() {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.addr()),
		kgo.ClientID(fmt.Sprintf("cohort-e2e-mix-%d", m)),
		kgo.ConsumerGroup(c.group),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(mixSession),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RetryTimeout(2 * time.Minute),
	}
	if kip848 {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	return franzMember(c.t, c, c.topic, m, c.commitAcked, opts...)
}

// groupType is the group's type and state as ListGroups v5 reports them.
func (c *mixCheck) groupType(cl *kgo.Client) (string, string) {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", err.Error()
	}
	for _, g := range resp.Groups {
		if g.Group == c.group {
			return g.GroupType, g.GroupState
		}
	}
	return "", "not listed"
}

// memberTypes counts the group's classic and consumer-protocol members as
// ConsumerGroupDescribe v1 reports them.
func (c *mixCheck) memberTypes(cl *kgo.Client) [2]int {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version, req.Groups = 1, []string{c.group}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		c.t.Errorf("describe %s: %v", c.group, err)
		return [2]int{}
	}
	var out [2]int
	for _, m := range resp.Groups[0].Members {
		switch m.MemberType {
		case 0:
			out[0]++
		case 1:
			out[1]++
		default:
			c.t.Errorf("member %s of type %d", m.MemberID, m.MemberType)
		}
	}
	return out
}

// waitSettled waits until the members listed own disjoint partitions
// covering the topic with some for each, the group has the type want, is
// Stable, and every record produced so far has been consumed.
func (c *mixCheck) waitSettled(cl *kgo.Client, members []int, want string) {
	c.t.Helper()
	groupEventually(c.t, time.Minute, fmt.Sprintf("members %v settled in a %s group", members, want), func() (bool, string) {
		typ, state := c.groupType(cl)
		c.mu.Lock()
		defer c.mu.Unlock()
		all, n := map[int32]bool{}, 0
		counts := map[int]int{}
		for _, m := range members {
			counts[m] = len(c.owned[m])
			for p := range c.owned[m] {
				all[p] = true
				n++
			}
		}
		missing, first := 0, map[int64]int64{}
		for k := range c.want {
			if !c.seen[k] {
				missing++
				if o, ok := first[k[0]]; !ok || k[1] < o {
					first[k[0]] = k[1]
				}
			}
		}
		// Every member owns some: a member still starting (librdkafka
		// takes a while) is not in the group yet, and the others then
		// own all the partitions of a Stable group.
		everyone := true
		for _, m := range members {
			everyone = everyone && counts[m] > 0
		}
		ok := typ == want && state == "Stable" && len(all) == mixPartitions && n == mixPartitions && everyone && missing == 0 && len(c.want) > 0
		return ok, fmt.Sprintf("group %s %s; clients own %v; %d of %d records not consumed (first per partition %v; owners %v)", typ, state, counts, missing, len(c.want), first, c.owner)
	})
}

func (c *mixCheck) report() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.notes {
		c.t.Log(n)
	}
	for k := range c.want {
		if !c.seen[k] {
			p, o := k[0], k[1]
			c.t.Errorf("record %d/%d was produced and never consumed; %d/%d was consumed by %s, %d/%d by %s",
				p, o, p, o-1, c.by[[2]int64{p, o - 1}], p, o+1, c.by[[2]int64{p, o + 1}])
		}
	}
	for _, v := range c.violations {
		c.t.Error(v)
	}
	c.t.Logf("%d records produced, %d consumed more than once; longest time without a record consumed: %v (ending in %s)",
		len(c.want), c.dups, c.stall.Round(time.Millisecond), c.stallAt)
	if c.stall > mixSession {
		c.t.Errorf("the group stopped consuming for %v (ending in %s), longer than a session timeout (%v)", c.stall, c.stallAt, mixSession)
	}
}

// roll restarts the given members one at a time with the consumer
// protocol (toKIP848) or the classic one, waiting after each for the group
// to settle. With the migration policy bidirectional the group is a
// consumer group exactly while one of its members speaks the consumer
// protocol: the first such member converts it, the last one's departure
// converts it back. kip848 says what each member speaks, and is updated.
func (c *mixCheck) roll(cl *kgo.Client, stops map[int]func(), kip848 map[int]bool, members []int, toKIP848 bool, mid func(step int)) {
	proto := map[bool]string{false: "classic", true: "consumer"}
	all := slices.Sorted(maps.Keys(stops))
	for step, m := range members {
		c.setPhase(fmt.Sprintf("restarting member %d with the %s protocol", m, proto[toKIP848]))
		stops[m]()
		stops[m] = c.start(m, toKIP848)
		kip848[m] = toKIP848
		var counts [2]int // classic, consumer
		for _, o := range all {
			if kip848[o] {
				counts[1]++
			} else {
				counts[0]++
			}
		}
		typ := proto[counts[1] > 0]
		c.waitSettled(cl, all, typ)
		if typ == "consumer" {
			// A mixed group shows each member's protocol (KIP-1099).
			if got := c.memberTypes(cl); got != counts {
				c.t.Errorf("after member %d switched to the %s protocol ConsumerGroupDescribe shows %d classic and %d consumer members, want %d and %d",
					m, proto[toKIP848], got[0], got[1], counts[0], counts[1])
			}
		}
		c.t.Logf("member %d now speaks the %s protocol; the group is a %s group", m, proto[toKIP848], typ)
		if mid != nil {
			mid(step)
		}
	}
}

// runRolling is the scenario: three members of a 12-partition
// topic being produced to start on the classic protocol, are restarted
// one at a time with the consumer protocol, then back one at a time. The
// checks are mixCheck's (report) and the group's type after each step.
func runRolling(t *testing.T, c *mixCheck, mid func(step int)) {
	rollMembers(t, c, []int{0, 1, 2}, mid)
}

// rollMembers is runRolling restarting only the members listed, the
// others staying classic throughout.
func rollMembers(t *testing.T, c *mixCheck, members []int, mid func(step int)) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, kadm.NewClient(cl), c.topic, mixPartitions)
	stopProducing := c.produce(context.Background())
	defer stopProducing()
	stops, kip848 := map[int]func(){}, map[int]bool{}
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	c.setPhase("starting three classic members")
	for m := range 3 {
		stops[m] = c.start(m, false)
	}
	c.waitSettled(cl, []int{0, 1, 2}, "classic")
	c.roll(cl, stops, kip848, members, true, mid)
	c.roll(cl, stops, kip848, members, false, nil)
	stopProducing()
	c.waitSettled(cl, []int{0, 1, 2}, "classic")
}

// TestMixedGroupRollingUpgradeFranz: three franz-go consumers of a
// 12-partition topic being produced to, on the classic protocol
// (cooperative-sticky), are restarted one at a time with the consumer
// protocol (kgo.ServerSideBalancer), then back one at a time. Every
// record is consumed, no partition has two owners at once (as the clients
// report their assignments), the group never stops for longer than a
// session timeout, and it is a consumer group after the upgrade and a
// classic group after the downgrade.
func TestMixedGroupRollingUpgradeFranz(t *testing.T) {
	n := testkit.StartNode(t, node.Config{Groups: mixedGroupConfig})
	addr := n.KafkaAddr()
	c := newMixCheck(t, func() string { return addr }, "mixed-franz", "mixed-franz-group")
	defer c.report()
	runRolling(t, c, nil)
}

// TestMixedGroupRollingUpgradeConfluent: the same rolling upgrade with
// confluent-kafka-go (librdkafka 2.15.1): group.protocol classic with the
// cooperative-sticky assignor, then group.protocol consumer, and back.
func TestMixedGroupRollingUpgradeConfluent(t *testing.T) {
	n := testkit.StartNode(t, node.Config{Groups: mixedGroupConfig})
	addr := n.KafkaAddr()
	logs := newRdLog()
	c := newMixCheck(t, func() string { return addr }, "mixed-confluent", "mixed-confluent-group")
	c.start = func(m int, kip848 bool) func() { return c.confluentMember(m, kip848, logs) }
	defer c.report()
	runRolling(t, c, nil)
	logs.close()
	for m := range 3 {
		sent := logs.sent[fmt.Sprintf("cohort-e2e-rdmix-%d", m)]
		if len(sent["ConsumerGroupHeartbeat"]) == 0 || len(sent["JoinGroup"]) == 0 {
			t.Errorf("member %d did not speak both protocols: %v", m, sent)
		}
	}
	logs.reportProblems(t)
}

func (c *mixCheck) confluentMember(m int, kip848 bool, logs *rdLog) func() {
	conf := kafka.ConfigMap{"group.id": c.group, "group.protocol": "consumer"}
	if !kip848 {
		conf["group.protocol"] = "classic"
		conf["partition.assignment.strategy"] = "cooperative-sticky"
		conf["session.timeout.ms"] = int(mixSession.Milliseconds())
		conf["heartbeat.interval.ms"] = 300
	}
	return confluentMember(c.t, c, c.addr(), c.topic, fmt.Sprintf("cohort-e2e-rdmix-%d", m), m, logs, conf)
}

// TestMixedGroupSaramaClassic: a mixed group whose classic members are
// Sarama consumers (eager range, and cooperative-sticky) while the others
// are franz-go consumers on the consumer protocol: members 1 and 2 of
// three Sarama members are replaced by KIP-848 franz-go members and then
// by Sarama members again.
func TestMixedGroupSaramaClassic(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy func() sarama.BalanceStrategy
	}{
		{"range", sarama.NewBalanceStrategyRange},
		{"cooperative-sticky", sarama.NewBalanceStrategyCooperativeSticky},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testkit.StartNode(t, node.Config{Groups: mixedGroupConfig})
			addr := n.KafkaAddr()
			c := newMixCheck(t, func() string { return addr }, "mixed-sarama-"+tc.name, "mixed-sarama-group-"+tc.name)
			c.start = func(m int, kip848 bool) func() {
				if kip848 {
					return c.franzMember(m, true)
				}
				return c.saramaMember(m, tc.strategy())
			}
			defer c.report()
			rollMembers(t, c, []int{1, 2}, nil)
		})
	}
}

func (c *mixCheck) saramaMember(m int, strategy sarama.BalanceStrategy) func() {
	cfg := saramaConfig()
	cfg.ClientID = fmt.Sprintf("cohort-e2e-sarama-mix-%d", m)
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	cfg.Consumer.Group.Session.Timeout = mixSession
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = true
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cg, err := sarama.NewConsumerGroup([]string{c.addr()}, c.group, cfg)
	if err != nil {
		c.t.Fatalf("member %d: %v", m, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for err := range cg.Errors() {
			c.note("member %d: consumer group: %v", m, err)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{c.topic}, mixSaramaHandler{c, m}); err != nil && ctx.Err() == nil {
				c.note("member %d: consume: %v", m, err)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			if err := cg.Close(); err != nil {
				c.note("member %d: close: %v", m, err)
			}
			<-drained
		})
	}
}

// mixSaramaHandler: a claim is owned while its ConsumeClaim runs.
type mixSaramaHandler struct {
	c *mixCheck
	m int
}

func (h mixSaramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h mixSaramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h mixSaramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, cl sarama.ConsumerGroupClaim) error {
	h.c.assigned(h.m, cl.Partition())
	defer h.c.revoked(h.m, cl.Partition())
	for {
		select {
		case msg, ok := <-cl.Messages():
			if !ok {
				return nil
			}
			h.c.consumed(h.m, msg.Partition, msg.Offset)
			s.MarkMessage(msg, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// TestMixedGroupKilledMidUpgrade: the franz-go rolling upgrade against the
// real binary, killed with SIGKILL once the first member speaks the
// consumer protocol (the group converted, two classic members inside it)
// and started again on the same data directory behind the same address.
// Every offset commit acknowledged before the kill is there after it, the
// migration then completes, and mixCheck's checks hold throughout.
func TestMixedGroupKilledMidUpgrade(t *testing.T) {
	px := startProxy(t)
	dir := t.TempDir()
	args := []string{"--advertised-kafka-addr", px.addr(), "--auto-create-topics=false",
		"--group-consumer-heartbeat-interval", "200ms", "--group-consumer-session-timeout", mixSession.String(),
		"--group-consumer-assignment-interval", "0", "--group-initial-rebalance-delay", "0"}
	proc := testkit.StartBinary(t, dir, args...)
	px.up(proc.Addr)
	c := newMixCheck(t, px.addr, "mixed-kill", "mixed-kill-group")
	defer c.report()
	killed := false
	runRolling(t, c, func(step int) {
		if step != 0 {
			return
		}
		killed = true
		c.mu.Lock()
		acked := maps.Clone(c.acked)
		c.mu.Unlock()
		px.down()
		proc.Kill()
		proc = testkit.StartBinary(t, dir, args...)
		px.up(proc.Addr)
		cl, err := kgo.NewClient(kgo.SeedBrokers(px.addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		fo, err := kadm.NewClient(cl).FetchOffsets(ctx, c.group)
		if err == nil {
			err = fo.Error()
		}
		if err != nil {
			t.Fatalf("offsets after the restart: %v", err)
		}
		for p, o := range acked {
			// Commits only move forward here: a member commits what it
			// consumed from the committed offset on.
			if got, ok := fo.Lookup(c.topic, p); !ok || got.At < o {
				t.Errorf("partition %d: acknowledged commit of %d before the kill, %v after it", p, o, got.At)
			}
		}
		typ, state := c.groupType(cl)
		t.Logf("killed and restarted mid-upgrade: %d acknowledged commits checked; the group is a %s group (%s)", len(acked), typ, state)
		if typ != "consumer" {
			t.Errorf("after the restart the group is a %q group, want the consumer group it had become", typ)
		}
	})
	if !killed {
		t.Fatal("the server was never killed")
	}
}
