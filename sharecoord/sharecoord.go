// Package sharecoord is Cohort's share coordinator (KIP-932): it hosts
// the pure share-partition machine (coordinator/sharestate) on the shard
// runtime, one runtime shard per share-state shard, the way txncoord
// hosts coordinator/txn. It routes a share partition, a (tenant, group,
// topic id, partition) — Kafka's share coordinator key
// "groupId:topicId:partition" — to its shard, runs each command there and
// returns the machine's answer once the records it depends on are durable
// (group-committed and fsynced, as every answer in Cohort), and wakes the
// long-polling fetches that wait for records to become available again
// (Watch), which the machine cannot do.
//
// It is what the wire layer's ShareFetch, ShareAcknowledge and the share
// group offset APIs call; it must not speak the wire protocol, read group
// configs (the caller resolves them and passes sharestate.Limits in each
// command) or read the topic log (the caller reads it and hands the
// machine what it read). It holds no durable state of its own but the
// shard count, in the global unit's meta.
package sharecoord

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxShards is the most share-state shards there can be: their store
// shards run from record.ShareStateShardBase to just below the global
// unit's.
const MaxShards = int(record.GlobalShard - record.ShareStateShardBase)

// Config configures a Host.
type Config struct {
	// Store holds the machine's records. Required.
	Store store.Store
	// Shards is the number of share-state shards a new data directory
	// (or cluster) gets; a partition's shard is ShardFor of it. Fixed
	// once chosen, like the group coordinator's count, because every
	// record key names its shard: with Global set, the count stored in
	// the global unit's meta (record.MetaShareStateShards) wins, and
	// Shards is stored there when there is none, which is what a data
	// directory created before share groups gets at its first start.
	// Default 1, at most MaxShards.
	Shards int
	// Global is the global unit whose meta keeps the shard count. Nil:
	// Shards is used as it is (tests).
	Global *coordinator.GlobalUnit
	// Machine configures every shard's machine: the default Limits of
	// commands that leave a field zero (Kafka's delivery limit 5, lock
	// 30 s, 2000 records in flight), SnapshotEvery (500) and
	// MaxPartitions (100,000 per shard); Shard is set here.
	Machine sharestate.Config
	// MaxRecordLocks caps the in-flight limit a command may ask for
	// (Limits.MaxInFlight, the group's share.partition.max.record.locks),
	// whatever the caller passes, so that a partition's memory is
	// bounded: Kafka's group.share.max.partition.max.record.locks,
	// default 10,000.
	MaxRecordLocks int
	// Standby starts holding no shard (cluster mode loads the ones this
	// node owns); false loads every shard.
	Standby bool

	Observer observe.Observer
	Clock    coordinator.Clock
	Logger   *slog.Logger
}

// Host is the share coordinator of a node. Its methods are safe for
// concurrent use.
type Host struct {
	cfg    Config
	set    *coordinator.ShardSet
	shards coordinator.Range // the set's shards, numbered from 0
	watch  watchers
	once   sync.Once
	// remote reaches the shards other nodes serve (cluster mode;
	// remote.go), nil until SetRemote.
	remote atomic.Pointer[Remote]
	// letters are the partitions with dead letters to write
	// (DeadLetters).
	letters struct {
		mu    sync.Mutex
		keys  map[sharestate.Key]bool
		ready chan struct{}
	}
}

// DeadLetters is signalled when share partitions of the shards served
// here hold records on their way to their group's dead-letter topic
// (KIP-1191, sharestate's ARCHIVING): after a command or timer that
// wrote some, and after a shard's load, for every partition that holds
// some. TakeDeadLetters names them; their owner (the wire layer) writes
// the dead letters, reading the records with Describe, and then calls
// DeadLettered.
func (h *Host) DeadLetters() <-chan struct{} { return h.letters.ready }

