// Package pebble is the embedded store.Store backend: a journal in front of
// a single-node Pebble (LSM) database in a local directory, the default
// durable store for Cohort.
//
// Its job is to make store.Store's promises true on one disk: Apply returns
// only after the batch is fsynced (fdatasync) to the journal, and concurrent
// writers share one sync (group commit). The journal's full segments are
// folded into Pebble, each key's latest value once (journal.go says why and
// how); reads see the journal's overlay over Pebble. Handles from Acquire
// are fenced by an epoch per scope held in this process, which is enough on
// one node: only this process can open the directory.
//
// It must not interpret keys or values, acknowledge a write before it is
// synced, or expose Pebble types through the store.Store methods; callers
// depend on store.Store, not on this package. Only one Store may have a
// directory open at a time (Pebble locks it, and the journal lives inside
// it).
package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	pdb "github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/cohort-dev/cohort/store"
)

// Options configures Open. The zero value is ready to use.
type Options struct {
	// Logger receives Pebble's own log output: routine events (flushes,
	// compactions, WAL rotation) at debug level, write stalls and slow disks
	// at warn, background errors at error. Nil discards it; Pebble's default
	// would print to stderr through the standard log package. Add any
	// identifying attributes with Logger.With; none are added here.
	Logger *slog.Logger

	// FS is the filesystem Pebble runs on. Nil means the operating system's,
	// with Pebble's disk-health checks (slow operations are logged) and dir
	// resolved to an absolute, symlink-free path. Tests set vfs.NewStrictMem
	// to simulate losing unsynced writes; production code leaves it nil.
	FS vfs.FS

	// SegmentSize is the size at which a segment of the journal is closed
	// and folded into Pebble; zero means 64 MiB. Tests set it small.
	SegmentSize int64

	// HoldCompactions keeps Pebble's compactions from starting until
	// ResumeCompactions, so that a start's load, which reads every
	// record once, does not share the CPU with a compaction of what the
	// last run left in level 0 (on 2 cores, 1.4 s of a 10-million-record
	// load's 8.3 s of CPU). The hold ends by itself, so that no write
	// can stall behind it: at Open if level 0 is already deep, at the
	// first flush after Open (a journal's replay, or writes enough to
	// fill a memtable), and after holdLimit.
	HoldCompactions bool
}

// blockSize is the size of the data blocks of the tables Pebble writes
// (its default is 4 KiB). A start reads every record once, block by
// block, and each block read costs a block cache insertion, an eviction,
// a C allocation and a read call; the store's point reads are few (a
// node's state is in memory). A load of 10 million offsets from a store
// rewritten with 32 KiB blocks took 4.8-5.3 s of CPU, not 5.4-6.7 (and
// its tables were 83 MB, not 103).
const blockSize = 32 << 10

// holdLimit is the longest HoldCompactions holds compactions.
const holdLimit = time.Minute

// holdL0 is the depth of level 0 (sublevels, Pebble's read
// amplification of it) at which Open does not hold compactions. Pebble
// stops writes when level 0 reaches 12 sublevels (L0StopWritesThreshold)
// until a compaction makes it shallower; it deepens only by a flush, and
// the first flush ends the hold, so below 12 no write can wait for a
// held compaction. Two less, for a margin.
const holdL0 = 10

// Store is a store.Store backed by Pebble. It is safe for concurrent use.
type Store struct {
	db   *pdb.DB
	j    *journal
	lock *pdb.Lock // released after db is closed

	// mu guards closed and the Add side of inflight, so that once Close has
	// set closed no new call can start and inflight.Wait is race-free, and
	// guards scopes. Not an RWMutex held across calls: a Scan callback may
	// call Get or Apply, and a nested RLock would deadlock behind a waiting
	// Close.
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	scopes   map[string]*scope // every scope ever acquired; never shrinks

	log *slog.Logger // Open's Logger, or one that discards
	// held is true while compactions are held (Options.HoldCompactions);
	// it only ever goes from true to false, as Pebble divides by the
	// count of compactions it reads while picking one.
	held      atomic.Bool
	opened    atomic.Bool // Open returned: a flush from now on ends the hold
	holdTimer *time.Timer

	// fenceChecked, if not nil, is called by a handle's write after its
	// fence check passed and before Pebble orders the batch. Tests only:
	// it lets one pause a write in the window that Acquire must wait for.
	fenceChecked func()
}

