package etcd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/store"
)

// Entry format: a version byte, a kind byte, then for kindInline the
// operations; for kindChunked the uvarint number of chunks, whose
// concatenation is the operations. An operation is a byte (opPut or
// opDelete), the uvarint length and bytes of the key, and for a put the
// uvarint length and bytes of the value. A new version must keep decoding
// this one; an unknown version is corruption.
const (
	entryV1     = 1
	kindInline  = 0
	kindChunked = 1
	opPut       = 0
	opDelete    = 1
)

// item is one unit of the writer's queue: a batch (ops) or an Acquire (acq).
type item struct {
	h    *handle // the writing handle; nil for Store writes
	ops  []byte  // the batch's encoded operations
	acq  *handle // for an Acquire: the new handle, whose rev it sets
	done chan error
	logs []string // the logs it touches (itemLogs), the first its own
}

// enqueue appends it to the queue. The caller holds s.mu.
func (s *Store) enqueue(it *item) {
	it.logs = s.itemLogs(it)
	s.queue = append(s.queue, it)
	s.queued += len(it.ops)
	if s.holding == 0 && s.inFlight < maxInFlight {
		s.wake.Signal()
	}
}

// encode appends b's operations, copying keys and values.
func encode(b *store.Batch) []byte {
	n := 0
	for _, op := range b.Ops {
		n += 1 + 2*binary.MaxVarintLen32 + len(op.Key) + len(op.Value)
	}
	buf := make([]byte, 0, n)
	for _, op := range b.Ops {
		if op.Delete {
			buf = append(buf, opDelete)
			buf = binary.AppendUvarint(buf, uint64(len(op.Key)))
			buf = append(buf, op.Key...)
			continue
		}
		buf = append(buf, opPut)
		buf = binary.AppendUvarint(buf, uint64(len(op.Key)))
		buf = append(buf, op.Key...)
		buf = binary.AppendUvarint(buf, uint64(len(op.Value)))
		buf = append(buf, op.Value...)
	}
	return buf
}

// Apply implements store.Store: the batch is committed to the global log in
// one etcd transaction (possibly shared with concurrent batches) before it
// returns.
func (s *Store) Apply(b *store.Batch) error {
	wait, err := s.start(b, nil)
	if err != nil {
		return err
	}
	return wait()
}

// ApplyAsync implements store.Pipeliner, with the order per log (see the
// package doc): the batch is queued behind every batch of the global log
// started before it, and wait returns once its transaction commits. A
// batch whose transaction failed makes every batch queued behind it in the
// same log fail too, so a nil from wait means all earlier batches of the
// log are committed.
func (s *Store) ApplyAsync(b *store.Batch) (func() error, error) {
	return s.start(b, nil)
}

func noWait() error { return nil }