// TakeDeadLetters returns the partitions DeadLetters signalled, and
// forgets them.
func (h *Host) TakeDeadLetters() []sharestate.Key {
	h.letters.mu.Lock()
	defer h.letters.mu.Unlock()
	out := make([]sharestate.Key, 0, len(h.letters.keys))
	for k := range h.letters.keys {
		out = append(out, k)
	}
	clear(h.letters.keys)
	slices.SortFunc(out, compareKeys)
	return out
}

// addLetters is the shards' report of partitions with dead letters: it
// never blocks.
func (h *Host) addLetters(ks []sharestate.Key) {
	h.letters.mu.Lock()
	for _, k := range ks {
		h.letters.keys[k] = true
	}
	h.letters.mu.Unlock()
	select {
	case h.letters.ready <- struct{}{}:
	default:
	}
}

// Start reads (or stores) the shard count, loads the shards (unless
// Standby) and serves.
func Start(cfg Config) (*Host, error) {
	if cfg.Store == nil {
		return nil, errors.New("sharecoord: Config needs Store")
	}
	if cfg.Shards <= 0 {
		cfg.Shards = 1
	}
	if cfg.MaxRecordLocks <= 0 {
		cfg.MaxRecordLocks = 10_000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Machine = cfg.Machine.WithDefaults()
	cfg.Machine.Limits.MaxInFlight = min(cfg.Machine.Limits.MaxInFlight, cfg.MaxRecordLocks)
	n, err := shardCount(cfg)
	if err != nil {
		return nil, err
	}
	if n != cfg.Shards {
		cfg.Logger.Info("using the data directory's share-state shard count", "shards", n, "configured", cfg.Shards)
		cfg.Shards = n
	}
	h := &Host{cfg: cfg}
	h.watch.init()
	h.letters.keys = map[sharestate.Key]bool{}
	h.letters.ready = make(chan struct{}, 1)
	h.set = coordinator.NewShardSet(coordinator.ShardSetConfig{
		Runtime: func(id uint16) coordinator.RuntimeConfig {
			mcfg := cfg.Machine
			mcfg.Shard = id
			return coordinator.RuntimeConfig{
				Store: cfg.Store,
				New: func() coordinator.Machine {
					return &shard{Shard: sharestate.New(mcfg), watch: &h.watch, letters: h.addLetters}
				},
				Fail: fail,
			}
		},
		// A shard unloaded or given up wakes the fetches waiting on its
		// partitions: their next look is answered NOT_COORDINATOR at
		// once, rather than at the end of their wait.
		Observer: observe.Multi(cfg.Observer, unloads{h: h}),
		Clock:    cfg.Clock,
		Logger:   cfg.Logger.With("component", "share-coordinator"),
	})
	h.shards = coordinator.Range{Set: h.set, Base: record.ShareStateShardBase, N: n}
	if !cfg.Standby {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = h.shards.Load(i) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			h.Close()
			return nil, fmt.Errorf("sharecoord: %w", err)
		}
	}
	return h, nil
}

// shardCount returns the stored shard count, storing cfg.Shards if there
// is none.
func shardCount(cfg Config) (int, error) {
	if cfg.Shards > MaxShards {
		return 0, fmt.Errorf("sharecoord: %d shards is too many (at most %d)", cfg.Shards, MaxShards)
	}
	if cfg.Global == nil {
		return cfg.Shards, nil
	}
	out, err := cfg.Global.Do(context.Background(), global.EnsureMeta{Name: record.MetaShareStateShards, Value: []byte(strconv.Itoa(cfg.Shards))})
	if err != nil {
		return 0, fmt.Errorf("sharecoord: shard count: %w", err)
	}
	v, _ := out.([]byte)
	n, perr := strconv.Atoi(string(v))
	if perr != nil || n < 1 || n > MaxShards {
		return 0, fmt.Errorf("sharecoord: corrupt %s value %q", record.MetaShareStateShards, v)
	}
	return n, nil
}

