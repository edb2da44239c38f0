package e2e

// Group coordinator shard reloads with real clients: a group keeps
// consuming while the shard that owns it is unloaded and loaded again on
// the same node, as when a shard moves between nodes (Kafka's
// __consumer_offsets partition changing leader). While the shard is
// unloaded, the group's requests get NOT_COORDINATOR (16), and the
// clients look the coordinator up again and retry; while it loads they
// get COORDINATOR_LOAD_IN_PROGRESS (14) and retry after a back-off.
//
// Every test runs the same scenario (runReloadTest) with its own node,
// topic of 6 partitions and group of 3 members. The members commit
// synchronously after what they consume, and each acknowledged commit
// (a partition answered without error) is remembered.
//
//  1. 600 records are produced; a producer goroutine adds 6 records (one
//     per partition) every 50 ms until the test stops it.
//  2. The members join and settle: each owns 2 partitions, each has had
//     a commit acknowledged, and the coordinator's last rebalance event
//     for the group is a completed one.
//  3. Three times: the group's shard is unloaded until every member's
//     heartbeat has been answered NOT_COORDINATOR; then it is loaded,
//     and the load is held (reloadObserver) until every member has been
//     answered COORDINATOR_LOAD_IN_PROGRESS and has sent a heartbeat
//     (a classic one is answered NONE while the group loads, as Kafka
//     does: otherwise Sarama rejoined, a rebalance in every cycle); once
//     the shard serves again, the group's committed offsets
//     (OffsetFetch) are at least every commit acknowledged before, and
//     every member has a commit acknowledged after the load.
//  4. The producer stops and 300 more records are produced; every record
//     is consumed, and the committed offsets reach every partition's
//     end, at or above the highest acknowledged commit.
//  5. The coordinator reported at most one rebalance of the group from
//     step 2 on (observe.GroupEvent); no client reported an error other
//     than the coordinator errors the reloads cause, or rebalance
//     signals (only logged: the rebalances are counted at the
//     coordinator), and no member lost its partitions.
//
// The clients: franz-go (classic, cooperative-sticky, and KIP-848 with
// kgo.ServerSideBalancer), confluent-kafka-go (librdkafka, range) and
// Sarama (range). franz-go and librdkafka say which commits were
// acknowledged; Sarama does not (its offset manager retries quietly), so
// its connections go through commitTap, which reads the OffsetCommit
// exchanges off the wire.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/observetest"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	reloadMembers    = 3
	reloadPartitions = 6
	reloadCycles     = 3
	// reloadWait bounds each wait for a condition: the group settling,
	// every member hitting an error, the members committing again.
	reloadWait = 20 * time.Second
	// reloadTrickle is how often the producer adds a record to every
	// partition; reloadTrickleMax bounds how long it runs if the test
	// never stops it.
	reloadTrickle    = 50 * time.Millisecond
	reloadTrickleMax = 90 * time.Second
)

// TestReloadFranz: franz-go kgo members (classic protocol, its default
// cooperative-sticky balancer) through shard reloads.
func TestReloadFranz(t *testing.T) {
	runReloadTest(t, "kgo", func(ctx context.Context, c *reloadCheck, m int) func() {
		return reloadFranzMember(ctx, c, m)
	})
}

// TestReloadFranz848: franz-go kgo members with the KIP-848 consumer
// protocol (kgo.ServerSideBalancer: ConsumerGroupHeartbeat, the uniform
// server assignor) through shard reloads.
func TestReloadFranz848(t *testing.T) {
	runReloadTest(t, "kgo848", func(ctx context.Context, c *reloadCheck, m int) func() {
		return reloadFranzMember(ctx, c, m, kgo.ServerSideBalancer())
	})
}

// TestReloadConfluent: confluent-kafka-go (librdkafka 2.15) members,
// classic protocol with range, through shard reloads; librdkafka's
// protocol debug log must show no malformed or refused exchange.
func TestReloadConfluent(t *testing.T) {
	logs := newRdLog()
	closed := false
	defer func() {
		if !closed {
			logs.close()
		}
	}()
	runReloadTest(t, "rdkafka", func(ctx context.Context, c *reloadCheck, m int) func() {
		return reloadConfluentMember(ctx, c, m, logs)
	})
	logs.close()
	closed = true
	logs.reportProblems(t)
}

// TestReloadSarama: Sarama ConsumerGroup members, classic protocol with
// range, through shard reloads.
func TestReloadSarama(t *testing.T) {
	runReloadTest(t, "sarama", reloadSaramaMember)
}

// reloadMemberFunc starts member m, consuming until ctx is done and
// reporting to c. stop waits for its goroutines and closes its client.
type reloadMemberFunc func(ctx context.Context, c *reloadCheck, m int) (stop func())

