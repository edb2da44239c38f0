package coordinator

// The global unit's host (GlobalUnit): the pure machine of
// coordinator/global (SCRAM credentials, ACLs, organisations and their
// members, client quotas) on a coordinator runtime of its own shard,
// record.GlobalShard, and the feed of its views. Every change is a
// command the machine turns into records, group-committed through the
// runtime like a group shard's; the authorizer, the credential lookup, the
// organisations and the quotas subscribe to snapshots of a replica that
// replays the same records once they are durable.
//
// On one node the unit is loaded once and its runtime's durable batches
// feed the replica, before the replies that acknowledge them leave. In
// cluster mode (GlobalConfig.Shared) every node may write: a command acquires
// the unit's scope afresh (store.Store.Acquire, which fences the node that
// wrote last), so the machine decides on everything written before, and
// the replica is rebuilt from the store's records after each write and
// whenever the store says another node wrote (Refresh). Admin writes are
// rare; serialising them through the store's fence costs a load of the
// unit per write and needs no forwarding between nodes.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/twmb/franz-go/pkg/kerr"
)

// GlobalConfig configures a GlobalUnit.
type GlobalConfig struct {
	// Store keeps the unit's records. Required.
	Store store.Store
	// Shared: other nodes write the unit too (cluster mode).
	Shared bool
	// Timeout bounds one command. Default 30 s.
	Timeout  time.Duration
	Observer observe.Observer
	Clock    Clock
	Logger   *slog.Logger
}

// GlobalUnit runs the global unit. It is safe for concurrent use.
type GlobalUnit struct {
	cfg GlobalConfig
	set *ShardSet

	closeOnce sync.Once
	wmu       sync.Mutex // Shared: one command at a time
	rmu       sync.Mutex // one Refresh at a time

	mu      sync.Mutex // the replica and the subscribers
	replica *global.State
	snap    *global.Snapshot
	scanned uint64 // a hash of the records the last Refresh read
	seq     uint64 // snapshots published
	subs    []func(*global.Snapshot)
}

// failed is the reply to a command the unit could not complete.
type globalFailed struct{ code int16 }

// StartGlobal moves records that an earlier version kept outside the unit into
// it (UpgradeGlobal), loads the unit (unless Shared: then a command loads it)
// and builds the replica.
func StartGlobal(cfg GlobalConfig) (*GlobalUnit, error) {
	if cfg.Store == nil {
		return nil, errors.New("coordinator: GlobalConfig needs Store")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := UpgradeGlobal(cfg.Store); err != nil {
		return nil, err
	}
	h := &GlobalUnit{cfg: cfg, replica: global.New()}
	h.snap = h.replica.Snapshot()
	var durable func([]Record)
	if !cfg.Shared {
		durable = h.durable
	}
	h.set = NewShardSet(ShardSetConfig{
		Runtime: func(uint16) RuntimeConfig {
			return RuntimeConfig{
				Store:   cfg.Store,
				New:     func() Machine { return global.New() },
				Fail:    func(_ Request, code int16) Reply { return Reply{Out: globalFailed{code}} },
				Durable: durable,
			}
		},
		Observer: cfg.Observer,
		Clock:    cfg.Clock,
		Logger:   cfg.Logger.With("component", "global"),
	})
	if !cfg.Shared {
		if err := h.set.Load(record.GlobalShard); err != nil {
			h.set.Close()
			return nil, fmt.Errorf("global unit: %w", err)
		}
	}
	if err := h.Refresh(); err != nil {
		h.set.Close()
		return nil, err
	}
	return h, nil
}

// Close stops the unit. Calling it again does nothing.
func (h *GlobalUnit) Close() { h.closeOnce.Do(h.set.Close) }

// Do runs a command of coordinator/global and returns its answer once
// the records it wrote are durable and the views have them. A command
// the machine refuses returns its error (global.ErrOrgExists …).
func (h *GlobalUnit) Do(ctx context.Context, cmd any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	if h.cfg.Shared {
		h.wmu.Lock()
		defer h.wmu.Unlock()
	}
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("global unit: %w (last: %v)", ctx.Err(), last)
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			}
		}
		if h.cfg.Shared {
			// Another node may have written since this one loaded:
			// acquire again, which fences it, and read what it wrote.
			h.set.Unload(record.GlobalShard)
		}
		if err := h.set.Load(record.GlobalShard); err != nil {
			last = err
			continue
		}
		ch, code := h.set.Submit(ctx, record.GlobalShard, Request{Cmd: cmd})
		if code != 0 {
			last = kerr.ErrorForCode(code)
			continue
		}
		var rep Reply
		select {
		case rep = <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("global unit: %w", ctx.Err())
		}
		if f, ok := rep.Out.(globalFailed); ok {
			// Not written (fenced, or the store failed): the
			// machine's state is gone with its runtime; try again on
			// a fresh load.
			last = kerr.ErrorForCode(f.code)
			continue
		}
		if h.cfg.Shared {
			if err := h.Refresh(); err != nil {
				return nil, err
			}
		}
		if err, ok := rep.Out.(error); ok {
			return nil, err
		}
		return rep.Out, nil
	}
	return nil, fmt.Errorf("global unit: command not done after 5 attempts: %w", last)
}

// Refresh rebuilds the replica from the unit's records in the store and
// hands the views its snapshot: in cluster mode, after this node's writes
// and whenever another node's may have changed them.
func (h *GlobalUnit) Refresh() error {
	h.rmu.Lock()
	defer h.rmu.Unlock()
	st := global.New()
	sum := fnv.New64a()
	err := h.cfg.Store.Scan(record.ShardPrefix(record.GlobalShard), func(k, v []byte) error {
		sum.Write(k)
		sum.Write(v)
		sum.Write([]byte{0xff})
		return st.Replay(Record{Key: k, Value: v})
	})
	if err != nil {
		return fmt.Errorf("global unit: read: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := sum.Sum64(); s == h.scanned && h.snap != nil {
		return nil // nothing changed since the last read: the views keep their indexes
	} else {
		h.scanned = s
	}
	h.replica = st
	h.publishLocked()
	return nil
}

// durable replays a batch the unit's runtime wrote into the replica (one
// node: the runtime is the only writer).
func (h *GlobalUnit) durable(recs []Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range recs {
		if err := h.replica.Replay(r); err != nil {
			// The machine replayed this very record before emitting it.
			panic(fmt.Sprintf("coordinator: the global unit's replica cannot replay a written record: %v", err))
		}
	}
	h.publishLocked()
}

func (h *GlobalUnit) publishLocked() {
	h.seq++
	h.snap = h.replica.Snapshot()
	h.snap.Version = h.seq
	for _, f := range h.subs {
		f(h.snap)
	}
}

// Subscribe calls f with the current snapshot now, and with each new one
// after a change. f must be quick and must not call the unit.
func (h *GlobalUnit) Subscribe(f func(*global.Snapshot)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs = append(h.subs, f)
	f(h.snap)
}

// Fresh reads one of the unit's records from the store (global.Unit).
func (h *GlobalUnit) Fresh(key []byte) ([]byte, bool, error) {
	v, err := h.cfg.Store.Get(key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("global unit: read: %w", err)
	}
	return v, true, nil
}

// Snapshot returns the current snapshot.
func (h *GlobalUnit) Snapshot() *global.Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snap
}