// scope is the fencing state of one acquired key prefix.
type scope struct {
	// mu is held shared by a handle's write from its epoch check until
	// Pebble has ordered the batch (ApplyAsync) or synced it (Apply, which
	// commits as Store.Apply does; concurrent holders still share one
	// fsync), and exclusively by Acquire and Release to move epoch: so no
	// write that passed the check is still unordered when a fencing
	// Acquire returns.
	mu    sync.RWMutex
	epoch uint64 // the owning handle's epoch; handles with another are fenced
}

var _ store.Store = (*Store)(nil)

// formatVersion is pinned rather than pdb.FormatNewest so that bumping the
// Pebble dependency never silently ratchets the on-disk format (which cannot
// be undone). It must be at least FormatFlushableIngest, the oldest format
// Pebble v2 opens; Pebble v1's default (FormatMostCompatible) is older.
const formatVersion = pdb.FormatVirtualSSTables

// ErrLocked is returned (wrapped) by Open when another Store, in this process
// or another, has the directory open.
var ErrLocked = errors.New("pebble store: directory is in use by another open store")

// Open opens, creating if needed, the store in dir. It fails with ErrLocked if
// another Store has dir open.
func Open(dir string, opts Options) (*Store, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{scopes: make(map[string]*scope), log: log}
	s.held.Store(opts.HoldCompactions)
	el := eventListener(log)
	flushEnd := el.FlushEnd
	el.FlushEnd = func(info pdb.FlushInfo) {
		flushEnd(info)
		if s.opened.Load() && s.held.CompareAndSwap(true, false) {
			// The flush schedules compactions once this returns.
			log.Debug("pebble compactions resumed: a flush")
		}
	}
	po := &pdb.Options{
		FormatMajorVersion: formatVersion,
		Logger:             logAdapter{log},
		EventListener:      el,
		FS:                 opts.FS,
		// Every level's options follow level 0's (pdb.Options.Level).
		Levels: []pdb.LevelOptions{{BlockSize: blockSize}},
		MaxConcurrentCompactions: func() int {
			if s.held.Load() {
				return 0
			}
			return 1
		},
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := mkdirSynced(fs, dir); err != nil {
		return nil, fmt.Errorf("pebble store: open %s: create directory: %w", dir, err)
	}
	if opts.FS == nil {
		// Pebble's in-process lock table is keyed by path string, and the
		// fcntl lock beneath it does not exclude its own process, so "d" and
		// "/abs/d" (or a symlink to d) would both open. Canonicalise first.
		var err error
		if dir, err = canonicalDir(dir); err != nil {
			return nil, fmt.Errorf("pebble store: open %s: %w", dir, err)
		}
		po.WithFSDefaults() // disk-health checks, reported as DiskSlow events
	}

	// Take the lock ourselves, rather than inside pdb.Open, so that "in use"
	// is reported as ErrLocked and not as whatever errno the platform uses.
	// Failing to create the LOCK file (a *os.PathError) is not "in use"; the
	// lock conflict itself is a bare errno or, in-process, a plain error.
	lock, err := pdb.LockDirectory(dir, po.FS)
	if err != nil {
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			return nil, fmt.Errorf("pebble store: open %s: lock: %w", dir, err)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrLocked, dir, err)
	}
	po.Lock = lock
	db, err := pdb.Open(dir, po)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("pebble store: open %s: %w", dir, err)
	}
	s.db, s.lock = db, lock
	s.opened.Store(true)
	if s.held.Load() {
		if l0 := db.Metrics().Levels[0].Sublevels; l0 >= holdL0 {
			log.Debug("pebble compactions not held: level 0 is deep", "sublevels", l0)
			s.ResumeCompactions()
		} else {
			s.holdTimer = time.AfterFunc(holdLimit, s.ResumeCompactions)
		}
	}
	j, err := openJournal(fs, dir, db, log, opts.SegmentSize)
	if err != nil {
		s.stopHold()
		db.Close()
		lock.Close()
		return nil, fmt.Errorf("pebble store: open %s: %w", dir, err)
	}
	s.j = j
	return s, nil
}

