package classic

// The classic protocol's group (Kafka's ClassicGroup) and its record.
//
// Durable: the group's committed record (Kafka's GroupMetadata), written
// when a JoinGroup or a simple commit creates the group, when the leader's
// SyncGroup stores a generation's assignment, when a static member
// replaces itself in a Stable group, and when the group empties; replay
// sets committed and nothing else (but at load, where the part it makes
// takes the record's protocol type and generation as Loaded would, so
// that a record without members can be the live fields: Group). Soft:
// everything a rebalance in progress holds (who has joined, the
// generation being formed, parked requests, deadlines). Loaded derives it
// from committed: a group with members is Stable, one without is Empty.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
)

// newMemberJoinTimeout is how long a new member has to complete its
// first join (Kafka's fixed CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS).
const newMemberJoinTimeout = 5 * time.Minute

// Timer kinds of classic groups (grouptype.GroupTimer): the join and
// sync phases, and a member's (or pending member id's) deadline. The shard
// routes a timer of these kinds to Fire.
const (
	TimerJoin   = 'j'
	TimerSync   = 's'
	TimerMember = 'm'
)

// State is a classic group's state, as Kafka's ClassicGroupState.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

// String is the state as DescribeGroups and ListGroups spell it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	}
	return "Dead"
}

// Protocol is one (name, metadata) entry of a member's JoinGroup, in the
// member's order of preference.
type Protocol = grouptype.Protocol

// Parked is a request the group answers later.
type Parked struct {
	ID      machine.RequestID
	Version int16
}

// Member is a classic group member (Kafka's ClassicGroupMember).
type Member struct {
	ID         string
	Instance   *string // group.instance.id; nil for a dynamic member
	ClientID   string
	ClientHost string
	// rebalanceTimeout and sessionTimeout as the member asked (ms).
	RebalanceTimeout, SessionTimeout int32
	Protocols                        []Protocol
	Assignment                       []byte

	Join, Sync *Parked
	// isNew is set from the member's addition until the join phase it
	// was added in completes.
	isNew bool

	// expireAt is the member's deadline (session, or the new-member join
	// timeout); armedAt the deadline its timer is armed for (zero: not
	// armed). A heartbeat only moves expireAt; the timer, when it fires
	// early, re-arms itself for expireAt. So a heartbeat costs no timer
	// operation.
	expireAt, armedAt grouptype.Deadline
}

// MetadataFor returns the member's metadata for protocol name.
func (m *Member) MetadataFor(name string) []byte {
	for _, p := range m.Protocols {
		if p.Name == name {
			return p.Meta
		}
	}
	return nil
}

// SameProtocols is Kafka's ClassicGroupMember.matches: the same protocols,
// in the same order, with byte-equal metadata.
func (m *Member) SameProtocols(ps []Protocol) bool { return grouptype.SameProtocols(m.Protocols, ps) }

// Group is a classic group, or a simple group (one that only
// commits offsets: no protocol type, always Empty).
//
// Most groups of a large estate never have a member (commit-only, or
// empty with their offsets kept), so a group holds here only what every
// group needs, 48 bytes, and ext, made with its first member or pending
// member id, holds the rest. Such a group's record is not kept decoded
// either (about 100 bytes): it is what the group holds (recLive).
type Group struct {
	*grouptype.Entry

	State, PrevState State
	// rec says where the group's committed record is (its last record:
	// the durable part, set only by replay): none until the group's
	// existence is written, the live group's fields, or decoded in
	// ext.committed.
	rec recWhere
	// subscribedKnown: see ext.subscribed.
	subscribedKnown bool
	Generation      int32
	// stateTime is when the group last changed state, in Unix ms: all
	// that the record and retention read of it (a time.Time is 24
	// bytes).
	stateTime    int64
	ProtocolType string

	ext *ext
}

// recWhere is where a group's committed record is.
type recWhere uint8

const (
	recNone recWhere = iota
	// recLive: the record is {Entry.ID, ProtocolType, Generation,
	// stateTime} and nothing else. Only a group without an ext has it
	// (setCommitted), and whatever changes one of those fields first
	// makes one (pin): the record is then decoded.
	recLive
	recDecoded
)

