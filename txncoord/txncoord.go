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
	cfg Config
	set *coordinator.ShardSet

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
	if cfg.Shards > int(^uint16(0)-record.TxnShardBase) {
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
			return coordinator.RuntimeConfig{
				Store: cfg.Store,
				New:   func() coordinator.Machine { return txn.New(mcfg) },
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
	if !cfg.Standby {
		for i := range cfg.Shards {
			if err := c.set.Load(record.TxnShardBase + uint16(i)); err != nil {
				c.Close()
				return nil, fmt.Errorf("txncoord: %w", err)
			}
		}
	}
	return c, nil
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
func (c *Coordinator) Load(i int) error {
	if i < 0 || i >= c.cfg.Shards {
		return fmt.Errorf("txncoord: shard %d: there are %d", i, c.cfg.Shards)
	}
	return c.set.Load(record.TxnShardBase + uint16(i))
}

// Unload stops serving shard i.
func (c *Coordinator) Unload(i int) {
	if i >= 0 && i < c.cfg.Shards {
		c.set.Unload(record.TxnShardBase + uint16(i))
	}
}

// Holds reports whether shard i is served (or loading) here.
func (c *Coordinator) Holds(i int) bool {
	for _, id := range c.set.Held() {
		if int(id-record.TxnShardBase) == i {
			return true
		}
	}
	return false
}

// Held returns the shards held here, in order.
func (c *Coordinator) Held() []int {
	var out []int
	for _, id := range c.set.Held() {
		out = append(out, int(id-record.TxnShardBase))
	}
	return out
}

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
	ch, code := c.set.Submit(ctx, record.TxnShardBase+uint16(shard), coordinator.Request{Cmd: cmd})
	if code != 0 {
		return nil, code
	}
	select {
	case r := <-ch:
		if res, ok := r.Out.(txn.Result); ok && res.Code == kerr.NotCoordinator.Code {
			return nil, res.Code
		}
		return r.Out, 0
	case <-ctx.Done():
		return nil, kerr.RequestTimedOut.Code
	}
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

// markers writes the markers to every partition, fsyncs them, and ends
// the transaction's offsets in every group. A partition whose topic is
// gone is skipped, as Kafka drops markers for deleted partitions; so is a
// partition that already holds a newer epoch's marker (the producer was
// fenced since).
func (c *Coordinator) markers(m txn.Markers) error {
	now := time.Now().UnixMilli()
	type synced struct {
		p   *topics.Partition
		end int64
	}
	var syncs []synced
	for _, tp := range m.Partitions {
		t := c.cfg.Topics.Topic(tp.Topic)
		if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			continue
		}
		p := t.Partitions[tp.Partition]
		if p == nil {
			return fmt.Errorf("partition %s/%d is not in this node's log", tp.Topic, tp.Partition)
		}
		end, err := p.WriteMarker(m.ProducerID, m.ProducerEpoch, m.Commit, now)
		switch {
		case errors.Is(err, topics.ErrDeleted), errors.Is(err, topics.ErrInvalidProducerEpoch):
			continue
		case err != nil:
			return err
		}
		syncs = append(syncs, synced{p, end})
	}
	// The partitions' fsyncs and the groups' offsets are independent:
	// all at once.
	errs := make([]error, len(syncs)+len(m.Groups))
	var wg sync.WaitGroup
	for i, s := range syncs {
		wg.Go(func() {
			if err := s.p.Sync(s.end); err != nil && !errors.Is(err, topics.ErrDeleted) {
				errs[i] = err
			}
		})
	}
	for i, g := range m.Groups {
		wg.Go(func() { errs[len(syncs)+i] = c.cfg.Groups.TxnEnd(c.ctx, m.Tenant, g, m.ProducerID, m.Commit) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return nil
}
