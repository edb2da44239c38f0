package share

// KIP-932 share groups: the state, its records and their replay.
//
// A share group's durable state is Kafka's share group records: the group
// epoch, each member's metadata, the target assignment's epoch, each
// member's target, each member's current assignment, and (by group name,
// see Type.parts) the share-partition state the group may hold. Handlers
// emit them and Replay applies them, live and at load. Timers, deadlines,
// the catalog version last hashed and a rebalance's story are soft state.

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
)

// LeaveEpoch is the member epoch of a heartbeat that leaves the group
// (Kafka's ShareGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH).
const LeaveEpoch = -1

// Assignment is a member's partitions: topics by ascending id, each with
// its ascending partitions, none empty. It is the records' own form, so a
// record's partitions are shared, not copied.
type Assignment []record.TopicPartitions

// assignmentOf is the assignment of records (kept if already in form).
func assignmentOf(rs []record.TopicPartitions) Assignment {
	clean := slices.IsSortedFunc(rs, byTopicID) && !slices.ContainsFunc(rs, func(t record.TopicPartitions) bool { return len(t.Partitions) == 0 })
	if clean {
		return Assignment(rs)
	}
	out := slices.DeleteFunc(slices.Clone(rs), func(t record.TopicPartitions) bool { return len(t.Partitions) == 0 })
	slices.SortFunc(out, byTopicID)
	return out
}

func byTopicID(a, b record.TopicPartitions) int { return bytes.Compare(a.TopicID[:], b.TopicID[:]) }

// Records is a in record form, never nil.
func (a Assignment) Records() []record.TopicPartitions {
	if a == nil {
		return []record.TopicPartitions{}
	}
	return a
}

