package classic

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinError is a JoinGroup error response (§4.5).
func JoinError(version, code int16, memberID string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version, r.ErrorCode, r.MemberID, r.Generation = version, code, memberID, -1
	if version < 7 {
		r.Protocol = new(string)
	}
	return r
}

// joinSuccess answers member m with the group's current generation; the
// leader gets the member list.
func (g *Group) joinSuccess(version int16, m *Member) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version, r.Generation, r.MemberID, r.LeaderID = version, g.Generation, m.ID, g.Leader()
	typ, proto := g.ProtocolType, g.Protocol()
	r.ProtocolType, r.Protocol = &typ, &proto
	if m.ID == g.Leader() {
		r.Members = g.memberList()
	}
	return r
}

func (g *Group) memberList() []kmsg.JoinGroupResponseMember {
	ms := g.SortedMembers()
	out := make([]kmsg.JoinGroupResponseMember, len(ms))
	for i, m := range ms {
		out[i] = kmsg.JoinGroupResponseMember{MemberID: m.ID, InstanceID: m.Instance, ProtocolMetadata: m.MetadataFor(g.Protocol())}
	}
	return out
}

// JoinRefused answers a JoinGroup that Kafka refuses before it looks the
// group up (no group id, or a session timeout out of bounds), and reports
// whether it did: the shard routes only the others.
func (s *Type) JoinRefused(req machine.Request, r *kmsg.JoinGroupRequest) bool {
	session := time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	switch {
	case r.Group == "":
		s.reply(req.ID, JoinError(r.Version, kerr.InvalidGroupID.Code, r.MemberID))
		return true
	case session < s.cfg.MinSessionTimeout || session > s.cfg.MaxSessionTimeout:
		s.reply(req.ID, JoinError(r.Version, kerr.InvalidSessionTimeout.Code, r.MemberID))
		return true
	}
	return false
}

// JoinGroup is Kafka's classicGroupJoin (§4.2), for a request JoinRefused
// let through to classic group g (nil: the group does not exist, and the
// join creates it).
func (s *Type) JoinGroup(now time.Time, req machine.Request, r *kmsg.JoinGroupRequest, g *Group) {
	v := r.Version
	fail := func(code int16, memberID string) { s.reply(req.ID, JoinError(v, code, memberID)) }
	k := grouptype.Key{Tenant: req.Tenant, Name: r.Group}
	if g == nil {
		if r.MemberID != "" {
			fail(kerr.UnknownMemberID.Code, r.MemberID)
			return
		}
		// JoinGroup has no ErrorMessage: the code alone says it.
		if msg := s.h.NewGroupRefused(k.Tenant); msg != "" {
			fail(kerr.GroupMaxSizeReached.Code, "")
			return
		}
		g = s.Create(k, now)
		// As Kafka: a group created by a JoinGroup exists durably from
		// then on, whatever becomes of the join (§4.2 side effect).
		defer func() {
			if !g.HasRecord() {
				s.emit(s.key(k).Key(), record.ClassicGroup{ID: g.ID, StateTimestamp: now.UnixMilli()}.Encode())
			}
		}()
	}
	if !s.acceptJoining(g, r.MemberID) {
		if m := g.Members()[r.MemberID]; m != nil {
			s.removeMember(g, m, kerr.GroupMaxSizeReached.Code)
			s.Event(g, observe.MemberFenced, now, m, "the group is full (group.max.size)")
		}
		if _, ok := g.PendingJoin()[r.MemberID]; ok {
			s.DropPending(g, r.MemberID)
		}
		fail(kerr.GroupMaxSizeReached.Code, "")
		return
	}
	// The metadata is copied: kmsg's bytes alias the request's frame,
	// which a member keeping them would keep whole.
	ps := make([]Protocol, len(r.Protocols))
	for i, p := range r.Protocols {
		ps[i] = Protocol{Name: p.Name, Meta: bytes.Clone(p.Metadata)}
	}
	rebalance := r.RebalanceTimeoutMillis
	if v == 0 {
		rebalance = r.SessionTimeoutMillis
	}
	j := joinReq{req: req, r: r, protocols: ps, rebalance: rebalance, parked: &Parked{ID: req.ID, Version: v}}
	if g.State == Dead {
		fail(kerr.CoordinatorNotAvailable.Code, r.MemberID)
		return
	}
	if r.MemberID == "" {
		s.joinNewMember(now, g, j)
	} else {
		s.joinExistingMember(now, g, j)
	}
}

