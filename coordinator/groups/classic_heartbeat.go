package groups

// The classic protocol's liveness: Heartbeat keeps a member in its group,
// LeaveGroup takes members out (§7, §8).

import (
	"fmt"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeat is Kafka's classicGroupHeartbeat (§7).
func (s *Shard) heartbeat(now time.Time, req machine.Request, r *kmsg.HeartbeatRequest) {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = r.Version
	resp.ErrorCode = func() int16 {
		if r.Group == "" {
			return kerr.InvalidGroupID.Code
		}
		if cg := s.consumerGroup(req.Tenant, r.Group); cg != nil {
			return s.classicHeartbeatToConsumer(now, r, cg)
		}
		g := s.classicGroup(req.Tenant, r.Group)
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
			s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
			return kerr.RebalanceInProgress.Code
		}
		// CompletingRebalance answers NONE: the member has its JoinGroup
		// answer and is about to sync (§7).
		s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
		return 0
	}()
	s.reply(req.ID, resp)
}

// leaveGroup is Kafka's classicGroupLeave (§8).
func (s *Shard) leaveGroup(now time.Time, req machine.Request, r *kmsg.LeaveGroupRequest) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = r.Version
	defer s.reply(req.ID, resp)
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return
	}
	leaving := r.Members
	if r.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: r.MemberID}}
	}
	if cg := s.consumerGroup(req.Tenant, r.Group); cg != nil {
		s.classicLeaveToConsumer(now, r, resp, leaving, cg)
		return
	}
	g := s.classicGroup(req.Tenant, r.Group)
	if g != nil && g.state == dead {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	removed, droppedPending := false, false
	reason := "" // for the rebalance: the first member removed's, as Kafka's
	var why trigger
	leave := func(m *member, client *string, cause observe.Cause) {
		s.removeMember(g, m, kerr.UnknownMemberID.Code)
		removed = true
		s.classicEvent(g, observe.MemberLeft, now, m, orEmpty(client))
		if reason == "" {
			reason = fmt.Sprintf("Removing member %s on LeaveGroup; client reason: %s", m.id, clientReason(client))
			why = classicTrigger(cause, m)
		}
	}
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
				leave(g.members[id], l.Reason, observe.CauseAdminAction)
				return 0
			}
			if _, ok := g.pendingJoin[l.MemberID]; ok {
				s.dropPending(g, l.MemberID)
				droppedPending = true
				return 0
			}
			if code := g.validateMember(l.MemberID, l.InstanceID); code != 0 {
				return code
			}
			leave(g.members[l.MemberID], l.Reason, observe.CauseMemberLeft)
			return 0
		}()
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: l.MemberID, InstanceID: l.InstanceID, ErrorCode: code})
	}
	if r.Version < 3 {
		resp.ErrorCode, resp.Members = resp.Members[0].ErrorCode, nil
	}
	switch {
	case removed && (g.state == stable || g.state == completingRebalance):
		s.prepareRebalance(g, now, why, reason)
	case (removed || droppedPending) && g.state == preparingRebalance:
		s.maybeCompleteJoin(g, now)
	}
}
