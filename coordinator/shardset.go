package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/store"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ShardSet is the shards a node serves, loaded and unloaded at run time
// (Kafka's CoordinatorRuntime with its scheduleLoadOperation and
// scheduleUnloadOperation). A shard is in one of three states here:
//
//   - absent: not this node's. Its requests get NOT_COORDINATOR, so the
//     client asks FindCoordinator again.
//   - loading: being read from the store. Its requests get
//     COORDINATOR_LOAD_IN_PROGRESS, which clients retry after a back-off.
//   - active: a Runtime serves it.
//
// A runtime that gives its shard up by itself (a store write failed) makes
// the shard absent and the set loads it again after a back-off, unless the
// write was fenced: then another owner has the shard and it stays absent.
type ShardSet struct {
	cfg ShardSetConfig

	mu     sync.RWMutex
	slots  map[uint16]*slot
	closed bool
}

// ShardSetConfig configures a ShardSet.
type ShardSetConfig struct {
	// Runtime returns the configuration of a shard's runtime. Its Lost,
	// Observer, Clock and Logger are set by the set. Required.
	Runtime func(id uint16) RuntimeConfig
	// Observer receives shard events, and is handed to every runtime.
	Observer observe.Observer
	// Clock times the reload back-off; nil: SystemClock.
	Clock Clock
	// Logger; nil discards.
	Logger *slog.Logger
	// ReloadBackoff is the first wait before loading a shard again after
	// its runtime gave it up; it doubles with every failed load up to
	// ReloadBackoffMax. Defaults 100 ms and 10 s.
	ReloadBackoff, ReloadBackoffMax time.Duration
}

type slotState uint8

const (
	slotLoading slotState = iota + 1
	slotActive
	slotWaiting // given up; loads again when the back-off ends
)

type slot struct {
	state slotState
	rt    *Runtime
	// gen changes whenever the slot's owner changes its mind (a load, an
	// unload, a loss), so that a load or a loss that finishes late can
	// tell it is stale.
	gen      uint64
	failures int // loads failed or shards lost since the last good load
	retry    func() bool
}

// NewShardSet returns a set holding no shard.
func NewShardSet(cfg ShardSetConfig) *ShardSet {
	if cfg.Observer == nil {
		cfg.Observer = observe.Nop{}
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReloadBackoff <= 0 {
		cfg.ReloadBackoff = 100 * time.Millisecond
	}
	if cfg.ReloadBackoffMax < cfg.ReloadBackoff {
		cfg.ReloadBackoffMax = max(10*time.Second, cfg.ReloadBackoff)
	}
	return &ShardSet{cfg: cfg, slots: map[uint16]*slot{}}
}

// ErrSetClosed is returned by Load once the set is closed.
var ErrSetClosed = errors.New("coordinator: shard set closed")

// ErrUnloaded is returned by a Load that an Unload overtook (cluster mode:
// the shard moved on while it loaded).
var ErrUnloaded = errors.New("coordinator: shard unloaded while it loaded")

// Load loads shard id from the store and serves it; it returns once the
// shard is active, or with the load's error (the shard is then absent).
// Loading a shard that is loading or active does nothing; one waiting to
// be loaded again is loaded now.
func (s *ShardSet) Load(id uint16) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSetClosed
	}
	sl := s.slots[id]
	if sl != nil && (sl.state == slotLoading || sl.state == slotActive) {
		s.mu.Unlock()
		return nil
	}
	if sl == nil {
		sl = &slot{}
		s.slots[id] = sl
	}
	gen := s.begin(sl)
	s.mu.Unlock()
	return s.load(id, sl, gen)
}

// begin marks sl loading under a new generation. The caller holds mu.
func (s *ShardSet) begin(sl *slot) uint64 {
	if sl.retry != nil {
		sl.retry()
		sl.retry = nil
	}
	sl.state = slotLoading
	sl.gen++
	return sl.gen
}

