package groups

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// syncError is a SyncGroup error response: empty assignment, null
// protocol type and name.
func syncError(version, code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version, r.ErrorCode = version, code
	return r
}

func (g *classicGroup) syncSuccess(version int16, m *member) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = version
	typ, proto := g.protocolType, g.protocol
	r.ProtocolType, r.Protocol = &typ, &proto
	r.MemberAssignment = m.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

// syncGroup is Kafka's classicGroupSync (§6.2).
func (s *Shard) syncGroup(now time.Time, req machine.Request, r *kmsg.SyncGroupRequest) {
	v := r.Version
	fail := func(code int16) { s.reply(req.ID, syncError(v, code)) }
	if v >= 5 && (r.ProtocolType == nil || r.Protocol == nil) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if r.Group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	if cg := s.consumerGroup(req.Tenant, r.Group); cg != nil {
		s.classicSyncToConsumer(now, req, r, cg)
		return
	}
	g := s.classicGroup(req.Tenant, r.Group)
	switch {
	case g == nil || g.state == empty:
		fail(kerr.UnknownMemberID.Code)
		return
	case g.state == dead:
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
		fail(code)
		return
	}
	if r.Generation != g.generation {
		fail(kerr.IllegalGeneration.Code)
		return
	}
	if (r.ProtocolType != nil && *r.ProtocolType != g.protocolType) || (r.Protocol != nil && *r.Protocol != g.protocol) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.members[r.MemberID]
	switch g.state {
	case preparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case completingRebalance:
		if m.sync != nil {
			s.reply(m.sync.id, syncError(m.sync.version, kerr.RebalanceInProgress.Code))
		}
		m.sync = &parked{id: req.ID, version: v}
		s.synced(g, m)
		if m.id != g.leader {
			return
		}
		// The leader's assignment: members it left out get empty bytes,
		// ids that are not members are ignored, later duplicates win.
		given := make(map[string][]byte, len(r.GroupAssignment))
		for _, a := range r.GroupAssignment {
			given[a.MemberID] = a.MemberAssignment
		}
		ms := g.sortedMembers()
		for _, m := range ms {
			m.assignment = given[m.id]
		}
		// The generation becomes durable here; every answer below is
		// released only after this record is (§6.3).
		s.emitClassic(g)
		for _, m := range ms {
			if m.sync != nil {
				s.reply(m.sync.id, g.syncSuccess(m.sync.version, m))
				m.sync = nil
				s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
			}
		}
		g.transition(stable, now)
		s.classicEvent(g, observe.RebalanceCompleted, now, nil, "")
	case stable:
		s.synced(g, m)
		s.reply(req.ID, g.syncSuccess(v, m))
	}
}

// synced notes that m has sent its SyncGroup for this generation.
func (s *Shard) synced(g *classicGroup, m *member) {
	if g.pendingSync[m.id] {
		delete(g.pendingSync, m.id)
		if len(g.pendingSync) == 0 {
			s.timer(groupTimer(timerSync, g.gkey), time.Time{})
		}
	}
}