// ext is the part of a classic group that only a group that has (or
// had) members or pending member ids needs.
type ext struct {
	Protocol string // chosen protocol; "" when none
	Leader   string // "" when none

	Members     map[string]*Member
	Static      map[string]string    // instance id → member id
	PendingJoin map[string]time.Time // ids handed out with MEMBER_ID_REQUIRED → deadline
	pendingSync map[string]bool
	awaiting    int // members with a parked JoinGroup
	supported   map[string]int

	// subscribed is the set of topics the members of the last completed
	// generation subscribe to, when known (Group.subscribedKnown: a
	// "consumer" group whose subscriptions parse); see Kafka's
	// ClassicGroup.computeSubscribedTopics. Nil when known and empty.
	subscribed map[string]bool

	// initial is the initial rebalance's barrier (from Empty), made when
	// one begins and dropped when it ends.
	initial *initialBarrier

	// rebalance is the rebalance under way, for events (events.go); nil
	// when none.
	rebalance *rebalance

	// committed is the committed record when it is decoded (rec ==
	// recDecoded): a record with members shares their strings with the
	// live members (shareLive).
	committed *record.ClassicGroup
}

// more returns the group's ext, making it if there is none.
func (g *Group) more() *ext {
	if g.ext == nil {
		g.ext = &ext{}
		if g.rec == recLive { // the live fields may now move on from the record
			v := g.liveRecord()
			g.ext.committed, g.rec = &v, recDecoded
		}
	}
	return g.ext
}

// pin keeps the group's record as it is before a change of its
// ProtocolType, Generation or stateTime.
func (g *Group) pin() {
	if g.rec == recLive {
		g.more()
	}
}

// liveRecord is the record of a group without members that the live
// fields make.
func (g *Group) liveRecord() record.ClassicGroup {
	return record.ClassicGroup{ID: g.ID, ProtocolType: g.ProtocolType, Generation: g.Generation, StateTimestamp: g.stateTime}
}

// Members is the group's members by id; nil before the first.
func (g *Group) Members() map[string]*Member {
	if g.ext == nil {
		return nil
	}
	return g.ext.Members
}

// Static maps the static members' instance ids to their member ids.
func (g *Group) Static() map[string]string {
	if g.ext == nil {
		return nil
	}
	return g.ext.Static
}

// PendingJoin holds the member ids handed out with MEMBER_ID_REQUIRED,
// each with its deadline.
func (g *Group) PendingJoin() map[string]time.Time {
	if g.ext == nil {
		return nil
	}
	return g.ext.PendingJoin
}

// Protocol is the chosen protocol; "" when none.
func (g *Group) Protocol() string {
	if g.ext == nil {
		return ""
	}
	return g.ext.Protocol
}

// Leader is the leader's member id; "" when none.
func (g *Group) Leader() string {
	if g.ext == nil {
		return ""
	}
	return g.ext.Leader
}

// SetProtocol sets the chosen protocol.
func (g *Group) SetProtocol(p string) {
	if p != "" || g.ext != nil { // "" is already so without an ext
		g.more().Protocol = p
	}
}

// SetLeader sets the leader's member id.
func (g *Group) SetLeader(id string) {
	if id != "" || g.ext != nil {
		g.more().Leader = id
	}
}

// pendingSyncs is the members the group waits on to sync.
func (g *Group) pendingSyncs() map[string]bool {
	if g.ext == nil {
		return nil
	}
	return g.ext.pendingSync
}

// subscribedSet is the topics the group subscribes to, when
// subscribedKnown.
func (g *Group) subscribedSet() map[string]bool {
	if g.ext == nil {
		return nil
	}
	return g.ext.subscribed
}

// awaitingJoin is how many members have a parked JoinGroup.
func (g *Group) awaitingJoin() int {
	if g.ext == nil {
		return 0
	}
	return g.ext.awaiting
}

// HasRecord reports whether the group's record has been replayed.
func (g *Group) HasRecord() bool { return g.rec != recNone }

