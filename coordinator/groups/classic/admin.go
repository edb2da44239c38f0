package classic

// What only a classic group can say to the shard's admin and offset APIs:
// its description (DescribeGroups), its deletion (DeleteGroups and
// retention), the expiry of its offsets (Kafka's cleanupGroupMetadata,
// §14), and whether an offset commit or deletion is allowed (Kafka's
// validateOffsetCommit, §11.2, and deleteOffsets, §13).

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe fills d, a DescribeGroups answer, from live group g (not
// Dead): its state, protocol type, protocol (when Stable) and members.
func (g *Group) Describe(d *kmsg.DescribeGroupsResponseGroup) {
	d.State, d.ProtocolType = g.State.String(), g.ProtocolType
	if g.State == Stable {
		d.Protocol = g.Protocol()
	}
	for _, m := range g.SortedMembers() {
		dm := kmsg.DescribeGroupsResponseGroupMember{
			MemberID: m.ID, InstanceID: m.Instance, ClientID: m.ClientID, ClientHost: m.ClientHost,
			ProtocolMetadata: []byte{}, MemberAssignment: m.Assignment,
		}
		if g.State == Stable {
			dm.ProtocolMetadata = m.MetadataFor(g.Protocol())
		}
		if dm.MemberAssignment == nil {
			dm.MemberAssignment = []byte{}
		}
		d.Members = append(d.Members, dm)
	}
}

// Delete makes g Dead and writes its tombstone (its offsets are the
// caller's).
func (s *Type) Delete(g *Group) {
	for _, id := range grouptype.SortedKeys(g.PendingJoin()) {
		s.timer(grouptype.MemberTimer(TimerMember, g.Key, id), time.Time{})
	}
	s.timer(grouptype.GroupTimer(TimerJoin, g.Key), time.Time{})
	s.timer(grouptype.GroupTimer(TimerSync, g.Key), time.Time{})
	g.State = Dead
	s.emit(s.key(g.Key).Key(), nil)
}

// Sweep expires a classic (or simple) group's offsets, and deletes the
// group if it is left Empty without offsets. It returns when it would
// next expire one (NextExpiry, after it).
func (s *Type) Sweep(g *Group, now time.Time) (next int64, ok bool) {
	offs := s.h.Offs
	if keep, base := g.expiry(); base != nil {
		next, ok = offs.Expire(g.Off(), now.UnixMilli(), s.cfg.Retention.Milliseconds(), keep, base)
	}
	if g.State == Empty && len(g.Members()) == 0 && !offs.Has(g.Off()) {
		s.Delete(g)
		return 0, false
	}
	return next, ok
}

// NextExpiry is when Sweep would next expire one of g's offsets (Unix
// ms), as g is; ok is false if it would not.
func (s *Type) NextExpiry(g *Group) (at int64, ok bool) {
	keep, base := g.expiry()
	if base == nil {
		return 0, false
	}
	return s.h.Offs.NextExpiry(g.Off(), s.cfg.Retention.Milliseconds(), keep, base)
}

// expiry is the rule by which g's offsets expire: the topics whose
// offsets it keeps, and the time an offset's retention counts from, by
// kind of group (nil: nothing expires).
func (g *Group) expiry() (keep func(topic string) bool, base func(o record.Offset) int64) {
	switch {
	case g.ProtocolType == "":
		base = func(o record.Offset) int64 { return o.CommitTimestamp }
	case g.State == Empty:
		base = func(record.Offset) int64 { return g.stateTime }
	case g.ProtocolType == "consumer" && g.State == Stable && g.subscribedKnown:
		base = func(o record.Offset) int64 { return o.CommitTimestamp }
	}
	keep = func(t string) bool { return g.ProtocolType != "" && g.State == Stable && g.subscribedSet()[t] }
	return keep, base
}

// ValidateCommit is Kafka's validateOffsetCommit (§11.2 steps 4–6) for an
// existing classic (or simple) group.
func (s *Type) ValidateCommit(now time.Time, g *Group, r *kmsg.OffsetCommitRequest, generation int32, memberID string) int16 {
	switch {
	case g.State == Dead:
		return kerr.CoordinatorNotAvailable.Code
	case generation < 0 && g.State == Empty:
		return 0
	case generation >= 0 || memberID != "" || r.InstanceID != nil:
		if code := g.validateMember(memberID, r.InstanceID); code != 0 {
			return code
		}
		if generation != g.Generation {
			return kerr.IllegalGeneration.Code
		}
	default:
		return kerr.UnknownMemberID.Code
	}
	if g.State == CompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	if m := g.Members()[memberID]; m != nil {
		s.ArmSession(g, m, now, time.Duration(m.SessionTimeout)*time.Millisecond)
	}
	return 0
}

// ValidateDelete is Kafka's deleteOffsets group checks (§13) for a group
// that is not Dead: one not using the consumer protocol must be Empty;
// offsets of topics the group subscribes to stay.
func (g *Group) ValidateDelete() (int16, func(topic string) bool) {
	if g.State != Empty && g.ProtocolType != "consumer" {
		return kerr.NonEmptyGroup.Code, nil
	}
	return 0, func(t string) bool { return g.State != Empty && g.subscribedTo(t) }
}
