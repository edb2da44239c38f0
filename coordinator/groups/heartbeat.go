package groups

// ConsumerGroupHeartbeat (KIP-848): join, heartbeat, reconcile and leave
// in one request, as Kafka's GroupMetadataManager.consumerGroupHeartbeat.
// Each heartbeat runs three steps: update the member (and bump the group
// epoch if the group's inputs changed), recompute the target assignment if
// it lags the group epoch and the assignment interval allows, then move
// this member one step toward its target (reconcile.go).

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timer kinds of consumer group members: the session and the revocation
// (rebalance) timeout.
const (
	timerConsumerSession = 'c'
	timerConsumerRevoke  = 'v'
)

// noteCatalog keeps the newest topic catalog a request brought.
func (mc *Machine) noteCatalog(c *machine.Catalog) {
	if c != nil && (mc.catalog == nil || c.Version >= mc.catalog.Version) {
		mc.catalog = c
	}
}

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (mc *Machine) validateHeartbeat(r *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
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
	if r.ServerAssignor != nil && mc.assignor(*r.ServerAssignor) == nil {
		var names []string
		for _, a := range mc.cfg.Assignors {
			names = append(names, a.Name())
		}
		return kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.", *r.ServerAssignor, strings.Join(names, ", "))
	}
	return 0, ""
}

