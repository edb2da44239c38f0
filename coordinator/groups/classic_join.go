package groups

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinError is a JoinGroup error response (§4.5).
func joinError(version, code int16, memberID string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version, r.ErrorCode, r.MemberID, r.Generation = version, code, memberID, -1
	if version < 7 {
		r.Protocol = new(string)
	}
	return r
}

// joinSuccess answers member m with the group's current generation; the
// leader gets the member list.
func (g *classicGroup) joinSuccess(version int16, m *member) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version, r.Generation, r.MemberID, r.LeaderID = version, g.generation, m.id, g.leader
	typ, proto := g.protocolType, g.protocol
	r.ProtocolType, r.Protocol = &typ, &proto
	if m.id == g.leader {
		r.Members = g.memberList()
	}
	return r
}

func (g *classicGroup) memberList() []kmsg.JoinGroupResponseMember {
	ms := g.sortedMembers()
	out := make([]kmsg.JoinGroupResponseMember, len(ms))
	for i, m := range ms {
		out[i] = kmsg.JoinGroupResponseMember{MemberID: m.id, InstanceID: m.instance, ProtocolMetadata: m.metadataFor(g.protocol)}
	}
	return out
}

// joinGroup is Kafka's classicGroupJoin (§4.2).
func (s *Shard) joinGroup(now time.Time, req machine.Request, r *kmsg.JoinGroupRequest) {
	v := r.Version
	fail := func(code int16, memberID string) { s.reply(req.ID, joinError(v, code, memberID)) }
	session := time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	switch {
	case r.Group == "":
		fail(kerr.InvalidGroupID.Code, r.MemberID)
		return
	case session < s.cfg.MinSessionTimeout || session > s.cfg.MaxSessionTimeout:
		fail(kerr.InvalidSessionTimeout.Code, r.MemberID)
		return
	}
	k := gkey{req.Tenant, r.Group}
	var g *classicGroup
	if e := s.lookup(k.tenant, k.name); e != nil {
		g = e.classic
		if cg := e.consumer; cg != nil {
			if len(cg.members) > 0 {
				// A classic member inside a consumer group (a mixed
				// group, mixed_classic.go), whatever the migration
				// policy, as Kafka.
				s.classicJoinToConsumer(now, req, r, cg)
				return
			}
			// An empty consumer group becomes a classic group, keeping
			// its offsets and id (Kafka converts it the same way).
			id := e.id
			s.emitRemoveConsumer(cg)
			g = newClassicGroup(s.entry(k), now)
			g.id = id
			s.emitClassic(g)
		}
	}
	if g == nil {
		if r.MemberID != "" {
			fail(kerr.UnknownMemberID.Code, r.MemberID)
			return
		}
		// JoinGroup has no ErrorMessage: the code alone says it.
		if msg := s.newGroupRefused(k.tenant); msg != "" {
			fail(kerr.GroupMaxSizeReached.Code, "")
			return
		}
		g = s.newClassic(k, now)
		// As Kafka: a group created by a JoinGroup exists durably from
		// then on, whatever becomes of the join (§4.2 side effect).
		defer func() {
			if g.committed == nil {
				s.emit(s.key(k).Key(), record.ClassicGroup{ID: g.id, StateTimestamp: now.UnixMilli()}.Encode())
			}
		}()
	}
	if !s.acceptJoining(g, r.MemberID) {
		if m := g.members[r.MemberID]; m != nil {
			s.removeMember(g, m, kerr.GroupMaxSizeReached.Code)
			s.classicEvent(g, observe.MemberFenced, now, m, "the group is full (group.max.size)")
		}
		if _, ok := g.pendingJoin[r.MemberID]; ok {
			s.dropPending(g, r.MemberID)
		}
		fail(kerr.GroupMaxSizeReached.Code, "")
		return
	}
	// The metadata is copied: kmsg's bytes alias the request's frame,
	// which a member keeping them would keep whole.
	ps := make([]protocol, len(r.Protocols))
	for i, p := range r.Protocols {
		ps[i] = protocol{name: p.Name, meta: bytes.Clone(p.Metadata)}
	}
	rebalance := r.RebalanceTimeoutMillis
	if v == 0 {
		rebalance = r.SessionTimeoutMillis
	}
	j := joinReq{req: req, r: r, protocols: ps, rebalance: rebalance, parked: &parked{id: req.ID, version: v}}
	if g.state == dead {
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
	protocols []protocol
	rebalance int32
	parked    *parked
}

func (j joinReq) fail(s *Shard, code int16, memberID string) {
	s.reply(j.req.ID, joinError(j.r.Version, code, memberID))
}

// acceptJoining is Kafka's acceptJoiningMember (§4.2 step 7).
func (s *Shard) acceptJoining(g *classicGroup, memberID string) bool {
	m := g.members[memberID]
	maxSize, _ := s.maxMembers(g.tenant, s.cfg.MaxSize)
	switch g.state {
	case empty, dead:
		return true
	case preparingRebalance:
		return (m != nil && m.join != nil) || g.awaiting < maxSize
	default:
		return m != nil || len(g.members) < maxSize
	}
}

func (s *Shard) joinNewMember(now time.Time, g *classicGroup, j joinReq) {
	r := j.r
	if !g.acceptsProtocols(r.ProtocolType, j.protocols) {
		j.fail(s, kerr.InconsistentGroupProtocol.Code, "")
		return
	}
	prefix := j.req.ClientID
	if r.InstanceID != nil {
		prefix = *r.InstanceID
	}
	id := s.memberID(prefix)
	switch {
	case r.InstanceID != nil:
		if old, ok := g.static[*r.InstanceID]; ok {
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
		if maxSize, _ := s.maxMembers(g.tenant, s.cfg.MaxSize); len(g.members)+len(g.pendingJoin) >= maxSize ||
			(s.cfg.MaxPendingMembers > 0 && len(g.pendingJoin) >= s.cfg.MaxPendingMembers) {
			j.fail(s, kerr.GroupMaxSizeReached.Code, "")
			return
		}
		deadline := now.Add(time.Duration(r.SessionTimeoutMillis) * time.Millisecond)
		g.pendingJoin[id] = deadline
		s.timer(memberTimer(timerMember, g.gkey, id), deadline)
		j.fail(s, kerr.MemberIDRequired.Code, id)
	default:
		s.addMember(now, g, j, id)
	}
}

func (s *Shard) joinExistingMember(now time.Time, g *classicGroup, j joinReq) {
	r := j.r
	if !g.acceptsProtocols(r.ProtocolType, j.protocols) {
		j.fail(s, kerr.InconsistentGroupProtocol.Code, r.MemberID)
		return
	}
	if _, ok := g.pendingJoin[r.MemberID]; ok {
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
	m := g.members[r.MemberID]
	// Why the rebalance (before the member changes): Kafka's reason,
	// and its cause.
	why := rejoinTrigger(g, m, j.protocols)
	updating := func() string {
		if g.state == stable && m.id == g.leader {
			return fmt.Sprintf("Leader %s re-joining group during %v; client reason: %s", m.id, g.state, clientReason(r.Reason))
		}
		return fmt.Sprintf("Updating metadata for member %s during %v; client reason: %s", m.id, g.state, clientReason(r.Reason))
	}
	switch g.state {
	case preparingRebalance:
		s.updateMember(g, m, j)
		s.maybeCompleteJoin(g, now)
	case completingRebalance:
		if m.sameProtocols(j.protocols) {
			// The member lost its JoinGroup response: send it again.
			s.reply(j.req.ID, g.joinSuccess(r.Version, m))
			return
		}
		s.updateMember(g, m, j)
		s.prepareRebalance(g, now, why, updating())
	case stable:
		if m.id != g.leader && m.sameProtocols(j.protocols) {
			// As Kafka: a follower's rejoin with unchanged metadata
			// returns the current generation without a rebalance.
			s.reply(j.req.ID, g.joinSuccess(r.Version, m))
			return
		}
		s.updateMember(g, m, j)
		s.prepareRebalance(g, now, why, updating())
	default:
		j.fail(s, kerr.UnknownMemberID.Code, r.MemberID)
	}
}

// rejoinTrigger is why known member m joining again with protocols ps
// starts a rebalance: its subscription changed when the group's protocol
// type is "consumer" and its metadata for the group's protocol names other
// topics; otherwise the client asked (CauseMemberRejoined).
func rejoinTrigger(g *classicGroup, m *member, ps []protocol) trigger {
	if g.protocolType == "consumer" {
		var meta []byte
		for _, p := range ps {
			if p.name == g.protocol {
				meta = p.meta
				break
			}
		}
		was, ok1 := subscriptionTopics(m.metadataFor(g.protocol))
		is, ok2 := subscriptionTopics(meta)
		if ok1 && ok2 {
			slices.Sort(was)
			slices.Sort(is)
			if !slices.Equal(slices.Compact(was), slices.Compact(is)) {
				return classicTrigger(observe.CauseSubscriptionChanged, m)
			}
		}
	}
	return classicTrigger(observe.CauseMemberRejoined, m)
}

// validateMember is Kafka's ClassicGroup.validateMember.
func (g *classicGroup) validateMember(memberID string, instance *string) int16 {
	if instance != nil {
		holder, ok := g.static[*instance]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case holder != memberID:
			return kerr.FencedInstanceID.Code
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// park makes j the member's parked JoinGroup. A JoinGroup it replaces
// (only a client pipelining two joins can do that; Kafka, which handles
// one request per connection at a time, would drop it) is told to rejoin.
func (s *Shard) park(g *classicGroup, m *member, p *parked) {
	if m.join != nil {
		s.reply(m.join.id, joinError(m.join.version, kerr.RebalanceInProgress.Code, m.id))
	} else {
		g.awaiting++
	}
	m.join = p
}

// updateMember is Kafka's ClassicGroup.updateMember.
func (s *Shard) updateMember(g *classicGroup, m *member, j joinReq) {
	g.countProtocols(m, -1)
	m.protocols = j.protocols
	g.countProtocols(m, 1)
	m.rebalanceTimeout, m.sessionTimeout = j.rebalance, j.r.SessionTimeoutMillis
	s.park(g, m, j.parked)
}

// addMember is Kafka's addMemberThenRebalanceOrCompleteJoin (§5.1).
func (s *Shard) addMember(now time.Time, g *classicGroup, j joinReq, id string) {
	r := j.r
	m := &member{
		id:               id,
		instance:         r.InstanceID,
		clientID:         j.req.ClientID,
		clientHost:       j.req.ClientHost,
		rebalanceTimeout: j.rebalance,
		sessionTimeout:   r.SessionTimeoutMillis,
		protocols:        j.protocols,
		isNew:            true,
	}
	if g.state == preparingRebalance && g.prevState == empty {
		g.newMemberAdded, g.lastNew = true, now
		g.arrivals++
		if s.cfg.InitialAdaptive {
			// The barrier's close moves with every newcomer.
			s.timer(groupTimer(timerJoin, g.gkey), minTime(now.Add(s.initialWait(g)), g.initialEnd))
		}
	}
	if len(g.members) == 0 {
		g.protocolType = r.ProtocolType
	}
	g.members[id] = m
	if m.instance != nil {
		g.static[*m.instance] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	g.countProtocols(m, 1)
	s.park(g, m, j.parked)
	delete(g.pendingJoin, id)
	// A new member cannot heartbeat while its join is parked; this
	// bounds how long a member whose client gave up can linger.
	m.armedAt = 0
	s.armSession(g, m, now, newMemberJoinTimeout)
	s.classicEvent(g, observe.MemberJoined, now, m, "")
	if g.state == preparingRebalance {
		s.maybeCompleteJoin(g, now)
	} else {
		s.prepareRebalance(g, now, classicTrigger(observe.CauseMemberJoined, m), fmt.Sprintf("Adding new member %s with group instance id %s; client reason: %s",
			id, orNull(r.InstanceID), clientReason(r.Reason)))
	}
}

// clientReason is the reason a JoinGroup or LeaveGroup gives, as Kafka's
// rebalance reasons quote it.
func clientReason(r *string) string {
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

func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// replaceStatic is Kafka's updateStaticMemberThenRebalanceOrCompleteJoin
// (§9.2): a known instance rejoining with no member id takes over its old
// member's place.
func (s *Shard) replaceStatic(now time.Time, g *classicGroup, j joinReq, oldID, newID string) {
	r := j.r
	oldLeader := g.leader
	old := g.members[oldID]
	if old.join != nil {
		s.reply(old.join.id, joinError(old.join.version, kerr.FencedInstanceID.Code, oldID))
		old.join = nil
		g.awaiting--
	}
	if old.sync != nil {
		s.reply(old.sync.id, syncError(old.sync.version, kerr.FencedInstanceID.Code))
		old.sync = nil
	}
	s.cancelSession(g, old)
	delete(g.members, oldID)
	s.classicEvent(g, observe.MemberFenced, now, old, "replaced by a new instance of the static member: "+newID)
	m := &member{}
	*m = *old
	// A fresh member, as Kafka's replaceStaticMember: not new.
	m.id, m.armedAt, m.expireAt, m.isNew = newID, 0, 0, false
	g.members[newID] = m
	g.static[*m.instance] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	s.classicEvent(g, observe.MemberJoined, now, m, "")
	// Armed with the timeout it inherits, before the request's timeouts
	// apply, in Kafka's order.
	s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
	s.updateMember(g, m, j)
	switch g.state {
	case stable:
		if g.selectProtocol() != g.protocol {
			s.prepareRebalance(g, now, classicTrigger(observe.CauseStaticMemberReplaced, m), fmt.Sprintf("Group's selectedProtocol will change because static member %s with instance id %s joined with change of protocol; client reason: %s",
				newID, *m.instance, clientReason(r.Reason)))
			return
		}
		// As Kafka (KIP-345): a static member that restarts keeps its
		// place and its assignment without a rebalance. The new member
		// id must be durable before the member learns it.
		s.emitClassic(g)
		m.join = nil
		g.awaiting--
		resp := g.joinSuccess(r.Version, m)
		if r.Version >= 9 {
			resp.SkipAssignment = m.id == g.leader
		} else {
			// An older client told it leads would run an assignment
			// that a Stable group ignores: name the old leader id, so
			// it acts as a follower (§9.2).
			resp.LeaderID, resp.Members = oldLeader, nil
		}
		s.reply(j.req.ID, resp)
	case completingRebalance:
		s.prepareRebalance(g, now, classicTrigger(observe.CauseStaticMemberReplaced, m), fmt.Sprintf("Updating metadata for static member %s with instance id %s; client reason: %s",
			newID, *m.instance, clientReason(r.Reason)))
	default:
		s.maybeCompleteJoin(g, now)
	}
}

// prepareRebalance is Kafka's prepareRebalance (§5.2); why and reason
// (in Kafka's words) say why, for the RebalanceStarted event.
func (s *Shard) prepareRebalance(g *classicGroup, now time.Time, why trigger, reason string) {
	if g.state == completingRebalance {
		for _, m := range g.sortedMembers() {
			m.assignment = nil
			if m.sync != nil {
				s.reply(m.sync.id, syncError(m.sync.version, kerr.RebalanceInProgress.Code))
				m.sync = nil
				s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
			}
		}
	}
	s.timer(groupTimer(timerSync, g.gkey), time.Time{})
	clear(g.pendingSync)
	initial := g.state == empty
	g.transition(preparingRebalance, now)
	s.classicStarted(g, now, why, reason)
	if initial {
		// §5.3. Kafka's rule: the barrier closes at the first multiple of
		// the delay with no newcomer during the step before, and never
		// later than max(delay, rebalance timeout). Cohort's quiet
		// window, when shorter than the delay, closes it as soon as no
		// newcomer has come for the window, with the same upper bound.
		limit := max(s.cfg.InitialDelay, g.rebalanceTimeout())
		g.initialLeft = max(limit-s.cfg.InitialQuiet, 0)
		g.initialEnd, g.lastNew = now.Add(limit), now
		g.firstNew, g.arrivals = now, 1
		g.newMemberAdded = false
		s.timer(groupTimer(timerJoin, g.gkey), now.Add(s.cfg.InitialQuiet))
		return
	}
	if g.allJoined() {
		s.completeJoin(g, now)
		return
	}
	s.timer(groupTimer(timerJoin, g.gkey), now.Add(g.rebalanceTimeout()))
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
func (s *Shard) initialWait(g *classicGroup) time.Duration {
	q := s.cfg.InitialQuiet
	if !s.cfg.InitialAdaptive || g.arrivals < 2 {
		return q
	}
	gap := g.lastNew.Sub(g.firstNew) / time.Duration(g.arrivals-1)
	return min(max(adaptiveFactor*gap, adaptiveFloor), q)
}

// maybeCompleteJoin is Kafka's maybeCompleteJoinPhase: not during the
// initial rebalance, whose barrier only its timer closes.
func (s *Shard) maybeCompleteJoin(g *classicGroup, now time.Time) {
	if g.state == preparingRebalance && g.prevState != empty && g.allJoined() {
		s.completeJoin(g, now)
	}
}

func (s *Shard) joinTimer(g *classicGroup, now time.Time) {
	if g.state != preparingRebalance {
		return
	}
	if g.prevState == empty && (s.cfg.InitialQuiet < s.cfg.InitialDelay || s.cfg.InitialAdaptive) {
		if quietAt := g.lastNew.Add(s.initialWait(g)); now.Before(quietAt) && now.Before(g.initialEnd) {
			s.timer(groupTimer(timerJoin, g.gkey), minTime(quietAt, g.initialEnd))
			return
		}
		s.completeJoin(g, now)
		return
	}
	if g.prevState == empty && g.newMemberAdded && g.initialLeft > 0 {
		g.newMemberAdded = false
		step := min(s.cfg.InitialQuiet, g.initialLeft)
		g.initialLeft -= step
		s.timer(groupTimer(timerJoin, g.gkey), now.Add(step))
		return
	}
	s.completeJoin(g, now)
}

// completeJoin is Kafka's completeClassicGroupJoin (§5.4).
func (s *Shard) completeJoin(g *classicGroup, now time.Time) {
	s.timer(groupTimer(timerJoin, g.gkey), time.Time{})
	for _, m := range g.sortedMembers() {
		if m.join == nil && m.instance == nil {
			// Only the join timer completes a phase that some member
			// has not rejoined: its rebalance timeout has passed.
			s.removeMember(g, m, 0)
			s.classicEvent(g, observe.MemberFenced, now, m, "did not rejoin within the rebalance timeout")
		}
	}
	if l := g.members[g.leader]; l == nil || l.join == nil {
		elected := false
		for _, m := range g.sortedMembers() {
			if m.join != nil {
				g.leader, elected = m.id, true
				break
			}
		}
		if !elected && len(g.members) > 0 {
			// Only static members that have not rejoined are left: wait
			// for them (their session timers remove them).
			s.timer(groupTimer(timerJoin, g.gkey), now.Add(g.rebalanceTimeout()))
			return
		}
	}
	g.generation++
	clear(g.pendingSync)
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.transition(empty, now)
		g.computeSubscribed()
		s.emitClassic(g)
		// The rebalance ends with nobody left: reported, so that it
		// does not stay open.
		s.classicEvent(g, observe.RebalanceCompleted, now, nil, "")
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(completingRebalance, now)
	g.computeSubscribed()
	for _, m := range g.sortedMembers() {
		if m.join != nil {
			s.reply(m.join.id, g.joinSuccess(m.join.version, m))
			m.join = nil
			g.awaiting--
		}
		s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	// No record here: the generation becomes durable with the leader's
	// SyncGroup (§6.3), as in Kafka.
	s.timer(groupTimer(timerSync, g.gkey), now.Add(g.rebalanceTimeout()))
}

// removeMember takes m out of the group. A parked JoinGroup or SyncGroup
// is answered with code, unless code is 0.
func (s *Shard) removeMember(g *classicGroup, m *member, code int16) {
	s.cancelSession(g, m)
	if m.join != nil {
		if code != 0 {
			s.reply(m.join.id, joinError(m.join.version, code, ""))
		}
		m.join = nil
		g.awaiting--
	}
	if m.sync != nil {
		if code != 0 {
			s.reply(m.sync.id, syncError(m.sync.version, code))
		}
		m.sync = nil
	}
	g.countProtocols(m, -1)
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instance != nil && g.static[*m.instance] == m.id {
		delete(g.static, *m.instance)
	}
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

func (s *Shard) dropPending(g *classicGroup, id string) {
	delete(g.pendingJoin, id)
	s.timer(memberTimer(timerMember, g.gkey, id), time.Time{})
}

// afterRemoval moves the group on after members left or expired: Kafka's
// removeMemberAndUpdateClassicGroup, with its reason.
func (s *Shard) afterRemoval(g *classicGroup, now time.Time, why trigger, reason string) {
	switch g.state {
	case stable, completingRebalance:
		s.prepareRebalance(g, now, why, reason)
	case preparingRebalance:
		if g.allJoined() {
			s.completeJoin(g, now)
		}
	}
}

// classicTimer runs one of a classic group's timers.
func (s *Shard) classicTimer(g *classicGroup, kind byte, id string, now time.Time) {
	switch kind {
	case timerJoin:
		s.joinTimer(g, now)
	case timerSync:
		s.syncTimer(g, now)
	case timerMember:
		s.memberDeadline(g, id, now)
	}
}

// memberDeadline runs a member's (or pending id's) timer (§10).
func (s *Shard) memberDeadline(g *classicGroup, id string, now time.Time) {
	if deadline, ok := g.pendingJoin[id]; ok {
		if now.Before(deadline) {
			s.timer(memberTimer(timerMember, g.gkey, id), deadline)
			return
		}
		delete(g.pendingJoin, id)
		if g.state == preparingRebalance && g.allJoined() {
			s.completeJoin(g, now)
		}
		return
	}
	m := g.members[id]
	if m == nil || m.armedAt.IsZero() {
		return
	}
	m.armedAt = 0
	if now.Before(m.expireAt.time()) {
		// Heartbeats moved the deadline since the timer was set.
		m.armedAt = m.expireAt
		s.timer(memberTimer(timerMember, g.gkey, id), m.expireAt.time())
		return
	}
	if !m.isNew && (m.join != nil || m.sync != nil) {
		// Kafka's hasSatisfiedHeartbeat: a member waiting on the group is
		// alive; its timer is set again when it is answered.
		return
	}
	s.removeMember(g, m, kerr.UnknownMemberID.Code)
	reason := "session timed out"
	if m.isNew {
		reason = "new member's join timed out"
	}
	s.classicEvent(g, observe.MemberExpired, now, m, reason)
	s.afterRemoval(g, now, classicTrigger(observe.CauseMemberExpired, m), fmt.Sprintf("removing member %s on heartbeat expiration", m.id))
}

// syncTimer is Kafka's expirePendingSync (§6.4). Every rebalance cancels
// the timer, so it always belongs to the current generation.
func (s *Shard) syncTimer(g *classicGroup, now time.Time) {
	if (g.state != completingRebalance && g.state != stable) || len(g.pendingSync) == 0 {
		return
	}
	var removed []string
	var why trigger // the first member removed
	for _, m := range g.sortedMembers() {
		if g.pendingSync[m.id] {
			s.removeMember(g, m, 0)
			s.classicEvent(g, observe.MemberFenced, now, m, "did not sync within the rebalance timeout")
			if removed == nil {
				why = classicTrigger(observe.CauseRebalanceTimeout, m)
			}
			removed = append(removed, m.id)
		}
	}
	s.prepareRebalance(g, now, why, fmt.Sprintf("Removing [%s] on pending sync request expiration", strings.Join(removed, ", ")))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
