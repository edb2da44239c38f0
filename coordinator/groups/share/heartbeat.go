package share

// ShareGroupHeartbeat (KIP-932): join, heartbeat and leave in one request,
// as Kafka 4.2's GroupMetadataManager.shareGroupHeartbeat. Each heartbeat
// runs three steps: update the member (and bump the group epoch if its
// subscription or the subscribed topics' metadata changed), recompute the
// target assignment with the simple assignor if it lags the group epoch,
// then give this member its target at once (Kafka's
// ShareGroupAssignmentBuilder: a share member owns nothing exclusively,
// so there is nothing to revoke first).

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TimerSession is the timer kind of a share group member's session.
const TimerSession = 'q'

// validate is Kafka's throwIfShareGroupHeartbeatRequestIsInvalid (4.2):
// the member id is the client's (KIP-1082), a join names its topics.
func validate(r *kmsg.ShareGroupHeartbeatRequest) string {
	switch {
	case r.MemberID == "":
		return "MemberId can't be empty."
	case r.GroupID == "":
		return "GroupId can't be empty."
	case r.RackID != nil && *r.RackID == "":
		return "RackId can't be empty."
	case r.MemberEpoch == 0 && len(r.SubscribedTopicNames) == 0:
		return "SubscribedTopicNames must be set in first request."
	case r.MemberEpoch < LeaveEpoch:
		return "MemberEpoch is invalid."
	}
	return ""
}

