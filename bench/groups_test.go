package bench

// Group coordinator benchmarks: classic-protocol rebalances, simple offset
// commits, heartbeats, and (Cohort only) heap per member and per offset and
// the time to load a node's groups at start-up.
//
// They speak the Kafka protocol through a small raw client of their own
// (4-byte size, request header v1/v2, kmsg bodies, correlation ids), one
// TCP connection per group member, so that what is timed is the broker and
// the wire, with no client library's retries, backoffs or heartbeat threads
// in the way.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The protocol versions the raw members speak (JoinGroup v9 and
// SyncGroup v5 are the newest; all are flexible versions).
const (
	joinVersion      = 9
	syncVersion      = 5
	heartbeatVersion = 4
	leaveVersion     = 5
	commitVersion    = 8
	fetchVersion     = 8
)

// rawIOTimeout bounds every read and write of the raw client, so that a
// broker that never answers fails the benchmark instead of hanging it. It
// is above the 60 s rebalance timeout, the longest a JoinGroup may be held.
const rawIOTimeout = 90 * time.Second

// ---------------------------------------------------------------------------
// Targets

// groupTarget is a broker for the group benchmarks; start returns its
// bootstrap address and registers its shutdown with b.Cleanup.
type groupTarget struct {
	name   string
	cohort bool
	start  func(b *testing.B) string
	// routed: a cluster, where each group's connection must go to its
	// coordinator (FindCoordinator), not to the bootstrap address.
	routed bool
}

func cohortTarget(name string, cfg coordinator.Config) groupTarget {
	return groupTarget{name: name, cohort: true, start: func(b *testing.B) string {
		return testkit.StartNode(b, node.Config{Groups: cfg}).KafkaAddr()
	}}
}

// kfakeTarget is a one-broker kfake cluster, in memory or (persist) with a
// data directory, optionally fsyncing every write. Its group coordinator
// has no initial rebalance delay: a member that joins an Empty group
// completes a generation at once, and a later arrival starts another.
func kfakeTarget(name string, persist, fsync bool) groupTarget {
	return groupTarget{name: name, start: func(b *testing.B) string {
		opts := []kfake.Opt{kfake.NumBrokers(1)}
		if persist {
			opts = append(opts, kfake.DataDir(b.TempDir()))
		}
		if fsync {
			opts = append(opts, kfake.SyncWrites())
		}
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			b.Fatalf("kfake: %v", err)
		}
		b.Cleanup(c.Close)
		return c.ListenAddrs()[0]
	}}
}

var (
	// quiet50ms: the initial-rebalance barrier closes at the first 50 ms
	// step with no newcomer in the step before (Kafka's extension rule
	// with 50 ms steps).
	quiet50ms = coordinator.Config{InitialRebalanceDelay: 3 * time.Second, InitialRebalanceQuiet: 50 * time.Millisecond}
	// kafkaDefaults is Kafka's group.initial.rebalance.delay.ms=3000 with
	// no quiet window.
	kafkaDefaults = coordinator.Config{}
)

// createTopics creates each topic with the given number of partitions.
func createTopics(ctx context.Context, b *testing.B, addr string, partitions int32, names ...string) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatalf("new client: %v", err)
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, 1, nil, names...)
	if err != nil {
		b.Fatalf("create topics: %v", err)
	}
	for _, r := range resps.Sorted() {
		if r.Err != nil {
			b.Fatalf("create topic %s: %v", r.Topic, r.Err)
		}
	}
}

// ---------------------------------------------------------------------------
// Raw client

type rawConn struct {
	nc    net.Conn
	br    *bufio.Reader
	f     *kmsg.RequestFormatter
	corr  int32
	frame []byte // the request being encoded
	wbuf  []byte // encoded requests not yet written
}

func dialRaw(addr, clientID string) (*rawConn, error) {
	nc, err := net.DialTimeout("tcp", addr, rawIOTimeout)
	if err != nil {
		return nil, err
	}
	return &rawConn{
		nc: nc,
		br: bufio.NewReaderSize(nc, 16<<10),
		f:  kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
	}, nil
}

func (c *rawConn) Close() error { return c.nc.Close() }

// appendReq adds req, framed with the next correlation id, to the write
// buffer and returns that id.
func (c *rawConn) appendReq(req kmsg.Request) int32 {
	c.corr++
	// AppendRequest writes the frame's size at the start of the slice it
	// is given, so each frame is encoded on its own before it is queued.
	c.frame = c.f.AppendRequest(c.frame[:0], req, c.corr)
	c.wbuf = append(c.wbuf, c.frame...)
	return c.corr
}

// flush writes the buffered requests.
func (c *rawConn) flush() error {
	c.nc.SetWriteDeadline(time.Now().Add(rawIOTimeout))
	_, err := c.nc.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	return err
}

