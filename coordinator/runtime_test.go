package coordinator_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/internal/clocktest"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/observetest"
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
//	early:name        +1, answers the new value early (Reply.Early)
//	get:name          answers the value (no record)
//	park:name         answers later, when release:name comes
//	release:name      answers every parked request of name with its value, and itself
//	timer:name        (ProducerID = ms) after that long, +100 by a timer
//	push:name         +1, and push the new value to stream ProducerID
//	earlypush:name    as push:name, the push early (Push.Early)
//	event:name        +1, and a MemberJoined event for group name
//	cheat:name        +1 without a record: breaks the one record rule
//	break:name        makes Check fail, naming name
type counters struct {
	shard  uint16
	values map[string]int64
	parked map[string][]coordinator.RequestID
	loaded int
	broken string // Check fails, naming it
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

// DurableState renders the counters, sorted (machine.Durable).
func (c *counters) DurableState() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(c.values)) {
		fmt.Fprintf(&b, "%s=%d\n", name, c.values[name])
	}
	return b.String()
}

// Check fails once break:name has come.
func (c *counters) Check() error {
	if c.broken != "" {
		return fmt.Errorf("counter %s is broken", c.broken)
	}
	return nil
}

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
	case "early":
		rp := answer(req.ID, v+1)
		rp.Early = true
		return coordinator.Output{Records: c.set(name, v+1), Replies: []coordinator.Reply{rp}}
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
	case "push", "earlypush":
		// A record, then a push that must wait for it (or for its
		// write, early).
		return coordinator.Output{
			Records: c.set(name, v+1),
			Pushes:  []coordinator.Push{{Stream: uint64(r.ProducerID), Msg: v + 1, Early: op == "earlypush"}},
			Replies: []coordinator.Reply{answer(req.ID, v+1)},
		}
	case "event":
		// A record, then a group event that must wait for it.
		return coordinator.Output{
			Records: c.set(name, v+1),
			Events:  []observe.GroupEvent{{Kind: observe.MemberJoined, Group: name, Generation: int32(v + 1)}},
			Replies: []coordinator.Reply{answer(req.ID, v+1)},
		}
	case "cheat":
		c.values[name] = v + 1
		return coordinator.Output{Replies: []coordinator.Reply{answer(req.ID, v+1)}}
	case "break":
		c.broken = name
		return coordinator.Output{Replies: []coordinator.Reply{answer(req.ID, v)}}
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

// holdStore wraps a store and the handles acquired from it: while held,
// writes wait until released; it can fail the next write once, and hold
// or fail loads (Scan). Holding and injected failures act on a write's
// wait, as a slow or failing sync would.
type holdStore struct {
	store.Store
	mu        sync.Mutex
	held      chan struct{} // nil: not held
	applies   int
	failNext  bool
	entered   chan struct{}
	scanHeld  chan struct{} // nil: loads run
	scanFails int           // loads to fail
	scanned   chan struct{} // a load began
	notOneLog bool          // hide the store's store.OneLog
	noSyncs   int           // batches written with store.Batch.NoSync
	barriers  int           // empty batches with store.Batch.Barrier
}

func (h *holdStore) unsynced() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.noSyncs
}

func (h *holdStore) barrierCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.barriers
}

func (h *holdStore) OneLog() bool {
	ol, ok := h.Store.(store.OneLog)
	return !h.notOneLog && ok && ol.OneLog()
}

func (h *holdStore) Acquire(scope []byte) (store.Handle, error) {
	hd, err := h.Store.Acquire(scope)
	if err != nil {
		return nil, err
	}
	return holdHandle{hd, h}, nil
}

func (h *holdStore) Scan(prefix []byte, fn func(k, v []byte) error) error {
	h.mu.Lock()
	wait, failNow := h.scanHeld, h.scanFails > 0
	if failNow {
		h.scanFails--
	}
	h.mu.Unlock()
	select {
	case h.scanned <- struct{}{}:
	default:
	}
	if wait != nil {
		<-wait
	}
	if failNow {
		return errors.New("injected load failure")
	}
	return h.Store.Scan(prefix, fn)
}

type holdHandle struct {
	store.Handle
	h *holdStore
}