// runReloadTest is the scenario above for one client.
func runReloadTest(t *testing.T, client string, start reloadMemberFunc) {
	t0 := time.Now()
	since := func() time.Duration { return time.Since(t0).Round(time.Millisecond) }
	c := newReloadCheck(t, client)
	c.produce("before", 600)
	stopTrickle := c.trickle()
	defer stopTrickle()

	stopAll := c.startMembers(start)
	defer func() {
		// A test that failed between an unload and its load: serve the
		// group again, so that the members can leave.
		c.obs.hold.Store(nil)
		if err := c.node.Coordinator().Load(c.shard); err != nil {
			t.Errorf("load shard %d: %v", c.shard, err)
		}
		stopAll()
		c.reportProblems()
	}()
	c.waitSettled()
	base := c.rebalances()
	c.setSettled()
	t.Logf("%v: settled: %s", since(), c.ownedString())

	for cycle := 1; cycle <= reloadCycles; cycle++ {
		c.reload(cycle)
		t.Logf("%v: cycle %d done", since(), cycle)
	}

	stopTrickle()
	c.produce("after", 300)
	c.waitConsumed()
	c.waitCommittedEnds()
	t.Logf("%v: every record consumed, committed offsets at the ends", since())

	rebalances := c.rebalances() - base
	stopAll()
	c.report(rebalances)
	if rebalances > 1 {
		t.Errorf("the coordinator reported %d rebalances of the group through %d reloads; want at most 1", rebalances, reloadCycles)
	}
	t.Logf("%v: done", since())
}

// startMembers starts the group's members; stopAll stops them all (they
// leave the group) and may be called again.
func (c *reloadCheck) startMembers(start reloadMemberFunc) (stopAll func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stops := make([]func(), reloadMembers)
	for m := range stops {
		stops[m] = start(ctx, c, m)
	}
	return func() {
		cancel()
		var wg sync.WaitGroup
		for m, s := range stops {
			if s != nil {
				wg.Go(s)
				stops[m] = nil
			}
		}
		wg.Wait()
	}
}

// reloadCheck follows one group through shard reloads: what its members
// own, consume and have had acknowledged, and what the node saw.
type reloadCheck struct {
	t            *testing.T
	client       string
	node         *node.Node
	obs          *reloadObserver
	seeds        []string // the brokers clients bootstrap from
	topic, group string
	shard        int
	adm          *kadm.Client

	mu       sync.Mutex
	want     map[[2]int64]bool // (partition, offset) produced
	ends     map[int32]int64
	seen     map[[2]int64]bool
	owned    [reloadMembers]map[int32]bool
	assigns  [reloadMembers]int // assignments each member's client reported
	assigns0 [reloadMembers]int // assigns when the group settled
	acks     [reloadMembers]int // commits acknowledged, per member
	acked    map[int32]int64    // highest acknowledged commit, per partition
	settled  bool
	// nodeDies: a node is killed (cluster mode), so the clients'
	// connection errors to it are expected too.
	nodeDies bool
	coordErr map[string]int // coordinator errors the clients reported (expected)
	rebalErr []string       // rebalance signals the clients reported after settling
	// ended says which members' clients ended their group session on
	// their own after settling: franz-go's heartbeat failed for good
	// without a coordinator's answer (sessionEnds), and it gave its
	// partitions up. They come back with a JoinGroup that rebalances, at
	// Kafka's coordinator as at Cohort's. A session the coordinator ended
	// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) does not count.
	ended    [reloadMembers]bool
	problems []string
}

func newReloadCheck(t *testing.T, client string) *reloadCheck {
	t.Helper()
	obs := &reloadObserver{}
	obs.shard.Store(-1)
	cfg := consumerGroupConfig // KIP-848: 200 ms heartbeats, no assignment throttle
	cfg.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.InitialRebalanceQuiet = 50 * time.Millisecond
	cfg.MinSessionTimeout = 100 * time.Millisecond
	n := testkit.StartNode(t, node.Config{Groups: cfg, Observer: obs})
	c := &reloadCheck{
		t: t, client: client, node: n, obs: obs, seeds: []string{n.KafkaAddr()},
		topic: "reload-" + client, group: "reload-group-" + client,
		want: map[[2]int64]bool{}, ends: map[int32]int64{}, seen: map[[2]int64]bool{},
		acked: map[int32]int64{}, coordErr: map[string]int{},
	}
	for m := range c.owned {
		c.owned[m] = map[int32]bool{}
	}
	c.shard = n.Coordinator().ShardFor("", c.group)
	obs.shard.Store(int32(c.shard))
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...), kgo.ClientID("cohort-e2e-reload-check"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c.adm = kadm.NewClient(cl)
	createTopic(t, c.adm, c.topic, reloadPartitions)
	return c
}

// clientID is member m's client id, by which the observer's requests are
// told apart.
func (c *reloadCheck) clientID(m int) string {
	return fmt.Sprintf("cohort-e2e-reload-%s-%d", c.client, m)
}

// memberOf returns the member a group member id belongs to (the
// coordinator makes it of the client id, a dash and a UUID, as Kafka's),
// or -1.
func (c *reloadCheck) memberOf(memberID string) int {
	for m := range reloadMembers {
		if strings.HasPrefix(memberID, c.clientID(m)+"-") {
			return m
		}
	}
	return -1
}

// member returns the member a client id belongs to, or -1.
func (c *reloadCheck) member(clientID string) int {
	for m := range reloadMembers {
		if clientID == c.clientID(m) {
			return m
		}
	}
	return -1
}

