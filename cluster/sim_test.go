package cluster

// A deterministic simulation of the ownership protocol: simulated time,
// a simulated etcd (revisions, leases that expire, transactions with the
// compares the real code uses, the units' record logs fenced by owner
// keys), a simulated network (random delays, partitions between a node
// and etcd, request timeouts) and simulated nodes that do what cluster.go
// and the etcd store do, step by step, calling the real pure functions
// (Plan, Reconcile, suspendedAt, warmTimeouts, nodeLists, drained). One
// seeded math/rand/v2 source drives everything, so a schedule replays
// exactly from its seed:
//
//	go test -run TestSim ./cluster/ -sim.seed=N         # replay one schedule
//	go test -run TestSim ./cluster/ -sim.schedules=100000 # more than CI runs
//
// Faults per schedule: pauses (GC, SIGSTOP) of random length, some longer
// than the lease, after which the node runs everything that came due;
// partitions between a node and etcd, some longer than the lease; slow
// links (requests and responses delayed by up to 1.5 TTL, so that writes
// are in flight when the writer's lease expires, and reads return stale
// assignments, which makes two nodes load one unit); timers firing late
// (up to 400 ms, less than the suspension margin); nodes joining, leaving
// (drain) and crashing, for good or restarting with the same id. Then
// everything heals and the cluster is left alone for 5 TTL plus the warm
// timeout. TestSim logs how often writes met an expired lease or a
// takeover, and how often a load took a unit another node still served.
//
// Invariants, checked after every event:
//  1. a write to a unit commits only if its writer holds the unit's
//     owner key, and the writer's view of the unit (what its load read
//     plus its own acknowledged writes) is the unit's whole log;
//  2. every acknowledged write is in the unit's log, and a load reads
//     every write acknowledged before its Acquire;
//  3. a node serves a unit only while the lease the unit was loaded under
//     lives in etcd (checked on running nodes, not while paused);
//  4. at the end: every unit is served by exactly one node, its owner in
//     the assignment, no move is pending, the registered nodes are the
//     running ones and each owns ⌊U/N⌋ or ⌈U/N⌉ units.
//
// Mutation checks, each made temporarily and caught by the default
// schedules: a suspension margin of zero in suspicion (invariant 3, with
// timers firing late); writes without the owner-key compare in
// simWriteOp (invariant 1); a Balance that never gives a freed unit to
// node 2 (invariant 4); a loop that does not forget units the runtime
// dropped, in step (invariant 4). The old putRegistration (see
// TestSimRegistrationLost) fails that test, and TestSim within 20,000
// schedules. Not caught, as they are covered twice: Reconcile loading
// while suspended (the check after Load unloads), or no check after Load
// (the next step unloads).

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	simSeed      = flag.Uint64("sim.seed", 0, "run only the simulation schedule with this seed")
	simSchedules = flag.Int("sim.schedules", 1500, "number of simulation schedules TestSim runs (CI: about 10 s with -race on 2 cores)")
	simVerbose   = flag.Bool("sim.v", false, "print the whole trace of a -sim.seed run")
)

