// Package memstore is an in-memory store.Store, for tests: Cohort's own and
// those of programs that embed Cohort and want a store without a directory.
// It passes the store/storetest conformance suite, so code tested on it
// meets the same contract as on Pebble, and it can fail writes on demand
// (Options.FailApply) to test a caller's error paths.
//
// It must not be used where durability matters: "durable" here means held
// in this process's memory, and everything is lost when the process exits.
// Reopen gives a new Store over the same data, as a restart would, so that
// tests can check what survives one; every write that returned survives it.
// Nothing is lost at a simulated crash, so crash tests belong with a real
// backend (store/pebble's use a filesystem that drops unsynced writes).
package memstore

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cohort-dev/cohort/store"
)

// Options configures New. The zero value is ready to use.
type Options struct {
	// FailApply, if not nil, is called with every non-empty batch written
	// through the Store or its handles (Apply and ApplyAsync), before the
	// store's own checks and without any lock held: it may block (to hold a
	// write, as a slow disk would) or use the store. If it returns an error
	// the write returns that error and writes nothing; a nil return lets
	// the write proceed. Nil writes everything.
	FailApply func(b *store.Batch) error
}

// Store is an in-memory store.Store. It is safe for concurrent use.
type Store struct {
	d    *data
	opts Options

	// Guarded by d.mu, which every Store over the same data shares.
	closed bool
	scopes map[string]uint64 // the owning handle's epoch per acquired scope
	epochs uint64            // the last epoch handed out, so none is reused
}

// data is what survives Reopen.
type data struct {
	mu      sync.Mutex
	entries []entry // sorted by key, keys unique
}

type entry struct {
	key   string
	value []byte // never modified once stored; replaced on overwrite
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Pipeliner = (*Store)(nil)
	_ store.Handle    = (*handle)(nil)
)

// New returns an empty Store.
func New(opts Options) *Store {
	return open(&data{}, opts)
}

func open(d *data, opts Options) *Store {
	return &Store{d: d, opts: opts, scopes: make(map[string]uint64)}
}

// Reopen returns a new Store over s's data, with s's Options, as after a
// restart: every write that returned is there, and no handle of s owns a
// scope. It closes s first if it is still open, so that s and its handles
// cannot write into the new Store's data: their later calls fail with
// store.ErrClosed, as the calls of a process that crashed never come.
func (s *Store) Reopen() *Store {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	s.closed = true
	return open(s.d, s.opts)
}

// Apply implements store.Store. The batch is durable (in memory) when Apply
// returns.
func (s *Store) Apply(b *store.Batch) error {
	return s.write(b, nil)
}

// ApplyAsync implements store.Pipeliner. The batch is written before
// ApplyAsync returns, so batches take effect in the order they were started
// and wait has nothing to wait for.
func (s *Store) ApplyAsync(b *store.Batch) (func() error, error) {
	if err := s.write(b, nil); err != nil {
		return nil, err
	}
	return noWait, nil
}

func noWait() error { return nil }

// write applies b, through h when h is not nil: then the scope and the fence
// are checked under the same lock as the write, so a fencing Acquire comes
// entirely before or after it.
func (s *Store) write(b *store.Batch, h *handle) error {
	empty := b == nil || b.Len() == 0
	if !empty && s.opts.FailApply != nil {
		if err := s.opts.FailApply(b); err != nil {
			return err
		}
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if h != nil {
		if !empty {
			if err := b.CheckScope(h.scope); err != nil {
				return fmt.Errorf("memstore: apply %d ops: %w", b.Len(), err)
			}
		}
		if s.fenced(h) {
			return fmt.Errorf("memstore: apply under %q: %w", h.scope, store.ErrFenced)
		}
	}
	if empty {
		return nil
	}
	for _, op := range b.Ops {
		s.d.set(op)
	}
	return nil
}

// set applies one write. The caller holds d.mu.
func (d *data) set(op store.Op) {
	i, found := slices.BinarySearchFunc(d.entries, op.Key, compareKey)
	switch {
	case op.Delete && found:
		d.entries = slices.Delete(d.entries, i, i+1)
	case op.Delete:
	case found:
		// A new slice, not a copy into the old one: a Scan's snapshot may
		// still hold the old value.
		d.entries[i].value = bytes.Clone(nonNil(op.Value))
	default:
		d.entries = slices.Insert(d.entries, i, entry{string(op.Key), bytes.Clone(nonNil(op.Value))})
	}
}

// nonNil keeps a put of a nil value a present, empty value: bytes.Clone
// would keep it nil, and Get must tell it from a missing key.
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func compareKey(e entry, key []byte) int {
	return strings.Compare(e.key, string(key))
}

// Get implements store.Store.
func (s *Store) Get(key []byte) ([]byte, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	i, found := slices.BinarySearchFunc(s.d.entries, key, compareKey)
	if !found {
		return nil, store.ErrNotFound
	}
	return bytes.Clone(s.d.entries[i].value), nil
}

// Scan implements store.Store. It copies the keys under prefix (and the
// references to their values, which are never modified) while holding the
// lock, then calls fn without it: the scan sees one snapshot, and fn may
// write to the store.
func (s *Store) Scan(prefix []byte, fn func(key, value []byte) error) error {
	s.d.mu.Lock()
	if s.closed {
		s.d.mu.Unlock()
		return store.ErrClosed
	}
	// The keys under prefix are contiguous, from the first one not below it.
	lo, _ := slices.BinarySearchFunc(s.d.entries, prefix, compareKey)
	hi, p := lo, string(prefix)
	for hi < len(s.d.entries) && strings.HasPrefix(s.d.entries[hi].key, p) {
		hi++
	}
	snapshot := slices.Clone(s.d.entries[lo:hi])
	s.d.mu.Unlock()

	for _, e := range snapshot {
		// Copies, so that fn cannot change the store through them.
		if err := fn([]byte(e.key), bytes.Clone(e.value)); err != nil {
			return err
		}
	}
	return nil
}

// Acquire implements store.Store. The fence is an epoch per scope, in this
// Store only: a Reopen starts with no scope owned.
func (s *Store) Acquire(scope []byte) (store.Handle, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	s.epochs++
	s.scopes[string(scope)] = s.epochs
	return &handle{s: s, scope: bytes.Clone(scope), epoch: s.epochs}, nil
}

// fenced reports whether h no longer owns its scope. The caller holds d.mu.
func (s *Store) fenced(h *handle) bool {
	return s.scopes[string(h.scope)] != h.epoch
}

// Close implements store.Store. A second Close returns store.ErrClosed.
func (s *Store) Close() error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.closed = true
	return nil
}

// handle is the store.Handle that Acquire returns.
type handle struct {
	s     *Store
	scope []byte
	epoch uint64
}

// Apply implements store.Handle.
func (h *handle) Apply(b *store.Batch) error {
	return h.s.write(b, h)
}

// ApplyAsync implements store.Handle; as Store.ApplyAsync, the batch is
// written before it returns.
func (h *handle) ApplyAsync(b *store.Batch) (func() error, error) {
	if err := h.s.write(b, h); err != nil {
		return nil, err
	}
	return noWait, nil
}

// Fenced implements store.Handle.
func (h *handle) Fenced() bool {
	h.s.d.mu.Lock()
	defer h.s.d.mu.Unlock()
	return h.s.fenced(h)
}

// Release implements store.Handle.
func (h *handle) Release() {
	h.s.d.mu.Lock()
	defer h.s.d.mu.Unlock()
	if !h.s.fenced(h) {
		delete(h.s.scopes, string(h.scope))
	}
}
