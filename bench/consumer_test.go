package bench

// KIP-848 consumer group benchmarks, Cohort only (kfake's ConsumerGroupHeartbeat
// is not what these measure): a scale-out by one member compared with the
// classic protocol in the same run, a 1,000-member join with the time the
// assignor takes per target computation, and heartbeats/s and heap per member
// at 10,000 members.
//
// The members are raw kmsg clients, one connection each, that behave as
// franz-go and librdkafka do: join with epoch 0, heartbeat at the interval
// the coordinator returns, and on a new assignment give up what they lost and
// take what they got, then heartbeat at once with what they own.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/loadgen"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/internal/memtest"
)

// timedAssignor is the uniform assignor, timed: the coordinator calls it
// under its own name (coordinator.Config.CustomAssignors), so the time is
// measured around exactly the call the shard loop makes.
type timedAssignor struct {
	assign.Uniform
	mu    sync.Mutex
	times []time.Duration
	sizes []int // members per computation
}

func (t *timedAssignor) Assign(g assign.Group) assign.Assignment {
	start := time.Now()
	out := t.Uniform.Assign(g)
	d := time.Since(start)
	t.mu.Lock()
	t.times = append(t.times, d)
	t.sizes = append(t.sizes, len(g.Members))
	t.mu.Unlock()
	return out
}

// since returns the computations from the i-th on.
func (t *timedAssignor) since(i int) ([]time.Duration, []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.times[i:]), slices.Clone(t.sizes[i:])
}

func (t *timedAssignor) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.times)
}

func startConsumerNode(b *testing.B, cfg coordinator.Config) (string, *timedAssignor) {
	ta := &timedAssignor{}
	cfg.CustomAssignors = []assign.Assignor{ta}
	cfg.InitialRebalanceDelay, cfg.InitialRebalanceQuiet = quiet50ms.InitialRebalanceDelay, quiet50ms.InitialRebalanceQuiet
	return startedNode(b, node.Config{Groups: cfg}), ta
}

// ---------------------------------------------------------------------------
// Ownership, as the members see it

// ownTracker follows which member holds each partition of one topic, from
// the members' side: a member releases partitions before it reports them
// gone, and acquires them when an answer gives them. Two members holding
// one partition is an error.
type ownTracker struct {
	mu     sync.Mutex
	owner  []int       // partition → member index, -1: none
	freed  []time.Time // when an unowned partition lost its owner
	err    error
	marked bool
	base   []int // owners at mark
	moved  int   // acquisitions since mark by a member that did not hold the partition at mark
	worst  time.Duration
	// unowned sums, over partitions freed since mark, how long each
	// went without an owner.
	unowned time.Duration
	last    time.Time // last acquisition since mark
}

func newOwnTracker(partitions int32) *ownTracker {
	t := &ownTracker{owner: make([]int, partitions), freed: make([]time.Time, partitions)}
	for i := range t.owner {
		t.owner[i] = -1
	}
	return t
}

func (t *ownTracker) release(m int, ps []int32) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range ps {
		if t.owner[p] == m {
			t.owner[p] = -1
			t.freed[p] = now
		}
	}
}

func (t *ownTracker) acquire(m int, ps []int32) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range ps {
		if o := t.owner[p]; o >= 0 && o != m && t.err == nil {
			t.err = fmt.Errorf("partition %d given to member %d while member %d holds it", p, m, o)
		}
		t.owner[p] = m
		if t.marked {
			if t.base[p] != m {
				t.moved++
			}
			if !t.freed[p].IsZero() {
				t.worst = max(t.worst, now.Sub(t.freed[p]))
				t.unowned += now.Sub(t.freed[p])
			}
			t.last = now
		}
		t.freed[p] = time.Time{}
	}
}

// mark starts a measurement: what moves and how long anything is unowned
// from now on.
func (t *ownTracker) mark() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.marked, t.base, t.moved, t.worst, t.unowned, t.last = true, slices.Clone(t.owner), 0, 0, 0, time.Time{}
}

// held returns how many partitions are held, and by how many members.
func (t *ownTracker) held() (partitions, members int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[int]bool{}
	for _, o := range t.owner {
		if o >= 0 {
			partitions++
			seen[o] = true
		}
	}
	return partitions, len(seen), t.err
}

// ---------------------------------------------------------------------------
// A consumer-protocol member

type cgMember struct {
	i  int
	c  *loadgen.Conn
	tr *ownTracker
	*loadgen.ConsumerMember
}