func hbError(resp *kmsg.ShareGroupHeartbeatResponse, code int16, msg string) *kmsg.ShareGroupHeartbeatResponse {
	resp.ErrorCode = code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// Heartbeat serves ShareGroupHeartbeat.
func (s *Type) Heartbeat(now time.Time, req machine.Request, r *kmsg.ShareGroupHeartbeatRequest) {
	resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.Version = r.Version
	if msg := validate(r); msg != "" {
		s.reply(req.ID, hbError(resp, kerr.InvalidRequest.Code, msg))
		return
	}
	if r.MemberEpoch == LeaveEpoch {
		s.reply(req.ID, s.leave(now, req, r, resp))
		return
	}
	s.reply(req.ID, s.joinOrBeat(now, req, r, resp))
}

// notShare is GROUP_ID_NOT_FOUND's message for a group e of another type
// (Kafka's shareGroup(groupId)), or for none.
func notShare(e *grouptype.Entry, name string) string {
	if e != nil && e.Part != nil {
		return fmt.Sprintf("Group %s is not a share group.", name)
	}
	return fmt.Sprintf("Group %s not found.", name)
}

// leave serves a heartbeat with epoch -1, as Kafka's shareGroupLeave: the
// member's tombstones and a new group epoch; the response echoes the
// member id and -1.
func (s *Type) leave(now time.Time, req machine.Request, r *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) *kmsg.ShareGroupHeartbeatResponse {
	e := s.h.Lookup(req.Tenant, r.GroupID)
	g := Of(e)
	if g == nil {
		return hbError(resp, kerr.GroupIDNotFound.Code, notShare(e, r.GroupID))
	}
	m := g.Members[r.MemberID]
	if m == nil {
		return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", r.MemberID, r.GroupID))
	}
	s.remove(g, m, now, observe.MemberLeft, "", observe.CauseMemberLeft, fmt.Sprintf("member %s left", m.ID))
	resp.MemberID = &r.MemberID
	resp.MemberEpoch = LeaveEpoch
	return resp
}

// joinOrBeat serves a join (epoch 0) or a heartbeat.
func (s *Type) joinOrBeat(now time.Time, req machine.Request, r *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) *kmsg.ShareGroupHeartbeatResponse {
	k := grouptype.Key{Tenant: req.Tenant, Name: r.GroupID}
	e := s.h.Lookup(k.Tenant, k.Name)
	g := Of(e)
	created := false
	switch {
	case e != nil && e.Part != nil && g == nil:
		// As Kafka: no conversion between share groups and others, even
		// of an empty group.
		return hbError(resp, kerr.GroupIDNotFound.Code, notShare(e, r.GroupID))
	case g == nil && r.MemberEpoch != 0:
		return hbError(resp, kerr.GroupIDNotFound.Code, fmt.Sprintf("Share group %s not found.", r.GroupID))
	case g == nil:
		if e == nil {
			if msg := s.h.NewGroupRefused(k.Tenant); msg != "" {
				return hbError(resp, kerr.GroupMaxSizeReached.Code, msg)
			}
		}
		id := s.h.NewGroupID(now)
		if e != nil && e.ID != "" {
			id = e.ID
		}
		e = s.h.Register(k)
		e.ID = id
		g, created = NewGroup(e), true // soft until the member's records
	}
	code, msg := s.beat(now, req, r, resp, g)
	if code != 0 {
		if created {
			g.Part = nil
			s.h.Forget(g.Entry)
		}
		return hbError(resp, code, msg)
	}
	return resp
}

// beat runs the three steps for a heartbeat to share group g and fills
// resp.
func (s *Type) beat(now time.Time, req machine.Request, r *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse, g *Group) (int16, string) {
	id := r.MemberID
	m := g.Members[id]
	// As Kafka's throwIfShareGroupIsFull, before the member is looked up:
	// a group at its capacity refuses any id it does not have.
	if max, quota := s.h.MaxMembers(g.Tenant, s.maxSize()); m == nil && max > 0 && len(g.Members) >= max {
		if quota {
			return kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members (the organisation's max_members_per_group).", max)
		}
		return kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", max)
	}
	switch {
	case m == nil && r.MemberEpoch != 0:
		return kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", id, r.GroupID)
	case m != nil && r.MemberEpoch != 0:
		if code, msg := validateEpoch(m, r.MemberEpoch); code != 0 {
			return code, msg
		}
	}

	// Step 1: the member's metadata, and the group epoch.
	isNew := m == nil
	next := Member{ID: id}
	if m != nil {
		next = *m
	}
	if r.RackID != nil {
		next.Rack = r.RackID
	}
	if r.SubscribedTopicNames != nil {
		ts := slices.Clone(r.SubscribedTopicNames)
		slices.Sort(ts)
		next.Topics = slices.Compact(ts)
	}
	next.ClientID, next.ClientHost = req.ClientID, req.ClientHost
	subChanged := isNew || !slices.Equal(next.Topics, m.Topics)
	if isNew || metadataChanged(m, &next) {
		s.emitMember(g, &next)
	}
	m = g.Members[id]
	before := m.Assigned
	if isNew {
		s.event(g, observe.MemberJoined, now, m, "")
	}
	hash := g.metaHash
	cat := s.catalog(g.Tenant)
	if subChanged || cat == nil || g.hashAt != cat.Version {
		hash = metadataHash(g.SubscribedTopics(), cat)
		if cat != nil {
			g.hashAt = cat.Version
		}
	}
	if subChanged || hash != g.metaHash {
		t, why := grouptype.Trigger{Cause: observe.CauseMetadataChanged}, "the subscribed topics' metadata changed"
		switch {
		case isNew:
			t, why = grouptype.Trigger{Cause: observe.CauseMemberJoined, Member: id}, fmt.Sprintf("member %s joined", id)
		case subChanged:
			t, why = grouptype.Trigger{Cause: observe.CauseSubscriptionChanged, Member: id}, fmt.Sprintf("member %s changed its subscription", id)
		}
		targets := g.targetsBefore()
		s.emitGroupEpoch(g, g.Epoch+1, hash)
		s.started(g, now, t, why, targets)
	}

	// Step 2: the target assignment.
	if g.Epoch > g.TargetEpoch {
		s.computeTarget(g, now)
	}

	// Step 3: the member takes its target (filtered by its subscription,
	// as Kafka's ShareGroupAssignmentBuilder), at once.
	if m.Epoch != g.TargetEpoch || subChanged {
		epoch, prev := m.Epoch, m.PrevEpoch
		if epoch != g.TargetEpoch {
			epoch, prev = g.TargetEpoch, m.Epoch
		}
		target := s.subscribed(g, m, g.Target[m.ID])
		if epoch != m.Epoch || prev != m.PrevEpoch || !target.Equal(m.Assigned) {
			s.emitCurrent(g, m.ID, epoch, prev, target)
		}
	}
	m.session = req.GroupConfig.ShareSessionTimeout
	s.armSession(g, m, now)

	resp.MemberID = &m.ID
	resp.MemberEpoch = m.Epoch
	interval := s.heartbeatInterval()
	if req.GroupConfig.ShareHeartbeatInterval > 0 {
		interval = req.GroupConfig.ShareHeartbeatInterval
	}
	resp.HeartbeatIntervalMillis = int32(interval.Milliseconds())
	// As Kafka: the assignment goes with a join, a full request (one
	// naming its topics) and a change.
	if r.MemberEpoch == 0 || r.SubscribedTopicNames != nil || !before.Equal(m.Assigned) {
		a := &kmsg.ShareGroupHeartbeatResponseAssignment{TopicPartitions: []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}}
		for _, t := range m.Assigned {
			a.TopicPartitions = append(a.TopicPartitions, kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{TopicID: t.TopicID, Partitions: slices.Clone(t.Partitions)})
		}
		resp.Assignment = a
	}
	return 0, ""
}

// validateEpoch is Kafka's throwIfShareGroupMemberEpochIsInvalid: a
// member ahead of the coordinator is fenced; one behind is fenced unless
// it sends its previous epoch (the response that advanced it was lost).
func validateEpoch(m *Member, received int32) (int16, string) {
	switch {
	case received > m.Epoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.Epoch)
	case received < m.Epoch && received != m.PrevEpoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", received, m.Epoch, m.PrevEpoch)
	}
	return 0, ""
}

