package groups

// Mixed groups: the online migration of a group with members between the
// classic protocol and the consumer protocol (KIP-848), as Apache Kafka 4
// serves a rolling upgrade. docs/kafka-mixed-groups.md is the reference;
// its section numbers are cited as "mixed §N".
//
//   - Upgrade (mixed §3): the first ConsumerGroupHeartbeat to a classic
//     group with members converts it into a consumer group in one batch of
//     records: the classic record's tombstone, then consumer-group records
//     that carry every classic member over at the classic generation,
//     with its current assignment as both its assigned partitions and its
//     target. The heartbeat then runs against the converted group.
//   - Classic members inside a consumer group (mixed §4,
//     mixed_classic.go): their JoinGroup, SyncGroup, Heartbeat and
//     LeaveGroup are served by the consumer group's machinery; the
//     server-side assignor decides their partitions.
//   - Downgrade (mixed §5): when the last consumer-protocol member leaves
//     or is fenced and classic members remain, the group goes back to a
//     classic group in one batch (every consumer record's tombstone, then
//     a classic record at the group epoch with each member's target as its
//     assignment) and rebalances once.
//
// Every conversion is records through Replay, like any other change, so a
// restart in the middle of a migration loads a consistent group.

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MigrationPolicy is Kafka's group.consumer.migration.policy
// (grouptype.MigrationPolicy).
type MigrationPolicy = grouptype.MigrationPolicy

// The policies.
const (
	MigrateBidirectional = grouptype.MigrateBidirectional
	MigrateUpgrade       = grouptype.MigrateUpgrade
	MigrateDowngrade     = grouptype.MigrateDowngrade
	MigrateDisabled      = grouptype.MigrateDisabled
)

// ParseMigrationPolicy parses a policy, case-insensitively as Kafka.
func ParseMigrationPolicy(s string) (MigrationPolicy, error) {
	return grouptype.ParseMigrationPolicy(s)
}

// classicMeta is a classic member's part of a consumer group member
// (Kafka's ClassicMemberMetadata): its session timeout and its JoinGroup's
// protocols, all of them, in its order.
type classicMeta struct {
	sessionTimeout int32 // ms
	protocols      []classic.Protocol
}

func (c *classicMeta) record() *record.ClassicMeta {
	if c == nil {
		return nil
	}
	out := &record.ClassicMeta{SessionTimeout: c.sessionTimeout, Protocols: make([]record.ClassicProtocol, len(c.protocols))}
	for i, p := range c.protocols {
		out.Protocols[i] = record.ClassicProtocol{Name: p.Name, Metadata: p.Meta}
	}
	return out
}

func classicMetaOf(r *record.ClassicMeta) *classicMeta {
	if r == nil {
		return nil
	}
	out := &classicMeta{sessionTimeout: r.SessionTimeout, protocols: make([]classic.Protocol, len(r.Protocols))}
	for i, p := range r.Protocols {
		out.protocols[i] = classic.Protocol{Name: p.Name, Meta: p.Metadata}
	}
	return out
}

func (c *classicMeta) equal(d *classicMeta) bool {
	if c == nil || d == nil {
		return c == d
	}
	m := classic.Member{Protocols: c.protocols}
	return c.sessionTimeout == d.sessionTimeout && m.SameProtocols(d.protocols)
}

// first is the member's first protocol: the one it is told it got, and
// whose metadata version its assignment is written at (mixed §1.1).
func (c *classicMeta) first() classic.Protocol {
	if len(c.protocols) == 0 {
		return classic.Protocol{}
	}
	return c.protocols[0]
}

// subscription parses a consumer protocol Subscription.
func subscription(meta []byte) (*kmsg.ConsumerMemberMetadata, bool) {
	var sub kmsg.ConsumerMemberMetadata
	if len(meta) < 2 || sub.ReadFrom(meta) != nil || sub.Version < 0 {
		return nil, false
	}
	return &sub, true
}

// assignmentBytes writes a as a consumer protocol Assignment at the
// version of metadata meta (at most 3, the highest there is), by topic
// name; topics the catalog does not know are left out.
func (s *Shard) assignmentBytes(tenant string, a tps, meta []byte) []byte {
	out := kmsg.NewConsumerMemberAssignment()
	if sub, ok := subscription(meta); ok {
		out.Version = min(sub.Version, 3)
	}
	for _, t := range a.records() {
		name, ok := s.catalog(tenant).Name(t.TopicID)
		if !ok {
			continue
		}
		out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: slices.Clone(t.Partitions)})
	}
	return out.AppendTo(nil)
}

// byName maps partitions named by topic to topic ids through the catalog,
// leaving out topics it does not know; never nil.
func (s *Shard) byName(tenant string, topics map[string][]int32) tps {
	out := map[[16]byte][]int32{}
	cat := s.catalog(tenant)
	for name, ps := range topics {
		if cat == nil {
			break
		}
		t, ok := cat.ByName[name]
		if !ok || len(ps) == 0 {
			continue
		}
		ps = slices.Clone(ps)
		slices.Sort(ps)
		out[t.ID] = append(out[t.ID], slices.Compact(ps)...)
	}
	return tpsFrom(out)
}