func (hh holdHandle) Apply(b *store.Batch) error {
	wait, err := hh.ApplyAsync(b)
	if err != nil {
		return err
	}
	return wait()
}

func (hh holdHandle) ApplyAsync(b *store.Batch) (func() error, error) {
	h := hh.h
	h.mu.Lock()
	h.applies++
	if b.NoSync {
		h.noSyncs++
	}
	if b.Barrier {
		h.barriers++
	}
	held, failNow := h.held, h.failNext
	h.failNext = false
	h.mu.Unlock()
	wait := func() error { return errors.New("injected store failure") }
	if !failNow {
		w, err := hh.Handle.ApplyAsync(b)
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

// hold makes writes wait until unhold; a test that fails meanwhile is
// released at cleanup, so that closing the shard cannot hang.
func (h *holdStore) hold(t *testing.T) func() {
	return h.holdOn(t, &h.held)
}

// holdScan makes loads wait until unhold; scanned then tells when the
// next load has begun.
func (h *holdStore) holdScan(t *testing.T) func() {
	select {
	case <-h.scanned:
	default:
	}
	return h.holdOn(t, &h.scanHeld)
}

func (h *holdStore) holdOn(t *testing.T, field *chan struct{}) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := make(chan struct{})
	*field = c
	var once sync.Once
	unhold := func() {
		once.Do(func() {
			h.mu.Lock()
			*field = nil
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
	clock *clocktest.FakeClock
	set   *coordinator.ShardSet
	obs   *observetest.Recorder
	// maxWrites is the runtime's MaxWrites: 1 (one write at a time) or
	// 0 (the default, pipelined).
	maxWrites int
	// pushes receives what the machine pushes to streams.
	pushes chan coordinator.Push
}

// shard is the one shard the runtime tests serve.
const shard = 7

// TestRuntime runs every runtime test with one store write at a time and
// with writes pipelined (the default), on a store that is one log (the
// loop starts its writes), and pipelined again on one that says it is not
// (a writer goroutine starts them, as on etcd), but for the tests of what
// only one log does.
func TestRuntime(t *testing.T) {
	tests := map[string]func(*testing.T){
		"ReplyWaitsForDurability": testReplyWaitsForDurability,
		"PushWaitsForDurability":  testPushWaitsForDurability,
		"EventWaitsForDurability": testEventWaitsForDurability,
		"GroupCommit":             testGroupCommit,
		"ParkedRequests":          testParkedRequests,
		"EarlyReply":              testEarlyReply,
		"EarlyReplyNotOneLog":     testEarlyReplyNotOneLog,
		"EarlyReplyUnsynced":      testEarlyReplyUnsynced,
		"EarlyReplyAfterStrict":   testEarlyReplyAfterStrict,
		"EarlyPush":               testEarlyPush,
		"Timers":                  testTimers,
		"ReplayEqualsLive":        testReplayEqualsLive,
		"StoreFailure":            testStoreFailure,
		"ReloadBacksOff":          testReloadBacksOff,
		"Fenced":                  testFenced,
		"LoadInProgress":          testLoadInProgress,
		"UnloadWhileLoading":      testUnloadWhileLoading,
		"Unload":                  testUnload,
	}
	oneLogOnly := map[string]bool{"EarlyReply": true, "EarlyReplyUnsynced": true, "EarlyReplyAfterStrict": true, "EarlyPush": true}
	for _, mode := range []string{"serial", "pipelined", "writer"} {
		for name, fn := range tests {
			if mode == "writer" && oneLogOnly[name] {
				continue
			}
			t.Run(mode+"/"+name, fn)
		}
	}
}

// newEnv is an environment over a store that is one log, unless the test
// runs in the writer mode of TestRuntime.
func newEnv(t *testing.T) *env { return newEnvOneLog(t, !strings.Contains(t.Name(), "/writer/")) }

// newEnvOneLog is newEnv over a store that is one log (store.OneLog, as
// Pebble) or that says it is not.
func newEnvOneLog(t *testing.T, oneLog bool) *env {
	st, err := pebble.Open(filepath.Join(t.TempDir(), "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{
		t:      t,
		st:     &holdStore{Store: st, entered: make(chan struct{}, 1), scanned: make(chan struct{}, 1), notOneLog: !oneLog},
		clock:  clocktest.NewFakeClock(time.Unix(1700000000, 0)),
		obs:    &observetest.Recorder{},
		pushes: make(chan coordinator.Push, 16),
	}
	if strings.Contains(t.Name(), "/serial/") {
		e.maxWrites = 1
	}
	e.set = coordinator.NewShardSet(coordinator.ShardSetConfig{
		Runtime: func(id uint16) coordinator.RuntimeConfig {
			return coordinator.RuntimeConfig{Store: e.st, New: newCounters(id), Fail: fail, MaxWrites: e.maxWrites,
				Push: func(p coordinator.Push) { e.pushes <- p }}
		},
		Observer: e.obs,
		Clock:    e.clock,
	})
	t.Cleanup(e.set.Close)
	if err := e.set.Load(shard); err != nil {
		t.Fatal(err)
	}
	return e
}

// submit hands a request to the shard; a request the set refuses is
// answered at once with its error code, as the coordinator does.
func (e *env) submit(s string, arg int64) <-chan coordinator.Reply {
	e.t.Helper()
	req := coordinator.Request{Msg: op(s, arg)}
	ch, code := e.set.Submit(context.Background(), shard, req)
	if code != 0 {
		c := make(chan coordinator.Reply, 1)
		c <- fail(req, code)
		return c
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

// shardEvents waits until the observer has seen n shard events of kind,
// and returns them.
func (e *env) shardEvents(kind observe.ShardEventKind, n int) []observe.ShardEvent {
	e.t.Helper()
	var got []observe.ShardEvent
	_, ok := e.obs.Wait(30*time.Second, func(s observetest.Snapshot) bool {
		got = got[:0]
		for _, ev := range s.Shards {
			if ev.Kind == kind {
				got = append(got, ev)
			}
		}
		return len(got) >= n
	})
	if !ok {
		e.t.Fatalf("saw %d %v shard events within 30s, want %d (set: %v)", len(got), kind, n, e.set)
	}
	return got
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

// notYet fails if ch has a reply within 200 ms (a negative check: it can
// only pass wrongly, not fail wrongly, if the machine is slow).
func notYet(t *testing.T, ch <-chan coordinator.Reply, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s answered (%v) before its record was durable", what, r)
	case <-time.After(200 * time.Millisecond):
	}
}

// testEarlyReply: an early reply leaves once its record is written, while
// its sync is held; an ordinary reply behind it still waits for the sync.
func testEarlyReply(t *testing.T) {
	e := newEnv(t)
	unhold := e.st.hold(t)
	early := e.submit("early:a", 0)
	if v := e.wait(early).ProducerID; v != 1 {
		t.Fatalf("early:a = %d, want 1", v)
	}
	inc := e.submit("inc:a", 0)
	<-e.st.entered
	notYet(t, inc, "inc:a")
	unhold()
	if v := e.wait(inc).ProducerID; v != 2 {
		t.Fatalf("inc:a = %d, want 2", v)
	}
}

// testEarlyReplyNotOneLog: on a store that is not one log, an early reply
// waits for durability like any other.
func testEarlyReplyNotOneLog(t *testing.T) {
	e := newEnvOneLog(t, false)
	unhold := e.st.hold(t)
	early := e.submit("early:a", 0)
	<-e.st.entered
	notYet(t, early, "early:a, on a store that is not one log,")
	unhold()
	e.answered(early, "early:a", 1)
	if n := e.st.unsynced(); n != 0 {
		t.Fatalf("%d batches written unsynced on a store that is not one log", n)
	}
}

// testEarlyReplyUnsynced: records answered by early replies alone are
// written without a sync of their own; a record that an ordinary reply
// waits on is synced, and with it everything before it.
func testEarlyReplyUnsynced(t *testing.T) {
	e := newEnv(t)
	if v := e.do("early:a", 0); v != 1 {
		t.Fatalf("early:a = %d, want 1", v)
	}
	if n := e.st.unsynced(); n != 1 {
		t.Fatalf("%d batches written unsynced, want 1 (early:a's)", n)
	}
	// A read sees only durable state: it waits for a barrier that
	// syncs early:a's record.
	for i, why := range []string{"for get:a", "still: nothing unsynced since"} {
		if v := e.do("get:a", 0); v != 1 {
			t.Fatalf("get:a (%d) = %d, want 1", i, v)
		}
		if barriers := e.st.barrierCount(); barriers != 1 {
			t.Fatalf("%d barriers written, want 1 (%s)", barriers, why)
		}
	}
	if v := e.do("inc:a", 0); v != 2 {
		t.Fatalf("inc:a = %d, want 2", v)
	}
	if n := e.st.unsynced(); n != 1 {
		t.Fatalf("%d batches written unsynced, want still 1: inc:a's is synced", n)
	}
}

// testEarlyReplyAfterStrict: an early reply spares only its own records:
// one behind a record an ordinary reply waits on waits for that record's
// sync too (the answer to a transaction's end, behind its Prepare).
func testEarlyReplyAfterStrict(t *testing.T) {
	e := newEnv(t)
	unhold := e.st.hold(t)
	inc := e.submit("inc:a", 0)
	<-e.st.entered
	early := e.submit("early:b", 0)
	notYet(t, early, "early:b, behind inc:a,")
	unhold()
	e.answered(inc, "inc:a", 1)
	e.answered(early, "early:b", 1)
}

// answered waits for ch's answer, which must be want.
func (e *env) answered(ch <-chan coordinator.Reply, what string, want int64) {
	e.t.Helper()
	if v := e.wait(ch).ProducerID; v != want {
		e.t.Fatalf("%s = %d, want %d", what, v, want)
	}
}

// testEarlyPush: an early push leaves once its record is written, while
// the record's sync is held; the ordinary reply of the same output waits
// for the sync, which is not skipped (on a store that is not one log the
// push waits like any other: testPushWaitsForDurability).
func testEarlyPush(t *testing.T) {
	e := newEnv(t)
	unhold := e.st.hold(t)
	ch := e.submit("earlypush:p", 9)
	e.pushed(9, 1, "no early push while the record's sync was held")
	notYet(t, ch, "earlypush:p")
	unhold()
	e.answered(ch, "earlypush:p", 1)
	if n := e.st.unsynced(); n != 0 {
		t.Fatalf("%d batches written unsynced: an early push's records are synced", n)
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
	e.pushed(9, 1, "no push after the record was durable")
}

// pushed waits for the next push, which must be v on stream; none within
// 10 s fails with none.
func (e *env) pushed(stream uint64, v int64, none string) {
	e.t.Helper()
	select {
	case p := <-e.pushes:
		if p.Stream != stream || p.Msg != v {
			e.t.Fatalf("push %+v, want stream %d, %d", p, stream, v)
		}
	case <-time.After(10 * time.Second):
		e.t.Fatal(none)
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
	e.set.Unload(shard)
	if err := e.set.Load(shard); err != nil {
		t.Fatal(err)
	}
	for name, v := range live {
		if got := e.do("get:"+name, 0); got != v {
			t.Errorf("after reload %s = %d, live had %d", name, got, v)
		}
	}
}

// testEventWaitsForDurability: a machine's group event reaches the
// observer only once the records before it are durable, with the context
// of the request that caused it.
func testEventWaitsForDurability(t *testing.T) {
	e := newEnv(t)
	unhold := e.st.hold(t)
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "the request")
	ch, code := e.set.Submit(ctx, shard, coordinator.Request{Msg: op("event:g", 0)})
	if code != 0 {
		t.Fatalf("submit: code %d", code)
	}
	<-e.st.entered
	if s := e.obs.Snapshot(); len(s.Groups) != 0 {
		t.Fatalf("event %+v reported before its record was durable", s.Groups[0])
	}
	unhold()
	e.wait(ch)
	s, ok := e.obs.Wait(10*time.Second, func(s observetest.Snapshot) bool { return len(s.Groups) == 1 })
	if !ok {
		t.Fatalf("no group event after the record was durable: %+v", s.Groups)
	}
	if g := s.Groups[0]; g.Kind != observe.MemberJoined || g.Group != "g" || g.Generation != 1 || g.Ctx.Value(key{}) != "the request" {
		t.Fatalf("event %+v with context value %v", g.GroupEvent, g.Ctx.Value(key{}))
	}
	if len(s.Batches) == 0 || s.Batches[len(s.Batches)-1].Shard != shard || s.Batches[len(s.Batches)-1].Records != 1 || s.Batches[len(s.Batches)-1].Bytes == 0 {
		t.Fatalf("batches observed: %+v", s.Batches)
	}
}

// testStoreFailure: a failed write makes the runtime give the shard up,
// as Kafka's runtime does when it loses a partition: the requests waiting
// on it get NOT_COORDINATOR (so clients find the coordinator again), as do
// requests until the shard is loaded again after a back-off; the reloaded
// shard has the durable state only, and goes on working.
func testStoreFailure(t *testing.T) {
	e := newEnv(t)
	e.do("inc:f", 0)
	parked := e.submit("park:f", 0)
	e.st.mu.Lock()
	e.st.failNext = true
	e.st.mu.Unlock()
	if r := e.wait(e.submit("inc:f", 0)); r.ErrorCode != notCoordinator {
		t.Fatalf("inc during a failed write: error %d, want %d (NOT_COORDINATOR)", r.ErrorCode, notCoordinator)
	}
	if r := e.wait(parked); r.ErrorCode != notCoordinator {
		t.Fatalf("parked request when the shard was given up: error %d, want %d", r.ErrorCode, notCoordinator)
	}
	un := e.shardEvents(observe.ShardUnloaded, 1)
	if !strings.Contains(un[0].Reason, "injected store failure") {
		t.Fatalf("unloaded: %+v", un[0])
	}
	// Given up and waiting for its back-off (fake time stands still).
	if r := e.wait(e.submit("get:f", 0)); r.ErrorCode != notCoordinator {
		t.Fatalf("while given up: error %d, want %d", r.ErrorCode, notCoordinator)
	}
	if held := e.set.Held(); len(held) != 1 {
		t.Fatalf("held %v: the shard should wait to load again", held)
	}
	e.clock.Advance(100 * time.Millisecond)
	e.shardEvents(observe.ShardLoaded, 2)
	if v := e.do("get:f", 0); v != 1 {
		t.Fatalf("after reload f = %d, want the durable 1", v)
	}
	if v := e.do("inc:f", 0); v != 2 {
		t.Fatalf("inc after reload = %d, want 2", v)
	}
}

// testReloadBacksOff: loads that keep failing are retried with a growing
// back-off, and the shard serves again once one succeeds.
func testReloadBacksOff(t *testing.T) {
	e := newEnv(t)
	e.do("inc:b", 0)
	e.st.mu.Lock()
	e.st.failNext = true
	e.st.scanFails = 2
	e.st.mu.Unlock()
	e.wait(e.submit("inc:b", 0))
	e.shardEvents(observe.ShardUnloaded, 1)
	// 100 ms: the first reload fails; 200 ms more: the second; 400 ms
	// more: the third succeeds. Before each deadline nothing happens.
	for i, d := range []time.Duration{100, 200, 400} {
		e.clock.Advance(d*time.Millisecond - time.Millisecond)
		// Loading, loaded, unloaded; then loading and loaded per attempt.
		if n := len(e.obs.Snapshot().Shards); n != 3+2*i {
			t.Fatalf("attempt %d ran before its back-off: %d shard events", i+1, n)
		}
		e.clock.Advance(time.Millisecond)
		e.shardEvents(observe.ShardLoaded, 2+i)
	}
	loads := e.shardEvents(observe.ShardLoaded, 4)
	if loads[1].Err == nil || loads[2].Err == nil || loads[3].Err != nil {
		t.Fatalf("loads: %+v", loads)
	}
	if v := e.do("get:b", 0); v != 1 {
		t.Fatalf("after reload b = %d, want 1", v)
	}
}

// testFenced: once another owner acquires the shard, the runtime's next
// write fails with ErrFenced and changes nothing; the shard is given up for
// good (it is not this node's any more), every request gets
// NOT_COORDINATOR.
func testFenced(t *testing.T) {
	e := newEnv(t)
	e.do("inc:z", 0)
	other, err := e.st.Store.Acquire(record.ShardPrefix(shard))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if r := e.wait(e.submit("inc:z", 0)); r.ErrorCode != notCoordinator {
		t.Fatalf("write after fencing: error %d, want %d", r.ErrorCode, notCoordinator)
	}
	un := e.shardEvents(observe.ShardUnloaded, 1)
	if !strings.Contains(un[0].Reason, "fenced") {
		t.Fatalf("unloaded: %+v", un[0])
	}
	if held := e.set.Held(); len(held) != 0 {
		t.Fatalf("held %v after being fenced", held)
	}
	e.clock.Advance(time.Hour)
	if r := e.wait(e.submit("get:z", 0)); r.ErrorCode != notCoordinator {
		t.Fatalf("after fencing: error %d, want %d", r.ErrorCode, notCoordinator)
	}
	v, err := e.st.Get(append(record.ShardPrefix(shard), 'z'))
	if err != nil || binary.BigEndian.Uint64(v) != 1 {
		t.Fatalf("stored z = %v, %v: the fenced write changed it", v, err)
	}
}

// testLoadInProgress: while a shard loads, its requests get
// COORDINATOR_LOAD_IN_PROGRESS; once loaded, it serves.
func testLoadInProgress(t *testing.T) {
	e := newEnv(t)
	e.do("inc:l", 0)
	e.set.Unload(shard)
	if r := e.wait(e.submit("get:l", 0)); r.ErrorCode != notCoordinator {
		t.Fatalf("unloaded: error %d, want %d", r.ErrorCode, notCoordinator)
	}
	unhold := e.st.holdScan(t)
	loaded := make(chan error, 1)
	go func() { loaded <- e.set.Load(shard) }()
	<-e.st.scanned
	if r := e.wait(e.submit("get:l", 0)); r.ErrorCode != loadInProgress {
		t.Fatalf("loading: error %d, want %d (COORDINATOR_LOAD_IN_PROGRESS)", r.ErrorCode, loadInProgress)
	}
	unhold()
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if v := e.do("get:l", 0); v != 1 {
		t.Fatalf("after load l = %d, want 1", v)
	}
}

// testUnloadWhileLoading: an unload overtakes a load under way; the load
// reports it and the shard is not served.
func testUnloadWhileLoading(t *testing.T) {
	e := newEnv(t)
	e.set.Unload(shard)
	unhold := e.st.holdScan(t)
	loaded := make(chan error, 1)
	go func() { loaded <- e.set.Load(shard) }()
	<-e.st.scanned
	e.set.Unload(shard)
	unhold()
	if err := <-loaded; err == nil {
		t.Fatal("a load overtaken by an unload reported success")
	}
	if held := e.set.Held(); len(held) != 0 {
		t.Fatalf("held %v", held)
	}
	if r := e.wait(e.submit("get:l", 0)); r.ErrorCode != notCoordinator {
		t.Fatalf("error %d, want %d", r.ErrorCode, notCoordinator)
	}
}

// testUnload: what was written before an unload stays; requests in flight
// (a parked one) are answered NOT_COORDINATOR, later ones too; unloading
// twice is harmless, and a second load serves again.
func testUnload(t *testing.T) {
	e := newEnv(t)
	parked := e.submit("park:c", 0)
	e.do("inc:c", 0)
	e.set.Unload(shard)
	if r := e.wait(parked); r.ErrorCode != notCoordinator {
		t.Fatalf("parked at unload: error %d, want %d", r.ErrorCode, notCoordinator)
	}
	if r := e.wait(e.submit("get:c", 0)); r.ErrorCode != notCoordinator {
		t.Fatalf("after unload: error %d, want %d", r.ErrorCode, notCoordinator)
	}
	e.set.Unload(shard)
	if err := e.set.Load(shard); err != nil {
		t.Fatal(err)
	}
	if v := e.do("get:c", 0); v != 1 {
		t.Fatalf("after load c = %d, want 1", v)
	}
}

const (
	notCoordinator = 16 // NOT_COORDINATOR
	loadInProgress = 14 // COORDINATOR_LOAD_IN_PROGRESS
)
