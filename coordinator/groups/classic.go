package groups

// The classic protocol's group (Kafka's ClassicGroup) and its record.
//
// Durable: the group's committed record (Kafka's GroupMetadata), written
// when a JoinGroup or a simple commit creates the group, when the leader's
// SyncGroup stores a generation's assignment, when a static member
// replaces itself in a Stable group, and when the group empties; replay
// sets committed and nothing else. Soft: everything a rebalance in
// progress holds (who has joined, the generation being formed, parked
// requests, deadlines). Loaded derives it from committed: a group with
// members is Stable, one without is Empty.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
)

// newMemberJoinTimeout is how long a new member has to complete its
// first join (Kafka's fixed CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS).
const newMemberJoinTimeout = 5 * time.Minute

// Timer kinds of classic groups: the join and sync phases, and a member's
// (or pending member id's) deadline.
const (
	timerJoin   = 'j'
	timerSync   = 's'
	timerMember = 'm'
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
	expireAt, armedAt deadline
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

// classicGroup is a classic group, or a simple group (one that only
// commits offsets: no protocol type, always Empty).
type classicGroup struct {
	*group

	// committed is the group's last record: the durable part, set only
	// by replay. Nil until the group's existence is written.
	committed *record.ClassicGroup

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
	// firstNew and arrivals: when the initial rebalance began and how many
	// members have come since (its first included), for the adaptive
	// barrier's mean gap.
	firstNew time.Time
	arrivals int

	// rebalance is the rebalance under way, for events (events.go); nil
	// when none.
	rebalance *rebalance
}

// newClassicGroup gives g an Empty classic part.
func newClassicGroup(g *group, now time.Time) *classicGroup {
	c := &classicGroup{
		group:       g,
		state:       empty,
		prevState:   dead,
		stateTime:   now,
		members:     map[string]*member{},
		static:      map[string]string{},
		pendingJoin: map[string]time.Time{},
		pendingSync: map[string]bool{},
		supported:   map[string]int{},
	}
	g.classic = c
	return c
}

// newClassic registers a new classic group with a fresh id (soft until
// its record is emitted).
func (s *Shard) newClassic(k gkey, now time.Time) *classicGroup {
	g := s.entry(k)
	g.id = s.newGroupID(now)
	return newClassicGroup(g, now)
}

// replayClassic applies a classic group record: a put sets the committed
// record (creating the part at load); a tombstone removes the classic
// part, and the group with it unless offsets or another part remain (a
// group converted to the consumer protocol keeps its offsets).
func (s *Shard) replayClassic(k record.GroupKey, value []byte) error {
	gk := gkey{k.Tenant, k.Group}
	if value == nil {
		if g := s.groups[gk]; g != nil {
			g.classic = nil
			s.forget(g)
		}
		return nil
	}
	v, err := record.DecodeClassicGroup(value)
	if err != nil {
		return fmt.Errorf("group %q: %w", k.Group, err)
	}
	g := s.entry(gk)
	g.id = v.ID
	if g.classic == nil {
		newClassicGroup(g, time.UnixMilli(v.StateTimestamp))
	}
	g.classic.shareLive(&v)
	g.classic.committed = &v
	return nil
}

// shareLive makes a freshly decoded record use the live group's copies of
// what both hold, so that a group keeps one copy of each member's ids,
// metadata and assignment rather than two (the record's own, decoded from
// its value, would otherwise stay beside the live member's for as long as
// the group is stable: about 300 B a member). At load there are no live
// members yet and the record's copies become the live ones (loadedClassic).
// Neither side changes these values in place: a change replaces them.
func (c *classicGroup) shareLive(v *record.ClassicGroup) {
	if len(c.members) == 0 {
		return
	}
	for i := range v.Members {
		rm := &v.Members[i]
		m := c.members[rm.MemberID]
		if m == nil {
			continue
		}
		rm.MemberID = m.id
		if rm.ClientID == m.clientID {
			rm.ClientID = m.clientID
		}
		if rm.ClientHost == m.clientHost {
			rm.ClientHost = m.clientHost
		}
		if rm.InstanceID != nil && m.instance != nil && *rm.InstanceID == *m.instance {
			rm.InstanceID = m.instance
		}
		if v.Protocol != nil {
			if meta := m.metadataFor(*v.Protocol); bytes.Equal(meta, rm.Subscription) {
				rm.Subscription = meta
			}
		}
		if bytes.Equal(m.assignment, rm.Assignment) {
			rm.Assignment = m.assignment
		}
	}
}

// emitClassic writes the group's record from its live state.
func (s *Shard) emitClassic(g *classicGroup) {
	s.emit(s.key(g.gkey).Key(), g.snapshot().Encode())
}

// loadedClassic derives a loaded group's soft state from its committed
// record (§18.3): with members it is Stable, without it is Empty; every
// member gets a fresh session timer, and a group over the size limit
// rebalances.
func (s *Shard) loadedClassic(g *classicGroup, now time.Time) {
	if v := g.committed; v != nil {
		g.stateTime = time.UnixMilli(v.StateTimestamp)
		g.protocolType, g.generation = v.ProtocolType, v.Generation
		if v.Protocol != nil {
			g.protocol = *v.Protocol
		}
		if v.Leader != nil {
			g.leader = *v.Leader
		}
		for _, rm := range v.Members {
			m := &member{
				id:               rm.MemberID,
				instance:         rm.InstanceID,
				clientID:         rm.ClientID,
				clientHost:       rm.ClientHost,
				rebalanceTimeout: rm.RebalanceTimeout,
				sessionTimeout:   rm.SessionTimeout,
				protocols:        []protocol{{name: g.protocol, meta: rm.Subscription}},
				assignment:       rm.Assignment,
			}
			if m.rebalanceTimeout < 0 {
				m.rebalanceTimeout = m.sessionTimeout
			}
			g.members[m.id] = m
			if m.instance != nil {
				g.static[*m.instance] = m.id
			}
			g.countProtocols(m, 1)
		}
		if len(g.members) > 0 {
			g.state, g.prevState = stable, empty
		}
		g.computeSubscribed()
	}
	for _, m := range g.sortedMembers() {
		s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
	}
	if len(g.members) > s.cfg.MaxSize {
		s.prepareRebalance(g, now, trigger{cause: observe.CauseOther}, fmt.Sprintf("Freshly-loaded group is over capacity (%d). Rebalancing in order to give a chance for consumers to commit offsets", s.cfg.MaxSize))
	}
}

// checkAtRest: a group that is Stable or Empty holds exactly what its
// record says (but the state time, which a Stable group's record takes
// from CompletingRebalance, as Kafka's does).
func (g *classicGroup) checkAtRest() error {
	if g.state != stable && g.state != empty {
		return nil
	}
	if g.committed == nil {
		if len(g.members) > 0 {
			return errors.New("classic group with members but no record")
		}
		return nil
	}
	live, rec := g.snapshot(), *g.committed
	if g.state == stable {
		live.StateTimestamp, rec.StateTimestamp = 0, 0
	}
	rec.Members = slices.Clone(rec.Members)
	for i, m := range rec.Members {
		if m.RebalanceTimeout < 0 { // as loadedClassic reads an old record
			rec.Members[i].RebalanceTimeout = m.SessionTimeout
		}
	}
	if !bytes.Equal(live.Encode(), rec.Encode()) {
		return fmt.Errorf("classic group at rest (%v) differs from its record:\nlive\n%s\nrecord\n%s", g.state,
			strings.Join(renderClassic(live), "\n"), strings.Join(renderClassic(rec), "\n"))
	}
	return nil
}

// renderClassic renders a classic record for DurableState.
func renderClassic(v record.ClassicGroup) []string {
	out := []string{fmt.Sprintf("  classic type=%q generation=%d protocol=%s leader=%s time=%d",
		v.ProtocolType, v.Generation, deref(v.Protocol), deref(v.Leader), v.StateTimestamp)}
	for _, m := range v.Members {
		out = append(out, fmt.Sprintf("  classic member %s inst=%s client=%s/%s rt=%d st=%d sub=%x assignment=%x",
			m.MemberID, deref(m.InstanceID), m.ClientID, m.ClientHost, m.RebalanceTimeout, m.SessionTimeout, m.Subscription, m.Assignment))
	}
	return out
}

// armSession sets member m's deadline to now+d and makes sure a timer
// will fire by then.
func (s *Shard) armSession(g *classicGroup, m *member, now time.Time, d time.Duration) {
	m.expireAt = deadlineAt(now.Add(d))
	if m.armedAt.IsZero() || m.armedAt.After(m.expireAt) {
		m.armedAt = m.expireAt
		s.timer(memberTimer(timerMember, g.gkey, m.id), m.expireAt.time())
	}
}

// cancelSession forgets member m's deadline.
func (s *Shard) cancelSession(g *classicGroup, m *member) {
	m.expireAt = 0
	if !m.armedAt.IsZero() {
		m.armedAt = 0
		s.timer(memberTimer(timerMember, g.gkey, m.id), time.Time{})
	}
}

func (g *classicGroup) transition(to state, now time.Time) {
	g.prevState, g.state, g.stateTime = g.state, to, now
	g.rebalance.enter(classicPhase(to), now)
}

// sortedMembers returns the members ordered by id, so that nothing that
// reaches a client or the store depends on map order.
func (g *classicGroup) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return ms
}

// allJoined is Kafka's hasAllMembersJoined.
func (g *classicGroup) allJoined() bool {
	return g.awaiting == len(g.members) && len(g.pendingJoin) == 0
}

// rebalanceTimeout is the largest of the members' (ms).
func (g *classicGroup) rebalanceTimeout() time.Duration {
	var max int32
	for _, m := range g.members {
		if m.rebalanceTimeout > max {
			max = m.rebalanceTimeout
		}
	}
	return time.Duration(max) * time.Millisecond
}

// acceptsProtocols is Kafka's ClassicGroup.supportsProtocols.
func (g *classicGroup) acceptsProtocols(typ string, ps []protocol) bool {
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

func (g *classicGroup) countProtocols(m *member, delta int) {
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
func (g *classicGroup) selectProtocol() string {
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
func (g *classicGroup) computeSubscribed() {
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
func (g *classicGroup) subscribedTo(topic string) bool {
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

// snapshot is the group's record value.
func (g *classicGroup) snapshot() record.ClassicGroup {
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
