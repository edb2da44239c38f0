// Package observetest is an observe.Observer that keeps every event, for
// tests (Cohort's and embedders') to wait for and inspect.
package observetest

import (
	"context"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/observe"
)

// Answered is a request and how it was answered.
type Answered struct {
	Request observe.Request
	Answer  observe.Answer
	Code    int16 // Answer.ErrorCode()
	// Ctx is the context RequestAnswered got.
	Ctx context.Context
}

// GroupEvent is a group event and the context it came with.
type GroupEvent struct {
	observe.GroupEvent
	Ctx context.Context
}

// Recorder keeps every event. The zero value is ready.
type Recorder struct {
	mu       sync.Mutex
	changed  chan struct{}
	received []observe.Request
	answered []Answered
	batches  []observe.Batch
	groups   []GroupEvent
	shards   []observe.ShardEvent
	cluster  []observe.ClusterEvent
}

var _ observe.Observer = (*Recorder)(nil)

// ctxKey marks contexts that went through RequestReceived.
type ctxKey struct{}

// Received returns the request a context was made for by RequestReceived.
func Received(ctx context.Context) (observe.Request, bool) {
	r, ok := ctx.Value(ctxKey{}).(observe.Request)
	return r, ok
}

func (r *Recorder) add(f func()) {
	r.mu.Lock()
	f()
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	r.mu.Unlock()
}

// RequestReceived records the request and returns a context that carries
// it (see Received).
func (r *Recorder) RequestReceived(ctx context.Context, req observe.Request) context.Context {
	r.add(func() { r.received = append(r.received, req) })
	return context.WithValue(ctx, ctxKey{}, req)
}

// RequestAnswered records the answer.
func (r *Recorder) RequestAnswered(ctx context.Context, req observe.Request, a observe.Answer) {
	code := a.ErrorCode()
	r.add(func() { r.answered = append(r.answered, Answered{req, a, code, ctx}) })
}

// BatchWritten records the batch.
func (r *Recorder) BatchWritten(b observe.Batch) { r.add(func() { r.batches = append(r.batches, b) }) }

// Group records the event.
func (r *Recorder) Group(ctx context.Context, e observe.GroupEvent) {
	r.add(func() { r.groups = append(r.groups, GroupEvent{e, ctx}) })
}

// Shard records the event.
func (r *Recorder) Shard(e observe.ShardEvent) { r.add(func() { r.shards = append(r.shards, e) }) }

// Cluster records the event.
func (r *Recorder) Cluster(e observe.ClusterEvent) {
	r.add(func() { r.cluster = append(r.cluster, e) })
}

// Snapshot is a copy of what was recorded.
type Snapshot struct {
	Received []observe.Request
	Answered []Answered
	Batches  []observe.Batch
	Groups   []GroupEvent
	Shards   []observe.ShardEvent
	Cluster  []observe.ClusterEvent
}

// Snapshot returns a copy of everything recorded so far.
func (r *Recorder) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Snapshot{
		Received: append([]observe.Request(nil), r.received...),
		Answered: append([]Answered(nil), r.answered...),
		Batches:  append([]observe.Batch(nil), r.batches...),
		Groups:   append([]GroupEvent(nil), r.groups...),
		Shards:   append([]observe.ShardEvent(nil), r.shards...),
		Cluster:  append([]observe.ClusterEvent(nil), r.cluster...),
	}
}

// Wait returns the first snapshot for which cond holds, or the last one
// and false once timeout has passed.
func (r *Recorder) Wait(timeout time.Duration, cond func(Snapshot) bool) (Snapshot, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		s := r.Snapshot()
		if cond(s) {
			return s, true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return r.Snapshot(), false
		}
	}
}
