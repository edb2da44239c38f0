package coordinator

// What the share APIs and the share-state host ask the group shards of
// share groups (groups/share_state.go): a member's assignment, and the
// share-partition state deleted share groups left to drop.

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/record"
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
	return shareCmd[groups.ShareMember](ctx, c, tenant, group, groups.ShareMemberCmd{Tenant: tenant, Group: group, Member: member})
}

// ShareDeletions asks group shard i for the share-partition state its
// deleted share groups left to drop (groups.ShareDeletionsCmd): every
// partition of each ShareDeletion's topics, for the share-state host to
// delete before it answers ShareStateDeleted. code is the shard's own, as
// ShareMember's. It writes nothing.
func (c *Coordinator) ShareDeletions(ctx context.Context, i int) ([]groups.ShareDeletion, int16, error) {
	return shareCmdAt[[]groups.ShareDeletion](ctx, c, i, groups.ShareDeletionsCmd{})
}

// ShareOffsets asks for the partitions whose share-partition state a
// group may hold (groups.ShareOffsetsCmd): a DescribeShareGroupOffsets of
// every partition. code and the error are as ShareMember's. It writes
// nothing.
func (c *Coordinator) ShareOffsets(ctx context.Context, tenant, group string) (groups.ShareOffsets, int16, error) {
	return shareCmd[groups.ShareOffsets](ctx, c, tenant, group, groups.ShareOffsetsCmd{Tenant: tenant, Group: group})
}

// ShareAlter is the group's side of an AlterShareGroupOffsets
// (groups.ShareAlterCmd), answered once the record listing the
// partitions is durable: the group must be an empty share group (the
// answer's Code). code and the error are as ShareMember's; an error
// (ctx ended first) leaves it unknown whether the record was written.
func (c *Coordinator) ShareAlter(ctx context.Context, tenant, group string, topics []record.ShareStateTopic) (groups.ShareAltered, int16, error) {
	return shareCmd[groups.ShareAltered](ctx, c, tenant, group, groups.ShareAlterCmd{Tenant: tenant, Group: group, Topics: topics})
}

// ShareDelete is the group's side of a DeleteShareGroupOffsets
// (groups.ShareDeleteCmd), answered once the topics it moved to Deleting
// are durable. code and the error are as ShareAlter's.
func (c *Coordinator) ShareDelete(ctx context.Context, tenant, group string, topics []share.OffsetsTopic) (groups.ShareDeleted, int16, error) {
	return shareCmd[groups.ShareDeleted](ctx, c, tenant, group, groups.ShareDeleteCmd{Tenant: tenant, Group: group, Topics: topics})
}

// ShareStateDeleted tells the group's shard that the share-state shards
// dropped the state of these topics of group (groups.ShareStateDeletedCmd):
// they leave its Deleting list and may be assigned again. It returns once
// that is durable; code and the error are as ShareAlter's.
func (c *Coordinator) ShareStateDeleted(ctx context.Context, tenant, group string, topics [][16]byte) (int16, error) {
	_, code, err := shareCmd[groups.ShareStateDeleted](ctx, c, tenant, group, groups.ShareStateDeletedCmd{Tenant: tenant, Group: group, Topics: topics})
	return code, err
}

// shareCmd sends one of the share type's commands to the group's shard
// and waits for its answer, of type T.
func shareCmd[T any](ctx context.Context, c *Coordinator, tenant, group string, cmd any) (T, int16, error) {
	return shareCmdAt[T](ctx, c, c.ShardFor(tenant, group), cmd)
}

// shareCmdAt sends cmd to group shard i and waits for its answer, of type
// T. A shard out of range, or one that gives the command up (unloaded
// meanwhile) and answers with no Out, is NOT_COORDINATOR.
func shareCmdAt[T any](ctx context.Context, c *Coordinator, i int, cmd any) (T, int16, error) {
	var zero T
	if i < 0 || i >= c.n {
		return zero, notCoordinator, nil
	}
	ch, code := c.set.Submit(ctx, uint16(i), Request{Cmd: cmd})
	if code != 0 {
		return zero, code, nil
	}
	select {
	case r := <-ch:
		m, ok := r.Out.(T)
		if !ok {
			return zero, notCoordinator, nil
		}
		return m, 0, nil
	case <-ctx.Done():
		return zero, 0, ctx.Err()
	}
}