// produce writes n records with franz-go and remembers them.
func (c *reloadCheck) produce(prefix string, n int) {
	c.t.Helper()
	got := franzProduce(c.t, c.seeds[0], c.topic, makeRecs(c.client+"-"+prefix, n, time.Now().Add(-time.Hour)))
	for _, r := range got {
		c.produced(r.Partition, r.Offset)
	}
}

func (c *reloadCheck) produced(p int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want[[2]int64{int64(p), offset}] = true
	c.ends[p] = max(c.ends[p], offset+1)
}

// trickle starts a producer that adds a record to every partition each
// reloadTrickle, for at most reloadTrickleMax. The returned function
// stops it and waits for it; it may be called again.
func (c *reloadCheck) trickle() (stop func()) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds...), kgo.DefaultProduceTopic(c.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		c.t.Fatal(err)
	}
	// Stopping does not cancel a produce under way: a record the broker
	// appended but the producer gave up on would end a partition beyond
	// the offsets known to have been produced.
	ctx, cancel := context.WithTimeout(context.Background(), reloadTrickleMax)
	stopping := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cl.Close()
		tick := time.NewTicker(reloadTrickle)
		defer tick.Stop()
		for i := 0; ; i++ {
			batch := make([]*kgo.Record, reloadPartitions)
			for p := range batch {
				batch[p] = &kgo.Record{Partition: int32(p), Key: fmt.Appendf(nil, "trickle-%d-%d", i, p), Value: fmt.Appendf(nil, "v%d", i)}
			}
			for _, r := range cl.ProduceSync(ctx, batch...) {
				if r.Err != nil {
					c.problem(-1, "trickle produce: %v", r.Err)
					return
				}
				c.produced(r.Record.Partition, r.Record.Offset)
			}
			select {
			case <-stopping:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stopping) })
		<-done
		cancel()
	}
}

// Reports from the members.

// setOwned replaces what member m owns, and counts an assignment if it
// is a new one (not empty, and not what the member owned).
func (c *reloadCheck) setOwned(m int, parts []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := map[int32]bool{}
	for _, p := range parts {
		now[p] = true
	}
	if len(now) > 0 && fmt.Sprint(now) != fmt.Sprint(c.owned[m]) {
		c.assigns[m]++
	}
	c.owned[m] = now
}

// assigned adds partitions to what member m owns.
func (c *reloadCheck) assigned(m int, parts ...int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assigns[m]++
	for _, p := range parts {
		c.owned[m][p] = true
	}
}

// revoked removes partitions from what member m owns.
func (c *reloadCheck) revoked(m int, parts ...int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range parts {
		delete(c.owned[m], p)
	}
}

func (c *reloadCheck) consumed(p int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[[2]int64{int64(p), offset}] = true
}

// ack records that the coordinator acknowledged member m's commit of
// offset for partition p of the test's topic.
func (c *reloadCheck) ack(m int, topic string, p int32, offset int64) {
	if topic != c.topic {
		c.problem(m, "commit acknowledged for %s/%d", topic, p)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acks[m]++
	c.acked[p] = max(c.acked[p], offset)
}

// clientErr sorts an error member m's client reported: a coordinator
// error (the reloads cause them) is counted; a rebalance signal is kept
// for the report (the rebalances are counted at the coordinator); any
// other error fails the test.
func (c *reloadCheck) clientErr(m int, what string, err error) {
	switch {
	case coordinatorErr(err), c.nodeDies && connectionErr(err):
		c.mu.Lock()
		c.coordErr[fmt.Sprintf("member %d: %s: %v", m, what, err)]++
		c.mu.Unlock()
	case rebalanceSignal(err), c.nodeDies && errors.Is(err, errPartitionsLost):
		// franz-go ends its session when a heartbeat cannot reach a
		// coordinator that died: a rebalance, counted at the nodes.
		c.mu.Lock()
		if c.settled {
			c.rebalErr = append(c.rebalErr, fmt.Sprintf("member %d: %s: %v", m, what, err))
		}
		c.mu.Unlock()
	default:
		c.problem(m, "%s: %v", what, err)
	}
}

// problem fails the test (at its end) with a member's problem (m -1: the
// producer's).
func (c *reloadCheck) problem(m int, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.problems) < 50 {
		c.problems = append(c.problems, fmt.Sprintf("member %d: ", m)+fmt.Sprintf(format, args...))
	}
}

func (c *reloadCheck) setSettled() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled = true
	c.assigns0 = c.assigns
}

// coordinatorErr says whether err, from any of the clients, is one with
// which a coordinator says it cannot serve the group now:
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
// COORDINATOR_NOT_AVAILABLE.
func coordinatorErr(err error) bool {
	return errorIn(err, []kafka.ErrorCode{kafka.ErrNotCoordinator, kafka.ErrCoordinatorLoadInProgress, kafka.ErrCoordinatorNotAvailable},
		kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable,
		sarama.ErrNotCoordinatorForConsumer, sarama.ErrOffsetsLoadInProgress, sarama.ErrConsumerCoordinatorNotAvailable)
}

// sessionEnds is a franz-go logger that notes, in c.ended, a member whose
// client ends its session on its own: kgo logs "heartbeat errored" with
// the error that ends the session, and one that is not a Kafka error code
// is the client's (a connection, a dial, its retries running out).
type sessionEnds struct {
	c *reloadCheck
	m int
}

