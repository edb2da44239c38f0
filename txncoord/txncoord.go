// Package txncoord is Cohort's transaction coordinator service: it hosts
// the pure transaction machine (coordinator/txn) on the shard runtime, one
// runtime shard per transaction coordinator shard, the way the assigner
// hosts coordinator/handoff, and does the machine's I/O: the commit and
// abort markers (what Kafka's TransactionMarkerChannelManager sends as
// WriteTxnMarkers) written to every partition of a transaction in the
// topic log and fsynced, and the transaction's offsets committed or
// dropped in the group coordinator, before the transaction is completed.
//
// It holds no durable state of its own: the machine's records are in the
// store, the markers in the log.
package txncoord

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Config configures a Coordinator.
type Config struct {
	// Store holds the machine's records. Required.
	Store store.Store
	// Topics is the log the markers are written to. Required.
	Topics *topics.Log
	// Groups is the group coordinator whose pending transactional
	// offsets a transaction ends. Required.
	Groups *coordinator.Coordinator
	// Shards is the number of transaction coordinator shards; a
	// transactional id's is fnv32a(tenant, id) mod Shards. The node uses
	// the group coordinator's count, which is fixed when the data
	// directory (or cluster) is created. Default 1.
	Shards int
	// Machine configures every shard's machine (MaxTimeout:
	// --transaction-max-timeout, 15 min; IDExpiration, 7 days); Shard is
	// set here.
	Machine txn.Config
	// Standby starts holding no shard (cluster mode loads the ones this
	// node owns); false loads every shard.
	Standby bool
	// Remote writes the markers of partitions and group shards other
	// nodes lead and own (cluster mode); nil: every partition and group
	// is taken to be this node's.
	Remote Remote
	// RetryBackoff is the first wait before writing a transaction's
	// markers again after a failure (a partition's fsync, a group shard
	// that is loading); it doubles up to 5 s. Default 50 ms.
	RetryBackoff time.Duration

	Observer observe.Observer
	Clock    coordinator.Clock
	Logger   *slog.Logger
}

