package coordinator

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/groups"
)

// ShareMember asks the share group's shard about one of its members
// (groups.ShareMemberCmd): what a ShareFetch or ShareAcknowledge checks of
// the member it names. The answer's Code is GROUP_ID_NOT_FOUND or
// UNKNOWN_MEMBER_ID for a group or member that is not there; code (the
// second result) is the shard's own, non-zero when this coordinator does
// not serve the group's shard (NOT_COORDINATOR; another node's, or
// loading: COORDINATOR_LOAD_IN_PROGRESS), for the caller to answer or
// retry. It writes nothing.
func (c *Coordinator) ShareMember(ctx context.Context, tenant, group, member string) (groups.ShareMember, int16, error) {
	ch, code := c.set.Submit(ctx, uint16(c.ShardFor(tenant, group)), Request{Cmd: groups.ShareMemberCmd{Tenant: tenant, Group: group, Member: member}})
	if code != 0 {
		return groups.ShareMember{}, code, nil
	}
	select {
	case r := <-ch:
		m, ok := r.Out.(groups.ShareMember)
		if !ok {
			return groups.ShareMember{}, notCoordinator, nil
		}
		return m, 0, nil
	case <-ctx.Done():
		return groups.ShareMember{}, 0, ctx.Err()
	}
}
