package groups

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sort"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
)

// state is a classic group's state, as Kafka's ClassicGroupState.
type state int8

const (
	empty state = iota
	preparingRebalance
	completingRebalance
	stable
	dead
)

// String is the state as DescribeGroups and ListGroups spell it.
func (s state) String() string {
	switch s {
	case empty:
		return "Empty"
	case preparingRebalance:
		return "PreparingRebalance"
	case completingRebalance:
		return "CompletingRebalance"
	case stable:
		return "Stable"
	}
	return "Dead"
}

// protocol is one (name, metadata) entry of a member's JoinGroup, in the
// member's order of preference.
type protocol struct {
	name string
	meta []byte
}

// parked is a request the group answers later.
type parked struct {
	id      machine.RequestID
	version int16
}

// member is a classic group member (Kafka's ClassicGroupMember).
type member struct {
	id         string
	instance   *string // group.instance.id; nil for a dynamic member
	clientID   string
	clientHost string
	// rebalanceTimeout and sessionTimeout as the member asked (ms).
	rebalanceTimeout, sessionTimeout int32
	protocolType                     string
	protocols                        []protocol
	assignment                       []byte

	join, sync *parked
	// isNew is set from the member's addition until the join phase it
	// was added in completes.
	isNew bool

	// expireAt is the member's deadline (session, or the new-member join
	// timeout); armedAt the deadline its timer is armed for (zero: not
	// armed). A heartbeat only moves expireAt; the timer, when it fires
	// early, re-arms itself for expireAt. So a heartbeat costs no timer
	// operation.
	expireAt, armedAt time.Time
}

// metadataFor returns the member's metadata for protocol name.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.meta
		}
	}
	return nil
}

// sameProtocols is Kafka's ClassicGroupMember.matches: the same protocols,
// in the same order, with byte-equal metadata.
func (m *member) sameProtocols(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && bytes.Equal(a.meta, b.meta)
	})
}

// group is a group: its classic-protocol state and its committed offsets.
// A group created by a simple offset commit has no protocol type.
type group struct {
	name string
	// id is the stable cgp_<ULID> id minted at creation.
	id string

	state, prevState state
	stateTime        time.Time
	protocolType     string
	protocol         string // chosen protocol; "" when none
	generation       int32
	leader           string // "" when none

	members     map[string]*member
	static      map[string]string    // instance id → member id
	pendingJoin map[string]time.Time // ids handed out with MEMBER_ID_REQUIRED → deadline
	pendingSync map[string]bool
	awaiting    int // members with a parked JoinGroup
	supported   map[string]int

	// subscribed is the set of topics the members of the last completed
	// generation subscribe to, when known (a "consumer" group whose
	// subscriptions parse); see Kafka's ClassicGroup.computeSubscribedTopics.
	subscribed      map[string]bool
	subscribedKnown bool

	// The initial rebalance (from Empty): newMemberAdded is Kafka's flag;
	// initialLeft is how long the barrier may still be extended (Kafka's
	// rule); lastNew is when the last new member came and initialEnd the
	// latest the barrier may close (the quiet window's rule).
	newMemberAdded      bool
	initialLeft         time.Duration
	lastNew, initialEnd time.Time

	offsets map[string]map[int32]*offset

	// cg is the KIP-848 state of a consumer group; nil for a classic
	// (or simple) group.
	cg *cgroup

	// durable is false until the group's existence has been written.
	durable bool
}

// offset is a committed offset in memory. (OffsetCommit v2–4's explicit
// retention time is not kept: the broker's retention applies to every
// offset, as Kafka's does for the -1 that clients send.)
type offset struct {
	record.Offset
}

func newGroup(name, id string, now time.Time) *group {
	return &group{
		name:        name,
		id:          id,
		state:       empty,
		prevState:   dead,
		stateTime:   now,
		members:     map[string]*member{},
		static:      map[string]string{},
		pendingJoin: map[string]time.Time{},
		pendingSync: map[string]bool{},
		supported:   map[string]int{},
		offsets:     map[string]map[int32]*offset{},
	}
}

func (g *group) transition(to state, now time.Time) {
	g.prevState, g.state, g.stateTime = g.state, to, now
}

// sortedMembers returns the members ordered by id, so that nothing that
// reaches a client or the store depends on map order.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return ms
}

// allJoined is Kafka's hasAllMembersJoined.
func (g *group) allJoined() bool {
	return g.awaiting == len(g.members) && len(g.pendingJoin) == 0
}