// fail answers a command the shard could not complete, in the type its
// caller expects.
func fail(req coordinator.Request, code int16) coordinator.Reply {
	switch c := req.Cmd.(type) {
	case sharestate.NextCmd:
		return coordinator.Reply{Out: sharestate.Next{Code: code, Offset: -1}}
	case sharestate.AcquireCmd:
		return coordinator.Reply{Out: sharestate.Acquired{Code: code}}
	case sharestate.DescribeCmd:
		out := make([]sharestate.Description, len(c.Partitions))
		for i, k := range c.Partitions {
			out[i] = sharestate.Description{Key: k, Code: code, StartOffset: -1, EndOffset: -1}
		}
		return coordinator.Reply{Out: out}
	}
	return coordinator.Reply{Out: sharestate.Result{Code: code}}
}

// Shards returns the shard count.
func (h *Host) Shards() int { return h.cfg.Shards }

// ShardFor returns the shard of a share partition: fnv32a of its tenant,
// group, topic id and partition, mod the shard count. (Kafka hashes its
// key string "groupId:topicId:partition" onto a partition of
// __share_group_state; the same parts, with the tenant.)
func (h *Host) ShardFor(k sharestate.Key) int {
	f := fnv.New32a()
	f.Write([]byte(k.Tenant))
	f.Write([]byte{0})
	f.Write([]byte(k.Group))
	f.Write([]byte{0})
	f.Write(k.TopicID[:])
	f.Write([]byte{byte(k.Partition >> 24), byte(k.Partition >> 16), byte(k.Partition >> 8), byte(k.Partition)})
	return int(f.Sum32() % uint32(h.cfg.Shards))
}