// metadataChanged reports whether the member metadata record would
// differ.
func metadataChanged(a, b *Member) bool {
	return !eqPtr(a.Rack, b.Rack) || a.ClientID != b.ClientID || a.ClientHost != b.ClientHost || !slices.Equal(a.Topics, b.Topics)
}

func eqPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// subscribed is a with only the topics member m subscribes to, as the
// catalog names them.
func (s *Type) subscribed(g *Group, m *Member, a Assignment) Assignment {
	cat := s.catalog(g.Tenant)
	return a.only(func(id [16]byte) bool {
		if cat == nil {
			return false
		}
		name, ok := cat.ByID[id]
		_, sub := slices.BinarySearch(m.Topics, name)
		return ok && sub
	})
}

// computeTarget runs the simple assignor over every member and writes the
// members whose target changed, then the target epoch (Kafka's
// TargetAssignmentBuilder), and notes the partitions that may now hold
// share-partition state. The topics of a deleted group's state still to
// be dropped are left out until the share-state host has dropped it (as
// Kafka assigns only initialized partitions), so that a new group of the
// same name never reads the old group's state.
func (s *Type) computeTarget(g *Group, now time.Time) {
	cat := s.catalog(g.Tenant)
	deleting := map[[16]byte]bool{}
	if p := s.parts[g.Key]; p != nil {
		for id := range p.Deleting {
			deleting[id] = true
		}
	}
	in := assign.Group{Topics: map[string]assign.Topic{}}
	for _, m := range g.SortedMembers() {
		am := assign.Member{ID: m.ID, Topics: m.Topics}
		if cat != nil {
			am.Current = assign.Partitions{}
			for _, t := range g.Target[m.ID] {
				if name, ok := cat.ByID[t.TopicID]; ok {
					am.Current[name] = t.Partitions
				}
			}
			for _, t := range m.Topics {
				if meta, ok := cat.ByName[t]; ok && !deleting[meta.ID] {
					in.Topics[t] = assign.Topic{Partitions: meta.Partitions}
				}
			}
		}
		in.Members = append(in.Members, am)
	}
	out := assign.Simple(in)
	for _, m := range g.SortedMembers() {
		var next Assignment
		for _, name := range grouptype.SortedKeys(out[m.ID]) {
			if ps := out[m.ID][name]; len(ps) > 0 {
				next = append(next, record.TopicPartitions{TopicID: cat.ByName[name].ID, Partitions: ps})
			}
		}
		next = assignmentOf(next)
		if old, ok := g.Target[m.ID]; !ok || !old.Equal(next) {
			s.emitTarget(g, m.ID, next)
		}
	}
	s.emitTargetEpoch(g, g.Epoch)
	s.noteInitialized(g, now)
	s.completed(g, now)
}

