// Package etcd is the cluster store.Store backend: Cohort's records kept in an
// etcd cluster under one key prefix, written as logs of batches, one log per
// write scope (coordinator shard) and one for everything else.
//
// Its job is to make store.Store's promises true on etcd, whose limits (128
// operations and 1.5 MiB per request) are far smaller than the batches the
// coordinator must apply atomically (a KIP-848 target assignment for 1,000
// members, a SyncGroup of 10,000 partitions), and to make a shard's load cost
// what the shard holds, not what the cluster holds. It must not interpret
// keys or values, acknowledge a write before etcd has committed it, or expose
// etcd types through the store.Store methods; callers depend on store.Store.
//
// # Layout
//
// Under Options.Prefix (P), with S the hex encoding of a scope:
//
//	P/g/log/<writer>/<seq>        the global log: batches of Store.Apply
//	P/s/S/log/<writer>/<seq>      scope S's log: batches of its handles
//	<log root>/chunk/<writer>/<seq>/<n>
//	                              the pieces of an entry too large for a request
//	<log root>/snapshot           the log's current snapshot: its id, chunk
//	                              count and the revision it covers
//	<log root>/snap/<id>/<n>      a snapshot's chunks
//	P/scope/S                     registry: scope S has (or may have) a log
//	P/owner/S                     scope S's owner key, put by Acquire
//
// where the log root is P/g or P/s/S. This is layout 2; layout 1 (one log
// for the whole prefix) was never deployed and is not read.
//
// Each log entry holds the encoded operations of the batches of one log
// group-committed in one etcd transaction; one transaction carries one entry
// per log it touches, so group commit spans scopes. Entries are put once and
// never changed, so an entry's ModRevision is its transaction's revision, and
// merging logs by revision gives the order in which batches took effect (a
// transaction never carries a global batch and a handle's batch that write
// the same key, whose order its one revision could not tell).
//
// The records themselves are not etcd keys. Each Store keeps a materialized
// view (a B-tree of key → value and the revision that wrote it) per log it
// has read: the global one and one per scope, each caught up incrementally.
// Get(key) and Scan(prefix) catch up the global view and the views of the
// scopes that overlap the key or prefix (one is a prefix of the other; the
// registry says which scopes exist) to one current revision R, read
// linearizably, so they see every Apply that returned before they began, and
// a cut of all logs at R. A record written to two logs (a key under a scope
// written through the Store too, which the store.Store contract rules out)
// resolves to the later revision; tombstones are kept so that this holds
// across logs. Loading a shard (Acquire, then Scan of its scope) thus reads
// the shard's log and the global log, not the other shards'. Forget drops a
// scope's view when the node no longer serves the shard; a Scan ahead of a
// planned move leaves the view cached, so the real load reads only the delta.
//
// Why a log and not one etcd key per record: a batch is one entry, written
// in one transaction, so it is atomic to every reader whatever its size and
// whatever its number of records. An entry over 1 MiB is first written as
// chunks (plain puts, invisible to readers) and then committed by a small
// entry naming them, in a transaction that also checks the chunks are still
// there: a loader sees all of it or none. One key per record would need a
// commit-marker scheme for batches over 128 records anyway, and costs one
// etcd operation per record.
//
// # Writes and fencing
//
// One writer goroutine per Store sends the queue to etcd as transactions:
// each takes every batch queued (up to 1 MiB of operations and 40 handles)
// and commits them as one entry per log (group commit). No two transactions
// in flight touch the same log, and each log's batches are sent in the
// order they were started, which keeps each log's order without any
// sequencing in etcd. A transaction fails only what is queued behind it in
// its own logs. A global batch with a key under a scope known to the Store
// counts as a batch of that scope's log too, and an Acquire as one of the
// global log, so that such writes keep their start order.
//
// Normally one transaction is in flight: another goes beside it only if it
// is open, that is cut short by those limits with more queued, writing an
// entry in chunks, or being retried. More transactions at once, each
// smaller, were measured to cost a three-member etcd more than they save
// (Numbers): it pays per transaction, and on this machine is CPU-bound.
//
// Ordering is therefore per log, which is narrower than store.Pipeliner
// says: a batch of one log (a scope's, or the global log's) takes effect
// after every batch of the same log started before it, and a nil from its
// wait means those are durable; a batch of another log started earlier may
// still be in flight then (only while a transaction is open), or fail. The
// callers write one shard through one handle and wait in order
// (coordinator.Runtime), and Store.Apply waits for its batch; neither reads
// durability across logs from one wait.
//
// Acquire(scope) is queued like a batch and puts the scope's owner key
// (bound to the current lease: Options.Lease, then SetLease) and its registry
// key. A handle's batches are committed by a transaction that compares the
// owner key's ModRevision with the revision of the handle's Acquire: a later
// Acquire anywhere on the cluster, or the expiry or revocation of the lease
// (which deletes the owner key), fails the compare, and the handle's batches
// fail with store.ErrFenced, changing nothing. Acquire through the same Store
// fences the old handle at once, after the batches it already queued, which
// still land.
//
// A transaction whose outcome is unknown (the connection to a member broke,
// a leader changed, an attempt timed out) is sent again, within
// Options.Timeout overall, and every attempt is conditioned so that only
// one can land, even one that reaches etcd late: each requires its entry
// keys to be absent and its logs' snapshot keys not to have moved since
// before the first attempt, and reads them back when the compare fails;
// an Acquire's owner key holds a value of its own, which each attempt puts
// only if it is not there yet (retry.go). Reads, also transactions, are
// sent again too. So losing one etcd member of three fails no write and no
// read. A retry that cannot tell (a snapshot moved meanwhile) fails; a
// fence, a full database and Close are not retried.
//
// # Snapshots and housekeeping
//
// A scope's log is compacted by its owner: when the log since the snapshot
// passes Options.CompactEntries or CompactBytes, the handle's Store writes,
// in the background, a snapshot of that scope's records as of a revision R,
// moves the scope's snapshot key to it in a transaction conditioned on the
// owner key (a fenced owner cannot replace a snapshot) and on the snapshot
// key being unchanged, then deletes the entries up to R. Writers carry on
// meanwhile. The global log is compacted likewise by a Store whose writes
// took it past the thresholds (without an owner key: of racing compactions
// one wins, the others change nothing). Compact does the same at once for
// the global log and every scope this Store owns. Compaction also sweeps chunks that no entry
// committed (a crash between an entry's chunks and its commit) once they are
// older than twice Options.Timeout, and old snapshots' chunks.
//
// A housekeeping goroutine checks etcd's database size against its quota
// (Usage, Options.OnUsage, a warning in Options.Logger above 80 %) and, with
// Options.CompactHistory, compacts etcd's history of deleted keys at a
// revision at least Options.HistoryRetention old. A read at a revision etcd
// has compacted meanwhile starts again at a current one. Writes refused by
// etcd's NOSPACE alarm fail with ErrQuota.
//
// # Numbers
//
// Measured with go test -bench on one in-process member (ext4, 2 cores
// shared with other work: runs of the same code vary by up to ±40 %, so
// these are ranges of several runs). Loading a scope of 1,000,000
// offset-sized records (38-byte keys, 30-byte values) into a new Store,
// Acquire then Scan (BenchmarkLoadScope): 0.8-1.2 s from its log (about
// 1,250 entries: 10,000 pipelined 100-record batches, group-committed),
// 0.6-1.2 s from its snapshot; 0.85-1.6 million records/s. The 200,000
// records of BenchmarkLoad: 0.13-0.23 s from either. Writes, 10-record
// batches of 100-byte values, records/s:
//
//	writers   Store.Apply       16 shard handles   one key per record
//	      1   12,000-20,000     14,000-17,000      15,000
//	     16   74,000-89,000     74,000-81,000      42,000-61,000
//	     64   192,000-364,000   170,000-224,000    40,000-69,000
//
// and one shard writer pipelining 100-record batches 16 deep (the
// coordinator runtime's pattern): 490,000-530,000. Layout 1 (one log),
// measured in the same session, was within the same noise (Apply 64
// writers 240,000-315,000, handles 135,000-325,000): a transaction now puts
// one entry per scope instead of one, at no measurable cost. Per-log
// ordering with guarded retries (this writer) against the single
// transaction of before, alternating runs in two sessions of different
// load: within the noise (Apply 64 writers 234,000-302,000 against
// 238,000-326,000, handles 186,000-264,000 against 193,000-283,000,
// pipelined 357,000-515,000 against 300,000-536,000; not counted, a run of
// handles at 136,000 that overlapped a test run).
//
// On three etcd member processes (BenchmarkClusterHandleApply: three
// Stores, as three nodes, 16 shard handles between them, 10-record
// batches), where the three members take most of the 2 cores, the same
// runs: 64 writers 52,000-87,000 records/s, Apply p50 6.6-11.4 ms and p99
// 17-27 ms (before: 44,000-87,000, 6.8-13.4 ms, 16-34 ms); 16 writers
// 17,000-27,000 (before: 17,000-25,000). Letting a Store keep several
// transactions in flight whenever their logs differ made it worse,
// measured in alternating runs: 64 writers 74,000 records/s with one in
// flight, 50,000-57,000 with up to two, 33,000-39,000 with up to eight
// (p50 8, 10-12 and 15-18 ms). Sending to the leader only changed nothing
// (66,000-77,000 either way), nor did 4× smaller values much (+20 %): etcd
// pays per transaction, so the writer sends as few as it can. The cluster
// as a whole (go test ./bench -bench ClusterCommit, 64 committers, three
// nodes over three etcd processes), alternating runs: 48,000-75,000
// offsets/s, p50 7.9-12.4 ms, p99 18-30 ms, against 47,000-72,000,
// 8.1-12.6 ms and 19-29 ms before this writer; the goal is 100,000.
//
// # Not done
//
// A view keeps the tombstones of the deletes it replays until a compaction of its log drops
// them: a scope's view that this Store neither owns nor forgets, or the
// global view between Compacts, grows with deleted keys.
package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/store"
)

