package e2e

// KIP-848 consumer groups with real clients: members join through
// ConsumerGroupHeartbeat and the coordinator assigns partitions.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGroupConfig is the coordinator configuration of the KIP-848
// tests: heartbeats every 200 ms and no assignment throttle, so that a
// scenario converges in a second or two; sessions long enough for a
// loaded machine.
var consumerGroupConfig = coordinator.Config{
	ConsumerHeartbeatInterval:  200 * time.Millisecond,
	ConsumerSessionTimeout:     10 * time.Second,
	ConsumerAssignmentInterval: -1,
}

const cgPartitions = 6

// cgCheck follows one KIP-848 group: which member owns which partition,
// as the members' clients report it, every record consumed, and every
// moment two members owned or consumed the same partition.
type cgCheck struct {
	t                  *testing.T
	addr, topic, group string
	cl                 *kgo.Client
	adm                *kadm.Client
	// codecs to produce with (nil: every codec).
	codecs []kgo.CompressionCodec

	mu         sync.Mutex
	want       map[[2]int64]bool // (partition, offset) produced
	seen       map[[2]int64]bool
	dups       int
	owner      map[int32]int // partition → member, absent: none
	owned      map[int]map[int32]bool
	violations []string
	notes      []string
	// told is what each member's last heartbeat told the coordinator it
	// owns, for the clients that report their heartbeats (platformatic).
	told map[int]map[int32]bool
	// late counts records delivered to a member after it gave their
	// partition up, from a fetch sent while it alone owned it.
	late int
}

func newCGCheck(t *testing.T, addr, topic, group string) *cgCheck {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cohort-e2e-cg-check"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c := &cgCheck{t: t, addr: addr, topic: topic, group: group, cl: cl, adm: kadm.NewClient(cl),
		want: map[[2]int64]bool{}, seen: map[[2]int64]bool{}, owner: map[int32]int{}, owned: map[int]map[int32]bool{},
		told: map[int]map[int32]bool{}}
	createTopic(t, c.adm, topic, cgPartitions)
	return c
}

func (c *cgCheck) produce(prefix string, n int) {
	c.t.Helper()
	got := extGroupProduce(c.t, c.addr, c.topic, c.codecs, makeRecs(prefix, n, time.Now().Add(-time.Hour)))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range got {
		c.want[[2]int64{int64(r.Partition), r.Offset}] = true
	}
}

func (c *cgCheck) assigned(m int, parts ...int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owned[m] == nil {
		c.owned[m] = map[int32]bool{}
	}
	for _, p := range parts {
		if o, ok := c.owner[p]; ok && o != m {
			c.violations = append(c.violations, fmt.Sprintf("member %d got partition %d while member %d owns it", m, p, o))
		}
		// KIP-848: the coordinator gives a partition being revoked to
		// another member only once its owner's heartbeat no longer
		// lists it (Kafka's CurrentAssignmentBuilder).
		for o, ps := range c.told {
			if o != m && ps[p] {
				c.violations = append(c.violations, fmt.Sprintf("member %d got partition %d before member %d told the coordinator it had released it", m, p, o))
			}
		}
		c.owner[p] = m
		c.owned[m][p] = true
	}
}

func (c *cgCheck) revoked(m int, parts ...int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range parts {
		if c.owner[p] == m {
			delete(c.owner, p)
		}
		delete(c.owned[m], p)
	}
}

// consumed is a record member m's application received, judged by when it
// arrived: no other member may own its partition then.
func (c *cgCheck) consumed(m int, p int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.owner[p]; ok && o != m {
		c.violations = append(c.violations, fmt.Sprintf("member %d consumed partition %d offset %d while member %d owns it", m, p, offset, o))
	}
	c.seenLocked(p, offset)
}

