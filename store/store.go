// Package store defines Cohort's durable record store: a sorted map of byte
// keys to byte values, written in atomic batches that are durable (fsynced, or
// committed by a quorum) before Apply returns.
//
// All durable coordinator and topic metadata goes through this interface, so a
// backend can be swapped (embedded Pebble by default, etcd in cluster mode)
// and every backend must pass the shared conformance suite in store/storetest.
//
// A writer that must stop writing once another has taken over (a coordinator
// shard moved to another node) writes through a Handle from Acquire, which a
// later Acquire of the same key prefix fences.
//
// The package must not know what the keys mean: record encoding lives with
// the code that owns the records.
package store

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrNotFound is returned by Get when a key has no value.
var ErrNotFound = errors.New("store: key not found")

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("store: closed")

// ErrFenced is returned (wrapped) by a Handle's writes once the handle has
// been fenced by a later Acquire of its scope, or given up by Release; the
// write changed nothing. It is not retriable through the same handle: the
// scope has another owner. A coordinator that gets it gives the shard up:
// it discards the shard's in-memory state without writing again and answers
// the shard's requests NOT_COORDINATOR, as Kafka does for a coordinator
// that lost its partition's leadership, so that clients find the new one.
var ErrFenced = errors.New("store: write handle fenced: the scope has another owner")

// ErrOutOfScope is returned (wrapped) by a Handle's writes when a key in the
// batch is not under the handle's scope; nothing in the batch was written.
// It is a bug in the caller (a shard writing outside its key prefix), not a
// condition to retry.
var ErrOutOfScope = errors.New("store: key outside the write handle's scope")

// Op is one write in a Batch: a put of Value at Key, or a delete of Key when
// Delete is true (a tombstone).
type Op struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// Batch is an ordered list of writes applied atomically: after a crash either
// all of them are visible or none is. Later writes to the same key win.
type Batch struct {
	Ops []Op
	// NoSync asks a store that is one log (OneLog) not to sync this
	// write: ApplyAsync's wait returns once it is written, and it becomes
	// durable with the next synced write of the log. Other stores ignore
	// it. The coordinator runtime sets it only on batches no durable
	// reply waits on (machine.Reply.Early).
	NoSync bool
	// Barrier, on a batch with no Ops and a store that is one log,
	// syncs the log: wait returns once every write before it is
	// durable (the coordinator runtime's way to make NoSync writes
	// durable when a reply needs them and no record of its own follows).
	// Otherwise an empty batch is a no-op.
	Barrier bool
}

// Put appends a put of value at key. The batch keeps the slices; callers must
// not modify them until Apply returns.
func (b *Batch) Put(key, value []byte) {
	b.Ops = append(b.Ops, Op{Key: key, Value: value})
}

// Delete appends a delete of key.
func (b *Batch) Delete(key []byte) {
	b.Ops = append(b.Ops, Op{Key: key, Delete: true})
}

// Len is the number of writes in the batch.
func (b *Batch) Len() int { return len(b.Ops) }

// CheckScope returns nil if every key in b starts with scope, and otherwise
// an error wrapping ErrOutOfScope that names the first key that does not.
// Backends call it before a Handle's write.
func (b *Batch) CheckScope(scope []byte) error {
	for _, op := range b.Ops {
		if !bytes.HasPrefix(op.Key, scope) {
			return fmt.Errorf("%w: key %q, scope %q", ErrOutOfScope, op.Key, scope)
		}
	}
	return nil
}

// Pipeliner is implemented by stores that can order a batch now and wait
// for its durability later, so that one writer can keep several batches in
// flight and still have them applied in the order it started them.
type Pipeliner interface {
	// ApplyAsync starts b after every batch of its log started before
	// it and returns wait, which returns once b is durable. The caller
	// must call wait exactly once.
	//
	// Ordering is per log: the batches written through one Handle (one
	// scope) are one log, and the plain writes of the Store another. In
	// a log, a later ApplyAsync never takes effect before an earlier
	// one, and when wait returns nil, every batch of the log started
	// before b is durable too. Batches of different logs are not
	// ordered with each other (the etcd backend writes them in
	// separate transactions, possibly at once); Pebble happens to order
	// everything. A shard writes its records through its one handle, so
	// its order is the order it started them.
	ApplyAsync(b *Batch) (wait func() error, err error)
}

