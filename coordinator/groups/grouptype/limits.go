package grouptype

// Per-tenant limits: an organisation's quotas on its groups (package
// quota's max_groups and max_members_per_group). They are configuration,
// not state: Config.Limits is consulted only when a new request would
// create a group or add a member, never on replay or load, so a quota
// lowered below what an organisation already has refuses what comes next
// and takes nothing away (as Kafka's group.max.size, which does not
// shrink a loaded group either, apart from the classic rebalance on load
// that only the broker-wide limit triggers).
//
// Counting an organisation's groups across shards: each shard counts its
// own exactly (entry and forget are the only places a group is created or
// dropped) and publishes the count in its slot of a GroupCounter shared
// by the coordinator's shards; a shard deciding on a new group adds its own
// count to the other shards' published ones. Two shards creating a
// tenant's groups at the same moment can each see room for one more, so
// at the edge a tenant can have up to max_groups + shards - 1 groups,
// never more. This is the one shared thing a shard writes, and what it
// reads of it decides only new groups, so replay stays pure.

import "fmt"

// TenantLimits are one tenant's limits; zero is no limit.
type TenantLimits struct {
	// Org is the organisation's name, for error messages.
	Org string
	// MaxGroups caps the tenant's groups: a request that would create
	// one more gets GROUP_MAX_SIZE_REACHED.
	MaxGroups int
	// MaxMembersPerGroup caps the members of each of its groups, classic
	// and consumer, below Config.MaxSize and Config.ConsumerMaxSize.
	MaxMembersPerGroup int
}

// GroupCounter keeps the count of each tenant's groups in each shard of
// a coordinator, each shard writing its own (package coordinator's
// implementation is shared by its shards and safe for concurrent use).
type GroupCounter interface {
	// Set publishes shard's count of tenant's groups.
	Set(shard uint16, tenant string, n int)
	// Others is tenant's groups in every shard but shard.
	Others(shard uint16, tenant string) int
}

// countGroup notes that tenant has d more groups in this shard.
func (h *Host) countGroup(tenant string, d int) {
	n := h.tenantGroups[tenant] + d
	if n == 0 {
		delete(h.tenantGroups, tenant)
	} else {
		h.tenantGroups[tenant] = n
	}
	if h.loaded && h.Cfg.Counts != nil {
		h.Cfg.Counts.Set(h.Cfg.Shard, tenant, n)
	}
}

func (h *Host) limits(tenant string) TenantLimits {
	if h.Cfg.Limits == nil {
		return TenantLimits{}
	}
	return h.Cfg.Limits(tenant)
}

// NewGroupRefused returns the message of the GROUP_MAX_SIZE_REACHED that
// refuses a request creating a group of tenant, or "" if it may.
//
// GROUP_MAX_SIZE_REACHED rather than GROUP_AUTHORIZATION_FAILED or
// another code: it is the code every client already has for "the
// coordinator's capacity refuses this member", it says nothing false
// about the principal's rights (an authorization error would send the
// operator to the ACLs), and clients treat it as a refusal to report, not
// a broken connection: the Java consumer raises GroupMaxSizeReachedException,
// franz-go's KIP-848 consumer logs it as a warning and joins again after
// its backoff, so the group forms by itself once the organisation deletes
// a group or its quota is raised.
func (h *Host) NewGroupRefused(tenant string) string {
	l := h.limits(tenant)
	if l.MaxGroups <= 0 {
		return ""
	}
	n := h.tenantGroups[tenant]
	if h.Cfg.Counts != nil {
		n += h.Cfg.Counts.Others(h.Cfg.Shard, tenant)
	}
	if n < l.MaxGroups {
		return ""
	}
	return fmt.Sprintf("The organisation %s has reached its quota of %d groups (max_groups).", l.Org, l.MaxGroups)
}

// MaxMembers is the most members a group of tenant may have: limit (the
// broker's group.max.size or group.consumer.max.size; 0 none) or the
// tenant's max_members_per_group, whichever is less, and whether the
// tenant's is the one that binds.
func (h *Host) MaxMembers(tenant string, limit int) (int, bool) {
	q := h.limits(tenant).MaxMembersPerGroup
	if q > 0 && (limit <= 0 || q < limit) {
		return q, true
	}
	return limit, false
}

// FullMessage is the ErrorMessage of a GROUP_MAX_SIZE_REACHED for a full
// group: the organisation's quota when it is what binds, else the
// broker's limit, as Kafka's message.
func (h *Host) FullMessage(tenant string, limit int) string {
	max, quota := h.MaxMembers(tenant, limit)
	if quota {
		return fmt.Sprintf("The consumer group has reached its maximum capacity of %d members: the quota of organisation %s (max_members_per_group).", max, h.limits(tenant).Org)
	}
	return fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", max)
}