// start checks and queues b, through h if h is not nil.
func (s *Store) start(b *store.Batch, h *handle) (func() error, error) {
	if h != nil && b != nil {
		if err := b.CheckScope(h.scope); err != nil {
			return nil, fmt.Errorf("etcd store: apply %d ops: %w", b.Len(), err)
		}
	}
	var ops []byte
	if b != nil && b.Len() > 0 {
		ops = encode(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.closed && s.queued > maxQueued {
		s.cond.Wait()
	}
	if s.closed {
		return nil, store.ErrClosed
	}
	if h != nil && h.fenced.Load() {
		return nil, fmt.Errorf("etcd store: apply under %q: %w", h.scope, store.ErrFenced)
	}
	if ops == nil {
		return noWait, nil
	}
	it := &item{h: h, ops: ops, done: make(chan error, 1)}
	s.enqueue(it)
	return func() error { return <-it.done }, nil
}

// Acquire implements store.Store: it queues the owner key's put behind every
// batch already queued, fences this Store's previous handle of the scope at
// once, and returns when the put is committed.
func (s *Store) Acquire(scope []byte) (store.Handle, error) {
	h := &handle{s: s, scope: bytes.Clone(scope), keys: s.scopeKeys(scope)}
	it := &item{acq: h, done: make(chan error, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	if old := s.owners[string(scope)]; old != nil {
		old.fenced.Store(true)
	}
	s.owners[string(scope)] = h
	s.enqueue(it)
	s.mu.Unlock()
	if err := <-it.done; err != nil {
		h.fenced.Store(true)
		return nil, err
	}
	return h, nil
}

func (s *Store) ownerKey(scope []byte) string {
	return s.ownerP + hexOf(scope)
}

// handle is the store.Handle that Acquire returns.
type handle struct {
	s      *Store
	scope  []byte
	keys   logKeys
	rev    int64 // the owner key's ModRevision put by Acquire; set before Acquire returns
	fenced atomic.Bool

	// growth measures the scope's log since its snapshot, as far as this
	// handle knows: the entries found at Acquire, then its own writes.
	growth    logGrowth
	compactMu sync.Mutex // one compaction of the scope at a time
}

// logGrowth measures a log since its snapshot, as far as one Store knows,
// for background compaction: written entries add, a compaction subtracts
// what it covered.
type logGrowth struct {
	entries, bytes atomic.Int64
	compacting     atomic.Bool // a background compaction is running
}

var _ store.Handle = (*handle)(nil)

// Apply implements store.Handle.
func (h *handle) Apply(b *store.Batch) error {
	wait, err := h.s.start(b, h)
	if err != nil {
		return err
	}
	return wait()
}

// ApplyAsync implements store.Handle, with the order per log as
// Store.ApplyAsync: behind every batch of the scope's log.
func (h *handle) ApplyAsync(b *store.Batch) (func() error, error) {
	return h.s.start(b, h)
}

// Fenced implements store.Handle. An Acquire elsewhere on the cluster is
// known here once a write (or a compaction) of h has failed with
// store.ErrFenced.
func (h *handle) Fenced() bool { return h.fenced.Load() }

// Release implements store.Handle. It fences h in this process only: the
// owner key stays until the next Acquire (or the lease's end), which is
// harmless, since Acquire takes a scope unconditionally.
func (h *handle) Release() {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	h.fenced.Store(true)
	if h.s.owners[string(h.scope)] == h {
		delete(h.s.owners, string(h.scope))
	}
}

// run is the writer goroutine: it sends the queue's items to etcd as
// transactions, never two at a time that touch the same log, each log's
// items in queue order, until Close has been called, the queue is empty
// and every transaction is answered.
//
// It keeps one transaction in flight, carrying everything queued that
// fits (group commit), and starts another beside it only while every one
// in flight is open (see flight): measured on a three-member etcd, more
// transactions in flight at once, each smaller, cost etcd more than they
// save in waiting (Numbers in the package doc), but a transaction that
// could not take the whole queue, or that is slow for a reason of its own,
// should not hold the other logs up.
func (s *Store) run() {
	defer close(s.writerD)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var group []*item
		var logs []string
		var full bool
		for {
			if s.inFlight < maxInFlight && s.holding == 0 {
				group, logs, full = s.nextGroup()
			}
			if len(group) > 0 || (s.closed && len(s.queue) == 0 && s.inFlight == 0) {
				break
			}
			s.wake.Wait()
		}
		if len(group) == 0 {
			return
		}
		for _, l := range logs {
			s.busy[l] = true
		}
		s.inFlight++
		f := &flight{open: full}
		if !full {
			s.holding++
		}
		lease := s.lease
		s.cond.Broadcast() // ApplyAsync calls waiting for room
		go s.send(group, logs, lease, f)
	}
}

// flight is a transaction in flight. It is open when another transaction
// may start beside it: it was cut short by the limits of one transaction
// (maxEntry, maxHandles) with more queued, or it is writing an entry in
// chunks, or it is being retried. Store.holding counts those not open.
type flight struct {
	open bool // guarded by Store.mu
}

// open marks f open, letting the writer start other transactions.
func (s *Store) open(f *flight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !f.open {
		f.open = true
		s.holding--
		s.wake.Signal()
	}
}

// send commits group, which touches logs, and then frees the logs. If the
// commit failed (not a fence), every item queued behind it that touches
// one of the logs fails too.
func (s *Store) send(group []*item, logs []string, lease clientv3.LeaseID, f *flight) {
	var err error
	if group[0].acq != nil {
		// A failed Acquire (a lapsed lease, etcd unreachable) leaves
		// no batch undone, so what is queued behind it carries on.
		group[0].done <- s.acquire(group[0].acq, lease, f)
	} else {
		err = s.commit(group, f)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		// Nothing queued behind a failed write in the same log may
		// succeed: a nil from a later wait would claim the failed batch
		// durable.
		s.failQueued(logs, err)
	}
	for _, l := range logs {
		delete(s.busy, l)
	}
	s.inFlight--
	if !f.open {
		s.holding--
	}
	s.wake.Signal()
	s.cond.Broadcast() // ApplyAsync calls waiting for room, if failQueued made some
}

// The logs an item touches, as keys of Store.busy: "g" for the global log,
// "s" and the scope for a scope's.
const globalLog = "g"

func scopeLog(scope []byte) string { return "s" + string(scope) }

// nextGroup takes from the queue the next group of items to send in one
// transaction and returns it with the logs it touches, and whether it
// stopped at the limits of one transaction (full); none if every item
// queued waits for a log that a transaction in flight touches. The caller
// holds s.mu.
//
// It goes through the queue in order, taking every item that touches no
// log busy (in flight) or passed over in this pass, so that the items of
// one log are sent in queue order: an Acquire alone, or else batches, up to
// maxEntry bytes and maxHandles handles. A global batch that touches a
// scope's log (itemLogs) is never in one transaction with a batch of that
// scope's handle: their entries would have one revision, and a read could
// not tell which came last.
func (s *Store) nextGroup() (group []*item, logs []string, full bool) {
	blocked := map[string]bool{}
	// inGroup holds, for each log of the group, the handle whose batches
	// it holds (nil for the global log), or alsoGlobal for a scope's log
	// touched by a global batch of the group.
	inGroup := map[string]*handle{}
	size, handles := 0, 0
	kept := s.queue[:0:0]
	for i, it := range s.queue {
		itLogs := it.logs
		ok := true
		switch {
		case it.acq != nil:
			ok = len(group) == 0
		case it.h != nil:
			if h, in := inGroup[itLogs[0]]; in && h != it.h {
				ok = false
			}
		default:
			for _, l := range itLogs[1:] {
				if _, in := inGroup[l]; in {
					ok = false
				}
			}
		}
		for _, l := range itLogs {
			if s.busy[l] || blocked[l] {
				ok = false
			}
		}
		if ok && it.acq == nil {
			if len(group) > 0 && size+len(it.ops) > maxEntry {
				kept = append(kept, s.queue[i:]...)
				full = true
				break
			}
			if it.h != nil {
				if _, in := inGroup[itLogs[0]]; !in && handles == maxHandles {
					kept = append(kept, s.queue[i:]...)
					full = true
					break
				}
			}
		}
		if !ok {
			for _, l := range itLogs {
				blocked[l] = true
			}
			kept = append(kept, it)
			continue
		}
		for j, l := range itLogs {
			if _, in := inGroup[l]; in {
				continue
			}
			logs = append(logs, l)
			switch {
			case it.h != nil:
				inGroup[l] = it.h
				handles++
			case j == 0 || it.acq != nil:
				inGroup[l] = nil
			default:
				inGroup[l] = alsoGlobal
			}
		}
		group = append(group, it)
		size += len(it.ops)
		s.queued -= len(it.ops)
		if it.acq != nil {
			kept = append(kept, s.queue[i+1:]...)
			break
		}
	}
	clear(s.queue[len(kept):])
	s.queue = append(s.queue[:0], kept...)
	return group, logs, full
}

// alsoGlobal marks, in nextGroup, a scope's log touched by a global batch.
var alsoGlobal = &handle{}

// opKeys returns the keys of encoded operations, which encode made and so
// are well formed.
func opKeys(ops []byte) [][]byte {
	var keys [][]byte
	d := decoder{ops}
	for len(d.b) > 0 {
		kind := d.b[0]
		d.b = d.b[1:]
		k, _ := d.bytes()
		keys = append(keys, k)
		if kind == opPut {
			d.bytes()
		}
	}
	return keys
}

// anyUnder reports whether a key of keys starts with scope.
func anyUnder(keys [][]byte, scope []byte) bool {
	return slices.ContainsFunc(keys, func(k []byte) bool { return bytes.HasPrefix(k, scope) })
}

// failQueued fails every item queued now that touches one of logs, or a
// log of an item failed before it (its order is tied to the failed
// write's), with err. The caller holds s.mu.
func (s *Store) failQueued(logs []string, err error) {
	failed := map[string]bool{}
	for _, l := range logs {
		failed[l] = true
	}
	kept := s.queue[:0:0]
	for _, it := range s.queue {
		itLogs := it.logs
		if !slices.ContainsFunc(itLogs, func(l string) bool { return failed[l] }) {
			kept = append(kept, it)
			continue
		}
		for _, l := range itLogs {
			failed[l] = true
		}
		s.queued -= len(it.ops)
		if it.acq != nil {
			it.done <- fmt.Errorf("etcd store: acquire %q: an earlier write failed: %w", it.acq.scope, err)
		} else {
			it.done <- fmt.Errorf("etcd store: an earlier write failed: %w", err)
		}
	}
	clear(s.queue[len(kept):])
	s.queue = append(s.queue[:0], kept...)
}

// itemLogs returns the logs an item touches, its own first. A handle's
// batch touches its scope's log. An Acquire touches its scope's log and
// the global log: a global batch queued before it is sent before it, and so
// before every batch of the new handle. A global batch touches the global
// log and the log of every scope known now (acquired here, or of an item
// queued or in flight) that one of its keys is under: a caller may write
// such a key through the Store (the store.Store contract rules it out only
// for a scope the caller holds), and the order of the two writes must be
// the order they were started in, which only one log's order gives. A
// scope acquired later cannot reorder it: its Acquire waits for it. The
// caller holds s.mu.
func (s *Store) itemLogs(it *item) []string {
	switch {
	case it.acq != nil:
		return []string{scopeLog(it.acq.scope), globalLog}
	case it.h != nil:
		return []string{scopeLog(it.h.scope)}
	}
	logs := []string{globalLog}
	var scopes [][]byte
	seen := map[string]bool{}
	add := func(scope []byte) {
		if !seen[string(scope)] {
			seen[string(scope)] = true
			scopes = append(scopes, scope)
		}
	}
	for _, h := range s.owners {
		add(h.scope)
	}
	for l := range s.busy {
		if l != globalLog {
			add([]byte(l[1:]))
		}
	}
	for _, o := range s.queue {
		if o.h != nil {
			add(o.h.scope)
		} else if o.acq != nil {
			add(o.acq.scope)
		}
	}
	if len(scopes) == 0 {
		return logs
	}
	keys := opKeys(it.ops)
	for _, sc := range scopes {
		if anyUnder(keys, sc) {
			logs = append(logs, scopeLog(sc))
		}
	}
	return logs
}

// acquire puts h's owner key (bound to lease) and registry key, and counts
// the scope's log entries, in one transaction.
func (s *Store) acquire(h *handle, lease clientv3.LeaseID, f *flight) error {
	ctx, cancel := s.reqCtx(s.ctx)
	defer cancel()
	var opts []clientv3.OpOption
	if lease != 0 {
		opts = append(opts, clientv3.WithLease(lease))
	}
	// The owner key's value is this Acquire's own, so that an attempt can
	// tell whether an earlier one landed: then it reads the key's
	// revision instead of putting it again (retry.go).
	owner := s.ownerKey(h.scope)
	value := fmt.Sprintf("%s/%016x", s.writer, s.seq.Add(1))
	count := clientv3.OpGet(h.keys.log, clientv3.WithPrefix(), clientv3.WithCountOnly())
	put := []clientv3.Op{
		clientv3.OpPut(owner, value, opts...),
		clientv3.OpPut(s.scopeP+hexOf(h.scope), ""),
		count,
	}
	resp, _, err := s.txnWithRetry(ctx, f, func(ctx context.Context) clientv3.Txn {
		return s.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(owner), "=", value)).
			Then(clientv3.OpGet(owner), count).
			Else(put...)
	})
	if err != nil {
		return s.writeErr(fmt.Sprintf("acquire %q", h.scope), err)
	}
	if resp.Succeeded { // an earlier attempt put the owner key
		h.rev = resp.Responses[0].GetResponseRange().GetKvs()[0].ModRevision
		h.growth.entries.Store(resp.Responses[1].GetResponseRange().Count)
		return nil
	}
	h.rev = resp.Header.Revision
	h.growth.entries.Store(resp.Responses[2].GetResponseRange().Count)
	return nil
}

// writeErr wraps err, an etcd error of a write, with what, and with
// ErrQuota if etcd refused the write for lack of space.
func (s *Store) writeErr(what string, err error) error {
	if errors.Is(err, rpctypes.ErrNoSpace) {
		return fmt.Errorf("etcd store: %s: %w: %w", what, ErrQuota, err)
	}
	return fmt.Errorf("etcd store: %s: %w", what, err)
}

// commit writes group as one entry per log in one transaction conditioned
// on the owner key of every handle in it. Handles found fenced have their
// items failed with store.ErrFenced and the rest is retried. It returns an
// error only for a failure that is not a fence; then every item of group
// not yet answered has been failed with it.
func (s *Store) commit(group []*item, f *flight) error {
	for len(group) > 0 {
		fenced, err := s.tryCommit(group, f)
		if err != nil {
			for _, it := range group {
				it.done <- err
			}
			return err
		}
		if fenced == nil {
			for _, it := range group {
				it.done <- nil
			}
			return nil
		}
		rest := group[:0:0]
		for _, it := range group {
			if fenced[it.h] {
				it.done <- fmt.Errorf("etcd store: apply under %q: %w", it.h.scope, store.ErrFenced)
			} else {
				rest = append(rest, it)
			}
		}
		group = rest
	}
	return nil
}

// pending is one log's entry of a transaction being built.
type pending struct {
	keys logKeys
	h    *handle // nil for the global log
	ops  []byte
}

// tryCommit sends one transaction for group. It returns the handles whose
// owner key has moved on (and marks them fenced) if the compare failed.
func (s *Store) tryCommit(group []*item, f *flight) (map[*handle]bool, error) {
	var cmps []clientv3.Cmp
	var gets []clientv3.Op
	var hs []*handle
	var entries []*pending
	byHandle := map[*handle]*pending{}
	for _, it := range group {
		p := byHandle[it.h]
		if p == nil {
			p = &pending{keys: s.global, h: it.h}
			if it.h != nil {
				p.keys = it.h.keys
				hs = append(hs, it.h)
				k := s.ownerKey(it.h.scope)
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", it.h.rev))
				gets = append(gets, clientv3.OpGet(k))
			}
			byHandle[it.h] = p
			entries = append(entries, p)
		}
		p.ops = append(p.ops, it.ops...)
	}
	id := fmt.Sprintf("%s/%016x", s.writer, s.seq.Add(1))

	if len(entries) == 1 && len(entries[0].ops) > maxEntry {
		// Only a group of one batch can be over maxEntry: run stops a
		// group before one.
		return s.commitChunked(entries[0], id, cmps, gets, hs, f)
	}
	var puts []clientv3.Op
	var g guard
	for _, p := range entries {
		entry := append([]byte{entryV1, kindInline}, p.ops...)
		puts = append(puts, clientv3.OpPut(p.keys.log+id, string(entry)))
		g.add(p.keys, id)
	}
	ctx, cancel := s.reqCtx(s.ctx)
	defer cancel()
	landed, resp, err := s.sendGuarded(ctx, f, &g, cmps, puts, gets)
	if err != nil {
		return nil, s.writeErr("write", err)
	}
	if !landed {
		return s.mustFence(hs, resp), nil
	}
	s.wrote(entries)
	return nil, nil
}

// guard makes a transaction that puts log entries safe to send again,
// whether or not an earlier attempt landed or will (see retry.go).
type guard struct {
	entries []string // the entry keys the transaction puts
	snaps   []string // the snapshot keys of their logs
	before  int64    // a revision observed before the first attempt was sent
}

func (g *guard) add(keys logKeys, id string) {
	g.entries = append(g.entries, keys.log+id)
	g.snaps = append(g.snaps, keys.snapKey)
}

// extend returns cmps and gets, then each entry key's absence and each
// snapshot key's not having moved since g.before, and reads of both.
func (g *guard) extend(cmps []clientv3.Cmp, gets []clientv3.Op) ([]clientv3.Cmp, []clientv3.Op) {
	cmps = slices.Clone(cmps)
	gets = slices.Clone(gets)
	for _, k := range g.entries {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
		gets = append(gets, clientv3.OpGet(k, clientv3.WithKeysOnly()))
	}
	for _, k := range g.snaps {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "<", g.before+1))
		gets = append(gets, clientv3.OpGet(k, clientv3.WithKeysOnly()))
	}
	return cmps, gets
}

