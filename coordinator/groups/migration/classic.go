package migration

// Classic members inside a consumer group (mixed §4): JoinGroup,
// SyncGroup, Heartbeat and LeaveGroup of a consumer group with members,
// as Kafka's classicGroupJoinToConsumerGroup,
// classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup
// and classicGroupLeaveToConsumerGroup. A classic member is an ordinary
// consumer-group member with classic metadata: the server-side assignor
// decides its partitions, its JoinGroup runs the consumer protocol's steps
// with the owned partitions its subscription reports (so eager members,
// which report none, and cooperative ones, which report what they keep,
// need no special case), SyncGroup hands it its current assignment, and
// Heartbeat tells it to rejoin while it has something to reconcile. Its
// epoch moves only at its JoinGroup (mixed §1.3), so a generation it was
// given stays good for its commits until it rejoins.

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup serves a JoinGroup to consumer group g, which has
// members (mixed §4.2). The session timeout was checked by classic.Type.JoinRefused.
func (s *Type) JoinGroup(now time.Time, req machine.Request, r *kmsg.JoinGroupRequest, g *consumer.Group) {
	fail := func(code int16, id string) { s.reply(req.ID, classic.JoinError(r.Version, code, id)) }
	id := r.MemberID
	if id == "" {
		// Kafka mints a bare Uuid here; Cohort keeps the classic form
		// (client or instance id, then a UUID) its classic groups use,
		// so a member's id says what it is whichever group it joins.
		prefix := req.ClientID
		if r.InstanceID != nil {
			prefix = *r.InstanceID
		}
		id = s.h.MemberID(prefix)
	}
	if max, _ := s.h.MaxMembers(g.Tenant, s.cfg.ConsumerMaxSize); max > 0 && len(g.Members) >= max && g.Members[id] == nil {
		fail(kerr.GroupMaxSizeReached.Code, "")
		return
	}
	if !supportsClassic(g, r.ProtocolType, r.Protocols) {
		fail(kerr.InconsistentGroupProtocol.Code, "")
		return
	}
	if r.Version >= 4 && r.MemberID == "" && r.InstanceID == nil {
		// KIP-394 without pending state: the id is only a suggestion
		// until the member comes back with it.
		fail(kerr.MemberIDRequired.Code, id)
		return
	}
	sub, ok := subscription(r.Protocols[0].Metadata)
	if !ok {
		fail(kerr.UnknownServerError.Code, r.MemberID)
		return
	}
	m := g.Members[id]
	isNew, replaced := false, false
	if r.InstanceID != nil {
		holder, held := g.Static[*r.InstanceID]
		switch {
		case r.MemberID == "" && held && s.mayDowngradeReplacing(g, g.Members[holder]):
			s.classicReplacesLast(now, req, r, g, g.Members[holder], id, sub)
			return
		case r.MemberID == "" && held:
			// A new instance of a static member takes its place, whatever
			// protocol the old one spoke.
			m, replaced = s.consumer.ReplaceStatic(now, g, g.Members[holder], id), true
		case r.MemberID == "":
			m = nil
		case !held:
			fail(kerr.UnknownMemberID.Code, r.MemberID)
			return
		case holder != r.MemberID:
			fail(kerr.FencedInstanceID.Code, r.MemberID)
			return
		}
	}
	if m == nil {
		isNew = true
		m = &consumer.Member{ID: id} // a template: the record makes the member
	}
	owned := map[string][]int32{}
	for _, o := range sub.OwnedPartitions {
		owned[o.Topic] = append(owned[o.Topic], o.Partitions...)
	}

	next := *m
	next.ID = id
	if r.InstanceID != nil {
		next.Instance = r.InstanceID
	}
	if sub.Rack != nil && *sub.Rack != "" {
		next.Rack = sub.Rack
	}
	next.RebalanceTimeout = r.RebalanceTimeoutMillis
	if r.Version == 0 {
		next.RebalanceTimeout = r.SessionTimeoutMillis
	}
	topics := slices.Clone(sub.Topics)
	slices.Sort(topics)
	next.Topics, next.Regex = slices.Compact(topics), ""
	next.ClientID, next.ClientHost = req.ClientID, req.ClientHost
	next.Classic = &consumer.ClassicMeta{SessionTimeout: r.SessionTimeoutMillis, Protocols: make([]classic.Protocol, len(r.Protocols))}
	for i, p := range r.Protocols {
		next.Classic.Protocols[i] = classic.Protocol{Name: p.Name, Meta: bytes.Clone(p.Metadata)}
	}
	m, code, _ := s.consumer.AdvanceMember(now, g, m, &next, isNew, isNew || replaced, s.byName(g.Tenant, owned))
	defer s.consumer.Settle(g, now)
	if code != 0 {
		fail(code, r.MemberID)
		return
	}
	s.consumer.CancelClassicTimer(g, m, consumer.TimerClassicJoin)
	s.consumer.ArmSession(g, m, now)
	m.SyncBy = now.Add(time.Duration(next.RebalanceTimeout) * time.Millisecond)
	s.timer(grouptype.MemberTimer(consumer.TimerClassicSync, g.Key, m.ID), m.SyncBy)

	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version, resp.Generation, resp.MemberID = r.Version, m.Epoch, m.ID
	typ, proto := "consumer", m.Classic.First().Name
	resp.ProtocolType, resp.Protocol = &typ, &proto
	resp.Members = []kmsg.JoinGroupResponseMember{}
	s.reply(req.ID, resp)
}