// Options configures Open.
type Options struct {
	// Client is the etcd client to use. Required. The Store does not close
	// it.
	Client *clientv3.Client

	// Prefix is the etcd key prefix under which everything is kept, one per
	// Cohort cluster (for example "/cohort/prod"). Required; it must not be
	// a prefix of another Store's Prefix with other data.
	Prefix string

	// Lease, if not zero, binds every owner key put by Acquire to this etcd
	// lease until SetLease changes it: when it expires or is revoked, the
	// owner keys go and the handles acquired under it fail with
	// store.ErrFenced. Cluster mode passes the node's lease. Zero: owner
	// keys live until the next Acquire.
	Lease clientv3.LeaseID

	// Timeout bounds each etcd request, and the requests of an entry
	// written in chunks as a whole. Default 5 s. A write that times out
	// fails with an error; it may or may not have been committed. Chunks of
	// an uncommitted entry are swept once older than twice Timeout.
	Timeout time.Duration

	// CompactEntries and CompactBytes are the length of a log since its
	// snapshot (in entries, and in bytes of entries) beyond which it is
	// compacted in the background: a scope's by its owner, the global log
	// by a Store that wrote to it. Defaults 10,000 entries and 64 MiB;
	// negative: never on that count. What counts is what the Store knows:
	// its own writes, and for a scope the entries found at Acquire (not
	// their bytes).
	CompactEntries int
	CompactBytes   int64

	// CompactHistory turns on the compaction of etcd's history (the
	// revisions etcd keeps of deleted and overwritten keys, which grow with
	// every log entry that a snapshot replaces) at a revision observed at
	// least HistoryRetention ago (default 5 min). Off by default: an etcd
	// run with --auto-compaction-retention does it already. It compacts the
	// whole etcd keyspace, not just Prefix.
	CompactHistory   bool
	HistoryRetention time.Duration

	// QuotaBytes is etcd's backend quota (--quota-backend-bytes), against
	// which Usage and the warning compare the database size. Default: what
	// etcd reports, or etcd's default of 2 GiB.
	QuotaBytes int64

	// CheckInterval is how often the database size is checked and history
	// compaction considered. Default 30 s.
	CheckInterval time.Duration

	// OnUsage, if set, is called after each check with the database size
	// (the largest of the endpoints') and the quota, in bytes: a hook for a
	// metric. It must not block.
	OnUsage func(used, quota int64)

	// Logger, if set, receives warnings: the database above 80 % of its
	// quota, a background compaction that failed. Default: nothing logged.
	Logger *slog.Logger
}

