package groups

// Per-tenant limits (max_groups, max_members_per_group): the rules and
// the counting across shards are grouptype's limits.go, which every group
// type consults; these are their names for the coordinator.

import "github.com/cohort-dev/cohort/coordinator/groups/grouptype"

type (
	// TenantLimits are one tenant's limits; zero is no limit.
	TenantLimits = grouptype.TenantLimits
	// GroupCounter shares each tenant's group count between the
	// coordinator's shards.
	GroupCounter = grouptype.GroupCounter
)
