package loadgen

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RebalanceParams describes one group's classic-protocol members.
type RebalanceParams struct {
	Group      string
	Topic      string // the one topic every member subscribes to
	Partitions int32  // its partition count, for the leader's assignment
	// Session and Rebalance are the JoinGroup's timeouts.
	Session, Rebalance time.Duration
	// HeartbeatEvery is how often a member that has its assignment
	// heartbeats, which is how it learns of a later generation.
	HeartbeatEvery time.Duration
	// Deadline bounds the whole rebalance; past it the members'
	// connections are closed and Run fails.
	Deadline time.Duration
}

// MemberHeartbeat is Kafka's default heartbeat.interval.ms, the
// HeartbeatEvery the benchmarks and `cohort bench` use.
const MemberHeartbeat = 3 * time.Second

// Each member bounds its JoinGroups; one that needs more is reported.
const maxJoinsPerMember = 1000

// Rebalance drives n raw members (one connection each) into one group
// and tells when every member has its SyncGroup answer for the same
// generation.
type Rebalance struct {
	p        RebalanceParams
	conns    []*Conn
	metadata []byte // the consumer-protocol subscription, the same for all
	done     chan struct{}
	joins    atomic.Int64

	mu        sync.Mutex
	synced    []int32 // generation of member i's SyncGroup answer, -1 if none or stale
	assigned  []int   // partitions member i got in that answer
	memberIDs []string
	counts    map[int32]int
	// joined counts the JoinGroup answers (no error) per generation, and
	// lastJoin is when the last of them came.
	joined     map[int32]int
	lastJoin   map[int32]time.Time
	finalGen   int32
	finishedAt time.Time
	maxGen     int32
}

// NewRebalance prepares a run of one member per connection.
func NewRebalance(p RebalanceParams, conns []*Conn) *Rebalance {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = []string{p.Topic}
	r := &Rebalance{
		p:         p,
		conns:     conns,
		metadata:  meta.AppendTo(nil),
		done:      make(chan struct{}),
		synced:    make([]int32, len(conns)),
		assigned:  make([]int, len(conns)),
		memberIDs: make([]string, len(conns)),
		counts:    make(map[int32]int),
		joined:    make(map[int32]int),
		lastJoin:  make(map[int32]time.Time),
	}
	for i := range r.synced {
		r.synced[i] = -1
	}
	return r
}

// Group is the group's name.
func (r *Rebalance) Group() string { return r.p.Group }

// MemberIDs are the members' ids, in connection order, after Run.
func (r *Rebalance) MemberIDs() []string { return r.memberIDs }

// FinalGen is the generation every member ended in, after Run.
func (r *Rebalance) FinalGen() int32 { return r.finalGen }

// Joins is how many JoinGroups the members sent, MEMBER_ID_REQUIRED
// rounds included.
func (r *Rebalance) Joins() int64 { return r.joins.Load() }

// Generations is how many generations the members were answered a
// JoinGroup for: 1 if they all came into one.
func (r *Rebalance) Generations() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.joined)
}

func (r *Rebalance) markSynced(i int, memberID string, gen int32, partitions int) {
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
func (r *Rebalance) markStale(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.synced[i]; old >= 0 {
		r.counts[old]--
	}
	r.synced[i] = -1
}

func (r *Rebalance) sawJoin(gen int32) {
	r.mu.Lock()
	r.maxGen = max(r.maxGen, gen)
	r.joined[gen]++
	r.lastJoin[gen] = time.Now()
	r.mu.Unlock()
}

// status describes where the members are, for a failure message.
func (r *Rebalance) status() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("highest generation seen %d, members synced per generation %v (of %d), %d JoinGroups sent",
		r.maxGen, r.counts, len(r.conns), r.joins.Load())
}

// RebalanceResult is what a run took.
type RebalanceResult struct {
	// Joined is from the start until the last JoinGroup answer of the
	// final generation; Synced until the last SyncGroup answer of it,
	// when every member had its assignment.
	Joined, Synced time.Duration
}