// TestSim runs the simulation's schedules (seeds 1..N), spread over the
// CPUs, and reports the first failing seed with the end of its trace.
func TestSim(t *testing.T) {
	if *simSeed != 0 {
		s := newSim(*simSeed)
		s.verbose = *simVerbose
		if err := s.run(); err != nil {
			t.Fatalf("seed %d: %v\n%s", *simSeed, err, s.lastEvents(80))
		}
		t.Logf("seed %d: %v", *simSeed, s.stats)
		return
	}
	n := *simSchedules
	if testing.Short() {
		n = min(n, 200)
	}
	var (
		mu     sync.Mutex
		failed = map[uint64]string{}
		next   uint64
		wg     sync.WaitGroup
		stats  simStats
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				mu.Lock()
				next++
				seed := next
				stop := seed > uint64(n) || len(failed) > 0
				mu.Unlock()
				if stop {
					return
				}
				s := newSim(seed)
				err := s.run()
				mu.Lock()
				stats.add(s.stats)
				if err != nil {
					failed[seed] = fmt.Sprintf("%v\n%s", err, s.lastEvents(60))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		seeds := make([]uint64, 0, len(failed))
		for s := range failed {
			seeds = append(seeds, s)
		}
		slices.Sort(seeds)
		t.Fatalf("seed %d failed (replay: go test -run TestSim ./cluster/ -sim.seed=%d): %s", seeds[0], seeds[0], failed[seeds[0]])
	}
	t.Logf("%d schedules: %v", n, stats)
}

// TestSimRegistrationLost is the regression case of a bug the simulation
// found in Member.putRegistration: a node adopted its new lease when it
// was granted, before its registration was in; when the registration was
// lost (a timeout), keepAlive went on renewing the new lease, so the node
// never registered again and stayed live, possibly leading, owning
// nothing, for ever. Here node 1 is cut off from etcd until its lease
// has expired, and cut off again right after its next lease is granted.
func TestSimRegistrationLost(t *testing.T) {
	s := newScriptedSim(1, func(s *sim) {
		s.ttl, s.reqTO, s.warm, s.units = 2*time.Second, time.Second, 3*time.Second, 4
		a := s.startNew()
		s.startNew()
		s.at(nil, time.Second, func() { s.cutOff(a, 3*time.Second) })
		s.afterGrant = func(n *simNode) {
			if n == a && s.now > 4*time.Second {
				s.afterGrant = nil
				s.cutOff(n, 500*time.Millisecond)
			}
		}
		s.healAfter(6 * time.Second)
	})
	if err := s.run(); err != nil {
		t.Fatalf("%v\n%s", err, s.lastEvents(60))
	}
	if s.afterGrant != nil {
		t.Fatal("node 1 did not register again after its lease expired")
	}
}

// simStats counts what the schedules exercised.
type simStats struct {
	events, acks    int
	expiredMidWrite int // writes that found their owner key gone with its lease
	fenced          int // writes that found the owner key taken by another load
	takeovers       int // loads that took a unit another node believed it served
}

func (a *simStats) add(b simStats) {
	a.events += b.events
	a.acks += b.acks
	a.expiredMidWrite += b.expiredMidWrite
	a.fenced += b.fenced
	a.takeovers += b.takeovers
}

func (a simStats) String() string {
	return fmt.Sprintf("%d events, %d acknowledged writes, %d writes failed by a lease expired mid-write, %d fenced by a takeover, %d loads took over a unit another node served", a.events, a.acks, a.expiredMidWrite, a.fenced, a.takeovers)
}

// Simulated etcd.

var (
	errSimTimeout  = errors.New("request timed out")
	errSimNoLease  = errors.New("etcdserver: requested lease not found")
	errSimUnloaded = errors.New("unloaded while it loaded")
	errSimFenced   = errors.New("fenced")
	errSimTaken    = errors.New("registered by another process meanwhile")
)

type simKV struct {
	val         any // Node, string (leader), Assignment, int64 (owner: the handle)
	create, mod int64
	lease       int64
}

type simLease struct {
	ttl    time.Duration
	expiry time.Duration
}

// simPos is where a record is: its index in its unit's log, and the
// revision that committed it.
type simPos struct {
	i   int
	rev int64
}

// simRec is one record of a unit's log: written by node, unique id.
type simRec struct {
	id   int64
	node int32
}

type simEtcd struct {
	s         *sim
	rev       int64
	kvs       map[string]*simKV
	leases    map[int64]*simLease
	nextLease int64
	logs      [][]simRec
	pos       map[int64]simPos // where each record is
	expireAt  time.Duration    // no lease expires before this
	changed   bool             // a key under cluster/ changed (watchers are told)
	gen       int64            // counts the changes under cluster/
	read      state            // the state at readGen, shared (never changed)
	readGen   int64
}

func (e *simEtcd) createRev(k string) int64 {
	if kv := e.kvs[k]; kv != nil {
		return kv.create
	}
	return 0
}

func (e *simEtcd) modRev(k string) int64 {
	if kv := e.kvs[k]; kv != nil {
		return kv.mod
	}
	return 0
}

func (e *simEtcd) put(k string, v any, lease int64) error {
	if lease != 0 && e.leases[lease] == nil {
		return errSimNoLease
	}
	e.rev++
	kv := e.kvs[k]
	if kv == nil {
		kv = &simKV{create: e.rev}
		e.kvs[k] = kv
	}
	kv.val, kv.mod, kv.lease = v, e.rev, lease
	e.touch(k)
	return nil
}

func (e *simEtcd) del(k string) {
	if e.kvs[k] != nil {
		e.rev++
		delete(e.kvs, k)
		e.touch(k)
	}
}

func (e *simEtcd) touch(k string) {
	if !strings.HasPrefix(k, "owner/") {
		e.changed = true
		e.gen++
	}
}

// revoke deletes lease id and its keys in one revision, as etcd's
// lessor does on expiry or revocation.
func (e *simEtcd) revoke(id int64) bool {
	if e.leases[id] == nil {
		return false
	}
	delete(e.leases, id)
	var ks []string
	for k, kv := range e.kvs {
		if kv.lease == id {
			ks = append(ks, k)
		}
	}
	if len(ks) > 0 {
		slices.Sort(ks)
		e.rev++
		for _, k := range ks {
			delete(e.kvs, k)
			e.touch(k)
		}
	}
	return true
}

// expire revokes the leases whose time is up.
func (e *simEtcd) expire(now time.Duration) {
	if now < e.expireAt {
		return
	}
	var ids []int64
	e.expireAt = 1 << 62
	for id, l := range e.leases {
		if l.expiry <= now {
			ids = append(ids, id)
		} else {
			e.expireAt = min(e.expireAt, l.expiry)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.revoke(id)
		e.s.trace(nil, "lease expired", id, 0)
	}
}

// Simulated network and event queue.

type simEvent struct {
	at   time.Duration
	seq  uint64
	node *simNode // nil: etcd or the schedule; else paused with the node
	fn   func()
}

// simQueue is a binary min-heap of events by (at, seq), by value (no
// allocation per event beyond its closure).
type simQueue []simEvent

func (q simQueue) less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}

func (q *simQueue) push(ev simEvent) {
	*q = append(*q, ev)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *simQueue) pop() simEvent {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = simEvent{}
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

type simTrace struct {
	at   time.Duration
	node int32
	msg  string
	a, b int64
}

type sim struct {
	r       *rand.Rand
	now     time.Duration
	q       simQueue
	seq     uint64
	e       *simEtcd
	procs   []*simNode // every process started, in order
	ttl     time.Duration
	reqTO   time.Duration // the Member's request timeout (reqCtx)
	lagMax  time.Duration // how late timers may fire
	warm    time.Duration // Config.WarmTimeout
	units   int
	acked   [][]simRec // acknowledged writes, per unit
	handles int64
	recs    int64
	healAt  time.Duration
	endAt   time.Duration
	err     error
	verbose bool
	ring    []simTrace
	ringN   int
	nextID  int32
	faults  []string
	stats   simStats
	// afterGrant, if set, is called when a node's lease grant returns
	// (scripted schedules cut the node off there).
	afterGrant func(n *simNode)
}

var simBase = time.Unix(1_800_000_000, 0)

func (s *sim) clock() time.Time { return simBase.Add(s.now) }

func (s *sim) failf(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("at %v: %s", s.now, fmt.Sprintf(format, args...))
	}
}

func (s *sim) trace(n *simNode, msg string, a, b int64) {
	id := int32(-1)
	if n != nil {
		id = n.id
	}
	tr := simTrace{at: s.now, node: id, msg: msg, a: a, b: b}
	if s.verbose {
		fmt.Println(formatTrace(tr))
	}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, tr)
	} else {
		s.ring[s.ringN%len(s.ring)] = tr
	}
	s.ringN++
}