const (
	// maxEntry is the largest entry written inline, and the size of each
	// chunk of a larger one: etcd refuses requests over 1.5 MiB, and the
	// keys, compares and framing need room.
	maxEntry = 1 << 20
	// maxHandles bounds the handles in one transaction: etcd allows 128
	// compares and 128 operations, and a transaction of n handles and the
	// global log has n compares of owner keys and n+1 each of entry keys
	// and of snapshot keys (retry.go), and as many reads in its Else.
	maxHandles = 40
	// maxQueued bounds the bytes of batches queued for the writer. Beyond
	// it ApplyAsync blocks until the writer catches up.
	maxQueued = 64 << 20
	// defaultQuota is etcd's default --quota-backend-bytes.
	defaultQuota = 2 << 30
	// maxInFlight bounds the transactions a Store has in flight at once
	// (no two touching the same log; more than one only beside open ones:
	// see Store.run).
	maxInFlight = 8
	// chunkPage is the number of chunks read per request: a snapshot of a
	// large scope is several bounded responses, not one.
	chunkPage = 8
)

// ErrCorrupt is returned (wrapped) by Get and Scan when a log entry or a
// snapshot cannot be decoded. It must stop start-up.
var ErrCorrupt = errors.New("etcd store: corrupt log entry")

// ErrQuota is returned (wrapped) by writes that etcd refused because its
// database is full (the NOSPACE alarm is raised).
var ErrQuota = errors.New("etcd store: etcd's database is over its quota (NOSPACE alarm) and refuses writes: " +
	"compact etcd's history (etcdctl compact) and defragment it (etcdctl defrag), " +
	"then disarm the alarm (etcdctl alarm disarm); or raise etcd's --quota-backend-bytes")

