package groups_test

// Classic clients in the KIP-848 property test (cprop_test.go): a mixed
// population, clients that switch protocol when a static member restarts.
// A classic client is what franz-go's, librdkafka's or Java's classic
// consumer does inside a consumer group: JoinGroup (its subscription
// reporting what it owns; an eager client first gives everything up),
// SyncGroup for the generation it was given, then Heartbeat at the
// interval until told REBALANCE_IN_PROGRESS, when it joins again at once;
// a cooperative client that lost partitions in a SyncGroup joins again at
// once too, to report it. UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID, and
// its own session deadline passing, make it drop everything and join
// again with no member id. It never joins a group without members: an empty consumer
// group becomes a classic group at a classic JoinGroup, whose join barrier
// this synchronous model cannot wait on.

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cpPhase is where a classic client is in the classic protocol.
type cpPhase int

const (
	cpStable cpPhase = iota // synced: heartbeats
	cpJoin                  // must (re)join
	cpSync                  // joined: must sync
)

const cpProtocol = "cooperative-sticky" // every classic client's

// classicStep sends the request a classic client's phase calls for.
func (s *cpSim) classicStep(m *cpMember) {
	switch m.phase {
	case cpJoin:
		s.classicJoin(m)
	case cpSync:
		s.classicSync(m)
	default:
		s.classicHeartbeat(m)
	}
}

// hasMembers reports whether the group is a consumer group with members.
func (s *cpSim) hasMembers() bool {
	d := s.h.cdescribe(pGroup)
	return d.ErrorCode == 0 && len(d.Members) > 0
}

func (s *cpSim) classicMeta(m *cpMember) []byte {
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version = 1
	sub.Topics = slices.Clone(m.topics)
	byTopic := map[string][]int32{}
	for tp := range m.owned {
		byTopic[tp.topic] = append(byTopic[tp.topic], tp.p)
	}
	for _, t := range []string{"t", "u"} {
		if ps := byTopic[t]; len(ps) > 0 {
			slices.Sort(ps)
			sub.OwnedPartitions = append(sub.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: t, Partitions: ps})
		}
	}
	return sub.AppendTo(nil)
}

// classicFenced handles UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID: only a
// client that misbehaved may get them; it drops everything and joins
// again (a dynamic one with no member id).
func (s *cpSim) classicFenced(m *cpMember, what string, code int16) {
	if m.misbehaved == "" {
		s.fail(3, "%s behaved and its %s got %s", m.name, what, pErrName(code))
	}
	s.stats["fenced: "+m.misbehaved]++
	s.rejoin(m, pErrName(code))
}

func (s *cpSim) classicJoin(m *cpMember) {
	now := s.h.now
	if !s.hasMembers() {
		m.next = now.Add(time.Second)
		return
	}
	if m.eager && len(m.owned) > 0 {
		s.tr("    %s (eager) gives up %s before joining", m.name, m.owned)
		s.drop(m)
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.InstanceID = pGroup, m.id, m.instance
	req.SessionTimeoutMillis = int32(s.cfg.ConsumerSessionTimeout.Milliseconds())
	req.RebalanceTimeoutMillis = int32(m.rebal.Milliseconds())
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: cpProtocol, Metadata: s.classicMeta(m)}}
	resp := do[*kmsg.JoinGroupResponse](s.h, req)
	line := fmt.Sprintf("    %s → JoinGroup id %q owned %s: ", m.name, m.id, m.owned)
	switch resp.ErrorCode {
	case 0:
		s.tr("%sgeneration %d", line, resp.Generation)
	case kerr.MemberIDRequired.Code:
		s.tr("%sMEMBER_ID_REQUIRED %s", line, resp.MemberID)
		m.id, m.next = resp.MemberID, now
		s.classicJoin(m)
		return
	case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
		s.tr("%s%s", line, pErrName(resp.ErrorCode))
		s.classicFenced(m, "JoinGroup", resp.ErrorCode)
		return
	case kerr.GroupMaxSizeReached.Code:
		s.tr("%s%s", line, pErrName(resp.ErrorCode))
		if s.cfg.ConsumerMaxSize == 0 {
			s.fail(3, "%s got GROUP_MAX_SIZE_REACHED", m.name)
		}
		s.stats["group max size reached"]++
		s.drop(m)
		m.status = cpGone
		return
	default:
		s.fail(3, "%s JoinGroup: %s", m.name, pErrName(resp.ErrorCode))
	}
	if resp.MemberID == "" || (m.id != "" && resp.MemberID != m.id) {
		s.fail(3, "%s joined as %q, was answered member id %q", m.name, m.id, resp.MemberID)
	}
	if resp.Generation < s.epochs[resp.MemberID] || resp.Generation <= 0 {
		s.fail(2, "member %s was answered generation %d after %d", resp.MemberID, resp.Generation, s.epochs[resp.MemberID])
	}
	if resp.Protocol == nil || *resp.Protocol != cpProtocol || resp.LeaderID != "" || len(resp.Members) != 0 {
		s.fail(3, "%s JoinGroup answered protocol %v leader %q members %d", m.name, resp.Protocol, resp.LeaderID, len(resp.Members))
	}
	s.stats["classic joined"]++
	m.id = resp.MemberID
	s.epochs[m.id] = resp.Generation
	m.epoch, m.phase, m.sentSubs, m.lastAck, m.next = resp.Generation, cpSync, true, now, now
	if m.inherit != nil {
		m.inherit = nil // a classic replacement starts from what it owns
	}
	s.grown = false
	s.classicSync(m)
}

