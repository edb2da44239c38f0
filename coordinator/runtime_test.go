package coordinator_test

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// counters is a toy machine for testing the runtime: named counters kept
// as records. Requests ride in InitProducerID requests (TransactionalID =
// "op:name", ProducerID = argument) and answers in InitProducerID
// responses (ProducerID = value).
//
//	inc:name          +1, durable, answers the new value
//	get:name          answers the value (no record)
//	park:name         answers later, when release:name comes
//	release:name      answers every parked request of name with its value, and itself
//	timer:name        (ProducerID = ms) after that long, +100 by a timer
type counters struct {
	shard  uint16
	values map[string]int64
	parked map[string][]coordinator.RequestID
	loaded int
	rec    machine.Recorder
}

func newCounters(shard uint16) func() coordinator.Machine {
	return func() coordinator.Machine {
		c := &counters{shard: shard, values: map[string]int64{}, parked: map[string][]coordinator.RequestID{}}
		c.rec.Replay = c.Replay
		return c
	}
}

func (c *counters) key(name string) []byte {
	return append(record.ShardPrefix(c.shard), name...)
}

func (c *counters) Replay(r coordinator.Record) error {
	name := string(r.Key[len(record.ShardPrefix(c.shard)):])
	if r.Value == nil {
		delete(c.values, name)
		return nil
	}
	if len(r.Value) != 8 {
		return errors.New("bad counter value")
	}
	c.values[name] = int64(binary.BigEndian.Uint64(r.Value))
	return nil
}

func (c *counters) Loaded(time.Time) coordinator.Output { c.loaded++; return coordinator.Output{} }

// set emits the counter's new value: the one record rule.
func (c *counters) set(name string, v int64) []coordinator.Record {
	c.rec.Emit(c.key(name), binary.BigEndian.AppendUint64(nil, uint64(v)))
	return c.rec.Take()
}

func answer(id coordinator.RequestID, v int64) coordinator.Reply {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID = v
	return coordinator.Reply{To: id, Resp: resp}
}

func (c *counters) Handle(now time.Time, req coordinator.Request) coordinator.Output {
	r := req.Msg.(*kmsg.InitProducerIDRequest)
	op, name, _ := strings.Cut(*r.TransactionalID, ":")
	v := c.values[name]
	switch op {
	case "inc":
		return coordinator.Output{Records: c.set(name, v+1), Replies: []coordinator.Reply{answer(req.ID, v+1)}}
	case "get":
		return coordinator.Output{Replies: []coordinator.Reply{answer(req.ID, v)}}
	case "park":
		c.parked[name] = append(c.parked[name], req.ID)
		return coordinator.Output{}
	case "release":
		out := coordinator.Output{Replies: []coordinator.Reply{answer(req.ID, v)}}
		for _, id := range c.parked[name] {
			out.Replies = append(out.Replies, answer(id, v))
		}
		delete(c.parked, name)
		return out
	case "push":
		// A record, then a push that must wait for it.
		return coordinator.Output{
			Records: c.set(name, v+1),
			Pushes:  []coordinator.Push{{Stream: uint64(r.ProducerID), Msg: v + 1}},
			Replies: []coordinator.Reply{answer(req.ID, v+1)},
		}
	case "timer":
		return coordinator.Output{
			Timers:  []coordinator.Timer{{Key: name, At: now.Add(time.Duration(r.ProducerID) * time.Millisecond)}},
			Replies: []coordinator.Reply{answer(req.ID, v)},
		}
	}
	panic("unknown op " + op)
}

func (c *counters) Fire(_ time.Time, key string) coordinator.Output {
	return coordinator.Output{Records: c.set(key, c.values[key]+100)}
}

func fail(req coordinator.Request, code int16) coordinator.Reply {
	resp := req.Msg.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ErrorCode = code
	return coordinator.Reply{Resp: resp}
}

func op(s string, arg int64) kmsg.Request {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &s
	req.ProducerID = arg
	return req
}

