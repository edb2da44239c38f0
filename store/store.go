// Package store defines Cohort's durable record store: a sorted map of byte
// keys to byte values, written in atomic batches that are durable (fsynced, or
// committed by a quorum) before Apply returns.
//
// All durable coordinator and topic metadata goes through this interface, so a
// backend can be swapped (embedded Pebble by default, etcd in cluster mode)
// and every backend must pass the shared conformance suite in store/storetest.
//
// The package must not know what the keys mean: record encoding lives with
// the code that owns the records.
package store

import "errors"

// ErrNotFound is returned by Get when a key has no value.
var ErrNotFound = errors.New("store: key not found")

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("store: closed")

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

// Pipeliner is implemented by stores that can order a batch now and wait
// for its durability later, so that one writer can keep several batches in
// flight and still have them applied in the order it started them.
type Pipeliner interface {
	// ApplyAsync starts b after every batch started before it (by this
	// or any other caller) and returns wait, which returns once b is
	// durable. The caller must call wait exactly once. Ordering: a
	// later ApplyAsync never takes effect before an earlier one, and
	// when wait returns nil, every batch started before b is durable
	// too.
	ApplyAsync(b *Batch) (wait func() error, err error)
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

	// Close releases the store. Apply calls that returned before Close are
	// durable; calls after Close return ErrClosed.
	Close() error
}