// Committed returns the group's committed record, built afresh when the
// live fields hold it; false before the group's existence is written.
func (g *Group) Committed() (record.ClassicGroup, bool) {
	switch g.rec {
	case recLive:
		return g.liveRecord(), true
	case recDecoded:
		return *g.ext.committed, true
	}
	return record.ClassicGroup{}, false
}

// committedPtr is the committed record as a pointer (nil: none), for a
// rebalance's Before.
func (g *Group) committedPtr() *record.ClassicGroup {
	if g.rec == recDecoded {
		return g.ext.committed
	}
	if v, ok := g.Committed(); ok {
		return &v
	}
	return nil
}

// setCommitted makes v the group's committed record: the live fields of
// a group without an ext when they hold all of it (a record without
// members, protocol or leader, as most groups have), else decoded.
func (g *Group) setCommitted(v *record.ClassicGroup) {
	if g.ext == nil && len(v.Members) == 0 && v.Protocol == nil && v.Leader == nil &&
		v.ID == g.ID && v.ProtocolType == g.ProtocolType && v.Generation == g.Generation && v.StateTimestamp == g.stateTime {
		g.rec = recLive
		return
	}
	g.rec = recDecoded
	c := new(record.ClassicGroup) // a copy: v itself need not escape for a record the live fields hold
	*c = *v
	g.more().committed = c
}

// initialBarrier is the state of an initial rebalance's barrier:
// newMemberAdded is Kafka's flag; initialLeft is how long the barrier
// may still be extended (Kafka's rule); lastNew is when the last new
// member came and initialEnd the latest the barrier may close (the quiet
// window's rule); firstNew and arrivals are when the initial rebalance
// began and how many members have come since (its first included), for
// the adaptive barrier's mean gap.
type initialBarrier struct {
	newMemberAdded      bool
	initialLeft         time.Duration
	lastNew, initialEnd time.Time
	firstNew            time.Time
	arrivals            int
}

// barrier returns the group's initial barrier, making it if there is
// none (a zero barrier, as the fields it holds were before they moved
// here).
func (g *Group) barrier() *initialBarrier {
	x := g.more()
	if x.initial == nil {
		x.initial = &initialBarrier{}
	}
	return x.initial
}

// barrierIf returns the group's initial barrier, or nil.
func (g *Group) barrierIf() *initialBarrier {
	if g.ext == nil {
		return nil
	}
	return g.ext.initial
}

// NewGroup gives g an Empty classic part.
func NewGroup(g *grouptype.Entry, now time.Time) *Group {
	c := &Group{
		Entry:     g,
		State:     Empty,
		PrevState: Dead,
		stateTime: now.UnixMilli(),
	}
	g.Part = c
	return c
}

// EnsureMaps makes the group's member maps, before its first member or
// pending member id is added: a group that only ever has committed
// offsets (most groups of a large estate: commit-only, or empty with
// their offsets kept) never needs them, and five empty maps cost it more
// than its offsets. Reading and deleting from the nil maps is fine.
func (g *Group) EnsureMaps() {
	x := g.more()
	if x.Members != nil {
		return
	}
	x.Members, x.Static, x.PendingJoin = map[string]*Member{}, map[string]string{}, map[string]time.Time{}
	x.pendingSync, x.supported = map[string]bool{}, map[string]int{}
}

// Create registers a new classic group with a fresh id (soft until
// its record is emitted).
func (s *Type) Create(k grouptype.Key, now time.Time) *Group {
	g := s.h.Register(k)
	g.ID = s.h.NewGroupID(now)
	return NewGroup(g, now)
}

// Of returns the classic part of a group, or nil.
func Of(g *grouptype.Entry) *Group {
	if g == nil {
		return nil
	}
	c, _ := g.Part.(*Group)
	return c
}

