package consumer

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
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timer kinds of consumer group members: the session and the revocation
// (rebalance) timeout.
const (
	TimerSession = 'c'
	TimerRevoke  = 'v'
)

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (s *Type) validateHeartbeat(r *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
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
	case r.MemberEpoch > 0 || r.MemberEpoch == LeaveEpoch:
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
	case r.MemberEpoch == LeaveStaticEpoch:
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

func (s *Type) assignor(name string) assign.Assignor {
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

// Heartbeat serves ConsumerGroupHeartbeat.
func (s *Type) Heartbeat(now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest) {
	s.h.NoteCatalog(req.Tenant, req.Topics)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.Version = r.Version
	if code, msg := s.validateHeartbeat(r); code != 0 {
		s.reply(req.ID, hbError(resp, code, msg))
		return
	}
	if r.MemberEpoch == LeaveEpoch || r.MemberEpoch == LeaveStaticEpoch {
		s.reply(req.ID, s.consumerLeave(now, req, r, resp))
	} else {
		s.reply(req.ID, s.consumerJoinOrBeat(now, req, r, resp))
	}
	s.Settle(s.group(req.Tenant, r.Group), now)
}

// heartbeatGroup returns the consumer group a heartbeat names, creating
// it for a join; a group of another type is the migration's to convert
// (Migration.Join).
func (s *Type) heartbeatGroup(now time.Time, k grouptype.Key, r *kmsg.ConsumerGroupHeartbeatRequest) (*Group, int16, string) {
	e := s.h.Lookup(k.Tenant, k.Name)
	if c := Of(e); c != nil {
		return c, 0, ""
	}
	if e != nil && e.Part != nil {
		return s.mig.Join(now, e, r)
	}
	if r.MemberEpoch != 0 {
		return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Consumer group %s not found.", k.Name)
	}
	if e == nil {
		if msg := s.h.NewGroupRefused(k.Tenant); msg != "" {
			return nil, kerr.GroupMaxSizeReached.Code, msg
		}
	}
	id := s.h.NewGroupID(now)
	if e != nil {
		id = e.ID // known by its offsets only
	}
	return s.Create(k, id), 0, ""
}

// Create registers an empty consumer group with id (soft until its
// records are written: a new member's heartbeat writes them).
func (s *Type) Create(k grouptype.Key, id string) *Group {
	e := s.entry(k)
	e.ID = id
	return NewGroup(e)
}

func (s *Type) consumerJoinOrBeat(now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	g, code, msg := s.heartbeatGroup(now, grouptype.Key{Tenant: req.Tenant, Name: r.Group}, r)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	id := r.MemberID
	if r.Version == 0 && r.MemberEpoch == 0 && id == "" {
		id = s.uuid()
	}
	var owned Assignment
	if r.Topics != nil {
		byID := map[[16]byte][]int32{}
		for _, t := range r.Topics {
			ps := slices.Clone(t.Partitions)
			slices.Sort(ps)
			byID[t.TopicID] = append(byID[t.TopicID], ps...)
		}
		owned = AssignmentFrom(byID)
	}

	m := g.Members[id]
	// isNew: the member is added; replaced: a static member's new
	// instance takes the place of the old, which had left (-2); back: a
	// static member that had left (-2) rejoins with its own id.
	isNew, replaced, back := false, false, false
	if r.MemberEpoch == 0 {
		if r.InstanceID != nil {
			if oldID, ok := g.Static[*r.InstanceID]; ok && oldID != id {
				old := g.Members[oldID]
				// A classic member's instance is taken over at once: the
				// rolling upgrade of a static member (mixed §3.4).
				if old.Epoch != LeaveStaticEpoch && old.Classic == nil {
					return hbError(resp, kerr.UnreleasedInstanceID.Code, fmt.Sprintf(
						"Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", id, *r.InstanceID, oldID))
				}
				m, replaced = s.ReplaceStatic(now, g, old, id), true
			}
		}
		if m == nil {
			if max, _ := s.h.MaxMembers(g.Tenant, s.cfg.ConsumerMaxSize); max > 0 && len(g.Members) >= max {
				return hbError(resp, kerr.GroupMaxSizeReached.Code, s.h.FullMessage(g.Tenant, s.cfg.ConsumerMaxSize))
			}
			isNew = true
			m = &Member{ID: id} // a template: the record makes the member
		}
		back = m.Epoch == LeaveStaticEpoch
	} else {
		if m == nil {
			return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", id, r.Group))
		}
		if r.InstanceID != nil && (m.Instance == nil || *m.Instance != *r.InstanceID) {
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
		next.Instance = r.InstanceID
	}
	if r.RackID != nil {
		next.Rack = r.RackID
	}
	if r.RebalanceTimeoutMillis != -1 {
		next.RebalanceTimeout = r.RebalanceTimeoutMillis
	}
	if r.ServerAssignor != nil {
		next.Assignor = *r.ServerAssignor
	}
	if r.SubscribedTopicNames != nil {
		ts := slices.Clone(r.SubscribedTopicNames)
		slices.Sort(ts)
		next.Topics = slices.Compact(ts)
	}
	if r.SubscribedTopicRegex != nil {
		next.Regex = *r.SubscribedTopicRegex
	}
	next.ClientID, next.ClientHost = req.ClientID, req.ClientHost
	next.Classic = nil // a member speaks the protocol of its last request
	before := m.Assigned
	m, code, msg = s.AdvanceMember(now, g, m, &next, isNew, isNew || replaced, owned)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	if back && m.Epoch != LeaveStaticEpoch {
		// Reported once its epoch counts it in again.
		s.Event(g, observe.MemberJoined, now, m, "")
	}
	m.session = req.GroupConfig.SessionTimeout
	s.ArmSession(g, m, now)

	resp.MemberID = &m.ID
	resp.MemberEpoch = m.Epoch
	interval := s.cfg.ConsumerHeartbeatInterval
	if req.GroupConfig.HeartbeatInterval > 0 {
		interval = req.GroupConfig.HeartbeatInterval
	}
	resp.HeartbeatIntervalMillis = int32(interval.Milliseconds())
	full := r.MemberEpoch == 0 || (r.RebalanceTimeoutMillis != -1 && (r.SubscribedTopicNames != nil || r.SubscribedTopicRegex != nil) && r.Topics != nil)
	if full || !before.equal(m.Assigned) {
		a := &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
		for _, tp := range m.Assigned.Records() {
			a.Topics = append(a.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
		}
		if a.Topics == nil {
			a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		}
		resp.Assignment = a
	}
	return resp
}

// AdvanceMember runs the consumer protocol's three steps for member m
// (a template if isNew) whose request asks for the metadata next: write
// the member's metadata and bump the group epoch if the group's inputs
// changed, recompute the target assignment if it lags and the interval
// allows, then move the member one step toward its target given what it
// says it owns (Kafka's consumerGroupHeartbeat and
// classicGroupJoinToConsumerGroup share these steps). joined reports the
// member as joined. It returns the live member.
func (s *Type) AdvanceMember(now time.Time, g *Group, m, next *Member, isNew, joined bool, owned Assignment) (*Member, int16, string) {
	id := next.ID
	bump, why := true, "" // why: the reason for the rebalance
	cause := observe.CauseMetadataChanged
	switch {
	case isNew:
		why, cause = fmt.Sprintf("member %s joined", id), observe.CauseMemberJoined
	case joined && (!slices.Equal(next.Topics, m.Topics) || next.Regex != m.Regex || next.Assignor != m.Assignor):
		// A static member's new instance (of the other protocol,
		// perhaps) asks for something else than the old one.
		why, cause = fmt.Sprintf("static member %s replaced with another subscription or assignor", id), observe.CauseStaticMemberReplaced
	case !slices.Equal(next.Topics, m.Topics) || next.Regex != m.Regex:
		why, cause = fmt.Sprintf("member %s changed its subscription", id), observe.CauseSubscriptionChanged
	case next.Assignor != m.Assignor:
		why, cause = fmt.Sprintf("member %s changed its server assignor", id), observe.CauseOther
	default:
		bump, why = false, "the subscribed topics' metadata changed"
	}
	if isNew || metadataChanged(m, next) {
		s.EmitMember(g, next)
		m = g.Members[id]
	}
	if joined {
		s.Event(g, observe.MemberJoined, now, m, "")
	}
	hash := g.metaHash
	if cat := s.catalog(g.Tenant); bump || cat == nil || g.hashAt != cat.Version {
		hash = MetadataHash(g.SubscribedTopics(cat), cat)
		if cat != nil {
			g.hashAt = cat.Version
		}
	}
	if bump || hash != g.metaHash {
		t := grouptype.Trigger{Cause: cause}
		if bump {
			t = Trigger(cause, m)
		}
		before := g.TargetsBefore()
		s.EmitGroupEpoch(g, g.Epoch+1, hash)
		s.Started(g, now, t, why, before)
	}

	// Step 2: the target assignment.
	if g.Epoch > g.TargetEpoch && now.UnixMilli() >= g.targetTime+s.cfg.AssignmentInterval.Milliseconds() {
		s.computeTarget(g, now)
	}

	// Step 3: reconcile this member.
	cur, code, msg := s.reconcile(g, m, owned)
	if code != 0 {
		return m, code, msg
	}
	if cur != nil {
		s.EmitCurrent(g, m.ID, *cur)
		s.armRevocation(g, m, now)
	}
	return m, 0, ""
}

// metadataChanged reports whether the member metadata record would differ.
func metadataChanged(a, b *Member) bool {
	return !eqPtr(a.Instance, b.Instance) || !eqPtr(a.Rack, b.Rack) || a.ClientID != b.ClientID ||
		a.ClientHost != b.ClientHost || !slices.Equal(a.Topics, b.Topics) || a.Regex != b.Regex ||
		a.RebalanceTimeout != b.RebalanceTimeout || a.Assignor != b.Assignor || !a.Classic.equal(b.Classic)
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
func validateMemberEpoch(m *Member, received int32, owned Assignment) (int16, string) {
	switch {
	case received > m.Epoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.Epoch)
	case received < m.Epoch:
		if received == m.PrevEpoch && owned != nil && subset(owned, m.Assigned) {
			return 0, ""
		}
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.Epoch)
	}
	return 0, ""
}

func subset(a, b Assignment) bool {
	for _, at := range a {
		id, ps := at.TopicID, at.Partitions
		for _, p := range ps {
			if !b.Has(id, p) {
				return false
			}
		}
	}
	return true
}

// ReplaceStatic moves a static member that left with epoch -2 to its new
// member id, keeping its assignment and target (Kafka's
// consumerGroupStaticMemberGroupLeave / replace): the old id's tombstones,
// then the new id's records at epoch 0.
//
// A classic member is replaced while it is still in the group (mixed §3.4,
// §4.2): it is reported fenced.
func (s *Type) ReplaceStatic(now time.Time, g *Group, old *Member, id string) *Member {
	target := g.Target[old.ID]
	cur := Current{Epoch: 0, PrevEpoch: 0, State: old.State, Assigned: old.Assigned, Revoking: old.Revoking}
	meta := *old
	s.StopTimers(g, old)
	s.EmitRemoveMember(g, old.ID)
	if meta.Epoch != LeaveStaticEpoch {
		s.Event(g, observe.MemberFenced, now, old, "replaced by a new instance of the static member: "+id)
	}
	meta.ID = id
	s.EmitMember(g, &meta)
	if target != nil {
		s.EmitTarget(g, id, target)
	}
	s.EmitCurrent(g, id, cur)
	return g.Members[id]
}

// computeTarget runs the group's assignor over every member and writes
// the members whose target changed, then the target epoch (Kafka's
// TargetAssignmentBuilder).
func (s *Type) computeTarget(g *Group, now time.Time) {
	cat := s.catalog(g.Tenant)
	in := assign.Group{Topics: map[string]assign.Topic{}}
	for _, m := range g.SortedMembers() {
		am := assign.Member{ID: m.ID, Topics: m.subscription(cat)}
		if m.Instance != nil {
			am.InstanceID = *m.Instance
		}
		if m.Rack != nil {
			am.Rack = *m.Rack
		}
		if cat != nil {
			am.Current = assign.Partitions{}
			for _, at := range g.Target[m.ID] {
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
	for _, m := range g.SortedMembers() {
		byID := map[[16]byte][]int32{}
		for name, ps := range out[m.ID] {
			if len(ps) > 0 {
				byID[cat.ByName[name].ID] = ps
			}
		}
		next := AssignmentFrom(byID)
		if old, ok := g.Target[m.ID]; !ok || !old.equal(next) {
			s.EmitTarget(g, m.ID, next)
		}
	}
	s.EmitTargetEpoch(g, g.Epoch, now.UnixMilli())
}

// groupAssignor is the assignor most members ask for (ties: the first in
// the configured order), else the default, as Kafka's
// computePreferredServerAssignor.
func (s *Type) groupAssignor(g *Group) assign.Assignor {
	votes := map[string]int{}
	for _, m := range g.Members {
		if m.Assignor != "" {
			votes[m.Assignor]++
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
func (s *Type) consumerLeave(now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	g, code, msg := s.heartbeatGroup(now, grouptype.Key{Tenant: req.Tenant, Name: r.Group}, r)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	var m *Member
	if r.InstanceID == nil {
		m = g.Members[r.MemberID]
		if m == nil {
			return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", r.MemberID, r.Group))
		}
	} else {
		mid, ok := g.Static[*r.InstanceID]
		if !ok {
			return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Instance id %s is unknown.", *r.InstanceID))
		}
		m = g.Members[mid]
		if mid != r.MemberID {
			return hbError(resp, kerr.FencedInstanceID.Code, fmt.Sprintf(
				"Static member %s with instance id %s is not the owner of the instance id.", r.MemberID, *r.InstanceID))
		}
	}
	resp.MemberID = &r.MemberID
	resp.MemberEpoch = r.MemberEpoch
	if r.MemberEpoch == LeaveStaticEpoch {
		gone := m.Epoch == LeaveStaticEpoch
		s.EmitCurrent(g, m.ID, Current{Epoch: LeaveStaticEpoch, PrevEpoch: m.Epoch, State: m.State, Assigned: m.Assigned, Revoking: Assignment{}})
		s.cancelRevocation(g, m)
		if !gone {
			s.Event(g, observe.MemberLeft, now, m, "static member left for a while (epoch -2)")
		}
		return resp
	}
	s.removeConsumerMember(g, m, now, observe.MemberLeft, "", Trigger(observe.CauseMemberLeft, m), fmt.Sprintf("member %s left", m.ID))
	return resp
}

// removeConsumerMember fences or removes a member: its tombstones, then a
// new group epoch so that the next heartbeat recomputes the target. The
// last member's departure also advances the target epoch, with time 0 so
// that the next computation is not held back. The removal is reported as
// kind, for reason (unless the member had already left with epoch -2),
// and the rebalance it starts for t and why.
func (s *Type) removeConsumerMember(g *Group, m *Member, now time.Time, kind observe.GroupEventKind, reason string, t grouptype.Trigger, why string) {
	if m.Classic == nil && s.mig.Leave(now, g, m, kind, reason, t, why) {
		return // the group is a classic group now
	}
	before := g.TargetsBefore() // with m's target, which goes now
	gone := m.Epoch == LeaveStaticEpoch
	s.StopTimers(g, m)
	s.EmitRemoveMember(g, m.ID)
	if !gone {
		s.Event(g, kind, now, m, reason)
	}
	s.EmitGroupEpoch(g, g.Epoch+1, MetadataHash(g.SubscribedTopics(s.catalog(g.Tenant)), s.catalog(g.Tenant)))
	s.Started(g, now, t, why, before)
	if len(g.Members) == 0 {
		s.EmitTargetEpoch(g, g.Epoch, 0)
	}
}

// ArmSession moves m's session deadline; the timer fires early at
// most once and re-arms itself (as the classic members' sessions).
func (s *Type) ArmSession(g *Group, m *Member, now time.Time) {
	d := s.cfg.ConsumerSessionTimeout
	if m.session > 0 {
		d = m.session // the group's config (its last heartbeat's)
	}
	if m.Classic != nil {
		// A classic member keeps the session timeout its JoinGroup asked
		// for (after a load too: Kafka then uses the consumer groups'
		// until the member's next request; no client can tell).
		d = time.Duration(m.Classic.SessionTimeout) * time.Millisecond
	}
	m.expireAt = grouptype.DeadlineAt(now.Add(d))
	if m.armedAt.IsZero() || m.armedAt.After(m.expireAt) {
		m.armedAt = m.expireAt
		s.timer(grouptype.MemberTimer(TimerSession, g.Key, m.ID), m.expireAt.Time())
	}
}

// armRevocation (re)starts m's rebalance timeout when it must revoke, and
// stops it when it no longer must. As Kafka, it runs whenever m's
// assignment changed: a member that revoked what it was asked and is
// at once asked to revoke more gets a full rebalance timeout again.
func (s *Type) armRevocation(g *Group, m *Member, now time.Time) {
	if m.State == MemberUnrevoked && m.Classic == nil {
		// (A classic member has no revocation timeout: the join timer
		// its Heartbeat arms bounds how long it takes to rejoin and
		// report what it revoked, mixed §4.6.)
		m.revokeBy = now.Add(time.Duration(m.RebalanceTimeout) * time.Millisecond)
		m.revokeEpoch = m.Epoch
		s.timer(grouptype.MemberTimer(TimerRevoke, g.Key, m.ID), m.revokeBy)
		return
	}
	s.cancelRevocation(g, m)
}

func (s *Type) cancelRevocation(g *Group, m *Member) {
	if !m.revokeBy.IsZero() {
		m.revokeBy = time.Time{}
		s.timer(grouptype.MemberTimer(TimerRevoke, g.Key, m.ID), time.Time{})
	}
}

// Fire runs a member's session or revocation timer.
func (s *Type) Fire(g *Group, kind byte, id string, now time.Time) {
	if g == nil {
		return
	}
	m := g.Members[id]
	if m == nil {
		return
	}
	switch kind {
	case TimerSession:
		m.armedAt = 0
		if now.Before(m.expireAt.Time()) {
			m.armedAt = m.expireAt
			s.timer(grouptype.MemberTimer(TimerSession, g.Key, m.ID), m.expireAt.Time())
			return
		}
		why := fmt.Sprintf("member %s's session expired", m.ID)
		if m.Epoch == LeaveStaticEpoch {
			why = fmt.Sprintf("static member %s's session expired after it left", m.ID)
		}
		s.removeConsumerMember(g, m, now, observe.MemberExpired, "session timed out", Trigger(observe.CauseMemberExpired, m), why)
	case TimerClassicJoin, TimerClassicSync:
		at := &m.JoinBy
		what := "the classic member failed to join within the rebalance timeout"
		if kind == TimerClassicSync {
			at, what = &m.SyncBy, "the classic member failed to sync within the rebalance timeout"
		}
		if at.IsZero() || now.Before(*at) {
			return
		}
		*at = time.Time{}
		s.removeConsumerMember(g, m, now, observe.MemberFenced, what,
			Trigger(observe.CauseRebalanceTimeout, m), fmt.Sprintf("member %s: %s", m.ID, what))
	case TimerRevoke:
		if m.revokeBy.IsZero() || now.Before(m.revokeBy) {
			return
		}
		m.revokeBy = time.Time{}
		if m.State == MemberUnrevoked && m.Epoch == m.revokeEpoch {
			s.removeConsumerMember(g, m, now, observe.MemberFenced, "did not revoke its partitions within the rebalance timeout",
				Trigger(observe.CauseRebalanceTimeout, m), fmt.Sprintf("member %s failed to revoke its partitions within its rebalance timeout", m.ID))
		}
	}
	s.Settle(g, now)
}

// uuid returns a random id in Kafka's Uuid.toString form (grouptype's
// Host.UUID).
func (s *Type) uuid() string { return s.h.UUID() }

// Timer kinds of classic members in a consumer group (package
// migration arms them): the deadline to rejoin after being told to, and
// to sync after a JoinGroup (mixed §4.6). The shard routes them, like the
// session and revocation timers, to Fire.
const (
	TimerClassicJoin = 'J'
	TimerClassicSync = 'S'
)

// ArmClassicJoin gives a classic member told to rejoin its rebalance
// timeout to do so, unless it already has one.
func (s *Type) ArmClassicJoin(g *Group, m *Member, now time.Time) {
	if m.JoinBy.IsZero() {
		m.JoinBy = now.Add(time.Duration(m.RebalanceTimeout) * time.Millisecond)
		s.timer(grouptype.MemberTimer(TimerClassicJoin, g.Key, m.ID), m.JoinBy)
	}
}

// CancelClassicTimer stops a classic member's join or sync deadline
// (kind TimerClassicJoin or TimerClassicSync).
func (s *Type) CancelClassicTimer(g *Group, m *Member, kind byte) {
	at := &m.JoinBy
	if kind == TimerClassicSync {
		at = &m.SyncBy
	}
	if !at.IsZero() {
		*at = time.Time{}
		s.timer(grouptype.MemberTimer(kind, g.Key, m.ID), time.Time{})
	}
}

func (s *Type) cancelClassicTimers(g *Group, m *Member) {
	s.CancelClassicTimer(g, m, TimerClassicJoin)
	s.CancelClassicTimer(g, m, TimerClassicSync)
}

// StopTimers stops every timer of a member about to be removed.
func (s *Type) StopTimers(g *Group, m *Member) {
	s.cancelRevocation(g, m)
	s.cancelClassicTimers(g, m)
	if !m.armedAt.IsZero() {
		m.armedAt = 0
		s.timer(grouptype.MemberTimer(TimerSession, g.Key, m.ID), time.Time{})
	}
}