// rebalanceTimeout is the largest of the members' (ms).
func (g *group) rebalanceTimeout() time.Duration {
	var max int32
	for _, m := range g.members {
		if m.rebalanceTimeout > max {
			max = m.rebalanceTimeout
		}
	}
	return time.Duration(max) * time.Millisecond
}

// acceptsProtocols is Kafka's ClassicGroup.supportsProtocols.
func (g *group) acceptsProtocols(typ string, ps []protocol) bool {
	if typ == "" || len(ps) == 0 {
		return false
	}
	if g.state == empty {
		return true
	}
	if typ != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.supported[p.name] == len(g.members) {
			return true
		}
	}
	return false
}

func (g *group) countProtocols(m *member, delta int) {
	for _, p := range m.protocols {
		g.supported[p.name] += delta
		if g.supported[p.name] <= 0 {
			delete(g.supported, p.name)
		}
	}
}

// selectProtocol is Kafka's ClassicGroup.selectProtocol: the candidates
// every member supports, each member voting for its first candidate. Ties
// go to the candidate earliest in the preference of the member with the
// smallest id, so the choice is deterministic.
func (g *group) selectProtocol() string {
	ms := g.sortedMembers()
	votes := map[string]int{}
	for _, m := range ms {
		for _, p := range m.protocols {
			if g.supported[p.name] == len(g.members) {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	if len(ms) > 0 {
		for _, p := range ms[0].protocols {
			if v, ok := votes[p.name]; ok && v > bestVotes {
				best, bestVotes = p.name, v
			}
		}
	}
	// A candidate the first member lists after its own vote can still
	// win on votes; the loop above saw every candidate, since a candidate
	// is supported by every member, the first included.
	return best
}

// computeSubscribed recomputes the topics the group subscribes to, from
// each member's metadata for the chosen protocol read as a consumer
// protocol Subscription (only its v0 prefix: version, topics).
func (g *group) computeSubscribed() {
	g.subscribed, g.subscribedKnown = nil, false
	if g.protocolType != "consumer" {
		return
	}
	set := map[string]bool{}
	for _, m := range g.members {
		topics, ok := subscriptionTopics(m.metadataFor(g.protocol))
		if !ok {
			return
		}
		for _, t := range topics {
			set[t] = true
		}
	}
	g.subscribed, g.subscribedKnown = set, true
}

// subscribedTo is Kafka's isSubscribedToTopic.
func (g *group) subscribedTo(topic string) bool {
	if g.subscribedKnown {
		return g.subscribed[topic]
	}
	return g.protocolType == "consumer"
}

// subscriptionTopics parses the topics of a consumer protocol
// Subscription: int16 version, int32 count, count × (int16 len, bytes).
func subscriptionTopics(b []byte) ([]string, bool) {
	if len(b) < 6 {
		return nil, false
	}
	n := int32(binary.BigEndian.Uint32(b[2:]))
	b = b[6:]
	if n < 0 || int(n) > len(b)/2 {
		return nil, false
	}
	out := make([]string, 0, n)
	for range n {
		if len(b) < 2 {
			return nil, false
		}
		l := int(int16(binary.BigEndian.Uint16(b)))
		b = b[2:]
		if l < 0 || l > len(b) {
			return nil, false
		}
		out = append(out, string(b[:l]))
		b = b[l:]
	}
	return out, true
}

// snapshot is the group's classic-group record value.
func (g *group) snapshot(now time.Time) record.ClassicGroup {
	v := record.ClassicGroup{
		ID:             g.id,
		ProtocolType:   g.protocolType,
		Generation:     g.generation,
		StateTimestamp: g.stateTime.UnixMilli(),
	}
	if len(g.members) > 0 {
		p, l := g.protocol, g.leader
		v.Protocol, v.Leader = &p, &l
	}
	for _, m := range g.sortedMembers() {
		v.Members = append(v.Members, record.ClassicMember{
			MemberID:         m.id,
			InstanceID:       m.instance,
			ClientID:         m.clientID,
			ClientHost:       m.clientHost,
			RebalanceTimeout: m.rebalanceTimeout,
			SessionTimeout:   m.sessionTimeout,
			Subscription:     m.metadataFor(g.protocol),
			Assignment:       m.assignment,
		})
	}
	return v
}

// numOffsets counts the group's committed offsets.
func (g *group) numOffsets() int {
	n := 0
	for _, ps := range g.offsets {
		n += len(ps)
	}
	return n
}