// Replay applies a classic group record: a put sets the committed
// record (creating the part at load); a tombstone removes the classic
// part, and the group with it unless offsets or another part remain (a
// group converted to the consumer protocol keeps its offsets).
func (s *Type) Replay(k record.GroupKey, value []byte) error {
	gk := grouptype.Key{Tenant: k.Tenant, Name: k.Group}
	if value == nil {
		if g := s.h.Get(gk); Of(g) != nil {
			g.Part = nil
			s.h.Forget(g)
		}
		return nil
	}
	v, err := record.DecodeClassicGroup(value)
	if err != nil {
		return fmt.Errorf("group %q: %w", k.Group, err)
	}
	g := s.h.Register(gk)
	g.ID = v.ID
	c := Of(g)
	if c == nil { // at load: live, a handler makes the part before its record
		c = NewGroup(g, time.UnixMilli(v.StateTimestamp))
		// As Loaded will, so that the live fields can hold a record
		// without members (setCommitted).
		c.ProtocolType, c.Generation = v.ProtocolType, v.Generation
		if v.ProtocolType == "consumer" {
			c.ProtocolType = "consumer" // not the decoded copy: 8 bytes a group
		}
	}
	c.shareLive(&v)
	c.setCommitted(&v)
	return nil
}

// shareLive makes a freshly decoded record use the live group's copies of
// what both hold, so that a group keeps one copy of each member's ids,
// metadata and assignment rather than two (the record's own, decoded from
// its value, would otherwise stay beside the live member's for as long as
// the group is stable: about 300 B a member). At load there are no live
// members yet and the record's copies become the live ones (Loaded).
// Neither side changes these values in place: a change replaces them.
func (c *Group) shareLive(v *record.ClassicGroup) {
	if len(c.Members()) == 0 {
		return
	}
	for i := range v.Members {
		rm := &v.Members[i]
		m := c.ext.Members[rm.MemberID]
		if m == nil {
			continue
		}
		rm.MemberID = m.ID
		if rm.ClientID == m.ClientID {
			rm.ClientID = m.ClientID
		}
		if rm.ClientHost == m.ClientHost {
			rm.ClientHost = m.ClientHost
		}
		if rm.InstanceID != nil && m.Instance != nil && *rm.InstanceID == *m.Instance {
			rm.InstanceID = m.Instance
		}
		if v.Protocol != nil {
			if meta := m.MetadataFor(*v.Protocol); bytes.Equal(meta, rm.Subscription) {
				rm.Subscription = meta
			}
		}
		if bytes.Equal(m.Assignment, rm.Assignment) {
			rm.Assignment = m.Assignment
		}
	}
}

// EmitRecord writes the group's record from its live state.
func (s *Type) EmitRecord(g *Group) {
	s.emit(s.key(g.Key).Key(), g.snapshot().Encode())
}

