package classic

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncError is a SyncGroup error response: empty assignment, null
// protocol type and name.
func SyncError(version, code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version, r.ErrorCode = version, code
	return r
}

func (g *Group) syncSuccess(version int16, m *Member) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = version
	typ, proto := g.ProtocolType, g.Protocol()
	r.ProtocolType, r.Protocol = &typ, &proto
	r.MemberAssignment = m.Assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

// SyncRefused answers a SyncGroup that Kafka refuses before it looks the
// group up (v5+ without protocol type and name, or no group id), and
// reports whether it did: the shard routes only the others.
func (s *Type) SyncRefused(req machine.Request, r *kmsg.SyncGroupRequest) bool {
	switch {
	case r.Version >= 5 && (r.ProtocolType == nil || r.Protocol == nil):
		s.reply(req.ID, SyncError(r.Version, kerr.InconsistentGroupProtocol.Code))
		return true
	case r.Group == "":
		s.reply(req.ID, SyncError(r.Version, kerr.InvalidGroupID.Code))
		return true
	}
	return false
}

// SyncGroup is Kafka's classicGroupSync (§6.2), for a request SyncRefused
// let through to classic group g (nil: none).
func (s *Type) SyncGroup(now time.Time, req machine.Request, r *kmsg.SyncGroupRequest, g *Group) {
	v := r.Version
	fail := func(code int16) { s.reply(req.ID, SyncError(v, code)) }
	switch {
	case g == nil || g.State == Empty:
		fail(kerr.UnknownMemberID.Code)
		return
	case g.State == Dead:
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
		fail(code)
		return
	}
	if r.Generation != g.Generation {
		fail(kerr.IllegalGeneration.Code)
		return
	}
	if (r.ProtocolType != nil && *r.ProtocolType != g.ProtocolType) || (r.Protocol != nil && *r.Protocol != g.Protocol()) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.Members()[r.MemberID]
	switch g.State {
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case CompletingRebalance:
		if m.Sync != nil {
			s.reply(m.Sync.ID, SyncError(m.Sync.Version, kerr.RebalanceInProgress.Code))
		}
		m.Sync = &Parked{ID: req.ID, Version: v}
		s.synced(g, m)
		if m.ID != g.Leader() {
			return
		}
		// The leader's assignment: members it left out get empty bytes,
		// ids that are not members are ignored, later duplicates win.
		given := make(map[string][]byte, len(r.GroupAssignment))
		for _, a := range r.GroupAssignment {
			given[a.MemberID] = a.MemberAssignment
		}
		ms := g.SortedMembers()
		for _, m := range ms {
			m.Assignment = given[m.ID]
		}
		// The generation becomes durable here; every answer below is
		// released only after this record is (§6.3).
		s.EmitRecord(g)
		for _, m := range ms {
			if m.Sync != nil {
				s.reply(m.Sync.ID, g.syncSuccess(m.Sync.Version, m))
				m.Sync = nil
				s.ArmSession(g, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
			}
		}
		g.transition(Stable, now)
		s.Event(g, observe.RebalanceCompleted, now, nil, "")
	case Stable:
		s.synced(g, m)
		s.reply(req.ID, g.syncSuccess(v, m))
	}
}

// synced notes that m has sent its SyncGroup for this generation.
func (s *Type) synced(g *Group, m *Member) {
	if g.pendingSyncs()[m.ID] {
		delete(g.pendingSyncs(), m.ID)
		if len(g.pendingSyncs()) == 0 {
			s.timer(grouptype.GroupTimer(TimerSync, g.Key), time.Time{})
		}
	}
}
