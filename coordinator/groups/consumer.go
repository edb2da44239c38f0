package groups

// KIP-848 consumer groups: the state, its records and their replay.
//
// A consumer group's durable state is Kafka's five record kinds: the group
// epoch, each member's metadata, the target assignment's epoch, each
// member's target, and each member's current assignment. Handlers emit
// them and replayConsumer applies them, live and at load. Timers,
// deadlines and the catalog version last hashed are soft state.

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberState is a consumer group member's reconciliation state, as
// Kafka's MemberState (the values are stored).
type memberState int8

const (
	memberStable     memberState = 0
	memberUnrevoked  memberState = 1 // must give up partitions first
	memberUnreleased memberState = 2 // waits for partitions others own
	memberUnknown    memberState = 127
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "stable"
	case memberUnrevoked:
		return "unrevoked"
	case memberUnreleased:
		return "unreleased"
	}
	return "unknown"
}

// Member epochs with a meaning of their own (Kafka's
// ConsumerGroupHeartbeatRequest constants).
const (
	leaveEpoch       = -1 // a dynamic member leaves
	leaveStaticEpoch = -2 // a static member leaves for a while
)

// tps is an assignment: topics by ascending id, each with its ascending
// partitions, none empty. A sorted slice, not a map: a member holds two or
// three of them (assigned, revoking, target), most with one or two topics,
// and a map of one entry costs several times the slice (issue 17's memory
// per member). It is the records' own form, so a record's partitions are
// shared, not copied.
type tps []record.TopicPartitions

// get returns the partitions of topic id (nil if none).
func (a tps) get(id [16]byte) []int32 {
	if i, ok := a.find(id); ok {
		return a[i].Partitions
	}
	return nil
}

func (a tps) find(id [16]byte) (int, bool) {
	return slices.BinarySearchFunc(a, id, func(t record.TopicPartitions, id [16]byte) int {
		return bytes.Compare(t.TopicID[:], id[:])
	})
}

func (a tps) count() int {
	n := 0
	for _, t := range a {
		n += len(t.Partitions)
	}
	return n
}

func (a tps) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a.get(id), p)
	return ok
}

func (a tps) equal(b tps) bool {
	return slices.EqualFunc(a, b, func(x, y record.TopicPartitions) bool {
		return x.TopicID == y.TopicID && slices.Equal(x.Partitions, y.Partitions)
	})
}

// records is a in record form: itself (topics sorted by id), never nil.
func (a tps) records() []record.TopicPartitions {
	if a == nil {
		return []record.TopicPartitions{}
	}
	return a
}

