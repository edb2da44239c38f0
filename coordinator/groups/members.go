package groups

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
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

func (g *group) syncSuccess(version int16, m *member) *kmsg.SyncGroupResponse {
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
func (mc *Machine) syncGroup(now time.Time, req machine.Request, r *kmsg.SyncGroupRequest) {
	v := r.Version
	fail := func(code int16) { mc.reply(req.ID, syncError(v, code)) }
	if v >= 5 && (r.ProtocolType == nil || r.Protocol == nil) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if r.Group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	g := mc.groups[r.Group]
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
			mc.reply(m.sync.id, syncError(m.sync.version, kerr.RebalanceInProgress.Code))
		}
		m.sync = &parked{id: req.ID, version: v}
		mc.synced(g, m)
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
		mc.writeGroup(g, now)
		for _, m := range ms {
			if m.sync != nil {
				mc.reply(m.sync.id, g.syncSuccess(m.sync.version, m))
				m.sync = nil
				mc.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
			}
		}
		g.transition(stable, now)
	case stable:
		mc.synced(g, m)
		mc.reply(req.ID, g.syncSuccess(v, m))
	}
}

// synced notes that m has sent its SyncGroup for this generation.
func (mc *Machine) synced(g *group, m *member) {
	if g.pendingSync[m.id] {
		delete(g.pendingSync, m.id)
		if len(g.pendingSync) == 0 {
			mc.timer(groupTimer(timerSync, g.name), time.Time{})
		}
	}
}

// heartbeat is Kafka's classicGroupHeartbeat (§7).
func (mc *Machine) heartbeat(now time.Time, req machine.Request, r *kmsg.HeartbeatRequest) {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = r.Version
	resp.ErrorCode = func() int16 {
		if r.Group == "" {
			return kerr.InvalidGroupID.Code
		}
		g := mc.groups[r.Group]
		switch {
		case g == nil:
			return kerr.UnknownMemberID.Code
		case g.state == dead:
			return kerr.CoordinatorNotAvailable.Code
		}
		if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
			return code
		}
		if r.Generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
		m := g.members[r.MemberID]
		switch g.state {
		case empty:
			return kerr.UnknownMemberID.Code
		case preparingRebalance:
			mc.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
			return kerr.RebalanceInProgress.Code
		}
		// CompletingRebalance answers NONE: the member has its JoinGroup
		// answer and is about to sync (§7).
		mc.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
		return 0
	}()
	mc.reply(req.ID, resp)
}

// leaveGroup is Kafka's classicGroupLeave (§8).
func (mc *Machine) leaveGroup(now time.Time, req machine.Request, r *kmsg.LeaveGroupRequest) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = r.Version
	defer mc.reply(req.ID, resp)
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return
	}
	leaving := r.Members
	if r.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: r.MemberID}}
	}
	g := mc.groups[r.Group]
	if g != nil && g.state == dead {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	removed, droppedPending := false, false
	for _, l := range leaving {
		code := func() int16 {
			if g == nil {
				return kerr.UnknownMemberID.Code
			}
			if l.MemberID == "" {
				// Removal by instance id (an admin's
				// removeMembersFromConsumerGroup).
				if l.InstanceID == nil {
					return kerr.UnknownMemberID.Code
				}
				id, ok := g.static[*l.InstanceID]
				if !ok {
					return kerr.UnknownMemberID.Code
				}
				mc.removeMember(g, g.members[id], kerr.UnknownMemberID.Code)
				removed = true
				return 0
			}
			if _, ok := g.pendingJoin[l.MemberID]; ok {
				mc.dropPending(g, l.MemberID)
				droppedPending = true
				return 0
			}
			if code := g.validateMember(l.MemberID, l.InstanceID); code != 0 {
				return code
			}
			mc.removeMember(g, g.members[l.MemberID], kerr.UnknownMemberID.Code)
			removed = true
			return 0
		}()
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: l.MemberID, InstanceID: l.InstanceID, ErrorCode: code})
	}
	if r.Version < 3 {
		resp.ErrorCode, resp.Members = resp.Members[0].ErrorCode, nil
	}
	switch {
	case removed && (g.state == stable || g.state == completingRebalance):
		mc.prepareRebalance(g, now)
	case (removed || droppedPending) && g.state == preparingRebalance:
		mc.maybeCompleteJoin(g, now)
	}
}