func (s *cpSim) classicSync(m *cpMember) {
	now := s.h.now
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.InstanceID, req.Generation = pGroup, m.id, m.instance, m.epoch
	typ, proto := "consumer", cpProtocol
	req.ProtocolType, req.Protocol = &typ, &proto
	resp := do[*kmsg.SyncGroupResponse](s.h, req)
	line := fmt.Sprintf("    %s → SyncGroup generation %d: ", m.name, m.epoch)
	switch resp.ErrorCode {
	case 0:
	case kerr.RebalanceInProgress.Code:
		s.tr("%sREBALANCE_IN_PROGRESS", line)
		// Rejoined after a back-off (retry.backoff.ms): the group
		// epoch is ahead of the one the JoinGroup gave, and the target
		// may wait for the assignment interval.
		s.stats["classic told to rejoin"]++
		m.phase, m.next, m.lastAck = cpJoin, now.Add(100*time.Millisecond), now
		return
	case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
		s.tr("%s%s", line, pErrName(resp.ErrorCode))
		s.classicFenced(m, "SyncGroup", resp.ErrorCode)
		return
	default:
		s.fail(3, "%s SyncGroup: %s", m.name, pErrName(resp.ErrorCode))
	}
	var as kmsg.ConsumerMemberAssignment
	if err := as.ReadFrom(resp.MemberAssignment); err != nil {
		s.fail(3, "%s SyncGroup assignment %x: %v", m.name, resp.MemberAssignment, err)
	}
	a := cpSet{}
	sub := s.subscribed(m)
	for _, t := range as.Topics {
		for _, p := range t.Partitions {
			tp := cpTP{t.Topic, p}
			if !sub[t.Topic] || p < 0 || p >= s.parts[t.Topic] {
				s.fail(3, "%s (subscribed to %s) was assigned %s", m.name, s.subString(m), tp)
			}
			a[tp] = true
		}
	}
	s.tr("%sassignment %s", line, a)
	revoked := m.owned.minus(a)
	if len(a.minus(m.owned)) > 0 && len(m.owned) > 0 {
		s.stats["assignment moved a partition"]++
	}
	m.owned = a
	m.lastAck, m.phase, m.next = now, cpStable, now.Add(s.cfg.ConsumerHeartbeatInterval)
	if len(revoked) > 0 && !m.eager {
		// A cooperative client that gave partitions up joins again at
		// once to say so.
		s.stats["classic cooperative revoked"]++
		m.phase, m.next = cpJoin, now
		s.classicJoin(m)
	}
}

func (s *cpSim) classicHeartbeat(m *cpMember) {
	now := s.h.now
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.InstanceID, req.Generation = pGroup, m.id, m.instance, m.epoch
	resp := do[*kmsg.HeartbeatResponse](s.h, req)
	switch resp.ErrorCode {
	case 0:
		s.tr("    %s → Heartbeat generation %d: NONE", m.name, m.epoch)
		m.lastAck, m.next = now, now.Add(s.cfg.ConsumerHeartbeatInterval)
	case kerr.RebalanceInProgress.Code:
		s.tr("    %s → Heartbeat generation %d: REBALANCE_IN_PROGRESS", m.name, m.epoch)
		s.stats["classic told to rejoin"]++
		m.lastAck, m.phase, m.next = now, cpJoin, now
		s.classicJoin(m)
	case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
		s.tr("    %s → Heartbeat generation %d: %s", m.name, m.epoch, pErrName(resp.ErrorCode))
		s.classicFenced(m, "Heartbeat", resp.ErrorCode)
	default:
		s.fail(3, "%s Heartbeat generation %d: %s", m.name, m.epoch, pErrName(resp.ErrorCode))
	}
}

func (s *cpSim) classicLeave(m *cpMember) {
	s.drop(m)
	m.status = cpGone
	if m.id == "" || !m.joined() {
		return
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 5
	req.Group = pGroup
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m.id, InstanceID: m.instance}}
	resp := do[*kmsg.LeaveGroupResponse](s.h, req)
	code := resp.ErrorCode
	if code == 0 && len(resp.Members) == 1 {
		code = resp.Members[0].ErrorCode
	}
	s.tr("    %s → LeaveGroup: %s", m.name, pErrName(code))
	if code != 0 && code != kerr.UnknownMemberID.Code && code != kerr.FencedInstanceID.Code {
		s.fail(3, "%s leaving: %s", m.name, pErrName(code))
	}
}

// anchor makes sure a live consumer-protocol client exists once the chaos
// stops, so that waiting classic clients find a group with members.
func (s *cpSim) anchor() {
	for _, m := range s.members {
		if m.status != cpLive && m.status != cpPaused {
			continue
		}
		if !m.classic {
			return
		}
	}
	p := s.pClassic
	s.pClassic = 0
	s.tr("    a consumer-protocol client starts, for the classic ones to join")
	s.spawn(nil, nil)
	s.pClassic = p
}