// ResumeCompactions ends the hold of Options.HoldCompactions, and has
// Pebble schedule the compactions it held; it does nothing if none are
// held. Safe to call at any time, more than once.
func (s *Store) ResumeCompactions() {
	if !s.held.CompareAndSwap(true, false) {
		return
	}
	if !s.enter() {
		return
	}
	defer s.inflight.Done()
	// Pebble schedules compactions after a flush (and a write, an
	// ingestion or a compaction); a flush of the memtable, even an empty
	// one, is the one call that asks it to without a key range. No write
	// can be stalled here, waiting for a compaction with Pebble's commit
	// lock held: a stall needs level 0 at 12 sublevels, and the hold ends
	// at the first flush, or at Open if level 0 was holdL0 deep.
	if _, err := s.db.AsyncFlush(); err != nil {
		s.log.Warn("pebble store: a flush to resume compactions", "err", err)
	}
}

// stopHold stops the hold's timer.
func (s *Store) stopHold() {
	if s.holdTimer != nil {
		s.holdTimer.Stop()
	}
}

// mkdirSynced creates dir and any missing parents, fsyncing the parent of
// each so the new entries survive power loss. Pebble fsyncs dir after
// creating files in it, but never dir's own entry in its parent: without
// this, losing power soon after the first Open can lose the whole store,
// acknowledged writes included. dir's parent is synced even if dir existed,
// in case an earlier Open crashed between creating and syncing it.
func mkdirSynced(fs vfs.FS, dir string) error {
	parent := fs.PathDir(dir)
	if _, err := fs.Stat(parent); errors.Is(err, os.ErrNotExist) && parent != dir {
		if err := mkdirSynced(fs, parent); err != nil {
			return err
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d, err := fs.OpenDir(parent)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("sync %s: %w", parent, err)
	}
	return d.Close()
}

// canonicalDir returns the absolute, symlink-free path of the existing dir.
func canonicalDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, err
	}
	return filepath.EvalSymlinks(abs)
}

// enter registers a call in flight; it reports false once Close has begun.
// Every true result must be paired with s.inflight.Done().
func (s *Store) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

// Apply implements store.Store: the batch is appended to the journal and
// Apply returns once the journal is synced past it. Concurrent writers share
// one sync (group commit).
func (s *Store) Apply(b *store.Batch) error {
	return s.apply(b, nil)
}

// apply is Apply, through h when h is not nil.
func (s *Store) apply(b *store.Batch, h *handle) error {
	wait, err := s.applyAsync(b, h)
	if err != nil {
		return err
	}
	return wait()
}

// check checks that every key of b is under h's scope, if h is not nil.
func check(b *store.Batch, h *handle) error {
	if h != nil && b != nil && b.Len() > 0 {
		if err := b.CheckScope(h.prefix); err != nil {
			return fmt.Errorf("pebble store: apply %d ops: %w", b.Len(), err)
		}
	}
	return nil
}

// ApplyAsync implements store.Pipeliner: the batch is in the journal (and
// visible) when it returns, and wait returns once the journal is synced
// past it. The journal is synced in order, so an earlier batch is never
// less durable than a later one.
func (s *Store) ApplyAsync(b *store.Batch) (func() error, error) {
	return s.applyAsync(b, nil)
}

func noWait() error { return nil }

// applyAsync is ApplyAsync, through h when h is not nil.
func (s *Store) applyAsync(b *store.Batch, h *handle) (func() error, error) {
	if !s.enter() {
		return nil, store.ErrClosed
	}
	seq, err := s.order(b, h)
	if err != nil || seq == 0 {
		s.inflight.Done()
		if err != nil {
			return nil, err
		}
		return noWait, nil
	}
	n := b.Len()
	return func() error {
		defer s.inflight.Done()
		if err := s.j.wait(seq); err != nil {
			return fmt.Errorf("pebble store: sync %d ops: %w", n, err)
		}
		return nil
	}, nil
}