func newCGMember(i int, c *loadgen.Conn, group, topic string, tr *ownTracker) *cgMember {
	id := fmt.Sprintf("%s-m%04d-%08x", group, i, rand.Uint32())
	return &cgMember{i: i, c: c, tr: tr, ConsumerMember: loadgen.NewConsumerMember(group, id, topic)}
}

// beat sends one heartbeat and applies its answer (loadgen's member), and
// tells the tracker what the member lost and got; it reports whether the
// member's partitions changed (the member then heartbeats again at once).
func (m *cgMember) beat() (bool, error) {
	prev := m.Owned()
	changed, err := m.Beat(m.c)
	if err != nil || !changed || m.tr == nil {
		return changed, err
	}
	next := m.Owned()
	var lost, got []int32
	for _, p := range prev {
		if _, ok := slices.BinarySearch(next, p); !ok {
			lost = append(lost, p)
		}
	}
	for _, p := range next {
		if _, ok := slices.BinarySearch(prev, p); !ok {
			got = append(got, p)
		}
	}
	m.tr.release(m.i, lost)
	m.tr.acquire(m.i, got)
	return true, nil
}

// run heartbeats until stop is closed, then leaves the group. Until fast
// closes (never, if it is nil) it heartbeats every 50 ms, as set-up wants;
// then at the coordinator's interval, from a random phase.
func (m *cgMember) run(stop, fast <-chan struct{}) error {
	wait := time.Duration(0)
	for {
		if m.Epoch != 0 {
			t := time.NewTimer(wait)
			select {
			case <-stop:
				t.Stop()
				return m.leave()
			case <-fast:
				t.Stop()
				fast = nil
				wait = time.Duration(rand.Int64N(int64(m.Interval) + 1))
				continue
			case <-t.C:
			}
		}
		changed, err := m.beat()
		if err != nil {
			return err
		}
		switch {
		case changed:
			wait = 0
		case fast != nil:
			wait = 50 * time.Millisecond
		default:
			wait = m.Interval
		}
	}
}