// ParseKey reads Kafka's share coordinator key, "groupId:topicId:partition"
// (FindCoordinator's key for the SHARE key type, KIP-932), the topic id
// in Kafka's form (URL-safe base64, no padding). The group may itself
// hold colons: the key is split at its last two, where Kafka 4.2 split at
// every colon and could not route such a group (KAFKA-20183).
func ParseKey(tenant, key string) (sharestate.Key, error) {
	rest, part, ok1 := cutLast(key)
	group, topic, ok2 := cutLast(rest)
	if !ok1 || !ok2 || group == "" {
		return sharestate.Key{}, fmt.Errorf("share coordinator key %q is not groupId:topicId:partition", key)
	}
	p, err := strconv.ParseInt(part, 10, 32)
	if err != nil || p < 0 {
		return sharestate.Key{}, fmt.Errorf("share coordinator key %q: partition %q", key, part)
	}
	id, err := base64.RawURLEncoding.DecodeString(topic)
	if err != nil || len(id) != 16 {
		return sharestate.Key{}, fmt.Errorf("share coordinator key %q: topic id %q", key, topic)
	}
	k := sharestate.Key{Tenant: tenant, Group: group, Partition: int32(p)}
	copy(k.TopicID[:], id)
	return k, nil
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// Load loads shard i and serves it (cluster mode: this node owns it now).
func (h *Host) Load(i int) error { return h.shards.Load(i) }

// Unload stops serving shard i. Its locks are written: a new owner
// loads them, each held by its member until its deadline.
func (h *Host) Unload(i int) { h.shards.Unload(i) }

// Holds reports whether shard i is served (or loading) here.
func (h *Host) Holds(i int) bool { return h.shards.Holds(i) }

// Held returns the shards held here, in order.
func (h *Host) Held() []int { return h.shards.Held() }

// Ready reports why the host does not serve every shard it should (nil:
// it does): a shard loading, or, unless it started Standby, one not
// held.
func (h *Host) Ready() error {
	held, serving := h.set.Serving()
	switch {
	case serving < held:
		return fmt.Errorf("%d of %d share-state shards loading", held-serving, held)
	case !h.cfg.Standby && held < h.cfg.Shards:
		return fmt.Errorf("%d of %d share-state shards not held", h.cfg.Shards-held, h.cfg.Shards)
	}
	return nil
}

// Close unloads every shard (the writes under way finish) and wakes
// every watch.
func (h *Host) Close() {
	h.once.Do(func() {
		h.set.Close()
		h.watch.wakeIf(func(sharestate.Key) bool { return true })
	})
}

// The commands. Each runs on its partition's shard and returns the
// machine's answer once the records it depends on are durable; a shard
// not served here answers NOT_COORDINATOR, one loading
// COORDINATOR_LOAD_IN_PROGRESS, and a ctx that ends first
// REQUEST_TIMED_OUT (the command may still take effect: an acquisition
// then holds its records until its lock expires, as one whose response
// was lost). The codes are in the answer's Code.

// Next begins a ShareFetch of one partition (sharestate.NextCmd): it
// initialises the partition from share.auto.offset.reset and the log's
// offsets if it has no state, and says where to read.
func (h *Host) localNext(ctx context.Context, c sharestate.NextCmd) sharestate.Next {
	c.Limits = h.limits(c.Limits)
	out, code := h.do(ctx, h.ShardFor(c.Key), c)
	if code != 0 {
		return sharestate.Next{Code: code, Offset: -1}
	}
	return out.(sharestate.Next)
}

// Acquire hands over what the log read from Next's offset and acquires
// records for the member (sharestate.AcquireCmd).
func (h *Host) localAcquire(ctx context.Context, c sharestate.AcquireCmd) sharestate.Acquired {
	c.Limits = h.limits(c.Limits)
	out, code := h.do(ctx, h.ShardFor(c.Key), c)
	if code != 0 {
		return sharestate.Acquired{Code: code}
	}
	return out.(sharestate.Acquired)
}

// Ack settles one partition's acknowledgements (sharestate.AckCmd: a
// ShareAcknowledge's or a ShareFetch's), all or nothing; answered once
// they are durable.
func (h *Host) localAck(ctx context.Context, c sharestate.AckCmd) sharestate.Result {
	return h.result(ctx, h.ShardFor(c.Key), c)
}

// localDeadLettered archives a partition's ARCHIVING records among
// offsets (sharestate.DeadLetteredCmd).
func (h *Host) localDeadLettered(ctx context.Context, c sharestate.DeadLetteredCmd) sharestate.Result {
	return h.result(ctx, h.ShardFor(c.Key), c)
}

// Alter is AlterShareGroupOffsets for one partition (sharestate.AlterCmd).
func (h *Host) localAlter(ctx context.Context, c sharestate.AlterCmd) sharestate.Result {
	return h.result(ctx, h.ShardFor(c.Key), c)
}

// Delete is DeleteShareGroupOffsets for one partition
// (sharestate.DeleteCmd).
func (h *Host) localDelete(ctx context.Context, c sharestate.DeleteCmd) sharestate.Result {
	return h.result(ctx, h.ShardFor(c.Key), c)
}

// Release gives back the records a member holds (sharestate.ReleaseCmd:
// it left, was fenced, or closed its share session). The partitions named
// are released on their shards, at once; Partitions nil is every
// partition of the group on the shards this node serves (in cluster mode
// the group's other partitions are other nodes': name them there). The
// answer is the first error of a shard, if any.
func (h *Host) localRelease(ctx context.Context, c sharestate.ReleaseCmd) sharestate.Result {
	var codes []int16
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, keys := range h.split(c.Partitions) {
		wg.Go(func() {
			cmd := c
			if c.Partitions != nil {
				cmd.Partitions = keys
			}
			r := h.result(ctx, i, cmd)
			mu.Lock()
			codes = append(codes, r.Code)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, code := range codes {
		if code != 0 {
			return sharestate.Result{Code: code}
		}
	}
	return sharestate.Result{}
}

// Describe describes partitions (sharestate.DescribeCmd:
// DescribeShareGroupOffsets' view), in the order named; a partition whose
// shard is not served here has that error in its Code. Partitions nil is
// every partition of the group on the shards this node serves, in key
// order.
func (h *Host) localDescribe(ctx context.Context, c sharestate.DescribeCmd) []sharestate.Description {
	parts := h.split(c.Partitions)
	answers := make(map[int][]sharestate.Description, len(parts))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, keys := range parts {
		wg.Go(func() {
			cmd := c
			if c.Partitions != nil {
				cmd.Partitions = keys
			}
			out, code := h.do(ctx, i, cmd)
			ds, _ := out.([]sharestate.Description)
			if code != 0 {
				ds = fail(coordinator.Request{Cmd: cmd}, code).Out.([]sharestate.Description)
			}
			mu.Lock()
			answers[i] = ds
			mu.Unlock()
		})
	}
	wg.Wait()
	var out []sharestate.Description
	if c.Partitions == nil {
		for _, ds := range answers {
			out = append(out, ds...)
		}
		slices.SortFunc(out, func(a, b sharestate.Description) int { return compareKeys(a.Key, b.Key) })
		return out
	}
	// In the order named: each shard answered its keys in its order.
	next := make(map[int]int, len(answers))
	out = make([]sharestate.Description, 0, len(c.Partitions))
	for _, k := range c.Partitions {
		s := h.ShardFor(k)
		out = append(out, answers[s][next[s]])
		next[s]++
	}
	return out
}

func compareKeys(a, b sharestate.Key) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Group, b.Group),
		slices.Compare(a.TopicID[:], b.TopicID[:]), cmp.Compare(a.Partition, b.Partition))
}

// split groups keys by shard; nil keys is every shard held here, with
// no keys.
func (h *Host) split(keys []sharestate.Key) map[int][]sharestate.Key {
	out := map[int][]sharestate.Key{}
	if keys == nil {
		for _, i := range h.Held() {
			out[i] = nil
		}
		return out
	}
	for _, k := range keys {
		s := h.ShardFor(k)
		out[s] = append(out[s], k)
	}
	return out
}

// LockDuration is how long an acquisition under l holds its records:
// l's, else the default (ShareFetch's AcquisitionLockTimeoutMs).
func (h *Host) LockDuration(l sharestate.Limits) time.Duration {
	if l.LockDuration > 0 {
		return l.LockDuration
	}
	return h.cfg.Machine.Limits.LockDuration
}

// Limits are the defaults of the commands' Limits: what a command that
// leaves a field zero gets (Config.Machine's, the in-flight limit at most
// MaxRecordLocks).
func (h *Host) Limits() sharestate.Limits { return h.cfg.Machine.Limits }

// MaxRecordLocks is the most records in flight a command may ask for per
// partition (Config.MaxRecordLocks).
func (h *Host) MaxRecordLocks() int { return h.cfg.MaxRecordLocks }

// limits bounds a command's in-flight limit by MaxRecordLocks.
func (h *Host) limits(l sharestate.Limits) sharestate.Limits {
	l.MaxInFlight = min(l.MaxInFlight, h.cfg.MaxRecordLocks)
	return l
}

func (h *Host) result(ctx context.Context, shard int, cmd any) sharestate.Result {
	out, code := h.do(ctx, shard, cmd)
	if code != 0 {
		return sharestate.Result{Code: code}
	}
	return out.(sharestate.Result)
}

// do runs cmd on shard and returns its answer, or the code of a shard
// not served or loading here, or of ctx ending first.
func (h *Host) do(ctx context.Context, shard int, cmd any) (any, int16) {
	if _, other := h.owner(shard); other {
		// Still held here, but the cluster gave it to another node
		// (owner): not served from what may be stale.
		return nil, kerr.NotCoordinator.Code
	}
	return h.shards.Do(ctx, shard, cmd)
}

// unloads is the shard set's observer of shard unloads: it wakes the
// watches of the shard's partitions.
type unloads struct {
	observe.Nop
	h *Host
}

// WantsRequests implements observe.RequestWanter: it wants shard events
// only.
func (unloads) WantsRequests() bool { return false }

// Shard implements observe.Observer.
func (u unloads) Shard(e observe.ShardEvent) {
	if e.Kind != observe.ShardUnloaded || e.Shard < record.ShareStateShardBase {
		return
	}
	i := int(e.Shard - record.ShareStateShardBase)
	u.h.watch.wakeIf(func(k sharestate.Key) bool { return u.h.ShardFor(k) == i })
}
