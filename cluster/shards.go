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

// TxnShards is the transaction coordinator (txncoord.Coordinator):
// its shard i is unit n+1+i of Shards.
type TxnShards interface {
	Shards() int
	Load(i int) error
	Unload(i int)
	Holds(i int) bool
}

// Shards is the Units of a group coordinator on the etcd store: units
// 0..n-1 are the coordinator's shards, unit n the assignment service's,
// units n+1.. the transaction coordinator's.
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
	// Loaded, if set, is called after a coordinator shard loads (the
	// node removes offsets of topics deleted while it was elsewhere).
	Loaded func(shard int)
}

var _ Units = (*Shards)(nil)

func (s *Shards) scope(u int) []byte {
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
	return i, i >= 0
}

// Load implements Units.
func (s *Shards) Load(u int) error {
	if i, ok := s.txnShard(u); ok {
		if s.Txn == nil || i >= s.Txn.Shards() {
			return nil
		}
		return s.Txn.Load(i)
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
	if i, ok := s.txnShard(u); ok {
		if s.Txn != nil {
			s.Txn.Unload(i)
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
	if i, ok := s.txnShard(u); ok {
		return s.Txn != nil && s.Txn.Holds(i)
	}
	if u == s.Coordinator.Shards() {
		return s.Assigner != nil && s.Assigner.Holds()
	}
	return slices.Contains(s.Coordinator.Held(), u)
}

// Lease implements Units: the store binds the owner keys of later loads
// to the new lease.
func (s *Shards) Lease(id clientv3.LeaseID) { s.Store.SetLease(id) }