// sendGuarded commits puts under cmps, guarded by g, retrying while the
// outcome is unknown. landed: the entries are committed (by this attempt or
// an earlier one, once: one transaction put them all). Otherwise resp is
// the answer of a transaction whose compare failed on cmps (its Else reads
// begin with gets'), or err says why it failed; it wraps errUnknownOutcome
// if the entries may have landed.
func (s *Store) sendGuarded(ctx context.Context, f *flight, g *guard, cmps []clientv3.Cmp, puts, gets []clientv3.Op) (landed bool, resp *clientv3.TxnResponse, err error) {
	g.before = s.lastRev.Load()
	for {
		resp, unsure, err := s.txnWithRetry(ctx, f, func(ctx context.Context) clientv3.Txn {
			c, e := g.extend(cmps, gets)
			return s.cli.Txn(ctx).If(c...).Then(puts...).Else(e...)
		})
		if err != nil {
			return false, nil, err
		}
		if resp.Succeeded {
			return true, nil, nil
		}
		n := len(gets)
		for i := range g.entries {
			if len(resp.Responses[n+i].GetResponseRange().GetKvs()) > 0 {
				return true, nil, nil
			}
		}
		moved := false
		for i := range g.snaps {
			kvs := resp.Responses[n+len(g.entries)+i].GetResponseRange().GetKvs()
			moved = moved || (len(kvs) > 0 && kvs[0].ModRevision > g.before)
		}
		if !moved {
			return false, resp, nil
		}
		if unsure {
			// Entries that landed may have been compacted away.
			return false, nil, fmt.Errorf("%w: the log was compacted meanwhile", errUnknownOutcome)
		}
		// No attempt can have landed: send it again, past the snapshot.
		g.before = resp.Header.Revision
	}
}

