package migration

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
//     classic.go): their JoinGroup, SyncGroup, Heartbeat and
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
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
func (s *Type) assignmentBytes(tenant string, a consumer.Assignment, meta []byte) []byte {
	out := kmsg.NewConsumerMemberAssignment()
	if sub, ok := subscription(meta); ok {
		out.Version = min(sub.Version, 3)
	}
	for _, t := range a.Records() {
		name, ok := s.h.Catalog(tenant).Name(t.TopicID)
		if !ok {
			continue
		}
		out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: slices.Clone(t.Partitions)})
	}
	return out.AppendTo(nil)
}

// byName maps partitions named by topic to topic ids through the catalog,
// leaving out topics it does not know; never nil.
func (s *Type) byName(tenant string, topics map[string][]int32) consumer.Assignment {
	out := map[[16]byte][]int32{}
	cat := s.h.Catalog(tenant)
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
	return consumer.AssignmentFrom(out)
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
func (s *Type) upgrade(now time.Time, c *classic.Group, joining string, joiningStatic *string) (*consumer.Group, int16, string) {
	notConsumer := fmt.Sprintf("Group %s is not a consumer group.", c.Name)
	switch {
	case !s.cfg.MigrationPolicy.Upgrades(), c.ProtocolType != "consumer":
		return nil, kerr.GroupIDNotFound.Code, notConsumer
	case s.cfg.ConsumerMaxSize > 0 && len(c.Members()) > s.cfg.ConsumerMaxSize:
		return nil, kerr.GroupIDNotFound.Code, notConsumer
	}
	type carried struct {
		m        *classic.Member
		sub      *kmsg.ConsumerMemberMetadata
		assigned consumer.Assignment
	}
	var ms []carried
	for _, m := range c.SortedMembers() {
		sub, ok := subscription(m.MetadataFor(c.Protocol()))
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
	replaces := joiningStatic != nil && c.Static()[*joiningStatic] != ""
	if max, _ := s.h.MaxMembers(c.Tenant, s.cfg.ConsumerMaxSize); max > 0 {
		if _, known := c.Members()[joining]; !known && !replaces && len(c.Members()) >= max {
			return nil, kerr.GroupMaxSizeReached.Code, s.h.FullMessage(c.Tenant, s.cfg.ConsumerMaxSize)
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
	for id := range c.PendingJoin() {
		s.classic.DropPending(c, id)
	}
	s.timer(grouptype.GroupTimer(classic.TimerJoin, c.Key), time.Time{})
	s.timer(grouptype.GroupTimer(classic.TimerSync, c.Key), time.Time{})

	k, id, gen := c.Key, c.ID, c.Generation
	s.emit(s.key(k).Key(), nil) // the classic record goes
	s.emit(s.key(k).KindKey(record.KindConsumerGroup), record.ConsumerGroup{ID: id, Epoch: gen}.Encode())
	g := s.group(k.Tenant, k.Name)
	for _, cm := range ms {
		m, sub := cm.m, cm.sub
		topics := slices.Clone(sub.Topics)
		slices.Sort(topics)
		next := &consumer.Member{
			ID: m.ID, Instance: m.Instance, Rack: sub.Rack, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Topics: slices.Compact(topics), RebalanceTimeout: m.RebalanceTimeout,
			Classic: &consumer.ClassicMeta{SessionTimeout: m.SessionTimeout, Protocols: m.Protocols},
		}
		if next.Rack != nil && *next.Rack == "" {
			next.Rack = nil
		}
		s.consumer.EmitMember(g, next)
	}
	for _, cm := range ms {
		s.consumer.EmitTarget(g, cm.m.ID, cm.assigned)
	}
	// Time 0: the joining heartbeat may compute the next target at once.
	s.consumer.EmitTargetEpoch(g, gen, 0)
	for _, cm := range ms {
		s.consumer.EmitCurrent(g, cm.m.ID, consumer.Current{Epoch: gen, PrevEpoch: gen, State: consumer.MemberStable, Assigned: cm.assigned, Revoking: consumer.Assignment{}})
	}
	for _, m := range g.SortedMembers() {
		s.consumer.ArmSession(g, m, now)
	}
	s.report(observe.GroupEvent{Kind: observe.GroupConverted, Tenant: k.Tenant, Group: k.Name, Protocol: grouptype.ProtoConsumer,
		Generation: gen, Members: len(g.Members), Member: joining, InstanceID: grouptype.OrEmpty(joiningStatic), At: now,
		Reason: fmt.Sprintf("upgraded from a classic group: member %s joined with the consumer protocol", joining)})
	return g, 0, ""
}

// Join answers a ConsumerGroupHeartbeat to e, a group of another type
// (consumer.Migration): a classic group with members is upgraded for a
// join when it can be (upgrade); an empty classic (or simple) group
// becomes a consumer group for a join, keeping its offsets and its id:
// its classic record goes, as Kafka's conversion writes a GroupMetadata
// tombstone.
func (s *Type) Join(now time.Time, e *grouptype.Entry, r *kmsg.ConsumerGroupHeartbeatRequest) (*consumer.Group, int16, string) {
	join := r.MemberEpoch == 0
	c := classic.Of(e)
	if c == nil || len(c.Members()) > 0 || c.State != classic.Empty {
		if !join || c == nil {
			return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group.", e.Name)
		}
		return s.upgrade(now, c, r.MemberID, r.InstanceID)
	}
	if !join {
		return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Consumer group %s not found.", e.Name)
	}
	// Drawn as for a new group, and not used: the generator's sequence,
	// and so every id after it, stays what it was before the group
	// types had packages of their own.
	s.h.NewGroupID(now)
	k, id := e.Key, e.ID
	if c.HasRecord() {
		s.emit(s.key(k).Key(), nil)
	}
	e.Part = nil
	return s.consumer.Create(k, id), 0, ""
}

// Leave converts g back to a classic group if consumer-protocol member m
// leaving or fenced is its last one and the policy allows it
// (consumer.Migration; mayDowngrade, downgrade).
func (s *Type) Leave(now time.Time, g *consumer.Group, m *consumer.Member, kind observe.GroupEventKind, reason string, t grouptype.Trigger, why string) bool {
	if !s.mayDowngrade(g, m) {
		return false
	}
	s.downgrade(now, g, m, kind, reason, t, why)
	return true
}

// EmptyToClassic makes empty consumer group g a classic group for a
// JoinGroup, keeping its offsets and id (Kafka converts it the same way):
// the consumer records' tombstones, then the classic record.
func (s *Type) EmptyToClassic(now time.Time, g *consumer.Group) *classic.Group {
	k, id := g.Key, g.ID
	s.consumer.EmitRemove(g)
	c := classic.NewGroup(s.h.Register(k), now)
	c.ID = id
	s.classic.EmitRecord(c)
	return c
}

// mayDowngrade reports whether removing consumer-protocol member m from g
// converts g back to a classic group (Kafka's
// validateOnlineDowngradeWithFencedMember, mixed §5.1 A).
func (s *Type) mayDowngrade(g *consumer.Group, m *consumer.Member) bool {
	if m.Classic != nil || len(g.Members) <= 1 || !s.cfg.MigrationPolicy.Downgrades() || len(g.Members)-1 > s.cfg.MaxSize {
		return false
	}
	for _, o := range g.Members {
		if o != m && o.Classic == nil {
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
func (s *Type) downgrade(now time.Time, g *consumer.Group, leaving *consumer.Member, kind observe.GroupEventKind, reason string, t grouptype.Trigger, why string) {
	c := s.toClassic(now, g, leaving, kind, reason, nil, why)
	s.classic.PrepareRebalance(c, now, t, fmt.Sprintf("Downgrade to a classic group: %s", why))
}

// mayDowngradeReplacing reports whether a classic static member taking
// consumer-protocol member old's instance converts g back to a classic
// group (Kafka's validateOnlineDowngradeWithReplacedMemberId, mixed §5.1
// B).
func (s *Type) mayDowngradeReplacing(g *consumer.Group, old *consumer.Member) bool {
	if old.Classic != nil || !s.cfg.MigrationPolicy.Downgrades() || len(g.Members) > s.cfg.MaxSize {
		return false
	}
	for _, o := range g.Members {
		if o != old && o.Classic == nil {
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
func (s *Type) toClassic(now time.Time, g *consumer.Group, leaving *consumer.Member, kind observe.GroupEventKind, reason string, joiner *consumer.Member, why string) *classic.Group {
	type kept struct {
		m      consumer.Member
		target consumer.Assignment
	}
	var ms []kept
	for _, m := range g.SortedMembers() {
		if m != leaving {
			ms = append(ms, kept{*m, g.Target[m.ID]})
		}
		s.consumer.StopTimers(g, m)
	}
	if joiner != nil {
		ms = append(ms, kept{*joiner, g.Target[leaving.ID]})
	}
	k, id, epoch := g.Key, g.ID, g.Epoch
	g.Rebalance = nil // the classic group's rebalance takes over
	s.consumer.EmitRemoveMember(g, leaving.ID)
	if leaving.Epoch != consumer.LeaveStaticEpoch {
		s.consumer.Event(g, kind, now, leaving, reason)
	}
	s.consumer.EmitRemove(g)

	c := classic.NewGroup(s.h.Register(k), now)
	c.ID, c.ProtocolType, c.Generation = id, "consumer", epoch
	for _, km := range ms {
		m := &classic.Member{
			ID: km.m.ID, Instance: km.m.Instance, ClientID: km.m.ClientID, ClientHost: km.m.ClientHost,
			RebalanceTimeout: km.m.RebalanceTimeout, SessionTimeout: km.m.Classic.SessionTimeout,
			Protocols: km.m.Classic.Protocols,
		}
		c.EnsureMaps()
		c.Members()[m.ID] = m
		if m.Instance != nil {
			c.Static()[*m.Instance] = m.ID
		}
		c.CountProtocols(m, 1)
	}
	c.SetProtocol(c.SelectProtocol())
	for _, km := range ms {
		m := c.Members()[km.m.ID]
		m.Assignment = s.assignmentBytes(c.Tenant, km.target, m.MetadataFor(c.Protocol()))
	}
	if ms := c.SortedMembers(); len(ms) > 0 {
		c.SetLeader(ms[0].ID)
	}
	c.State, c.PrevState = classic.Stable, classic.Empty
	c.ComputeSubscribed()
	s.classic.EmitRecord(c)
	for _, m := range c.SortedMembers() {
		s.classic.ArmSession(c, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
	}
	n := len(c.Members())
	if joiner != nil {
		n-- // reported joining below
	}
	s.report(observe.GroupEvent{Kind: observe.GroupConverted, Tenant: k.Tenant, Group: k.Name, Protocol: grouptype.ProtoClassic,
		Generation: epoch, Members: n, Member: leaving.ID, InstanceID: grouptype.OrEmpty(leaving.Instance), At: now,
		Reason: fmt.Sprintf("downgraded to a classic group: %s", why)})
	if joiner != nil {
		s.classic.Event(c, observe.MemberJoined, now, c.Members()[joiner.ID], "")
	}
	return c
}