// upgrade converts classic group c, which has members, into a consumer
// group for a ConsumerGroupHeartbeat joining it (Kafka's
// validateOnlineUpgrade and convertToConsumerGroup, mixed §3.2–3.3). It
// fails, writing nothing, with GROUP_ID_NOT_FOUND when the policy, the
// protocol type, the size or a member's embedded protocol forbids it, and
// with GROUP_MAX_SIZE_REACHED when the joining member would not fit
// afterwards (Kafka converts and then drops the batch; the result is the
// same). joiningStatic is the joiner's instance id, if any: taking a
// classic static member's place adds no member.
func (s *Shard) upgrade(now time.Time, c *classic.Group, joining string, joiningStatic *string) (*consumerGroup, int16, string) {
	notConsumer := fmt.Sprintf("Group %s is not a consumer group.", c.Name)
	switch {
	case !s.cfg.MigrationPolicy.Upgrades(), c.ProtocolType != "consumer":
		return nil, kerr.GroupIDNotFound.Code, notConsumer
	case s.cfg.ConsumerMaxSize > 0 && len(c.Members) > s.cfg.ConsumerMaxSize:
		return nil, kerr.GroupIDNotFound.Code, notConsumer
	}
	type carried struct {
		m        *classic.Member
		sub      *kmsg.ConsumerMemberMetadata
		assigned tps
	}
	var ms []carried
	for _, m := range c.SortedMembers() {
		sub, ok := subscription(m.MetadataFor(c.Protocol))
		var a kmsg.ConsumerMemberAssignment
		if !ok || len(m.Assignment) < 2 || a.ReadFrom(m.Assignment) != nil {
			return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf(
				"Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed.", c.Name)
		}
		byTopic := map[string][]int32{}
		for _, t := range a.Topics {
			byTopic[t.Topic] = append(byTopic[t.Topic], t.Partitions...)
		}
		ms = append(ms, carried{m, sub, s.byName(c.Tenant, byTopic)})
	}
	replaces := joiningStatic != nil && c.Static[*joiningStatic] != ""
	if max, _ := s.maxMembers(c.Tenant, s.cfg.ConsumerMaxSize); max > 0 {
		if _, known := c.Members[joining]; !known && !replaces && len(c.Members) >= max {
			return nil, kerr.GroupMaxSizeReached.Code, s.fullMessage(c.Tenant, s.cfg.ConsumerMaxSize)
		}
	}

	// Parked requests are told to rejoin: they will find a consumer group.
	for _, cm := range ms {
		m := cm.m
		if m.Join != nil {
			s.reply(m.Join.ID, classic.JoinError(m.Join.Version, kerr.RebalanceInProgress.Code, m.ID))
			m.Join = nil
		}
		if m.Sync != nil {
			s.reply(m.Sync.ID, classic.SyncError(m.Sync.Version, kerr.RebalanceInProgress.Code))
			m.Sync = nil
		}
		s.classic.CancelSession(c, m)
	}
	for id := range c.PendingJoin {
		s.classic.DropPending(c, id)
	}
	s.timer(groupTimer(classic.TimerJoin, c.Key), time.Time{})
	s.timer(groupTimer(classic.TimerSync, c.Key), time.Time{})

	k, id, gen := c.Key, c.ID, c.Generation
	s.emit(s.key(k).Key(), nil) // the classic record goes
	s.emit(s.key(k).KindKey(record.KindConsumerGroup), record.ConsumerGroup{ID: id, Epoch: gen}.Encode())
	g := s.consumerGroup(k.Tenant, k.Name)
	for _, cm := range ms {
		m, sub := cm.m, cm.sub
		topics := slices.Clone(sub.Topics)
		slices.Sort(topics)
		next := &consumerMember{
			id: m.ID, instance: m.Instance, rack: sub.Rack, clientID: m.ClientID, clientHost: m.ClientHost,
			topics: slices.Compact(topics), rebalanceTimeout: m.RebalanceTimeout,
			classic: &classicMeta{sessionTimeout: m.SessionTimeout, protocols: m.Protocols},
		}
		if next.rack != nil && *next.rack == "" {
			next.rack = nil
		}
		s.emitMember(g, next)
	}
	for _, cm := range ms {
		s.emitTarget(g, cm.m.ID, cm.assigned)
	}
	// Time 0: the joining heartbeat may compute the next target at once.
	s.emitTargetEpoch(g, gen, 0)
	for _, cm := range ms {
		s.emitCurrent(g, cm.m.ID, current{epoch: gen, prevEpoch: gen, state: memberStable, assigned: cm.assigned, revoking: tps{}})
	}
	for _, m := range g.sortedMembers() {
		s.armConsumerSession(g, m, now)
	}
	s.report(observe.GroupEvent{Kind: observe.GroupConverted, Tenant: k.Tenant, Group: k.Name, Protocol: protoConsumer,
		Generation: gen, Members: len(g.members), Member: joining, InstanceID: orEmpty(joiningStatic), At: now,
		Reason: fmt.Sprintf("upgraded from a classic group: member %s joined with the consumer protocol", joining)})
	return g, 0, ""
}