// joinReq is a JoinGroup being handled.
type joinReq struct {
	req       machine.Request
	r         *kmsg.JoinGroupRequest
	protocols []Protocol
	rebalance int32
	parked    *Parked
}

func (j joinReq) fail(s *Type, code int16, memberID string) {
	s.reply(j.req.ID, JoinError(j.r.Version, code, memberID))
}

// acceptJoining is Kafka's acceptJoiningMember (§4.2 step 7).
func (s *Type) acceptJoining(g *Group, memberID string) bool {
	m := g.Members()[memberID]
	maxSize, _ := s.h.MaxMembers(g.Tenant, s.cfg.MaxSize)
	switch g.State {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		return (m != nil && m.Join != nil) || g.awaitingJoin() < maxSize
	default:
		return m != nil || len(g.Members()) < maxSize
	}
}

func (s *Type) joinNewMember(now time.Time, g *Group, j joinReq) {
	r := j.r
	if !g.acceptsProtocols(r.ProtocolType, j.protocols) {
		j.fail(s, kerr.InconsistentGroupProtocol.Code, "")
		return
	}
	prefix := j.req.ClientID
	if r.InstanceID != nil {
		prefix = *r.InstanceID
	}
	id := s.h.MemberID(prefix)
	switch {
	case r.InstanceID != nil:
		if old, ok := g.Static()[*r.InstanceID]; ok {
			s.replaceStatic(now, g, j, old, id)
		} else {
			s.addMember(now, g, j, id)
		}
	case r.Version >= 4:
		// KIP-394: a new dynamic member must come back with the id it is
		// given, within its session timeout (§4.3). It is not a member
		// until then.
		//
		// Unlike Kafka, the ids handed out count towards group.max.size,
		// and at most MaxPendingMembers are outstanding: each lives for
		// the session timeout, so otherwise one connection sending
		// JoinGroups without a member id makes millions.
		if maxSize, _ := s.h.MaxMembers(g.Tenant, s.cfg.MaxSize); len(g.Members())+len(g.PendingJoin()) >= maxSize ||
			(s.cfg.MaxPendingMembers > 0 && len(g.PendingJoin()) >= s.cfg.MaxPendingMembers) {
			j.fail(s, kerr.GroupMaxSizeReached.Code, "")
			return
		}
		deadline := now.Add(time.Duration(r.SessionTimeoutMillis) * time.Millisecond)
		g.EnsureMaps()
		g.PendingJoin()[id] = deadline
		s.timer(grouptype.MemberTimer(TimerMember, g.Key, id), deadline)
		j.fail(s, kerr.MemberIDRequired.Code, id)
	default:
		s.addMember(now, g, j, id)
	}
}