// recv reads the next response frame, which must answer req (sent with
// correlation id corr), and decodes it at req's version.
func (c *rawConn) recv(req kmsg.Request, corr int32) (kmsg.Response, error) {
	name := kmsg.NameForKey(req.Key())
	c.nc.SetReadDeadline(time.Now().Add(rawIOTimeout))
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, fmt.Errorf("%s v%d: reading the response: %w", name, req.GetVersion(), err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("%s v%d: response size %d", name, req.GetVersion(), n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return nil, fmt.Errorf("%s v%d: reading the response: %w", name, req.GetVersion(), err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, fmt.Errorf("%s v%d: response correlation id %d, want %d", name, req.GetVersion(), got, corr)
	}
	body := buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// A flexible response header has a tag section (ApiVersions' never).
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			return nil, fmt.Errorf("%s v%d: bad response header tag section", name, req.GetVersion())
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s v%d: response does not decode: %w", name, req.GetVersion(), err)
	}
	return resp, nil
}

// do sends req at version v and reads its response.
func do[R kmsg.Response](c *rawConn, v int16, req kmsg.Request) (R, error) {
	var zero R
	req.SetVersion(v)
	corr := c.appendReq(req)
	if err := c.flush(); err != nil {
		return zero, fmt.Errorf("%s: write: %w", kmsg.NameForKey(req.Key()), err)
	}
	resp, err := c.recv(req, corr)
	if err != nil {
		return zero, err
	}
	r, ok := resp.(R)
	if !ok {
		return zero, fmt.Errorf("%s: unexpected response type %T", kmsg.NameForKey(req.Key()), resp)
	}
	return r, nil
}

// dialAll opens n raw connections.
func dialAll(b *testing.B, addr string, n int, clientID string) []*rawConn {
	b.Helper()
	conns := make([]*rawConn, n)
	for i := range conns {
		c, err := dialRaw(addr, clientID)
		if err != nil {
			closeAll(conns)
			b.Fatalf("dial %s (connection %d of %d): %v", addr, i+1, n, err)
		}
		conns[i] = c
	}
	return conns
}

func closeAll(conns []*rawConn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// codeErr is a broker error code as an error.
func codeErr(code int16) error { return kerr.ErrorForCode(code) }

// ---------------------------------------------------------------------------
// Rebalancing members

// rebalanceParams describes one group's members.
type rebalanceParams struct {
	group          string
	topic          string
	partitions     int32
	session        time.Duration
	rebalance      time.Duration
	heartbeatEvery time.Duration
	// deadline bounds the whole rebalance; past it the members' connections
	// are closed and the run fails.
	deadline time.Duration
}

// Each member bounds its JoinGroups; one that needs more is reported.
const maxJoinsPerMember = 1000

// memberRebalanceHeartbeat is how often a member that has its assignment
// heartbeats, which is how it learns that a later arrival started another
// generation: Kafka's default heartbeat.interval.ms.
const memberRebalanceHeartbeat = 3 * time.Second

// rebalanceRun drives n raw members (one connection each) into one group
// and tells when every member has its SyncGroup answer for the same
// generation.
type rebalanceRun struct {
	p        rebalanceParams
	conns    []*rawConn
	metadata []byte // the consumer-protocol subscription, the same for all
	done     chan struct{}
	joins    atomic.Int64

	mu         sync.Mutex
	synced     []int32 // generation of member i's SyncGroup answer, -1 if none or stale
	assigned   []int   // partitions member i got in that answer
	memberIDs  []string
	counts     map[int32]int
	finalGen   int32
	finishedAt time.Time
	maxGen     int32
}

func newRebalanceRun(p rebalanceParams, conns []*rawConn) *rebalanceRun {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = []string{p.topic}
	r := &rebalanceRun{
		p:         p,
		conns:     conns,
		metadata:  meta.AppendTo(nil),
		done:      make(chan struct{}),
		synced:    make([]int32, len(conns)),
		assigned:  make([]int, len(conns)),
		memberIDs: make([]string, len(conns)),
		counts:    make(map[int32]int),
	}
	for i := range r.synced {
		r.synced[i] = -1
	}
	return r
}

func (r *rebalanceRun) markSynced(i int, memberID string, gen int32, partitions int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.synced[i]; old >= 0 {
		r.counts[old]--
	}
	r.synced[i] = gen
	r.assigned[i] = partitions
	r.memberIDs[i] = memberID
	r.counts[gen]++
	if r.counts[gen] == len(r.conns) && r.finishedAt.IsZero() {
		r.finalGen = gen
		r.finishedAt = time.Now()
		close(r.done)
	}
}

// markStale records that member i is about to rejoin: its last answer no
// longer counts.
func (r *rebalanceRun) markStale(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.synced[i]; old >= 0 {
		r.counts[old]--
	}
	r.synced[i] = -1
}

func (r *rebalanceRun) sawGeneration(gen int32) {
	r.mu.Lock()
	r.maxGen = max(r.maxGen, gen)
	r.mu.Unlock()
}

// status describes where the members are, for a failure message.
func (r *rebalanceRun) status() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("highest generation seen %d, members synced per generation %v (of %d), %d JoinGroups sent",
		r.maxGen, r.counts, len(r.conns), r.joins.Load())
}

// run starts every member at once and waits until all have their
// assignment for one generation. It returns how long that took.
func (r *rebalanceRun) run() (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, len(r.conns))
	start := make(chan struct{})
	for i := range r.conns {
		wg.Go(func() {
			<-start
			if err := r.member(i); err != nil {
				errs <- fmt.Errorf("member %d: %w", i, err)
			}
		})
	}
	began := time.Now()
	close(start)
	timer := time.NewTimer(r.p.deadline)
	defer timer.Stop()
	var err error
	select {
	case <-r.done:
	case err = <-errs:
	case <-timer.C:
		err = fmt.Errorf("no common generation after %v", r.p.deadline)
	}
	if err != nil {
		err = fmt.Errorf("group %s: %w; %s", r.p.group, err, r.status())
		closeAll(r.conns) // unblocks every member
	}
	wg.Wait()
	if err != nil {
		return 0, err
	}
	// Every member's answer is for the final generation; together they
	// must hold the whole topic.
	total := 0
	for _, n := range r.assigned {
		total += n
	}
	if total != int(r.p.partitions) {
		return 0, fmt.Errorf("group %s: members were assigned %d partitions in total, want %d", r.p.group, total, r.p.partitions)
	}
	return r.finishedAt.Sub(began), nil
}