// Loaded derives a loaded group's soft state from its committed
// record (§18.3): with members it is Stable, without it is Empty; every
// member gets a fresh session timer, and a group over the size limit
// rebalances.
func (s *Type) Loaded(g *Group, now time.Time) {
	if v, ok := g.Committed(); ok {
		g.stateTime = v.StateTimestamp
		g.ProtocolType, g.Generation = v.ProtocolType, v.Generation
		if v.Protocol != nil {
			g.SetProtocol(*v.Protocol)
		}
		if v.Leader != nil {
			g.SetLeader(*v.Leader)
		}
		for _, rm := range v.Members {
			m := &Member{
				ID:               rm.MemberID,
				Instance:         rm.InstanceID,
				ClientID:         rm.ClientID,
				ClientHost:       rm.ClientHost,
				RebalanceTimeout: rm.RebalanceTimeout,
				SessionTimeout:   rm.SessionTimeout,
				Protocols:        []Protocol{{Name: g.Protocol(), Meta: rm.Subscription}},
				Assignment:       rm.Assignment,
			}
			if m.RebalanceTimeout < 0 {
				m.RebalanceTimeout = m.SessionTimeout
			}
			g.EnsureMaps()
			g.ext.Members[m.ID] = m
			if m.Instance != nil {
				g.ext.Static[*m.Instance] = m.ID
			}
			g.CountProtocols(m, 1)
		}
		if len(g.Members()) > 0 {
			g.State, g.PrevState = Stable, Empty
		}
		g.ComputeSubscribed()
	}
	for _, m := range g.SortedMembers() {
		s.ArmSession(g, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
	}
	if len(g.Members()) > s.cfg.MaxSize {
		s.PrepareRebalance(g, now, grouptype.Trigger{Cause: observe.CauseOther}, fmt.Sprintf("Freshly-loaded group is over capacity (%d). Rebalancing in order to give a chance for consumers to commit offsets", s.cfg.MaxSize))
	}
}

// CheckAtRest: a group that is Stable or Empty holds exactly what its
// record says (but the state time, which a Stable group's record takes
// from CompletingRebalance, as Kafka's does).
func (g *Group) CheckAtRest() error {
	if g.State != Stable && g.State != Empty {
		return nil
	}
	if g.rec == recLive && g.ext != nil {
		return errors.New("classic group with an ext whose record is its live fields")
	}
	rec, ok := g.Committed()
	if !ok {
		if len(g.Members()) > 0 {
			return errors.New("classic group with members but no record")
		}
		return nil
	}
	live := g.snapshot()
	if g.State == Stable {
		live.StateTimestamp, rec.StateTimestamp = 0, 0
	}
	rec.Members = slices.Clone(rec.Members)
	for i, m := range rec.Members {
		if m.RebalanceTimeout < 0 { // as Loaded reads an old record
			rec.Members[i].RebalanceTimeout = m.SessionTimeout
		}
	}
	if !bytes.Equal(live.Encode(), rec.Encode()) {
		return fmt.Errorf("classic group at rest (%v) differs from its record:\nlive\n%s\nrecord\n%s", g.State,
			strings.Join(renderClassic(live), "\n"), strings.Join(renderClassic(rec), "\n"))
	}
	return nil
}

// DurableState renders what the group's record holds: nil before it is
// written.
func (g *Group) DurableState() []string {
	v, ok := g.Committed()
	if !ok {
		return nil
	}
	return renderClassic(v)
}

// renderClassic renders a classic record for DurableState.
func renderClassic(v record.ClassicGroup) []string {
	out := []string{fmt.Sprintf("  classic type=%q generation=%d protocol=%s leader=%s time=%d",
		v.ProtocolType, v.Generation, grouptype.Deref(v.Protocol), grouptype.Deref(v.Leader), v.StateTimestamp)}
	for _, m := range v.Members {
		out = append(out, fmt.Sprintf("  classic member %s inst=%s client=%s/%s rt=%d st=%d sub=%x assignment=%x",
			m.MemberID, grouptype.Deref(m.InstanceID), m.ClientID, m.ClientHost, m.RebalanceTimeout, m.SessionTimeout, m.Subscription, m.Assignment))
	}
	return out
}

// ArmSession sets member m's deadline to now+d and makes sure a timer
// will fire by then.
func (s *Type) ArmSession(g *Group, m *Member, now time.Time, d time.Duration) {
	m.expireAt = grouptype.DeadlineAt(now.Add(d))
	if m.armedAt.IsZero() || m.armedAt.After(m.expireAt) {
		m.armedAt = m.expireAt
		s.timer(grouptype.MemberTimer(TimerMember, g.Key, m.ID), m.expireAt.Time())
	}
}

// CancelSession forgets member m's deadline.
func (s *Type) CancelSession(g *Group, m *Member) {
	m.expireAt = 0
	if !m.armedAt.IsZero() {
		m.armedAt = 0
		s.timer(grouptype.MemberTimer(TimerMember, g.Key, m.ID), time.Time{})
	}
}

func (g *Group) transition(to State, now time.Time) {
	g.pin()
	g.PrevState, g.State, g.stateTime = g.State, to, now.UnixMilli()
	if g.ext == nil {
		return
	}
	g.ext.rebalance.Enter(classicPhase(to), now)
	if to != PreparingRebalance {
		g.ext.initial = nil // the barrier is read only while the join phase lasts
	}
}

// SortedMembers returns the members ordered by id, so that nothing that
// reaches a client or the store depends on map order.
func (g *Group) SortedMembers() []*Member {
	if len(g.Members()) == 0 {
		return nil // sort.Slice allocates even for none: a load asks each group
	}
	ms := make([]*Member, 0, len(g.Members()))
	for _, m := range g.Members() {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	return ms
}

// allJoined is Kafka's hasAllMembersJoined.
func (g *Group) allJoined() bool {
	return g.awaitingJoin() == len(g.Members()) && len(g.PendingJoin()) == 0
}

// RebalanceTimeout is the largest of the members' (ms).
func (g *Group) RebalanceTimeout() time.Duration {
	var max int32
	for _, m := range g.Members() {
		if m.RebalanceTimeout > max {
			max = m.RebalanceTimeout
		}
	}
	return time.Duration(max) * time.Millisecond
}

// acceptsProtocols is Kafka's ClassicGroup.supportsProtocols.
func (g *Group) acceptsProtocols(typ string, ps []Protocol) bool {
	if typ == "" || len(ps) == 0 {
		return false
	}
	if g.State == Empty {
		return true
	}
	if typ != g.ProtocolType {
		return false
	}
	for _, p := range ps {
		if g.supports(p.Name) == len(g.Members()) {
			return true
		}
	}
	return false
}

// CountProtocols counts member m's protocols (delta 1) or uncounts them
// (delta -1) in the protocols every member supports.
func (g *Group) CountProtocols(m *Member, delta int) {
	g.EnsureMaps()
	supported := g.ext.supported
	for _, p := range m.Protocols {
		supported[p.Name] += delta
		if supported[p.Name] <= 0 {
			delete(supported, p.Name)
		}
	}
}

// supports is how many members support protocol name.
func (g *Group) supports(name string) int {
	if g.ext == nil {
		return 0
	}
	return g.ext.supported[name]
}

// SelectProtocol is Kafka's ClassicGroup.selectProtocol: the candidates
// every member supports, each member voting for its first candidate. Ties
// go to the candidate earliest in the preference of the member with the
// smallest id, so the choice is deterministic.
func (g *Group) SelectProtocol() string {
	ms := g.SortedMembers()
	votes := map[string]int{}
	for _, m := range ms {
		for _, p := range m.Protocols {
			if g.supports(p.Name) == len(g.Members()) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	if len(ms) > 0 {
		for _, p := range ms[0].Protocols {
			if v, ok := votes[p.Name]; ok && v > bestVotes {
				best, bestVotes = p.Name, v
			}
		}
	}
	// A candidate the first member lists after its own vote can still
	// win on votes; the loop above saw every candidate, since a candidate
	// is supported by every member, the first included.
	return best
}

// ComputeSubscribed recomputes the topics the group subscribes to, from
// each member's metadata for the chosen protocol read as a consumer
// protocol Subscription (only its v0 prefix: version, topics).
func (g *Group) ComputeSubscribed() {
	g.subscribedKnown = false
	if g.ext != nil {
		g.ext.subscribed = nil
	}
	if g.ProtocolType != "consumer" {
		return
	}
	var set map[string]bool // nil while empty: a memberless group needs no ext
	for _, m := range g.Members() {
		topics, ok := subscriptionTopics(m.MetadataFor(g.Protocol()))
		if !ok {
			return
		}
		for _, t := range topics {
			if set == nil {
				set = map[string]bool{}
			}
			set[t] = true
		}
	}
	g.subscribedKnown = true
	if set != nil {
		g.more().subscribed = set
	}
}

// subscribedTo is Kafka's isSubscribedToTopic.
func (g *Group) subscribedTo(topic string) bool {
	if g.subscribedKnown {
		return g.subscribedSet()[topic]
	}
	return g.ProtocolType == "consumer"
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
func (g *Group) snapshot() record.ClassicGroup {
	v := record.ClassicGroup{
		ID:             g.ID,
		ProtocolType:   g.ProtocolType,
		Generation:     g.Generation,
		StateTimestamp: g.stateTime,
	}
	if len(g.Members()) > 0 {
		p, l := g.Protocol(), g.Leader()
		v.Protocol, v.Leader = &p, &l
	}
	for _, m := range g.SortedMembers() {
		v.Members = append(v.Members, record.ClassicMember{
			MemberID:         m.ID,
			InstanceID:       m.Instance,
			ClientID:         m.ClientID,
			ClientHost:       m.ClientHost,
			RebalanceTimeout: m.RebalanceTimeout,
			SessionTimeout:   m.SessionTimeout,
			Subscription:     m.MetadataFor(g.Protocol()),
			Assignment:       m.Assignment,
		})
	}
	return v
}