// Run starts every member at once and waits until all have their
// assignment for one generation, which together must cover the topic.
func (r *Rebalance) Run() (RebalanceResult, error) {
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
	timer := time.NewTimer(r.p.Deadline)
	defer timer.Stop()
	var err error
	select {
	case <-r.done:
	case err = <-errs:
	case <-timer.C:
		err = fmt.Errorf("no common generation after %v", r.p.Deadline)
	}
	if err != nil {
		err = fmt.Errorf("group %s: %w; %s", r.p.Group, err, r.status())
		CloseAll(r.conns) // unblocks every member
	}
	wg.Wait()
	if err != nil {
		return RebalanceResult{}, err
	}
	// Every member's answer is for the final generation; together they
	// must hold the whole topic.
	total := 0
	for _, n := range r.assigned {
		total += n
	}
	if total != int(r.p.Partitions) {
		return RebalanceResult{}, fmt.Errorf("group %s: members were assigned %d partitions in total, want %d", r.p.Group, total, r.p.Partitions)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return RebalanceResult{Joined: r.lastJoin[r.finalGen].Sub(began), Synced: r.finishedAt.Sub(began)}, nil
}

// member is one consumer: JoinGroup (rejoining on MEMBER_ID_REQUIRED and on
// the errors that mean "join again"), the leader's range assignment,
// SyncGroup, then heartbeats until every member is done or one of them
// tells it to rejoin.
func (r *Rebalance) member(i int) error {
	c := r.conns[i]
	memberID := ""
	for joins := 0; ; joins++ {
		if joins == maxJoinsPerMember {
			return fmt.Errorf("still no assignment after %d JoinGroups", joins)
		}
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group = r.p.Group
		join.SessionTimeoutMillis = int32(r.p.Session / time.Millisecond)
		join.RebalanceTimeoutMillis = int32(r.p.Rebalance / time.Millisecond)
		join.MemberID = memberID
		join.ProtocolType = "consumer"
		proto := kmsg.NewJoinGroupRequestProtocol()
		proto.Name = "range"
		proto.Metadata = r.metadata
		join.Protocols = []kmsg.JoinGroupRequestProtocol{proto}
		r.joins.Add(1)
		jr, err := Do[*kmsg.JoinGroupResponse](c, JoinVersion, join)
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
			return fmt.Errorf("JoinGroup: %w", kerr.ErrorForCode(jr.ErrorCode))
		}
		memberID = jr.MemberID
		gen := jr.Generation
		r.sawJoin(gen)

		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group = r.p.Group
		sync.Generation = gen
		sync.MemberID = memberID
		sync.ProtocolType = kmsg.StringPtr("consumer")
		sync.Protocol = jr.Protocol
		if jr.LeaderID == memberID {
			if sync.GroupAssignment, err = RangeAssign(r.p.Topic, r.p.Partitions, jr.Members); err != nil {
				return err
			}
		}
		sr, err := Do[*kmsg.SyncGroupResponse](c, SyncVersion, sync)
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
			return fmt.Errorf("SyncGroup: %w", kerr.ErrorForCode(sr.ErrorCode))
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

// heartbeatUntilDone heartbeats every HeartbeatEvery until the run is
// done (stayed) or the broker says a new generation is forming.
func (r *Rebalance) heartbeatUntilDone(c *Conn, memberID string, gen int32) (int, error) {
	t := time.NewTimer(r.p.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return stayed, nil
		case <-t.C:
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group = r.p.Group
		hb.Generation = gen
		hb.MemberID = memberID
		hr, err := Do[*kmsg.HeartbeatResponse](c, HeartbeatVersion, hb)
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
			return 0, fmt.Errorf("heartbeat: %w", kerr.ErrorForCode(hr.ErrorCode))
		}
		t.Reset(r.p.HeartbeatEvery)
	}
}

// RangeAssign is Kafka's RangeAssignor for one topic: members sorted by
// id, each gets a contiguous run of partitions, the first
// partitions%members one more.
func RangeAssign(topic string, partitions int32, members []kmsg.JoinGroupResponseMember) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
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

// LeaveAll makes every member of a finished run leave in one batched
// LeaveGroup, so that the group does not linger until its sessions expire.
func (r *Rebalance) LeaveAll() error { return Leave(r.conns[0], r.p.Group, r.memberIDs) }

// Leave makes the members ids of group leave in one batched LeaveGroup v5
// (KIP-345) on c.
func Leave(c *Conn, group string, ids []string) error {
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = group
	for _, id := range ids {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		leave.Members = append(leave.Members, m)
	}
	resp, err := Do[*kmsg.LeaveGroupResponse](c, LeaveVersion, leave)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("LeaveGroup %s: %w", group, err)
	}
	return nil
}
