package etcd

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/btree"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/store"
)

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// view is the materialized records of one log, as of revision rev.
type view struct {
	mu    sync.Mutex
	keys  logKeys
	scope []byte // nil for the global log
	tree  *btree.BTreeG[kv]
	rev   int64 // the revision tree reflects (0: nothing read yet)
	// snapMod and snapID are the log's snapshot key's ModRevision (0:
	// none) and its snapshot's id as of rev, for compaction's compare.
	snapMod int64
	snapID  string
}

func newView(keys logKeys, scope []byte) *view {
	return &view{keys: keys, scope: scope, tree: newTree()}
}

// state is a view's records at the revision of one read: a copy-on-write
// clone, safe to use without the view's lock.
type state struct {
	v       *view
	tree    *btree.BTreeG[kv]
	snapMod int64
	snapID  string
}

func (v *view) state() state {
	return state{v: v, tree: v.tree.Clone(), snapMod: v.snapMod, snapID: v.snapID}
}

// errRetry asks read to start again at a newer revision.
var errRetry = errors.New("etcd store: retry at a newer revision")

// read catches up the global view and the views of the registered scopes
// for which want is true to one current revision R, read linearizably
// (which it returns), and returns their states: the global one first, then
// the scopes' in byte order. So the states are a cut of every log at R: they
// hold every batch committed before read began, and no batch without the
// batches committed before it.
//
// A view of a scope already past R (another read moved it on meanwhile)
// cannot go back, and a read at R that etcd has compacted away meanwhile
// cannot be done: read then starts again at a newer revision.
func (s *Store) read(ctx context.Context, want func(scope string) bool) ([]state, int64, error) {
	for {
		states, rev, err := s.tryRead(ctx, want)
		if errors.Is(err, errRetry) || errors.Is(err, rpctypes.ErrCompacted) {
			continue
		}
		return states, rev, err
	}
}

func (s *Store) tryRead(ctx context.Context, want func(scope string) bool) ([]state, int64, error) {
	g := s.globalView
	g.mu.Lock()
	// One linearizable transaction chooses the revision and reads what is
	// new in the registry and in the global log.
	s.viewsMu.Lock()
	regFrom := s.regRev
	s.viewsMu.Unlock()
	c, cancel := s.reqCtx(ctx)
	reads := append([]clientv3.Op{
		clientv3.OpGet(s.scopeP, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithMinModRev(regFrom+1)),
	}, s.logReads(g, 0)...)
	resp, err := s.readWithRetry(c, func(c context.Context) clientv3.Txn { return s.cli.Txn(c).Then(reads...) })
	cancel()
	if err != nil {
		g.mu.Unlock()
		return nil, 0, fmt.Errorf("etcd store: read: %w", err)
	}
	rev := resp.Header.Revision
	if err := s.addScopes(resp.Responses[0].GetResponseRange().GetKvs(), rev); err != nil {
		g.mu.Unlock()
		return nil, 0, err
	}
	if s.onRev != nil {
		s.onRev(rev)
	}
	if err := s.catchUpFrom(ctx, g, rev, resp.Responses[1:]); err != nil {
		g.mu.Unlock()
		return nil, 0, err
	}
	states := []state{g.state()}
	g.mu.Unlock()

	var views []*view
	s.viewsMu.Lock()
	for sc := range s.scopes {
		if !want(sc) {
			continue
		}
		v := s.views[sc]
		if v == nil {
			v = newView(s.scopeKeys([]byte(sc)), []byte(sc))
			s.views[sc] = v
		}
		views = append(views, v)
	}
	s.viewsMu.Unlock()
	slices.SortFunc(views, func(a, b *view) int { return bytes.Compare(a.scope, b.scope) })
	locked := 0
	defer func() {
		for _, v := range views[:locked] {
			v.mu.Unlock()
		}
	}()
	for _, v := range views {
		v.mu.Lock()
		locked++
		if v.rev > rev {
			return nil, 0, errRetry
		}
		if err := s.catchUp(ctx, v, rev); err != nil {
			return nil, 0, err
		}
	}
	for _, v := range views {
		states = append(states, v.state())
	}
	return states, rev, nil
}

// addScopes adds registry keys read at rev to s.scopes.
func (s *Store) addScopes(kvs []*mvccpb.KeyValue, rev int64) error {
	s.viewsMu.Lock()
	defer s.viewsMu.Unlock()
	for _, kv := range kvs {
		sc, err := hex.DecodeString(string(kv.Key[len(s.scopeP):]))
		if err != nil {
			return fmt.Errorf("%w: registry key %q", ErrCorrupt, kv.Key)
		}
		s.scopes[string(sc)] = true
	}
	s.regRev = max(s.regRev, rev)
	s.clock.observe(rev)
	s.observeRev(rev)
	return nil
}

