package etcd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/btree"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/store"
)

// Snapshot key format: a version byte (2), the uvarint revision of the log
// the snapshot covers (every entry with a ModRevision up to it), the uvarint
// number of chunks, then the snapshot's id: its chunks are <root>/snap/<id>/<n>,
// whose concatenation is the snapshot's records, each an operation byte
// (opPut or opDelete, a tombstone), the uvarint length and bytes of the key,
// for a put the uvarint length and bytes of the value, then the uvarint
// revision of the entry that wrote it. Version 1 (records without revisions)
// belonged to layout 1 and is not read.
const snapshotV2 = 2

func encodeSnapshot(rev int64, n int, id string) []byte {
	b := binary.AppendUvarint([]byte{snapshotV2}, uint64(rev))
	b = binary.AppendUvarint(b, uint64(n))
	return append(b, id...)
}

func decodeSnapshot(b []byte) (rev int64, n uint64, id string, err error) {
	if len(b) < 1 || b[0] != snapshotV2 {
		return 0, 0, "", fmt.Errorf("%w: snapshot key: unknown version", ErrCorrupt)
	}
	d := decoder{b[1:]}
	r, err := d.uvarint()
	if err != nil {
		return 0, 0, "", fmt.Errorf("%w: snapshot key: bad revision", ErrCorrupt)
	}
	if n, err = d.uvarint(); err != nil {
		return 0, 0, "", fmt.Errorf("%w: snapshot key: bad chunk count", ErrCorrupt)
	}
	return int64(r), n, string(d.b), nil
}

// appendRecord appends e in the snapshot's record format.
func appendRecord(b []byte, e kv) []byte {
	op := byte(opPut)
	if e.del {
		op = opDelete
	}
	b = append(b, op)
	b = binary.AppendUvarint(b, uint64(len(e.k)))
	b = append(b, e.k...)
	if !e.del {
		b = binary.AppendUvarint(b, uint64(len(e.v)))
		b = append(b, e.v...)
	}
	return binary.AppendUvarint(b, uint64(e.rev))
}

// loadSnapshot inserts a snapshot's records into tree.
func loadSnapshot(tree *btree.BTreeG[kv], data []byte) error {
	d := decoder{data}
	for len(d.b) > 0 {
		e := kv{del: d.b[0] == opDelete}
		if d.b[0] != opPut && d.b[0] != opDelete {
			return fmt.Errorf("unknown operation %d", d.b[0])
		}
		d.b = d.b[1:]
		key, err := d.bytes()
		if err != nil {
			return err
		}
		e.k = string(key)
		if !e.del {
			if e.v, err = d.bytes(); err != nil {
				return err
			}
		}
		rev, err := d.uvarint()
		if err != nil {
			return err
		}
		e.rev = int64(rev)
		tree.ReplaceOrInsert(e)
	}
	return nil
}

// ErrCompactConflict is returned by Compact when another Store replaced a
// snapshot meanwhile; nothing was changed, and trying again will do.
var ErrCompactConflict = errors.New("etcd store: another compaction replaced the snapshot")

// Compact compacts, now, the global log and the log of every scope whose
// current handle this Store holds: each log's entries up to the current
// revision R are replaced by a snapshot of that log's records as of R (see
// the package doc), and chunks left by writes that never committed are
// swept. Readers and writers carry on throughout. A scope whose handle
// turns out fenced is skipped (its new owner compacts it). If another
// compaction replaced the global snapshot meanwhile, Compact returns
// ErrCompactConflict, after compacting the scopes.
//
// Logs are also compacted in the background past Options.CompactEntries
// and CompactBytes. It does not compact
// etcd's history: that is Options.CompactHistory, or etcd's
// --auto-compaction-retention.
func (s *Store) Compact() error {
	if !s.enterRead() {
		return store.ErrClosed
	}
	defer s.inReads.Done()
	gerr := s.compactGlobal(s.ctx)

	s.mu.Lock()
	var hs []*handle
	for _, h := range s.owners {
		if !h.fenced.Load() {
			hs = append(hs, h)
		}
	}
	s.mu.Unlock()
	for _, h := range hs {
		if err := s.compactScope(s.ctx, h); err != nil && !errors.Is(err, store.ErrFenced) {
			return err
		}
	}
	return gerr
}

