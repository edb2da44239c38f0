package groups

// The shard's side of the offset APIs (OffsetCommit, OffsetFetch and
// OffsetDelete, §11–13): package offsets serves them from the shard's
// offsets.Book, and asks the group's type, through offsetGroups, what
// only the group can say (Kafka's validateOffsetCommit, the KIP-848
// member check of a fetch, whether offsets may be deleted). Their expiry,
// whose rules are the group type's too, is in retention.go.

import (
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replayOffset applies an offset record to the shard's offsets. At load,
// an offset of a group with no record yet registers the group's entry;
// Loaded makes it a simple group if no record of its own follows (records
// sort by kind, offsets first), as Kafka's OffsetMetadataManager.replay
// does.
func (s *Shard) replayOffset(k record.OffsetKey, v []byte) error {
	if err := s.offs.ReplayOffset(k, v); err != nil {
		return err
	}
	gk := gkey{k.Tenant, k.Group}
	if g := s.groups[gk]; g == nil && v != nil {
		s.entry(gkey{strings.Clone(k.Tenant), strings.Clone(k.Group)})
	} else if g != nil && v == nil {
		s.forget(g)
	}
	return nil
}

// offsetCommit is OffsetCommit (offsets.Book.ServeCommit).
func (s *Shard) offsetCommit(now time.Time, req machine.Request, r *kmsg.OffsetCommitRequest) {
	s.reply(req.ID, s.offs.ServeCommit(now, req, r, (*offsetGroups)(s), s.cfg.OffsetMetadataMaxBytes))
}

// offsetFetch is OffsetFetch (offsets.Book.ServeFetch).
func (s *Shard) offsetFetch(_ time.Time, req machine.Request, r *kmsg.OffsetFetchRequest) {
	s.reply(req.ID, s.offs.ServeFetch(req, r, (*offsetGroups)(s)))
}

// offsetGroups is the shard as the offset APIs see it (offsets.Groups):
// each answer is the group type's.
type offsetGroups Shard

func (o *offsetGroups) ValidateCommit(now time.Time, g offsets.Group, r *kmsg.OffsetCommitRequest, generation int32, member string) int16 {
	return (*Shard)(o).validateCommit(now, gkey{g.Tenant, g.Name}, r, generation, member)
}

// ValidateDelete is Kafka's deleteOffsets group checks (§13): the group
// must exist, and a classic group not using the consumer protocol must
// be Empty; offsets of topics the group subscribes to stay.
func (o *offsetGroups) ValidateDelete(g offsets.Group) (int16, func(topic string) bool) {
	s := (*Shard)(o)
	e := s.lookup(g.Tenant, g.Name)
	switch {
	case e == nil || (e.classic != nil && e.classic.state == dead):
		return kerr.GroupIDNotFound.Code, nil
	case e.classic != nil && e.classic.state != empty && e.classic.protocolType != "consumer":
		return kerr.NonEmptyGroup.Code, nil
	case e.consumer != nil:
		topics := e.consumer.subscribedTopics(s.catalog(e.tenant))
		return 0, func(t string) bool { return topics[t] }
	}
	c := e.classic
	return 0, func(t string) bool { return c.state != empty && c.subscribedTo(t) }
}

func (o *offsetGroups) ValidateFetch(g offsets.Group, member bool, memberID *string, epoch int32) (bool, int16) {
	e := (*Shard)(o).lookup(g.Tenant, g.Name)
	switch {
	case e == nil || (e.classic != nil && e.classic.state == dead):
		return false, 0
	case member && e.consumer != nil:
		return true, validateConsumerFetch(e.consumer, memberID, epoch)
	}
	return true, 0
}

// validateCommit is Kafka's validateOffsetCommit (§11.2 steps 4–6); it
// creates a simple group for a simple commit to a group that does not
// exist.
func (s *Shard) validateCommit(now time.Time, k gkey, r *kmsg.OffsetCommitRequest, generation int32, memberID string) int16 {
	e := s.lookup(k.tenant, k.name)
	if e == nil {
		if generation >= 0 {
			if r.Version >= 9 {
				return kerr.GroupIDNotFound.Code
			}
			return kerr.IllegalGeneration.Code
		}
		// A simple consumer's commit creates a group too: it counts
		// against the organisation's max_groups like any other.
		if s.newGroupRefused(k.tenant) != "" {
			return kerr.GroupMaxSizeReached.Code
		}
		s.emitClassic(s.newClassic(k, now))
		return 0
	}
	if e.consumer != nil {
		return validateConsumerCommit(e.consumer, r)
	}
	g := e.classic
	switch {
	case g.state == dead:
		return kerr.CoordinatorNotAvailable.Code
	case generation < 0 && g.state == empty:
		return 0
	case generation >= 0 || memberID != "" || r.InstanceID != nil:
		if code := g.validateMember(memberID, r.InstanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	default:
		return kerr.UnknownMemberID.Code
	}
	if g.state == completingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	if m := g.members[memberID]; m != nil {
		s.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
	}
	return 0
}

// offsetDelete is OffsetDelete (offsets.Book.ServeDelete).
func (s *Shard) offsetDelete(_ time.Time, req machine.Request, r *kmsg.OffsetDeleteRequest) {
	s.reply(req.ID, s.offs.ServeDelete(req, r, (*offsetGroups)(s)))
}
