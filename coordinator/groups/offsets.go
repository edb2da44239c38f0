package groups

// The shard's side of the offset APIs (OffsetCommit, OffsetFetch and
// OffsetDelete, §11–13): package offsets serves them from the shard's
// offsets.Book, and asks the group's type, through offsetGroups, what
// only the group can say (Kafka's validateOffsetCommit, the KIP-848
// member check of a fetch, whether offsets may be deleted). Their expiry,
// whose rules are the group type's too, is in retention.go. A share
// group has no offsets: commits and deletions are GROUP_ID_NOT_FOUND and
// a fetch finds none, as Kafka's ShareGroup.validateOffset*.

import (
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
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
	g := s.h.Get(gkey{Tenant: k.Tenant, Name: k.Group})
	if v == nil {
		if err := s.offs.ReplayOffset(k, v); err != nil {
			return err
		}
		if g != nil {
			s.forget(g)
		}
		return nil
	}
	created := g == nil
	if created {
		g = s.entry(gkey{Tenant: strings.Clone(k.Tenant), Name: strings.Clone(k.Group)})
	}
	// The Book keeps the registry's copy of the group's name, not one of
	// its own.
	k.Tenant, k.Group = g.Tenant, g.Name
	if err := s.offs.ReplayNamed(k, v); err != nil {
		if created {
			s.forget(g)
		}
		return err
	}
	return nil
}

// offsetGroups is the shard as the offset APIs see it (offsets.Groups):
// each answer is the group type's.
type offsetGroups Shard

func (o *offsetGroups) ValidateCommit(now time.Time, g offsets.Group, r *kmsg.OffsetCommitRequest, generation int32, member string) int16 {
	return (*Shard)(o).validateCommit(now, gkey{Tenant: g.Tenant, Name: g.Name}, r, generation, member)
}

// ValidateDelete is Kafka's deleteOffsets group checks (§13): the group
// must exist, and its type decides what may go.
func (o *offsetGroups) ValidateDelete(g offsets.Group) (int16, func(topic string) bool) {
	s := (*Shard)(o)
	e := s.lookup(g.Tenant, g.Name)
	switch p := partOf(e).(type) {
	case nil:
		return kerr.GroupIDNotFound.Code, nil
	case *classic.Group:
		if p.State == classic.Dead {
			return kerr.GroupIDNotFound.Code, nil
		}
		return p.ValidateDelete()
	case *consumer.Group:
		topics := p.SubscribedTopics(s.catalog(e.Tenant))
		return 0, func(t string) bool { return topics[t] }
	case *share.Group:
		return kerr.GroupIDNotFound.Code, nil
	}
	panic("groups: a group of no known type")
}

func (o *offsetGroups) ValidateFetch(g offsets.Group, member bool, memberID *string, epoch int32) (bool, int16) {
	e := (*Shard)(o).lookup(g.Tenant, g.Name)
	switch p := partOf(e).(type) {
	case nil:
		if e == nil {
			return false, 0
		}
	case *classic.Group:
		if p.State == classic.Dead {
			return false, 0
		}
	case *consumer.Group:
		if member {
			return true, p.ValidateFetch(memberID, epoch)
		}
	case *share.Group:
		return false, 0
	}
	return true, 0
}

// validateCommit is Kafka's validateOffsetCommit (§11.2 steps 4–6) by
// the group's type; it creates a simple group for a simple commit to a
// group that does not exist.
func (s *Shard) validateCommit(now time.Time, k gkey, r *kmsg.OffsetCommitRequest, generation int32, memberID string) int16 {
	e := s.lookup(k.Tenant, k.Name)
	switch p := partOf(e).(type) {
	case *classic.Group:
		return s.classic.ValidateCommit(now, p, r, generation, memberID)
	case *consumer.Group:
		return p.ValidateCommit(r)
	case *share.Group:
		return kerr.GroupIDNotFound.Code
	}
	if generation >= 0 {
		if r.Version >= 9 {
			return kerr.GroupIDNotFound.Code
		}
		return kerr.IllegalGeneration.Code
	}
	// A simple consumer's commit creates a group too: it counts against
	// the organisation's max_groups like any other.
	if s.h.NewGroupRefused(k.Tenant) != "" {
		return kerr.GroupMaxSizeReached.Code
	}
	s.classic.EmitRecord(s.classic.Create(k, now))
	return 0
}
