package coordinator

// What the share APIs and the share-state host ask the group shards of
// share groups (groups/share_state.go): a member's assignment, and the
// share-partition state deleted share groups left to drop.

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
	out, code, err := c.shareCmd(ctx, c.ShardFor(tenant, group), groups.ShareMemberCmd{Tenant: tenant, Group: group, Member: member})
	if code != 0 || err != nil {
		return groups.ShareMember{}, code, err
	}
	m, ok := out.(groups.ShareMember)
	if !ok {
		return groups.ShareMember{}, notCoordinator, nil
	}
	return m, 0, nil
}

// ShareDeletions asks group shard i for the share-partition state its
// deleted share groups left to drop (groups.ShareDeletionsCmd): every
// partition of each ShareDeletion's topics, for the share-state host to
// delete before it answers ShareStateDeleted. code is the shard's own, as
// ShareMember's. It writes nothing.
func (c *Coordinator) ShareDeletions(ctx context.Context, i int) ([]groups.ShareDeletion, int16, error) {
	out, code, err := c.shareCmd(ctx, i, groups.ShareDeletionsCmd{})
	if code != 0 || err != nil {
		return nil, code, err
	}
	ds, ok := out.([]groups.ShareDeletion)
	if !ok {
		return nil, notCoordinator, nil // failed in flight
	}
	return ds, 0, nil
}

// ShareStateDeleted tells the group's shard that the share-state shards
// dropped the state of these topics of the group (every partition
// ShareDeletions listed for them; groups.ShareStateDeletedCmd): they leave
// its deletion list and may be assigned again. It returns once that is
// durable; code is the shard's own, as ShareMember's.
func (c *Coordinator) ShareStateDeleted(ctx context.Context, tenant, group string, topics [][16]byte) (int16, error) {
	out, code, err := c.shareCmd(ctx, c.ShardFor(tenant, group), groups.ShareStateDeletedCmd{Tenant: tenant, Group: group, Topics: topics})
	if _, ok := out.(groups.ShareStateDeleted); !ok && code == 0 && err == nil {
		return notCoordinator, nil // failed in flight
	}
	return code, err
}

// shareCmd runs a share command on group shard i and returns its answer,
// or the shard's code (NOT_COORDINATOR for one out of range), or ctx's
// error.
func (c *Coordinator) shareCmd(ctx context.Context, i int, cmd any) (any, int16, error) {
	if i < 0 || i >= c.n {
		return nil, notCoordinator, nil
	}
	ch, code := c.set.Submit(ctx, uint16(i), Request{Cmd: cmd})
	if code != 0 {
		return nil, code, nil
	}
	select {
	case r := <-ch:
		return r.Out, 0, nil
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}