// member is one consumer: JoinGroup (rejoining on MEMBER_ID_REQUIRED and on
// the errors that mean "join again"), the leader's range assignment,
// SyncGroup, then heartbeats until every member is done or one of them
// tells it to rejoin.
func (r *rebalanceRun) member(i int) error {
	c := r.conns[i]
	memberID := ""
	for joins := 0; ; joins++ {
		if joins == maxJoinsPerMember {
			return fmt.Errorf("still no assignment after %d JoinGroups", joins)
		}
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group = r.p.group
		join.SessionTimeoutMillis = int32(r.p.session / time.Millisecond)
		join.RebalanceTimeoutMillis = int32(r.p.rebalance / time.Millisecond)
		join.MemberID = memberID
		join.ProtocolType = "consumer"
		proto := kmsg.NewJoinGroupRequestProtocol()
		proto.Name = "range"
		proto.Metadata = r.metadata
		join.Protocols = []kmsg.JoinGroupRequestProtocol{proto}
		r.joins.Add(1)
		jr, err := do[*kmsg.JoinGroupResponse](c, joinVersion, join)
		if err != nil {
			return err
		}
		switch jr.ErrorCode {
		case 0:
		case kerr.MemberIDRequired.Code:
			memberID = jr.MemberID
			continue
		case kerr.UnknownMemberID.Code:
			memberID = ""
			continue
		case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
			continue
		default:
			return fmt.Errorf("JoinGroup: %w", codeErr(jr.ErrorCode))
		}
		memberID = jr.MemberID
		gen := jr.Generation
		r.sawGeneration(gen)

		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group = r.p.group
		sync.Generation = gen
		sync.MemberID = memberID
		sync.ProtocolType = kmsg.StringPtr("consumer")
		sync.Protocol = jr.Protocol
		if jr.LeaderID == memberID {
			if sync.GroupAssignment, err = rangeAssign(r.p.topic, r.p.partitions, jr.Members); err != nil {
				return err
			}
		}
		sr, err := do[*kmsg.SyncGroupResponse](c, syncVersion, sync)
		if err != nil {
			return err
		}
		switch sr.ErrorCode {
		case 0:
		case kerr.UnknownMemberID.Code:
			memberID = ""
			continue
		case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
			continue
		default:
			return fmt.Errorf("SyncGroup: %w", codeErr(sr.ErrorCode))
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(sr.MemberAssignment); err != nil {
			return fmt.Errorf("SyncGroup: assignment does not decode: %w", err)
		}
		n := 0
		for _, t := range a.Topics {
			n += len(t.Partitions)
		}
		r.markSynced(i, memberID, gen, n)

		rejoin, err := r.heartbeatUntilDone(c, memberID, gen)
		if err != nil {
			return err
		}
		if rejoin == stayed {
			return nil
		}
		r.markStale(i)
		if rejoin == rejoinAnew {
			memberID = ""
		}
	}
}

const (
	stayed     = 0
	rejoinSame = 1 // rejoin with this member id
	rejoinAnew = 2 // the broker forgot the member: rejoin without an id
)

// heartbeatUntilDone heartbeats every heartbeatEvery until the run is done
// (stayed) or the broker says a new generation is forming.
func (r *rebalanceRun) heartbeatUntilDone(c *rawConn, memberID string, gen int32) (int, error) {
	t := time.NewTimer(r.p.heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return stayed, nil
		case <-t.C:
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group = r.p.group
		hb.Generation = gen
		hb.MemberID = memberID
		hr, err := do[*kmsg.HeartbeatResponse](c, heartbeatVersion, hb)
		if err != nil {
			return 0, err
		}
		switch hr.ErrorCode {
		case 0:
		case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
			return rejoinSame, nil
		case kerr.UnknownMemberID.Code:
			return rejoinAnew, nil
		default:
			return 0, fmt.Errorf("Heartbeat: %w", codeErr(hr.ErrorCode))
		}
		t.Reset(r.p.heartbeatEvery)
	}
}

// rangeAssign is Kafka's RangeAssignor for one topic: members sorted by
// id, each gets a contiguous run of partitions, the first
// partitions%members one more.
func rangeAssign(topic string, partitions int32, members []kmsg.JoinGroupResponseMember) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	var ids []string
	for _, m := range members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			return nil, fmt.Errorf("member %s: subscription does not decode: %w", m.MemberID, err)
		}
		if slices.Contains(meta.Topics, topic) {
			ids = append(ids, m.MemberID)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("leader got %d members, none subscribed to %s", len(members), topic)
	}
	sort.Strings(ids)
	per, extra := int(partitions)/len(ids), int(partitions)%len(ids)
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(ids))
	next := int32(0)
	for i, id := range ids {
		n := per
		if i < extra {
			n++
		}
		a := kmsg.NewConsumerMemberAssignment()
		a.Version = 1
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic = topic
		for range n {
			at.Partitions = append(at.Partitions, next)
			next++
		}
		a.Topics = []kmsg.ConsumerMemberAssignmentTopic{at}
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID = id
		ga.MemberAssignment = a.AppendTo(nil)
		out = append(out, ga)
	}
	return out, nil
}