func (s *Type) joinExistingMember(now time.Time, g *Group, j joinReq) {
	r := j.r
	if !g.acceptsProtocols(r.ProtocolType, j.protocols) {
		j.fail(s, kerr.InconsistentGroupProtocol.Code, r.MemberID)
		return
	}
	if _, ok := g.PendingJoin()[r.MemberID]; ok {
		if r.InstanceID != nil {
			// Static members are never made pending (Kafka answers an
			// internal error here).
			j.fail(s, kerr.UnknownServerError.Code, r.MemberID)
			return
		}
		s.addMember(now, g, j, r.MemberID)
		return
	}
	if code := g.validateMember(r.MemberID, r.InstanceID); code != 0 {
		j.fail(s, code, r.MemberID)
		return
	}
	m := g.Members()[r.MemberID]
	// Why the rebalance (before the member changes): Kafka's reason,
	// and its cause.
	why := rejoinTrigger(g, m, j.protocols)
	updating := func() string {
		if g.State == Stable && m.ID == g.Leader() {
			return fmt.Sprintf("Leader %s re-joining group during %v; client reason: %s", m.ID, g.State, ClientReason(r.Reason))
		}
		return fmt.Sprintf("Updating metadata for member %s during %v; client reason: %s", m.ID, g.State, ClientReason(r.Reason))
	}
	switch g.State {
	case PreparingRebalance:
		s.updateMember(g, m, j)
		s.maybeCompleteJoin(g, now)
	case CompletingRebalance:
		if m.SameProtocols(j.protocols) {
			// The member lost its JoinGroup response: send it again.
			s.reply(j.req.ID, g.joinSuccess(r.Version, m))
			return
		}
		s.updateMember(g, m, j)
		s.PrepareRebalance(g, now, why, updating())
	case Stable:
		if m.ID != g.Leader() && m.SameProtocols(j.protocols) {
			// As Kafka: a follower's rejoin with unchanged metadata
			// returns the current generation without a rebalance.
			s.reply(j.req.ID, g.joinSuccess(r.Version, m))
			return
		}
		s.updateMember(g, m, j)
		s.PrepareRebalance(g, now, why, updating())
	default:
		j.fail(s, kerr.UnknownMemberID.Code, r.MemberID)
	}
}

// rejoinTrigger is why known member m joining again with protocols ps
// starts a rebalance: its subscription changed when the group's protocol
// type is "consumer" and its metadata for the group's protocol names other
// topics; otherwise the client asked (CauseMemberRejoined).
func rejoinTrigger(g *Group, m *Member, ps []Protocol) grouptype.Trigger {
	if g.ProtocolType == "consumer" {
		var meta []byte
		for _, p := range ps {
			if p.Name == g.Protocol() {
				meta = p.Meta
				break
			}
		}
		was, ok1 := subscriptionTopics(m.MetadataFor(g.Protocol()))
		is, ok2 := subscriptionTopics(meta)
		if ok1 && ok2 {
			slices.Sort(was)
			slices.Sort(is)
			if !slices.Equal(slices.Compact(was), slices.Compact(is)) {
				return Trigger(observe.CauseSubscriptionChanged, m)
			}
		}
	}
	return Trigger(observe.CauseMemberRejoined, m)
}