// mayDowngrade reports whether removing consumer-protocol member m from g
// converts g back to a classic group (Kafka's
// validateOnlineDowngradeWithFencedMember, mixed §5.1 A).
func (s *Shard) mayDowngrade(g *consumerGroup, m *consumerMember) bool {
	if m.classic != nil || len(g.members) <= 1 || !s.cfg.MigrationPolicy.Downgrades() || len(g.members)-1 > s.cfg.MaxSize {
		return false
	}
	for _, o := range g.members {
		if o != m && o.classic == nil {
			return false
		}
	}
	return true
}

// downgrade converts g, whose consumer-protocol member leaving is the
// last one, into a classic group of its classic members (Kafka's
// convertToClassicGroup, mixed §5.2–5.3, trigger A): the consumer records'
// tombstones, then a classic record at the group epoch whose members hold
// their target assignments, and a rebalance, so that they rejoin it.
func (s *Shard) downgrade(now time.Time, g *consumerGroup, leaving *consumerMember, kind observe.GroupEventKind, reason string, t trigger, why string) {
	c := s.toClassic(now, g, leaving, kind, reason, nil, why)
	s.classic.PrepareRebalance(c, now, t, fmt.Sprintf("Downgrade to a classic group: %s", why))
}

// mayDowngradeReplacing reports whether a classic static member taking
// consumer-protocol member old's instance converts g back to a classic
// group (Kafka's validateOnlineDowngradeWithReplacedMemberId, mixed §5.1
// B).
func (s *Shard) mayDowngradeReplacing(g *consumerGroup, old *consumerMember) bool {
	if old.classic != nil || !s.cfg.MigrationPolicy.Downgrades() || len(g.members) > s.cfg.MaxSize {
		return false
	}
	for _, o := range g.members {
		if o != old && o.classic == nil {
			return false
		}
	}
	return true
}

// toClassic replaces consumer group g by a classic group at its group
// epoch (mixed §5.2): every consumer record's tombstone (leaving's first,
// reported as kind for reason), then the classic record whose members are
// g's others, each holding its target assignment, and joiner, if set (a
// classic static member that takes leaving's instance: trigger B), holding
// leaving's. The group is Stable; the caller decides what follows.
func (s *Shard) toClassic(now time.Time, g *consumerGroup, leaving *consumerMember, kind observe.GroupEventKind, reason string, joiner *consumerMember, why string) *classic.Group {
	type kept struct {
		m      consumerMember
		target tps
	}
	var ms []kept
	for _, m := range g.sortedMembers() {
		if m != leaving {
			ms = append(ms, kept{*m, g.target[m.id]})
		}
		s.consumerLeaving(g, m)
	}
	if joiner != nil {
		ms = append(ms, kept{*joiner, g.target[leaving.id]})
	}
	k, id, epoch := g.Key, g.ID, g.epoch
	g.rebalance = nil // the classic group's rebalance takes over
	s.emitRemoveMember(g, leaving.id)
	if leaving.epoch != leaveStaticEpoch {
		s.consumerEvent(g, kind, now, leaving, reason)
	}
	s.emitRemoveConsumer(g)

	c := classic.NewGroup(s.entry(k), now)
	c.ID, c.ProtocolType, c.Generation = id, "consumer", epoch
	for _, km := range ms {
		m := &classic.Member{
			ID: km.m.id, Instance: km.m.instance, ClientID: km.m.clientID, ClientHost: km.m.clientHost,
			RebalanceTimeout: km.m.rebalanceTimeout, SessionTimeout: km.m.classic.sessionTimeout,
			Protocols: km.m.classic.protocols,
		}
		c.Members[m.ID] = m
		if m.Instance != nil {
			c.Static[*m.Instance] = m.ID
		}
		c.CountProtocols(m, 1)
	}
	c.Protocol = c.SelectProtocol()
	for _, km := range ms {
		m := c.Members[km.m.id]
		m.Assignment = s.assignmentBytes(c.Tenant, km.target, m.MetadataFor(c.Protocol))
	}
	if ms := c.SortedMembers(); len(ms) > 0 {
		c.Leader = ms[0].ID
	}
	c.State, c.PrevState = classic.Stable, classic.Empty
	c.ComputeSubscribed()
	s.classic.EmitRecord(c)
	for _, m := range c.SortedMembers() {
		s.classic.ArmSession(c, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
	}
	n := len(c.Members)
	if joiner != nil {
		n-- // reported joining below
	}
	s.report(observe.GroupEvent{Kind: observe.GroupConverted, Tenant: k.Tenant, Group: k.Name, Protocol: protoClassic,
		Generation: epoch, Members: n, Member: leaving.id, InstanceID: orEmpty(leaving.instance), At: now,
		Reason: fmt.Sprintf("downgraded to a classic group: %s", why)})
	if joiner != nil {
		s.classic.Event(c, observe.MemberJoined, now, c.Members[joiner.id], "")
	}
	return c
}