// leaveAll makes every member of a finished run leave in one batched
// LeaveGroup, so that the group does not linger until its sessions expire.
// It returns the broker's error, if any; the benchmarks only log it.
func (r *rebalanceRun) leaveAll() error {
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = r.p.group
	for _, id := range r.memberIDs {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		leave.Members = append(leave.Members, m)
	}
	resp, err := do[*kmsg.LeaveGroupResponse](r.conns[0], leaveVersion, leave)
	if err != nil {
		return err
	}
	if err := codeErr(resp.ErrorCode); err != nil {
		return fmt.Errorf("LeaveGroup: %w", err)
	}
	return nil
}

// ---------------------------------------------------------------------------
// BenchmarkRebalance

// rebalanceTargets are the brokers BenchmarkRebalance compares: Cohort
// with a 50 ms quiet window, Cohort with Kafka's plain 3 s initial delay,
// and kfake.
var rebalanceTargets = []groupTarget{
	cohortTarget("cohort-quiet50ms", quiet50ms),
	cohortTarget("cohort-kafkadefaults", kafkaDefaults),
	kfakeTarget("kfake", false, false),
}

const (
	rebalanceTopic      = "rebalance"
	rebalancePartitions = 1000
)

// BenchmarkRebalance times N members forming a group from nothing: N raw
// members, one connection each (dialled before the timer starts), all send
// JoinGroup v9 at once to a fresh group (protocol type "consumer", one
// protocol "range" subscribed to a 1,000-partition topic); they rejoin on
// MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and
// UNKNOWN_MEMBER_ID; the leader computes a range assignment and every
// member sends SyncGroup v5; members with an assignment heartbeat every 3 s
// (Kafka's default interval), which is how they learn of a later
// generation. The timer stops once every member has its SyncGroup answer
// for the same generation. Session timeout 30 s, rebalance timeout 60 s.
//
// Metrics: ms/rebalance (the mean), median-ms and max-ms over the
// iterations, generations (the final generation number, that is how many
// generations the group went through) and joins/member (JoinGroup
// requests per member, MEMBER_ID_REQUIRED round included).
//
// Two behaviours show here. Kafka's initial delay is extended by another
// delay whenever a member arrived during the last one, so a fleet that
// arrives at once waits two delays: 6 s with Kafka's defaults, and with
// Cohort's 50 ms quiet window two 50 ms steps. kfake has no initial delay:
// the first member to join forms generation 1 on its own and each later
// arrival forces another rebalance; when one starts after the group went
// Stable, the members already in it only learn of it at their next
// heartbeat (3 s), so kfake's times are bimodal: a few ms, or about 3 s.
func BenchmarkRebalance(b *testing.B) {
	for _, n := range []int{10, 100, 500} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			for _, tg := range rebalanceTargets {
				b.Run(tg.name, func(b *testing.B) {
					benchRebalance(b, tg, n)
				})
			}
		})
	}
}

func benchRebalance(b *testing.B, tg groupTarget, n int) {
	ctx := benchContext(b)
	addr := tg.start(b)
	createTopics(ctx, b, addr, rebalancePartitions, rebalanceTopic)

	var (
		iter             int
		times            []time.Duration
		gens, joins      float64
		leaveErrReported bool
	)
	for b.Loop() {
		b.StopTimer()
		iter++
		conns := dialAll(b, addr, n, "bench-rebalance")
		r := newRebalanceRun(rebalanceParams{
			group:          fmt.Sprintf("rebalance-%d-%d", n, iter),
			topic:          rebalanceTopic,
			partitions:     rebalancePartitions,
			session:        30 * time.Second,
			rebalance:      60 * time.Second,
			heartbeatEvery: memberRebalanceHeartbeat,
			deadline:       5 * time.Minute,
		}, conns)
		b.StartTimer()
		took, err := r.run()
		b.StopTimer()
		if err != nil {
			closeAll(conns)
			b.Fatal(err)
		}
		times = append(times, took)
		gens += float64(r.finalGen)
		joins += float64(r.joins.Load()) / float64(n)
		if err := r.leaveAll(); err != nil && !leaveErrReported {
			leaveErrReported = true
			b.Logf("leaving group %s (untimed cleanup): %v", r.p.group, err)
		}
		closeAll(conns)
		b.StartTimer()
	}
	var total time.Duration
	for _, t := range times {
		total += t
	}
	slices.Sort(times)
	b.ReportMetric(ms(total)/float64(b.N), "ms/rebalance")
	b.ReportMetric(ms(percentile(times, 0.5)), "median-ms")
	b.ReportMetric(ms(times[len(times)-1]), "max-ms")
	b.ReportMetric(gens/float64(b.N), "generations")
	b.ReportMetric(joins/float64(b.N), "joins/member")
}

// ---------------------------------------------------------------------------
// BenchmarkCommit

var commitTargets = []groupTarget{
	cohortTarget("cohort", coordinator.Config{}),
	// Without __consumer_offsets: what the topic costs the commit path.
	cohortTarget("cohort-no-cof", coordinator.Config{NoOffsetsTopic: true}),
	kfakeTarget("kfake", false, false),
	kfakeTarget("kfake-fsync", true, true),
}