func (m *cgMember) leave() error {
	if m.Epoch <= 0 {
		return nil
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = m.Group, m.ID, -1, -1
	_, err := loadgen.Do[*kmsg.ConsumerGroupHeartbeatResponse](m.c, loadgen.ConsumerHeartbeatVersion, req)
	return err
}

// waitStable polls ConsumerGroupDescribe every 10 ms until the group is
// Stable with n members at an epoch of at least minEpoch, and returns
// when it first saw that.
func waitStable(ctx context.Context, c *loadgen.Conn, group string, n int, minEpoch int32, errc <-chan error) (time.Time, int32, error) {
	for {
		d, err := loadgen.DescribeConsumerGroup(c, group)
		if err != nil {
			return time.Time{}, 0, err
		}
		if d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == n && d.Epoch >= minEpoch {
			return time.Now(), d.Epoch, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, 0, fmt.Errorf("group %s not Stable with %d members at epoch >= %d: last state %s, %d members, epoch %d", group, n, minEpoch, d.State, len(d.Members), d.Epoch)
		case err := <-errc:
			return time.Time{}, 0, err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ---------------------------------------------------------------------------
// A classic-protocol member with the eager range protocol

type classicMember struct {
	i     int
	c     *loadgen.Conn
	group string
	topic string
	parts int32
	tr    *ownTracker
	owned []int32
	// every is the heartbeat interval once set-up is over (fast: 50 ms).
	every time.Duration
}

func (m *classicMember) run(stop <-chan struct{}, fast <-chan struct{}) error {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = []string{m.topic}
	metadata := meta.AppendTo(nil)
	memberID := ""
	for {
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.MemberID, join.ProtocolType = m.group, memberID, "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 45000, 60000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: metadata}}
		jr, err := loadgen.Do[*kmsg.JoinGroupResponse](m.c, loadgen.JoinVersion, join)
		if err != nil {
			return err
		}
		switch jr.ErrorCode {
		case 0:
		case kerr.MemberIDRequired.Code:
			memberID = jr.MemberID
			continue
		default:
			return fmt.Errorf("JoinGroup: %w", kerr.ErrorForCode(jr.ErrorCode))
		}
		memberID = jr.MemberID
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.Generation, sync.MemberID = m.group, jr.Generation, memberID
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), jr.Protocol
		if jr.LeaderID == memberID {
			if sync.GroupAssignment, err = loadgen.RangeAssign(m.topic, m.parts, jr.Members); err != nil {
				return err
			}
		}
		sr, err := loadgen.Do[*kmsg.SyncGroupResponse](m.c, loadgen.SyncVersion, sync)
		if err != nil {
			return err
		}
		if sr.ErrorCode == kerr.RebalanceInProgress.Code {
			continue
		}
		if sr.ErrorCode != 0 {
			return fmt.Errorf("SyncGroup: %w", kerr.ErrorForCode(sr.ErrorCode))
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(sr.MemberAssignment); err != nil {
			return err
		}
		m.owned = nil
		for _, t := range a.Topics {
			m.owned = append(m.owned, t.Partitions...)
		}
		m.tr.acquire(m.i, m.owned)
		// Heartbeat until told to rejoin or stopped.
		wait := m.every
		if fast != nil {
			wait = 50 * time.Millisecond
		}
	beating:
		for {
			t := time.NewTimer(wait)
			select {
			case <-stop:
				t.Stop()
				leave := kmsg.NewPtrLeaveGroupRequest()
				leave.Group = m.group
				leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: memberID}}
				_, err := loadgen.Do[*kmsg.LeaveGroupResponse](m.c, loadgen.LeaveVersion, leave)
				return err
			case <-fast:
				t.Stop()
				fast = nil
				wait = time.Duration(rand.Int64N(int64(m.every) + 1))
				continue
			case <-t.C:
			}
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.Generation, hb.MemberID = m.group, jr.Generation, memberID
			hr, err := loadgen.Do[*kmsg.HeartbeatResponse](m.c, loadgen.HeartbeatVersion, hb)
			if err != nil {
				return err
			}
			switch hr.ErrorCode {
			case 0:
				wait = m.every
				if fast != nil {
					wait = 50 * time.Millisecond
				}
			case kerr.RebalanceInProgress.Code:
				// Eager: give up everything, then rejoin.
				m.tr.release(m.i, m.owned)
				m.owned = nil
				break beating
			default:
				return fmt.Errorf("Heartbeat: %w", kerr.ErrorForCode(hr.ErrorCode))
			}
		}
	}
}

// ---------------------------------------------------------------------------
// BenchmarkConsumerScaleOut

const (
	scaleTopic      = "scaleout"
	scalePartitions = 1000
	scaleMembers    = 100
	// classicHeartbeat is Kafka's default heartbeat.interval.ms; the
	// consumer protocol's (5 s) comes from the coordinator.
	classicHeartbeat = 3 * time.Second
	// steadyState is how long the settled group runs before the newcomer
	// arrives (untimed).
	steadyState = 2 * time.Second
)

// BenchmarkConsumerScaleOut: 100 members own a 1,000-partition topic
// (joined and settled before the timer, heartbeating every 50 ms during
// set-up, then at the protocol's interval from a random phase, for 2 s of
// steady state); then a 101st member joins. One op is one scale-out, each in a new group.
//
// consumer (KIP-848, Kafka's defaults: heartbeat interval 5 s, assignment
// interval 1 s, uniform assignor): timed until ConsumerGroupDescribe,
// polled every 10 ms, says Stable with 101 members at a newer epoch.
// classic (eager range, heartbeat every 3 s, Kafka's default): timed until
// every partition is held again and the new member holds its share.
//
// Metrics: ms/scaleout (the time above), all-held-ms (until every partition is
// held again and the new member has its share), moved (partitions held by
// a member that did not hold them before), max-unowned-ms (the longest any
// partition went without an owner), unowned-partition-s (summed over the
// partitions, how long each went without an owner: the consumption lost).
func BenchmarkConsumerScaleOut(b *testing.B) {
	b.Run("consumer", func(b *testing.B) {
		addr, _ := startConsumerNode(b, coordinator.Config{})
		createTopics(benchContext(b), b, addr, scalePartitions, scaleTopic)
		benchScaleOut(b, addr, true)
	})
	b.Run("classic", func(b *testing.B) {
		addr, _ := startConsumerNode(b, coordinator.Config{})
		createTopics(benchContext(b), b, addr, scalePartitions, scaleTopic)
		benchScaleOut(b, addr, false)
	})
}

func benchScaleOut(b *testing.B, addr string, consumer bool) {
	ctl := dialAll(b, addr, 1, "bench-scaleout")[0]
	defer ctl.Close()
	var total, held time.Duration
	moved, worst, unowned := 0, time.Duration(0), time.Duration(0)
	iter := 0
	for b.Loop() {
		b.StopTimer()
		iter++
		group := fmt.Sprintf("scaleout-%d-%d", iter, rand.Uint32())
		tr := newOwnTracker(scalePartitions)
		conns := dialAll(b, addr, scaleMembers+1, "bench-scaleout")
		stop, fast := make(chan struct{}), make(chan struct{})
		errc := make(chan error, scaleMembers+1)
		var wg sync.WaitGroup
		start := func(i int, setUp bool) {
			f := fast
			if !setUp {
				f = nil
			}
			wg.Go(func() {
				var err error
				if consumer {
					m := newCGMember(i, conns[i], group, scaleTopic, tr)
					err = m.run(stop, f)
				} else {
					m := &classicMember{i: i, c: conns[i], group: group, topic: scaleTopic, parts: scalePartitions, tr: tr, every: classicHeartbeat}
					err = m.run(stop, f)
				}
				if err != nil {
					errc <- fmt.Errorf("member %d: %w", i, err)
				}
			})
		}
		for i := range scaleMembers {
			start(i, true)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := waitHeld(ctx, tr, scaleMembers, errc); err != nil {
			b.Fatalf("set-up: %v", err)
		}
		var epoch int32
		if consumer {
			var err error
			if _, epoch, err = waitStable(ctx, ctl, group, scaleMembers, 1, errc); err != nil {
				b.Fatalf("set-up: %v", err)
			}
		}
		close(fast) // members switch to their real interval, from a random phase
		// A group in steady state: the newcomer arrives more than the
		// assignment interval (1 s) after the last target computation
		// of the set-up, as in a group that has been running.
		time.Sleep(steadyState)
		tr.mark()
		b.StartTimer()
		t0 := time.Now()
		start(scaleMembers, false)
		var done time.Time
		var err error
		if consumer {
			done, _, err = waitStable(ctx, ctl, group, scaleMembers+1, epoch+1, errc)
		}
		if err == nil {
			err = waitHeld(ctx, tr, scaleMembers+1, errc)
		}
		b.StopTimer()
		if err != nil {
			b.Fatalf("scale-out: %v", err)
		}
		tr.mu.Lock()
		allHeld := tr.last.Sub(t0)
		moved += tr.moved
		worst = max(worst, tr.worst)
		unowned += tr.unowned
		tr.mu.Unlock()
		if !consumer {
			done = t0.Add(allHeld)
		}
		total += done.Sub(t0)
		held += allHeld
		select {
		case err := <-errc:
			b.Fatalf("during the scale-out: %v", err)
		default:
		}
		close(stop)
		stopMembers(&wg, conns)
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(ms(total)/float64(iter), "ms/scaleout")
	b.ReportMetric(ms(held)/float64(iter), "all-held-ms")
	b.ReportMetric(float64(moved)/float64(iter), "moved")
	b.ReportMetric(ms(worst), "max-unowned-ms")
	b.ReportMetric(unowned.Seconds()/float64(iter), "unowned-partition-s")
}

// stopMembers gives stopped members 30 s to leave (a classic member may
// be in a JoinGroup the coordinator holds), then closes their connections,
// which ends whatever they are waiting for.
func stopMembers(wg *sync.WaitGroup, conns []*loadgen.Conn) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	loadgen.CloseAll(conns)
	<-done
}

// waitHeld waits until every partition is held and by n members.
func waitHeld(ctx context.Context, tr *ownTracker, n int, errc <-chan error) error {
	for {
		p, m, err := tr.held()
		if err != nil {
			return err
		}
		if p == len(tr.owner) && m == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d partitions held, by %d members (want %d)", p, len(tr.owner), m, n)
		case err := <-errc:
			return err
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ---------------------------------------------------------------------------
// BenchmarkConsumerJoin

const (
	joinMembers    = 1000
	joinTopic      = "join"
	joinPartitions = 10000
)

// BenchmarkConsumerJoin: 1,000 members (one connection each, dialled
// before the timer) join one new consumer group at once, subscribed to a
// 10,000-partition topic, with Kafka's defaults (heartbeat interval 5 s,
// assignment interval 1 s, uniform assignor). Timed until
// ConsumerGroupDescribe says Stable with 1,000 members.
//
// Metrics: ms/join; recomputations (target assignments computed per op);
// assignor-ms and assignor-max-ms (mean and largest time of one call of
// the assignor, measured around the call the shard loop makes) and the
// members in the largest.
func BenchmarkConsumerJoin(b *testing.B) {
	addr, ta := startConsumerNode(b, coordinator.Config{})
	createTopics(benchContext(b), b, addr, joinPartitions, joinTopic)
	ctl := dialAll(b, addr, 1, "bench-join")[0]
	defer ctl.Close()
	var total time.Duration
	var times []time.Duration
	iter, biggest := 0, 0
	for b.Loop() {
		b.StopTimer()
		iter++
		group := fmt.Sprintf("join-%d-%d", iter, rand.Uint32())
		conns := dialAll(b, addr, joinMembers, "bench-join")
		stop := make(chan struct{})
		errc := make(chan error, joinMembers)
		before := ta.count()
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		b.StartTimer()
		t0 := time.Now()
		for i := range joinMembers {
			wg.Go(func() {
				m := newCGMember(i, conns[i], group, joinTopic, nil)
				if err := m.run(stop, nil); err != nil {
					errc <- fmt.Errorf("member %d: %w", i, err)
				}
			})
		}
		done, _, err := waitStable(ctx, ctl, group, joinMembers, 1, errc)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		total += done.Sub(t0)
		ts, sizes := ta.since(before)
		times = append(times, ts...)
		for _, s := range sizes {
			biggest = max(biggest, s)
		}
		close(stop)
		stopMembers(&wg, conns)
		cancel()
		b.StartTimer()
	}
	var sum, worst time.Duration
	for _, t := range times {
		sum += t
		worst = max(worst, t)
	}
	b.ReportMetric(ms(total)/float64(iter), "ms/join")
	b.ReportMetric(float64(len(times))/float64(iter), "recomputations")
	if len(times) > 0 {
		b.ReportMetric(ms(sum)/float64(len(times)), "assignor-ms")
		b.ReportMetric(ms(worst), "assignor-max-ms")
		b.ReportMetric(float64(biggest), "largest-members")
	}
}

// ---------------------------------------------------------------------------
// BenchmarkConsumerHeartbeat

// BenchmarkConsumerHeartbeat times heartbeats of 10,000 settled
// consumer-protocol members: 100 groups of 100 members on a 100-partition
// topic join and settle in set-up (a few connections per group, members
// heartbeating in rounds until their group is Stable; session timeout 5
// min so that none expires meanwhile), then 250 connections each
// heartbeat for 40 members with up to 8 ConsumerGroupHeartbeat v1
// requests in flight: member id and epoch, nothing else (what clients
// send when nothing changed). One op is one heartbeat from every member;
// every answer must be NONE at the same epoch with no assignment.
//
// Metrics: heartbeats/s, and the Go heap per member (after GC, after the
// joins less before them, less the member ids this benchmark keeps, over
// 10,000), in this process, which holds both the node and the clients.
func BenchmarkConsumerHeartbeat(b *testing.B) {
	addr, _ := startConsumerNode(b, coordinator.Config{ConsumerSessionTimeout: 5 * time.Minute})
	createTopics(benchContext(b), b, addr, hbPartitions, hbTopic)
	before := memtest.HeapAlloc()
	t0 := time.Now()
	addrs := slices.Repeat([]string{addr}, hbGroups)
	members, err := loadgen.JoinConsumers(addrs, "bench-cg-heartbeat", hbTopic, hbMembersPerGroup, hbJoinParallel,
		func(g int) string { return fmt.Sprintf("cg-heartbeat-%d", g) }, time.Now().Add(2*time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d members settled in %d groups in %v (untimed set-up)", len(members), hbGroups, time.Since(t0).Round(time.Millisecond))
	// The set-up connections are closed (a member keeping its own would
	// count its 16 KiB read buffer as the server's); wait until the
	// server has let them go.
	connsClosed(b, addr)
	after := memtest.HeapAlloc()
	writeHeapProfile(b)
	// What this benchmark itself keeps per member.
	idBytes := 0
	for _, m := range members {
		idBytes += int(unsafe.Sizeof(*m)) + len(m.ID) + cap(m.Owned())*4
	}
	perMember := (float64(after) - float64(before) - float64(idBytes)) / float64(len(members))

	heartbeatRounds(b, addr, members, func(c *loadgen.Conn, ms []*loadgen.ConsumerMember, depth int) error {
		return loadgen.ConsumerHeartbeats(c, ms, depth, nil)
	})
	b.ReportMetric(perMember, "heap-B/member")
}