// holdStore wraps a store: while held, Apply waits until released; it can
// also fail the next Apply once.
type holdStore struct {
	store.Store
	mu       sync.Mutex
	held     chan struct{} // nil: not held
	applies  int
	failNext bool
	entered  chan struct{}
}

func (h *holdStore) Apply(b *store.Batch) error {
	h.mu.Lock()
	h.applies++
	wait, failNow := h.held, h.failNext
	h.failNext = false
	h.mu.Unlock()
	if wait != nil {
		select {
		case h.entered <- struct{}{}:
		default:
		}
		<-wait
	}
	if failNow {
		return errors.New("injected store failure")
	}
	return h.Store.Apply(b)
}

// hold makes Apply wait until unhold; a test that fails meanwhile is
// released at cleanup, so that closing the shard cannot hang.
func (h *holdStore) hold(t *testing.T) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := make(chan struct{})
	h.held = c
	var once sync.Once
	unhold := func() {
		once.Do(func() {
			h.mu.Lock()
			h.held = nil
			h.mu.Unlock()
			close(c)
		})
	}
	t.Cleanup(unhold)
	return unhold
}

type env struct {
	t     *testing.T
	st    *holdStore
	store store.Store // st, or st pipelining
	clock *testkit.FakeClock
	shard *coordinator.Shard
	// pushes receives what the machine pushes to streams.
	pushes chan coordinator.Push
}

// TestRuntime runs every runtime test twice: with a store that applies
// one batch at a time, and with one that pipelines (store.Pipeliner), as
// Pebble does.
func TestRuntime(t *testing.T) {
	tests := map[string]func(*testing.T){
		"ReplyWaitsForDurability": testReplyWaitsForDurability,
		"PushWaitsForDurability":  testPushWaitsForDurability,
		"GroupCommit":             testGroupCommit,
		"ParkedRequests":          testParkedRequests,
		"Timers":                  testTimers,
		"ReplayEqualsLive":        testReplayEqualsLive,
		"StoreFailure":            testStoreFailure,
		"Close":                   testClose,
	}
	for _, mode := range []string{"serial", "pipelined"} {
		for name, fn := range tests {
			t.Run(mode+"/"+name, fn)
		}
	}
}