// compactGlobal compacts the global log. A tombstone is kept in the
// snapshot only if the key is under a registered scope, whose log may hold
// an earlier put of it.
func (s *Store) compactGlobal(ctx context.Context) error {
	s.globalCompactMu.Lock()
	defer s.globalCompactMu.Unlock()
	entries, size := s.globalGrowth.entries.Load(), s.globalGrowth.bytes.Load()
	states, rev, err := s.read(ctx, func(string) bool { return false })
	if err != nil {
		return err
	}
	s.viewsMu.Lock()
	var scopes []string
	for sc := range s.scopes {
		scopes = append(scopes, sc)
	}
	s.viewsMu.Unlock()
	keep := func(e kv) bool {
		for _, sc := range scopes {
			if strings.HasPrefix(e.k, sc) {
				return true
			}
		}
		return false
	}
	if err := s.compactLog(ctx, s.global, states[0], rev, keep, nil); err != nil {
		return err
	}
	s.globalGrowth.entries.Add(-entries)
	s.globalGrowth.bytes.Add(-size)
	return nil
}

// compactScope compacts h's scope's log, conditioned on h's owner key. A
// tombstone is kept in the snapshot only if the global log has an earlier
// put of the key.
func (s *Store) compactScope(ctx context.Context, h *handle) error {
	h.compactMu.Lock()
	defer h.compactMu.Unlock()
	if h.fenced.Load() {
		return fmt.Errorf("etcd store: compact %q: %w", h.scope, store.ErrFenced)
	}
	entries, size := h.growth.entries.Load(), h.growth.bytes.Load()
	sc := string(h.scope)
	states, rev, err := s.read(ctx, func(x string) bool { return x == sc })
	if err != nil {
		return err
	}
	if len(states) != 2 {
		return fmt.Errorf("etcd store: compact %q: the scope is not in the registry", h.scope)
	}
	global := states[0].tree
	keep := func(e kv) bool {
		g, ok := global.Get(kv{k: e.k})
		return ok && !g.del && g.rev < e.rev
	}
	if err := s.compactLog(ctx, h.keys, states[1], rev, keep, h); err != nil {
		return err
	}
	h.growth.entries.Add(-entries)
	h.growth.bytes.Add(-size)
	return nil
}

// compactLog replaces the entries of the log at keys up to rev with a
// snapshot of st, the log's records at rev, without the tombstones for
// which keep is false. The snapshot key is moved only if it is the one st
// was read with and, for a scope (h not nil), if h's owner key is still
// h's: a fenced owner cannot replace a snapshot. Then the entries it
// covers, the previous snapshot and orphaned chunks are deleted.
func (s *Store) compactLog(ctx context.Context, keys logKeys, st state, rev int64, keep func(kv) bool, h *handle) error {
	var data []byte
	var dropped []kv // tombstones no other log needs
	st.tree.Ascend(func(e kv) bool {
		if !e.del || keep(e) {
			data = appendRecord(data, e)
		} else {
			dropped = append(dropped, e)
		}
		return true
	})
	id := fmt.Sprintf("%s-%016x", s.writer, s.seq.Add(1))
	dir := keys.snap + id + "/"
	drop := func() { // the new snapshot's chunks, best effort
		c, cancel := s.reqCtx(ctx)
		defer cancel()
		s.cli.Delete(c, dir, clientv3.WithPrefix())
	}
	n := 0
	for off := 0; off < len(data) || n == 0; off += maxEntry {
		piece := data[off:min(off+maxEntry, len(data))]
		c, cancel := s.reqCtx(ctx)
		_, err := s.cli.Put(c, fmt.Sprintf("%s%06d", dir, n), string(piece))
		cancel()
		if err != nil {
			drop()
			return s.writeErr("compact: write snapshot", err)
		}
		n++
	}
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(keys.snapKey), "=", st.snapMod),
		// The sweep of another compactor may have taken the chunks of a
		// slow one.
		clientv3.Compare(clientv3.CreateRevision(fmt.Sprintf("%s%06d", dir, 0)), ">", 0),
	}
	var gets []clientv3.Op
	if h != nil {
		owner := s.ownerKey(h.scope)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(owner), "=", h.rev))
		gets = append(gets, clientv3.OpGet(owner))
	}
	c, cancel := s.reqCtx(ctx)
	resp, err := s.cli.Txn(c).If(cmps...).
		Then(clientv3.OpPut(keys.snapKey, string(encodeSnapshot(rev, n, id)))).
		Else(gets...).Commit()
	cancel()
	if err != nil {
		drop()
		return s.writeErr("compact: commit snapshot", err)
	}
	if !resp.Succeeded {
		drop()
		if h != nil && len(s.fencedIn([]*handle{h}, resp)) > 0 {
			return fmt.Errorf("etcd store: compact %q: %w", h.scope, store.ErrFenced)
		}
		return ErrCompactConflict
	}
	snapMod := resp.Header.Revision
	// The view can drop them too (if not written since): what keeps a
	// long-lived owner's view from growing with every key it deletes.
	st.v.mu.Lock()
	for _, e := range dropped {
		if cur, ok := st.v.tree.Get(e); ok && cur.del && cur.rev == e.rev {
			st.v.tree.Delete(e)
		}
	}
	st.v.mu.Unlock()

	// The snapshot is in place: what it covers can go.
	c, cancel = s.reqCtx(ctx)
	defer cancel()
	var dels []clientv3.Op
	if st.snapID != "" {
		dels = append(dels, clientv3.OpDelete(keys.snap+st.snapID+"/", clientv3.WithPrefix()))
	}
	old, err := s.cli.Get(c, keys.log, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithMaxModRev(rev), clientv3.WithRev(snapMod))
	if err != nil {
		return fmt.Errorf("etcd store: compact: list the log: %w", err)
	}
	for _, e := range old.Kvs {
		dels = append(dels, clientv3.OpDelete(string(e.Key)),
			clientv3.OpDelete(keys.chunk+string(e.Key[len(keys.log):])+"/", clientv3.WithPrefix()))
	}
	if err := s.deleteAll(ctx, dels); err != nil {
		return fmt.Errorf("etcd store: compact: delete log entries: %w", err)
	}
	if err := s.sweepOrphans(ctx, keys, id, snapMod); err != nil {
		return fmt.Errorf("etcd store: compact: sweep: %w", err)
	}
	return nil
}