// order puts b in the journal, through h when h is not nil, and returns
// the journal record a sync must reach for b to be durable, or 0 when
// nothing need wait: an empty batch, a NoSync one (in the journal,
// ordered before every later write: the next synced one makes it
// durable), a Barrier with every write before it already synced.
func (s *Store) order(b *store.Batch, h *handle) (uint64, error) {
	if err := check(b, h); err != nil {
		return 0, err
	}
	if h != nil {
		if err := h.hold(); err != nil {
			return 0, err
		}
		defer h.scope.mu.RUnlock() // once ordered, not through the sync
	}
	switch {
	case b != nil && b.Len() > 0:
		seq, err := s.j.append(b, !b.NoSync)
		if err != nil {
			return 0, fmt.Errorf("pebble store: apply %d ops: %w", b.Len(), err)
		}
		if b.NoSync {
			return 0, nil
		}
		return seq, nil
	case b != nil && b.Barrier:
		seq, err := s.j.barrier()
		if err != nil {
			return 0, fmt.Errorf("pebble store: barrier: %w", err)
		}
		return seq, nil
	}
	return 0, nil
}

// Acquire implements store.Store. The fence is an epoch per scope, in this
// process only: it does not survive Close (nor need to, since every handle
// of a closed Store fails with ErrClosed).
func (s *Store) Acquire(prefix []byte) (store.Handle, error) {
	if !s.enter() {
		return nil, store.ErrClosed
	}
	defer s.inflight.Done()
	s.mu.Lock()
	sc, ok := s.scopes[string(prefix)]
	if !ok {
		sc = &scope{}
		s.scopes[string(prefix)] = sc
	}
	s.mu.Unlock()

	sc.mu.Lock() // waits for the old handle's writes being ordered
	defer sc.mu.Unlock()
	sc.epoch++
	return &handle{s: s, scope: sc, prefix: bytes.Clone(prefix), epoch: sc.epoch}, nil
}

// handle is the store.Handle that Acquire returns.
type handle struct {
	s      *Store
	scope  *scope
	prefix []byte // the scope's key prefix
	epoch  uint64
}

var _ store.Handle = (*handle)(nil)

// hold takes h's scope lock shared and checks h's epoch. On success the
// caller holds the lock until its batch is ordered, and then releases it
// with h.scope.mu.RUnlock; a fencing Acquire waits for that.
func (h *handle) hold() error {
	h.scope.mu.RLock()
	if h.scope.epoch != h.epoch {
		h.scope.mu.RUnlock()
		return fmt.Errorf("pebble store: apply under %q: %w", h.prefix, store.ErrFenced)
	}
	if h.s.fenceChecked != nil {
		h.s.fenceChecked()
	}
	return nil
}

// Apply implements store.Handle, with the same commit as Store.Apply.
func (h *handle) Apply(b *store.Batch) error {
	return h.s.apply(b, h)
}

// ApplyAsync implements store.Handle, as Store.ApplyAsync.
func (h *handle) ApplyAsync(b *store.Batch) (func() error, error) {
	return h.s.applyAsync(b, h)
}

// Fenced implements store.Handle.
func (h *handle) Fenced() bool {
	h.scope.mu.RLock()
	defer h.scope.mu.RUnlock()
	return h.scope.epoch != h.epoch
}

// Release implements store.Handle: it moves the epoch on if h still owns
// the scope, so h's writes fail and the next Acquire's handle is not h's.
func (h *handle) Release() {
	h.scope.mu.Lock()
	defer h.scope.mu.Unlock()
	if h.scope.epoch == h.epoch {
		h.scope.epoch++
	}
}

// Unfolded is about how many bytes of records the journal's overlay holds
// that are not yet in Pebble (a full segment counts as SegmentSize): the
// memory the overlay keeps. Zero once a quiet journal has been folded.
func (s *Store) Unfolded() int64 { return s.j.unfolded() }

// OneLog implements store.OneLog: every write, through the Store or a
// handle, goes to the one journal, synced in order.
func (s *Store) OneLog() bool { return true }

var _ store.OneLog = (*Store)(nil)

var _ store.Pipeliner = (*Store)(nil)

// Get implements store.Store: the journal's overlay, then Pebble.
func (s *Store) Get(key []byte) ([]byte, error) {
	if !s.enter() {
		return nil, store.ErrClosed
	}
	defer s.inflight.Done()
	if isFoldedKey(key) {
		return nil, store.ErrNotFound
	}
	if e, ok := s.j.get(key); ok {
		if e.del {
			return nil, store.ErrNotFound
		}
		return append([]byte{}, e.value...), nil
	}
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pdb.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pebble store: get %q: %w", key, err)
	}
	defer closer.Close()
	// v points into Pebble's block cache or memtable and is valid only until
	// closer.Close; the non-nil empty slice keeps "present but empty" distinct.
	return append([]byte{}, v...), nil
}

