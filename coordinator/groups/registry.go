package groups

// The shard's view of its group registry (grouptype's registry.go): one
// entry per (tenant, group id) with its cgp_ id and its type's part, by
// which each request is routed to the type that owns the group.

import "github.com/cohort-dev/cohort/coordinator/groups/grouptype"

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

// lookup returns the group, or nil.
func (s *Shard) lookup(tenant, name string) *group { return s.h.Lookup(tenant, name) }

// entry returns the group, registering an empty entry (no part, no id)
// if there is none.
func (s *Shard) entry(k gkey) *group { return s.h.Register(k) }

// forget drops the entry if nothing is left in it.
func (s *Shard) forget(g *group) { s.h.Forget(g) }

// sortedGroups returns every group in (tenant, name) order, so that map
// order never reaches an output.
func (s *Shard) sortedGroups() []*group { return s.h.Sorted() }
