package consumer

// KIP-848 consumer groups: the state, its records and their replay.
//
// A consumer group's durable state is Kafka's five record kinds: the group
// epoch, each member's metadata, the target assignment's epoch, each
// member's target, and each member's current assignment. Handlers emit
// them and Replay applies them, live and at load. Timers,
// deadlines and the catalog version last hashed are soft state.

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MemberState is a consumer group member's reconciliation state, as
// Kafka's MemberState (the values are stored).
type MemberState int8

// The member states.
const (
	MemberStable     MemberState = 0
	MemberUnrevoked  MemberState = 1 // must give up partitions first
	MemberUnreleased MemberState = 2 // waits for partitions others own
	memberUnknown    MemberState = 127
)

func (s MemberState) String() string {
	switch s {
	case MemberStable:
		return "stable"
	case MemberUnrevoked:
		return "unrevoked"
	case MemberUnreleased:
		return "unreleased"
	}
	return "unknown"
}

// Member epochs with a meaning of their own (Kafka's
// ConsumerGroupHeartbeatRequest constants).
const (
	LeaveEpoch       = -1 // a dynamic member leaves
	LeaveStaticEpoch = -2 // a static member leaves for a while
)

// Assignment is a member's partitions: topics by ascending id, each with its ascending
// partitions, none empty. A sorted slice, not a map: a member holds two or
// three of them (assigned, revoking, target), most with one or two topics,
// and a map of one entry costs several times the slice (issue 17's memory
// per member). It is the records' own form, so a record's partitions are
// shared, not copied.
type Assignment []record.TopicPartitions

// get returns the partitions of topic id (nil if none).
func (a Assignment) get(id [16]byte) []int32 {
	if i, ok := a.find(id); ok {
		return a[i].Partitions
	}
	return nil
}

func (a Assignment) find(id [16]byte) (int, bool) {
	return slices.BinarySearchFunc(a, id, func(t record.TopicPartitions, id [16]byte) int {
		return bytes.Compare(t.TopicID[:], id[:])
	})
}

func (a Assignment) count() int {
	n := 0
	for _, t := range a {
		n += len(t.Partitions)
	}
	return n
}

func (a Assignment) Has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a.get(id), p)
	return ok
}