// commitChunked writes p's operations as chunks, then commits the entry
// naming them, conditioned on the owner key (each chunk too, so that a
// fenced writer leaves nothing behind) and on the first chunk still being
// there: the orphan sweep (sweepOrphans) may have taken the chunks of a
// writer too slow to commit them, and then the commit must fail. All of it
// within one Options.Timeout, so that the sweep's bound of twice that is
// safe.
func (s *Store) commitChunked(p *pending, id string, cmps []clientv3.Cmp, gets []clientv3.Op, hs []*handle, f *flight) (map[*handle]bool, error) {
	// Several requests, and a large one: let other logs' transactions go
	// meanwhile.
	s.open(f)
	ctx, cancel := s.reqCtx(s.ctx)
	defer cancel()
	dir := p.keys.chunk + id + "/"
	drop := func() { // best effort
		ctx, cancel := s.reqCtx(s.ctx)
		defer cancel()
		s.cli.Delete(ctx, dir, clientv3.WithPrefix())
	}
	n := 0
	for off := 0; off < len(p.ops); off += maxEntry {
		piece := p.ops[off:min(off+maxEntry, len(p.ops))]
		// A chunk's put is idempotent: it may simply be sent again.
		put := clientv3.OpPut(fmt.Sprintf("%s%06d", dir, n), string(piece))
		resp, _, err := s.txnWithRetry(ctx, f, func(ctx context.Context) clientv3.Txn {
			return s.cli.Txn(ctx).If(cmps...).Then(put).Else(gets...)
		})
		if err != nil {
			drop()
			return nil, s.writeErr("write chunk", err)
		}
		if !resp.Succeeded {
			drop()
			return s.mustFence(hs, resp), nil
		}
		n++
	}
	if s.onChunks != nil {
		s.onChunks(dir)
	}
	entry := binary.AppendUvarint([]byte{entryV1, kindChunked}, uint64(n))
	first := fmt.Sprintf("%s%06d", dir, 0)
	cmps = append(slices.Clone(cmps), clientv3.Compare(clientv3.CreateRevision(first), ">", 0))
	put := clientv3.OpPut(p.keys.log+id, string(entry))
	var g guard
	g.add(p.keys, id)
	landed, resp, err := s.sendGuarded(ctx, f, &g, cmps, []clientv3.Op{put}, gets)
	if err != nil {
		if !errors.Is(err, errUnknownOutcome) {
			drop()
		}
		return nil, s.writeErr("write", err)
	}
	if landed {
		s.wrote([]*pending{p})
		return nil, nil
	}
	drop()
	if f := s.fencedIn(hs, resp); len(f) > 0 {
		return f, nil
	}
	return nil, errors.New("etcd store: write: the chunks of the entry were swept before its commit (the write took over twice Options.Timeout)")
}