// consumedFrom is a record member m's application received, judged by the
// fetch that returned it: owners are the members whose clients owned its
// partition when that fetch was sent, which must be m alone. The record
// may arrive after m gave the partition up, even after another member got
// it: a fetch sent before a revocation is answered when records arrive,
// and a client may hand them on (see TestConsumerGroupPlatformatic). The
// next owner reads them again from the committed offset: duplicates, as
// at-least-once allows, never two owners as the coordinator saw them.
func (c *cgCheck) consumedFrom(m int, p int32, offset int64, owners []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Equal(owners, []int{m}) {
		c.violations = append(c.violations, fmt.Sprintf("member %d consumed partition %d offset %d from a fetch sent while the members owning it were %v", m, p, offset, owners))
	} else if !c.owned[m][p] {
		c.late++
	}
	c.seenLocked(p, offset)
}

func (c *cgCheck) seenLocked(p int32, offset int64) {
	k := [2]int64{int64(p), offset}
	if c.seen[k] {
		c.dups++
	}
	c.seen[k] = true
}

// toldOwned records what member m's heartbeat is telling the coordinator
// it owns.
func (c *cgCheck) toldOwned(m int, parts []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.told[m] = map[int32]bool{}
	for _, p := range parts {
		c.told[m][p] = true
	}
}

func (c *cgCheck) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.notes) < 50 {
		c.notes = append(c.notes, fmt.Sprintf(format, args...))
	}
}

// counts is each listed member's partition count, and whether the owned
// sets are disjoint and cover the topic.
func (c *cgCheck) counts(members []int) (map[int]int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]int{}
	all := map[int32]bool{}
	n := 0
	for _, m := range members {
		out[m] = len(c.owned[m])
		for p := range c.owned[m] {
			all[p] = true
			n++
		}
	}
	return out, len(all) == cgPartitions && n == cgPartitions
}

// waitBalanced waits until the members own disjoint partitions covering
// the topic, each within one of the others, as the coordinator's describe
// also says.
func (c *cgCheck) waitBalanced(members []int) {
	c.t.Helper()
	groupEventually(c.t, groupWait, fmt.Sprintf("members %v balanced", members), func() (bool, string) {
		counts, cover := c.counts(members)
		lo, hi := cgPartitions, 0
		for _, n := range counts {
			lo, hi = min(lo, n), max(hi, n)
		}
		if !cover || hi-lo > 1 {
			return false, fmt.Sprintf("clients own %v", counts)
		}
		d := c.describe()
		if d.State != "Stable" || len(d.Members) != len(members) {
			return false, fmt.Sprintf("clients own %v; coordinator: %s with %d members", counts, d.State, len(d.Members))
		}
		return true, ""
	})
}

// describe is ConsumerGroupDescribe of the group.
func (c *cgCheck) describe() kmsg.ConsumerGroupDescribeResponseGroup {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{c.group}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil || len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{State: fmt.Sprintf("describe failed: %v", err)}
	}
	return resp.Groups[0]
}