// Coordinator is the transaction coordinator of a node.
type Coordinator struct {
	cfg    Config
	set    *coordinator.ShardSet
	shards coordinator.Range // the set's shards, numbered from 0

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Start loads the shards (unless Standby) and serves.
func Start(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil || cfg.Topics == nil || cfg.Groups == nil {
		return nil, errors.New("txncoord: Config needs Store, Topics and Groups")
	}
	if cfg.Shards <= 0 {
		cfg.Shards = 1
	}
	// The transaction shards end where the share-state shards begin.
	if cfg.Shards > int(record.ShareStateShardBase-record.TxnShardBase) {
		return nil, fmt.Errorf("txncoord: %d shards is too many", cfg.Shards)
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 50 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Coordinator{cfg: cfg}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	logger := cfg.Logger.With("component", "txn-coordinator")
	c.set = coordinator.NewShardSet(coordinator.ShardSetConfig{
		Runtime: func(id uint16) coordinator.RuntimeConfig {
			mcfg := cfg.Machine
			mcfg.Shard = id
			// The log as the shard loads (txn.Config.Open, Marked),
			// read by the load's New, once its store handle is
			// acquired; a later New (the runtime rebuilding the machine
			// for its invariant check) reads nothing again.
			var readLog sync.Once
			return coordinator.RuntimeConfig{
				Store: cfg.Store,
				New: func() coordinator.Machine {
					readLog.Do(func() { mcfg.Open, mcfg.Marked = logTxns(cfg.Topics) })
					return txn.New(mcfg)
				},
				Fail: func(req coordinator.Request, code int16) coordinator.Reply {
					return coordinator.Reply{Out: txn.Result{Code: code, ProducerID: -1, ProducerEpoch: -1}}
				},
				Push: c.push,
			}
		},
		Observer: cfg.Observer,
		Clock:    cfg.Clock,
		Logger:   logger,
	})
	c.shards = coordinator.Range{Set: c.set, Base: record.TxnShardBase, N: cfg.Shards}
	if !cfg.Standby {
		for i := range cfg.Shards {
			if err := c.shards.Load(i); err != nil {
				c.Close()
				return nil, fmt.Errorf("txncoord: %w", err)
			}
		}
	}
	return c, nil
}

// logTxns lists, for a shard's load, the transactions the log's
// partitions hold open and each producer's last marker in each of them
// (txn.Config.Open and Marked).
func logTxns(l *topics.Log) (open []txn.OpenTxn, marked []txn.Marked) {
	for _, t := range l.Topics() {
		for i, p := range t.Partitions {
			if p == nil {
				continue // another node's (cluster mode)
			}
			tp := txn.TP{Topic: t.Name, Partition: int32(i)}
			for _, pi := range p.Producers() {
				if pi.TxnStartOffset >= 0 {
					open = append(open, txn.OpenTxn{Partition: tp, ProducerID: pi.ProducerID, ProducerEpoch: pi.ProducerEpoch})
				}
				if pi.MarkerEpoch >= 0 {
					marked = append(marked, txn.Marked{Partition: tp, ProducerID: pi.ProducerID, ProducerEpoch: pi.MarkerEpoch, Commit: pi.MarkerCommit})
				}
			}
		}
	}
	return open, marked
}

// Shards returns the shard count.
func (c *Coordinator) Shards() int { return c.cfg.Shards }

// ShardFor returns the shard of a tenant's transactional id.
func (c *Coordinator) ShardFor(tenant, txnID string) int {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(txnID))
	return int(h.Sum32() % uint32(c.cfg.Shards))
}

// Load loads shard i and serves it (cluster mode: this node owns it now).
func (c *Coordinator) Load(i int) error { return c.shards.Load(i) }

// Unload stops serving shard i.
func (c *Coordinator) Unload(i int) { c.shards.Unload(i) }

// Holds reports whether shard i is served (or loading) here.
func (c *Coordinator) Holds(i int) bool { return c.shards.Holds(i) }

// Held returns the shards held here, in order.
func (c *Coordinator) Held() []int { return c.shards.Held() }

// Close unloads every shard and stops the marker writers; transactions
// being completed are completed by the next load.
func (c *Coordinator) Close() {
	c.once.Do(func() {
		c.cancel()
		c.set.Close()
		c.wg.Wait()
	})
}

// Do runs a command (a txn.*Cmd) on the shard of the transactional id
// and returns its answer, or the error code of a shard not served here
// (NOT_COORDINATOR) or loading (COORDINATOR_LOAD_IN_PROGRESS).
func (c *Coordinator) Do(ctx context.Context, tenant, txnID string, cmd any) (any, int16) {
	return c.do(ctx, c.ShardFor(tenant, txnID), cmd)
}

func (c *Coordinator) do(ctx context.Context, shard int, cmd any) (any, int16) {
	out, code := c.shards.Do(ctx, shard, cmd)
	if res, ok := out.(txn.Result); ok && code == 0 && res.Code == kerr.NotCoordinator.Code {
		return nil, res.Code
	}
	return out, code
}

// List runs a ListCmd on every shard held here and joins the answers.
func (c *Coordinator) List(ctx context.Context, cmd txn.ListCmd) []txn.Listing {
	var out []txn.Listing
	for _, i := range c.Held() {
		if r, code := c.do(ctx, i, cmd); code == 0 {
			ls, _ := r.([]txn.Listing)
			out = append(out, ls...)
		}
	}
	return out
}

// push receives a shard's Markers (durable Prepare) and completes the
// transaction in the background.
func (c *Coordinator) push(p coordinator.Push) {
	m, ok := p.Msg.(txn.Markers)
	if !ok {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.finish(m)
	}()
}

// finish writes a transaction's markers and offsets' outcome, each
// durable, then completes it; it retries until that succeeds, the shard
// is no longer served here (its next owner does it at load) or the
// coordinator closes.
func (c *Coordinator) finish(m txn.Markers) {
	shard := c.ShardFor(m.Tenant, m.TxnID)
	backoff := c.cfg.RetryBackoff
	for {
		err := c.markers(m)
		if err == nil {
			_, code := c.do(c.ctx, shard, m.Complete())
			if code == 0 || code == kerr.NotCoordinator.Code || c.ctx.Err() != nil {
				return
			}
			err = fmt.Errorf("complete: shard answered %s", kerr.ErrorForCode(code))
		}
		if c.ctx.Err() != nil || !c.Holds(shard) {
			return
		}
		c.cfg.Logger.Warn("transaction markers failed; retrying", "transactional_id", m.TxnID, "producer_id", m.ProducerID, "commit", m.Commit, "err", err, "retry_in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// Marker is what one WriteTxnMarkers marker carries: a producer's
// transaction ended, for some of its partitions and of the group shards
// (__consumer_offsets partitions) its offsets are pending in.
type Marker struct {
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	// Above: the epoch is above every batch of the transaction
	// (topics.Partition.WriteMarker). Not sent between nodes: there
	// the next transaction's batches never precede the Complete record.
	Above       bool
	Partitions  []txn.TP
	GroupShards []int
}

// Remote writes the parts of a transaction's markers this node cannot:
// the partitions other nodes lead and the group shards other nodes own
// (cluster mode: the node sends each its WriteTxnMarkers). It returns
// once every one is durable, or an error (the transaction is tried again
// after a back-off). A partition whose topic is gone, or that holds a
// newer epoch's marker, counts as written.
type Remote func(ctx context.Context, m Marker) error

// Errors of WriteLocal, per partition or group shard.
var (
	// ErrNotLeader: another node leads the partition (or it is not
	// known here yet).
	ErrNotLeader = errors.New("partition not led here")
	// ErrUnknownPartition: the topic or partition does not exist (a
	// marker for a deleted topic is dropped, as Kafka does).
	ErrUnknownPartition = errors.New("unknown topic or partition")
)

// WriteLocal writes m's markers to the partitions this node leads and
// fsyncs them, and ends the producer's offsets in the group shards it
// serves, all at once; it returns the outcome of each partition and each
// shard: nil, ErrNotLeader, ErrUnknownPartition (topic deleted),
// topics.ErrInvalidProducerEpoch (a newer epoch's marker is there: the
// producer was fenced since), coordinator.ErrNotServed, or an I/O error.
// It is what the transaction coordinator does for its own node and what
// a node does on a WriteTxnMarkers from another's.
func WriteLocal(ctx context.Context, log *topics.Log, groups *coordinator.Coordinator, m Marker) (partErrs, shardErrs []error) {
	now := time.Now().UnixMilli()
	partErrs = make([]error, len(m.Partitions))
	shardErrs = make([]error, len(m.GroupShards))
	type synced struct {
		i   int
		p   *topics.Partition
		end int64
	}
	var syncs []synced
	for i, tp := range m.Partitions {
		t := log.Topic(tp.Topic)
		if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			partErrs[i] = ErrUnknownPartition
			continue
		}
		p := t.Partitions[tp.Partition]
		if p == nil {
			partErrs[i] = ErrNotLeader
			continue
		}
		end, err := p.WriteMarker(m.ProducerID, m.ProducerEpoch, m.Commit, m.Above, now)
		switch {
		case errors.Is(err, topics.ErrDeleted):
			partErrs[i] = ErrUnknownPartition
		case err != nil:
			partErrs[i] = err
		default:
			syncs = append(syncs, synced{i, p, end})
		}
	}
	// The partitions' fsyncs and the groups' offsets are independent:
	// all at once.
	var wg sync.WaitGroup
	for _, s := range syncs {
		wg.Go(func() {
			err := s.p.Sync(s.end)
			if errors.Is(err, topics.ErrDeleted) {
				err = ErrUnknownPartition
			}
			partErrs[s.i] = err
		})
	}
	for i, shard := range m.GroupShards {
		wg.Go(func() { shardErrs[i] = groups.TxnEndShard(ctx, shard, m.ProducerID, m.Commit) })
	}
	wg.Wait()
	return partErrs, shardErrs
}

// markerDone reports whether a partition's outcome means its marker
// needs no more writing.
func markerDone(err error) bool {
	return err == nil || errors.Is(err, ErrUnknownPartition) || errors.Is(err, topics.ErrInvalidProducerEpoch)
}

// markers writes the markers to every partition, fsyncs them, and ends
// the transaction's offsets in every group: here what this node leads
// and serves, through Config.Remote the rest. A partition whose topic is
// gone is skipped, as Kafka drops markers for deleted partitions; so is a
// partition that already holds a newer epoch's marker (the producer was
// fenced since).
func (c *Coordinator) markers(m txn.Markers) error {
	local := Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Commit, Above: m.Bumped}
	remote := local
	for _, tp := range m.Partitions {
		if t := c.cfg.Topics.Topic(tp.Topic); c.cfg.Remote != nil && t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) && t.Partitions[tp.Partition] == nil {
			remote.Partitions = append(remote.Partitions, tp)
		} else {
			local.Partitions = append(local.Partitions, tp)
		}
	}
	held := c.cfg.Groups.Held()
	var localGroups []string
	for _, g := range m.Groups {
		if shard := c.cfg.Groups.ShardFor(m.Tenant, g); c.cfg.Remote != nil && !slices.Contains(held, shard) {
			if !slices.Contains(remote.GroupShards, shard) {
				remote.GroupShards = append(remote.GroupShards, shard)
			}
		} else {
			localGroups = append(localGroups, g)
		}
	}
	errs := make([]error, 2+len(localGroups))
	var wg sync.WaitGroup
	wg.Go(func() {
		partErrs, _ := WriteLocal(c.ctx, c.cfg.Topics, c.cfg.Groups, local)
		for i, err := range partErrs {
			if !markerDone(err) {
				tp := local.Partitions[i]
				errs[0] = errors.Join(errs[0], fmt.Errorf("partition %s/%d: %w", tp.Topic, tp.Partition, err))
			}
		}
	})
	if len(remote.Partitions) > 0 || len(remote.GroupShards) > 0 {
		wg.Go(func() { errs[1] = c.cfg.Remote(c.ctx, remote) })
	}
	for i, g := range localGroups {
		// By group, not by shard: a single node knows the group.
		wg.Go(func() { errs[2+i] = c.cfg.Groups.TxnEnd(c.ctx, m.Tenant, g, m.ProducerID, m.Commit) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