// classicReplacesLast serves a classic static member's JoinGroup that takes
// the instance of g's last consumer-protocol member (mixed §5.1 B, §5.3):
// the group goes back to a classic group at once, the joiner holding the
// replaced member's target, and stays Stable: no rebalance. The answer is
// the consumer group's shape (no leader, no members) at the classic
// generation; the joiner's SyncGroup then gets its assignment from the
// classic group.
func (s *Type) classicReplacesLast(now time.Time, req machine.Request, r *kmsg.JoinGroupRequest, g *consumer.Group, old *consumer.Member, id string, sub *kmsg.ConsumerMemberMetadata) {
	joiner := &consumer.Member{ID: id, Instance: r.InstanceID, ClientID: req.ClientID, ClientHost: req.ClientHost,
		RebalanceTimeout: r.RebalanceTimeoutMillis, Topics: sub.Topics,
		Classic: &consumer.ClassicMeta{SessionTimeout: r.SessionTimeoutMillis, Protocols: make([]classic.Protocol, len(r.Protocols))}}
	if r.Version == 0 {
		joiner.RebalanceTimeout = r.SessionTimeoutMillis
	}
	for i, p := range r.Protocols {
		joiner.Classic.Protocols[i] = classic.Protocol{Name: p.Name, Meta: bytes.Clone(p.Metadata)}
	}
	why := fmt.Sprintf("the last consumer-protocol member %s was replaced by classic static member %s", old.ID, id)
	c := s.toClassic(now, g, old, observe.MemberFenced, "replaced by a new instance of the static member: "+id, joiner, why)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version, resp.Generation, resp.MemberID = r.Version, c.Generation, id
	typ, proto := "consumer", joiner.Classic.First().Name
	resp.ProtocolType, resp.Protocol = &typ, &proto
	resp.Members = []kmsg.JoinGroupResponseMember{}
	s.reply(req.ID, resp)
}

// supportsClassic is Kafka's ConsumerGroup.supportsClassicProtocols: the
// protocol type is "consumer" and one of the protocols is one every
// classic member lists.
func supportsClassic(g *consumer.Group, typ string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if typ != "consumer" || len(ps) == 0 {
		return false
	}
	classic, count := 0, map[string]int{}
	for _, m := range g.Members {
		if m.Classic == nil {
			continue
		}
		classic++
		for _, p := range m.Classic.Protocols {
			count[p.Name]++
		}
	}
	for _, p := range ps {
		if count[p.Name] == classic {
			return true
		}
	}
	return false
}

// classicMember finds the classic member a SyncGroup or Heartbeat names
// (mixed §4.4 checks 1–2).
func classicMember(g *consumer.Group, memberID string, instance *string) (*consumer.Member, int16) {
	if instance != nil {
		holder, ok := g.Static[*instance]
		switch {
		case !ok:
			return nil, kerr.UnknownMemberID.Code
		case holder != memberID:
			return nil, kerr.FencedInstanceID.Code
		}
	}
	m := g.Members[memberID]
	if m == nil || m.Classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// mustRejoin is whether a classic member has something to reconcile that
// only its JoinGroup can do (mixed §4.5): its epoch is behind the group's,
// it must revoke, or the partitions it waits for are all free now.
func mustRejoin(g *consumer.Group, m *consumer.Member) bool {
	switch {
	case m.Epoch < g.Epoch, m.State == consumer.MemberUnrevoked:
		return true
	case m.State == consumer.MemberUnreleased:
		for _, at := range g.Target[m.ID] {
			id, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				if m.Assigned.Has(id, p) {
					continue
				}
				if g.Owned(id, p) {
					return false
				}
			}
		}
		return true
	}
	return false
}