// waitConsumed waits until every produced record has been consumed.
func (c *cgCheck) waitConsumed() {
	c.t.Helper()
	groupEventually(c.t, groupWait, "every record consumed", func() (bool, string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		missing := 0
		for k := range c.want {
			if !c.seen[k] {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d records not consumed", missing, len(c.want))
	})
}

func (c *cgCheck) report() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.notes {
		c.t.Log(n)
	}
	for _, v := range c.violations {
		c.t.Error(v)
	}
	c.t.Logf("%d records consumed more than once (a partition's uncommitted tail re-read by its next owner)", c.dups)
	if c.late > 0 {
		c.t.Logf("%d records delivered after their member gave the partition up, from fetches sent while it alone owned it", c.late)
	}
}

// cgMemberFunc starts member m; the returned function stops it, leaving
// the group.
type cgMemberFunc func(c *cgCheck, m int) (stop func())

// runConsumerGroupTest is the scenario for one client:
//
//  1. 600 records are produced over 6 partitions;
//  2. three members start; eventually each owns 2 partitions, disjoint,
//     and ConsumerGroupDescribe shows the group Stable with 3 members;
//     300 more records are produced and every record is consumed;
//  3. a fourth member joins: the 6 partitions spread 2/2/1/1 over 4;
//     300 more records, all consumed;
//  4. the first member leaves: 2 each over the remaining 3; 300 more,
//     all consumed;
//  5. throughout, no partition is ever owned, or consumed from, by two
//     members at once (as their clients report it; a platformatic
//     record by when its fetch was sent, see TestConsumerGroupPlatformatic);
//  6. the members leave and the group becomes Empty.
func runConsumerGroupTest(t *testing.T, c *cgCheck, start cgMemberFunc) {
	t0 := time.Now()
	since := func() time.Duration { return time.Since(t0).Round(time.Millisecond) }
	defer c.report()
	c.produce("before", 600)
	stops := map[int]func(){}
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	for m := range 3 {
		stops[m] = start(c, m)
	}
	c.waitBalanced([]int{0, 1, 2})
	c.produce("three", 300)
	c.waitConsumed()
	counts, _ := c.counts([]int{0, 1, 2})
	for m, n := range counts {
		if n != 2 {
			t.Errorf("member %d owns %d partitions, want 2", m, n)
		}
	}
	t.Logf("%v: three members, 2 partitions each, all consumed", since())

	stops[3] = start(c, 3)
	c.waitBalanced([]int{0, 1, 2, 3})
	c.produce("four", 300)
	c.waitConsumed()
	counts, _ = c.counts([]int{0, 1, 2, 3})
	t.Logf("%v: four members own %v, all consumed", since(), counts)

	stops[0]()
	delete(stops, 0)
	c.revoked(0, sortedOwned(c, 0)...)
	c.waitBalanced([]int{1, 2, 3})
	c.produce("three-again", 300)
	c.waitConsumed()
	counts, _ = c.counts([]int{1, 2, 3})
	for m, n := range counts {
		if n != 2 {
			t.Errorf("after member 0 left, member %d owns %d partitions, want 2", m, n)
		}
	}
	t.Logf("%v: member 0 left; three members own %v, all consumed", since(), counts)

	d := c.describe()
	for _, m := range d.Members {
		if m.MemberEpoch != d.AssignmentEpoch || len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 2 {
			t.Errorf("described member %s: epoch %d (assignment epoch %d), assignment %+v", m.MemberID, m.MemberEpoch, d.AssignmentEpoch, m.Assignment)
		}
	}
	for m, s := range stops {
		s()
		delete(stops, m)
	}
	groupEventually(t, groupWait, "group empty", func() (bool, string) {
		d := c.describe()
		return d.State == "Empty", d.State
	})
	t.Logf("%v: members left, group Empty", since())
}

func sortedOwned(c *cgCheck, m int) []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int32
	for p := range c.owned[m] {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestConsumerGroupFranz: franz-go with kgo.ServerSideBalancer, which
// speaks ConsumerGroupHeartbeat v1 and asks for the uniform assignor (its
// sticky balancer's server-side counterpart).
func TestConsumerGroupFranz(t *testing.T) {
	n := testkit.StartNode(t, node.Config{Groups: consumerGroupConfig})
	c := newCGCheck(t, n.KafkaAddr(), "kip848-franz", "kip848-franz-group")
	runConsumerGroupTest(t, c, franzCGMember)
}

func franzCGMember(c *cgCheck, m int) func() {
	return franzMember(c.t, c, c.topic, m, nil,
		kgo.SeedBrokers(c.addr),
		kgo.ClientID(fmt.Sprintf("cohort-e2e-kgo848-%d", m)),
		kgo.ConsumerGroup(c.group),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ServerSideBalancer())
}

// memberTracker is what a group check (cgCheck, mixCheck) learns from a
// member's client.
type memberTracker interface {
	assigned(m int, parts ...int32)
	revoked(m int, parts ...int32)
	consumed(m int, p int32, offset int64)
	note(format string, args ...any)
}

// franzMember starts franz-go member m of a group consuming topic, with
// opts (seed brokers, client id, group, balancers, protocol), reporting
// to tr; the returned function stops it, leaving the group. It commits
// every 200 ms and on revocation (acked, if set, sees each commit's
// answer).
func franzMember(t *testing.T, tr memberTracker, topic string, m int, acked func(*kgo.Client, *kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse, error), opts ...kgo.Opt) func() {
	if acked == nil {
		acked = func(*kgo.Client, *kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse, error) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	opts = append(opts,
		kgo.ConsumeTopics(topic),
		kgo.AutoCommitInterval(200*time.Millisecond),
		kgo.AutoCommitCallback(acked),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			tr.assigned(m, a[topic]...)
		}),
		// Replacing kgo's default revoke callback: commit what was
		// polled first, as the default does.
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			cl.CommitOffsetsSync(ctx, cl.UncommittedOffsets(), func(cl *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if err != nil && !errors.Is(err, context.Canceled) {
					tr.note("member %d: commit on revoke: %v", m, err)
				}
				acked(cl, req, resp, err)
			})
			tr.revoked(m, r[topic]...)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			tr.revoked(m, l[topic]...)
			tr.note("member %d: partitions lost: %v", m, l)
		}),
	)
	cl, err := kgo.NewClient(opts...)
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
					tr.note("member %d: fetch %s/%d: %v", m, topic, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { tr.consumed(m, r.Partition, r.Offset) })
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			cl.Close() // leaves the group
		})
	}
}