// logReads returns the reads of v's snapshot key and of its log entries
// newer than v.rev, at rev (0: the current revision).
//
// The entries come in one response, not in pages: etcd applies a revision
// filter (and a sort other than by key) to the whole range before a limit,
// so each page would cost etcd a walk of the whole log. The log since the
// snapshot is bounded by the compaction thresholds (Options.CompactBytes).
func (s *Store) logReads(v *view, rev int64) []clientv3.Op {
	return []clientv3.Op{
		clientv3.OpGet(v.keys.snapKey, clientv3.WithRev(rev)),
		clientv3.OpGet(v.keys.log, clientv3.WithPrefix(), clientv3.WithRev(rev),
			clientv3.WithMinModRev(v.rev+1),
			clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend)),
	}
}

// catchUp brings v to revision rev: it reads v's snapshot key and log
// entries newer than v.rev at rev, rebuilding v from the snapshot first if
// the snapshot is newer than v. The caller holds v.mu. On error v is
// unchanged, or has replayed some entries again without moving v.rev (a
// replay is idempotent).
func (s *Store) catchUp(ctx context.Context, v *view, rev int64) error {
	if v.rev >= rev {
		return nil
	}
	c, cancel := s.reqCtx(ctx)
	defer cancel()
	reads := s.logReads(v, rev)
	resp, err := s.readWithRetry(c, func(c context.Context) clientv3.Txn { return s.cli.Txn(c).Then(reads...) })
	if err != nil {
		return fmt.Errorf("etcd store: read log %s: %w", v.keys.log, err)
	}
	return s.catchUpFrom(ctx, v, rev, resp.Responses)
}

// catchUpFrom is catchUp with the reads of logReads(v, rev) done: first.
func (s *Store) catchUpFrom(ctx context.Context, v *view, rev int64, first []*pb.ResponseOp) error {
	if v.rev >= rev {
		return nil
	}
	tree, from := v.tree, v.rev
	snapMod, snapID := int64(0), ""
	if kvs := first[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		snapRev, n, id, err := decodeSnapshot(kvs[0].Value)
		if err != nil {
			return err
		}
		snapMod, snapID = kvs[0].ModRevision, id
		if snapRev > v.rev {
			data, err := s.readChunks(ctx, v.keys.snap+id+"/", n, rev)
			if err != nil {
				return err
			}
			tree = newTree()
			if err := loadSnapshot(tree, data); err != nil {
				return fmt.Errorf("%w: snapshot %s%s: %w", ErrCorrupt, v.keys.snap, id, err)
			}
			from = snapRev
		}
	}
	for _, e := range first[1].GetResponseRange().GetKvs() {
		if e.ModRevision <= from { // in the snapshot
			continue
		}
		if s.onEntry != nil {
			s.onEntry(string(e.Key))
		}
		ops, err := s.entryOps(ctx, v.keys, e, rev)
		if err != nil {
			return err
		}
		if err := replay(tree, ops, e.ModRevision); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrCorrupt, e.Key, err)
		}
	}
	v.tree, v.rev, v.snapMod, v.snapID = tree, rev, snapMod, snapID
	return nil
}

// readChunks returns the concatenation of the n chunks under dir, read at
// rev a few at a time.
func (s *Store) readChunks(ctx context.Context, dir string, n uint64, rev int64) ([]byte, error) {
	data := make([]byte, 0, min(n, 1<<10)*maxEntry) // chunks but the last are maxEntry long
	got := uint64(0)
	from, end := dir, clientv3.GetPrefixRangeEnd(dir)
	for got < n {
		c, cancel := s.reqCtx(ctx)
		resp, err := s.cli.Get(c, from, clientv3.WithRange(end), clientv3.WithLimit(chunkPage), clientv3.WithRev(rev))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("etcd store: read chunks %s: %w", dir, err)
		}
		for _, c := range resp.Kvs { // in key order: the chunk number
			data = append(data, c.Value...)
		}
		got += uint64(len(resp.Kvs))
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if got != n {
		return nil, fmt.Errorf("%w: %s: %d chunks, want %d", ErrCorrupt, dir, got, n)
	}
	return data, nil
}

// entryOps returns the encoded operations of log entry e, reading its
// chunks at rev if it has any.
func (s *Store) entryOps(ctx context.Context, keys logKeys, e *mvccpb.KeyValue, rev int64) ([]byte, error) {
	entry := e.Value
	if len(entry) < 2 || entry[0] != entryV1 {
		return nil, fmt.Errorf("%w: %s: unknown version", ErrCorrupt, e.Key)
	}
	switch entry[1] {
	case kindInline:
		return entry[2:], nil
	case kindChunked:
		n, k := binary.Uvarint(entry[2:])
		if k <= 0 {
			return nil, fmt.Errorf("%w: %s: bad chunk count", ErrCorrupt, e.Key)
		}
		return s.readChunks(ctx, keys.chunk+string(e.Key[len(keys.log):])+"/", n, rev)
	}
	return nil, fmt.Errorf("%w: %s: unknown kind %d", ErrCorrupt, e.Key, entry[1])
}