// load runs the load that begin started.
func (s *ShardSet) load(id uint16, sl *slot, gen uint64) error {
	s.cfg.Observer.Shard(observe.ShardEvent{Kind: observe.ShardLoading, Shard: id})
	cfg := s.cfg.Runtime(id)
	cfg.ID = id
	cfg.Observer = s.cfg.Observer
	if cfg.Clock == nil {
		cfg.Clock = s.cfg.Clock
	}
	if cfg.Logger == nil {
		cfg.Logger = s.cfg.Logger
	}
	cfg.Lost = func(err error) { s.lost(id, gen, err) }
	rt, err := StartRuntime(cfg)

	s.mu.Lock()
	stale := s.slots[id] != sl || sl.gen != gen || sl.state != slotLoading
	unloaded := s.slots[id] != sl
	switch {
	case stale:
		// Unloaded (or closed) meanwhile, or the new runtime already
		// lost the shard (lost has moved the slot on).
	case err != nil:
		sl.failures++
		if errors.Is(err, store.ErrClosed) || sl.failures == 1 {
			// A first load that fails is the caller's to report; the
			// shard is simply not held.
			delete(s.slots, id)
		} else {
			s.wait(id, sl, err)
		}
	default:
		sl.state, sl.rt, sl.failures = slotActive, rt, 0
	}
	s.mu.Unlock()

	if err != nil {
		s.cfg.Observer.Shard(observe.ShardEvent{Kind: observe.ShardLoaded, Shard: id, Err: err})
		return err
	}
	if stale {
		rt.Close()
		if unloaded {
			return ErrUnloaded
		}
		return nil // lost at once; loading again
	}
	n, took := rt.Loaded()
	s.cfg.Observer.Shard(observe.ShardEvent{Kind: observe.ShardLoaded, Shard: id, Records: n, Took: took})
	return nil
}

// wait schedules sl to load again after a back-off. The caller holds mu.
func (s *ShardSet) wait(id uint16, sl *slot, cause error) {
	sl.state, sl.rt = slotWaiting, nil
	sl.gen++
	gen := sl.gen
	d := s.cfg.ReloadBackoff << min(max(sl.failures-1, 0), 20)
	d = min(d, s.cfg.ReloadBackoffMax)
	s.cfg.Logger.Warn("shard given up; loading it again after a back-off", "shard", id, "err", cause, "backoff", d)
	sl.retry = s.cfg.Clock.At(s.cfg.Clock.Now().Add(d), func() {
		s.mu.Lock()
		if s.closed || s.slots[id] != sl || sl.gen != gen || sl.state != slotWaiting {
			s.mu.Unlock()
			return
		}
		sl.retry = nil
		g := s.begin(sl)
		s.mu.Unlock()
		_ = s.load(id, sl, g) // a failure schedules the next attempt
	})
}

// lost is a runtime's Lost: it gave shard id up.
func (s *ShardSet) lost(id uint16, gen uint64, err error) {
	s.mu.Lock()
	sl := s.slots[id]
	if s.closed || sl == nil || sl.gen != gen {
		s.mu.Unlock()
		return // unloaded meanwhile; Unload closes the runtime
	}
	rt := sl.rt
	fenced := errors.Is(err, store.ErrFenced)
	if fenced {
		delete(s.slots, id)
		sl.gen++
	} else {
		sl.failures++
		s.wait(id, sl, err)
	}
	s.mu.Unlock()
	if rt != nil {
		rt.Close()
	}
	reason := "store write failed: " + err.Error()
	if fenced {
		reason = observe.ReasonFenced
	}
	s.cfg.Observer.Shard(observe.ShardEvent{Kind: observe.ShardUnloaded, Shard: id, Reason: reason})
}

// Unload stops serving shard id: the writes under way finish, requests
// in flight are answered NOT_COORDINATOR, and the shard's write handle is
// given up. Unloading a shard the set does not hold does nothing.
func (s *ShardSet) Unload(id uint16) {
	s.mu.Lock()
	sl := s.slots[id]
	if sl == nil {
		s.mu.Unlock()
		return
	}
	delete(s.slots, id)
	sl.gen++
	if sl.retry != nil {
		sl.retry()
		sl.retry = nil
	}
	rt := sl.rt
	s.mu.Unlock()
	// Reported before the writes under way are answered: the shard
	// serves nothing from here on.
	s.cfg.Observer.Shard(observe.ShardEvent{Kind: observe.ShardUnloaded, Shard: id, Reason: observe.ReasonUnloaded})
	if rt != nil {
		rt.Close()
	}
}