// TestConsumerGroupConfluent: confluent-kafka-go v2.15.1 (bundled
// librdkafka 2.15.1) with group.protocol=consumer, the same scenario. Its
// protocol log must show ConsumerGroupHeartbeat in use and no parse or
// version errors.
func TestConsumerGroupConfluent(t *testing.T) {
	n := testkit.StartNode(t, node.Config{Groups: consumerGroupConfig})
	logs := newRdLog()
	c := newCGCheck(t, n.KafkaAddr(), "kip848-confluent", "kip848-confluent-group")
	runConsumerGroupTest(t, c, func(c *cgCheck, m int) func() { return confluentCGMember(c, m, logs) })
	logs.close() // every member has closed
	t.Logf("librdkafka debug: %d lines; requests sent:%s", logs.lines, logs.summary())
	for m := range 4 {
		if sent := logs.sent[fmt.Sprintf("cohort-e2e-rd848-%d", m)]; !sent["ConsumerGroupHeartbeat"][1] {
			t.Errorf("member %d never sent ConsumerGroupHeartbeat v1: %v", m, sent)
		}
	}
	logs.reportProblems(t)
}

func confluentCGMember(c *cgCheck, m int, logs *rdLog) func() {
	return confluentMember(c.t, c, c.addr, c.topic, fmt.Sprintf("cohort-e2e-rd848-%d", m), m, logs, kafka.ConfigMap{
		"group.id":       c.group,
		"group.protocol": "consumer",
	})
}