// tpsOf is the assignment of records (kept, not copied), its empty
// topics left out and its topics sorted if they were not.
func tpsOf(rs []record.TopicPartitions) tps {
	out := tps(rs)
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

// tpsFrom makes an assignment of a map of topic id → ascending
// partitions, what the functions that build one piece by piece fill.
func tpsFrom(m map[[16]byte][]int32) tps {
	out := make(tps, 0, len(m))
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
	id [16]byte
	p  int32
}

// consumerMember is a consumer group member (Kafka's ConsumerGroupMember).
type consumerMember struct {
	id string
	// From the member metadata record.
	instance, rack   *string
	clientID         string
	clientHost       string
	topics           []string // sorted
	regex            string
	rebalanceTimeout int32 // ms
	assignor         string
	// classic is set for a member that speaks the classic protocol
	// (mixed.go); nil for a consumer-protocol member.
	classic *classicMeta

	// From the current assignment record.
	epoch, prevEpoch int32
	state            memberState
	assigned         tps
	revoking         tps

	// Soft state: the session deadline (and the deadline its timer is
	// armed for), and the revocation deadline with the epoch it is for.
	expireAt, armedAt deadline
	revokeBy          time.Time
	revokeEpoch       int32
	// A classic member's join and sync deadlines (mixed_classic.go);
	// zero when not armed.
	joinBy, syncBy time.Time
}

// consumerGroup is a KIP-848 consumer group (Kafka's ConsumerGroup).
type consumerGroup struct {
	*group

	epoch       int32
	metaHash    uint64
	targetEpoch int32
	targetTime  int64 // Unix ms the assignor last ran
	members     map[string]*consumerMember
	static      map[string]string // instance id → member id
	target      map[string]tps
	// owners is Kafka's currentPartitionEpoch: the epoch of the member
	// that owns (or is revoking) each partition.
	owners map[tp]int32

	// hashAt is the catalog version metaHash was last checked against
	// (soft).
	hashAt uint64
	// rebalance is the rebalance under way, for events (soft; see
	// events.go); nil when none.
	rebalance *rebalance
}

// newConsumerGroup gives g an empty consumer part.
func newConsumerGroup(g *group) *consumerGroup {
	c := &consumerGroup{
		group:   g,
		members: map[string]*consumerMember{},
		static:  map[string]string{},
		target:  map[string]tps{},
		owners:  map[tp]int32{},
	}
	g.Part = c
	return c
}

// DurableState renders what the group's records hold.
func (g *consumerGroup) DurableState() []string {
	out := []string{fmt.Sprintf("  consumer epoch=%d hash=%x target=%d@%d", g.epoch, g.metaHash, g.targetEpoch, g.targetTime)}
	for _, m := range g.sortedMembers() {
		out = append(out, fmt.Sprintf("  member %s inst=%v rack=%v client=%s/%s topics=%v regex=%q rt=%d assignor=%q epoch=%d/%d state=%v assigned=%v revoking=%v",
			m.id, deref(m.instance), deref(m.rack), m.clientID, m.clientHost, m.topics, m.regex, m.rebalanceTimeout, m.assignor,
			m.epoch, m.prevEpoch, m.state, m.assigned.records(), m.revoking.records()))
		if c := m.classic; c != nil {
			out = append(out, fmt.Sprintf("  member %s classic session=%d protocols=%v", m.id, c.sessionTimeout, c.protocols))
		}
	}
	for _, id := range sortedKeys(g.target) {
		out = append(out, fmt.Sprintf("  target %s %v", id, g.target[id].records()))
	}
	owners := make([]string, 0, len(g.owners))
	for p, e := range g.owners {
		owners = append(owners, fmt.Sprintf("%x/%d@%d", p.id, p.p, e))
	}
	slices.Sort(owners)
	out = append(out, fmt.Sprintf("  owners %v", owners))
	return out
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// state derives the group state, as Kafka's ConsumerGroup: it is never
// stored.
func (g *consumerGroup) state() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case g.epoch > g.targetEpoch:
		return "Assigning"
	}
	for _, m := range g.members {
		if m.state != memberStable || m.epoch != g.targetEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (g *consumerGroup) sortedMembers() []*consumerMember {
	out := make([]*consumerMember, 0, len(g.members))
	for _, id := range sortedKeys(g.members) {
		out = append(out, g.members[id])
	}
	return out
}

// release forgets m's ownership of its partitions.
func (g *consumerGroup) release(m *consumerMember) {
	for _, a := range []tps{m.assigned, m.revoking} {
		for _, at := range a {
			id, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				delete(g.owners, tp{id, p})
			}
		}
	}
}

// own records m's ownership of its partitions at its epoch.
func (g *consumerGroup) own(m *consumerMember) {
	for _, a := range []tps{m.assigned, m.revoking} {
		for _, at := range a {
			id, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				g.owners[tp{id, p}] = m.epoch
			}
		}
	}
}

// subscribedTopics resolves every member's subscription against the
// catalog: topic names and regex matches.
func (g *consumerGroup) subscribedTopics(cat *machine.Catalog) map[string]bool {
	out := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.subscription(cat) {
			out[t] = true
		}
	}
	return out
}