// wrote counts committed entries against their logs and starts a background
// compaction of a log that has grown past the thresholds: a scope's by its
// handle, the global log's by this Store (several Stores may then race; one
// wins, the others get ErrCompactConflict and change nothing).
func (s *Store) wrote(entries []*pending) {
	for _, p := range entries {
		g := &s.globalGrowth
		if p.h != nil {
			g = &p.h.growth
		}
		g.entries.Add(1)
		g.bytes.Add(int64(len(p.ops)))
		if !s.overdue(g) || !g.compacting.CompareAndSwap(false, true) {
			continue
		}
		compact := func() error { return s.compactGlobal(s.bgCtx) }
		if h := p.h; h != nil {
			compact = func() error { return s.compactScope(s.bgCtx, h) }
		}
		s.bg.Add(1)
		go s.autoCompact(g, compact, p.keys.log)
	}
}

// overdue reports whether a log has grown past a threshold.
func (s *Store) overdue(g *logGrowth) bool {
	return (s.opts.CompactEntries > 0 && g.entries.Load() >= int64(s.opts.CompactEntries)) ||
		(s.opts.CompactBytes > 0 && g.bytes.Load() >= s.opts.CompactBytes)
}

// autoCompact runs compact until the log is under the thresholds (writes
// during a compaction may have taken it over again), a compaction fails
// (a fenced handle, a lost race, an etcd error), or the Store closes.
func (s *Store) autoCompact(g *logGrowth, compact func() error, log string) {
	defer s.bg.Done()
	for {
		err := compact()
		g.compacting.Store(false)
		if err != nil {
			if s.opts.Logger != nil && s.bgCtx.Err() == nil &&
				!errors.Is(err, store.ErrFenced) && !errors.Is(err, ErrCompactConflict) {
				s.opts.Logger.Warn("etcd store: background compaction failed", "log", log, "err", err)
			}
			return
		}
		// A write that found the flag set started nothing: look again.
		if !s.overdue(g) || !g.compacting.CompareAndSwap(false, true) {
			return
		}
	}
}

