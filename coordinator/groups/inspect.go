package groups

// InspectCmd: what the admin API and the lag tracker read of a shard's
// groups that no Kafka response carries: every tenant's groups at once,
// each with its stable cgp_ id and, per committed offset, when it was
// committed (Burrow-like lag status tells "commits stopped" from "commits
// repeat the same offset" by it).

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/record"
)

// InspectCmd asks for a Summary of every group of the shard, all tenants,
// or, with Only set, of that one group; its Reply's Out is a []Summary
// sorted by tenant, then group. It writes nothing.
type InspectCmd struct {
	Only *GroupRef
}

// GroupRef names a tenant's group.
type GroupRef struct{ Tenant, Group string }

// Summary is one group as InspectCmd reports it.
type Summary struct {
	Tenant, Group string
	// ID is the stable cgp_<ULID> id; "" for a group known only by its
	// offsets while its shard loads (never once loaded).
	ID           string
	Type         string // "classic" (also simple groups), "consumer" or "share"
	ProtocolType string
	State        string
	Members      int
	// Generation is a classic group's generation, or a consumer or share
	// group's group epoch.
	Generation int32
	// PendingMembers counts a classic group's member ids handed out with
	// MEMBER_ID_REQUIRED and not yet used to join (KIP-394).
	PendingMembers int
	Offsets        []OffsetSummary // sorted by topic, then partition
	// Assigned are the partitions the group's members are assigned now
	// (a classic group's, of the consumer protocol's assignments), by
	// the names its tenant knows, sorted: the lag status counts one with
	// no committed offset as not evaluated, as a group's detail shows
	// it.
	Assigned []AssignedPartition
}

// AssignedPartition is a partition a member is assigned.
type AssignedPartition struct {
	Topic     string
	Partition int32
}

// OffsetSummary is one committed offset.
type OffsetSummary struct {
	Topic           string
	Partition       int32
	Offset          int64
	CommitTimestamp int64 // Unix ms
}

// inspect builds the shard's summaries, as ListGroups lists groups (a
// dead classic group is left out).
func (s *Shard) inspect(only *GroupRef) []Summary {
	var out []Summary
	entries := s.sortedGroups
	if only != nil {
		entries = func() []*group {
			if g := s.lookup(only.Tenant, only.Group); g != nil {
				return []*group{g}
			}
			return nil
		}
	}
	for _, e := range entries() {
		sum := Summary{Tenant: e.Tenant, Group: e.Name, ID: e.ID}
		switch g := e.Part.(type) {
		case *consumer.Group:
			sum.Type, sum.ProtocolType, sum.State, sum.Members, sum.Generation = "consumer", "consumer", g.State(), len(g.Members), g.Epoch
			for _, m := range g.Members {
				sum.Assigned = s.appendAssigned(sum.Assigned, e.Tenant, m.Assigned)
			}
		case *share.Group:
			sum.Type, sum.ProtocolType, sum.State, sum.Members, sum.Generation = "share", "share", g.State(), len(g.Members), g.Epoch
			for _, m := range g.Members {
				sum.Assigned = s.appendAssigned(sum.Assigned, e.Tenant, m.Assigned)
			}
		case *classic.Group:
			if g.State == classic.Dead {
				continue
			}
			sum.Type, sum.ProtocolType, sum.State, sum.Members, sum.Generation = "classic", g.ProtocolType, g.State.String(), len(g.Members), g.Generation
			sum.PendingMembers = len(g.PendingJoin)
			if g.ProtocolType == "consumer" {
				for _, m := range g.Members {
					var a kmsg.ConsumerMemberAssignment
					if len(m.Assignment) == 0 || a.ReadFrom(m.Assignment) != nil {
						continue
					}
					for _, t := range a.Topics {
						for _, p := range t.Partitions {
							sum.Assigned = append(sum.Assigned, AssignedPartition{t.Topic, p})
						}
					}
				}
			}
		default:
			continue
		}
		s.offs.Each(e.Off(), func(topic string, p int32, o *record.Offset) {
			sum.Offsets = append(sum.Offsets, OffsetSummary{Topic: topic, Partition: p, Offset: o.Offset, CommitTimestamp: o.CommitTimestamp})
		})
		slices.SortFunc(sum.Assigned, func(a, b AssignedPartition) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		sum.Assigned = slices.Compact(sum.Assigned)
		out = append(out, sum)
	}
	return out
}

// appendAssigned appends the partitions of a (by topic id) to out by the
// names tenant's catalog knows; a topic it does not know is left out, as
// ConsumerGroupDescribe leaves it out.
func (s *Shard) appendAssigned(out []AssignedPartition, tenant string, a []record.TopicPartitions) []AssignedPartition {
	cat := s.h.Catalog(tenant)
	if cat == nil {
		return out
	}
	for _, t := range a {
		name, ok := cat.ByID[t.TopicID]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, AssignedPartition{name, p})
		}
	}
	return out
}