const (
	commitTopic         = "commits"
	commitPartitions    = 10
	commitsPerPartition = 10 // partitions in every OffsetCommit
)

// commitRequest is a simple commit (generation -1, no member id) of
// offset for every partition of the commit topic.
func commitRequest(group string, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	req.MemberID = ""
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = commitTopic
	for p := range int32(commitsPerPartition) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset = offset
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{t}
	return req
}

// checkCommit returns the first partition error of an OffsetCommit
// response, or an error if it does not answer every partition asked.
func checkCommit(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse) error {
	want, got := 0, 0
	for _, t := range req.Topics {
		want += len(t.Partitions)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			got++
			if err := codeErr(p.ErrorCode); err != nil {
				return fmt.Errorf("OffsetCommit %s %d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	if got != want {
		return fmt.Errorf("OffsetCommit: %d partitions answered, want %d", got, want)
	}
	return nil
}

// BenchmarkCommit times simple offset commits: that many committers, each
// with its own connection and its own group, commit in a closed loop
// (OffsetCommit v8, generation -1, empty member id, 10 partitions of an
// existing topic per request) until b.N commits are done. One op is one
// OffsetCommit. The first commit of every group (which creates it) is made
// before the timer starts.
//
// Targets: Cohort (which makes every commit durable, fsync, before it
// answers), kfake in memory, and kfake with DataDir and SyncWrites (an
// fsync of its groups log per commit).
//
// Metrics: offsets/s, p50-ms and p99-ms (per OffsetCommit, as a committer
// sees it), cpu-us/commit, the process's CPU time (node and committers)
// per OffsetCommit, and cpu-ns/offset, the same per offset. On a shared
// machine the rate swings with what else runs; the CPU per operation much
// less, so it is the figure to compare two builds or configurations by.
func BenchmarkCommit(b *testing.B) {
	for _, committers := range []int{64, 1000} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			for _, tg := range commitTargets {
				b.Run(tg.name, func(b *testing.B) {
					benchCommit(b, tg, committers)
				})
			}
		})
	}
}