// subscription is the member's topics: its names, plus the catalog's
// topics its regex matches, sorted and without duplicates.
func (m *consumerMember) subscription(cat *machine.Catalog) []string {
	if m.regex == "" || cat == nil {
		return m.topics
	}
	re, err := regexp.Compile(m.regex)
	if err != nil {
		return m.topics
	}
	out := slices.Clone(m.topics)
	for _, n := range cat.Names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// metadataHash summarises the subscribed topics that exist: names, ids and
// partition counts. It changes when a subscribed topic is created,
// deleted, re-created or grows: what bumps the group epoch in Kafka.
func metadataHash(topics map[string]bool, cat *machine.Catalog) uint64 {
	h := fnv.New64a()
	for _, n := range sortedKeys(topics) {
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

func (s *Shard) memberKey(kind record.Kind, k gkey, member string) []byte {
	return record.MemberKey{GroupKey: s.key(k), Kind: kind, Member: member}.Key()
}

func (s *Shard) emitGroupEpoch(g *consumerGroup, epoch int32, hash uint64) {
	v := record.ConsumerGroup{ID: g.ID, Epoch: epoch, MetadataHash: hash}
	s.emit(s.key(g.Key).KindKey(record.KindConsumerGroup), v.Encode())
}

func (s *Shard) emitMember(g *consumerGroup, m *consumerMember) {
	v := record.ConsumerMember{
		InstanceID: m.instance, RackID: m.rack, ClientID: m.clientID, ClientHost: m.clientHost,
		Topics: m.topics, Regex: m.regex, RebalanceTimeout: m.rebalanceTimeout, Assignor: m.assignor,
		Classic: m.classic.record(),
	}
	s.emit(s.memberKey(record.KindConsumerMember, g.Key, m.id), v.Encode())
}

func (s *Shard) emitTarget(g *consumerGroup, id string, a tps) {
	s.emit(s.memberKey(record.KindConsumerTarget, g.Key, id), record.ConsumerTarget{Topics: a.records()}.Encode())
}

func (s *Shard) emitTargetEpoch(g *consumerGroup, epoch int32, at int64) {
	v := record.ConsumerTargetEpoch{Epoch: epoch, Timestamp: at}
	s.emit(s.key(g.Key).KindKey(record.KindConsumerTargetEpoch), v.Encode())
}

// emitRemoveMember writes a member's tombstones in Kafka's order: current
// assignment, target, metadata.
func (s *Shard) emitRemoveMember(g *consumerGroup, id string) {
	s.emit(s.memberKey(record.KindConsumerCurrent, g.Key, id), nil)
	s.emit(s.memberKey(record.KindConsumerTarget, g.Key, id), nil)
	s.emit(s.memberKey(record.KindConsumerMember, g.Key, id), nil)
}

// emitRemoveConsumer writes the tombstones of the whole consumer group (not
// its offsets): members, target epoch, group epoch. The last takes the
// consumer part away.
func (s *Shard) emitRemoveConsumer(g *consumerGroup) {
	for _, id := range sortedKeys(g.members) {
		s.emitRemoveMember(g, id)
	}
	for _, id := range sortedKeys(g.target) {
		s.emit(s.memberKey(record.KindConsumerTarget, g.Key, id), nil)
	}
	s.emit(s.key(g.Key).KindKey(record.KindConsumerTargetEpoch), nil)
	s.emit(s.key(g.Key).KindKey(record.KindConsumerGroup), nil)
}

// isConsumerKind reports whether kind is a KIP-848 record.
func isConsumerKind(kind record.Kind) bool {
	switch kind {
	case record.KindConsumerGroup, record.KindConsumerMember, record.KindConsumerTargetEpoch,
		record.KindConsumerTarget, record.KindConsumerCurrent:
		return true
	}
	return false
}

// replayConsumer applies a KIP-848 record.
func (s *Shard) replayConsumer(kind record.Kind, k any, value []byte) error {
	switch kind {
	case record.KindConsumerGroup:
		gk := k.(record.GroupKey)
		key := gkey{Tenant: gk.Tenant, Name: gk.Group}
		if value == nil {
			if g := s.h.Groups[key]; consumerOf(g) != nil {
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
		c := consumerOf(g)
		if c == nil {
			c = newConsumerGroup(g)
		}
		c.epoch, c.metaHash = v.Epoch, v.MetadataHash
		return nil
	case record.KindConsumerTargetEpoch:
		gk := k.(record.GroupKey)
		g := s.consumerGroup(gk.Tenant, gk.Group)
		if g == nil {
			return nil
		}
		if value == nil {
			g.targetEpoch, g.targetTime = 0, 0
			return nil
		}
		v, err := record.DecodeConsumerTargetEpoch(value)
		if err != nil {
			return fmt.Errorf("consumer group %q target epoch: %w", gk.Group, err)
		}
		g.targetEpoch, g.targetTime = v.Epoch, v.Timestamp
		return nil
	}
	mk := k.(record.MemberKey)
	g := s.consumerGroup(mk.Tenant, mk.Group)
	if g == nil {
		// The group's tombstone came first (a deleted group): nothing
		// to apply to.
		return nil
	}
	switch kind {
	case record.KindConsumerMember:
		m := g.members[mk.Member]
		if value == nil {
			if m != nil {
				g.release(m)
				if m.instance != nil && g.static[*m.instance] == m.id {
					delete(g.static, *m.instance)
				}
				delete(g.members, mk.Member)
			}
			return nil
		}
		v, err := record.DecodeConsumerMember(value)
		if err != nil {
			return fmt.Errorf("consumer member %q/%q: %w", mk.Group, mk.Member, err)
		}
		if m == nil {
			m = &consumerMember{id: mk.Member, assigned: tps{}, revoking: tps{}}
			g.members[mk.Member] = m
		}
		if m.instance != nil && g.static[*m.instance] == m.id {
			delete(g.static, *m.instance)
		}
		m.instance, m.rack, m.clientID, m.clientHost = v.InstanceID, v.RackID, v.ClientID, v.ClientHost
		m.topics, m.regex, m.rebalanceTimeout, m.assignor = v.Topics, v.Regex, v.RebalanceTimeout, v.Assignor
		m.classic = classicMetaOf(v.Classic)
		if m.instance != nil {
			g.static[*m.instance] = m.id
		}
	case record.KindConsumerTarget:
		if value == nil {
			delete(g.target, mk.Member)
			return nil
		}
		v, err := record.DecodeConsumerTarget(value)
		if err != nil {
			return fmt.Errorf("consumer target %q/%q: %w", mk.Group, mk.Member, err)
		}
		g.target[mk.Member] = tpsOf(v.Topics)
	case record.KindConsumerCurrent:
		m := g.members[mk.Member]
		if value == nil {
			if m != nil {
				g.release(m)
				m.epoch, m.prevEpoch, m.state = leaveEpoch, leaveEpoch, memberStable
				m.assigned, m.revoking = tps{}, tps{}
			}
			return nil
		}
		v, err := record.DecodeConsumerCurrent(value)
		if err != nil {
			return fmt.Errorf("consumer current %q/%q: %w", mk.Group, mk.Member, err)
		}
		if m == nil {
			m = &consumerMember{id: mk.Member}
			g.members[mk.Member] = m
		}
		g.release(m)
		m.epoch, m.prevEpoch, m.state = v.MemberEpoch, v.PreviousMemberEpoch, memberState(v.State)
		m.assigned, m.revoking = tpsOf(v.Assigned), tpsOf(v.Revoking)
		g.own(m)
	}
	return nil
}

// loadedConsumer gives every loaded member a fresh session timer, and a
// member that must revoke a fresh rebalance timeout, as Kafka on load. A
// rebalance under way goes on, though when it started is not known.
func (s *Shard) loadedConsumer(g *consumerGroup, now time.Time) {
	g.rebalance = nil
	if g.reconciling() {
		g.rebalance = &rebalance{} // when and why it started are not known
	}
	for _, m := range g.sortedMembers() {
		s.armConsumerSession(g, m, now)
		s.armRevocation(g, m, now)
	}
}

// validateConsumerCommit is Kafka's ConsumerGroup.validateOffsetCommit: a
// commit with a negative epoch to a group with no members is an admin's;
// otherwise the member must exist and send its current epoch.
func validateConsumerCommit(g *consumerGroup, r *kmsg.OffsetCommitRequest) int16 {
	if r.Generation < 0 && len(g.members) == 0 {
		return 0
	}
	m := g.members[r.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if m.classic != nil {
		// A classic member commits with any version and the generation
		// its last JoinGroup gave it (mixed §4.8).
		if r.Generation != m.epoch {
			return kerr.IllegalGeneration.Code
		}
		return 0
	}
	if r.Version < 9 {
		// A consumer-protocol member commits with v9+ (KIP-848).
		return kerr.UnsupportedVersion.Code
	}
	if r.Generation != m.epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// validateConsumerFetch is Kafka's ConsumerGroup.validateOffsetFetch for
// OffsetFetch v9+: a request naming a member must name a current one.
func validateConsumerFetch(g *consumerGroup, memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.members[id]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if epoch != m.epoch {
		if m.classic != nil {
			return kerr.IllegalGeneration.Code
		}
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}