// Equal reports whether a and b hold the same partitions.
func (a Assignment) Equal(b Assignment) bool {
	return slices.EqualFunc(a, b, func(x, y record.TopicPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

// Count is the number of partitions.
func (a Assignment) Count() int {
	n := 0
	for _, t := range a {
		n += len(t.Partitions)
	}
	return n
}

// Has reports whether a holds partition p of topic id.
func (a Assignment) Has(id [16]byte, p int32) bool {
	i, ok := slices.BinarySearchFunc(a, id, func(t record.TopicPartitions, id [16]byte) int {
		return bytes.Compare(t.TopicID[:], id[:])
	})
	if !ok {
		return false
	}
	_, ok = slices.BinarySearch(a[i].Partitions, p)
	return ok
}

// only keeps a's topics whose ids keep says.
func (a Assignment) only(keep func(id [16]byte) bool) Assignment {
	if !slices.ContainsFunc(a, func(t record.TopicPartitions) bool { return !keep(t.TopicID) }) {
		return a
	}
	return slices.DeleteFunc(slices.Clone(a), func(t record.TopicPartitions) bool { return !keep(t.TopicID) })
}

// Member is a share group member (Kafka's ShareGroupMember).
type Member struct {
	ID string
	// From the member metadata record.
	Rack       *string
	ClientID   string
	ClientHost string
	Topics     []string // sorted, distinct

	// From the current assignment record.
	Epoch, PrevEpoch int32
	Assigned         Assignment

	// Soft state: the session deadline and the deadline its timer is
	// armed for; session is the group config's session timeout at the
	// member's last heartbeat (0: the shard's, after a load).
	expireAt, armedAt grouptype.Deadline
	session           time.Duration
}

// Group is a share group (Kafka's ShareGroup).
type Group struct {
	*grouptype.Entry

	Epoch       int32
	metaHash    uint64
	TargetEpoch int32
	Members     map[string]*Member
	Target      map[string]Assignment

	// hashAt is the catalog version metaHash was last checked against
	// (soft); rebalance is the rebalance under way, for events (soft;
	// events.go), nil when none.
	hashAt    uint64
	rebalance *rebalance
}

// NewGroup gives g an empty share part.
func NewGroup(g *grouptype.Entry) *Group {
	c := &Group{Entry: g, Members: map[string]*Member{}, Target: map[string]Assignment{}}
	g.Part = c
	return c
}

// State derives the group state, as Kafka's ShareGroup: Empty without
// members, else Stable (a share group has no other state: its members
// take their target at once).
func (g *Group) State() string {
	if len(g.Members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// SortedMembers returns the members by id.
func (g *Group) SortedMembers() []*Member {
	out := make([]*Member, 0, len(g.Members))
	for _, id := range grouptype.SortedKeys(g.Members) {
		out = append(out, g.Members[id])
	}
	return out
}

// DurableState renders what the group's records hold.
func (g *Group) DurableState() []string {
	out := []string{fmt.Sprintf("  share epoch=%d hash=%x target=%d", g.Epoch, g.metaHash, g.TargetEpoch)}
	for _, m := range g.SortedMembers() {
		out = append(out, fmt.Sprintf("  member %s rack=%v client=%s/%s topics=%v epoch=%d/%d assigned=%v",
			m.ID, grouptype.Deref(m.Rack), m.ClientID, m.ClientHost, m.Topics, m.Epoch, m.PrevEpoch, m.Assigned.Records()))
	}
	for _, id := range grouptype.SortedKeys(g.Target) {
		out = append(out, fmt.Sprintf("  target %s %v", id, g.Target[id].Records()))
	}
	return out
}

// Check reports a broken invariant of the group's durable state: a
// member epoch ahead of the target's, a target ahead of the group's, or
// a target for no member.
func (g *Group) Check() error {
	if g.TargetEpoch > g.Epoch {
		return fmt.Errorf("share group: target epoch %d ahead of the group epoch %d", g.TargetEpoch, g.Epoch)
	}
	for _, m := range g.SortedMembers() {
		if m.Epoch > g.TargetEpoch {
			return fmt.Errorf("share member %s: epoch %d ahead of the target epoch %d", m.ID, m.Epoch, g.TargetEpoch)
		}
	}
	for _, id := range grouptype.SortedKeys(g.Target) {
		if g.Members[id] == nil {
			return fmt.Errorf("share group: a target for %s, who is no member", id)
		}
	}
	return nil
}

// SubscribedTopics is every member's subscription.
func (g *Group) SubscribedTopics() map[string]bool {
	out := map[string]bool{}
	for _, m := range g.Members {
		for _, t := range m.Topics {
			out[t] = true
		}
	}
	return out
}

// metadataHash summarises the subscribed topics that exist: names, ids
// and partition counts. It changes when a subscribed topic is created,
// deleted, re-created or grows: what bumps the group epoch in Kafka.
func metadataHash(topics map[string]bool, cat *machine.Catalog) uint64 {
	h := fnv.New64a()
	if cat != nil {
		for _, n := range grouptype.SortedKeys(topics) {
			if t, ok := cat.ByName[n]; ok {
				fmt.Fprintf(h, "%s\x00%x\x00%d\x00", n, t.ID, t.Partitions)
			}
		}
	}
	return h.Sum64()
}

// Partitions is a group name's ShareGroupPartitions record: the
// share-partition state the group may hold (Initialized) and the state
// of a deleted group (or topic) left to drop (Deleting), each by topic
// id.
type Partitions struct {
	Initialized, Deleting map[[16]byte]record.ShareStateTopic
}

func (p *Partitions) empty() bool { return len(p.Initialized) == 0 && len(p.Deleting) == 0 }

func (p *Partitions) record() record.ShareGroupPartitions {
	list := func(m map[[16]byte]record.ShareStateTopic) []record.ShareStateTopic {
		out := make([]record.ShareStateTopic, 0, len(m))
		for _, id := range sortedIDs(m) {
			out = append(out, m[id])
		}
		return out
	}
	return record.ShareGroupPartitions{Initialized: list(p.Initialized), Deleting: list(p.Deleting)}
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// Record keys.

func (s *Type) memberKey(kind record.Kind, k grouptype.Key, member string) []byte {
	return record.MemberKey{GroupKey: s.key(k), Kind: kind, Member: member}.Key()
}

func (s *Type) emitGroupEpoch(g *Group, epoch int32, hash uint64) {
	s.emit(s.key(g.Key).KindKey(record.KindShareGroup), record.ShareGroup{ID: g.ID, Epoch: epoch, MetadataHash: hash}.Encode())
}

func (s *Type) emitMember(g *Group, m *Member) {
	v := record.ShareMember{RackID: m.Rack, ClientID: m.ClientID, ClientHost: m.ClientHost, Topics: m.Topics}
	s.emit(s.memberKey(record.KindShareMember, g.Key, m.ID), v.Encode())
}

func (s *Type) emitTarget(g *Group, id string, a Assignment) {
	s.emit(s.memberKey(record.KindShareTarget, g.Key, id), record.ShareTarget{Topics: a.Records()}.Encode())
}

func (s *Type) emitTargetEpoch(g *Group, epoch int32) {
	s.emit(s.key(g.Key).KindKey(record.KindShareTargetEpoch), record.ShareTargetEpoch{Epoch: epoch}.Encode())
}

func (s *Type) emitCurrent(g *Group, id string, epoch, prev int32, a Assignment) {
	v := record.ShareCurrent{MemberEpoch: epoch, PreviousMemberEpoch: prev, Assigned: a.Records()}
	s.emit(s.memberKey(record.KindShareCurrent, g.Key, id), v.Encode())
}

func (s *Type) emitPartitions(k grouptype.Key, p *Partitions) {
	key := s.key(k).KindKey(record.KindShareGroupPartitions)
	if p == nil || p.empty() {
		s.emit(key, nil)
		return
	}
	s.emit(key, p.record().Encode())
}

// emitRemoveMember writes a member's tombstones in Kafka's order
// (shareGroupFenceMember): current assignment, target, metadata.
func (s *Type) emitRemoveMember(g *Group, id string) {
	s.emit(s.memberKey(record.KindShareCurrent, g.Key, id), nil)
	s.emit(s.memberKey(record.KindShareTarget, g.Key, id), nil)
	s.emit(s.memberKey(record.KindShareMember, g.Key, id), nil)
}

// IsKind reports whether kind is a share group record.
func IsKind(kind record.Kind) bool { return record.IsShareGroupKind(kind) }

// Replay applies a share group record.
func (s *Type) Replay(kind record.Kind, k any, value []byte) error {
	switch kind {
	case record.KindShareGroup:
		gk := k.(record.GroupKey)
		key := grouptype.Key{Tenant: gk.Tenant, Name: gk.Group}
		if value == nil {
			if g := s.h.Get(key); Of(g) != nil {
				g.Part = nil
				s.h.Forget(g)
			}
			return nil
		}
		v, err := record.DecodeShareGroup(value)
		if err != nil {
			return fmt.Errorf("share group %q: %w", gk.Group, err)
		}
		e := s.h.Register(key)
		if e.Part != nil && Of(e) == nil {
			return fmt.Errorf("share group %q: the group is of another type", gk.Group)
		}
		e.ID = v.ID
		g := Of(e)
		if g == nil {
			g = NewGroup(e)
		}
		g.Epoch, g.metaHash = v.Epoch, v.MetadataHash
		return nil
	case record.KindShareGroupPartitions:
		gk := k.(record.GroupKey)
		key := grouptype.Key{Tenant: gk.Tenant, Name: gk.Group}
		if value == nil {
			delete(s.parts, key)
			return nil
		}
		v, err := record.DecodeShareGroupPartitions(value)
		if err != nil {
			return fmt.Errorf("share group %q partitions: %w", gk.Group, err)
		}
		p := &Partitions{Initialized: map[[16]byte]record.ShareStateTopic{}, Deleting: map[[16]byte]record.ShareStateTopic{}}
		for _, t := range append(v.Initializing, v.Initialized...) {
			p.Initialized[t.TopicID] = t
		}
		for _, t := range v.Deleting {
			p.Deleting[t.TopicID] = t
		}
		s.parts[key] = p
		return nil
	case record.KindShareTargetEpoch:
		gk := k.(record.GroupKey)
		g := s.group(gk.Tenant, gk.Group)
		if g == nil {
			return nil
		}
		if value == nil {
			g.TargetEpoch = 0
			return nil
		}
		v, err := record.DecodeShareTargetEpoch(value)
		if err != nil {
			return fmt.Errorf("share group %q target epoch: %w", gk.Group, err)
		}
		g.TargetEpoch = v.Epoch
		return nil
	}
	mk := k.(record.MemberKey)
	g := s.group(mk.Tenant, mk.Group)
	if g == nil {
		return nil // the group's tombstone came first: nothing to apply to
	}
	switch kind {
	case record.KindShareMember:
		if value == nil {
			delete(g.Members, mk.Member)
			return nil
		}
		v, err := record.DecodeShareMember(value)
		if err != nil {
			return fmt.Errorf("share member %q/%q: %w", mk.Group, mk.Member, err)
		}
		m := g.Members[mk.Member]
		if m == nil {
			m = &Member{ID: mk.Member}
			g.Members[mk.Member] = m
		}
		m.Rack, m.ClientID, m.ClientHost, m.Topics = v.RackID, v.ClientID, v.ClientHost, v.Topics
	case record.KindShareTarget:
		if value == nil {
			delete(g.Target, mk.Member)
			return nil
		}
		v, err := record.DecodeShareTarget(value)
		if err != nil {
			return fmt.Errorf("share target %q/%q: %w", mk.Group, mk.Member, err)
		}
		g.Target[mk.Member] = assignmentOf(v.Topics)
	case record.KindShareCurrent:
		m := g.Members[mk.Member]
		if value == nil {
			if m != nil {
				m.Epoch, m.PrevEpoch, m.Assigned = LeaveEpoch, LeaveEpoch, nil
			}
			return nil
		}
		v, err := record.DecodeShareCurrent(value)
		if err != nil {
			return fmt.Errorf("share current %q/%q: %w", mk.Group, mk.Member, err)
		}
		if m == nil {
			m = &Member{ID: mk.Member}
			g.Members[mk.Member] = m
		}
		m.Epoch, m.PrevEpoch, m.Assigned = v.MemberEpoch, v.PreviousMemberEpoch, assignmentOf(v.Assigned)
	default:
		return fmt.Errorf("share: record kind %d is not a share group's", kind)
	}
	return nil
}

// Loaded gives every loaded member a fresh session timer, as Kafka on
// load; a target behind the group epoch is a rebalance under way whose
// start is not known.
func (s *Type) Loaded(g *Group, now time.Time) {
	g.rebalance = nil
	if g.TargetEpoch != g.Epoch && len(g.Members) > 0 {
		g.rebalance = &rebalance{}
	}
	for _, m := range g.SortedMembers() {
		s.armSession(g, m, now)
	}
}

// PartitionsState renders every group name's share-partition state
// record (durable), in name order.
func (s *Type) PartitionsState() string {
	var b bytes.Buffer
	keys := make([]grouptype.Key, 0, len(s.parts))
	for k := range s.parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b grouptype.Key) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Name, b.Name))
	})
	for _, k := range keys {
		p := s.parts[k]
		fmt.Fprintf(&b, "share partitions %q/%q initialized=%v deleting=%v\n", k.Tenant, k.Name, p.record().Initialized, p.record().Deleting)
	}
	return b.String()
}