// Held returns the shards the set holds (loading, active or waiting to be
// loaded again), in order.
func (s *ShardSet) Held() []uint16 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]uint16, 0, len(s.slots))
	for id := range s.slots {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Serving returns how many shards the set holds and how many of them
// serve (are loaded; the others are loading or waiting to load again).
func (s *ShardSet) Serving() (held, serving int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sl := range s.slots {
		held++
		if sl.state == slotActive {
			serving++
		}
	}
	return held, serving
}

// Submit hands req to shard id's runtime. When the set cannot, it returns
// the Kafka error code to answer with instead: NOT_COORDINATOR for a
// shard it does not hold (or has given up until it loads again),
// COORDINATOR_LOAD_IN_PROGRESS for one still loading.
func (s *ShardSet) Submit(ctx context.Context, id uint16, req Request) (<-chan Reply, int16) {
	s.mu.RLock()
	sl := s.slots[id]
	var rt *Runtime
	code := kerr.NotCoordinator.Code
	if sl != nil {
		switch sl.state {
		case slotLoading:
			code = kerr.CoordinatorLoadInProgress.Code
		case slotActive:
			rt = sl.rt
		}
	}
	s.mu.RUnlock()
	if rt == nil {
		return nil, code
	}
	ch, err := rt.Submit(ctx, req)
	if err != nil { // closed under us: unloaded or given up
		return nil, kerr.NotCoordinator.Code
	}
	return ch, 0
}

// active returns the runtime serving shard id, or nil when the set does
// not hold it or it is loading or waiting to load again.
func (s *ShardSet) active(id uint16) *Runtime {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sl := s.slots[id]; sl != nil && sl.state == slotActive {
		return sl.rt
	}
	return nil
}

// Close unloads every shard; later loads fail with ErrSetClosed.
func (s *ShardSet) Close() {
	s.mu.Lock()
	s.closed = true
	ids := make([]uint16, 0, len(s.slots))
	for id := range s.slots {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { s.Unload(id) })
	}
	wg.Wait()
}

// String describes the set's shards, for logs and tests.
func (s *ShardSet) String() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := map[slotState]string{slotLoading: "loading", slotActive: "active", slotWaiting: "waiting"}
	ids := make([]uint16, 0, len(s.slots))
	for id := range s.slots {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := ""
	for _, id := range ids {
		out += fmt.Sprintf("%d:%s ", id, names[s.slots[id].state])
	}
	return out
}

// Range is the shards of a service that numbers its own from 0 on a
// ShardSet: its shard i is the set's shard Base+i, of N (the transaction
// coordinator's, the share coordinator's). Its methods are what cluster
// mode asks of such a service (cluster.HostedShards).
type Range struct {
	Set  *ShardSet
	Base uint16
	N    int
}

// Shards returns N.
func (r Range) Shards() int { return r.N }

// Load loads shard i and serves it (cluster mode: this node owns it now).
func (r Range) Load(i int) error {
	if i < 0 || i >= r.N {
		return fmt.Errorf("coordinator: shard %d: there are %d", i, r.N)
	}
	return r.Set.Load(r.Base + uint16(i))
}

// Unload stops serving shard i.
func (r Range) Unload(i int) {
	if i >= 0 && i < r.N {
		r.Set.Unload(r.Base + uint16(i))
	}
}

// Holds reports whether shard i is served (or loading) here.
func (r Range) Holds(i int) bool {
	return i >= 0 && i < r.N && slices.Contains(r.Set.Held(), r.Base+uint16(i))
}

// Held returns the shards held here, in order.
func (r Range) Held() []int {
	var out []int
	for _, id := range r.Set.Held() {
		if id >= r.Base && int(id-r.Base) < r.N {
			out = append(out, int(id-r.Base))
		}
	}
	return out
}

// Do runs a command (Request.Cmd) on shard i and returns its answer
// (Reply.Out), or the code to answer with instead: NOT_COORDINATOR for a
// shard not held here, COORDINATOR_LOAD_IN_PROGRESS for one loading,
// REQUEST_TIMED_OUT when ctx ends first (the command may still take
// effect).
func (r Range) Do(ctx context.Context, i int, cmd any) (any, int16) {
	if i < 0 || i >= r.N {
		return nil, kerr.NotCoordinator.Code
	}
	ch, code := r.Set.Submit(ctx, r.Base+uint16(i), Request{Cmd: cmd})
	if code != 0 {
		return nil, code
	}
	select {
	case rp := <-ch:
		return rp.Out, 0
	case <-ctx.Done():
		return nil, kerr.RequestTimedOut.Code
	}
}
