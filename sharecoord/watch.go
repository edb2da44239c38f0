package sharecoord

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/record"
)

// Watch waits for share partitions to change, for a long-polling
// ShareFetch (MaxWaitMs) that found nothing to acquire: records become
// available again when a lock expires, a member releases them or leaves,
// or acknowledgements make room under the in-flight limit, and the
// machine says nothing of that by itself. Take the Watch before the look
// (Next, Acquire) whose emptiness it waits on, so that a change between
// the look and the wait is not missed; wait on C with the request's
// deadline; Stop it.
//
// A partition changes when its durable state does (an acknowledgement,
// a release, a lock expiring, a member's records given back, the log
// start moving, an alter, a delete, its initialisation), which is what
// Kafka's share-partition leader wakes its delayed fetches on
// (acknowledge, releaseAcquiredRecords, the acquisition lock's timeout),
// and when its shard is unloaded or given up (the next look is answered
// NOT_COORDINATOR at once), and when the host closes. C is signalled
// once; a spurious signal costs the caller one more look.
//
// Memory: a Watch holds one entry per partition it names, removed when
// the partition changes or the Watch stops; nothing is kept for a
// partition nobody watches, however many partitions there are. A
// long-polling ShareFetch waits with its request's bytes still taken
// from the wire layer's request budget (--queued-max-request-bytes), so
// that budget bounds the fetches waiting, and these entries.
type Watch struct {
	c    chan struct{}
	keys []sharestate.Key
	w    *watchers
}

// Watch returns a watch of the partitions named.
func (h *Host) Watch(keys ...sharestate.Key) *Watch {
	return h.watch.add(slices.Clone(keys))
}

// C is signalled once a partition watched changes.
func (w *Watch) C() <-chan struct{} { return w.c }

// Stop removes what is left of the watch. Calling it again does nothing.
func (w *Watch) Stop() {
	for _, k := range w.keys {
		st := w.w.stripe(k)
		st.mu.Lock()
		list := st.m[k]
		n := len(list)
		list = slices.DeleteFunc(list, func(x *Watch) bool { return x == w })
		if len(list) == 0 {
			delete(st.m, k)
		} else {
			st.m[k] = list
		}
		st.mu.Unlock()
		w.w.n.Add(-int64(n - len(list)))
	}
	w.keys = nil
}

func (w *Watch) signal() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// stripes splits the watched partitions over locks, so that the shards'
// loops waking partitions and the fetches adding and removing watches
// rarely meet on one.
const stripes = 64

// watchers is every Watch by partition.
type watchers struct {
	// n counts the entries, so that a shard's loop skips all of it
	// while nobody watches anything.
	n    atomic.Int64
	seed maphash.Seed
	s    [stripes]stripe
}

type stripe struct {
	mu sync.Mutex
	m  map[sharestate.Key][]*Watch
}

func (ws *watchers) init() {
	ws.seed = maphash.MakeSeed()
	for i := range ws.s {
		ws.s[i].m = map[sharestate.Key][]*Watch{}
	}
}

func (ws *watchers) stripe(k sharestate.Key) *stripe {
	return &ws.s[maphash.Comparable(ws.seed, k)%stripes]
}

func (ws *watchers) add(keys []sharestate.Key) *Watch {
	w := &Watch{c: make(chan struct{}, 1), keys: keys, w: ws}
	// Counted first: a wake that finds the count zero must find no
	// entry either.
	ws.n.Add(int64(len(keys)))
	for _, k := range keys {
		st := ws.stripe(k)
		st.mu.Lock()
		st.m[k] = append(st.m[k], w)
		st.mu.Unlock()
	}
	return w
}

// any reports whether anything is watched.
func (ws *watchers) any() bool { return ws.n.Load() > 0 }

// wake signals the watches of k and removes them from k.
func (ws *watchers) wake(k sharestate.Key) {
	if !ws.any() {
		return
	}
	st := ws.stripe(k)
	st.mu.Lock()
	list := st.m[k]
	delete(st.m, k)
	st.mu.Unlock()
	ws.n.Add(-int64(len(list)))
	for _, w := range list {
		w.signal()
	}
}

// wakeIf wakes every partition watched that match is true of.
func (ws *watchers) wakeIf(match func(sharestate.Key) bool) {
	if !ws.any() {
		return
	}
	for i := range ws.s {
		st := &ws.s[i]
		var woken []*Watch
		st.mu.Lock()
		for k, list := range st.m {
			if match(k) {
				woken = append(woken, list...)
				delete(st.m, k)
			}
		}
		st.mu.Unlock()
		ws.n.Add(-int64(len(woken)))
		for _, w := range woken {
			w.signal()
		}
	}
}

// shard is a share-state shard's machine as the host runs it: the pure
// machine, and after each event the partitions whose records it wrote
// woken. It wakes them from the shard's loop as the records are emitted,
// before they are durable: a woken fetch's next look runs after the
// change in the same loop, and its answer waits for the change's records
// like any answer.
type shard struct {
	*sharestate.Shard
	watch *watchers
	// letters is told of the partitions with new dead letters
	// (Config.DeadLetters), or nil.
	letters func([]sharestate.Key)
}

// Handle implements machine.Machine.
func (s *shard) Handle(now time.Time, req machine.Request) machine.Output {
	out := s.Shard.Handle(now, req)
	s.changed(out.Records)
	s.deadLetters()
	return out
}

// Fire implements machine.Machine: a lock timer's records are the locks
// that expired, their records available again.
func (s *shard) Fire(now time.Time, key string) machine.Output {
	out := s.Shard.Fire(now, key)
	s.changed(out.Records)
	s.deadLetters()
	return out
}

// Loaded implements machine.Machine: the partitions that still hold dead
// letters are named again.
func (s *shard) Loaded(now time.Time) machine.Output {
	out := s.Shard.Loaded(now)
	s.deadLetters()
	return out
}

// deadLetters hands the partitions with new dead letters on.
func (s *shard) deadLetters() {
	if ks := s.Shard.TakeDeadLetters(); len(ks) > 0 && s.letters != nil {
		s.letters(ks)
	}
}

// changed wakes the partitions recs belong to.
func (s *shard) changed(recs []machine.Record) {
	if len(recs) == 0 || !s.watch.any() {
		return
	}
	var last sharestate.Key
	woke := false
	for _, r := range recs {
		// An event's records are mostly one partition's.
		if k, ok := partitionOf(r.Key); ok && (!woke || k != last) {
			s.watch.wake(k)
			last, woke = k, true
		}
	}
}

// partitionOf returns the partition a share-state record key names.
func partitionOf(key []byte) (sharestate.Key, bool) {
	_, k, err := record.ParseKey(key)
	if err != nil {
		return sharestate.Key{}, false
	}
	var sk record.ShareKey
	switch k := k.(type) {
	case record.ShareKey:
		sk = k
	case record.ShareUpdateKey:
		sk = k.ShareKey
	default:
		return sharestate.Key{}, false
	}
	return sharestate.Key{Tenant: sk.Tenant, Group: sk.Group, TopicID: sk.TopicID, Partition: sk.Partition}, true
}
