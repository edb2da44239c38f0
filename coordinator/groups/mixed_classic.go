package groups

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
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timer kinds of classic members in a consumer group: the deadline to
// rejoin after being told to, and to sync after a JoinGroup (mixed §4.6).
const (
	timerClassicJoin = 'J'
	timerClassicSync = 'S'
)

// classicJoinToConsumer serves a JoinGroup to consumer group g, which has
// members (mixed §4.2). The session timeout was checked by joinGroup.
func (s *Shard) classicJoinToConsumer(now time.Time, req machine.Request, r *kmsg.JoinGroupRequest, g *consumerGroup) {
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
		id = s.memberID(prefix)
	}
	if max, _ := s.maxMembers(g.Tenant, s.cfg.ConsumerMaxSize); max > 0 && len(g.members) >= max && g.members[id] == nil {
		fail(kerr.GroupMaxSizeReached.Code, "")
		return
	}
	if !g.supportsClassic(r.ProtocolType, r.Protocols) {
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
	m := g.members[id]
	isNew, replaced := false, false
	if r.InstanceID != nil {
		holder, held := g.static[*r.InstanceID]
		switch {
		case r.MemberID == "" && held && s.mayDowngradeReplacing(g, g.members[holder]):
			s.classicReplacesLast(now, req, r, g, g.members[holder], id, sub)
			return
		case r.MemberID == "" && held:
			// A new instance of a static member takes its place, whatever
			// protocol the old one spoke.
			m, replaced = s.replaceStaticConsumer(now, g, g.members[holder], id), true
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
		m = &consumerMember{id: id} // a template: the record makes the member
	}
	owned := map[string][]int32{}
	for _, o := range sub.OwnedPartitions {
		owned[o.Topic] = append(owned[o.Topic], o.Partitions...)
	}

	next := *m
	next.id = id
	if r.InstanceID != nil {
		next.instance = r.InstanceID
	}
	if sub.Rack != nil && *sub.Rack != "" {
		next.rack = sub.Rack
	}
	next.rebalanceTimeout = r.RebalanceTimeoutMillis
	if r.Version == 0 {
		next.rebalanceTimeout = r.SessionTimeoutMillis
	}
	topics := slices.Clone(sub.Topics)
	slices.Sort(topics)
	next.topics, next.regex = slices.Compact(topics), ""
	next.clientID, next.clientHost = req.ClientID, req.ClientHost
	next.classic = &classicMeta{sessionTimeout: r.SessionTimeoutMillis, protocols: make([]classic.Protocol, len(r.Protocols))}
	for i, p := range r.Protocols {
		next.classic.protocols[i] = classic.Protocol{Name: p.Name, Meta: bytes.Clone(p.Metadata)}
	}
	m, code, _ := s.advanceMember(now, g, m, &next, isNew, isNew || replaced, s.byName(g.Tenant, owned))
	defer s.settleConsumer(g, now)
	if code != 0 {
		fail(code, r.MemberID)
		return
	}
	s.cancelClassicTimer(g, m, timerClassicJoin)
	s.armConsumerSession(g, m, now)
	m.syncBy = now.Add(time.Duration(next.rebalanceTimeout) * time.Millisecond)
	s.timer(memberTimer(timerClassicSync, g.Key, m.id), m.syncBy)

	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version, resp.Generation, resp.MemberID = r.Version, m.epoch, m.id
	typ, proto := "consumer", m.classic.first().Name
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
func (s *Shard) classicReplacesLast(now time.Time, req machine.Request, r *kmsg.JoinGroupRequest, g *consumerGroup, old *consumerMember, id string, sub *kmsg.ConsumerMemberMetadata) {
	joiner := &consumerMember{id: id, instance: r.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		rebalanceTimeout: r.RebalanceTimeoutMillis, topics: sub.Topics,
		classic: &classicMeta{sessionTimeout: r.SessionTimeoutMillis, protocols: make([]classic.Protocol, len(r.Protocols))}}
	if r.Version == 0 {
		joiner.rebalanceTimeout = r.SessionTimeoutMillis
	}
	for i, p := range r.Protocols {
		joiner.classic.protocols[i] = classic.Protocol{Name: p.Name, Meta: bytes.Clone(p.Metadata)}
	}
	why := fmt.Sprintf("the last consumer-protocol member %s was replaced by classic static member %s", old.id, id)
	c := s.toClassic(now, g, old, observe.MemberFenced, "replaced by a new instance of the static member: "+id, joiner, why)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version, resp.Generation, resp.MemberID = r.Version, c.Generation, id
	typ, proto := "consumer", joiner.classic.first().Name
	resp.ProtocolType, resp.Protocol = &typ, &proto
	resp.Members = []kmsg.JoinGroupResponseMember{}
	s.reply(req.ID, resp)
}

// supportsClassic is Kafka's ConsumerGroup.supportsClassicProtocols: the
// protocol type is "consumer" and one of the protocols is one every
// classic member lists.
func (g *consumerGroup) supportsClassic(typ string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if typ != "consumer" || len(ps) == 0 {
		return false
	}
	classic, count := 0, map[string]int{}
	for _, m := range g.members {
		if m.classic == nil {
			continue
		}
		classic++
		for _, p := range m.classic.protocols {
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
func (g *consumerGroup) classicMember(memberID string, instance *string) (*consumerMember, int16) {
	if instance != nil {
		holder, ok := g.static[*instance]
		switch {
		case !ok:
			return nil, kerr.UnknownMemberID.Code
		case holder != memberID:
			return nil, kerr.FencedInstanceID.Code
		}
	}
	m := g.members[memberID]
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// mustRejoin is whether a classic member has something to reconcile that
// only its JoinGroup can do (mixed §4.5): its epoch is behind the group's,
// it must revoke, or the partitions it waits for are all free now.
func (g *consumerGroup) mustRejoin(m *consumerMember) bool {
	switch {
	case m.epoch < g.epoch, m.state == memberUnrevoked:
		return true
	case m.state == memberUnreleased:
		for _, at := range g.target[m.id] {
			id, ps := at.TopicID, at.Partitions
			for _, p := range ps {
				if m.assigned.has(id, p) {
					continue
				}
				if _, busy := g.owners[tp{id, p}]; busy {
					return false
				}
			}
		}
		return true
	}
	return false
}

// armClassicJoin gives a classic member told to rejoin its rebalance
// timeout to do so, unless it already has one.
func (s *Shard) armClassicJoin(g *consumerGroup, m *consumerMember, now time.Time) {
	if m.joinBy.IsZero() {
		m.joinBy = now.Add(time.Duration(m.rebalanceTimeout) * time.Millisecond)
		s.timer(memberTimer(timerClassicJoin, g.Key, m.id), m.joinBy)
	}
}

func (s *Shard) cancelClassicTimer(g *consumerGroup, m *consumerMember, kind byte) {
	at := &m.joinBy
	if kind == timerClassicSync {
		at = &m.syncBy
	}
	if !at.IsZero() {
		*at = time.Time{}
		s.timer(memberTimer(kind, g.Key, m.id), time.Time{})
	}
}

func (s *Shard) cancelClassicTimers(g *consumerGroup, m *consumerMember) {
	s.cancelClassicTimer(g, m, timerClassicJoin)
	s.cancelClassicTimer(g, m, timerClassicSync)
}

// classicSyncToConsumer serves a SyncGroup to consumer group g (mixed
// §4.4): no records; the member's current assignment, at its first
// protocol's version.
func (s *Shard) classicSyncToConsumer(now time.Time, req machine.Request, r *kmsg.SyncGroupRequest, g *consumerGroup) {
	fail := func(code int16) { s.reply(req.ID, classic.SyncError(r.Version, code)) }
	if len(g.members) == 0 {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	m, code := g.classicMember(r.MemberID, r.InstanceID)
	switch {
	case code != 0:
		fail(code)
		return
	case r.Generation != m.epoch:
		fail(kerr.IllegalGeneration.Code)
		return
	case (r.ProtocolType != nil && *r.ProtocolType != "consumer") || (r.Protocol != nil && *r.Protocol != m.classic.first().Name):
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	case g.epoch > m.epoch && m.state != memberUnrevoked:
		s.armClassicJoin(g, m, now)
		fail(kerr.RebalanceInProgress.Code)
		return
	}
	s.cancelClassicTimer(g, m, timerClassicSync)
	s.armConsumerSession(g, m, now)
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = r.Version
	resp.ProtocolType, resp.Protocol = r.ProtocolType, r.Protocol
	resp.MemberAssignment = s.assignmentBytes(g.Tenant, m.assigned, m.classic.first().Meta)
	s.reply(req.ID, resp)
}

// classicHeartbeatToConsumer serves a Heartbeat to consumer group g
// (mixed §4.5).
func (s *Shard) classicHeartbeatToConsumer(now time.Time, r *kmsg.HeartbeatRequest, g *consumerGroup) int16 {
	m, code := g.classicMember(r.MemberID, r.InstanceID)
	switch {
	case code != 0:
		return code
	case r.Generation != m.epoch:
		return kerr.IllegalGeneration.Code
	}
	s.armConsumerSession(g, m, now)
	if g.mustRejoin(m) {
		s.armClassicJoin(g, m, now)
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// classicLeaveToConsumer serves a LeaveGroup to consumer group g (mixed
// §4.7): each valid entry's member goes, then one group-epoch bump; never
// a downgrade, and an emptied group stays an Empty consumer group.
func (s *Shard) classicLeaveToConsumer(now time.Time, r *kmsg.LeaveGroupRequest, resp *kmsg.LeaveGroupResponse, leaving []kmsg.LeaveGroupRequestMember, g *consumerGroup) {
	before := g.consumerBefore()
	var first *consumerMember // the first to leave: the rebalance's cause
	why, cause := "", observe.CauseMemberLeft
	for _, l := range leaving {
		var m *consumerMember
		code := func() int16 {
			if l.InstanceID == nil {
				m = g.members[l.MemberID]
			} else {
				holder, ok := g.static[*l.InstanceID]
				if !ok {
					return kerr.UnknownMemberID.Code
				}
				if l.MemberID != "" && l.MemberID != holder {
					return kerr.FencedInstanceID.Code
				}
				m = g.members[holder]
			}
			if m == nil || m.classic == nil {
				return kerr.UnknownMemberID.Code
			}
			return 0
		}()
		out := kmsg.LeaveGroupResponseMember{MemberID: l.MemberID, InstanceID: l.InstanceID, ErrorCode: code}
		if code == 0 {
			out.MemberID = m.id
			if first == nil {
				first, why = m, fmt.Sprintf("member %s left; client reason: %s", m.id, classic.ClientReason(l.Reason))
				if l.MemberID == "" {
					cause = observe.CauseAdminAction
				}
			}
			s.consumerLeaving(g, m)
			s.emitRemoveMember(g, m.id)
			s.consumerEvent(g, observe.MemberLeft, now, m, orEmpty(l.Reason))
		}
		resp.Members = append(resp.Members, out)
	}
	if first != nil {
		s.emitGroupEpoch(g, g.epoch+1, metadataHash(g.subscribedTopics(s.catalog(g.Tenant)), s.catalog(g.Tenant)))
		s.consumerStarted(g, now, consumerTrigger(cause, first), why, before)
		if len(g.members) == 0 {
			s.emitTargetEpoch(g, g.epoch, 0)
		}
		s.settleConsumer(g, now)
	}
	if r.Version < 3 {
		resp.ErrorCode, resp.Members = resp.Members[0].ErrorCode, nil
	}
}

// consumerLeaving stops every timer of a member about to be removed.
func (s *Shard) consumerLeaving(g *consumerGroup, m *consumerMember) {
	s.cancelRevocation(g, m)
	s.cancelClassicTimers(g, m)
	if !m.armedAt.IsZero() {
		m.armedAt = 0
		s.timer(memberTimer(timerConsumerSession, g.Key, m.id), time.Time{})
	}
}
