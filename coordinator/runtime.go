// Package coordinator runs Cohort's group coordinator: shards of pure state
// machines, each driven by one event loop, whose records are group-committed
// to the store before any response that depends on them is released.
//
// This file is the shard runtime (Kafka's CoordinatorRuntime, one context
// per shard): a Runtime runs one shard's machine; shardset.go holds the
// shards a node serves. A Machine is pure: given (state, request, now) it returns
// records, replies and timer changes, and it changes its durable state only
// through its Replay (the one record rule, coordinator/machine), which the
// runtime calls for the stored records at load and the machine calls for
// each record it emits. The runtime does all the I/O, owns the clock, and
// is the only place with goroutines.
package coordinator

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Clock is the runtime's source of time. Machines never read a clock: they
// get now as an argument.
type Clock interface {
	Now() time.Time
	// At calls f in its own goroutine at t (at once if t has passed);
	// stop cancels it and reports whether it did so before f ran. The
	// deadline is absolute so that a fake clock moved by another
	// goroutine between a Now and the arming cannot shift it.
	At(t time.Time, f func()) (stop func() bool)
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// At wraps time.AfterFunc.
func (SystemClock) At(t time.Time, f func()) func() bool {
	return time.AfterFunc(time.Until(t), f).Stop
}

// The machine types, re-exported so that users of the runtime need one
// import.
type (
	RequestID = machine.RequestID
	Request   = machine.Request
	Record    = machine.Record
	Reply     = machine.Reply
	Push      = machine.Push
	Timer     = machine.Timer
	Output    = machine.Output
	Machine   = machine.Machine
)

// RuntimeConfig configures a Runtime.
type RuntimeConfig struct {
	// ID is the shard number; its records live under record.ShardPrefix.
	ID uint16
	// Store holds the records. Required. The runtime reads the shard from
	// it and writes through a handle it acquires for the shard's prefix
	// (store.Store.Acquire), so that once another runtime acquires the
	// shard (in this process or, in cluster mode, on another node) this
	// one can no longer write it.
	Store store.Store
	// New returns an empty machine. Required. The load calls it once;
	// under the invariants build tag the runtime calls it again now and
	// then to rebuild the machine from its records (invariants.go), so
	// it must do nothing but build a machine.
	New func() Machine
	// Fail answers a request the shard could not complete, with the
	// error code given: NOT_COORDINATOR when the shard is given up (its
	// records were not written, it was unloaded or fenced) so that the
	// client finds the coordinator again. Required.
	Fail func(req Request, code int16) Reply
	// Push delivers a machine's Push once the records before it are
	// durable. It is called from the shard's loop and must not block.
	// Nil: the machine never pushes.
	Push func(Push)
	// Lost is called, once and in a goroutine of its own, when the
	// runtime gives the shard up by itself: a store write failed (err
	// wraps store.ErrFenced when another owner has it). By then every
	// request in flight has been failed and later ones are refused with
	// ErrClosed; Close still has to be called. Nil: nothing is told.
	Lost func(err error)
	// Observer receives the batches written and the machine's group
	// events. Nil: none.
	Observer observe.Observer
	// Clock; nil means SystemClock.
	Clock Clock
	// Logger; nil discards.
	Logger *slog.Logger
	// MaxBatch caps the records in one store write. Default 4096.
	MaxBatch int
	// Topic is the shard's __consumer_offsets partition, fed with the
	// records the load finds and every batch once durable (the machine
	// emits the reservations of its offsets, groups' Reserver). Nil:
	// none (the assigner's shard, or the topic turned off).
	Topic *offsetstopic.Partition
	// Durable, if set, is handed every batch of records once written
	// (durable, unless the batch was NoSync: one no reply waits on),
	// from the goroutine that waits for the store, before the replies
	// that wait on it are released; so a view it feeds has what a reply
	// acknowledged by the time the reply leaves (the global unit's
	// views, GlobalUnit). It must not block. Nil: none.
	Durable func(recs []Record)
	// MaxWrites caps the store writes in flight at once: a new batch
	// starts while earlier ones are still syncing, so a record waits for
	// about one sync rather than the rest of the one under way and then
	// its own. Default 16 (measured: 150k offsets/s with 1, 180k with 4,
	// 200k with 16 in one process on 2 cores).
	MaxWrites int
}

// ErrClosed is returned by Submit once the runtime is closed or has given
// its shard up.
var ErrClosed = errors.New("coordinator: shard closed")

// notCoordinator is what a request for a shard this runtime no longer
// serves gets, as Kafka's runtime answers for a partition it unloaded.
var notCoordinator = kerr.NotCoordinator.Code

// call is a request in flight: submitted, not yet answered.
type call struct {
	ctx  context.Context
	req  Request
	done chan Reply
}

// held is a reply, push or group event waiting for the records before it
// to be durable.
type held struct {
	gate  uint64 // the sequence number of the last record before it
	reply Reply
	other *heldOther // a push or event instead of a reply
	// after is, for an early reply or push, the last record before its
	// output that must be durable first (strictMax then).
	after uint64
}

// heldOther is a held push or group event: rarer than replies, so held
// stays small (a shard holds one per reply in flight).
type heldOther struct {
	push  *Push
	event *observe.GroupEvent
	ctx   context.Context // the event's request
}

type event struct {
	submit  *call        // a new request
	fire    bool         // the clock timer went off
	wrote   *writeResult // the store write finished
	applied bool         // a store write took effect (Runtime.written moved)
	stop    chan struct{}
}

type writeResult struct {
	upTo uint64
	err  error
}

// Runtime runs one shard's machine on its own goroutine.
type Runtime struct {
	cfg    RuntimeConfig
	logger *slog.Logger
	obs    observe.Observer
	handle store.Handle
	events chan event
	done   chan struct{}

	// Loaded is what loading found: records replayed, and the time it took.
	loadedRecords int
	loadTook      time.Duration

	// mu orders Submit against Close and loss: every request submitted
	// before either is in events ahead of the stop.
	mu      sync.RWMutex
	closed  bool
	refused bool // given up: Submit refuses, Close still stops the loop

	// Everything below belongs to the loop goroutine.
	m        Machine
	nextID   RequestID
	inflight map[RequestID]*call
	seq      uint64   // sequence number of the last record produced
	durable  uint64   // records up to here are durable
	pending  []Record // produced, not yet started
	nwrites  int      // store writes in flight
	failing  error    // a write failed; give up once the rest are done
	lost     bool     // given up: every request fails
	held     []held   // in gate order
	early    []held   // early replies (Reply.Early, a one-log store), in gate order
	timers   timerHeap
	timerAt  map[string]int64 // Unix ns: a third of a time.Time, one per member
	stopWake func() bool
	wakeAt   time.Time
	writes   chan toWrite
	writer   sync.WaitGroup
	// syncs takes started writes to the waiter, which closes waited
	// when it is done.
	syncs  chan started
	waited chan struct{}
	// startFailed: a write failed to start, so written stops; it belongs
	// to whichever goroutine starts writes (start).
	startFailed bool

	// oneLog: the store is one log (store.OneLog), so early replies
	// leave once written rather than durable, and the loop starts its
	// writes itself (start). unsyncedOK: and records
	// may be written unsynced (not for a shard feeding the offsets
	// topic, which takes durable batches only).
	oneLog, unsyncedOK bool
	// written is the number of records whose store write has taken
	// effect, in order (start sets it; a failed write stops it).
	written atomic.Uint64
	// wantApplied tells the writer that early replies wait on written,
	// so that it wakes the loop when written moves.
	wantApplied atomic.Bool
	// inv checks the machine as it runs; nil without the invariants
	// build tag (invariants.go).
	inv *invariants

	// strictMax is the last record that must be synced: the last before
	// a reply, push or event that is not early. syncTo is the last record
	// a synced write (started) covers. On a one-log store a batch is
	// synced only if it holds strictMax (a later one covers the rest),
	// and an empty one (a barrier) is written when strictMax is past
	// syncTo with nothing pending; loop goroutine only.
	strictMax, syncTo uint64
}

// toWrite is a batch to start.
type toWrite struct {
	recs   []Record
	noSync bool // store.Batch.NoSync
}

// StartRuntime acquires the shard's write handle, loads the shard from the
// store and starts its loop.
func StartRuntime(cfg RuntimeConfig) (*Runtime, error) {
	if cfg.Store == nil || cfg.New == nil || cfg.Fail == nil {
		return nil, errors.New("coordinator: RuntimeConfig needs Store, New and Fail")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = observe.Nop{}
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 4096
	}
	if cfg.MaxWrites <= 0 {
		cfg.MaxWrites = 16
	}
	r := &Runtime{
		cfg:      cfg,
		logger:   cfg.Logger.With("shard", cfg.ID),
		obs:      cfg.Observer,
		events:   make(chan event, 1024),
		done:     make(chan struct{}),
		inflight: make(map[RequestID]*call),
		timerAt:  make(map[string]int64),
		// Room for every write in flight, so the loop never blocks on
		// starting one.
		writes: make(chan toWrite, cfg.MaxWrites),
	}
	if ol, ok := cfg.Store.(store.OneLog); ok && ol.OneLog() {
		r.oneLog, r.unsyncedOK = true, cfg.Topic == nil
	}
	// Acquire before reading: once the handle exists no earlier owner
	// can write, so the scan sees everything this shard will ever have
	// been told about.
	h, err := cfg.Store.Acquire(record.ShardPrefix(cfg.ID))
	if err != nil {
		return nil, fmt.Errorf("acquire shard %d: %w", cfg.ID, err)
	}
	r.handle = h
	if err := r.load(); err != nil {
		h.Release()
		return nil, err
	}
	r.syncs, r.waited = make(chan started, cfg.MaxWrites), make(chan struct{})
	go r.waiter(r.syncs, r.waited)
	if !r.oneLog {
		r.writer.Go(r.write)
	}
	go r.loop()
	return r, nil
}

// load builds a fresh machine from the stored records.
func (r *Runtime) load() error {
	m := r.cfg.New()
	if invariantsOn {
		r.inv = newInvariants(r.cfg.ID, r.cfg.New)
	}
	start := r.cfg.Clock.Now()
	n := 0
	t := r.cfg.Topic
	err := r.cfg.Store.Scan(record.ShardPrefix(r.cfg.ID), func(k, v []byte) error {
		if t != nil {
			if err := t.Load(k, v); err != nil {
				return err
			}
		}
		n++
		if invariantsOn {
			r.inv.loaded(k, v)
		}
		return m.Replay(Record{Key: k, Value: v})
	})
	if err != nil {
		return fmt.Errorf("load shard %d: %w", r.cfg.ID, err)
	}
	r.m = m
	if t != nil {
		t.Loaded(r.cfg.Clock.Now())
	}
	r.apply(context.Background(), m.Loaded(r.cfg.Clock.Now()))
	// The load's time includes the machine's Loaded, which at a
	// million groups takes a tenth of it or more. The shard set's
	// observer logs it.
	r.loadedRecords, r.loadTook = n, r.cfg.Clock.Now().Sub(start)
	return nil
}

// Loaded returns the number of records the runtime replayed at start and
// how long that took.
func (r *Runtime) Loaded() (records int, took time.Duration) {
	return r.loadedRecords, r.loadTook
}

// Submit hands a request to the shard (its ID is assigned here). The
// response arrives on the returned channel once the records it depends on
// are durable. ctx goes with the request to the observer's events; it
// does not reach the machine.
func (r *Runtime) Submit(ctx context.Context, req Request) (<-chan Reply, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed || r.refused {
		return nil, ErrClosed
	}
	c := &call{ctx: ctx, req: req, done: make(chan Reply, 1)}
	r.events <- event{submit: c}
	return c.done, nil
}

// Close stops the loop after the writes under way finish, and gives the
// shard's write handle up. Requests still in flight are answered with
// Fail(NOT_COORDINATOR). Calling it again does nothing.
func (r *Runtime) Close() {
	r.mu.Lock()
	already := r.closed
	r.closed = true
	r.mu.Unlock()
	if !already {
		r.events <- event{stop: make(chan struct{})}
	}
	<-r.done
}

func (r *Runtime) loop() {
	defer close(r.done)
	// What the load queued (the topic's reservation, records of Loaded)
	// goes out without waiting for a first event.
	for r.nwrites < r.cfg.MaxWrites && r.toFlush() {
		r.flush()
	}
	for ev := range r.events {
		switch {
		case ev.submit != nil && r.lost:
			ev.submit.done <- r.cfg.Fail(ev.submit.req, notCoordinator)
		case ev.submit != nil:
			r.nextID++
			id := r.nextID
			r.inflight[id] = ev.submit
			req := ev.submit.req
			req.ID = id
			r.apply(ev.submit.ctx, r.m.Handle(r.cfg.Clock.Now(), req))
		case ev.fire:
			if !r.lost {
				r.fireDue()
			}
		case ev.wrote != nil:
			r.wrote(ev.wrote)
		case ev.applied:
			r.release()
		case ev.stop != nil:
			r.shutdown()
			return
		}
		// Group commit: while MaxWrites writes are under way, records
		// pile up in pending; the next write takes them all.
		for r.failing == nil && !r.lost && r.nwrites < r.cfg.MaxWrites && r.toFlush() {
			r.flush()
		}
		if r.oneLog && len(r.early) > 0 {
			r.releaseEarly() // what was just started is written
		}
	}
}

func (r *Runtime) wrote(w *writeResult) {
	r.nwrites--
	if w.err != nil && r.failing == nil {
		r.failing = w.err
	}
	r.durable = w.upTo // the waiter counts only records that reached the store
	if r.failing == nil {
		r.release()
		return
	}
	// Give up only once no write is in flight, so that what is durable
	// is settled: replies whose records made it are released, the rest
	// fail.
	if r.nwrites == 0 && !r.lost {
		r.giveUp(r.failing)
	}
}

// giveUp handles a failed store write as Kafka's runtime handles losing a
// partition: the in-memory state may now be ahead of the store, so this
// runtime stops serving the shard. Replies whose records are durable go
// out; every other request in flight, and every later one, gets
// NOT_COORDINATOR, so that clients find the coordinator again; the owner
// of the runtime (ShardSet) is told through Lost and loads the shard
// afresh from the store.
func (r *Runtime) giveUp(err error) {
	if errors.Is(err, store.ErrFenced) {
		// INFO: how a shard moves when this node still wrote
		// (observe/logs.Observer.BatchWritten says more).
		r.logger.Info("shard taken by another owner; giving it up")
	} else {
		r.logger.Error("store write failed; giving the shard up", "err", err)
	}
	r.release()
	r.lost = true
	r.pending, r.held, r.early = nil, nil, nil
	r.wantApplied.Store(false)
	if r.cfg.Topic != nil {
		r.cfg.Topic.Close()
	}
	r.failAll()
	r.stopTimers()
	r.handle.Release()
	r.mu.Lock()
	r.refused = true
	r.mu.Unlock()
	if r.cfg.Lost != nil {
		go r.cfg.Lost(err)
	}
}

// apply queues an output's records for writing (the machine has applied
// them already), holds its replies, pushes and events behind them and
// updates the timers. ctx is the request that caused it (Background for
// a timer or a load).
func (r *Runtime) apply(ctx context.Context, out Output) {
	if invariantsOn {
		r.checked(r.inv.event(r.m, out.Records))
	}
	after := r.strictMax
	r.seq += uint64(len(out.Records))
	r.pending = append(r.pending, out.Records...)
	if !lazy(out) && len(out.Records)+len(out.Replies)+len(out.Pushes)+len(out.Events) > 0 {
		// Its records, or what it says of the records before it, must
		// be durable before it is answered.
		r.strictMax = r.seq
	}
	for _, rp := range out.Replies {
		if rp.Early && r.oneLog {
			r.early = append(r.early, held{gate: r.seq, reply: rp, after: after})
			continue
		}
		r.held = append(r.held, held{gate: r.seq, reply: rp})
	}
	for _, p := range out.Pushes {
		if p.Early && r.oneLog {
			r.early = append(r.early, held{gate: r.seq, other: &heldOther{push: &p}, after: after})
			continue
		}
		r.held = append(r.held, held{gate: r.seq, other: &heldOther{push: &p}})
	}
	for _, e := range out.Events {
		r.held = append(r.held, held{gate: r.seq, other: &heldOther{event: &e, ctx: ctx}})
	}
	for _, t := range out.Timers {
		if t.At.IsZero() {
			delete(r.timerAt, t.Key)
			continue
		}
		at := t.At.UnixNano()
		r.timerAt[t.Key] = at
		heap.Push(&r.timers, timerEntry{key: t.Key, at: at})
	}
	// Arm first: a caller that gets its reply and then moves a fake
	// clock must find the timers its request set already armed.
	r.arm()
	r.release()
}

// toFlush reports whether a write is due: records are pending, or a
// barrier (what is answered next needs records written unsynced).
func (r *Runtime) toFlush() bool {
	return len(r.pending) > 0 || r.unsyncedOK && r.strictMax > r.syncTo
}

// lazy reports whether an output's records need no sync of their own: all
// it has to say are early replies, whose truth a later synced write
// covers (machine.Reply.Early).
func lazy(out Output) bool {
	if len(out.Replies) == 0 || len(out.Pushes) > 0 || len(out.Events) > 0 {
		return false
	}
	for _, rp := range out.Replies {
		if !rp.Early {
			return false
		}
	}
	return true
}

// release answers every held reply whose records are durable, and every
// early one whose records are written.
func (r *Runtime) release() {
	if len(r.early) > 0 {
		r.releaseEarly()
	}
	i := 0
	for ; i < len(r.held) && r.held[i].gate <= r.durable; i++ {
		h := r.held[i]
		switch {
		case h.other != nil && h.other.push != nil:
			if r.cfg.Push != nil {
				r.cfg.Push(*h.other.push)
			}
		case h.other != nil:
			r.obs.Group(h.other.ctx, *h.other.event)
		default:
			if c, ok := r.inflight[h.reply.To]; ok {
				delete(r.inflight, h.reply.To)
				c.done <- h.reply
			}
		}
	}
	if i == len(r.held) {
		clear(r.held) // drop the replies' references
		r.held = r.held[:0]
	} else {
		r.held = r.held[i:]
	}
}

// releaseEarly answers (or pushes) the early replies and pushes whose
// records are written and whose strict records before them are durable
// (all of them in order; after a failed write, only those durable).
func (r *Runtime) releaseEarly() {
	for {
		upTo := r.durable
		if r.failing == nil && !r.lost {
			upTo = max(upTo, r.written.Load())
		}
		i := 0
		for ; i < len(r.early) && r.early[i].gate <= upTo && r.early[i].after <= r.durable; i++ {
			h := r.early[i]
			if h.other != nil {
				if r.cfg.Push != nil {
					r.cfg.Push(*h.other.push)
				}
				continue
			}
			if c, ok := r.inflight[h.reply.To]; ok {
				delete(r.inflight, h.reply.To)
				c.done <- h.reply
			}
		}
		clear(r.early[:i])
		r.early = r.early[i:]
		// The flag is set before written is read again: a write that
		// lands in between sees it and wakes the loop. One waiting for
		// durable records is woken by their write's result.
		r.wantApplied.Store(len(r.early) > 0 && r.early[0].after <= r.durable)
		if len(r.early) == 0 || r.failing != nil || r.lost || r.early[0].after > r.durable || r.written.Load() < r.early[0].gate {
			return
		}
	}
}

func (r *Runtime) flush() {
	n := min(len(r.pending), r.cfg.MaxBatch)
	batch := r.pending[:n:n]
	r.pending = r.pending[n:]
	r.nwrites++
	// The batch's last record: the pending ones after it end at seq.
	to := r.seq - uint64(len(r.pending))
	// Unsynced only for records nothing durable waits on: none of the
	// records up to strictMax are in it, or a synced write already
	// covers them.
	noSync := r.unsyncedOK && (r.strictMax <= r.syncTo || r.strictMax > to)
	if !noSync {
		r.syncTo = to
	}
	if r.oneLog {
		r.syncs <- r.start(toWrite{recs: batch, noSync: noSync})
		return
	}
	r.writes <- toWrite{recs: batch, noSync: noSync}
}

// started is a write handed to the store: wait returns once it is
// durable.
type started struct {
	n, bytes int
	at       time.Time
	wait     func() error
	batch    []Record // for the topic, once durable
	noSync   bool     // not synced: durable with the next synced batch
}

// write starts batches in order through the shard's handle, for a store
// whose writes may wait (etcd's queue is bounded), so that the loop keeps
// answering meanwhile. A batch is started while earlier ones are still
// syncing, and waiter waits for them in order.
func (r *Runtime) write() {
	for w := range r.writes {
		st := r.start(w)
		if r.wantApplied.Load() && !r.startFailed {
			select {
			case r.events <- event{applied: true}:
			default: // the loop is busy: its next event releases them
			}
		}
		r.syncs <- st
	}
}

// start hands a batch to the store: ApplyAsync orders it in the log and
// returns at once, and the started write's wait returns once it is
// durable. It moves written while every batch so far has started. The
// loop calls it itself where the store is one log (Pebble: ordering a
// batch costs microseconds, as appending to the log does in Kafka's
// coordinator runtime), and saves two goroutine hand-offs a batch; the
// writer calls it otherwise.
func (r *Runtime) start(w toWrite) started {
	batch := w.recs
	b := store.Batch{Ops: make([]store.Op, 0, len(batch)), NoSync: w.noSync, Barrier: len(batch) == 0}
	size := 0
	for _, rec := range batch {
		size += len(rec.Key) + len(rec.Value)
		if rec.Value == nil {
			b.Delete(rec.Key)
		} else {
			b.Put(rec.Key, rec.Value)
		}
	}
	st := started{n: len(batch), bytes: size, at: time.Now(), batch: batch, noSync: w.noSync}
	wait, err := r.handle.ApplyAsync(&b)
	if err != nil {
		wait = func() error { return err }
		r.startFailed = true // written stops: the log has a hole here
	} else if !r.startFailed {
		r.written.Add(uint64(len(batch)))
	}
	st.wait = wait
	return st
}

// waiter reports each started write's outcome, in order.
func (r *Runtime) waiter(syncs <-chan started, done chan<- struct{}) {
	defer close(done)
	var written, unsynced uint64
	var failed error
	for st := range syncs {
		err := st.wait()
		if err == nil && failed != nil {
			// Records are durable only in order: after a failed batch,
			// a later one that happened to land does not make the
			// failed one's replies true.
			err = fmt.Errorf("an earlier batch failed: %w", failed)
		}
		switch {
		case err != nil:
			if failed == nil {
				failed = err
			}
		case st.noSync:
			// Written, not durable: the next synced batch of the
			// log makes it so.
			unsynced += uint64(st.n)
		default:
			written += unsynced + uint64(st.n)
			unsynced = 0
		}
		r.obs.BatchWritten(observe.Batch{Shard: r.cfg.ID, Records: st.n, Bytes: st.bytes, Latency: time.Since(st.at), Err: err})
		if err == nil && r.cfg.Durable != nil && len(st.batch) > 0 {
			r.cfg.Durable(st.batch)
		}
		r.events <- event{wrote: &writeResult{upTo: written, err: err}}
		// After the replies' release is under way: the topic only
		// queues the batch, and never delays a commit.
		if err == nil && r.cfg.Topic != nil {
			r.cfg.Topic.Durable(r.cfg.Clock.Now(), st.batch)
		}
	}
}

func (r *Runtime) failAll() {
	for id, c := range r.inflight {
		c.done <- r.cfg.Fail(c.req, notCoordinator)
		delete(r.inflight, id)
	}
}

func (r *Runtime) stopTimers() {
	if r.stopWake != nil {
		r.stopWake()
		r.stopWake = nil
	}
	r.timers = r.timers[:0]
	clear(r.timerAt)
}

func (r *Runtime) shutdown() {
	// Let what is pending reach the store, so that replies already
	// released stay true and held ones can still be released.
	for {
		for r.failing == nil && !r.lost && r.nwrites < r.cfg.MaxWrites && r.toFlush() {
			r.flush()
		}
		if r.nwrites == 0 {
			break
		}
		ev := <-r.events
		switch {
		case ev.wrote != nil:
			r.wrote(ev.wrote)
		case ev.submit != nil:
			ev.submit.done <- r.cfg.Fail(ev.submit.req, notCoordinator)
		}
	}
	close(r.writes)
	r.writer.Wait() // no writer where the loop starts its writes
	close(r.syncs)
	<-r.waited
	r.stopTimers()
	r.failAll()
	if r.cfg.Topic != nil {
		r.cfg.Topic.Close()
	}
	if !r.lost {
		r.handle.Release()
	}
	if invariantsOn {
		r.checked(r.inv.closing(r.m))
	}
}

// checked stops the process on a broken invariant (invariants.go): the
// test that ran it fails, with the shard and what broke.
func (r *Runtime) checked(err error) {
	if err != nil {
		panic(err.Error())
	}
}

// arm sets the clock for the earliest live timer.
func (r *Runtime) arm() {
	for len(r.timers) > 0 {
		top := r.timers[0]
		if at, ok := r.timerAt[top.key]; !ok || at != top.at {
			heap.Pop(&r.timers) // cancelled or replaced
			continue
		}
		break
	}
	if len(r.timers) == 0 {
		return
	}
	at := time.Unix(0, r.timers[0].at)
	if r.stopWake != nil && r.wakeAt.Equal(at) {
		return
	}
	if r.stopWake != nil {
		r.stopWake()
	}
	r.wakeAt = at
	r.stopWake = r.cfg.Clock.At(at, func() {
		select {
		case r.events <- event{fire: true}:
		case <-r.done:
		}
	})
}

// fireDue runs every timer that is due, earliest first.
func (r *Runtime) fireDue() {
	r.stopWake, r.wakeAt = nil, time.Time{}
	for len(r.timers) > 0 {
		now := r.cfg.Clock.Now()
		top := r.timers[0]
		if at, ok := r.timerAt[top.key]; !ok || at != top.at {
			heap.Pop(&r.timers)
			continue
		}
		if top.at > now.UnixNano() {
			break
		}
		heap.Pop(&r.timers)
		delete(r.timerAt, top.key)
		r.apply(context.Background(), r.m.Fire(now, top.key))
	}
	r.arm()
}

type timerEntry struct {
	key string
	at  int64 // Unix ns
}

type timerHeap []timerEntry

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