// Store is a store.Store on etcd. It is safe for concurrent use.
type Store struct {
	cli      *clientv3.Client
	opts     Options
	prefix   string
	global   logKeys
	scopeP   string // P/scope/: the registry
	ownerP   string // P/owner/
	writer   string // this Store's id in log keys
	seq      atomic.Uint64
	ctx      context.Context // cancelled by Close once everything else stopped
	cancel   context.CancelFunc
	bgCtx    context.Context // cancelled by Close to stop background work
	bgCancel context.CancelFunc
	writerD  chan struct{}  // closed when the writer goroutine exits
	bg       sync.WaitGroup // background compactions and housekeeping

	// mu guards closed, the queue, lease and every handle's fenced flag,
	// so that a write checked against the fence is queued before a
	// fencing Acquire's owner put.
	mu     sync.Mutex
	cond   *sync.Cond // signalled when the queue shrinks or closed changes: ApplyAsync waits for room
	wake   *sync.Cond // signalled when the writer may have a group to send
	closed bool
	queue  []*item
	queued int             // bytes of write items in queue
	busy   map[string]bool // the logs of the transactions in flight (see scopeLog)
	// inFlight is the number of transactions in flight, holding the
	// number of them not open (see flight).
	inFlight, holding int
	owners            map[string]*handle // the current handle of each scope acquired here
	lease             clientv3.LeaseID
	inReads           sync.WaitGroup // Get, Scan and Compact in flight; Close waits for them

	// viewsMu guards views, scopes and regRev. Lock order: a view's mu
	// (global first, then scopes in byte order), then viewsMu.
	viewsMu    sync.Mutex
	globalView *view
	views      map[string]*view // cached views of scopes, by scope
	scopes     map[string]bool  // the registry as of regRev
	regRev     int64

	clock revClock

	globalCompactMu sync.Mutex // one compaction of the global log at a time
	// globalGrowth measures the global log since its snapshot by this
	// Store's writes.
	globalGrowth logGrowth

	// lastRev is the newest revision seen in a response: a write sent
	// after it was seen lands, if it does, at a later revision.
	lastRev atomic.Int64

	used atomic.Int64 // the database size at the last check
	// quota is the quota at the last check (Options.QuotaBytes when set).
	quota atomic.Int64

	// Test hooks, set before use: onEntry sees the key of every log entry
	// read; onRev is called once a read has chosen its revision; onChunks
	// once an entry's chunks are written, before its commit, with their
	// directory.
	onEntry  func(key string)
	onRev    func(rev int64)
	onChunks func(dir string)
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Pipeliner = (*Store)(nil)
)

