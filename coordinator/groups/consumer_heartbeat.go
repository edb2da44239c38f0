package groups

// ConsumerGroupHeartbeat (KIP-848): join, heartbeat, reconcile and leave
// in one request, as Kafka's GroupMetadataManager.consumerGroupHeartbeat.
// Each heartbeat runs three steps: update the member (and bump the group
// epoch if the group's inputs changed), recompute the target assignment if
// it lags the group epoch and the assignment interval allows, then move
// this member one step toward its target (reconcile.go).

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timer kinds of consumer group members: the session and the revocation
// (rebalance) timeout.
const (
	timerConsumerSession = 'c'
	timerConsumerRevoke  = 'v'
)

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (s *Shard) validateHeartbeat(r *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	invalid := func(msg string) (int16, string) { return kerr.InvalidRequest.Code, msg }
	if r.Version >= 1 && r.MemberID == "" {
		return invalid("MemberId can't be empty.")
	}
	if r.Group == "" {
		return kerr.InvalidGroupID.Code, "GroupId can't be empty."
	}
	if r.InstanceID != nil && *r.InstanceID == "" {
		return invalid("InstanceId can't be empty.")
	}
	if r.RackID != nil && *r.RackID == "" {
		return invalid("RackId can't be empty.")
	}
	switch {
	case r.MemberEpoch > 0 || r.MemberEpoch == leaveEpoch:
		if r.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
	case r.MemberEpoch == 0:
		if r.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if r.Topics == nil || len(r.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if r.SubscribedTopicNames == nil && r.SubscribedTopicRegex == nil {
			return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case r.MemberEpoch == leaveStaticEpoch:
		if r.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
		if r.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	default:
		return invalid("MemberEpoch is invalid.")
	}
	if r.SubscribedTopicRegex != nil && *r.SubscribedTopicRegex != "" {
		if _, err := regexp.Compile(*r.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression.Code, fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *r.SubscribedTopicRegex, err)
		}
	}
	if r.ServerAssignor != nil && s.assignor(*r.ServerAssignor) == nil {
		var names []string
		for _, a := range s.cfg.Assignors {
			names = append(names, a.Name())
		}
		return kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.", *r.ServerAssignor, strings.Join(names, ", "))
	}
	return 0, ""
}

func (s *Shard) assignor(name string) assign.Assignor {
	for _, a := range s.cfg.Assignors {
		if a.Name() == name {
			return a
		}
	}
	return nil
}

func hbError(resp *kmsg.ConsumerGroupHeartbeatResponse, code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp.ErrorCode = code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// consumerHeartbeat serves ConsumerGroupHeartbeat.
func (s *Shard) consumerHeartbeat(now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest) {
	s.h.NoteCatalog(req.Tenant, req.Topics)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.Version = r.Version
	if code, msg := s.validateHeartbeat(r); code != 0 {
		s.reply(req.ID, hbError(resp, code, msg))
		return
	}
	if r.MemberEpoch == leaveEpoch || r.MemberEpoch == leaveStaticEpoch {
		s.reply(req.ID, s.consumerLeave(now, req, r, resp))
	} else {
		s.reply(req.ID, s.consumerJoinOrBeat(now, req, r, resp))
	}
	s.settleConsumer(s.consumerGroup(req.Tenant, r.Group), now)
}

// heartbeatGroup returns the consumer group a heartbeat names, creating
// it (or converting an empty classic group) for a join, and converting a
// classic group with members online for a join when it can (mixed.go).
func (s *Shard) heartbeatGroup(now time.Time, k gkey, r *kmsg.ConsumerGroupHeartbeatRequest) (*consumerGroup, int16, string) {
	join := r.MemberEpoch == 0
	e := s.lookup(k.Tenant, k.Name)
	if c := consumerOf(e); c != nil {
		return c, 0, ""
	}
	if c := classic.Of(e); c != nil && (len(c.Members) > 0 || c.State != classic.Empty) {
		if !join {
			return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group.", k.Name)
		}
		return s.upgrade(now, c, r.MemberID, r.InstanceID)
	}
	if !join {
		return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Consumer group %s not found.", k.Name)
	}
	if e == nil {
		if msg := s.newGroupRefused(k.Tenant); msg != "" {
			return nil, kerr.GroupMaxSizeReached.Code, msg
		}
	}
	id := s.h.NewGroupID(now)
	if e != nil {
		// An empty classic (or simple) group becomes a consumer group,
		// keeping its offsets and its id: its classic record goes, as
		// Kafka's conversion writes a GroupMetadata tombstone.
		id = e.ID
		if classic.Of(e).Committed != nil {
			s.emit(s.key(k).Key(), nil)
		}
		e.Part = nil
	}
	e = s.entry(k)
	e.ID = id
	return newConsumerGroup(e), 0, ""
}

func (s *Shard) consumerJoinOrBeat(now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	g, code, msg := s.heartbeatGroup(now, gkey{Tenant: req.Tenant, Name: r.Group}, r)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	id := r.MemberID
	if r.Version == 0 && r.MemberEpoch == 0 && id == "" {
		id = s.uuid()
	}
	var owned tps
	if r.Topics != nil {
		byID := map[[16]byte][]int32{}
		for _, t := range r.Topics {
			ps := slices.Clone(t.Partitions)
			slices.Sort(ps)
			byID[t.TopicID] = append(byID[t.TopicID], ps...)
		}
		owned = tpsFrom(byID)
	}

	m := g.members[id]
	// isNew: the member is added; replaced: a static member's new
	// instance takes the place of the old, which had left (-2); back: a
	// static member that had left (-2) rejoins with its own id.
	isNew, replaced, back := false, false, false
	if r.MemberEpoch == 0 {
		if r.InstanceID != nil {
			if oldID, ok := g.static[*r.InstanceID]; ok && oldID != id {
				old := g.members[oldID]
				// A classic member's instance is taken over at once: the
				// rolling upgrade of a static member (mixed §3.4).
				if old.epoch != leaveStaticEpoch && old.classic == nil {
					return hbError(resp, kerr.UnreleasedInstanceID.Code, fmt.Sprintf(
						"Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", id, *r.InstanceID, oldID))
				}
				m, replaced = s.replaceStaticConsumer(now, g, old, id), true
			}
		}
		if m == nil {
			if max, _ := s.maxMembers(g.Tenant, s.cfg.ConsumerMaxSize); max > 0 && len(g.members) >= max {
				return hbError(resp, kerr.GroupMaxSizeReached.Code, s.fullMessage(g.Tenant, s.cfg.ConsumerMaxSize))
			}
			isNew = true
			m = &consumerMember{id: id} // a template: the record makes the member
		}
		back = m.epoch == leaveStaticEpoch
	} else {
		if m == nil {
			return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", id, r.Group))
		}
		if r.InstanceID != nil && (m.instance == nil || *m.instance != *r.InstanceID) {
			return hbError(resp, kerr.FencedInstanceID.Code, fmt.Sprintf(
				"Static member %s with instance id %s is not the owner of the instance id.", id, *r.InstanceID))
		}
		if code, msg := validateMemberEpoch(m, r.MemberEpoch, owned); code != 0 {
			return hbError(resp, code, msg)
		}
	}

	// Step 1: the member's metadata, and the group epoch.
	next := *m
	if r.InstanceID != nil {
		next.instance = r.InstanceID
	}
	if r.RackID != nil {
		next.rack = r.RackID
	}
	if r.RebalanceTimeoutMillis != -1 {
		next.rebalanceTimeout = r.RebalanceTimeoutMillis
	}
	if r.ServerAssignor != nil {
		next.assignor = *r.ServerAssignor
	}
	if r.SubscribedTopicNames != nil {
		ts := slices.Clone(r.SubscribedTopicNames)
		slices.Sort(ts)
		next.topics = slices.Compact(ts)
	}
	if r.SubscribedTopicRegex != nil {
		next.regex = *r.SubscribedTopicRegex
	}
	next.clientID, next.clientHost = req.ClientID, req.ClientHost
	next.classic = nil // a member speaks the protocol of its last request
	before := m.assigned
	m, code, msg = s.advanceMember(now, g, m, &next, isNew, isNew || replaced, owned)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	if back && m.epoch != leaveStaticEpoch {
		// Reported once its epoch counts it in again.
		s.consumerEvent(g, observe.MemberJoined, now, m, "")
	}
	s.armConsumerSession(g, m, now)

	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(s.cfg.ConsumerHeartbeatInterval.Milliseconds())
	full := r.MemberEpoch == 0 || (r.RebalanceTimeoutMillis != -1 && (r.SubscribedTopicNames != nil || r.SubscribedTopicRegex != nil) && r.Topics != nil)
	if full || !before.equal(m.assigned) {
		a := &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
		for _, tp := range m.assigned.records() {
			a.Topics = append(a.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
		}
		if a.Topics == nil {
			a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		}
		resp.Assignment = a
	}
	return resp
}

// advanceMember runs the consumer protocol's three steps for member m
// (a template if isNew) whose request asks for the metadata next: write
// the member's metadata and bump the group epoch if the group's inputs
// changed, recompute the target assignment if it lags and the interval
// allows, then move the member one step toward its target given what it
// says it owns (Kafka's consumerGroupHeartbeat and
// classicGroupJoinToConsumerGroup share these steps). joined reports the
// member as joined. It returns the live member.
func (s *Shard) advanceMember(now time.Time, g *consumerGroup, m, next *consumerMember, isNew, joined bool, owned tps) (*consumerMember, int16, string) {
	id := next.id
	bump, why := true, "" // why: the reason for the rebalance
	cause := observe.CauseMetadataChanged
	switch {
	case isNew:
		why, cause = fmt.Sprintf("member %s joined", id), observe.CauseMemberJoined
	case joined && (!slices.Equal(next.topics, m.topics) || next.regex != m.regex || next.assignor != m.assignor):
		// A static member's new instance (of the other protocol,
		// perhaps) asks for something else than the old one.
		why, cause = fmt.Sprintf("static member %s replaced with another subscription or assignor", id), observe.CauseStaticMemberReplaced
	case !slices.Equal(next.topics, m.topics) || next.regex != m.regex:
		why, cause = fmt.Sprintf("member %s changed its subscription", id), observe.CauseSubscriptionChanged
	case next.assignor != m.assignor:
		why, cause = fmt.Sprintf("member %s changed its server assignor", id), observe.CauseOther
	default:
		bump, why = false, "the subscribed topics' metadata changed"
	}
	if isNew || metadataChanged(m, next) {
		s.emitMember(g, next)
		m = g.members[id]
	}
	if joined {
		s.consumerEvent(g, observe.MemberJoined, now, m, "")
	}
	hash := g.metaHash
	if cat := s.catalog(g.Tenant); bump || cat == nil || g.hashAt != cat.Version {
		hash = metadataHash(g.subscribedTopics(cat), cat)
		if cat != nil {
			g.hashAt = cat.Version
		}
	}
	if bump || hash != g.metaHash {
		t := trigger{Cause: cause}
		if bump {
			t = consumerTrigger(cause, m)
		}
		before := g.consumerBefore()
		s.emitGroupEpoch(g, g.epoch+1, hash)
		s.consumerStarted(g, now, t, why, before)
	}

	// Step 2: the target assignment.
	if g.epoch > g.targetEpoch && now.UnixMilli() >= g.targetTime+s.cfg.AssignmentInterval.Milliseconds() {
		s.computeTarget(g, now)
	}

	// Step 3: reconcile this member.
	cur, code, msg := s.reconcile(g, m, owned)
	if code != 0 {
		return m, code, msg
	}
	if cur != nil {
		s.emitCurrent(g, m.id, *cur)
		s.armRevocation(g, m, now)
	}
	return m, 0, ""
}

// metadataChanged reports whether the member metadata record would differ.
func metadataChanged(a, b *consumerMember) bool {
	return !eqPtr(a.instance, b.instance) || !eqPtr(a.rack, b.rack) || a.clientID != b.clientID ||
		a.clientHost != b.clientHost || !slices.Equal(a.topics, b.topics) || a.regex != b.regex ||
		a.rebalanceTimeout != b.rebalanceTimeout || a.assignor != b.assignor || !a.classic.equal(b.classic)
}

func eqPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// validateMemberEpoch is Kafka's throwIfMemberEpochIsInvalid: a member
// ahead of the coordinator is fenced; one behind is fenced unless it is
// one step behind because it lost the response that advanced it (it sends
// its previous epoch and owns nothing it no longer has).
func validateMemberEpoch(m *consumerMember, received int32, owned tps) (int16, string) {
	switch {
	case received > m.epoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	case received < m.epoch:
		if received == m.prevEpoch && owned != nil && subset(owned, m.assigned) {
			return 0, ""
		}
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	}
	return 0, ""
}

func subset(a, b tps) bool {
	for _, at := range a {
		id, ps := at.TopicID, at.Partitions
		for _, p := range ps {
			if !b.has(id, p) {
				return false
			}
		}
	}
	return true
}

// replaceStatic moves a static member that left with epoch -2 to its new
// member id, keeping its assignment and target (Kafka's
// consumerGroupStaticMemberGroupLeave / replace): the old id's tombstones,
// then the new id's records at epoch 0.
//
// A classic member is replaced while it is still in the group (mixed §3.4,
// §4.2): it is reported fenced.
func (s *Shard) replaceStaticConsumer(now time.Time, g *consumerGroup, old *consumerMember, id string) *consumerMember {
	target := g.target[old.id]
	cur := current{epoch: 0, prevEpoch: 0, state: old.state, assigned: old.assigned, revoking: old.revoking}
	meta := *old
	s.consumerLeaving(g, old)
	s.emitRemoveMember(g, old.id)
	if meta.epoch != leaveStaticEpoch {
		s.consumerEvent(g, observe.MemberFenced, now, old, "replaced by a new instance of the static member: "+id)
	}
	meta.id = id
	s.emitMember(g, &meta)
	if target != nil {
		s.emitTarget(g, id, target)
	}
	s.emitCurrent(g, id, cur)
	return g.members[id]
}

// computeTarget runs the group's assignor over every member and writes
// the members whose target changed, then the target epoch (Kafka's
// TargetAssignmentBuilder).
func (s *Shard) computeTarget(g *consumerGroup, now time.Time) {
	cat := s.catalog(g.Tenant)
	in := assign.Group{Topics: map[string]assign.Topic{}}
	for _, m := range g.sortedMembers() {
		am := assign.Member{ID: m.id, Topics: m.subscription(cat)}
		if m.instance != nil {
			am.InstanceID = *m.instance
		}
		if m.rack != nil {
			am.Rack = *m.rack
		}
		if cat != nil {
			am.Current = assign.Partitions{}
			for _, at := range g.target[m.id] {
				tid, ps := at.TopicID, at.Partitions
				if name, ok := cat.ByID[tid]; ok {
					am.Current[name] = ps
				}
			}
			for _, t := range am.Topics {
				if meta, ok := cat.ByName[t]; ok {
					in.Topics[t] = assign.Topic{Partitions: meta.Partitions}
				}
			}
		}
		in.Members = append(in.Members, am)
	}
	out := s.groupAssignor(g).Assign(in)
	for _, m := range g.sortedMembers() {
		byID := map[[16]byte][]int32{}
		for name, ps := range out[m.id] {
			if len(ps) > 0 {
				byID[cat.ByName[name].ID] = ps
			}
		}
		next := tpsFrom(byID)
		if old, ok := g.target[m.id]; !ok || !old.equal(next) {
			s.emitTarget(g, m.id, next)
		}
	}
	s.emitTargetEpoch(g, g.epoch, now.UnixMilli())
}

// groupAssignor is the assignor most members ask for (ties: the first in
// the configured order), else the default, as Kafka's
// computePreferredServerAssignor.
func (s *Shard) groupAssignor(g *consumerGroup) assign.Assignor {
	votes := map[string]int{}
	for _, m := range g.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best, n := s.cfg.Assignors[0], 0
	for _, a := range s.cfg.Assignors {
		if votes[a.Name()] > n {
			best, n = a, votes[a.Name()]
		}
	}
	return best
}

// consumerLeave serves a heartbeat with epoch -1 (leave) or -2 (a static
// member leaves for a while, keeping its assignment until its session
// expires), as Kafka's consumerGroupLeave.
func (s *Shard) consumerLeave(now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	g, code, msg := s.heartbeatGroup(now, gkey{Tenant: req.Tenant, Name: r.Group}, r)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	var m *consumerMember
	if r.InstanceID == nil {
		m = g.members[r.MemberID]
		if m == nil {
			return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", r.MemberID, r.Group))
		}
	} else {
		mid, ok := g.static[*r.InstanceID]
		if !ok {
			return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Instance id %s is unknown.", *r.InstanceID))
		}
		m = g.members[mid]
		if mid != r.MemberID {
			return hbError(resp, kerr.FencedInstanceID.Code, fmt.Sprintf(
				"Static member %s with instance id %s is not the owner of the instance id.", r.MemberID, *r.InstanceID))
		}
	}
	resp.MemberID = &r.MemberID
	resp.MemberEpoch = r.MemberEpoch
	if r.MemberEpoch == leaveStaticEpoch {
		gone := m.epoch == leaveStaticEpoch
		s.emitCurrent(g, m.id, current{epoch: leaveStaticEpoch, prevEpoch: m.epoch, state: m.state, assigned: m.assigned, revoking: tps{}})
		s.cancelRevocation(g, m)
		if !gone {
			s.consumerEvent(g, observe.MemberLeft, now, m, "static member left for a while (epoch -2)")
		}
		return resp
	}
	s.removeConsumerMember(g, m, now, observe.MemberLeft, "", consumerTrigger(observe.CauseMemberLeft, m), fmt.Sprintf("member %s left", m.id))
	return resp
}

// removeConsumerMember fences or removes a member: its tombstones, then a
// new group epoch so that the next heartbeat recomputes the target. The
// last member's departure also advances the target epoch, with time 0 so
// that the next computation is not held back. The removal is reported as
// kind, for reason (unless the member had already left with epoch -2),
// and the rebalance it starts for t and why.
func (s *Shard) removeConsumerMember(g *consumerGroup, m *consumerMember, now time.Time, kind observe.GroupEventKind, reason string, t trigger, why string) {
	if s.mayDowngrade(g, m) {
		s.downgrade(now, g, m, kind, reason, t, why)
		return
	}
	before := g.consumerBefore() // with m's target, which goes now
	gone := m.epoch == leaveStaticEpoch
	s.consumerLeaving(g, m)
	s.emitRemoveMember(g, m.id)
	if !gone {
		s.consumerEvent(g, kind, now, m, reason)
	}
	s.emitGroupEpoch(g, g.epoch+1, metadataHash(g.subscribedTopics(s.catalog(g.Tenant)), s.catalog(g.Tenant)))
	s.consumerStarted(g, now, t, why, before)
	if len(g.members) == 0 {
		s.emitTargetEpoch(g, g.epoch, 0)
	}
}

// armConsumerSession moves m's session deadline; the timer fires early at
// most once and re-arms itself (as the classic members' sessions).
func (s *Shard) armConsumerSession(g *consumerGroup, m *consumerMember, now time.Time) {
	d := s.cfg.ConsumerSessionTimeout
	if m.classic != nil {
		// A classic member keeps the session timeout its JoinGroup asked
		// for (after a load too: Kafka then uses the consumer groups'
		// until the member's next request; no client can tell).
		d = time.Duration(m.classic.sessionTimeout) * time.Millisecond
	}
	m.expireAt = deadlineAt(now.Add(d))
	if m.armedAt.IsZero() || m.armedAt.After(m.expireAt) {
		m.armedAt = m.expireAt
		s.timer(memberTimer(timerConsumerSession, g.Key, m.id), m.expireAt.Time())
	}
}

// armRevocation (re)starts m's rebalance timeout when it must revoke, and
// stops it when it no longer must. As Kafka, it runs whenever m's
// assignment changed: a member that revoked what it was asked and is
// at once asked to revoke more gets a full rebalance timeout again.
func (s *Shard) armRevocation(g *consumerGroup, m *consumerMember, now time.Time) {
	if m.state == memberUnrevoked && m.classic == nil {
		// (A classic member has no revocation timeout: the join timer
		// its Heartbeat arms bounds how long it takes to rejoin and
		// report what it revoked, mixed §4.6.)
		m.revokeBy = now.Add(time.Duration(m.rebalanceTimeout) * time.Millisecond)
		m.revokeEpoch = m.epoch
		s.timer(memberTimer(timerConsumerRevoke, g.Key, m.id), m.revokeBy)
		return
	}
	s.cancelRevocation(g, m)
}

func (s *Shard) cancelRevocation(g *consumerGroup, m *consumerMember) {
	if !m.revokeBy.IsZero() {
		m.revokeBy = time.Time{}
		s.timer(memberTimer(timerConsumerRevoke, g.Key, m.id), time.Time{})
	}
}

// consumerTimer runs a member's session or revocation timer.
func (s *Shard) consumerTimer(g *consumerGroup, kind byte, id string, now time.Time) {
	if g == nil {
		return
	}
	m := g.members[id]
	if m == nil {
		return
	}
	switch kind {
	case timerConsumerSession:
		m.armedAt = 0
		if now.Before(m.expireAt.Time()) {
			m.armedAt = m.expireAt
			s.timer(memberTimer(timerConsumerSession, g.Key, m.id), m.expireAt.Time())
			return
		}
		why := fmt.Sprintf("member %s's session expired", m.id)
		if m.epoch == leaveStaticEpoch {
			why = fmt.Sprintf("static member %s's session expired after it left", m.id)
		}
		s.removeConsumerMember(g, m, now, observe.MemberExpired, "session timed out", consumerTrigger(observe.CauseMemberExpired, m), why)
	case timerClassicJoin, timerClassicSync:
		at := &m.joinBy
		what := "the classic member failed to join within the rebalance timeout"
		if kind == timerClassicSync {
			at, what = &m.syncBy, "the classic member failed to sync within the rebalance timeout"
		}
		if at.IsZero() || now.Before(*at) {
			return
		}
		*at = time.Time{}
		s.removeConsumerMember(g, m, now, observe.MemberFenced, what,
			consumerTrigger(observe.CauseRebalanceTimeout, m), fmt.Sprintf("member %s: %s", m.id, what))
	case timerConsumerRevoke:
		if m.revokeBy.IsZero() || now.Before(m.revokeBy) {
			return
		}
		m.revokeBy = time.Time{}
		if m.state == memberUnrevoked && m.epoch == m.revokeEpoch {
			s.removeConsumerMember(g, m, now, observe.MemberFenced, "did not revoke its partitions within the rebalance timeout",
				consumerTrigger(observe.CauseRebalanceTimeout, m), fmt.Sprintf("member %s failed to revoke its partitions within its rebalance timeout", m.id))
		}
	}
	s.settleConsumer(g, now)
}

// uuid returns a random id in Kafka's Uuid.toString form (grouptype's
// Host.UUID).
func (s *Shard) uuid() string { return s.h.UUID() }