// fencedIn reads the owner keys returned by a failed transaction's Else
// branch (in the order of hs) and marks fenced the handles they no longer
// belong to.
func (s *Store) fencedIn(hs []*handle, resp *clientv3.TxnResponse) map[*handle]bool {
	fenced := map[*handle]bool{}
	for i, h := range hs {
		var rev int64
		if kvs := resp.Responses[i].GetResponseRange().GetKvs(); len(kvs) > 0 {
			rev = kvs[0].ModRevision
		}
		if rev != h.rev {
			h.fenced.Store(true)
			fenced[h] = true
		}
	}
	return fenced
}

// mustFence is fencedIn for a transaction whose only compares were the
// owner keys of hs.
func (s *Store) mustFence(hs []*handle, resp *clientv3.TxnResponse) map[*handle]bool {
	fenced := s.fencedIn(hs, resp)
	if len(fenced) == 0 {
		// The compare failed, so some owner key differed: an Else read
		// cannot disagree with the compare of the same transaction.
		panic("etcd store: transaction compare failed but every owner key matched")
	}
	return fenced
}

// deleteAll deletes ops (deletes) in transactions of at most 128.
func (s *Store) deleteAll(ctx context.Context, dels []clientv3.Op) error {
	for len(dels) > 0 {
		n := min(len(dels), 128)
		c, cancel := s.reqCtx(ctx)
		_, err := s.cli.Txn(c).Then(dels[:n]...).Commit()
		cancel()
		if err != nil {
			return err
		}
		dels = dels[n:]
	}
	return nil
}