// OneLog is implemented by a store whose writes, through the Store and
// every Handle, go to one log in the order their Apply or ApplyAsync
// took effect: once a batch is durable, every batch whose ApplyAsync
// returned before it started is durable too. The Pebble backend is one
// log (its journal); etcd is not (each handle's writes are transactions of
// their own). The coordinator runtime relies on it for early replies
// (machine.Reply.Early); a store that does not implement it, or returns
// false, gets none.
type OneLog interface {
	OneLog() bool
}

// Store is a durable, ordered key-value store.
//
// Implementations are safe for concurrent use. Concurrent Apply calls are
// grouped into one sync (group commit), so many small writers cost one fsync,
// not one each.
type Store interface {
	// Apply writes the batch atomically and returns only once it is durable:
	// fsynced to local disk, or committed in the cluster backend. An empty
	// batch is a no-op that returns nil.
	Apply(b *Batch) error

	// Get returns a copy of the value at key, or ErrNotFound.
	Get(key []byte) ([]byte, error)

	// Scan calls fn for every key that starts with prefix, in ascending key
	// order, with the writes of every Apply that returned before Scan began
	// visible. The slices passed to fn are valid only during the call. An
	// error returned by fn stops the scan and is returned by Scan.
	Scan(prefix []byte, fn func(key, value []byte) error) error

	// Acquire returns a write handle for the keys under scope (a
	// coordinator shard's key prefix). It fences every handle acquired for
	// the same scope before it: from then on their writes fail with
	// ErrFenced and change nothing. Acquire takes the scope
	// unconditionally; deciding who should own it is the caller's job (in
	// cluster mode, the shard leases), and Acquire is what makes that
	// decision binding on a previous owner that has not noticed it yet.
	//
	// Scopes are compared as bytes: equal scopes are the same scope. Two
	// different scopes where one is a prefix of the other overlap; that is
	// a caller error which backends need not detect, and handles of
	// overlapping scopes do not fence each other. Plain Apply and
	// ApplyAsync on the Store are not fenced: a caller that fences a scope
	// writes it only through its handle.
	//
	// In the embedded backend the fence is an in-process epoch per scope.
	// In the etcd backend Acquire puts an owner key for the scope, bound to
	// the node's lease, and a handle's writes are transactions conditioned
	// on that key still having the revision its Acquire gave it; so a node
	// whose lease lapsed, or whose scope was acquired elsewhere, cannot
	// write it.
	Acquire(scope []byte) (Handle, error)

	// Close releases the store. Apply calls that returned before Close are
	// durable; calls after Close, on the Store or its handles, return
	// ErrClosed.
	Close() error
}

// Handle writes the keys under one scope for as long as it owns it. It is
// safe for concurrent use.
//
// Its writes have exactly the contracts of Store.Apply and
// Pipeliner.ApplyAsync (atomic; durable before Apply or wait returns; group
// committed with concurrent writers; ordered with every batch of the
// handle's log started before them), with three additions:
//
//   - every key in the batch must be under the handle's scope, or the write
//     fails with an error wrapping ErrOutOfScope and writes nothing;
//   - once the handle is fenced (Fenced), a write fails with an error
//     wrapping ErrFenced and writes nothing (an empty batch too). The fence
//     is atomic with respect to the fencing Acquire: no batch of the old
//     handle takes effect after the new handle's Acquire returned. A batch
//     whose ApplyAsync returned nil before that Acquire began is not undone
//     by it: ApplyAsync is where the fence is checked, and its wait only
//     reports durability;
//   - after the Store's Close, writes fail with ErrClosed.
type Handle interface {
	// Apply writes b atomically and returns once it is durable, as
	// Store.Apply, if the handle is not fenced and every key is in scope.
	Apply(b *Batch) error

	// ApplyAsync orders b after every batch started before it, as
	// Pipeliner.ApplyAsync, if the handle is not fenced and every key is
	// in scope; the caller must then call wait exactly once. Otherwise it
	// returns the error and b is never written.
	ApplyAsync(b *Batch) (wait func() error, err error)

	// Fenced reports whether the handle has been fenced, by a later
	// Acquire of its scope or by Release. Once true it stays true. A
	// backend shared between processes (etcd) knows of an Acquire through
	// the same Store at once, and of one elsewhere no later than the first
	// write that fails with ErrFenced.
	Fenced() bool

	// Release gives the scope up: the handle is fenced, and its later
	// writes fail with ErrFenced. A later Acquire of the scope proceeds as
	// usual. Releasing a handle that is already fenced changes nothing (it
	// does not fence the scope's new owner); a second Release is a no-op.
	Release()
}
