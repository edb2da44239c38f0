package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Lock takes the cluster-wide lock name (topic administration: two nodes
// creating one topic at once must not both create it), waiting for it up
// to ctx. The lock is bound to the node's lease, so a node that dies
// holding it releases it when its lease expires. unlock releases it.
func (m *Member) Lock(ctx context.Context, name string) (unlock func(), err error) {
	key := m.cfg.Prefix + "/locks/" + name
	ctx, cancel := context.WithTimeout(ctx, 2*m.cfg.LeaseTTL)
	defer cancel()
	for {
		c, rc := m.reqCtx(ctx)
		resp, err := m.cli.Txn(c).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, strconv.Itoa(int(m.cfg.NodeID)), clientv3.WithLease(m.Lease()))).Commit()
		rc()
		if err != nil {
			return nil, fmt.Errorf("cluster: lock %s: %w", name, err)
		}
		if resp.Succeeded {
			rev := resp.Header.Revision
			return func() {
				c, rc := m.reqCtx(context.Background())
				defer rc()
				m.cli.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).Then(clientv3.OpDelete(key)).Commit()
			}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster: lock %s: held by another node: %w", name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ReserveProducerIDs reserves n producer ids unique in the cluster and
// returns the first.
func (m *Member) ReserveProducerIDs(n int64) (int64, error) {
	key := m.cfg.Prefix + "/producer-ids"
	for range 100 {
		c, cancel := m.reqCtx(context.Background())
		resp, err := m.cli.Get(c, key)
		if err != nil {
			cancel()
			return 0, fmt.Errorf("cluster: reserve producer ids: %w", err)
		}
		var next int64
		var mod int64
		if len(resp.Kvs) > 0 {
			next, _ = strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
			mod = resp.Kvs[0].ModRevision
		}
		txn, err := m.cli.Txn(c).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", mod)).
			Then(clientv3.OpPut(key, strconv.FormatInt(next+n, 10))).Commit()
		cancel()
		if err != nil {
			return 0, fmt.Errorf("cluster: reserve producer ids: %w", err)
		}
		if txn.Succeeded {
			return next, nil
		}
	}
	return 0, fmt.Errorf("cluster: reserve producer ids: too much contention")
}
