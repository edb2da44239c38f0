package groups

// The shard's view of its group registry (grouptype's registry.go): one
// entry per (tenant, group id) with its cgp_ id and its type's part, by
// which each request is routed to the type that owns the group.

import (
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/record"
)

type (
	// gkey names a group: two tenants' groups of the same name are two
	// groups.
	gkey = grouptype.Key
	// group is a registry entry.
	group = grouptype.Entry
)

// partOf is the group's part, nil for no group.
func partOf(g *group) grouptype.Part {
	if g == nil {
		return nil
	}
	return g.Part
}

// consumerOf returns the consumer part of a group, or nil.
func consumerOf(g *group) *consumerGroup {
	if g == nil {
		return nil
	}
	c, _ := g.Part.(*consumerGroup)
	return c
}

// lookup returns the group, or nil.
func (s *Shard) lookup(tenant, name string) *group { return s.h.Lookup(tenant, name) }

// entry returns the group, registering an empty entry (no part, no id)
// if there is none.
func (s *Shard) entry(k gkey) *group { return s.h.Register(k) }

// forget drops the entry if nothing is left in it.
func (s *Shard) forget(g *group) { s.h.Forget(g) }

// consumerGroup returns the consumer part of a group, or nil.
func (s *Shard) consumerGroup(tenant, name string) *consumerGroup {
	return consumerOf(s.lookup(tenant, name))
}

// sortedGroups returns every group in (tenant, name) order, so that map
// order never reaches an output.
func (s *Shard) sortedGroups() []*group { return s.h.Sorted() }

// key is the group's record key.
func (s *Shard) key(k gkey) record.GroupKey { return s.h.GroupKey(k) }

// Timer keys (grouptype.GroupTimer).
var (
	groupTimer  = grouptype.GroupTimer
	memberTimer = grouptype.MemberTimer
)

func (s *Shard) memberID(prefix string) string { return s.h.MemberID(prefix) }

func (s *Shard) maxMembers(tenant string, limit int) (int, bool) {
	return s.h.MaxMembers(tenant, limit)
}

func (s *Shard) fullMessage(tenant string, limit int) string { return s.h.FullMessage(tenant, limit) }

func (s *Shard) newGroupRefused(tenant string) string { return s.h.NewGroupRefused(tenant) }

// deadline is a member's deadline (grouptype.Deadline).
type deadline = grouptype.Deadline

func deadlineAt(t time.Time) deadline { return grouptype.DeadlineAt(t) }

func sortedKeys[K interface{ ~string }, V any](m map[K]V) []K { return grouptype.SortedKeys(m) }

var orEmpty = grouptype.OrEmpty