// Scan implements store.Store: the journal's overlay merged over one
// Pebble iterator (one consistent snapshot). A batch is seen entirely or
// not at all: it enters the overlay atomically, and leaves it only after
// Pebble holds it. fn must not call Close.
func (s *Store) Scan(prefix []byte, fn func(key, value []byte) error) error {
	if !s.enter() {
		return store.ErrClosed
	}
	defer s.inflight.Done()

	over := s.j.scan(prefix)
	it, err := s.db.NewIter(&pdb.IterOptions{
		LowerBound: prefix,
		UpperBound: prefixEnd(prefix),
	})
	if err != nil {
		return fmt.Errorf("pebble store: scan %q: %w", prefix, err)
	}
	defer it.Close()
	emit := func(k string, e entry) error {
		if e.del {
			return nil
		}
		return fn([]byte(k), e.value)
	}
	valid := it.First()
	for valid || len(over) > 0 {
		if valid && isFoldedKey(it.Key()) {
			valid = it.Next()
			continue
		}
		var c int // which is next: -1 Pebble's key, 0 both, 1 the overlay's
		switch {
		case !valid:
			c = 1
		case len(over) == 0:
			c = -1
		default:
			c = bytes.Compare(it.Key(), []byte(over[0].key))
		}
		if c < 0 {
			v, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("pebble store: scan %q: read %q: %w", prefix, it.Key(), err)
			}
			if err := fn(it.Key(), v); err != nil {
				return err // the caller's own error, unwrapped
			}
			valid = it.Next()
			continue
		}
		if c == 0 {
			valid = it.Next() // the overlay's write is newer
		}
		if err := emit(over[0].key, over[0].e); err != nil {
			return err
		}
		over = over[1:]
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("pebble store: scan %q: %w", prefix, err)
	}
	return nil
}

// prefixEnd returns the smallest key greater than every key starting with
// prefix, or nil (no upper bound) if there is none: the empty prefix, or one
// made only of 0xff bytes.
func prefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := append([]byte{}, prefix[:i+1]...)
			end[i]++
			return end
		}
	}
	return nil
}

// Close implements store.Store. It waits for calls in flight, then closes
// Pebble; every Apply that returned nil is already synced, so Close does not
// flush. A second Close returns store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.closed = true
	s.mu.Unlock()

	s.inflight.Wait()
	s.stopHold()
	// A close's fold may flush, which ends a hold; compactions it starts
	// are cancelled by Pebble's Close.
	err := s.j.close()
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	// Release the directory even if Close failed: the process is not going to
	// use this DB again, and keeping the lock would block a retry.
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("pebble store: close: %w", err)
	}
	return nil
}

// logAdapter routes Pebble's Logger to slog.
type logAdapter struct{ log *slog.Logger }

func (l logAdapter) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) { // skip Sprintf when discarded
		l.log.Debug(fmt.Sprintf(format, args...))
	}
}

// Fatalf is called on unrecoverable corruption or I/O failure (for example a
// failed WAL write). Pebble's state is undefined if it returns, so log and
// panic, as Pebble's default logger would exit.
func (l logAdapter) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg)
	panic("pebble store: fatal: " + msg)
}

// eventListener logs every Pebble event at debug level and raises the ones an
// operator should notice.
func eventListener(log *slog.Logger) *pdb.EventListener {
	el := pdb.MakeLoggingEventListener(logAdapter{log})
	el.BackgroundError = func(err error) {
		log.Error("pebble background error", "err", err)
	}
	el.DiskSlow = func(info pdb.DiskSlowInfo) {
		log.Warn("pebble disk slow", "info", info.String())
	}
	el.WriteStallBegin = func(info pdb.WriteStallBeginInfo) {
		log.Warn("pebble write stall", "reason", info.Reason)
	}
	el.WriteStallEnd = func() {
		log.Info("pebble write stall ended")
	}
	return &el
}
