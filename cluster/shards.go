package cluster

import (
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store/etcd"
)

// Service is a shard that is not the coordinator's: the warm-handoff
// assignment service's (assigner.Service).
type Service interface {
	Load() error
	Unload()
	Holds() bool
}

// HostedShards is a service whose shards are cluster units of a class
// of their own: the transaction coordinator (txncoord.Coordinator) and
// the share coordinator (sharecoord.Host).
type HostedShards interface {
	Shards() int
	Load(i int) error
	Unload(i int)
	Holds(i int) bool
}

// TxnShards is the transaction coordinator: its shard i is unit n+1+i of
// Shards.
type TxnShards = HostedShards

// Shards is the Units of a group coordinator on the etcd store: units
// 0..n-1 are the coordinator's shards, unit n the assignment service's,
// units n+1..n+T the transaction coordinator's, then the share
// coordinator's.
// Cohort's node runs it; so can a Go program that embeds the coordinator
// (see examples/embedded-cluster).
type Shards struct {
	// Coordinator is the group coordinator, started with
	// coordinator.Options.Standby on Store. Required.
	Coordinator *coordinator.Coordinator
	// Store is the cluster's etcd store. Required.
	Store *etcd.Store
	// Assigner is the assignment service, or nil.
	Assigner Service
	// Txn is the transaction coordinator, started standby on Store, or
	// nil (transactions off here: its units are owned but not served,
	// and clients that find this node get NOT_COORDINATOR).
	Txn TxnShards
	// Share is the share coordinator, started standby on Store, or nil
	// (its units, if the cluster has them, are owned but not served).
	Share HostedShards
	// TxnUnits is the cluster's transaction unit count
	// (Meta.TxnUnits), after which the share coordinator's units
	// begin: needed with Share. Without Share every unit after the
	// assigner's is the transaction coordinator's.
	TxnUnits int
	// Loaded, if set, is called after a coordinator shard loads (the
	// node removes offsets of topics deleted while it was elsewhere).
	Loaded func(shard int)
}

var _ Units = (*Shards)(nil)

func (s *Shards) scope(u int) []byte {
	if i, ok := s.shareShard(u); ok {
		return record.ShardPrefix(record.ShareStateShardBase + uint16(i))
	}
	if i, ok := s.txnShard(u); ok {
		return record.ShardPrefix(record.TxnShardBase + uint16(i))
	}
	if u == s.Coordinator.Shards() {
		return record.ShardPrefix(record.AssignerShard)
	}
	return record.ShardPrefix(uint16(u))
}

// txnShard returns the transaction coordinator shard of unit u, if it is
// one.
func (s *Shards) txnShard(u int) (int, bool) {
	i := u - s.Coordinator.Shards() - 1
	return i, i >= 0 && (s.Share == nil || i < s.TxnUnits)
}

// shareShard returns the share coordinator shard of unit u, if it is
// one.
func (s *Shards) shareShard(u int) (int, bool) {
	i := u - s.Coordinator.Shards() - 1 - s.TxnUnits
	return i, s.Share != nil && i >= 0
}

// hosted returns the service serving unit u and its shard there, if u
// is a transaction or share coordinator's unit; ok is false for the
// group coordinator's and the assigner's units. A nil service (or a
// shard beyond its count) is a unit owned but not served here.
func (s *Shards) hosted(u int) (svc HostedShards, i int, ok bool) {
	if i, ok := s.shareShard(u); ok {
		svc = s.Share
		if i >= s.Share.Shards() {
			svc = nil
		}
		return svc, i, true
	}
	if i, ok := s.txnShard(u); ok {
		if s.Txn != nil && i < s.Txn.Shards() {
			svc = s.Txn
		}
		return svc, i, true
	}
	return nil, 0, false
}

// Load implements Units.
func (s *Shards) Load(u int) error {
	if svc, i, ok := s.hosted(u); ok {
		if svc == nil {
			return nil
		}
		return svc.Load(i)
	}
	if u == s.Coordinator.Shards() {
		if s.Assigner == nil {
			return nil
		}
		return s.Assigner.Load()
	}
	if err := s.Coordinator.Load(u); err != nil {
		return err
	}
	if s.Loaded != nil {
		s.Loaded(u)
	}
	return nil
}

// Unload implements Units; the store drops the shard's records.
func (s *Shards) Unload(u int) {
	if svc, i, ok := s.hosted(u); ok {
		if svc != nil {
			svc.Unload(i)
		}
	} else if u == s.Coordinator.Shards() {
		if s.Assigner != nil {
			s.Assigner.Unload()
		}
	} else {
		s.Coordinator.Unload(u)
	}
	s.Store.Forget(s.scope(u))
}

// Preload implements Units: it reads the shard's records into the
// store's view, so that the load after the flip reads only what was
// written since.
func (s *Shards) Preload(u int) error {
	return s.Store.Scan(s.scope(u), func(_, _ []byte) error { return nil })
}

// Forget implements Units.
func (s *Shards) Forget(u int) { s.Store.Forget(s.scope(u)) }

// Holds implements Units.
func (s *Shards) Holds(u int) bool {
	if svc, i, ok := s.hosted(u); ok {
		return svc != nil && svc.Holds(i)
	}
	if u == s.Coordinator.Shards() {
		return s.Assigner != nil && s.Assigner.Holds()
	}
	return slices.Contains(s.Coordinator.Held(), u)
}

// Lease implements Units: the store binds the owner keys of later loads
// to the new lease.
func (s *Shards) Lease(id clientv3.LeaseID) { s.Store.SetLease(id) }