func formatTrace(tr simTrace) string {
	who := "etcd"
	if tr.node >= 0 {
		who = "node " + strconv.Itoa(int(tr.node))
	}
	return fmt.Sprintf("%10v %-8s %s %d %d", tr.at, who, tr.msg, tr.a, tr.b)
}

// lastEvents is the schedule's faults and the last n lines of its trace.
func (s *sim) lastEvents(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ttl %v, %d units, warm timeout %v, heal at %v\nfaults:\n", s.ttl, s.units, s.warm, s.healAt)
	for _, f := range s.faults {
		b.WriteString("  " + f + "\n")
	}
	b.WriteString("last events:\n")
	total := len(s.ring)
	start := 0
	if s.ringN > total {
		start = s.ringN % total
	}
	for i := max(0, total-n); i < total; i++ {
		b.WriteString("  " + formatTrace(s.ring[(start+i)%total]) + "\n")
	}
	return b.String()
}

// at schedules fn after d; a node's events wait while it is paused and
// are dropped once its process is gone.
func (s *sim) at(n *simNode, d time.Duration, fn func()) {
	s.seq++
	s.q.push(simEvent{at: s.now + max(d, 0), seq: s.seq, node: n, fn: fn})
}

// timer schedules fn on node n after d plus a random lag of up to
// lagMax: timers fire, and goroutines run, late on a busy machine (less
// late than the suspension margin, 500 ms at least; longer is a pause).
func (s *sim) timer(n *simNode, d time.Duration, fn func()) {
	if s.lagMax > 0 {
		d += time.Duration(s.r.Int64N(int64(s.lagMax)))
	}
	s.at(n, d, fn)
}

// delay is one network hop between node n and etcd.
func (s *sim) delay(n *simNode) time.Duration {
	if s.now < n.slowUntil {
		return time.Duration(s.r.Int64N(int64(s.ttl * 3 / 2)))
	}
	if s.r.IntN(30) == 0 {
		return 50*time.Millisecond + time.Duration(s.r.Int64N(int64(300*time.Millisecond)))
	}
	return time.Millisecond + time.Duration(s.r.Int64N(int64(20*time.Millisecond)))
}

func (n *simNode) cut() bool { return n.s.now < n.partUntil }

// paused: the node is paused, or resumes at this instant and has not run
// what came due yet.
func (n *simNode) paused() bool { return n.s.now < n.pausedUntil || len(n.deferred) > 0 }

