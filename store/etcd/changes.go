package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Changes signals on the returned channel (capacity one, so signals
// coalesce) whenever a batch may have changed records that a Scan of
// prefix reads: a new entry of the global log, or of the log of the
// scope prefix is (a write scope, such as a shard's prefix; nil for the
// global log alone). It stops when ctx ends. A reader that must not miss
// a change reads after each signal, and once after subscribing.
//
// It is how a node's views follow what other nodes write (the global
// unit's records, the topic catalog) without knowing this package's
// layout.
func (s *Store) Changes(ctx context.Context, prefix []byte) <-chan struct{} {
	out := make(chan struct{}, 1)
	roots := []string{s.prefix + "/g/log/"}
	if prefix != nil {
		roots = append(roots, s.scopeKeys(prefix).log)
	}
	for _, root := range roots {
		wc := s.cli.Watch(clientv3.WithRequireLeader(ctx), root, clientv3.WithPrefix())
		go func() {
			for range wc {
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}()
	}
	return out
}