func (sessionEnds) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l sessionEnds) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	if msg != "heartbeat errored" {
		return
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		err, ok := keyvals[i+1].(error)
		var ke *kerr.Error
		if keyvals[i] != "err" || !ok || errors.As(err, &ke) || errors.Is(err, context.Canceled) {
			continue
		}
		l.c.mu.Lock()
		if l.c.settled {
			l.c.ended[l.m] = true
		}
		l.c.mu.Unlock()
	}
}

// errPartitionsLost is what a franz-go member reports when its client
// says it lost its partitions (the session ended without a revoke).
var errPartitionsLost = errors.New("partitions lost")

// connectionErr says whether err, from any of the clients, is a
// connection to a broker failing: refused, closed (EOF) or not there.
func connectionErr(err error) bool {
	if errorIn(err, []kafka.ErrorCode{kafka.ErrTransport, kafka.ErrAllBrokersDown},
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, sarama.ErrNotConnected) {
		return true
	}
	// Sarama wraps some of them as text only (its offset manager reports
	// a failed commit to the dead coordinator as an error of a partition).
	msg := err.Error()
	for _, s := range []string{"connection refused", "broken pipe", "use of closed network connection", "broker not connected", "connection reset"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return strings.HasSuffix(msg, ": EOF")
}

// Waits and checks from the test goroutine.

// ownedString is each member's sorted partitions.
func (c *reloadCheck) ownedString() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownedLocked()
}

func (c *reloadCheck) ownedLocked() string {
	var b strings.Builder
	for m, o := range c.owned {
		var ps []int32
		for p := range o {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		fmt.Fprintf(&b, " member %d %v", m, ps)
	}
	return strings.TrimSpace(b.String())
}

// waitSettled waits until the members own 2 partitions each, disjoint,
// each member has had a commit acknowledged and the coordinator's last
// rebalance event for the group is a completed rebalance; then until
// every record produced so far is consumed.
func (c *reloadCheck) waitSettled() {
	c.t.Helper()
	groupEventually(c.t, reloadWait, "the group settled and consuming", func() (bool, string) {
		c.mu.Lock()
		owner := map[int32]int{}
		ok := true
		for m, o := range c.owned {
			ok = ok && len(o) == reloadPartitions/reloadMembers && c.acks[m] > 0
			for p := range o {
				if _, dup := owner[p]; dup {
					ok = false
				}
				owner[p] = m
			}
		}
		state := fmt.Sprintf("owned: %s; acknowledged commits %v", c.ownedLocked(), c.acks)
		c.mu.Unlock()
		if c.obs == nil { // a cluster of processes: the clients' view only
			return ok, state
		}
		last := c.lastRebalanceEvent()
		return ok && last == observe.RebalanceCompleted, state + "; last rebalance event " + last.String()
	})
	c.waitConsumed()
}

// groupEvents returns the coordinator's events for the group.
func (c *reloadCheck) groupEvents() []observe.GroupEvent {
	var out []observe.GroupEvent
	for _, e := range c.obs.rec.Snapshot().Groups {
		if e.Group == c.group {
			out = append(out, e.GroupEvent)
		}
	}
	return out
}

func (c *reloadCheck) lastRebalanceEvent() observe.GroupEventKind {
	var last observe.GroupEventKind
	for _, e := range c.groupEvents() {
		if e.Kind == observe.RebalanceStarted || e.Kind == observe.RebalanceCompleted {
			last = e.Kind
		}
	}
	return last
}

// rebalances counts the rebalances the coordinator started for the group.
func (c *reloadCheck) rebalances() int {
	n := 0
	for _, e := range c.groupEvents() {
		if e.Kind == observe.RebalanceStarted {
			n++
		}
	}
	return n
}

// answeredSince returns the group requests of the members answered
// from index mark of the recorder's answers on.
func (c *reloadCheck) answeredSince(mark int) []observetest.Answered {
	as := c.obs.rec.Snapshot().Answered
	return as[min(mark, len(as)):]
}

func (c *reloadCheck) answeredMark() int { return len(c.obs.rec.Snapshot().Answered) }

// everyMember says whether each member has a request among as for which
// match holds, and which have none.
func (c *reloadCheck) everyMember(as []observetest.Answered, match func(observetest.Answered) bool) (bool, []int) {
	var hit [reloadMembers]bool
	for _, a := range as {
		if m := c.member(a.Request.ClientID); m >= 0 && match(a) {
			hit[m] = true
		}
	}
	var missing []int
	for m, h := range hit {
		if !h {
			missing = append(missing, m)
		}
	}
	return len(missing) == 0, missing
}

func isHeartbeat(a observetest.Answered) bool {
	return a.Request.Key == int16(kmsg.Heartbeat) || a.Request.Key == int16(kmsg.ConsumerGroupHeartbeat)
}

// reload unloads the group's shard until every member's heartbeat has
// been answered NOT_COORDINATOR, then loads it, holding the load until
// every member has been answered COORDINATOR_LOAD_IN_PROGRESS and has
// heartbeated; then it checks that the committed offsets kept every
// acknowledged commit and waits for every member to commit again.
func (c *reloadCheck) reload(cycle int) {
	c.t.Helper()
	co := c.node.Coordinator()
	mark := c.answeredMark()
	t0 := time.Now()
	co.Unload(c.shard)
	groupEventually(c.t, reloadWait, fmt.Sprintf("cycle %d: every member's heartbeat answered NOT_COORDINATOR", cycle), func() (bool, string) {
		ok, missing := c.everyMember(c.answeredSince(mark), func(a observetest.Answered) bool {
			return isHeartbeat(a) && a.Code == kerr.NotCoordinator.Code
		})
		return ok, fmt.Sprintf("members without: %v", missing)
	})
	unloaded := time.Since(t0)

	var held string
	c.obs.holdNextLoad(func() {
		// Not a Fatal here, inside Load: the shard would stay loading.
		mark := c.answeredMark()
		var missing14, missingHB []int
		if _, ok := c.obs.rec.Wait(reloadWait, func(s observetest.Snapshot) bool {
			as := s.Answered[min(mark, len(s.Answered)):]
			var ok14, okHB bool
			ok14, missing14 = c.everyMember(as, func(a observetest.Answered) bool { return a.Code == kerr.CoordinatorLoadInProgress.Code })
			okHB, missingHB = c.everyMember(as, isHeartbeat)
			return ok14 && okHB
		}); !ok {
			held = fmt.Sprintf("members never answered COORDINATOR_LOAD_IN_PROGRESS: %v; members that sent no heartbeat: %v", missing14, missingHB)
		}
	})
	t1 := time.Now()
	if err := co.Load(c.shard); err != nil {
		c.t.Fatalf("cycle %d: load shard %d: %v", cycle, c.shard, err)
	}
	loading := time.Since(t1)
	if held != "" {
		c.t.Errorf("cycle %d: while the shard loaded: %s", cycle, held)
	}

	// Every commit acknowledged before now was made before the unload
	// or, answered by the loaded shard, after it: the committed offsets
	// must be at least those (later commits only move them on).
	c.mu.Lock()
	acked := maps.Clone(c.acked)
	acks := c.acks
	c.mu.Unlock()
	committed := c.committed()
	for p, o := range acked {
		if committed[p] < o {
			c.t.Errorf("cycle %d: partition %d committed at %d after the reload; a commit of %d was acknowledged", cycle, p, committed[p], o)
		}
	}
	groupEventually(c.t, reloadWait, fmt.Sprintf("cycle %d: every member committing again", cycle), func() (bool, string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		ok := true
		for m := range acks {
			ok = ok && c.acks[m] > acks[m]
		}
		return ok, fmt.Sprintf("acknowledged commits per member %v, at the load %v", c.acks, acks)
	})
	c.t.Logf("cycle %d: unloaded %v, loading %v, committing again %v after the load; committed %v",
		cycle, unloaded.Round(time.Millisecond), loading.Round(time.Millisecond), (time.Since(t1) - loading).Round(time.Millisecond), committed)
}

// committed returns the group's committed offsets (OffsetFetch through
// kadm), -1 for a partition with none.
func (c *reloadCheck) committed() map[int32]int64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), reloadWait)
	defer cancel()
	// A connection to a coordinator that was just killed (cluster mode)
	// fails the request once; the client looks the coordinator up again
	// on the next.
	var offs kadm.OffsetResponses
	var err error
	for {
		if offs, err = c.adm.FetchOffsets(ctx, c.group); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatalf("fetch offsets: %v", err)
	}
	out := map[int32]int64{}
	for p := range int32(reloadPartitions) {
		out[p] = -1
		if o, ok := offs.Lookup(c.topic, p); ok {
			if o.Err != nil {
				c.t.Fatalf("fetch offsets: partition %d: %v", p, o.Err)
			}
			out[p] = o.At
		}
	}
	return out
}