// validateMember is Kafka's ClassicGroup.validateMember.
func (g *Group) validateMember(memberID string, instance *string) int16 {
	if instance != nil {
		holder, ok := g.Static()[*instance]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case holder != memberID:
			return kerr.FencedInstanceID.Code
		}
	}
	if g.Members()[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// park makes j the member's parked JoinGroup. A JoinGroup it replaces
// (only a client pipelining two joins can do that; Kafka, which handles
// one request per connection at a time, would drop it) is told to rejoin.
func (s *Type) park(g *Group, m *Member, p *Parked) {
	if m.Join != nil {
		s.reply(m.Join.ID, JoinError(m.Join.Version, kerr.RebalanceInProgress.Code, m.ID))
	} else {
		g.ext.awaiting++ // a member: the ext is there
	}
	m.Join = p
}

// updateMember is Kafka's ClassicGroup.updateMember.
func (s *Type) updateMember(g *Group, m *Member, j joinReq) {
	g.CountProtocols(m, -1)
	m.Protocols = j.protocols
	g.CountProtocols(m, 1)
	m.RebalanceTimeout, m.SessionTimeout = j.rebalance, j.r.SessionTimeoutMillis
	s.park(g, m, j.parked)
}

// addMember is Kafka's addMemberThenRebalanceOrCompleteJoin (§5.1).
func (s *Type) addMember(now time.Time, g *Group, j joinReq, id string) {
	r := j.r
	m := &Member{
		ID:               id,
		Instance:         r.InstanceID,
		ClientID:         j.req.ClientID,
		ClientHost:       j.req.ClientHost,
		RebalanceTimeout: j.rebalance,
		SessionTimeout:   r.SessionTimeoutMillis,
		Protocols:        j.protocols,
		isNew:            true,
	}
	if g.State == PreparingRebalance && g.PrevState == Empty {
		b := g.barrier()
		b.newMemberAdded, b.lastNew = true, now
		b.arrivals++
		if s.cfg.InitialAdaptive {
			// The barrier's close moves with every newcomer.
			s.timer(grouptype.GroupTimer(TimerJoin, g.Key), minTime(now.Add(s.initialWait(g)), b.initialEnd))
		}
	}
	if len(g.Members()) == 0 {
		g.pin()
		g.ProtocolType = r.ProtocolType
	}
	g.EnsureMaps()
	g.Members()[id] = m
	if m.Instance != nil {
		g.Static()[*m.Instance] = id
	}
	if g.Leader() == "" {
		g.SetLeader(id)
	}
	g.CountProtocols(m, 1)
	s.park(g, m, j.parked)
	delete(g.PendingJoin(), id)
	// A new member cannot heartbeat while its join is parked; this
	// bounds how long a member whose client gave up can linger.
	m.armedAt = 0
	s.ArmSession(g, m, now, newMemberJoinTimeout)
	s.Event(g, observe.MemberJoined, now, m, "")
	if g.State == PreparingRebalance {
		s.maybeCompleteJoin(g, now)
	} else {
		s.PrepareRebalance(g, now, Trigger(observe.CauseMemberJoined, m), fmt.Sprintf("Adding new member %s with group instance id %s; client reason: %s",
			id, orNull(r.InstanceID), ClientReason(r.Reason)))
	}
}

// ClientReason is the reason a JoinGroup or LeaveGroup gives, as Kafka's
// rebalance reasons quote it.
func ClientReason(r *string) string {
	if r == nil || *r == "" {
		return "not provided"
	}
	return *r
}

func orNull(p *string) string {
	if p == nil {
		return "null"
	}
	return *p
}

// replaceStatic is Kafka's updateStaticMemberThenRebalanceOrCompleteJoin
// (§9.2): a known instance rejoining with no member id takes over its old
// member's place.
func (s *Type) replaceStatic(now time.Time, g *Group, j joinReq, oldID, newID string) {
	r := j.r
	oldLeader := g.Leader()
	old := g.Members()[oldID]
	if old.Join != nil {
		s.reply(old.Join.ID, JoinError(old.Join.Version, kerr.FencedInstanceID.Code, oldID))
		old.Join = nil
		g.ext.awaiting--
	}
	if old.Sync != nil {
		s.reply(old.Sync.ID, SyncError(old.Sync.Version, kerr.FencedInstanceID.Code))
		old.Sync = nil
	}
	s.CancelSession(g, old)
	delete(g.Members(), oldID)
	s.Event(g, observe.MemberFenced, now, old, "replaced by a new instance of the static member: "+newID)
	m := &Member{}
	*m = *old
	// A fresh member, as Kafka's replaceStaticMember: not new.
	m.ID, m.armedAt, m.expireAt, m.isNew = newID, 0, 0, false
	g.Members()[newID] = m
	g.Static()[*m.Instance] = newID
	if g.Leader() == oldID {
		g.SetLeader(newID)
	}
	if g.pendingSyncs()[oldID] {
		delete(g.pendingSyncs(), oldID)
		g.pendingSyncs()[newID] = true
	}
	s.Event(g, observe.MemberJoined, now, m, "")
	// Armed with the timeout it inherits, before the request's timeouts
	// apply, in Kafka's order.
	s.ArmSession(g, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
	s.updateMember(g, m, j)
	switch g.State {
	case Stable:
		if g.SelectProtocol() != g.Protocol() {
			s.PrepareRebalance(g, now, Trigger(observe.CauseStaticMemberReplaced, m), fmt.Sprintf("Group's selectedProtocol will change because static member %s with instance id %s joined with change of protocol; client reason: %s",
				newID, *m.Instance, ClientReason(r.Reason)))
			return
		}
		// As Kafka (KIP-345): a static member that restarts keeps its
		// place and its assignment without a rebalance. The new member
		// id must be durable before the member learns it.
		s.EmitRecord(g)
		m.Join = nil
		g.ext.awaiting--
		resp := g.joinSuccess(r.Version, m)
		if r.Version >= 9 {
			resp.SkipAssignment = m.ID == g.Leader()
		} else {
			// An older client told it leads would run an assignment
			// that a Stable group ignores: name the old leader id, so
			// it acts as a follower (§9.2).
			resp.LeaderID, resp.Members = oldLeader, nil
		}
		s.reply(j.req.ID, resp)
	case CompletingRebalance:
		s.PrepareRebalance(g, now, Trigger(observe.CauseStaticMemberReplaced, m), fmt.Sprintf("Updating metadata for static member %s with instance id %s; client reason: %s",
			newID, *m.Instance, ClientReason(r.Reason)))
	default:
		s.maybeCompleteJoin(g, now)
	}
}

// PrepareRebalance is Kafka's prepareRebalance (§5.2); why and reason
// (in Kafka's words) say why, for the RebalanceStarted event.
func (s *Type) PrepareRebalance(g *Group, now time.Time, why grouptype.Trigger, reason string) {
	if g.State == CompletingRebalance {
		for _, m := range g.SortedMembers() {
			m.Assignment = nil
			if m.Sync != nil {
				s.reply(m.Sync.ID, SyncError(m.Sync.Version, kerr.RebalanceInProgress.Code))
				m.Sync = nil
				s.ArmSession(g, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
			}
		}
	}
	s.timer(grouptype.GroupTimer(TimerSync, g.Key), time.Time{})
	clear(g.pendingSyncs())
	initial := g.State == Empty
	g.transition(PreparingRebalance, now)
	s.started(g, now, why, reason)
	if initial {
		// §5.3. Kafka's rule: the barrier closes at the first multiple of
		// the delay with no newcomer during the step before, and never
		// later than max(delay, rebalance timeout). Cohort's quiet
		// window, when shorter than the delay, closes it as soon as no
		// newcomer has come for the window, with the same upper bound.
		limit := max(s.cfg.InitialDelay, g.RebalanceTimeout())
		b := g.barrier()
		b.initialLeft = max(limit-s.cfg.InitialQuiet, 0)
		b.initialEnd, b.lastNew = now.Add(limit), now
		b.firstNew, b.arrivals = now, 1
		b.newMemberAdded = false
		s.timer(grouptype.GroupTimer(TimerJoin, g.Key), now.Add(s.cfg.InitialQuiet))
		return
	}
	if g.allJoined() {
		s.completeJoin(g, now)
		return
	}
	s.timer(grouptype.GroupTimer(TimerJoin, g.Key), now.Add(g.RebalanceTimeout()))
}

// The adaptive initial barrier (Config.InitialAdaptive) waits after the
// last newcomer adaptiveFactor times the mean gap between the arrivals so
// far, at least adaptiveFloor: members arriving at a steady rate, even
// with their gaps varying by a factor of a few, never see it close
// between two of them (property_test.go's TestAdaptiveBarrier).
const (
	adaptiveFactor = 4
	adaptiveFloor  = time.Millisecond
)

// initialWait is how long the initial barrier waits for the next newcomer:
// the quiet window, or with InitialAdaptive, at most that and as little as
// the arrivals so far suggest.
func (s *Type) initialWait(g *Group) time.Duration {
	q := s.cfg.InitialQuiet
	b := g.barrier()
	if !s.cfg.InitialAdaptive || b.arrivals < 2 {
		return q
	}
	gap := b.lastNew.Sub(b.firstNew) / time.Duration(b.arrivals-1)
	return min(max(adaptiveFactor*gap, adaptiveFloor), q)
}

// maybeCompleteJoin is Kafka's maybeCompleteJoinPhase: not during the
// initial rebalance, whose barrier only its timer closes.
func (s *Type) maybeCompleteJoin(g *Group, now time.Time) {
	if g.State == PreparingRebalance && g.PrevState != Empty && g.allJoined() {
		s.completeJoin(g, now)
	}
}

func (s *Type) joinTimer(g *Group, now time.Time) {
	if g.State != PreparingRebalance {
		return
	}
	if g.PrevState == Empty && (s.cfg.InitialQuiet < s.cfg.InitialDelay || s.cfg.InitialAdaptive) {
		b := g.barrier()
		if quietAt := b.lastNew.Add(s.initialWait(g)); now.Before(quietAt) && now.Before(b.initialEnd) {
			s.timer(grouptype.GroupTimer(TimerJoin, g.Key), minTime(quietAt, b.initialEnd))
			return
		}
		s.completeJoin(g, now)
		return
	}
	if b := g.barrierIf(); g.PrevState == Empty && b != nil && b.newMemberAdded && b.initialLeft > 0 {
		b.newMemberAdded = false
		step := min(s.cfg.InitialQuiet, b.initialLeft)
		b.initialLeft -= step
		s.timer(grouptype.GroupTimer(TimerJoin, g.Key), now.Add(step))
		return
	}
	s.completeJoin(g, now)
}

// completeJoin is Kafka's completeClassicGroupJoin (§5.4).
func (s *Type) completeJoin(g *Group, now time.Time) {
	s.timer(grouptype.GroupTimer(TimerJoin, g.Key), time.Time{})
	for _, m := range g.SortedMembers() {
		if m.Join == nil && m.Instance == nil {
			// Only the join timer completes a phase that some member
			// has not rejoined: its rebalance timeout has passed.
			s.removeMember(g, m, 0)
			s.Event(g, observe.MemberFenced, now, m, "did not rejoin within the rebalance timeout")
		}
	}
	if l := g.Members()[g.Leader()]; l == nil || l.Join == nil {
		elected := false
		for _, m := range g.SortedMembers() {
			if m.Join != nil {
				g.SetLeader(m.ID)
				elected = true
				break
			}
		}
		if !elected && len(g.Members()) > 0 {
			// Only static members that have not rejoined are left: wait
			// for them (their session timers remove them).
			s.timer(grouptype.GroupTimer(TimerJoin, g.Key), now.Add(g.RebalanceTimeout()))
			return
		}
	}
	g.pin()
	g.Generation++
	clear(g.pendingSyncs())
	if len(g.Members()) == 0 {
		g.SetProtocol("")
		g.SetLeader("")
		g.transition(Empty, now)
		g.ComputeSubscribed()
		s.EmitRecord(g)
		// The rebalance ends with nobody left: reported, so that it
		// does not stay open.
		s.Event(g, observe.RebalanceCompleted, now, nil, "")
		return
	}
	g.SetProtocol(g.SelectProtocol())
	g.transition(CompletingRebalance, now)
	g.ComputeSubscribed()
	for _, m := range g.SortedMembers() {
		if m.Join != nil {
			s.reply(m.Join.ID, g.joinSuccess(m.Join.Version, m))
			m.Join = nil
			g.ext.awaiting--
		}
		s.ArmSession(g, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
		m.isNew = false
		g.pendingSyncs()[m.ID] = true
	}
	// No record here: the generation becomes durable with the leader's
	// SyncGroup (§6.3), as in Kafka.
	s.timer(grouptype.GroupTimer(TimerSync, g.Key), now.Add(g.RebalanceTimeout()))
}

// removeMember takes m out of the group. A parked JoinGroup or SyncGroup
// is answered with code, unless code is 0.
func (s *Type) removeMember(g *Group, m *Member, code int16) {
	s.CancelSession(g, m)
	if m.Join != nil {
		if code != 0 {
			s.reply(m.Join.ID, JoinError(m.Join.Version, code, ""))
		}
		m.Join = nil
		g.ext.awaiting--
	}
	if m.Sync != nil {
		if code != 0 {
			s.reply(m.Sync.ID, SyncError(m.Sync.Version, code))
		}
		m.Sync = nil
	}
	g.CountProtocols(m, -1)
	delete(g.Members(), m.ID)
	delete(g.pendingSyncs(), m.ID)
	if m.Instance != nil && g.Static()[*m.Instance] == m.ID {
		delete(g.Static(), *m.Instance)
	}
	if g.Leader() == m.ID {
		g.SetLeader("")
		if ms := g.SortedMembers(); len(ms) > 0 {
			g.SetLeader(ms[0].ID)
		}
	}
}

// DropPending forgets a member id handed out with MEMBER_ID_REQUIRED.
func (s *Type) DropPending(g *Group, id string) {
	delete(g.PendingJoin(), id)
	s.timer(grouptype.MemberTimer(TimerMember, g.Key, id), time.Time{})
}

// afterRemoval moves the group on after members left or expired: Kafka's
// removeMemberAndUpdateClassicGroup, with its reason.
func (s *Type) afterRemoval(g *Group, now time.Time, why grouptype.Trigger, reason string) {
	switch g.State {
	case Stable, CompletingRebalance:
		s.PrepareRebalance(g, now, why, reason)
	case PreparingRebalance:
		if g.allJoined() {
			s.completeJoin(g, now)
		}
	}
}

// Fire runs one of classic group g's timers: kind is one of the classic
// timer kinds (TimerJoin, TimerSync, TimerMember), id the member's for
// TimerMember.
func (s *Type) Fire(g *Group, kind byte, id string, now time.Time) {
	switch kind {
	case TimerJoin:
		s.joinTimer(g, now)
	case TimerSync:
		s.syncTimer(g, now)
	case TimerMember:
		s.memberDeadline(g, id, now)
	}
}

// memberDeadline runs a member's (or pending id's) timer (§10).
func (s *Type) memberDeadline(g *Group, id string, now time.Time) {
	if deadline, ok := g.PendingJoin()[id]; ok {
		if now.Before(deadline) {
			s.timer(grouptype.MemberTimer(TimerMember, g.Key, id), deadline)
			return
		}
		delete(g.PendingJoin(), id)
		if g.State == PreparingRebalance && g.allJoined() {
			s.completeJoin(g, now)
		}
		return
	}
	m := g.Members()[id]
	if m == nil || m.armedAt.IsZero() {
		return
	}
	m.armedAt = 0
	if now.Before(m.expireAt.Time()) {
		// Heartbeats moved the deadline since the timer was set.
		m.armedAt = m.expireAt
		s.timer(grouptype.MemberTimer(TimerMember, g.Key, id), m.expireAt.Time())
		return
	}
	if !m.isNew && (m.Join != nil || m.Sync != nil) {
		// Kafka's hasSatisfiedHeartbeat: a member waiting on the group is
		// alive; its timer is set again when it is answered.
		return
	}
	s.removeMember(g, m, kerr.UnknownMemberID.Code)
	reason := "session timed out"
	if m.isNew {
		reason = "new member's join timed out"
	}
	s.Event(g, observe.MemberExpired, now, m, reason)
	s.afterRemoval(g, now, Trigger(observe.CauseMemberExpired, m), fmt.Sprintf("removing member %s on heartbeat expiration", m.ID))
}

// syncTimer is Kafka's expirePendingSync (§6.4). Every rebalance cancels
// the timer, so it always belongs to the current generation.
func (s *Type) syncTimer(g *Group, now time.Time) {
	if (g.State != CompletingRebalance && g.State != Stable) || len(g.pendingSyncs()) == 0 {
		return
	}
	var removed []string
	var why grouptype.Trigger // the first member removed
	for _, m := range g.SortedMembers() {
		if g.pendingSyncs()[m.ID] {
			s.removeMember(g, m, 0)
			s.Event(g, observe.MemberFenced, now, m, "did not sync within the rebalance timeout")
			if removed == nil {
				why = Trigger(observe.CauseRebalanceTimeout, m)
			}
			removed = append(removed, m.ID)
		}
	}
	s.PrepareRebalance(g, now, why, fmt.Sprintf("Removing [%s] on pending sync request expiration", strings.Join(removed, ", ")))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
