package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/cohort-dev/cohort/coordinator/groups"
)

// TxnEnd ends a producer's pending transactional offsets of a group
// (committed, or dropped if !commit): what a transaction marker written
// to __consumer_offsets does in Kafka. The node's transaction
// coordinator calls it before it writes the transaction's CompleteCommit
// or CompleteAbort record. It returns once that is durable, or, where the
// store is one log, once it is written (TxnEndCmd.Early): the
// transaction's Prepare went to the same log before it, and a load that
// finds the Prepare without the Complete ends the groups again. It fails
// if this coordinator does not serve the group's shard (another node's,
// or loading): the caller retries.
func (c *Coordinator) TxnEnd(ctx context.Context, tenant, group string, producerID int64, commit bool) error {
	shard := c.ShardFor(tenant, group)
	ch, code := c.set.Submit(ctx, uint16(shard), Request{Cmd: groups.TxnEndCmd{Tenant: tenant, Group: group, ProducerID: producerID, Commit: commit, Early: true}})
	if code != 0 {
		return fmt.Errorf("coordinator: group %q: shard %d not served here (code %d)", group, shard, code)
	}
	select {
	case r := <-ch:
		if _, ok := r.Out.(groups.TxnEnded); !ok {
			return fmt.Errorf("coordinator: group %q: shard %d gave up the transaction's offsets", group, shard)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TxnEndShard ends a producer's pending transactional offsets in every
// group of shard i, durably: a transaction marker written to
// __consumer_offsets partition i, sent by a transaction coordinator on
// another node (kafka's WriteTxnMarkers). It fails with ErrNotServed if
// this coordinator does not serve the shard.
func (c *Coordinator) TxnEndShard(ctx context.Context, i int, producerID int64, commit bool) error {
	if i < 0 || i >= c.Shards() {
		return fmt.Errorf("coordinator: shard %d: there are %d", i, c.Shards())
	}
	ch, code := c.set.Submit(ctx, uint16(i), Request{Cmd: groups.TxnEndCmd{ProducerID: producerID, Commit: commit, AllGroups: true}})
	if code != 0 {
		return fmt.Errorf("coordinator: shard %d: %w (code %d)", i, ErrNotServed, code)
	}
	select {
	case r := <-ch:
		if _, ok := r.Out.(groups.TxnEnded); !ok {
			return fmt.Errorf("coordinator: shard %d: %w: gave up the transaction's offsets", i, ErrNotServed)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrNotServed is a shard this coordinator does not serve (another
// node's, or loading).
var ErrNotServed = errors.New("shard not served here")