// call sends op to etcd for node n: the request and the response each
// take a random delay and are lost in a partition; done gets the
// response, or errSimTimeout after timeout, whichever comes first, unless
// the node's context was cancelled meanwhile (Close).
func (n *simNode) call(timeout time.Duration, what string, op func(e *simEtcd) (any, error), done func(any, error)) {
	s := n.s
	epoch := n.epoch
	deadline := s.now + max(timeout, 0)
	finished := false
	finish := func(resp any, err error) {
		if !finished && !n.dead && n.epoch == epoch {
			finished = true
			done(resp, err)
		}
	}
	// The timeout's event is scheduled only when the response will not
	// come before it (fewer events, same outcome).
	timedOut := func() { s.at(n, deadline-s.now, func() { finish(nil, errSimTimeout) }) }
	if n.cut() || timeout <= 0 {
		timedOut()
		return
	}
	s.at(nil, s.delay(n), func() {
		if n.cut() {
			timedOut()
			return
		}
		resp, err := op(s.e)
		s.trace(n, what, s.e.rev, boolInt(err == nil))
		if d := s.delay(n); s.now+d < deadline {
			s.at(n, d, func() {
				if n.cut() {
					timedOut()
				} else {
					finish(resp, err)
				}
			})
		} else {
			timedOut()
		}
	})
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// run runs the schedule to its end, checking the invariants after every
// event, and the liveness invariant at the end.
func (s *sim) run() error {
	for len(s.q) > 0 && s.err == nil {
		ev := s.q.pop()
		if ev.at > s.endAt {
			break
		}
		s.now = ev.at
		s.e.expire(s.now)
		if n := ev.node; n != nil {
			if n.dead {
				continue
			}
			if n.paused() {
				n.deferred = append(n.deferred, ev)
				continue
			}
		}
		s.stats.events++
		s.e.changed = false
		ev.fn()
		if s.e.changed {
			s.notifyWatchers()
		}
		s.checkSafety()
	}
	if s.err == nil {
		s.now = s.endAt
		s.checkLiveness()
	}
	return s.err
}

// notifyWatchers pokes the running nodes (watch on cluster/), unless
// cut off from etcd.
func (s *sim) notifyWatchers() {
	for _, n := range s.procs {
		if n.running && !n.cut() {
			s.at(n, s.delay(n), func() {
				if n.running && !n.cut() {
					n.poke()
				}
			})
		}
	}
}

// Invariant 3 (invariants 1 and 2 are checked where writes commit and
// loads read).
func (s *sim) checkSafety() {
	for _, n := range s.procs {
		if n.dead || n.paused() {
			continue
		}
		for u := range s.units {
			sl := n.slots[u]
			if sl == nil || !sl.active {
				continue
			}
			l := s.e.leases[sl.lease]
			if l == nil || l.expiry <= s.now {
				s.failf("node %d serves unit %d under lease %d, which has expired in etcd", n.id, u, sl.lease)
				return
			}
		}
	}
}

// Invariant 4.
func (s *sim) checkLiveness() {
	var live []int32
	for _, n := range s.procs {
		if n.running && !n.draining {
			live = append(live, n.id)
		}
	}
	slices.Sort(live)
	if len(live) == 0 {
		s.failf("liveness: no node is live")
		return
	}
	var reg []int32
	for k, kv := range s.e.kvs {
		if strings.HasPrefix(k, "nodes/") && !kv.val.(Node).Draining {
			reg = append(reg, kv.val.(Node).ID)
		}
	}
	slices.Sort(reg)
	if !slices.Equal(live, reg) {
		s.failf("liveness: running nodes %v, registered %v", live, reg)
		return
	}
	kv := s.e.kvs["assignment"]
	if kv == nil {
		s.failf("liveness: no assignment")
		return
	}
	a := kv.val.(Assignment)
	count := map[int32]int{}
	for u := range s.units {
		var servers []int32
		for _, n := range s.procs {
			if !n.dead && n.slots[u] != nil && n.slots[u].active {
				servers = append(servers, n.id)
			}
		}
		if len(servers) != 1 || servers[0] != a.Owner[u] || a.Next[u] != None {
			s.failf("liveness: unit %d served by %v, owner %d, next %d (assignment %+v)", u, servers, a.Owner[u], a.Next[u], a)
			return
		}
		count[a.Owner[u]]++
	}
	lo, hi := s.units/len(live), (s.units+len(live)-1)/len(live)
	for _, id := range live {
		if count[id] < lo || count[id] > hi {
			s.failf("liveness: node %d owns %d units, want %d..%d (live %v, assignment %+v)", id, count[id], lo, hi, live, a)
			return
		}
	}
}

// Simulated nodes.

// simSlot is a unit in the node's runtime (coordinator.ShardSet):
// loading, or active under the owner key put at rev under lease.
type simSlot struct {
	handle int64
	active bool
	rev    int64
	lease  int64
	view   []simRec
}

// simNode is one process of a node: the Member's goroutines (keepAlive,
// watchdog, watch, loop, loads), its Units runtime and a workload.
type simNode struct {
	s          *sim
	id         int32
	dir        string
	dead       bool // the process is gone
	running    bool // Run was called and Close was not
	epoch      int  // the Member's context: Close cancels the calls under way
	lease      int64
	validUntil time.Time
	draining   bool
	storeLease int64 // the lease the store binds owner keys to (Units.Lease)
	state      state // m.state

	pausedUntil, partUntil, slowUntil time.Duration
	deferred                          []simEvent

	// loop
	l        loopState
	results  []unitResult
	stepping bool
	wake     bool
	tick     bool
	// keepAlive
	kaBusy, kaPending bool
	// watchdog
	unloaded bool

	slots []*simSlot // by unit
}

func newSim(seed uint64) *sim { return newScriptedSim(seed, nil) }

// newScriptedSim is a simulation whose nodes and faults script sets up
// (nil: drawn at random from the seed).
func newScriptedSim(seed uint64, script func(s *sim)) *sim {
	s := &sim{r: rand.New(rand.NewPCG(seed, seed^0x5eed)), ring: make([]simTrace, 0, 200)}
	s.e = &simEtcd{s: s, kvs: map[string]*simKV{}, leases: map[int64]*simLease{}, pos: map[int64]simPos{}, nextLease: 0x100}
	s.ttl = []time.Duration{2 * time.Second, 3 * time.Second}[s.r.IntN(2)]
	s.reqTO = max(s.ttl/2, time.Second)
	s.warm = s.ttl + time.Duration(s.r.Int64N(int64(2*s.ttl)))
	s.units = 1 + s.r.IntN(7)
	s.lagMax = []time.Duration{0, 10 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond}[s.r.IntN(4)]
	if script != nil {
		script(s)
	} else {
		s.schedule()
	}
	s.e.logs = make([][]simRec, s.units)
	s.acked = make([][]simRec, s.units)
	return s
}

// schedule draws the schedule's nodes and faults.
func (s *sim) schedule() {
	n0 := 1 + s.r.IntN(3)
	for range n0 {
		s.startNew()
	}
	faultPhase := 2*s.ttl + time.Duration(s.r.Int64N(int64(3*s.ttl)))
	s.healAfter(faultPhase)
	willLive := n0 // nodes still live at the end
	joins := 0
	for range s.r.IntN(7) {
		at := time.Duration(s.r.Int64N(int64(faultPhase)))
		long := s.r.IntN(2) == 0
		d := 50*time.Millisecond + time.Duration(s.r.Int64N(int64(s.ttl/2)))
		if long {
			d = s.ttl/2 + time.Duration(s.r.Int64N(int64(2*s.ttl)))
		}
		d = min(d, faultPhase-at)
		kind := simFault(s.r.IntN(int(faultKinds)))
		switch kind {
		case faultJoin:
			if joins >= 2 {
				continue
			}
			joins++
			willLive++
		case faultLeave, faultCrash:
			if willLive <= 1 {
				kind = faultRestart
			} else {
				willLive--
			}
		}
		pick := s.r.Uint32()
		s.at(nil, at, func() { s.fault(kind, pick, d) })
	}
}

// healAfter ends the faults at faultPhase: every partition, pause and
// slow link ends; then the cluster is left alone for long enough to
// settle (leases of the dead expire, the last moves are forced).
func (s *sim) healAfter(faultPhase time.Duration) {
	s.healAt = faultPhase
	s.endAt = faultPhase + 5*s.ttl + s.warm
	s.at(nil, faultPhase, func() {
		for _, n := range s.procs {
			n.partUntil, n.slowUntil = 0, 0
			if n.paused() {
				n.pausedUntil = s.now
				s.resume(n)
			}
		}
		s.trace(nil, "heal", 0, 0)
	})
}

// running returns the node processes that run, by start order.
func (s *sim) running() []*simNode {
	var out []*simNode
	for _, n := range s.procs {
		if n.running && !n.draining {
			out = append(out, n)
		}
	}
	return out
}

// simFault is a kind of fault.
type simFault int

const (
	faultPause   simFault = iota // the node is paused for d
	faultCut                     // the node is cut off from etcd for d
	faultSlow                    // the node's link to etcd is slow for d
	faultRestart                 // the node crashes, and restarts after d
	faultJoin                    // a new node joins
	faultLeave                   // the node leaves (drains)
	faultCrash                   // the node crashes for good
	faultKinds
)

// fault injects a fault of kind into the node pick chooses among the
// running ones.
func (s *sim) fault(kind simFault, pick uint32, d time.Duration) {
	if kind == faultJoin {
		n := s.startNew()
		s.faults = append(s.faults, fmt.Sprintf("%v: node %d joins", s.now, n.id))
		return
	}
	rs := s.running()
	if len(rs) == 0 {
		return
	}
	n := rs[int(pick)%len(rs)]
	desc := ""
	switch kind {
	case faultPause:
		n.pausedUntil = max(n.pausedUntil, s.now+d)
		s.at(nil, d, func() { s.resume(n) })
		desc = "paused for " + d.String()
	case faultCut:
		s.cutOff(n, d)
		return
	case faultSlow:
		n.slowUntil = max(n.slowUntil, s.now+d)
		desc = "slow link for " + d.String()
	case faultRestart:
		n.crash()
		s.at(nil, min(d, s.healAt-s.now), func() { s.start(n.id) })
		desc = "crashes, restarts after " + d.String()
	case faultLeave:
		n.leave(3 * s.ttl)
		desc = "leaves"
	case faultCrash:
		n.crash()
		desc = "crashes for good"
	}
	s.trace(n, desc, 0, 0)
	s.faults = append(s.faults, fmt.Sprintf("%v: node %d %s", s.now, n.id, desc))
}

// cutOff cuts node n off from etcd for d.
func (s *sim) cutOff(n *simNode, d time.Duration) {
	n.partUntil = max(n.partUntil, s.now+d)
	desc := "cut off from etcd for " + d.String()
	s.trace(n, desc, 0, 0)
	s.faults = append(s.faults, fmt.Sprintf("%v: node %d %s", s.now, n.id, desc))
}

// resume runs, in order, every event that came due while n was paused.
func (s *sim) resume(n *simNode) {
	if s.now < n.pausedUntil || n.dead {
		return
	}
	n.pausedUntil = s.now
	evs := n.deferred
	n.deferred = nil
	s.trace(n, "resumes with events", int64(len(evs)), 0)
	for _, ev := range evs {
		if n.dead {
			return
		}
		ev.fn()
	}
}

func (s *sim) startNew() *simNode {
	s.nextID++
	return s.start(s.nextID)
}

// start starts a process of node id (Join, then Run); a Join that fails
// is retried a second later, as a supervisor restarts the process.
func (s *sim) start(id int32) *simNode {
	n := &simNode{s: s, id: id, dir: "dir-" + strconv.Itoa(int(id)), slots: make([]*simSlot, s.units)}
	n.l = loopState{held: map[int]bool{}, warmed: map[int]bool{}, readyPut: map[int]int64{}, nextSince: map[int]time.Time{}, busy: map[int]bool{}}
	s.procs = append(s.procs, n)
	s.trace(n, "starts", 0, 0)
	n.register(s.now+s.ttl+5*time.Second, func(err error) {
		if err != nil {
			s.trace(n, "join failed", 0, 0)
			n.dead = true
			s.at(nil, time.Second, func() { s.start(id) })
			return
		}
		n.run()
	})
	return n
}

func (n *simNode) self() Node {
	return Node{ID: n.id, DirID: n.dir, Lease: n.lease, Draining: n.draining}
}

func nodeKey(id int32) string { return "nodes/" + strconv.Itoa(int(id)) }

// register is Member.register.
func (n *simNode) register(deadline time.Duration, done func(error)) {
	s := n.s
	key := nodeKey(n.id)
	n.call(s.reqTO, "get registration", func(e *simEtcd) (any, error) {
		if kv := e.kvs[key]; kv != nil {
			return kv.val.(Node), nil
		}
		return nil, nil
	}, func(resp any, err error) {
		switch {
		case err != nil:
			done(err)
		case resp == nil:
			n.putRegistration(s.reqTO, done)
		case resp.(Node).DirID == n.dir:
			old := resp.(Node).Lease
			n.call(s.reqTO, "revoke previous life", func(e *simEtcd) (any, error) {
				if !e.revoke(old) {
					return nil, errSimNoLease
				}
				return nil, nil
			}, func(_ any, err error) {
				if err != nil && err != errSimNoLease {
					done(err)
					return
				}
				n.register(deadline, done)
			})
		case s.now > deadline:
			done(errSimTaken)
		default:
			s.at(n, 200*time.Millisecond, func() { n.register(deadline, done) })
		}
	})
}

// putRegistration is Member.putRegistration; ctx is how long its context
// has left.
func (n *simNode) putRegistration(ctx time.Duration, done func(error)) {
	s := n.s
	deadline := s.now + min(ctx, s.reqTO) // reqCtx, shared by its requests
	sent := s.clock()
	ttl := s.ttl
	n.call(deadline-s.now, "grant", func(e *simEtcd) (any, error) {
		e.nextLease++
		e.leases[e.nextLease] = &simLease{ttl: ttl, expiry: s.now + ttl}
		e.expireAt = min(e.expireAt, s.now+ttl)
		return e.nextLease, nil
	}, func(resp any, err error) {
		if err != nil {
			done(err)
			return
		}
		if s.afterGrant != nil {
			s.afterGrant(n)
		}
		id := resp.(int64)
		node := n.self()
		node.Lease = id
		key := nodeKey(n.id)
		n.call(deadline-s.now, "put registration", func(e *simEtcd) (any, error) {
			if e.createRev(key) != 0 {
				return false, nil
			}
			return true, e.put(key, node, id)
		}, func(resp any, err error) {
			if err != nil || !resp.(bool) {
				if err == nil {
					err = errSimTaken
				}
				n.call(s.reqTO, "revoke", func(e *simEtcd) (any, error) { e.revoke(id); return nil, nil }, func(any, error) {
					done(err)
				})
				return
			}
			n.lease = id
			n.validUntil = sent.Add(ttl)
			done(nil)
		})
	})
}

// run is Member.Run: keepAlive, watchdog, watch and loop.
func (n *simNode) run() {
	s := n.s
	n.running = true
	n.storeLease = n.lease
	s.trace(n, "runs with lease", n.lease, 0)
	every, _, _ := keepAliveTimes(s.ttl)
	var kaTick func()
	kaTick = func() {
		if !n.running {
			return
		}
		if n.kaBusy {
			n.kaPending = true
		} else {
			n.keepAlive()
		}
		s.timer(n, every, kaTick)
	}
	s.timer(n, every, kaTick)
	s.timer(n, 0, n.watchdog)
	tickEvery := max(s.ttl/20, 50*time.Millisecond)
	var loopTick func()
	loopTick = func() {
		if !n.running {
			return
		}
		n.tick = true
		n.kick()
		s.timer(n, tickEvery, loopTick)
	}
	s.timer(n, tickEvery, loopTick)
}

// keepAlive is one iteration of Member.keepAlive.
func (n *simNode) keepAlive() {
	s := n.s
	n.kaBusy = true
	sent := s.clock()
	lease := n.lease
	_, retry, attempt := keepAliveTimes(s.ttl)
	n.call(attempt, "keepalive", func(e *simEtcd) (any, error) {
		l := e.leases[lease]
		if l == nil {
			return nil, errSimNoLease
		}
		l.expiry = s.now + l.ttl
		return l.ttl, nil
	}, func(resp any, err error) {
		switch {
		case err == nil:
			n.validUntil = sent.Add(resp.(time.Duration))
		case err == errSimNoLease:
			s.trace(n, "lease expired; registering again", lease, 0)
			n.validUntil = time.Time{}
			n.poke()
			n.putRegistration(s.ttl, func(err error) {
				if err != nil {
					s.timer(n, retry, func() {
						if n.running && !n.kaBusy {
							n.keepAlive()
						}
					})
					n.kaDone()
					return
				}
				n.storeLease = n.lease
				s.trace(n, "registered again with lease", n.lease, 0)
				n.poke()
				n.kaDone()
			})
			return
		}
		if err != nil {
			// Member.keepAlive tries again soon after a failure.
			s.timer(n, retry, func() {
				if n.running && !n.kaBusy {
					n.keepAlive()
				}
			})
		}
		n.poke()
		n.kaDone()
	})
}

func (n *simNode) kaDone() {
	n.kaBusy = false
	if n.kaPending && n.running {
		n.kaPending = false
		n.keepAlive()
	}
}

func (n *simNode) suspended() bool { return suspendedAt(n.s.clock(), n.validUntil, n.s.ttl) }

// watchdog is one wake-up of Member.watchdog.
func (n *simNode) watchdog() {
	s := n.s
	if !n.running {
		return
	}
	now := s.clock()
	if suspendedAt(now, n.validUntil, s.ttl) {
		if !n.unloaded {
			s.trace(n, "suspended: unloads everything", 0, 0)
			for u := range s.units {
				n.unload(u)
			}
			n.unloaded = true
			n.poke()
		}
		s.timer(n, 10*time.Millisecond, n.watchdog)
		return
	}
	n.unloaded = false
	s.timer(n, n.validUntil.Add(-suspicion(s.ttl)).Sub(now)+time.Millisecond, n.watchdog)
}

func (n *simNode) poke() {
	n.wake = true
	n.kick()
}

func (n *simNode) result(r unitResult) {
	n.results = append(n.results, r)
	n.kick()
}

// kick is the loop's select: when no step is under way, it takes one of
// the ready cases (a poke, a tick, a unit's result) at random and steps.
func (n *simNode) kick() {
	if n.stepping || !n.running {
		return
	}
	var ready []int
	if n.wake {
		ready = append(ready, 0)
	}
	if n.tick {
		ready = append(ready, 1)
	}
	if len(n.results) > 0 {
		ready = append(ready, 2)
	}
	if len(ready) == 0 {
		return
	}
	switch ready[n.s.r.IntN(len(ready))] {
	case 0:
		n.wake = false
	case 1:
		n.tick = false
	case 2:
		r := n.results[0]
		n.results = n.results[1:]
		n.finish(r)
	}
	n.step()
}

// finish is Member.finish.
func (n *simNode) finish(r unitResult) {
	l := &n.l
	delete(l.busy, r.u)
	switch {
	case r.preload && r.err == nil:
		l.warmed[r.u] = true
	case r.preload:
	case r.err != nil:
		delete(l.held, r.u)
		n.unload(r.u)
	}
}

func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// step is Member.step.
func (n *simNode) step() {
	s := n.s
	n.stepping = true
	l := &n.l
	now := s.clock()
	susp := n.suspended() || n.draining && l.haveSt && drained(l.st, n.id)
	l.wasSusp = susp
	if susp {
		for _, u := range sortedKeys(l.held) {
			n.unload(u)
			delete(l.held, u)
		}
	}
	for _, u := range sortedKeys(l.held) {
		if !l.busy[u] && !n.holds(u) {
			delete(l.held, u)
		}
	}
	n.call(s.reqTO, "read", simRead, func(resp any, err error) {
		if err != nil {
			n.stepDone()
			return
		}
		st := resp.(state)
		n.state = st
		l.st, l.haveSt = st, true
		cont := func() { n.reconcile(st, susp) }
		if !suspendedAt(now, n.validUntil, s.ttl) {
			n.lead(st, cont)
		} else {
			cont()
		}
	})
}

func (n *simNode) stepDone() {
	n.stepping = false
	n.kick()
}

// simRead is Member.read: one read of cluster/. The state returned is
// shared by every read until cluster/ changes: nothing changes it.
func simRead(e *simEtcd) (any, error) {
	if e.readGen == e.gen && e.gen != 0 {
		return e.read, nil
	}
	st := state{rev: e.rev, nodes: map[int32]Node{}, leader: None, ready: map[int][]int32{}}
	var readies [][3]int64 // unit, node, epoch
	for k, kv := range e.kvs {
		switch {
		case strings.HasPrefix(k, "nodes/"):
			nd := kv.val.(Node)
			st.nodes[nd.ID] = nd
		case k == "leader":
			st.leaderVal, st.leaderRev = kv.val.(string), kv.create
			id, _, _ := strings.Cut(st.leaderVal, "/")
			v, _ := strconv.Atoi(id)
			st.leader = int32(v)
		case k == "assignment":
			st.assignment, st.assignRev = kv.val.(Assignment), kv.mod
		case strings.HasPrefix(k, "ready/"):
			us, ns, _ := strings.Cut(k[len("ready/"):], "/")
			u, _ := strconv.Atoi(us)
			id, _ := strconv.Atoi(ns)
			epoch, _ := strconv.ParseInt(kv.val.(string), 10, 64)
			readies = append(readies, [3]int64{int64(u), int64(id), epoch})
		}
	}
	// As Member.read: a ready said for an earlier move does not count.
	for _, r := range readies {
		if r[2] >= since(st.assignment, int(r[0])) {
			st.ready[int(r[0])] = append(st.ready[int(r[0])], int32(r[1]))
		}
	}
	for _, ns := range st.ready {
		slices.Sort(ns)
	}
	e.read, e.readGen = st, e.gen
	return st, nil
}

// lead is Member.lead.
func (n *simNode) lead(st state, cont func()) {
	s := n.s
	val := fmt.Sprintf("%d/%x", n.id, n.lease)
	lease := n.lease
	if st.leader == None {
		n.call(s.reqTO, "campaign", func(e *simEtcd) (any, error) {
			if e.createRev("leader") != 0 {
				return false, nil
			}
			return true, e.put("leader", val, lease)
		}, func(resp any, err error) {
			if err == nil && resp.(bool) {
				s.trace(n, "leads", lease, 0)
				n.poke()
			}
			cont()
		})
		return
	}
	if st.leaderVal != val {
		cont()
		return
	}
	registered, draining := nodeLists(st.nodes)
	force := warmTimeouts(st.assignment.Next, n.l.nextSince, s.clock(), s.warm)
	next, changed := Plan([]int{s.units}, st.assignment, registered, draining, st.ready, force)
	if !changed {
		cont()
		return
	}
	n.call(s.reqTO, "write assignment", func(e *simEtcd) (any, error) {
		if e.createRev("leader") != st.leaderRev || e.modRev("assignment") != st.assignRev {
			return false, nil
		}
		return true, e.put("assignment", next.clone(), 0)
	}, func(resp any, err error) {
		if err == nil && resp.(bool) {
			s.trace(n, "wrote assignment epoch", next.Epoch, 0)
			n.poke()
		}
		cont()
	})
}

// reconcile is the rest of Member.step, after lead.
func (n *simNode) reconcile(st state, susp bool) {
	s := n.s
	l := &n.l
	a := st.assignment
	act := Reconcile(a, n.id, l.held, l.warmed, susp)
	for _, u := range act.Unload {
		n.unload(u)
		delete(l.held, u)
	}
	for _, u := range act.Load {
		if l.busy[u] {
			continue
		}
		l.held[u], l.busy[u] = true, true
		n.load(u, func(err error) {
			if err == nil && n.suspended() {
				n.unload(u) // the watchdog may have run before it loaded
			}
			n.result(unitResult{u: u, err: err})
		})
	}
	for _, u := range act.Preload {
		if l.busy[u] {
			continue
		}
		l.busy[u] = true
		n.preload(u, func(err error) { n.result(unitResult{u: u, preload: true, err: err}) })
	}
	// Ready keys, one request at a time as the Member does.
	var ops []func(next func())
	for _, u := range sortedKeys(l.warmed) {
		moving := u < len(a.Next) && a.Next[u] == n.id
		if !moving {
			delete(l.warmed, u)
			continue
		}
		if said, ok := l.readyPut[u]; (!ok || said < since(a, u)) && !susp {
			epoch := a.Epoch
			ops = append(ops, func(next func()) {
				key := fmt.Sprintf("ready/%d/%d", u, n.id)
				lease := n.lease
				n.call(s.reqTO, "put ready", func(e *simEtcd) (any, error) { return nil, e.put(key, strconv.FormatInt(epoch, 10), lease) }, func(_ any, err error) {
					if err == nil {
						l.readyPut[u] = epoch
					}
					next()
				})
			})
		}
	}
	ops = append(ops, func(next func()) {
		var dels []func(next func())
		for _, u := range sortedKeys(l.readyPut) {
			if u >= len(a.Next) || a.Next[u] != n.id {
				key := fmt.Sprintf("ready/%d/%d", u, n.id)
				dels = append(dels, func(next func()) {
					n.call(s.reqTO, "delete ready", func(e *simEtcd) (any, error) { e.del(key); return nil, nil }, func(_ any, err error) {
						if err == nil {
							delete(l.readyPut, u)
						}
						next()
					})
				})
			}
		}
		seq(dels, next)
	})
	seq(ops, n.stepDone)
}

// seq runs ops one after the other, then done.
func seq(ops []func(next func()), done func()) {
	if len(ops) == 0 {
		done()
		return
	}
	ops[0](func() { seq(ops[1:], done) })
}

// The Units runtime: the etcd store's Acquire and reads, and the shard
// set's Load, Unload and Holds.

func ownerKey(u int) string { return "owner/" + strconv.Itoa(u) }

// load is Units.Load: Acquire (put the owner key under the store's
// lease), then read the unit's records; an Unload meanwhile cancels it.
func (n *simNode) load(u int, done func(error)) {
	s := n.s
	if n.slots[u] != nil {
		done(nil)
		return
	}
	s.handles++
	sl := &simSlot{handle: s.handles, lease: n.storeLease}
	n.slots[u] = sl
	n.call(s.reqTO, "acquire", func(e *simEtcd) (any, error) {
		if kv := e.kvs[ownerKey(u)]; kv != nil {
			for _, o := range s.procs {
				if o != n && !o.dead && o.slots[u] != nil && o.slots[u].handle == kv.val.(int64) {
					s.stats.takeovers++ // o believes it serves u
				}
			}
		}
		if err := e.put(ownerKey(u), sl.handle, sl.lease); err != nil {
			return nil, err
		}
		return e.rev, nil
	}, func(resp any, err error) {
		if n.slots[u] != sl {
			done(errSimUnloaded)
			return
		}
		if err != nil {
			n.slots[u] = nil
			done(err)
			return
		}
		sl.rev = resp.(int64)
		n.call(s.reqTO, "read unit", func(e *simEtcd) (any, error) { return slices.Clone(e.logs[u]), nil }, func(resp any, err error) {
			if n.slots[u] != sl {
				done(errSimUnloaded)
				return
			}
			if err != nil {
				n.slots[u] = nil
				done(err)
				return
			}
			sl.view = resp.([]simRec)
			sl.active = true
			// Invariant 2: the load reads every write acknowledged
			// before its Acquire (a write acknowledged since came from a
			// later Acquire, which fenced this one).
			for _, r := range s.acked[u] {
				if p := s.e.pos[r.id]; p.rev < sl.rev && (p.i >= len(sl.view) || sl.view[p.i] != r) {
					s.failf("node %d loaded unit %d (owner key at rev %d) without acknowledged write %d (by node %d at rev %d)", n.id, u, sl.rev, r.id, r.node, p.rev)
				}
			}
			s.trace(n, "serves unit at rev", int64(u), sl.rev)
			n.think(u, sl)
			done(nil)
		})
	})
}

func (n *simNode) preload(u int, done func(error)) {
	n.call(n.s.reqTO, "preload", func(e *simEtcd) (any, error) { return nil, nil }, func(_ any, err error) { done(err) })
}

func (n *simNode) unload(u int) {
	if n.slots[u] != nil {
		n.s.trace(n, "unloads unit", int64(u), 0)
		n.slots[u] = nil
	}
}

func (n *simNode) holds(u int) bool { return n.slots[u] != nil }

// simWriteOp is a write of unit u by handle h (owner key put at rev)
// whose writer's view of the unit is view: the store's transaction,
// guarded by the owner key's ModRevision.
func simWriteOp(u int, h, rev int64, view []simRec, rec simRec) func(e *simEtcd) (any, error) {
	return func(e *simEtcd) (any, error) {
		if e.modRev(ownerKey(u)) != rev {
			if e.kvs[ownerKey(u)] == nil {
				e.s.stats.expiredMidWrite++
			} else {
				e.s.stats.fenced++
			}
			return nil, errSimFenced
		}
		// Invariant 1: the writer holds the owner key and saw the whole
		// log (no lost update, no write from a stale view).
		if kv := e.kvs[ownerKey(u)]; kv == nil || kv.val.(int64) != h {
			e.s.failf("unit %d: a write by node %d (handle %d) committed while the owner key is %v", u, rec.node, h, kv)
		} else if !slices.Equal(view, e.logs[u]) {
			e.s.failf("unit %d: node %d wrote from a view of %d records, the log has %d", u, rec.node, len(view), len(e.logs[u]))
		}
		e.rev++
		e.pos[rec.id] = simPos{i: len(e.logs[u]), rev: e.rev}
		e.logs[u] = append(e.logs[u], rec)
		return nil, nil
	}
}

// writeLoop is the workload on unit u, from its load on: while sl
// serves it, write one record at a time; a write fenced or timed out
// makes the runtime drop the unit (it does not know its state any more),
// and the Member loads it again if it still owns it.
func (n *simNode) writeLoop(u int, sl *simSlot) {
	s := n.s
	if n.slots[u] != sl || !n.running {
		return
	}
	s.recs++
	rec := simRec{id: s.recs, node: n.id}
	view := sl.view
	n.call(s.reqTO, "write", simWriteOp(u, sl.handle, sl.rev, view, rec), func(_ any, err error) {
		if n.slots[u] != sl {
			return
		}
		if err != nil {
			s.trace(n, "write failed; drops unit", int64(u), 0)
			n.slots[u] = nil
			return
		}
		s.acked[u] = append(s.acked[u], rec)
		s.stats.acks++
		sl.view = append(slices.Clip(view), rec)
		// Invariant 2: an acknowledged write is in the log.
		if p, ok := s.e.pos[rec.id]; !ok || s.e.logs[u][p.i] != rec {
			s.failf("node %d: acknowledged write %d of unit %d is not in its log", n.id, rec.id, u)
		}
		n.think(u, sl)
	})
}

// think waits a little before the next write.
func (n *simNode) think(u int, sl *simSlot) {
	n.s.at(n, time.Duration(n.s.r.Int64N(int64(800*time.Millisecond))), func() { n.writeLoop(u, sl) })
}

// crash kills the process: it does nothing more, its lease is left to
// expire.
func (n *simNode) crash() {
	n.dead, n.running = true, false
	clear(n.slots)
}

// leave is Member.Leave with a deadline of timeout.
func (n *simNode) leave(timeout time.Duration) {
	s := n.s
	deadline := s.now + timeout
	n.draining = true
	node := n.self()
	lease := n.lease
	n.call(s.reqTO, "mark draining", func(e *simEtcd) (any, error) { return nil, e.put(nodeKey(n.id), node, lease) }, func(_ any, err error) {
		if err != nil {
			n.close()
			return
		}
		n.poke()
		var wait func()
		wait = func() {
			if drained(n.state, n.id) || s.now >= deadline {
				n.close()
				return
			}
			s.at(n, 20*time.Millisecond, wait)
		}
		wait()
	})
}

// close is Member.Close: stop (the loop unloads every unit), revoke the
// lease, and the process exits.
func (n *simNode) close() {
	s := n.s
	n.epoch++ // cancels the Member's context: calls under way return
	n.running = false
	n.stepping = false
	for u := range s.units {
		n.unload(u)
	}
	lease := n.lease
	n.call(max(s.ttl/2, time.Second), "revoke", func(e *simEtcd) (any, error) { e.revoke(lease); return nil, nil }, func(any, error) {
		n.dead = true
	})
	s.trace(n, "closes", lease, 0)
}