// noteInitialized adds the partitions of g's targets that its
// ShareGroupPartitions record does not list yet: the share-partition
// state a ShareFetch may create for them is then known, so that a
// deletion of the group drops it.
func (s *Type) noteInitialized(g *Group, now time.Time) {
	cat := s.catalog(g.Tenant)
	add := map[[16]byte][]int32{}
	p := s.parts[g.Key]
	for _, id := range grouptype.SortedKeys(g.Target) {
		for _, t := range g.Target[id] {
			for _, part := range t.Partitions {
				if p != nil && slices.Contains(p.Initialized[t.TopicID].Partitions, part) {
					continue
				}
				add[t.TopicID] = append(add[t.TopicID], part)
			}
		}
	}
	if len(add) == 0 {
		return
	}
	next := &Partitions{Initialized: map[[16]byte]record.ShareStateTopic{}, Deleting: map[[16]byte]record.ShareStateTopic{}}
	if p != nil {
		for id, t := range p.Initialized {
			next.Initialized[id] = t
		}
		for id, t := range p.Deleting {
			next.Deleting[id] = t
		}
	}
	for _, id := range sortedIDs(add) {
		t, ok := next.Initialized[id]
		if !ok {
			t = record.ShareStateTopic{TopicID: id, Timestamp: now.UnixMilli()}
			if cat != nil {
				t.Name = cat.ByID[id]
			}
		}
		ps := append(slices.Clone(t.Partitions), add[id]...)
		slices.Sort(ps)
		t.Partitions = slices.Compact(ps)
		next.Initialized[id] = t
	}
	s.emitPartitions(g.Key, next)
}

// remove takes member m out of g (Kafka's shareGroupFenceMember): its
// tombstones, then a new group epoch so that the next heartbeat
// recomputes the target. It is reported as kind, for reason, and starts a
// rebalance for cause; the last member's leaving ends it at once
// (nothing is left to assign).
func (s *Type) remove(g *Group, m *Member, now time.Time, kind observe.GroupEventKind, reason string, cause observe.Cause, why string) {
	targets := g.targetsBefore()
	s.stopTimers(g, m)
	s.emitRemoveMember(g, m.ID)
	s.event(g, kind, now, m, reason)
	cat := s.catalog(g.Tenant)
	s.emitGroupEpoch(g, g.Epoch+1, metadataHash(g.SubscribedTopics(), cat))
	s.started(g, now, grouptype.Trigger{Cause: cause, Member: m.ID}, why, targets)
	if len(g.Members) == 0 {
		s.completed(g, now)
	}
}

// armSession moves m's session deadline; the timer fires early at most
// once and re-arms itself (as the other types' sessions).
func (s *Type) armSession(g *Group, m *Member, now time.Time) {
	d := s.sessionTimeout()
	if m.session > 0 {
		d = m.session // the group's config, at its last heartbeat
	}
	m.expireAt = grouptype.DeadlineAt(now.Add(d))
	if m.armedAt.IsZero() || m.armedAt.After(m.expireAt) {
		m.armedAt = m.expireAt
		s.timer(grouptype.MemberTimer(TimerSession, g.Key, m.ID), m.expireAt.Time())
	}
}

func (s *Type) stopTimers(g *Group, m *Member) {
	if !m.armedAt.IsZero() {
		m.armedAt = 0
		s.timer(grouptype.MemberTimer(TimerSession, g.Key, m.ID), time.Time{})
	}
}

// Fire runs a member's session timer: a member whose session ran out is
// removed, as Kafka's shareGroupFenceMemberOperation.
func (s *Type) Fire(g *Group, kind byte, id string, now time.Time) {
	m := g.Members[id]
	if kind != TimerSession || m == nil {
		return
	}
	m.armedAt = 0
	if now.Before(m.expireAt.Time()) {
		m.armedAt = m.expireAt
		s.timer(grouptype.MemberTimer(TimerSession, g.Key, m.ID), m.expireAt.Time())
		return
	}
	s.remove(g, m, now, observe.MemberExpired, "session timed out", observe.CauseMemberExpired, fmt.Sprintf("member %s's session expired", m.ID))
}