func newEnv(t *testing.T) *env {
	st, err := pebble.Open(filepath.Join(t.TempDir(), "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, st: &holdStore{Store: st, entered: make(chan struct{}, 1)}, clock: testkit.NewFakeClock(time.Unix(1700000000, 0)), pushes: make(chan coordinator.Push, 16)}
	e.store = e.st
	if strings.Contains(t.Name(), "/pipelined/") {
		e.store = pipeStore{e.st}
	}
	e.start()
	return e
}

// pipeStore is a holdStore that pipelines: ApplyAsync orders the batch
// in Pebble at once; holding and injected failures act on the wait, as a
// slow or failing sync would.
type pipeStore struct{ *holdStore }

func (p pipeStore) ApplyAsync(b *store.Batch) (func() error, error) {
	h := p.holdStore
	h.mu.Lock()
	h.applies++
	held, failNow := h.held, h.failNext
	h.failNext = false
	h.mu.Unlock()
	wait := func() error { return errors.New("injected store failure") }
	if !failNow {
		w, err := h.Store.(store.Pipeliner).ApplyAsync(b)
		if err != nil {
			return nil, err
		}
		wait = w
	}
	return func() error {
		if held != nil {
			select {
			case h.entered <- struct{}{}:
			default:
			}
			<-held
		}
		return wait()
	}, nil
}

func (e *env) start() {
	sh, err := coordinator.StartShard(coordinator.ShardConfig{ID: 7, Store: e.store, New: newCounters(7), Fail: fail, Clock: e.clock,
		Push: func(p coordinator.Push) { e.pushes <- p }})
	if err != nil {
		e.t.Fatal(err)
	}
	e.shard = sh
	e.t.Cleanup(sh.Close)
}

func (e *env) submit(s string, arg int64) <-chan coordinator.Reply {
	e.t.Helper()
	ch, err := e.shard.Submit(coordinator.Request{Msg: op(s, arg)})
	if err != nil {
		e.t.Fatalf("submit %s: %v", s, err)
	}
	return ch
}

func (e *env) wait(ch <-chan coordinator.Reply) *kmsg.InitProducerIDResponse {
	e.t.Helper()
	select {
	case r := <-ch:
		return r.Resp.(*kmsg.InitProducerIDResponse)
	case <-time.After(30 * time.Second):
		e.t.Fatal("no response within 30s")
		return nil
	}
}

func (e *env) do(s string, arg int64) int64 {
	e.t.Helper()
	r := e.wait(e.submit(s, arg))
	if r.ErrorCode != 0 {
		e.t.Fatalf("%s: error %d", s, r.ErrorCode)
	}
	return r.ProducerID
}

// TestReplyWaitsForDurability: a reply that depends on a record is not
// released while the store write is held, and is once it completes; a read
// submitted behind it waits too, so nobody sees state that is not durable.
func testReplyWaitsForDurability(t *testing.T) {
	e := newEnv(t)
	unhold := e.st.hold(t)
	inc := e.submit("inc:a", 0)
	<-e.st.entered
	get := e.submit("get:b", 0)
	// Every reply waits for all records produced before it, so even a
	// read of another counter is held: nobody sees state that may not
	// survive. (A negative check: it can only pass wrongly, not fail
	// wrongly, if the machine is slow.)
	select {
	case r := <-inc:
		t.Fatalf("inc answered (%v) before its record was durable", r)
	case r := <-get:
		t.Fatalf("a read behind an undurable write was answered (%v)", r)
	case <-time.After(200 * time.Millisecond):
	}
	unhold()
	if v := e.wait(inc).ProducerID; v != 1 {
		t.Fatalf("inc = %d, want 1", v)
	}
	if v := e.wait(get).ProducerID; v != 0 {
		t.Fatalf("get:b = %d, want 0", v)
	}
}

// testPushWaitsForDurability: a push, like a reply, leaves only once the
// records before it are durable.
func testPushWaitsForDurability(t *testing.T) {
	e := newEnv(t)
	unhold := e.st.hold(t)
	ch := e.submit("push:p", 9)
	<-e.st.entered
	select {
	case p := <-e.pushes:
		t.Fatalf("pushed %+v before its record was durable", p)
	case <-time.After(200 * time.Millisecond):
	}
	unhold()
	e.wait(ch)
	select {
	case p := <-e.pushes:
		if p.Stream != 9 || p.Msg != int64(1) {
			t.Fatalf("push %+v, want stream 9, 1", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no push after the record was durable")
	}
}

// testGroupCommit: many concurrent increments share store writes, and each
// gets its own value.
func testGroupCommit(t *testing.T) {
	e := newEnv(t)
	unhold := e.st.hold(t)
	first := e.submit("inc:n", 0)
	<-e.st.entered // one write is under way; the rest pile up behind it
	const n = 300
	chs := make([]<-chan coordinator.Reply, n)
	for i := range chs {
		chs[i] = e.submit("inc:n", 0)
	}
	unhold()
	seen := map[int64]bool{e.wait(first).ProducerID: true}
	for _, ch := range chs {
		seen[e.wait(ch).ProducerID] = true
	}
	if len(seen) != n+1 {
		t.Fatalf("%d distinct values for %d increments", len(seen), n+1)
	}
	e.st.mu.Lock()
	applies := e.st.applies
	e.st.mu.Unlock()
	if applies > n/2 {
		t.Errorf("%d store writes for %d increments: no group commit", applies, n+1)
	}
	t.Logf("%d increments in %d store writes", n+1, applies)
}

// testParkedRequests: a request the machine cannot answer yet is answered
// by a later event, as a JoinGroup parked on the barrier will be.
func testParkedRequests(t *testing.T) {
	e := newEnv(t)
	p1, p2 := e.submit("park:x", 0), e.submit("park:x", 0)
	e.do("inc:x", 0)
	select {
	case <-p1:
		t.Fatal("parked request answered before release")
	default:
	}
	if v := e.do("release:x", 0); v != 1 {
		t.Fatalf("release = %d", v)
	}
	if a, b := e.wait(p1).ProducerID, e.wait(p2).ProducerID; a != 1 || b != 1 {
		t.Fatalf("parked answers %d, %d; want 1, 1", a, b)
	}
}

// TestTimers: timers fire in fake time, in order, and not before due.
func testTimers(t *testing.T) {
	e := newEnv(t)
	e.do("timer:t", 5000)
	e.do("timer:u", 2000)
	e.do("timer:gone", 1000)
	e.do("timer:gone", 60000) // re-set: the earlier deadline is cancelled
	e.clock.Advance(1999 * time.Millisecond)
	if v := e.do("get:u", 0); v != 0 {
		t.Fatalf("timer u fired early: %d", v)
	}
	e.clock.Advance(time.Millisecond)
	if v := e.do("get:u", 0); v != 100 {
		t.Fatalf("timer u at its deadline: %d, want 100", v)
	}
	if v := e.do("get:gone", 0); v != 0 {
		t.Fatalf("replaced timer fired at its old deadline: %d", v)
	}
	e.clock.Advance(3 * time.Second)
	if v, w := e.do("get:t", 0), e.do("get:gone", 0); v != 100 || w != 0 {
		t.Fatalf("after 5s: t=%d gone=%d, want 100, 0", v, w)
	}
	e.clock.Advance(time.Minute)
	if v := e.do("get:gone", 0); v != 100 {
		t.Fatalf("re-set timer: %d, want 100", v)
	}
}

// TestReplayEqualsLive: after random work, a fresh shard loaded from the
// store has exactly the state the live one had.
func testReplayEqualsLive(t *testing.T) {
	e := newEnv(t)
	rng := rand.New(rand.NewSource(1))
	live := map[string]int64{}
	var chs []<-chan coordinator.Reply
	for i := 0; i < 500; i++ {
		name := string(rune('a' + rng.Intn(8)))
		live[name]++
		chs = append(chs, e.submit("inc:"+name, 0))
	}
	for _, ch := range chs {
		e.wait(ch)
	}
	e.shard.Close()
	e.start()
	for name, v := range live {
		if got := e.do("get:"+name, 0); got != v {
			t.Errorf("after reload %s = %d, live had %d", name, got, v)
		}
	}
}

// TestStoreFailure: a failed write answers the requests waiting on it with
// COORDINATOR_NOT_AVAILABLE, the shard reloads from the store (dropping
// the state the failed records described), and it goes on working.
func testStoreFailure(t *testing.T) {
	e := newEnv(t)
	e.do("inc:f", 0)
	parked := e.submit("park:f", 0)
	e.st.mu.Lock()
	e.st.failNext = true
	e.st.mu.Unlock()
	if r := e.wait(e.submit("inc:f", 0)); r.ErrorCode != 15 {
		t.Fatalf("inc during a failed write: error %d, want 15 (COORDINATOR_NOT_AVAILABLE)", r.ErrorCode)
	}
	if r := e.wait(parked); r.ErrorCode != 15 {
		t.Fatalf("parked request across a reload: error %d, want 15", r.ErrorCode)
	}
	if v := e.do("get:f", 0); v != 1 {
		t.Fatalf("after reload f = %d, want the durable 1", v)
	}
	if v := e.do("inc:f", 0); v != 2 {
		t.Fatalf("inc after reload = %d, want 2", v)
	}
}

// testClose: requests in flight at Close are failed, later ones refused.
func testClose(t *testing.T) {
	e := newEnv(t)
	parked := e.submit("park:c", 0)
	e.do("inc:c", 0)
	e.shard.Close()
	if r := e.wait(parked); r.ErrorCode != 15 {
		t.Fatalf("parked at close: error %d, want 15", r.ErrorCode)
	}
	if _, err := e.shard.Submit(coordinator.Request{Msg: op("get:c", 0)}); !errors.Is(err, coordinator.ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
	e.shard.Close() // idempotent
}