func (mc *Machine) assignor(name string) assign.Assignor {
	for _, a := range mc.cfg.Assignors {
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
func (mc *Machine) consumerHeartbeat(now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest) {
	mc.noteCatalog(req.Topics)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.Version = r.Version
	if code, msg := mc.validateHeartbeat(r); code != 0 {
		mc.reply(req.ID, hbError(resp, code, msg))
		return
	}
	if r.MemberEpoch == leaveEpoch || r.MemberEpoch == leaveStaticEpoch {
		mc.reply(req.ID, mc.consumerLeave(now, r, resp))
		return
	}
	mc.reply(req.ID, mc.consumerJoinOrBeat(now, req, r, resp))
}

// consumerGroup returns the consumer group a heartbeat at epoch names,
// creating it (or converting an empty classic group) for a join.
func (mc *Machine) consumerGroup(now time.Time, name string, join bool) (*group, int16, string) {
	g := mc.groups[name]
	if g != nil && g.cg != nil {
		return g, 0, ""
	}
	if g != nil && (len(g.members) > 0 || g.state != empty) {
		return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group.", name)
	}
	if !join {
		return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Consumer group %s not found.", name)
	}
	if g == nil {
		g = mc.newGroup(name, now)
	} else if g.durable && g.protocolType != "" {
		// An empty classic group becomes a consumer group, keeping its
		// offsets and its id: its classic record goes.
		mc.write(mc.groupKey(name).Key(), nil)
	}
	g.protocolType, g.protocol, g.leader = "", "", ""
	g.cg = newCgroup()
	return g, 0, ""
}

func (mc *Machine) consumerJoinOrBeat(now time.Time, req machine.Request, r *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	g, code, msg := mc.consumerGroup(now, r.Group, r.MemberEpoch == 0)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	cg := g.cg
	id := r.MemberID
	if r.Version == 0 && r.MemberEpoch == 0 && id == "" {
		id = mc.uuid()
	}
	var owned tps
	if r.Topics != nil {
		owned = tps{}
		for _, t := range r.Topics {
			ps := slices.Clone(t.Partitions)
			slices.Sort(ps)
			owned[t.TopicID] = append(owned[t.TopicID], ps...)
		}
	}

	m := cg.members[id]
	isNew := false
	if r.MemberEpoch == 0 {
		if r.InstanceID != nil {
			if oldID, ok := cg.static[*r.InstanceID]; ok && oldID != id {
				old := cg.members[oldID]
				if old.epoch != leaveStaticEpoch {
					return hbError(resp, kerr.UnreleasedInstanceID.Code, fmt.Sprintf(
						"Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", id, *r.InstanceID, oldID))
				}
				m = mc.replaceStaticConsumer(g, old, id)
			}
		}
		if m == nil {
			if mc.cfg.ConsumerMaxSize > 0 && len(cg.members) >= mc.cfg.ConsumerMaxSize {
				return hbError(resp, kerr.GroupMaxSizeReached.Code, fmt.Sprintf(
					"The consumer group has reached its maximum capacity of %d members.", mc.cfg.ConsumerMaxSize))
			}
			isNew = true
			m = &cmember{id: id, prevEpoch: -1, assigned: tps{}, revoking: tps{}}
		}
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
	bump := isNew
	if !isNew && (!slices.Equal(next.topics, m.topics) || next.regex != m.regex || next.assignor != m.assignor) {
		bump = true
	}
	if isNew || metadataChanged(m, &next) {
		if isNew {
			cg.members[id] = m // the record fills it in
		}
		mc.emitMember(g, &next)
	}
	hash := cg.metaHash
	if bump || mc.catalog == nil || cg.hashAt != mc.catalog.Version {
		hash = metadataHash(cg.subscribedTopics(mc.catalog), mc.catalog)
		if mc.catalog != nil {
			cg.hashAt = mc.catalog.Version
		}
	}
	if bump || hash != cg.metaHash {
		cg.epoch++
		cg.metaHash = hash
		mc.emitGroupEpoch(g)
	}

	// Step 2: the target assignment.
	if cg.epoch > cg.targetEpoch && now.UnixMilli() >= cg.targetTime+mc.cfg.AssignmentInterval.Milliseconds() {
		mc.computeTarget(g, now)
	}

	// Step 3: reconcile this member.
	before := m.assigned
	cur, code, msg := mc.reconcile(cg, m, owned)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	if cur != nil {
		mc.emitCurrent(g, m.id, *cur)
		mc.armRevocation(g, m, now)
	}
	mc.armConsumerSession(g, m, now)

	resp.MemberID = &m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(mc.cfg.ConsumerHeartbeatInterval.Milliseconds())
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

// metadataChanged reports whether the member metadata record would differ.
func metadataChanged(a, b *cmember) bool {
	return !eqPtr(a.instance, b.instance) || !eqPtr(a.rack, b.rack) || a.clientID != b.clientID ||
		a.clientHost != b.clientHost || !slices.Equal(a.topics, b.topics) || a.regex != b.regex ||
		a.rebalanceTimeout != b.rebalanceTimeout || a.assignor != b.assignor
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
func validateMemberEpoch(m *cmember, received int32, owned tps) (int16, string) {
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
	for id, ps := range a {
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
func (mc *Machine) replaceStaticConsumer(g *group, old *cmember, id string) *cmember {
	cg := g.cg
	target := cg.target[old.id]
	cur := current{epoch: 0, prevEpoch: 0, state: old.state, assigned: old.assigned, revoking: old.revoking}
	meta := *old
	mc.emitRemoveMember(g, old.id)
	m := &cmember{id: id, assigned: tps{}, revoking: tps{}}
	cg.members[id] = m
	meta.id = id
	mc.emitMember(g, &meta)
	if target != nil {
		mc.emitTarget(g, id, target)
	}
	mc.emitCurrent(g, id, cur)
	return m
}

// computeTarget runs the group's assignor over every member and writes
// the members whose target changed, then the target epoch (Kafka's
// TargetAssignmentBuilder).
func (mc *Machine) computeTarget(g *group, now time.Time) {
	cg := g.cg
	cat := mc.catalog
	in := assign.Group{Topics: map[string]assign.Topic{}}
	for _, m := range cg.sortedMembers() {
		am := assign.Member{ID: m.id, Topics: m.subscription(cat)}
		if m.instance != nil {
			am.InstanceID = *m.instance
		}
		if m.rack != nil {
			am.Rack = *m.rack
		}
		if cat != nil {
			am.Current = assign.Partitions{}
			for tid, ps := range cg.target[m.id] {
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
	out := mc.groupAssignor(cg).Assign(in)
	for _, m := range cg.sortedMembers() {
		next := tps{}
		for name, ps := range out[m.id] {
			if len(ps) > 0 {
				next[cat.ByName[name].ID] = ps
			}
		}
		if old, ok := cg.target[m.id]; !ok || !old.equal(next) {
			mc.emitTarget(g, m.id, next)
		}
	}
	mc.emitTargetEpoch(g, cg.epoch, now.UnixMilli())
}

// groupAssignor is the assignor most members ask for (ties: the first in
// the configured order), else the default, as Kafka's
// computePreferredServerAssignor.
func (mc *Machine) groupAssignor(cg *cgroup) assign.Assignor {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best, n := mc.cfg.Assignors[0], 0
	for _, a := range mc.cfg.Assignors {
		if votes[a.Name()] > n {
			best, n = a, votes[a.Name()]
		}
	}
	return best
}

// consumerLeave serves a heartbeat with epoch -1 (leave) or -2 (a static
// member leaves for a while, keeping its assignment until its session
// expires), as Kafka's consumerGroupLeave.
func (mc *Machine) consumerLeave(now time.Time, r *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	g, code, msg := mc.consumerGroup(now, r.Group, false)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	cg := g.cg
	var m *cmember
	if r.InstanceID == nil {
		m = cg.members[r.MemberID]
		if m == nil {
			return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", r.MemberID, r.Group))
		}
	} else {
		mid, ok := cg.static[*r.InstanceID]
		if !ok {
			return hbError(resp, kerr.UnknownMemberID.Code, fmt.Sprintf("Instance id %s is unknown.", *r.InstanceID))
		}
		m = cg.members[mid]
		if mid != r.MemberID {
			return hbError(resp, kerr.FencedInstanceID.Code, fmt.Sprintf(
				"Static member %s with instance id %s is not the owner of the instance id.", r.MemberID, *r.InstanceID))
		}
	}
	resp.MemberID = &r.MemberID
	resp.MemberEpoch = r.MemberEpoch
	if r.MemberEpoch == leaveStaticEpoch {
		mc.emitCurrent(g, m.id, current{epoch: leaveStaticEpoch, prevEpoch: m.epoch, state: m.state, assigned: m.assigned, revoking: tps{}})
		mc.cancelRevocation(g, m)
		return resp
	}
	mc.removeConsumerMember(g, m)
	return resp
}

// removeConsumerMember fences or removes a member: its tombstones, then a
// new group epoch so that the next heartbeat recomputes the target. The
// last member's departure also advances the target epoch, with time 0 so
// that the next computation is not held back.
func (mc *Machine) removeConsumerMember(g *group, m *cmember) {
	cg := g.cg
	mc.cancelRevocation(g, m)
	if !m.armedAt.IsZero() {
		m.armedAt = time.Time{}
		mc.timer(groupTimer(timerConsumerSession, g.name)+m.id, time.Time{})
	}
	mc.emitRemoveMember(g, m.id)
	cg.epoch++
	cg.metaHash = metadataHash(cg.subscribedTopics(mc.catalog), mc.catalog)
	mc.emitGroupEpoch(g)
	if len(cg.members) == 0 {
		mc.emitTargetEpoch(g, cg.epoch, 0)
	}
}

// armConsumerSession moves m's session deadline; the timer fires early at
// most once and re-arms itself (as the classic members' sessions).
func (mc *Machine) armConsumerSession(g *group, m *cmember, now time.Time) {
	m.expireAt = now.Add(mc.cfg.ConsumerSessionTimeout)
	if m.armedAt.IsZero() || m.armedAt.After(m.expireAt) {
		m.armedAt = m.expireAt
		mc.timer(groupTimer(timerConsumerSession, g.name)+m.id, m.expireAt)
	}
}

// armRevocation (re)starts m's rebalance timeout when it must revoke, and
// stops it when it no longer must. As Kafka, it runs whenever m's
// assignment changed: a member that revoked what it was asked and is
// at once asked to revoke more gets a full rebalance timeout again.
func (mc *Machine) armRevocation(g *group, m *cmember, now time.Time) {
	if m.state == memberUnrevoked {
		m.revokeBy = now.Add(time.Duration(m.rebalanceTimeout) * time.Millisecond)
		m.revokeEpoch = m.epoch
		mc.timer(groupTimer(timerConsumerRevoke, g.name)+m.id, m.revokeBy)
		return
	}
	mc.cancelRevocation(g, m)
}

func (mc *Machine) cancelRevocation(g *group, m *cmember) {
	if !m.revokeBy.IsZero() {
		m.revokeBy = time.Time{}
		mc.timer(groupTimer(timerConsumerRevoke, g.name)+m.id, time.Time{})
	}
}

// consumerTimer runs a member's session or revocation timer.
func (mc *Machine) consumerTimer(g *group, kind byte, id string, now time.Time) {
	if g.cg == nil {
		return
	}
	m := g.cg.members[id]
	if m == nil {
		return
	}
	switch kind {
	case timerConsumerSession:
		m.armedAt = time.Time{}
		if now.Before(m.expireAt) {
			m.armedAt = m.expireAt
			mc.timer(groupTimer(timerConsumerSession, g.name)+m.id, m.expireAt)
			return
		}
		mc.removeConsumerMember(g, m)
	case timerConsumerRevoke:
		if m.revokeBy.IsZero() || now.Before(m.revokeBy) {
			return
		}
		m.revokeBy = time.Time{}
		if m.state == memberUnrevoked && m.epoch == m.revokeEpoch {
			mc.removeConsumerMember(g, m)
		}
	}
}

// uuid returns a random id in Kafka's Uuid.toString form (22 characters
// of unpadded URL-safe base64), as Kafka's v0 member ids.
func (mc *Machine) uuid() string {
	var u [16]byte
	for i := 0; i < 16; i += 8 {
		v := mc.rng.Uint64()
		for j := range 8 {
			u[i+j] = byte(v >> (8 * j))
		}
	}
	return base64.RawURLEncoding.EncodeToString(u[:])
}