// confluentMember starts confluent-kafka-go member m of a group consuming
// topic, with conf (the group and its protocol) over this package's
// defaults, reporting to tr; the returned function stops it, leaving the
// group. Its rebalance callback sees every incremental assignment and
// revocation before librdkafka acknowledges it to the coordinator.
//
// Offsets are stored only for the messages the application handled:
// confluent-kafka-go's Close polls the queue empty, which with the
// automatic store marks the messages it throws away as consumed, and the
// final commit then skips them (seen in TestMixedGroupRollingUpgradeConfluent:
// a restarted member started one record past what its previous process
// handled).
func confluentMember(t *testing.T, tr memberTracker, addr, topic, clientID string, m int, logs *rdLog, conf kafka.ConfigMap) func() {
	full := kafka.ConfigMap{
		"auto.offset.reset":        "earliest",
		"enable.auto.offset.store": false,
		"enable.auto.commit":       true,
		"auto.commit.interval.ms":  200,
		"fetch.wait.max.ms":        250,
	}
	for k, v := range conf {
		full[k] = v
	}
	cons, err := kafka.NewConsumer(rdConfig(addr, clientID, logs, full))
	if err != nil {
		t.Fatalf("member %d: %v", m, err)
	}
	topicOf := func(tps []kafka.TopicPartition) []int32 {
		var out []int32
		for _, tp := range tps {
			if tp.Topic != nil && *tp.Topic == topic {
				out = append(out, tp.Partition)
			}
		}
		return out
	}
	rebalance := func(cons *kafka.Consumer, ev kafka.Event) error {
		switch e := ev.(type) {
		case kafka.AssignedPartitions:
			tr.assigned(m, topicOf(e.Partitions)...)
			return cons.IncrementalAssign(e.Partitions)
		case kafka.RevokedPartitions:
			if _, err := cons.Commit(); err != nil {
				var ke kafka.Error
				if !errors.As(err, &ke) || ke.Code() != kafka.ErrNoOffset {
					tr.note("member %d: commit on revoke: %v", m, err)
				}
			}
			tr.revoked(m, topicOf(e.Partitions)...)
			return cons.IncrementalUnassign(e.Partitions)
		}
		return nil
	}
	if err := cons.Subscribe(topic, rebalance); err != nil {
		cons.Close()
		t.Fatalf("member %d: subscribe: %v", m, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			switch ev := cons.Poll(100).(type) {
			case *kafka.Message:
				if ev.TopicPartition.Error != nil {
					tr.note("member %d: message: %v", m, ev.TopicPartition.Error)
					break
				}
				tr.consumed(m, ev.TopicPartition.Partition, int64(ev.TopicPartition.Offset))
				if _, err := cons.StoreMessage(ev); err != nil {
					tr.note("member %d: store offset: %v", m, err)
				}
			case kafka.Error:
				tr.note("member %d: %v (code %v)", m, ev, ev.Code())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			if err := cons.Close(); err != nil { // commits, then leaves
				tr.note("member %d: close: %v", m, err)
			}
		})
	}
}