func (a Assignment) equal(b Assignment) bool {
	return slices.EqualFunc(a, b, func(x, y record.TopicPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

// Records is a in record form: itself (topics sorted by id), never nil.
func (a Assignment) Records() []record.TopicPartitions {
	if a == nil {
		return []record.TopicPartitions{}
	}
	return a
}

// tpsOf is the assignment of records (kept, not copied), its empty
// topics left out and its topics sorted if they were not.
func tpsOf(rs []record.TopicPartitions) Assignment {
	out := Assignment(rs)
	if slices.ContainsFunc(rs, func(t record.TopicPartitions) bool { return len(t.Partitions) == 0 }) {
		out = slices.DeleteFunc(slices.Clone(rs), func(t record.TopicPartitions) bool { return len(t.Partitions) == 0 })
	}
	if !slices.IsSortedFunc(out, compareTopics) {
		out = slices.Clone(out)
		slices.SortFunc(out, compareTopics)
	}
	return slices.Clip(out)
}

func compareTopics(x, y record.TopicPartitions) int { return bytes.Compare(x.TopicID[:], y.TopicID[:]) }

// AssignmentFrom makes an assignment of a map of topic id → ascending
// partitions, what the functions that build one piece by piece fill.
func AssignmentFrom(m map[[16]byte][]int32) Assignment {
	out := make(Assignment, 0, len(m))
	for id, ps := range m {
		if len(ps) > 0 {
			out = append(out, record.TopicPartitions{TopicID: id, Partitions: ps})
		}
	}
	slices.SortFunc(out, compareTopics)
	return out
}

// tp names one partition.
type tp struct {
	ID [16]byte
	p  int32
}

// Member is a consumer group member (Kafka's ConsumerGroupMember).
type Member struct {
	ID string
	// From the member metadata record.
	Instance, Rack   *string
	ClientID         string
	ClientHost       string
	Topics           []string // sorted
	Regex            string
	RebalanceTimeout int32 // ms
	Assignor         string
	// Classic is set for a member that speaks the classic protocol
	// (package migration serves it); nil for a consumer-protocol member.
	Classic *ClassicMeta

	// From the current assignment record.
	Epoch, PrevEpoch int32
	State            MemberState
	Assigned         Assignment
	Revoking         Assignment

	// Soft state: the session deadline (and the deadline its timer is
	// armed for), and the revocation deadline with the epoch it is for.
	expireAt, armedAt grouptype.Deadline
	// session is the session timeout of the group's config at the
	// member's last heartbeat; 0 for the shard's default (after a load,
	// until the next heartbeat).
	session     time.Duration
	revokeBy    time.Time
	revokeEpoch int32
	// A classic member's join and sync deadlines (package migration);
	// zero when not armed.
	JoinBy, SyncBy time.Time
}

// Group is a KIP-848 consumer group (Kafka's ConsumerGroup).
type Group struct {
	*grouptype.Entry

	Epoch       int32
	metaHash    uint64
	TargetEpoch int32
	targetTime  int64 // Unix ms the assignor last ran
	Members     map[string]*Member
	Static      map[string]string // instance id → member id
	Target      map[string]Assignment
	// owners is Kafka's currentPartitionEpoch: the epoch of the member
	// that owns (or is revoking) each partition.
	owners map[tp]int32

	// hashAt is the catalog version metaHash was last checked against
	// (soft).
	hashAt uint64
	// rebalance is the rebalance under way, for events (soft; see
	// events.go); nil when none.
	Rebalance *rebalance
}

// NewGroup gives g an empty consumer part.
func NewGroup(g *grouptype.Entry) *Group {
	c := &Group{
		Entry:   g,
		Members: map[string]*Member{},
		Static:  map[string]string{},
		Target:  map[string]Assignment{},
		owners:  map[tp]int32{},
	}
	g.Part = c
	return c
}

// DurableState renders what the group's records hold.
func (g *Group) DurableState() []string {
	out := []string{fmt.Sprintf("  consumer epoch=%d hash=%x target=%d@%d", g.Epoch, g.metaHash, g.TargetEpoch, g.targetTime)}
	for _, m := range g.SortedMembers() {
		out = append(out, fmt.Sprintf("  member %s inst=%v rack=%v client=%s/%s topics=%v regex=%q rt=%d assignor=%q epoch=%d/%d state=%v assigned=%v revoking=%v",
			m.ID, grouptype.Deref(m.Instance), grouptype.Deref(m.Rack), m.ClientID, m.ClientHost, m.Topics, m.Regex, m.RebalanceTimeout, m.Assignor,
			m.Epoch, m.PrevEpoch, m.State, m.Assigned.Records(), m.Revoking.Records()))
		if c := m.Classic; c != nil {
			out = append(out, fmt.Sprintf("  member %s classic session=%d protocols=%v", m.ID, c.SessionTimeout, c.Protocols))
		}
	}
	for _, id := range grouptype.SortedKeys(g.Target) {
		out = append(out, fmt.Sprintf("  target %s %v", id, g.Target[id].Records()))
	}
	owners := make([]string, 0, len(g.owners))
	for p, e := range g.owners {
		owners = append(owners, fmt.Sprintf("%x/%d@%d", p.ID, p.p, e))
	}
	slices.Sort(owners)
	out = append(out, fmt.Sprintf("  owners %v", owners))
	return out
}

// Owned reports whether a member owns (or is revoking) partition p of
// topic id.
func (g *Group) Owned(id [16]byte, p int32) bool {
	_, ok := g.owners[tp{id, p}]
	return ok
}

// State derives the group state, as Kafka's ConsumerGroup: it is never
// stored.
func (g *Group) State() string {
	switch {
	case len(g.Members) == 0:
		return "Empty"
	case g.Epoch > g.TargetEpoch:
		return "Assigning"
	}
	for _, m := range g.Members {
		if m.State != MemberStable || m.Epoch != g.TargetEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (g *Group) SortedMembers() []*Member {
	out := make([]*Member, 0, len(g.Members))
	for _, id := range grouptype.SortedKeys(g.Members) {
		out = append(out, g.Members[id])
	}
	return out
}

// release forgets m's ownership of its partitions.
func (g *Group) release(m *Member) {
	for _, a := range []Assignment{m.Assigned, m.Revoking} {
		for _, at := range a {
			id, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				delete(g.owners, tp{id, p})
			}
		}
	}
}

// own records m's ownership of its partitions at its epoch.
func (g *Group) own(m *Member) {
	for _, a := range []Assignment{m.Assigned, m.Revoking} {
		for _, at := range a {
			id, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				g.owners[tp{id, p}] = m.Epoch
			}
		}
	}
}

// SubscribedTopics resolves every member's subscription against the
// catalog: topic names and regex matches.
func (g *Group) SubscribedTopics(cat *machine.Catalog) map[string]bool {
	out := map[string]bool{}
	for _, m := range g.Members {
		for _, t := range m.subscription(cat) {
			out[t] = true
		}
	}
	return out
}

// subscription is the member's topics: its names, plus the catalog's
// topics its regex matches, sorted and without duplicates.
func (m *Member) subscription(cat *machine.Catalog) []string {
	if m.Regex == "" || cat == nil {
		return m.Topics
	}
	re, err := regexp.Compile(m.Regex)
	if err != nil {
		return m.Topics
	}
	out := slices.Clone(m.Topics)
	for _, n := range cat.Names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MetadataHash summarises the subscribed topics that exist: names, ids and
// partition counts. It changes when a subscribed topic is created,
// deleted, re-created or grows: what bumps the group epoch in Kafka.
func MetadataHash(topics map[string]bool, cat *machine.Catalog) uint64 {
	h := fnv.New64a()
	for _, n := range grouptype.SortedKeys(topics) {
		if cat == nil {
			break
		}
		t, ok := cat.ByName[n]
		if !ok {
			continue
		}
		fmt.Fprintf(h, "%s\x00%x\x00%d\x00", n, t.ID, t.Partitions)
	}
	return h.Sum64()
}

// Record keys.

func (s *Type) memberKey(kind record.Kind, k grouptype.Key, member string) []byte {
	return record.MemberKey{GroupKey: s.key(k), Kind: kind, Member: member}.Key()
}

func (s *Type) EmitGroupEpoch(g *Group, epoch int32, hash uint64) {
	v := record.ConsumerGroup{ID: g.ID, Epoch: epoch, MetadataHash: hash}
	s.emit(s.key(g.Key).KindKey(record.KindConsumerGroup), v.Encode())
}

func (s *Type) EmitMember(g *Group, m *Member) {
	v := record.ConsumerMember{
		InstanceID: m.Instance, RackID: m.Rack, ClientID: m.ClientID, ClientHost: m.ClientHost,
		Topics: m.Topics, Regex: m.Regex, RebalanceTimeout: m.RebalanceTimeout, Assignor: m.Assignor,
		Classic: m.Classic.record(),
	}
	s.emit(s.memberKey(record.KindConsumerMember, g.Key, m.ID), v.Encode())
}

func (s *Type) EmitTarget(g *Group, id string, a Assignment) {
	s.emit(s.memberKey(record.KindConsumerTarget, g.Key, id), record.ConsumerTarget{Topics: a.Records()}.Encode())
}

func (s *Type) EmitTargetEpoch(g *Group, epoch int32, at int64) {
	v := record.ConsumerTargetEpoch{Epoch: epoch, Timestamp: at}
	s.emit(s.key(g.Key).KindKey(record.KindConsumerTargetEpoch), v.Encode())
}

// EmitRemoveMember writes a member's tombstones in Kafka's order: current
// assignment, target, metadata.
func (s *Type) EmitRemoveMember(g *Group, id string) {
	s.emit(s.memberKey(record.KindConsumerCurrent, g.Key, id), nil)
	s.emit(s.memberKey(record.KindConsumerTarget, g.Key, id), nil)
	s.emit(s.memberKey(record.KindConsumerMember, g.Key, id), nil)
}

// EmitRemove writes the tombstones of the whole consumer group (not
// its offsets): members, target epoch, group epoch. The last takes the
// consumer part away.
func (s *Type) EmitRemove(g *Group) {
	for _, id := range grouptype.SortedKeys(g.Members) {
		s.EmitRemoveMember(g, id)
	}
	for _, id := range grouptype.SortedKeys(g.Target) {
		s.emit(s.memberKey(record.KindConsumerTarget, g.Key, id), nil)
	}
	s.emit(s.key(g.Key).KindKey(record.KindConsumerTargetEpoch), nil)
	s.emit(s.key(g.Key).KindKey(record.KindConsumerGroup), nil)
}

// IsKind reports whether kind is a KIP-848 record.
func IsKind(kind record.Kind) bool {
	switch kind {
	case record.KindConsumerGroup, record.KindConsumerMember, record.KindConsumerTargetEpoch,
		record.KindConsumerTarget, record.KindConsumerCurrent:
		return true
	}
	return false
}

// Replay applies a KIP-848 record.
func (s *Type) Replay(kind record.Kind, k any, value []byte) error {
	switch kind {
	case record.KindConsumerGroup:
		gk := k.(record.GroupKey)
		key := grouptype.Key{Tenant: gk.Tenant, Name: gk.Group}
		if value == nil {
			if g := s.h.Get(key); Of(g) != nil {
				g.Part = nil
				s.forget(g)
			}
			return nil
		}
		v, err := record.DecodeConsumerGroup(value)
		if err != nil {
			return fmt.Errorf("consumer group %q: %w", gk.Group, err)
		}
		g := s.entry(key)
		g.ID = v.ID
		c := Of(g)
		if c == nil {
			c = NewGroup(g)
		}
		c.Epoch, c.metaHash = v.Epoch, v.MetadataHash
		return nil
	case record.KindConsumerTargetEpoch:
		gk := k.(record.GroupKey)
		g := s.group(gk.Tenant, gk.Group)
		if g == nil {
			return nil
		}
		if value == nil {
			g.TargetEpoch, g.targetTime = 0, 0
			return nil
		}
		v, err := record.DecodeConsumerTargetEpoch(value)
		if err != nil {
			return fmt.Errorf("consumer group %q target epoch: %w", gk.Group, err)
		}
		g.TargetEpoch, g.targetTime = v.Epoch, v.Timestamp
		return nil
	}
	mk := k.(record.MemberKey)
	g := s.group(mk.Tenant, mk.Group)
	if g == nil {
		// The group's tombstone came first (a deleted group): nothing
		// to apply to.
		return nil
	}
	switch kind {
	case record.KindConsumerMember:
		m := g.Members[mk.Member]
		if value == nil {
			if m != nil {
				g.release(m)
				if m.Instance != nil && g.Static[*m.Instance] == m.ID {
					delete(g.Static, *m.Instance)
				}
				delete(g.Members, mk.Member)
			}
			return nil
		}
		v, err := record.DecodeConsumerMember(value)
		if err != nil {
			return fmt.Errorf("consumer member %q/%q: %w", mk.Group, mk.Member, err)
		}
		if m == nil {
			m = &Member{ID: mk.Member, Assigned: Assignment{}, Revoking: Assignment{}}
			g.Members[mk.Member] = m
		}
		if m.Instance != nil && g.Static[*m.Instance] == m.ID {
			delete(g.Static, *m.Instance)
		}
		m.Instance, m.Rack, m.ClientID, m.ClientHost = v.InstanceID, v.RackID, v.ClientID, v.ClientHost
		m.Topics, m.Regex, m.RebalanceTimeout, m.Assignor = v.Topics, v.Regex, v.RebalanceTimeout, v.Assignor
		m.Classic = classicMetaOf(v.Classic)
		if m.Instance != nil {
			g.Static[*m.Instance] = m.ID
		}
	case record.KindConsumerTarget:
		if value == nil {
			delete(g.Target, mk.Member)
			return nil
		}
		v, err := record.DecodeConsumerTarget(value)
		if err != nil {
			return fmt.Errorf("consumer target %q/%q: %w", mk.Group, mk.Member, err)
		}
		g.Target[mk.Member] = tpsOf(v.Topics)
	case record.KindConsumerCurrent:
		m := g.Members[mk.Member]
		if value == nil {
			if m != nil {
				g.release(m)
				m.Epoch, m.PrevEpoch, m.State = LeaveEpoch, LeaveEpoch, MemberStable
				m.Assigned, m.Revoking = Assignment{}, Assignment{}
			}
			return nil
		}
		v, err := record.DecodeConsumerCurrent(value)
		if err != nil {
			return fmt.Errorf("consumer current %q/%q: %w", mk.Group, mk.Member, err)
		}
		if m == nil {
			m = &Member{ID: mk.Member}
			g.Members[mk.Member] = m
		}
		g.release(m)
		m.Epoch, m.PrevEpoch, m.State = v.MemberEpoch, v.PreviousMemberEpoch, MemberState(v.State)
		m.Assigned, m.Revoking = tpsOf(v.Assigned), tpsOf(v.Revoking)
		g.own(m)
	}
	return nil
}

// Loaded gives every loaded member a fresh session timer, and a
// member that must revoke a fresh rebalance timeout, as Kafka on load. A
// rebalance under way goes on, though when it started is not known.
func (s *Type) Loaded(g *Group, now time.Time) {
	g.Rebalance = nil
	if g.Reconciling() {
		g.Rebalance = &rebalance{} // when and why it started are not known
	}
	for _, m := range g.SortedMembers() {
		s.ArmSession(g, m, now)
		s.armRevocation(g, m, now)
	}
}

// ValidateCommit is Kafka's ConsumerGroup.validateOffsetCommit: a
// commit with a negative epoch to a group with no members is an admin's;
// otherwise the member must exist and send its current epoch.
func (g *Group) ValidateCommit(r *kmsg.OffsetCommitRequest) int16 {
	if r.Generation < 0 && len(g.Members) == 0 {
		return 0
	}
	m := g.Members[r.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if m.Classic != nil {
		// A classic member commits with any version and the generation
		// its last JoinGroup gave it (mixed §4.8).
		if r.Generation != m.Epoch {
			return kerr.IllegalGeneration.Code
		}
		return 0
	}
	if r.Version < 9 {
		// A consumer-protocol member commits with v9+ (KIP-848).
		return kerr.UnsupportedVersion.Code
	}
	if r.Generation != m.Epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// ValidateFetch is Kafka's ConsumerGroup.validateOffsetFetch for
// OffsetFetch v9+: a request naming a member must name a current one.
func (g *Group) ValidateFetch(memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.Members[id]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if epoch != m.Epoch {
		if m.Classic != nil {
			return kerr.IllegalGeneration.Code
		}
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// ClassicMeta is a classic member's part of a consumer group member
// (Kafka's ClassicMemberMetadata): its session timeout and its JoinGroup's
// protocols, all of them, in its order.
type ClassicMeta struct {
	SessionTimeout int32 // ms
	Protocols      []grouptype.Protocol
}

func (c *ClassicMeta) record() *record.ClassicMeta {
	if c == nil {
		return nil
	}
	out := &record.ClassicMeta{SessionTimeout: c.SessionTimeout, Protocols: make([]record.ClassicProtocol, len(c.Protocols))}
	for i, p := range c.Protocols {
		out.Protocols[i] = record.ClassicProtocol{Name: p.Name, Metadata: p.Meta}
	}
	return out
}

func classicMetaOf(r *record.ClassicMeta) *ClassicMeta {
	if r == nil {
		return nil
	}
	out := &ClassicMeta{SessionTimeout: r.SessionTimeout, Protocols: make([]grouptype.Protocol, len(r.Protocols))}
	for i, p := range r.Protocols {
		out.Protocols[i] = grouptype.Protocol{Name: p.Name, Meta: p.Metadata}
	}
	return out
}

func (c *ClassicMeta) equal(d *ClassicMeta) bool {
	if c == nil || d == nil {
		return c == d
	}
	return c.SessionTimeout == d.SessionTimeout && grouptype.SameProtocols(c.Protocols, d.Protocols)
}

// First is the member's first protocol: the one it is told it got, and
// whose metadata version its assignment is written at (mixed §1.1).
func (c *ClassicMeta) First() grouptype.Protocol {
	if len(c.Protocols) == 0 {
		return grouptype.Protocol{}
	}
	return c.Protocols[0]
}