// waitConsumed waits until every record produced so far is consumed.
func (c *reloadCheck) waitConsumed() {
	c.t.Helper()
	groupEventually(c.t, reloadWait, "every record consumed", func() (bool, string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		missing := map[int64]int{}
		for k := range c.want {
			if !c.seen[k] {
				missing[k[0]]++
			}
		}
		return len(missing) == 0, fmt.Sprintf("records missing per partition: %v", missing)
	})
}

// waitCommittedEnds waits until the committed offsets are every
// partition's end, and checks that none is below the highest
// acknowledged commit.
func (c *reloadCheck) waitCommittedEnds() {
	c.t.Helper()
	var committed map[int32]int64
	groupEventually(c.t, reloadWait, "committed offsets at the partitions' ends", func() (bool, string) {
		committed = c.committed()
		c.mu.Lock()
		defer c.mu.Unlock()
		ok := true
		for p := range int32(reloadPartitions) {
			ok = ok && committed[p] == c.ends[p]
		}
		return ok, fmt.Sprintf("committed %v, ends %v", committed, c.ends)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, o := range c.acked {
		if committed[p] < o {
			c.t.Errorf("partition %d committed at %d; a commit of %d was acknowledged", p, committed[p], o)
		}
	}
}

// report logs what each member saw and fails the test with the members'
// problems.
func (c *reloadCheck) report(rebalances int) {
	c.t.Helper()
	type counts struct{ notCoord, loading, findCoord, heartbeats int }
	var per [reloadMembers]counts
	apis := map[string]int{}
	var answered []observetest.Answered
	if c.obs != nil {
		answered = c.obs.rec.Snapshot().Answered
	}
	for _, a := range answered {
		m := c.member(a.Request.ClientID)
		if m < 0 {
			continue
		}
		switch {
		case a.Code == kerr.NotCoordinator.Code:
			per[m].notCoord++
			apis[a.Request.API()+" NOT_COORDINATOR"]++
		case a.Code == kerr.CoordinatorLoadInProgress.Code:
			per[m].loading++
			apis[a.Request.API()+" COORDINATOR_LOAD_IN_PROGRESS"]++
		}
		if a.Request.Key == int16(kmsg.FindCoordinator) {
			per[m].findCoord++
		}
		if isHeartbeat(a) {
			per[m].heartbeats++
		}
	}
	var keys []string
	for k := range apis {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var byAPI []string
	for _, k := range keys {
		byAPI = append(byAPI, fmt.Sprintf("%s %d", k, apis[k]))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var later [reloadMembers]int
	for m := range later {
		later[m] = c.assigns[m] - c.assigns0[m]
	}
	c.t.Logf("%s: %d rebalances at the coordinator after settling; new assignments per member after settling (clients' view) %v; acknowledged commits per member %v",
		c.client, rebalances, later, c.acks)
	for m, n := range per {
		c.t.Logf("member %d: answered NOT_COORDINATOR %d, COORDINATOR_LOAD_IN_PROGRESS %d; FindCoordinator %d; heartbeats %d",
			m, n.notCoord, n.loading, n.findCoord, n.heartbeats)
	}
	c.t.Logf("errors answered, by API: %s", strings.Join(byAPI, ", "))
	var errs []string
	for k, n := range c.coordErr {
		errs = append(errs, fmt.Sprintf("%s (×%d)", k, n))
	}
	sort.Strings(errs)
	for _, e := range errs {
		c.t.Logf("client reported (expected during a reload): %s", e)
	}
	for _, e := range c.rebalErr {
		c.t.Logf("client reported a rebalance signal: %s", e)
	}
}

// reportProblems fails the test with the members' problems.
func (c *reloadCheck) reportProblems() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.problems {
		c.t.Error(p)
	}
}

// reloadObserver keeps the group traffic (requests of the group APIs and
// FindCoordinator) and every group and shard event in a Recorder, and can
// hold the group's shard while it loads.
//
// Holding is a test hook with no counterpart in the server: the shard
// set reports a load starting (observe.ShardLoading) before it reads the
// store, and while Shard does not return the shard stays loading, its
// requests answered COORDINATOR_LOAD_IN_PROGRESS, as for a shard with
// much to read. Observers must not block; this one does it on purpose,
// on the goroutine that called Load, for a bounded time.
type reloadObserver struct {
	rec   observetest.Recorder
	shard atomic.Int32 // the group's shard; -1 before it is known
	hold  atomic.Pointer[func()]
}

// holdNextLoad makes the next load of the group's shard call f before it
// reads the store.
func (o *reloadObserver) holdNextLoad(f func()) { o.hold.Store(&f) }

func recorded(key int16) bool {
	_, ok := groups.Lookup(key)
	return ok || key == int16(kmsg.FindCoordinator)
}

func (o *reloadObserver) RequestReceived(ctx context.Context, r observe.Request) context.Context {
	if recorded(r.Key) {
		return o.rec.RequestReceived(ctx, r)
	}
	return ctx
}

func (o *reloadObserver) RequestAnswered(ctx context.Context, r observe.Request, a observe.Answer) {
	if recorded(r.Key) {
		o.rec.RequestAnswered(ctx, r, a)
	}
}

func (o *reloadObserver) BatchWritten(observe.Batch) {}

func (o *reloadObserver) Group(ctx context.Context, e observe.GroupEvent) { o.rec.Group(ctx, e) }

func (o *reloadObserver) Shard(e observe.ShardEvent) {
	o.rec.Shard(e)
	if e.Kind == observe.ShardLoading && int32(e.Shard) == o.shard.Load() {
		if f := o.hold.Swap(nil); f != nil {
			(*f)()
		}
	}
}

// The members, one function per client.

// reloadFranzMember is a kgo group member that commits what each poll
// returned, synchronously (CommitOffsetsSync, which kgo retries on
// coordinator errors), and reports the partitions acknowledged.
func reloadFranzMember(ctx context.Context, c *reloadCheck, m int, opts ...kgo.Opt) func() {
	onCommit := func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				c.clientErr(m, "commit", err)
			}
			return
		}
		sent := map[string]map[int32]int64{}
		names := map[[16]byte]string{}
		for _, rt := range req.Topics {
			sent[rt.Topic] = map[int32]int64{}
			names[rt.TopicID] = rt.Topic
			for _, rp := range rt.Partitions {
				sent[rt.Topic][rp.Partition] = rp.Offset
			}
		}
		for _, rt := range resp.Topics {
			if rt.Topic == "" {
				// v10 answers by id; kgo names the topics of the
				// response only for a commit of its current session.
				rt.Topic = names[rt.TopicID]
			}
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					c.clientErr(m, fmt.Sprintf("commit of partition %d", rp.Partition), err)
				} else {
					c.ack(m, rt.Topic, rp.Partition, sent[rt.Topic][rp.Partition])
				}
			}
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.seeds...),
		kgo.ClientID(c.clientID(m)),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.topic),
		kgo.SessionTimeout(groupSessionTimeout),
		kgo.HeartbeatInterval(groupHeartbeat),
		kgo.RebalanceTimeout(groupRebalance),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250 * time.Millisecond),
		kgo.WithLogger(sessionEnds{c, m}),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			c.assigned(m, a[c.topic]...)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			c.revoked(m, r[c.topic]...)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			c.revoked(m, l[c.topic]...)
			c.clientErr(m, "partitions lost", fmt.Errorf("%w: %v", errPartitionsLost, l))
		}),
	}, opts...)...)
	if err != nil {
		c.t.Fatalf("member %d: %v", m, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
					c.clientErr(m, fmt.Sprintf("fetch %s/%d", topic, p), err)
				}
			})
			n := 0
			fs.EachRecord(func(r *kgo.Record) {
				c.consumed(r.Partition, r.Offset)
				n++
			})
			if n > 0 {
				cl.CommitOffsetsSync(ctx, cl.UncommittedOffsets(), onCommit)
			}
		}
	}()
	return func() {
		<-done
		cl.Close() // leaves the group
	}
}