// TestConsumerGroupPlatformatic: @platformatic/kafka 1.35.0 (pure
// JavaScript) with groupProtocol 'consumer', the same scenario, its
// consumers in one Node.js process (js/consumer848.mjs).
//
// Its records are judged by the fetch that returned them, not by when
// they reached the application. This client sends a Fetch for every
// partition it owns and waits up to maxWaitTime for records; when a
// heartbeat revokes one of them meanwhile, it pauses its stream, commits,
// updates its assignment and heartbeats, but the Fetch still in flight is
// answered later, when records are produced, and the stream pushes them
// (it does not check the assignment; Java's consumer drops such records).
// Seen in the logs of a failed run: member 0 sent Fetch 1@170 at t;
// at t+0.3 ms the coordinator answered its heartbeat revoking partition
// 1; at t+0.9 ms member 0's heartbeat said it owned only 0; at t+5.1 ms
// the coordinator gave 1 to member 3, which fetched from 170; at t+79 ms
// records 170-185 were produced and both fetches returned them, member
// 0's after it had revoked 1. Judged by arrival that failed about 1 run
// in 20 with two test processes at once, on 347f594 as on later code:
// the client's stale delivery, not two owners. Brokers answer a Fetch from anyone; what the
// coordinator promises is that a revoked partition goes to another
// member only after its owner's heartbeat released it, which cgCheck
// checks on the heartbeats the script reports, along with the owners at
// each fetch's sending. A record whose fetch is unknown is judged by
// arrival, as before.
func TestConsumerGroupPlatformatic(t *testing.T) {
	dir := jsDir(t)
	n := testkit.StartNode(t, node.Config{Groups: consumerGroupConfig})
	c := newCGCheck(t, n.KafkaAddr(), "kip848-platformatic", "kip848-platformatic-group")
	// Node 20 has no zstd: produce with the codecs platformatic reads.
	c.codecs = []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression()}
	spec := writeSpec(t, "consumer848", map[string]any{"bootstrap": c.addr, "topic": c.topic, "group": c.group, "client_id": "cohort-e2e-pk848"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "consumer848.mjs"), spec)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 16) // "started N", "stopped N", "done"
	readDone := make(chan struct{})
	byFetch, byArrival := 0, 0 // records judged each way, read after readDone
	go func() {
		defer close(readDone)
		owned := map[int][]int32{}
		// fetches: (member, fetch) → the members owning each partition
		// when it was sent; ranges: what each member's fetches returned.
		type fetched struct {
			f           int64
			p           int32
			first, last int64
		}
		fetches := map[[2]int64]map[int32][]int{}
		ranges := map[int][]fetched{}
		fetchOwners := func(m int, p int32, o int64) ([]int, bool) {
			rs := ranges[m]
			for i := len(rs) - 1; i >= 0; i-- {
				if r := rs[i]; r.p == p && r.first <= o && o <= r.last {
					owners, ok := fetches[[2]int64{int64(m), r.f}]
					return owners[p], ok
				}
			}
			return nil, false
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l struct {
				Kind       string          `json:"kind"`
				C          int             `json:"c"`
				Partitions []int32         `json:"partitions"`
				P          int32           `json:"p"`
				O          int64           `json:"o"`
				F          int64           `json:"f"`
				Owners     map[int32][]int `json:"owners"`
				Ranges     [][3]int64      `json:"ranges"`
				Error      string          `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				c.note("platformatic: bad line %q: %v", sc.Text(), err)
				continue
			}
			switch l.Kind {
			case "owned":
				var gone, added []int32
				for _, p := range owned[l.C] {
					if !slices.Contains(l.Partitions, p) {
						gone = append(gone, p)
					}
				}
				for _, p := range l.Partitions {
					if !slices.Contains(owned[l.C], p) {
						added = append(added, p)
					}
				}
				owned[l.C] = l.Partitions
				c.revoked(l.C, gone...)
				c.assigned(l.C, added...)
			case "hb":
				c.toldOwned(l.C, l.Partitions)
			case "fetch":
				fetches[[2]int64{int64(l.C), l.F}] = l.Owners
			case "fetched":
				for _, r := range l.Ranges {
					ranges[l.C] = append(ranges[l.C], fetched{f: l.F, p: int32(r[0]), first: r[1], last: r[2]})
				}
			case "rec":
				if owners, ok := fetchOwners(l.C, l.P, l.O); ok {
					byFetch++
					c.consumedFrom(l.C, l.P, l.O, owners)
				} else {
					byArrival++
					c.consumed(l.C, l.P, l.O)
				}
			case "error":
				c.note("platformatic member %d: %s", l.C, l.Error)
			case "started", "stopped":
				events <- fmt.Sprintf("%s %d", l.Kind, l.C)
			case "done":
				events <- "done"
			}
		}
	}()
	wait := func(what string) {
		t.Helper()
		select {
		case got := <-events:
			if got != what {
				t.Fatalf("platformatic: %q, want %q; stderr:\n%s", got, what, stderr.String())
			}
		case <-time.After(groupWait):
			t.Fatalf("platformatic: no %q within %v; stderr:\n%s", what, groupWait, stderr.String())
		}
	}
	runConsumerGroupTest(t, c, func(c *cgCheck, m int) func() {
		fmt.Fprintf(stdin, "start %d\n", m)
		wait(fmt.Sprintf("started %d", m))
		var once sync.Once
		return func() {
			once.Do(func() {
				fmt.Fprintf(stdin, "stop %d\n", m)
				wait(fmt.Sprintf("stopped %d", m))
			})
		}
	})
	stdin.Close()
	wait("done")
	<-readDone
	t.Logf("records judged by their fetch: %d; by arrival (fetch unknown): %d", byFetch, byArrival)
	if err := cmd.Wait(); err != nil {
		t.Errorf("node: %v; stderr:\n%s", err, stderr.String())
	}
}

// TestConsumerGroupSIGKILL: the real binary is killed with SIGKILL while a
// consumer group is mid-rebalance, with acknowledged commits; after the
// restart ConsumerGroupDescribe shows the same epochs and assignments,
// every acknowledged commit is there, and the members carry on at their
// epochs: the revoking member finishes and the waiting one gets its
// partitions. The members are raw kmsg clients so that the test knows
// exactly what was acknowledged.
func TestConsumerGroupSIGKILL(t *testing.T) {
	const topic, group = "kip848-crash", "kip848-crash-group"
	dir := t.TempDir()
	args := []string{"--group-consumer-heartbeat-interval", "200ms", "--group-consumer-assignment-interval", "0", "--auto-create-topics=false"}
	proc := testkit.StartBinary(t, dir, args...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(addr string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cohort-e2e-cg-crash"))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := connect(proc.Addr)
	createTopic(t, kadm.NewClient(cl), topic, cgPartitions)
	var topicID [16]byte
	hb := func(cl *kgo.Client, member string, epoch int32, owned []int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, member, epoch, -1
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 60000, []string{topic}
		}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicID, Partitions: owned}}
		if owned == nil {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %s@%d: %v %v", member, epoch, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		if resp.Assignment != nil && len(resp.Assignment.Topics) > 0 {
			topicID = resp.Assignment.Topics[0].TopicID
		}
		return resp
	}
	a := hb(cl, "member-a", 0, nil) // everything, epoch 1
	b := hb(cl, "member-b", 0, nil) // epoch 2, waits for a
	a2 := hb(cl, "member-a", a.MemberEpoch, []int32{0, 1, 2, 3, 4, 5})
	if a2.MemberEpoch != 1 || a2.Assignment == nil || len(a2.Assignment.Topics[0].Partitions) != 3 {
		t.Fatalf("a told to revoke: %+v", a2)
	}
	kept := a2.Assignment.Topics[0].Partitions
	// Commits, acknowledged, with a's current epoch.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.MemberID, commit.Generation = group, "member-a", 1
	ct := kmsg.OffsetCommitRequestTopic{Topic: topic, TopicID: topicID} // kgo sends v10: by id
	for p := range int32(cgPartitions) {
		ct.Partitions = append(ct.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, Offset: int64(100 + p)})
	}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{ct}
	cr, err := commit.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cr.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("commit %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	describe := func(cl *kgo.Client) kmsg.ConsumerGroupDescribeResponseGroup {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0]
	}
	before := describe(cl)
	cl.Close()

	proc.Kill()
	proc = testkit.StartBinary(t, dir, args...)
	cl = connect(proc.Addr)
	defer cl.Close()
	after := describe(cl)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("the group changed across SIGKILL:\nbefore %+v\nafter  %+v", before, after)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = group
	fr, err := fetch.RequestWith(ctx, cl)
	if err != nil || len(fr.Topics) != 1 {
		t.Fatalf("fetch: %v %+v", err, fr)
	}
	for _, p := range fr.Topics[0].Partitions {
		if p.Offset != int64(100+p.Partition) {
			t.Errorf("partition %d: committed %d, want %d", p.Partition, p.Offset, 100+p.Partition)
		}
	}
	// The members carry on: a finishes revoking, b gets the rest.
	if r := hb(cl, "member-a", 1, kept); r.MemberEpoch != 2 {
		t.Fatalf("a after restart: %+v", r)
	}
	r := hb(cl, "member-b", b.MemberEpoch, []int32{})
	if r.Assignment == nil || len(r.Assignment.Topics) != 1 || len(r.Assignment.Topics[0].Partitions) != 3 {
		t.Fatalf("b after restart: %+v", r)
	}
	if d := describe(cl); d.State != "Stable" {
		t.Fatalf("after restart: %s", d.State)
	}
}