// SyncGroup serves a SyncGroup to consumer group g (mixed
// §4.4): no records; the member's current assignment, at its first
// protocol's version.
func (s *Type) SyncGroup(now time.Time, req machine.Request, r *kmsg.SyncGroupRequest, g *consumer.Group) {
	fail := func(code int16) { s.reply(req.ID, classic.SyncError(r.Version, code)) }
	if len(g.Members) == 0 {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	m, code := classicMember(g, r.MemberID, r.InstanceID)
	switch {
	case code != 0:
		fail(code)
		return
	case r.Generation != m.Epoch:
		fail(kerr.IllegalGeneration.Code)
		return
	case (r.ProtocolType != nil && *r.ProtocolType != "consumer") || (r.Protocol != nil && *r.Protocol != m.Classic.First().Name):
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	case g.Epoch > m.Epoch && m.State != consumer.MemberUnrevoked:
		s.consumer.ArmClassicJoin(g, m, now)
		fail(kerr.RebalanceInProgress.Code)
		return
	}
	s.consumer.CancelClassicTimer(g, m, consumer.TimerClassicSync)
	s.consumer.ArmSession(g, m, now)
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = r.Version
	resp.ProtocolType, resp.Protocol = r.ProtocolType, r.Protocol
	resp.MemberAssignment = s.assignmentBytes(g.Tenant, m.Assigned, m.Classic.First().Meta)
	s.reply(req.ID, resp)
}

// Heartbeat serves a Heartbeat to consumer group g
// (mixed §4.5).
func (s *Type) Heartbeat(now time.Time, r *kmsg.HeartbeatRequest, g *consumer.Group) int16 {
	m, code := classicMember(g, r.MemberID, r.InstanceID)
	switch {
	case code != 0:
		return code
	case r.Generation != m.Epoch:
		return kerr.IllegalGeneration.Code
	}
	s.consumer.ArmSession(g, m, now)
	if mustRejoin(g, m) {
		s.consumer.ArmClassicJoin(g, m, now)
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// LeaveGroup serves a LeaveGroup to consumer group g (mixed
// §4.7): each valid entry's member goes, then one group-epoch bump; never
// a downgrade, and an emptied group stays an Empty consumer group.
func (s *Type) LeaveGroup(now time.Time, r *kmsg.LeaveGroupRequest, resp *kmsg.LeaveGroupResponse, leaving []kmsg.LeaveGroupRequestMember, g *consumer.Group) {
	before := g.TargetsBefore()
	var first *consumer.Member // the first to leave: the rebalance's cause
	why, cause := "", observe.CauseMemberLeft
	for _, l := range leaving {
		var m *consumer.Member
		code := func() int16 {
			if l.InstanceID == nil {
				m = g.Members[l.MemberID]
			} else {
				holder, ok := g.Static[*l.InstanceID]
				if !ok {
					return kerr.UnknownMemberID.Code
				}
				if l.MemberID != "" && l.MemberID != holder {
					return kerr.FencedInstanceID.Code
				}
				m = g.Members[holder]
			}
			if m == nil || m.Classic == nil {
				return kerr.UnknownMemberID.Code
			}
			return 0
		}()
		out := kmsg.LeaveGroupResponseMember{MemberID: l.MemberID, InstanceID: l.InstanceID, ErrorCode: code}
		if code == 0 {
			out.MemberID = m.ID
			if first == nil {
				first, why = m, fmt.Sprintf("member %s left; client reason: %s", m.ID, classic.ClientReason(l.Reason))
				if l.MemberID == "" {
					cause = observe.CauseAdminAction
				}
			}
			s.consumer.StopTimers(g, m)
			s.consumer.EmitRemoveMember(g, m.ID)
			s.consumer.Event(g, observe.MemberLeft, now, m, grouptype.OrEmpty(l.Reason))
		}
		resp.Members = append(resp.Members, out)
	}
	if first != nil {
		s.consumer.EmitGroupEpoch(g, g.Epoch+1, consumer.MetadataHash(g.SubscribedTopics(s.h.Catalog(g.Tenant)), s.h.Catalog(g.Tenant)))
		s.consumer.Started(g, now, consumer.Trigger(cause, first), why, before)
		if len(g.Members) == 0 {
			s.consumer.EmitTargetEpoch(g, g.Epoch, 0)
		}
		s.consumer.Settle(g, now)
	}
	if r.Version < 3 {
		resp.ErrorCode, resp.Members = resp.Members[0].ErrorCode, nil
	}
}