// sweepOrphans deletes what a crash or a failed request left in the log at
// keys, once it is older than twice Options.Timeout (created at a revision
// observed that long ago), so that no writer still at work loses it:
//
//   - the chunks of an entry that was never committed (each delete
//     conditioned on the entry's key not existing; a commit checks its
//     first chunk still exists, so it fails rather than commit a swept
//     entry);
//   - snapshots other than the current one, id (the deletes conditioned on
//     the snapshot key's ModRevision still being snapMod, as this
//     compaction set it; a snapshot's commit checks its first chunk too).
func (s *Store) sweepOrphans(ctx context.Context, keys logKeys, id string, snapMod int64) error {
	safe := s.clock.before(time.Now().Add(-2 * s.opts.Timeout))
	if safe == 0 {
		return nil
	}
	c, cancel := s.reqCtx(ctx)
	defer cancel()
	resp, err := s.cli.Txn(c).Then(
		clientv3.OpGet(keys.chunk, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMaxCreateRev(safe)),
		clientv3.OpGet(keys.log, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return err
	}
	committed := map[string]bool{}
	for _, e := range resp.Responses[1].GetResponseRange().GetKvs() {
		committed[string(e.Key[len(keys.log):])] = true
	}
	for _, e := range dirs(resp.Responses[0].GetResponseRange().GetKvs(), len(keys.chunk)) {
		if committed[e] {
			continue
		}
		entry := keys.log + e
		c, cancel := s.reqCtx(ctx)
		_, err := s.cli.Txn(c).
			If(clientv3.Compare(clientv3.CreateRevision(entry), "=", 0)).
			Then(clientv3.OpDelete(keys.chunk+e+"/", clientv3.WithPrefix())).
			Commit()
		cancel()
		if err != nil {
			return err
		}
	}
	snaps, err := s.cli.Get(c, keys.snap, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMaxCreateRev(safe))
	if err != nil {
		return err
	}
	var dels []clientv3.Op
	for _, old := range dirs(snaps.Kvs, len(keys.snap)) {
		if old != id {
			dels = append(dels, clientv3.OpDelete(keys.snap+old+"/", clientv3.WithPrefix()))
		}
	}
	for len(dels) > 0 {
		n := min(len(dels), 128)
		c, cancel := s.reqCtx(ctx)
		_, err := s.cli.Txn(c).
			If(clientv3.Compare(clientv3.ModRevision(keys.snapKey), "=", snapMod)).
			Then(dels[:n]...).Commit()
		cancel()
		if err != nil {
			return err
		}
		dels = dels[n:]
	}
	return nil
}

// dirs returns the distinct directories of chunk keys (the key after its
// first skip bytes, up to its last slash), in order.
func dirs[T interface{ GetKey() []byte }](kvs []T, skip int) []string {
	var out []string
	for _, e := range kvs {
		k := string(e.GetKey()[skip:])
		i := strings.LastIndexByte(k, '/')
		if i < 0 {
			continue
		}
		if d := k[:i]; len(out) == 0 || out[len(out)-1] != d {
			out = append(out, d)
		}
	}
	return out
}