func benchCommit(b *testing.B, tg groupTarget, committers int) {
	ctx := benchContext(b)
	addr := tg.start(b)
	createTopics(ctx, b, addr, commitPartitions, commitTopic)
	groups := make([]string, committers)
	for i := range groups {
		groups[i] = fmt.Sprintf("commit-%d", i)
	}
	addrs := slices.Repeat([]string{addr}, committers)
	if tg.routed {
		addrs = coordinatorAddrs(b, addr, groups)
		waitTopicEverywhere(b, addrs, commitTopic)
	}
	conns := make([]*rawConn, committers)
	defer closeAll(conns)
	for i := range conns {
		c, err := dialRaw(addrs[i], "bench-commit")
		if err != nil {
			b.Fatalf("dial %s: %v", addrs[i], err)
		}
		conns[i] = c
	}
	// Warm up: create every group with one commit.
	if err := parallel(committers, 64, func(i int) error {
		req := commitRequest(groups[i], 0)
		resp, err := do[*kmsg.OffsetCommitResponse](conns[i], commitVersion, req)
		if err != nil {
			return err
		}
		return checkCommit(req, resp)
	}); err != nil {
		b.Fatal(err)
	}

	var (
		next      atomic.Int64
		wg        sync.WaitGroup
		errOnce   sync.Once
		firstErr  error
		latencies = make([][]time.Duration, committers)
	)
	b.ResetTimer()
	cpu := startCPU()
	for i := range committers {
		wg.Go(func() {
			c := conns[i]
			for k := next.Add(1); k <= int64(b.N); k = next.Add(1) {
				req := commitRequest(groups[i], k)
				t0 := time.Now()
				resp, err := do[*kmsg.OffsetCommitResponse](c, commitVersion, req)
				if err == nil {
					err = checkCommit(req, resp)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("committer %d: %w", i, err) })
					next.Store(int64(b.N)) // stop the others
					return
				}
				latencies[i] = append(latencies[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N*commitsPerPartition)/b.Elapsed().Seconds(), "offsets/s")
	perCommit := cpu.perOp(b.N)
	b.ReportMetric(perCommit, "cpu-us/commit")
	b.ReportMetric(perCommit*1000/commitsPerPartition, "cpu-ns/offset")
	b.ReportMetric(ms(percentile(all, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(all, 0.99)), "p99-ms")
}

// cpuClock reads this process's CPU time (user and system, every
// thread): the node's and the clients', which share the process. On a
// machine shared with other work it moves much less than throughput does,
// so that it shows what a change costs where rates only show the noise.
type cpuClock struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{processCPU()} }

// perOp returns the CPU time since start over n operations, in µs.
func (c cpuClock) perOp(n int) float64 {
	return float64((processCPU() - c.start).Nanoseconds()) / 1000 / float64(max(n, 1))
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// parallel runs f(0..n-1) on up to workers goroutines and returns the
// first error.
func parallel(n, workers int, f func(i int) error) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(n, workers) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					errOnce.Do(func() { firstErr = err })
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// ---------------------------------------------------------------------------
// BenchmarkHeartbeat

var heartbeatTargets = []groupTarget{
	cohortTarget("cohort", quiet50ms),
	kfakeTarget("kfake", false, false),
}

const (
	hbGroups          = 100
	hbMembersPerGroup = 100
	hbMembers         = hbGroups * hbMembersPerGroup
	hbJoinParallel    = 20  // groups joining at the same time in set-up
	hbConns           = 250 // heartbeating connections
	hbDepth           = 8   // heartbeats in flight per connection
	hbTopic           = "heartbeat"
	hbPartitions      = 100
)

// hbMember is a member that has joined, as its heartbeats name it.
type hbMember struct {
	group string
	id    string
	gen   int32
}

// BenchmarkHeartbeat times heartbeats of 10,000 stable members: 100
// groups of 100 members join in set-up (one connection per member, up to
// 20 groups at a time, session timeout 5 min so that no member expires
// during the run; those connections are then closed, which does not end a
// member), then 250 connections each heartbeat for 40 of the members with
// up to 8 Heartbeat v4 requests in flight. One op is one heartbeat from
// every member (10,000 heartbeats); every answer must be NONE.
//
// Metrics: heartbeats/s, cpu-us/heartbeat (the process's CPU time, node
// and clients, per heartbeat), and for Cohort the Go heap per member
// (runtime.MemStats.HeapAlloc after runtime.GC(), after the joins less
// before them, less the bytes of the member ids this benchmark keeps, over
// 10,000), in this process, which holds both the node and the clients.
func BenchmarkHeartbeat(b *testing.B) {
	b.Run(fmt.Sprintf("members=%d", hbMembers), func(b *testing.B) {
		for _, tg := range heartbeatTargets {
			b.Run(tg.name, func(b *testing.B) {
				benchHeartbeat(b, tg)
			})
		}
	})
}

func benchHeartbeat(b *testing.B, tg groupTarget) {
	ctx := benchContext(b)
	addr := tg.start(b)
	createTopics(ctx, b, addr, hbPartitions, hbTopic)

	members := make([]hbMember, 0, hbMembers)
	var perMember float64
	t0 := time.Now()
	before := heapAfterGC()
	var mu sync.Mutex
	if err := parallel(hbGroups, hbJoinParallel, func(g int) error {
		conns, err := dialN(addr, hbMembersPerGroup, "bench-heartbeat")
		if err != nil {
			return err
		}
		defer closeAll(conns)
		r := newRebalanceRun(rebalanceParams{
			group:          fmt.Sprintf("heartbeat-%d", g),
			topic:          hbTopic,
			partitions:     hbPartitions,
			session:        5 * time.Minute,
			rebalance:      60 * time.Second,
			heartbeatEvery: memberRebalanceHeartbeat,
			deadline:       5 * time.Minute,
		}, conns)
		if _, err := r.run(); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, id := range r.memberIDs {
			members = append(members, hbMember{group: r.p.group, id: id, gen: r.finalGen})
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d members joined %d groups in %v (untimed set-up)", len(members), hbGroups, time.Since(t0).Round(time.Millisecond))
	if tg.cohort {
		time.Sleep(200 * time.Millisecond) // let the server drop the closed connections
		after := heapAfterGC()
		idBytes := 0
		for _, m := range members {
			idBytes += len(m.id)
		}
		perMember = (float64(after) - float64(before) - float64(idBytes)) / hbMembers
	}

	heartbeatRounds(b, addr, members, heartbeatPipelined)
	if tg.cohort {
		// After the loop: b.Loop's reset deletes metrics reported before.
		b.ReportMetric(perMember, "heap-B/member")
	}
}

// heartbeatRounds times rounds of one heartbeat from every member, sent
// by beat over hbConns connections (hbDepth in flight each), after one
// untimed round that checks every member is still there; it reports
// heartbeats/s.
func heartbeatRounds[T any](b *testing.B, addr string, members []T, beat func(*rawConn, []T, int) error) {
	conns := dialAll(b, addr, hbConns, "bench-heartbeat")
	defer closeAll(conns)
	round := func() error {
		return parallel(hbConns, hbConns, func(c int) error {
			return beat(conns[c], every(members, c, hbConns), hbDepth)
		})
	}
	if err := round(); err != nil {
		b.Fatalf("first heartbeat of every member (untimed): %v", err)
	}
	cpu := startCPU()
	for b.Loop() {
		if err := round(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(members))/b.Elapsed().Seconds(), "heartbeats/s")
	b.ReportMetric(cpu.perOp(b.N*len(members)), "cpu-us/heartbeat")
}

// every returns xs[i], xs[i+n], xs[i+2n], …: connection i's share of
// the members when n connections heartbeat for them.
func every[T any](xs []T, i, n int) []T {
	var out []T
	for ; i < len(xs); i += n {
		out = append(out, xs[i])
	}
	return out
}

// dialN is dialAll for goroutines other than the benchmark's.
func dialN(addr string, n int, clientID string) ([]*rawConn, error) {
	conns := make([]*rawConn, 0, n)
	for range n {
		c, err := dialRaw(addr, clientID)
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// heartbeatPipelined sends one Heartbeat for each member on c, with up to
// depth in flight, and checks every answer is NONE.
func heartbeatPipelined(c *rawConn, members []hbMember, depth int) error {
	return pipelined(c, members, depth,
		func(m hbMember) kmsg.Request {
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.SetVersion(heartbeatVersion)
			hb.Group, hb.MemberID, hb.Generation = m.group, m.id, m.gen
			return hb
		},
		func(m hbMember, r kmsg.Response) error {
			if code := r.(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
				return fmt.Errorf("Heartbeat of %s in %s (generation %d): %w", m.id, m.group, m.gen, codeErr(code))
			}
			return nil
		})
}

// pipelined sends one request per item on c (built by req, its version
// set), with up to depth in flight, and checks each answer with check.
func pipelined[T any](c *rawConn, items []T, depth int, req func(T) kmsg.Request, check func(T, kmsg.Response) error) error {
	type sent struct {
		item T
		req  kmsg.Request
		corr int32
	}
	queue := make([]sent, 0, depth)
	next := 0
	for next < len(items) || len(queue) > 0 {
		if next < len(items) && len(queue) < depth {
			for next < len(items) && len(queue) < depth {
				r := req(items[next])
				queue = append(queue, sent{items[next], r, c.appendReq(r)})
				next++
			}
			if err := c.flush(); err != nil {
				return fmt.Errorf("%s: write: %w", kmsg.NameForKey(queue[0].req.Key()), err)
			}
		}
		s := queue[0]
		queue = queue[1:]
		resp, err := c.recv(s.req, s.corr)
		if err != nil {
			return err
		}
		if err := check(s.item, resp); err != nil {
			return err
		}
	}
	return nil
}

// heapAfterGC is the live Go heap after a full collection.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// ---------------------------------------------------------------------------
// BenchmarkOffsetMemory

const (
	memTopic        = "offsets"
	memPartitions   = 100
	memGroupsPerOp  = 2000 // x 100 partitions = 200,000 offsets per op
	memOffsetsPerOp = memGroupsPerOp * memPartitions
	memCommitConns  = 16
)

// BenchmarkOffsetMemory (Cohort only) measures the Go heap each committed
// offset costs the node: one op commits 200,000 new offsets (2,000 fresh
// groups, each one simple OffsetCommit of all 100 partitions of a topic,
// over 16 connections). After the loop the connections are closed and the
// heap (HeapAlloc after runtime.GC()) is compared with before the first
// op. The node is in this process; nothing else in it holds on to the
// offsets.
//
// Metrics: heap-B/offset; ns/op is the time to commit 200,000 offsets.
// Measured with __consumer_offsets (cohort), whose partitions keep every
// live record's key and value, and without it (cohort-no-cof).
func BenchmarkOffsetMemory(b *testing.B) {
	for _, tg := range []groupTarget{
		cohortTarget("cohort", coordinator.Config{}),
		cohortTarget("cohort-no-cof", coordinator.Config{NoOffsetsTopic: true}),
	} {
		b.Run(tg.name, func(b *testing.B) { benchOffsetMemory(b, tg) })
	}
}

func benchOffsetMemory(b *testing.B, tg groupTarget) {
	ctx := benchContext(b)
	addr := tg.start(b)
	createTopics(ctx, b, addr, memPartitions, memTopic)
	// One commit untimed, so that topic lookups and the first group's
	// shard are warm before the heap is measured. Its connection is
	// closed, and the heap is measured with no connection open before
	// and after: the figure is what the offsets hold, not what
	// connections happen to hold at either moment (before Cohort's
	// connections released their buffers when idle, a connection's
	// buffers counted in the "before" and not in the "after", which
	// made the figure about 9 B lower).
	warm := dialAll(b, addr, 1, "bench-offsets-warmup")
	if err := commitAll(warm, []string{"offsets-warmup"}, []string{memTopic}, memPartitions, 1); err != nil {
		b.Fatal(err)
	}
	closeAll(warm)
	time.Sleep(200 * time.Millisecond) // let the server drop the connection
	before := heapAfterGC()
	conns := dialAll(b, addr, memCommitConns, "bench-offsets")
	op := 0
	for b.Loop() {
		op++
		groups := make([]string, memGroupsPerOp)
		for i := range groups {
			groups[i] = fmt.Sprintf("offsets-%d-%d", op, i)
		}
		if err := commitAll(conns, groups, []string{memTopic}, memPartitions, int64(op)); err != nil {
			b.Fatal(err)
		}
	}
	closeAll(conns)
	time.Sleep(200 * time.Millisecond) // let the server drop the connections
	after := heapAfterGC()
	b.ReportMetric((float64(after)-float64(before))/float64(b.N*memOffsetsPerOp), "heap-B/offset")
}

// commitAll makes one simple OffsetCommit per group, of partitions 0..n-1
// of every topic, at offset, spread over conns.
func commitAll(conns []*rawConn, groups, topics []string, n int32, offset int64) error {
	var next atomic.Int64
	return parallel(len(conns), len(conns), func(c int) error {
		for i := int(next.Add(1)) - 1; i < len(groups); i = int(next.Add(1)) - 1 {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group = groups[i]
			req.Generation = -1
			for _, topic := range topics {
				t := kmsg.NewOffsetCommitRequestTopic()
				t.Topic = topic
				for p := range n {
					rp := kmsg.NewOffsetCommitRequestTopicPartition()
					rp.Partition = p
					rp.Offset = offset + int64(p)
					t.Partitions = append(t.Partitions, rp)
				}
				req.Topics = append(req.Topics, t)
			}
			resp, err := do[*kmsg.OffsetCommitResponse](conns[c], commitVersion, req)
			if err != nil {
				return fmt.Errorf("group %s: %w", groups[i], err)
			}
			if err := checkCommit(req, resp); err != nil {
				return fmt.Errorf("group %s: %w", groups[i], err)
			}
		}
		return nil
	})
}

// ---------------------------------------------------------------------------
// BenchmarkLoad

const (
	loadGroups      = 10000
	loadTopics      = 10
	loadPartitions  = 10 // per topic: every group commits 10 x 10 = 100 offsets
	loadOffsets     = loadGroups * loadTopics * loadPartitions
	loadCommitConns = 32
)

// BenchmarkLoad (Cohort only) times a node starting on a data directory
// that holds 1,000,000 committed offsets: 10,000 groups, each with one
// simple OffsetCommit of 10 partitions of each of 10 topics (made over 32
// connections in set-up). The node is shut down (Node.Shutdown) and one op
// is node.Start on the same data directory (which returns once the
// coordinator has loaded) and an OffsetFetch of one group that must
// return all its 100 offsets; the shutdown after it is not timed.
//
// Metrics: s/start (until node.Start returns), s/ready (until that
// OffsetFetch answers with the offsets, retrying while the coordinator
// says it is loading; this is ns/op).
func BenchmarkLoad(b *testing.B) {
	for _, v := range []struct {
		name string
		cfg  coordinator.Config
	}{
		{"cohort", coordinator.Config{}},
		// Without __consumer_offsets, whose partitions copy every record
		// the load finds.
		{"cohort-no-cof", coordinator.Config{NoOffsetsTopic: true}},
	} {
		b.Run(v.name, func(b *testing.B) { benchLoad(b, v.cfg) })
	}
}

func benchLoad(b *testing.B, groupsCfg coordinator.Config) {
	ctx := benchContext(b)
	cfg := node.Config{
		KafkaListen: "127.0.0.1:0",
		DataDir:     b.TempDir(),
		Logger:      slog.New(slog.DiscardHandler),
		Groups:      groupsCfg,
	}
	nd, err := node.Start(cfg)
	if err != nil {
		b.Fatalf("start node: %v", err)
	}
	stop := func(n *node.Node) {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := n.Shutdown(sctx); err != nil {
			b.Fatalf("shutdown node: %v", err)
		}
	}
	topics := make([]string, loadTopics)
	for i := range topics {
		topics[i] = fmt.Sprintf("load-%d", i)
	}
	createTopics(ctx, b, nd.KafkaAddr(), loadPartitions, topics...)
	groups := make([]string, loadGroups)
	for i := range groups {
		groups[i] = fmt.Sprintf("load-group-%d", i)
	}
	conns := dialAll(b, nd.KafkaAddr(), loadCommitConns, "bench-load")
	t0 := time.Now()
	err = commitAll(conns, groups, topics, loadPartitions, 1000)
	closeAll(conns)
	if err != nil {
		stop(nd)
		b.Fatal(err)
	}
	b.Logf("committed %d offsets in %d groups in %v (untimed set-up)", loadOffsets, loadGroups, time.Since(t0).Round(time.Millisecond))
	stop(nd)

	var startTotal, readyTotal time.Duration
	probe := groups[loadGroups-1]
	for b.Loop() {
		t0 := time.Now()
		nd, err := node.Start(cfg)
		if err != nil {
			b.Fatalf("restart node: %v", err)
		}
		started := time.Since(t0)
		err = fetchUntilLoaded(nd.KafkaAddr(), probe, topics, loadPartitions, 1000)
		ready := time.Since(t0)
		b.StopTimer()
		stop(nd)
		if err != nil {
			b.Fatal(err)
		}
		startTotal += started
		readyTotal += ready
		b.StartTimer()
	}
	b.ReportMetric(startTotal.Seconds()/float64(b.N), "s/start")
	b.ReportMetric(readyTotal.Seconds()/float64(b.N), "s/ready")
}

// fetchUntilLoaded fetches group's committed offsets (OffsetFetch v8)
// until the coordinator stops saying it is loading, and checks them.
func fetchUntilLoaded(addr, group string, topics []string, partitions int32, offset int64) error {
	c, err := dialRaw(addr, "bench-load")
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		for _, topic := range topics {
			t := kmsg.NewOffsetFetchRequestGroupTopic()
			t.Topic = topic
			for p := range partitions {
				t.Partitions = append(t.Partitions, p)
			}
			rg.Topics = append(rg.Topics, t)
		}
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		resp, err := do[*kmsg.OffsetFetchResponse](c, fetchVersion, req)
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 {
			return fmt.Errorf("OffsetFetch: %d groups in the answer, want 1", len(resp.Groups))
		}
		g := resp.Groups[0]
		switch g.ErrorCode {
		case 0:
		case kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
			if time.Now().After(deadline) {
				return fmt.Errorf("OffsetFetch %s: still %v after 2 minutes", group, codeErr(g.ErrorCode))
			}
			time.Sleep(time.Millisecond)
			continue
		default:
			return fmt.Errorf("OffsetFetch %s: %w", group, codeErr(g.ErrorCode))
		}
		n := 0
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := codeErr(p.ErrorCode); err != nil {
					return fmt.Errorf("OffsetFetch %s %s %d: %w", group, t.Topic, p.Partition, err)
				}
				if want := offset + int64(p.Partition); p.Offset != want {
					return fmt.Errorf("OffsetFetch %s %s %d: offset %d, want %d (the node did not load its groups)", group, t.Topic, p.Partition, p.Offset, want)
				}
				n++
			}
		}
		if want := len(topics) * int(partitions); n != want {
			return fmt.Errorf("OffsetFetch %s: %d partitions, want %d", group, n, want)
		}
		return nil
	}
}