// Open returns a Store over the records under opts.Prefix. It reads nothing
// until the first Get or Scan.
func Open(opts Options) (*Store, error) {
	if opts.Client == nil {
		return nil, errors.New("etcd store: Options.Client is nil")
	}
	if opts.Prefix == "" {
		return nil, errors.New("etcd store: Options.Prefix is empty")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.CompactEntries == 0 {
		opts.CompactEntries = 10_000
	}
	if opts.CompactBytes == 0 {
		opts.CompactBytes = 64 << 20
	}
	if opts.HistoryRetention <= 0 {
		opts.HistoryRetention = 5 * time.Minute
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = 30 * time.Second
	}
	var id [8]byte
	rand.Read(id[:])
	ctx, cancel := context.WithCancel(context.Background())
	bgCtx, bgCancel := context.WithCancel(ctx)
	p := opts.Prefix
	s := &Store{
		cli:      opts.Client,
		opts:     opts,
		prefix:   p,
		global:   newLogKeys(p + "/g"),
		scopeP:   p + "/scope/",
		ownerP:   p + "/owner/",
		writer:   hex.EncodeToString(id[:]),
		ctx:      ctx,
		cancel:   cancel,
		bgCtx:    bgCtx,
		bgCancel: bgCancel,
		writerD:  make(chan struct{}),
		owners:   make(map[string]*handle),
		busy:     make(map[string]bool),
		lease:    opts.Lease,
		views:    make(map[string]*view),
		scopes:   make(map[string]bool),
	}
	s.globalView = newView(s.global, nil)
	s.clock.init(opts.Timeout/4, max(2*opts.Timeout, opts.HistoryRetention)+opts.CheckInterval)
	s.quota.Store(opts.QuotaBytes)
	if opts.QuotaBytes <= 0 {
		s.quota.Store(defaultQuota)
	}
	s.cond = sync.NewCond(&s.mu)
	s.wake = sync.NewCond(&s.mu)
	go s.run()
	s.bg.Add(1)
	go s.housekeep()
	return s, nil
}

// logKeys are the etcd keys of one log, under its root (P/g or P/s/S).
type logKeys struct {
	log     string // root/log/
	chunk   string // root/chunk/
	snapKey string // root/snapshot
	snap    string // root/snap/
}

func newLogKeys(root string) logKeys {
	return logKeys{log: root + "/log/", chunk: root + "/chunk/", snapKey: root + "/snapshot", snap: root + "/snap/"}
}

func (s *Store) scopeKeys(scope []byte) logKeys {
	return newLogKeys(s.prefix + "/s/" + hex.EncodeToString(scope))
}

// SetLease binds the owner keys of later Acquires to lease (zero: to none).
// Handles acquired before keep the lease they were acquired under. Cluster
// mode calls it when it registers the node again under a new lease after
// losing the previous one, without reopening the Store.
func (s *Store) SetLease(lease clientv3.LeaseID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lease = lease
}

// Forget drops this Store's cached view of scope's records, if it has one:
// cluster mode calls it when the node no longer serves the shard. A later
// read of the scope rebuilds the view from etcd. It changes nothing in etcd
// and does not fence a handle of the scope.
func (s *Store) Forget(scope []byte) {
	s.viewsMu.Lock()
	defer s.viewsMu.Unlock()
	delete(s.views, string(scope))
}

// Usage returns etcd's database size (the largest among the client's
// endpoints) and its quota, in bytes, as of the last check (every
// Options.CheckInterval; used is 0 before the first).
func (s *Store) Usage() (used, quota int64) {
	return s.used.Load(), s.quota.Load()
}

// enterRead registers a Get, Scan or Compact; it reports false after Close.
func (s *Store) enterRead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inReads.Add(1)
	return true
}

// Close implements store.Store. Batches queued before it are still sent;
// it returns once they are answered, background compactions have stopped
// (one in progress is abandoned: it changes nothing or leaves a complete
// snapshot) and reads in flight are done. It does not close the etcd
// client.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.closed = true
	s.cond.Broadcast()
	s.wake.Signal()
	s.mu.Unlock()
	<-s.writerD
	s.bgCancel()
	s.bg.Wait()
	s.inReads.Wait()
	s.cancel()
	return nil
}

// reqCtx returns the context of one etcd request: Options.Timeout, and
// cancelled with parent.
func (s *Store) reqCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, s.opts.Timeout)
}

// kv is a record of a view: a put of v, or a tombstone (del), written by
// the entry at revision rev.
type kv struct {
	k   string
	v   []byte
	rev int64
	del bool
}

func lessKV(a, b kv) bool { return a.k < b.k }

func newTree() *btree.BTreeG[kv] { return btree.NewG(32, lessKV) }