// decoder reads the uvarint-length-prefixed fields of encoded operations.
type decoder struct{ b []byte }

func (d *decoder) bytes() ([]byte, error) {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		return nil, errors.New("bad length")
	}
	b := d.b[k : k+int(n)]
	d.b = d.b[k+int(n):]
	return b, nil
}

func (d *decoder) uvarint() (uint64, error) {
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		return 0, errors.New("bad number")
	}
	d.b = d.b[k:]
	return n, nil
}

// replay applies the encoded operations of the entry at rev to tree. A
// delete leaves a tombstone, which hides a put of the key at an earlier
// revision in another log.
func replay(tree *btree.BTreeG[kv], ops []byte, rev int64) error {
	d := decoder{ops}
	for len(d.b) > 0 {
		kind := d.b[0]
		d.b = d.b[1:]
		key, err := d.bytes()
		if err != nil {
			return err
		}
		switch kind {
		case opPut:
			val, err := d.bytes()
			if err != nil {
				return err
			}
			tree.ReplaceOrInsert(kv{k: string(key), v: val, rev: rev})
		case opDelete:
			tree.ReplaceOrInsert(kv{k: string(key), rev: rev, del: true})
		default:
			return fmt.Errorf("unknown operation %d", kind)
		}
	}
	return nil
}

// overlaps reports whether scope and prefix overlap: one is a prefix of the
// other, so that scope's log may hold keys under prefix.
func overlaps(scope, prefix string) bool {
	return strings.HasPrefix(scope, prefix) || strings.HasPrefix(prefix, scope)
}

// Get implements store.Store. It reads the global log and the logs of the
// scopes that are prefixes of key.
func (s *Store) Get(key []byte) ([]byte, error) {
	if !s.enterRead() {
		return nil, store.ErrClosed
	}
	defer s.inReads.Done()
	k := string(key)
	states, _, err := s.read(s.ctx, func(sc string) bool { return strings.HasPrefix(k, sc) })
	if err != nil {
		return nil, err
	}
	var best kv
	found := false
	for _, st := range states {
		if e, ok := st.tree.Get(kv{k: k}); ok && (!found || e.rev > best.rev) {
			best, found = e, true
		}
	}
	if !found || best.del {
		return nil, store.ErrNotFound
	}
	return bytes.Clone(best.v), nil
}

// Scan implements store.Store over clones of the views, so fn may call Get
// and Apply. It reads the global log and the logs of the scopes that
// overlap prefix.
func (s *Store) Scan(prefix []byte, fn func(key, value []byte) error) error {
	if !s.enterRead() {
		return store.ErrClosed
	}
	defer s.inReads.Done()
	p := string(prefix)
	states, _, err := s.read(s.ctx, func(sc string) bool { return overlaps(sc, p) })
	if err != nil {
		return err
	}
	var trees []*btree.BTreeG[kv]
	for _, st := range states {
		if hasPrefix(st.tree, p) {
			trees = append(trees, st.tree)
		}
	}
	if len(trees) == 1 { // the usual case: no merge
		var ferr error
		ascendPrefix(trees[0], p, func(e kv) bool {
			if e.del {
				return true
			}
			ferr = fn([]byte(e.k), e.v)
			return ferr == nil
		})
		return ferr
	}
	var merged []kv
	for _, t := range trees {
		var run []kv
		ascendPrefix(t, p, func(e kv) bool { run = append(run, e); return true })
		merged = mergeRuns(merged, run)
	}
	for _, e := range merged {
		if e.del {
			continue
		}
		if err := fn([]byte(e.k), e.v); err != nil {
			return err
		}
	}
	return nil
}

func ascendPrefix(t *btree.BTreeG[kv], p string, fn func(kv) bool) {
	t.AscendGreaterOrEqual(kv{k: p}, func(e kv) bool {
		if !strings.HasPrefix(e.k, p) {
			return false
		}
		return fn(e)
	})
}

func hasPrefix(t *btree.BTreeG[kv], p string) bool {
	found := false
	ascendPrefix(t, p, func(kv) bool { found = true; return false })
	return found
}

// mergeRuns merges two runs sorted by key; of two records of one key, the
// later revision's stays.
func mergeRuns(a, b []kv) []kv {
	out := make([]kv, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0].k < b[0].k:
			out, a = append(out, a[0]), a[1:]
		case a[0].k > b[0].k:
			out, b = append(out, b[0]), b[1:]
		default:
			if a[0].rev >= b[0].rev {
				out = append(out, a[0])
			} else {
				out = append(out, b[0])
			}
			a, b = a[1:], b[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}