// reloadConfluentMember is a confluent-kafka-go member without
// autocommit: Commit (synchronous) after every 20 messages, or when Poll
// comes back empty with something uncommitted. Commit returns the
// offsets committed, with an error per partition.
func reloadConfluentMember(ctx context.Context, c *reloadCheck, m int, logs *rdLog) func() {
	cons, err := kafka.NewConsumer(rdConfig(strings.Join(c.seeds, ","), c.clientID(m), logs, kafka.ConfigMap{
		"group.id":                      c.group,
		"partition.assignment.strategy": "range",
		"session.timeout.ms":            int(groupSessionTimeout.Milliseconds()),
		"heartbeat.interval.ms":         int(groupHeartbeat.Milliseconds()),
		"max.poll.interval.ms":          int(groupRebalance.Milliseconds()),
		"auto.offset.reset":             "earliest",
		"enable.auto.commit":            false,
		"fetch.wait.max.ms":             250,
	}))
	if err != nil {
		c.t.Fatalf("member %d: %v", m, err)
	}
	if err := cons.Subscribe(c.topic, nil); err != nil {
		cons.Close()
		c.t.Fatalf("member %d: subscribe: %v", m, err)
	}
	commit := func() {
		tps, err := cons.Commit()
		var ke kafka.Error
		if errors.As(err, &ke) && ke.Code() == kafka.ErrNoOffset {
			return // nothing new
		}
		if err != nil {
			c.clientErr(m, "commit", err)
			return
		}
		for _, tp := range tps {
			if tp.Error != nil {
				c.clientErr(m, fmt.Sprintf("commit of partition %d", tp.Partition), tp.Error)
			} else if tp.Offset >= 0 {
				c.ack(m, *tp.Topic, tp.Partition, int64(tp.Offset))
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pending := 0
		for ctx.Err() == nil {
			switch ev := cons.Poll(100).(type) {
			case *kafka.Message:
				if ev.TopicPartition.Error != nil {
					c.clientErr(m, "message", ev.TopicPartition.Error)
					break
				}
				c.consumed(ev.TopicPartition.Partition, int64(ev.TopicPartition.Offset))
				if pending++; pending >= 20 {
					commit()
					pending = 0
				}
			case kafka.Error:
				c.clientErr(m, "consumer", ev)
			case nil:
				if pending > 0 {
					commit()
					pending = 0
				}
			}
			parts, err := cons.Assignment()
			if err != nil {
				c.problem(m, "assignment: %v", err)
				continue
			}
			var ps []int32
			for _, tp := range parts {
				if *tp.Topic == c.topic {
					ps = append(ps, tp.Partition)
				}
			}
			c.setOwned(m, ps)
		}
	}()
	return func() {
		<-done
		if err := cons.Close(); err != nil { // leaves the group
			c.problem(m, "close: %v", err)
		}
	}
}

// reloadSaramaMember is a Sarama ConsumerGroup member without autocommit:
// it marks every message and commits (ConsumerGroupSession.Commit,
// synchronous) whenever its claim has no more messages buffered, or
// every 20 messages. Sarama reports no commit's outcome (its offset
// manager retries a commit the coordinator refused with the next one,
// quietly), so the member's connections are tapped (commitTap).
func reloadSaramaMember(ctx context.Context, c *reloadCheck, m int) func() {
	cfg := saramaConfig()
	cfg.ClientID = c.clientID(m)
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Session.Timeout = groupSessionTimeout
	cfg.Consumer.Group.Heartbeat.Interval = groupHeartbeat
	cfg.Consumer.Group.Rebalance.Timeout = groupRebalance
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	// Sarama's heartbeat loop ends the session (and the member rejoins:
	// a rebalance) after Metadata.Retry.Max heartbeats in a row answered
	// NOT_COORDINATOR, Metadata.Retry.Backoff apart: with saramaConfig's
	// 10 × 50 ms, half a second of it. The shard stays unloaded until
	// every member has heartbeated, up to a heartbeat interval (1 s), so
	// give it 10 × 250 ms, above that (Sarama's default is 3 × 250 ms).
	cfg.Metadata.Retry.Backoff = 250 * time.Millisecond
	cfg.Net.Proxy.Enable = true
	cfg.Net.Proxy.Dialer = tapDialer{timeout: cfg.Net.DialTimeout, onAck: func(topic string, p int32, offset int64) {
		c.ack(m, topic, p, offset)
	}}
	cg, err := sarama.NewConsumerGroup(c.seeds, c.group, cfg)
	if err != nil {
		c.t.Fatalf("member %d: %v", m, err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for err := range cg.Errors() { // closed by cg.Close
			c.clientErr(m, "consumer group", err)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := reloadSaramaHandler{c: c, m: m}
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{c.topic}, h); err != nil && ctx.Err() == nil {
				c.clientErr(m, "consume", err)
				select { // a short back-off against a tight loop of errors
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return func() {
		<-done
		if err := cg.Close(); err != nil { // leaves the group
			c.problem(m, "close: %v", err)
		}
		<-drained
	}
}

type reloadSaramaHandler struct {
	c *reloadCheck
	m int
}

// Setup starts a session, a generation of the group: what the member
// owns is its claims.
func (h reloadSaramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.c.setOwned(h.m, s.Claims()[h.c.topic])
	return nil
}

func (h reloadSaramaHandler) Cleanup(sarama.ConsumerGroupSession) error {
	h.c.setOwned(h.m, nil)
	return nil
}

func (h reloadSaramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	n := 0
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.c.consumed(msg.Partition, msg.Offset)
			s.MarkMessage(msg, "")
			if n++; n%20 == 0 || len(claim.Messages()) == 0 {
				s.Commit()
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// tapDialer dials Sarama's connections (as its Net.Proxy.Dialer) and taps
// each with a commitTap.
type tapDialer struct {
	timeout time.Duration
	onAck   func(topic string, p int32, offset int64)
}

func (d tapDialer) Dial(network, addr string) (net.Conn, error) {
	conn, err := net.DialTimeout(network, addr, d.timeout)
	if err != nil {
		return nil, err
	}
	return &commitTap{Conn: conn, onAck: d.onAck, sent: map[int32]*kmsg.OffsetCommitRequest{}}, nil
}

// commitTap is a client's connection that reads the OffsetCommit
// requests it writes and their responses, and reports every partition
// whose commit was answered without error with the offset committed.
// Everything passes through unchanged.
type commitTap struct {
	net.Conn
	onAck func(topic string, p int32, offset int64)

	mu         sync.Mutex
	wbuf, rbuf []byte
	sent       map[int32]*kmsg.OffsetCommitRequest // by correlation id
}

func (c *commitTap) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.wbuf = append(c.wbuf, p...)
	c.wbuf = eachFrame(c.wbuf, c.request)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *commitTap) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.rbuf = append(c.rbuf, p[:n]...)
		c.rbuf = eachFrame(c.rbuf, c.response)
		c.mu.Unlock()
	}
	return n, err
}

// eachFrame calls f with each whole size-prefixed frame at the start of
// buf (without its size) and returns what is left.
func eachFrame(buf []byte, f func(frame []byte)) []byte {
	for len(buf) >= 4 {
		n := int(binary.BigEndian.Uint32(buf))
		if len(buf) < 4+n {
			break
		}
		f(buf[4 : 4+n])
		buf = buf[4+n:]
	}
	return append([]byte(nil), buf...)
}

// request keeps an OffsetCommit request by its correlation id. The
// request header is v1 (key, version, correlation id, client id), v2 for
// flexible versions (then tagged fields).
func (c *commitTap) request(frame []byte) {
	r := kbin.Reader{Src: frame}
	key, version, corr := r.Int16(), r.Int16(), r.Int32()
	if key != int16(kmsg.OffsetCommit) {
		return
	}
	r.NullableString()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	if req.IsFlexible() {
		skipTags(&r)
	}
	if !r.Ok() {
		return
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return
	}
	c.sent[corr] = req
}

// response reports the acknowledged partitions of an OffsetCommit
// response. The response header is the correlation id, then tagged
// fields for flexible versions.
func (c *commitTap) response(frame []byte) {
	r := kbin.Reader{Src: frame}
	corr := r.Int32()
	req, ok := c.sent[corr]
	if !ok {
		return
	}
	delete(c.sent, corr)
	if req.IsFlexible() {
		skipTags(&r)
	}
	if !r.Ok() {
		return
	}
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.Version = req.Version
	if err := resp.ReadFrom(r.Src); err != nil {
		return
	}
	offsets := map[string]map[int32]int64{}
	for _, t := range req.Topics {
		offsets[t.Topic] = map[int32]int64{}
		for _, p := range t.Partitions {
			offsets[t.Topic][p.Partition] = p.Offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if o, ok := offsets[t.Topic][p.Partition]; ok && p.ErrorCode == 0 {
				c.onAck(t.Topic, p.Partition, o)
			}
		}
	}
}

// skipTags reads past a tagged-field section.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0; n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}
