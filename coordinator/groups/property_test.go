package groups_test

// A property test of the classic-group state machine: random schedules of
// up to 50 simulated consumers, each behaving like a real client, against
// the pure machine (through the harness, in fake time), with the
// invariants below checked after every step.
//
// Every schedule is one seeded math/rand/v2 source (the machine's id seed
// derives from it too), so a seed replays exactly:
//
//	go test ./coordinator/groups/ -run TestPropertyGroups -seed=N -v
//
// -schedules and -seedbase pick how many schedules run and from which
// seed; -tracesteps how many steps of a failing schedule are printed. A
// failure reports the seed, the invariant, the evidence, a trace of the
// last steps and every member's state.
//
// Schedules: 1–50 members (some all at once at the start, the rest
// joining later), 150–350 steps, each step one of: time advancing (1 ms
// to 15 s, stopping at every machine timer and member deadline so that
// members react at once), a new member, a coordinator restart (none, rare
// or frequent per schedule), or a member action. Per schedule: initial
// delay 0.3–2 s with a quiet window equal or shorter, sometimes a small
// group.max.size, every member sharing one client id or not; per member:
// session timeout 6–10 s, rebalance timeout 10–30 s. At the end the chaos
// stops and the group must converge (invariant 5).
//
// The client model (pMember): JoinGroup v9 (sometimes v4–8) with the
// MEMBER_ID_REQUIRED round (now and then coming back late, past the
// pending id's expiry), old clients on v0–3 that are added directly, and
// static members on v5–9 with an instance id. When its join is answered
// the leader computes an assignment — the 12 partitions of topic "t" round
// robin over the member list it got, encoded as text naming the
// generation, the leader sync, the leader, the member and its instance —
// and sends it in SyncGroup (none when told SkipAssignment); followers
// send an empty SyncGroup. Members heartbeat every third of their session
// timeout, also while their SyncGroup is parked, and react as clients do:
// REBALANCE_IN_PROGRESS → rejoin with the member id (half of the time
// after committing with the old generation, as the Java consumer does; a
// fifth of the time only after revoking for up to 1.5 rebalance timeouts,
// heartbeating meanwhile); UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION → reset
// and rejoin (dynamic: no member id; static: the instance id and no member
// id); FENCED_INSTANCE_ID and GROUP_MAX_SIZE_REACHED → stop. They commit
// (OffsetCommit v8, v7 with the instance id for static members, v2 for
// old clients) increasing offsets of the partitions they were assigned,
// with their generation and member id; "cooperative" members also commit
// with their old assignment while rejoining. At random a member rejoins
// (same or changed metadata), leaves, crashes (silent forever), is slow
// (does nothing at all for up to 20 s, then may commit before anything
// else: a zombie), restarts as a static member (new process, same
// instance id, no member id), is removed by an admin by instance id, or
// never sends the SyncGroup of a generation it was answered (while still
// heartbeating). A coordinator restart loses every parked request; its
// member retries after a backoff, like a client whose connection closed.
//
// Invariants (checked after every step; the number is in every failure):
//
//  1. One assignment per generation. Every successful SyncGroup answer
//     carries bytes that the leader of that same generation produced for
//     that member (or for the member it replaced, same instance id), and
//     all answers for one generation come from the same leader sync. No
//     two members believe they own the same partition in the same
//     generation. A leader is told only about dynamic members whose
//     JoinGroup was answered for its generation (§5.4); every successful
//     JoinGroup names a leader, and a leader gets the member list.
//  2. Generations never go back: every generation in a JoinGroup or
//     SyncGroup answer is >= every generation answered before, except
//     across a coordinator restart. The precise rule for a restart: the
//     group reloads the generation of its last record, and (a) every
//     generation whose assignment was synced is durable, so the reloaded
//     generation G is >= the last synced one S; (b) if the record has
//     members, G == S and its assignments are exactly the leader's — a
//     join phase that completed but was not synced is never durable
//     (§6.3), so its generation number is reused after the restart; (c)
//     if it has none (the group emptied, §5.6), G > S (or nothing was
//     ever synced). After the restart answers never go below G, and never
//     below S.
//  3. DescribeGroups: a Stable group has protocol consumer/roundrobin and
//     its members all hold the assignment of the last synced generation,
//     from one leader sync, each exactly the bytes the leader assigned to
//     it; every SyncGroup sent for that generation since the last restart
//     by a member still in the group was answered with those bytes. In
//     other states every stored assignment is one the leader gave that
//     member. Members keep the client id and host they joined with. While
//     a member's SyncGroup is parked, its Heartbeat is answered NONE (§7).
//  4. Every acknowledged commit is readable: OffsetFetch returns, for every
//     partition, the last acknowledged offset (commits are answered at
//     once, so no later commit can be in flight), also after restarts. A
//     commit is acknowledged only with the last synced generation (a
//     zombie of an older generation is fenced), and a commit right after a
//     Heartbeat said REBALANCE_IN_PROGRESS (same generation) succeeds
//     (§11.3).
//  5. Replies: every request gets at most one reply (the harness); every
//     parked JoinGroup/SyncGroup is answered within the largest rebalance
//     timeout plus the initial delay, unless a restart lost it; a member
//     waiting with a parked request is never expired (§10), and a synced
//     member heartbeating in time is never removed or left behind without
//     first being told REBALANCE_IN_PROGRESS; a MEMBER_ID_REQUIRED id is
//     accepted until exactly its session timeout and refused after it or
//     after a restart (§4.3). At the end of every schedule, with the chaos
//     stopped and every live member behaving, the group converges within
//     four rebalance timeouts plus two minutes: Stable, exactly the live
//     members, each synced on the last generation with the bytes
//     DescribeGroups shows (or Empty when no member is alive).
//  6. Identity: a member id is never handed out twice, not even across
//     coordinator restarts; a live static member is fenced only if a
//     restart reloaded a record from before its id was durable (it never
//     synced with it).
//  7. Events (observe.GroupEvent; the harness checks every output, see
//     events_test.go): once the group has converged, the event log has
//     every completed rebalance after a start, completed generations only
//     grow, no rebalance is left open, and the members the events report
//     present (from the last restart's reload on: a classic restart
//     silently reloads the members of the last record) are exactly the
//     live members.
//
// Retention sweeps are out of scope (RetentionCheck is a day; a schedule
// lasts minutes of fake time), so the group is never deleted.

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	propSeed      = flag.Int64("seed", 0, "TestPropertyGroups: replay only the schedule with this seed, with a longer trace")
	propSchedules = flag.Int("schedules", 200, "TestPropertyGroups: how many schedules to run")
	propSeedBase  = flag.Int64("seedbase", 0, "TestPropertyGroups: run seeds seedbase+1 … seedbase+schedules")
	propTrace     = flag.Int("tracesteps", 30, "TestPropertyGroups: how many of a failing schedule's last steps to print")
)

const (
	pGroup       = "g"
	pTopic       = "t"
	pPartitions  = 12
	pMaxRebal    = 30 * time.Second // largest rebalance timeout a member asks for
	pMaxFailures = 3                // schedules reported before giving up
)

// TestPropertyGroups runs the random schedules.
func TestPropertyGroups(t *testing.T) {
	var st propStats
	steps, events := 0, 0
	runSchedules(t, *propSeed, *propSeedBase, *propSchedules, func(seed int64) (string, func()) {
		s := newPropSim(t, seed, *propSeed != 0)
		msg := s.run()
		return msg, func() {
			steps += s.step
			events += s.events
			st.add(s)
		}
	})
	t.Logf("%d steps, %d requests", steps, events)
	t.Logf("%+v", st)
}

// runSchedules runs one schedule per seed (only one if one is given,
// else seedbase+1 … seedbase+n) and reports the failing ones, the first
// with its trace, until pMaxFailures have failed. run returns a failure
// message, or "" if the schedule held, and a merge func that adds what
// the schedule exercised to the test's totals.
//
// The schedules are independent simulations on fake time, each with its
// own harness, shard and rng, and CPU-bound: they run on up to
// GOMAXPROCS goroutines (the harness's failures are panics that the
// schedule's run recovers, never t.FailNow off the test goroutine). The
// results are taken, merged and reported in seed order, so every seed
// is run and checked, and what is reported, as when they ran one by one;
// only seeds after the pMaxFailures-th failure may also run, unreported.
func runSchedules(t *testing.T, one, base int64, n int, run func(seed int64) (string, func())) {
	seeds := []int64{one}
	if one == 0 {
		seeds = seeds[:0]
		for i := range n {
			seeds = append(seeds, base+int64(i)+1)
		}
	}
	start := time.Now()
	type result struct {
		msg     string
		merge   func()
		skipped bool
	}
	results := make([]chan result, len(seeds))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(seeds)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(seeds) {
					return
				}
				if stop.Load() {
					results[i] <- result{skipped: true}
					continue
				}
				msg, merge := run(seeds[i])
				results[i] <- result{msg: msg, merge: merge}
			}
		})
	}
	defer wg.Wait()
	defer stop.Store(true)
	failed, ran := 0, 0
	for i := range seeds {
		r := <-results[i]
		if r.skipped {
			break
		}
		r.merge()
		msg := r.msg
		ran++
		if msg == "" {
			continue
		}
		if failed++; failed > 1 {
			// The trace of the first is enough; the others say how
			// to replay them.
			lines := strings.SplitN(msg, "\n", 3)
			msg = strings.Join(lines[:2], "\n")
		}
		t.Error(msg)
		if failed >= pMaxFailures {
			t.Logf("stopping after %d failing schedules", failed)
			break
		}
	}
	t.Logf("%d schedules in %v", ran, time.Since(start).Round(time.Millisecond))
}

// randAdvance draws how far a schedule step moves time: up to 500 ms with
// probability short, 0.5–3 s most of the other times, else 3 s to longest.
func randAdvance(rng *rand.Rand, short float64, longest time.Duration) time.Duration {
	switch x := rng.Float64(); {
	case x < short:
		return time.Duration(1+rng.IntN(500)) * time.Millisecond
	case x < 0.85:
		return time.Duration(500+rng.IntN(2500)) * time.Millisecond
	default:
		return 3*time.Second + time.Duration(rng.Int64N(int64(longest-3*time.Second)))
	}
}

// propStats says what the schedules exercised.
type propStats struct {
	Members, Generations, LeaderSyncs, Restarts, Commits int
	Events, RebalancesCompleted                          int
	Actions, Gone, Errors                                map[string]int
}

func (st *propStats) add(s *propSim) {
	if st.Gone == nil {
		st.Actions, st.Gone, st.Errors = map[string]int{}, map[string]int{}, map[string]int{}
	}
	for k, v := range s.acts {
		st.Actions[k] += v
	}
	st.Members += len(s.members)
	st.Generations += int(s.synced)
	st.LeaderSyncs += s.nsync
	st.Restarts += s.restarts
	st.Commits += s.commits
	st.Events += len(s.h.events)
	st.RebalancesCompleted += s.rebalances
	for _, m := range s.members {
		if m.status == pGone {
			st.Gone[m.gone]++
		}
	}
	for k, v := range s.errs {
		st.Errors[k] += v
	}
}

// ---- the simulated client -------------------------------------------------

type pStatus int8

const (
	pIdle     pStatus = iota // (re)joins at wakeAt
	pJoining                 // JoinGroup outstanding
	pSyncing                 // SyncGroup outstanding
	pStable                  // holds an assignment
	pRevoking                // told to rejoin; still heartbeating, rejoins at wakeAt
	pGone                    // crashed, left, fenced or failed: silent forever
)

// pMember is one simulated consumer.
type pMember struct {
	name     string
	clientID string
	instance *string
	old      bool     // a v0–3 client: added directly, old versions throughout
	coop     bool     // keeps (and commits) its partitions while it rejoins
	prefs    []string // its protocols, in its order of preference
	joinV    int16
	syncV    int16
	hbV      int16
	leaveV   int16
	commitV  int16
	session  time.Duration
	rebal    time.Duration
	hbEvery  time.Duration

	status   pStatus
	gone     string
	memberID string
	gen      int32 // generation of the last successful JoinGroup
	req      machine.RequestID
	wakeAt   time.Time
	nextHB   time.Time
	slowTill time.Time
	slept    bool // was slow; commits first thing when it wakes, half of the time
	stuckAt  int  // coordinator restarts when it decided never to sync (status pSyncing, req 0)
	// idRestarts: coordinator restarts when it got memberID; idDurable:
	// it synced with memberID, which is therefore in the group's record.
	idRestarts int
	idDurable  bool
	// lastOK: its last successful Heartbeat or SyncGroup; clean: it has
	// not been slow, removed by an admin or through a coordinator restart
	// since. leaveSent: a LeaveGroup for its id was sent (by it or an
	// admin).
	lastOK    time.Time
	clean     bool
	leaveSent bool
	metaRev   int

	held     bool // holds asg, from a successful SyncGroup
	asg      pAssignment
	asgBytes []byte
}

func (m *pMember) live() bool { return m.status != pGone }

func (m *pMember) heartbeats() bool {
	return m.status == pSyncing || m.status == pStable || m.status == pRevoking
}

// metadata is a consumer-protocol Subscription v0 of topic t with user
// data that changes when the member changes its metadata.
func (m *pMember) metadata() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(pTopic)))
	b = append(b, pTopic...)
	ud := fmt.Sprintf("%s/%d", m.name, m.metaRev)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ud)))
	return append(b, ud...)
}

// pAssignment is what a leader hands a member, as text.
type pAssignment struct {
	gen      int32
	sync     int // the leader sync that produced it
	leader   string
	member   string
	instance string // "" for a dynamic member
	parts    []int32
}

func (a pAssignment) encode() []byte {
	ps := make([]string, len(a.parts))
	for i, p := range a.parts {
		ps[i] = strconv.Itoa(int(p))
	}
	return fmt.Appendf(nil, "gen=%d|sync=%d|leader=%s|member=%s|instance=%s|parts=%s",
		a.gen, a.sync, a.leader, a.member, a.instance, strings.Join(ps, ","))
}

func pDecodeAssignment(b []byte) (pAssignment, error) {
	var a pAssignment
	f := strings.Split(string(b), "|")
	keys := []string{"gen", "sync", "leader", "member", "instance", "parts"}
	if len(f) != len(keys) {
		return a, fmt.Errorf("not a leader assignment: %q", b)
	}
	v := make([]string, len(keys))
	for i, k := range keys {
		s, ok := strings.CutPrefix(f[i], k+"=")
		if !ok {
			return a, fmt.Errorf("not a leader assignment: %q", b)
		}
		v[i] = s
	}
	g, err1 := strconv.Atoi(v[0])
	n, err2 := strconv.Atoi(v[1])
	if err1 != nil || err2 != nil {
		return a, fmt.Errorf("not a leader assignment: %q", b)
	}
	a.gen, a.sync, a.leader, a.member, a.instance = int32(g), n, v[2], v[3], v[4]
	if v[5] != "" {
		for _, p := range strings.Split(v[5], ",") {
			x, err := strconv.Atoi(p)
			if err != nil {
				return a, fmt.Errorf("not a leader assignment: %q", b)
			}
			a.parts = append(a.parts, int32(x))
		}
	}
	return a, nil
}

// pLeaderSync is an assignment a leader sent.
type pLeaderSync struct {
	gen    int32
	leader string
	assign map[string][]byte // member id → bytes
}

// pReq is a JoinGroup or SyncGroup sent.
type pReq struct {
	key        int16
	m          *pMember
	memberID   string
	instance   *string // the client's instance id
	gen        int32   // SyncGroup: the generation sent
	at         time.Time
	lost       bool // sent before a coordinator restart and not answered
	atOnce     bool // answered when it was sent
	leads      bool // SyncGroup with the leader's assignment
	restarts   int  // coordinator restarts before it was answered
	answeredAt time.Time
	sentAt     int // coordinator restarts before it was sent
	session    time.Duration
	pending    *pPending // JoinGroup with an id handed out by MEMBER_ID_REQUIRED
}

// pLeaderList is the dynamic members a leader was told about.
type pLeaderList struct {
	gen     int32
	leader  string
	proto   string
	all     []string
	dynamic []string
}

// pPending is a MEMBER_ID_REQUIRED id: valid until deadline, unless a
// coordinator restart forgot it.
type pPending struct {
	deadline time.Time
	restarts int
}

// pIssued is where a member id was handed out.
type pIssued struct {
	req      machine.RequestID
	restarts int
}

type pSyncKey struct {
	member string
	gen    int32
}

// ---- the simulation -------------------------------------------------------

type propFailure struct{ msg string }

// propTB turns the harness's fatal errors into a schedule failure, so that
// the seed and the trace are reported with them.
type propTB struct {
	testing.TB
}

func (propTB) Helper() {}
func (propTB) Fatalf(format string, args ...any) {
	panic(propFailure{"harness: " + fmt.Sprintf(format, args...)})
}
func (p propTB) Fatal(args ...any) { panic(propFailure{"harness: " + fmt.Sprint(args...)}) }
func (p propTB) Errorf(format string, args ...any) {
	panic(propFailure{"harness: " + fmt.Sprintf(format, args...)})
}
func (p propTB) FailNow() { panic(propFailure{"harness: FailNow"}) }

type propSim struct {
	t      *testing.T
	seed   int64
	rng    *rand.Rand
	h      *harness
	cfg    groups.Config
	long   bool // replaying one seed: longer trace
	step   int
	events int

	members    []*pMember
	maxMembers int
	steps      int
	pStatic    float64
	pOld       float64
	pRestart   float64
	// sharedClientID: every member uses the same client id, as clients
	// left with their library's default do.
	sharedClientID bool
	// protoMix: members prefer roundrobin or range, some only know range,
	// a few only sticky (and get INCONSISTENT_GROUP_PROTOCOL).
	protoMix bool
	calm     bool          // the liveness phase: members behave
	bound    time.Duration // how long a parked request may wait

	reqs    map[machine.RequestID]*pReq
	open    []machine.RequestID // join/sync requests not yet seen answered
	scanned int                 // h.order read so far

	restarts    int
	commits     int
	rebalances  int            // completed, by the events
	errs        map[string]int // error answers seen, by API and error
	acts        map[string]int // member actions, by kind
	epochMax    int32          // largest generation answered since the last restart
	synced      int32          // largest generation a SyncGroup succeeded for
	syncedBy    map[int32]int
	leaderSyncs map[int]*pLeaderSync
	nsync       int
	syncReqs    map[pSyncKey]machine.RequestID // since the last restart
	ids         map[string]pIssued             // member ids handed out
	joined      map[pSyncKey]bool              // successful JoinGroups since the last restart
	pending     map[string]pPending            // MEMBER_ID_REQUIRED ids handed out
	leaderLists []pLeaderList                  // to check at the end of the step
	protoOf     map[int32]string               // protocol chosen, by generation

	nextOffset [pPartitions]int64
	acked      [pPartitions]int64
	ackedBy    [pPartitions]string

	trace   [][]string
	cur     []string
	dropped int
}

func newPropSim(t *testing.T, seed int64, long bool) *propSim {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x636f686f7274))
	cfg := testConfig()
	binary.LittleEndian.PutUint64(cfg.Seed[:], uint64(seed))
	cfg.InitialDelay = time.Duration(300+rng.IntN(1700)) * time.Millisecond
	cfg.InitialQuiet = cfg.InitialDelay
	if rng.IntN(2) == 0 {
		cfg.InitialQuiet = time.Duration(50+rng.Int64N(int64(cfg.InitialDelay/time.Millisecond)-49)) * time.Millisecond
	}
	if rng.IntN(10) == 0 {
		cfg.MaxSize = 2 + rng.IntN(14)
	}
	cfg.RetentionCheck = 24 * time.Hour
	s := &propSim{
		t:           t,
		seed:        seed,
		rng:         rng,
		cfg:         cfg,
		long:        long,
		reqs:        map[machine.RequestID]*pReq{},
		syncedBy:    map[int32]int{},
		leaderSyncs: map[int]*pLeaderSync{},
		syncReqs:    map[pSyncKey]machine.RequestID{},
		errs:        map[string]int{},
		ids:         map[string]pIssued{},
		joined:      map[pSyncKey]bool{},
		pending:     map[string]pPending{},
		protoOf:     map[int32]string{},
		acts:        map[string]int{},
	}
	switch rng.IntN(3) {
	case 0:
		s.maxMembers = 1 + rng.IntN(5)
	case 1:
		s.maxMembers = 1 + rng.IntN(15)
	default:
		s.maxMembers = 1 + rng.IntN(50)
	}
	s.steps = 150 + rng.IntN(200)
	s.pStatic = []float64{0, 0.2, 0.5}[rng.IntN(3)]
	s.pOld = []float64{0, 0.15, 0.3}[rng.IntN(3)]
	s.pRestart = []float64{0, 0.005, 0.02}[rng.IntN(3)]
	s.sharedClientID = rng.IntN(3) == 0
	s.protoMix = rng.IntN(4) == 0
	s.bound = pMaxRebal + cfg.InitialDelay + 2*time.Second
	for p := range s.acked {
		s.acked[p] = -1
	}
	return s
}

func (s *propSim) now() time.Time { return s.h.now }

func (s *propSim) rel() string {
	return s.h.now.Sub(epoch).Round(time.Millisecond).String()
}

// fail ends the schedule.
func (s *propSim) fail(inv int, format string, args ...any) {
	panic(propFailure{fmt.Sprintf("invariant %d: %s", inv, fmt.Sprintf(format, args...))})
}

// tr adds a line to the current step's trace. A step keeps its first
// pTraceHead lines and its last ones; a failure shows the head and the
// tail (all of it when replaying one seed).
func (s *propSim) tr(format string, args ...any) {
	if len(s.cur) >= pTraceKeep {
		s.cur = slices.Delete(s.cur, 1+pTraceHead, 2+pTraceHead)
		s.dropped++
	}
	s.cur = append(s.cur, "    "+fmt.Sprintf(format, args...))
}

const (
	pTraceKeep = 400 // lines a step keeps
	pTraceHead = 100 // of which the first
)

func (s *propSim) beginStep(what string) {
	if s.cur != nil {
		head, tail := 4, 12
		if s.long {
			head, tail = pTraceHead, pTraceKeep
		}
		skipped := s.dropped
		if n := len(s.cur) - 1; n > head+tail {
			skipped += n - head - tail
			s.cur = slices.Concat(s.cur[:1+head], s.cur[len(s.cur)-tail:])
		}
		if skipped > 0 {
			s.cur = slices.Insert(s.cur, 1+min(head, len(s.cur)-1), fmt.Sprintf("    … %d lines …", skipped))
		}
		s.trace = append(s.trace, s.cur)
		if len(s.trace) > *propTrace {
			s.trace = s.trace[1:]
		}
	}
	s.dropped = 0
	s.cur = []string{fmt.Sprintf("step %d t=+%s: %s", s.step, s.rel(), what)}
}

// pShort names a member id by its prefix and the start of its UUID.
func pShort(id string) string {
	if len(id) > 37 {
		return id[:len(id)-36] + id[len(id)-36:len(id)-32]
	}
	if id == "" {
		return `""`
	}
	return id
}

func (s *propSim) run() (msg string) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		f, ok := r.(propFailure)
		if !ok {
			panic(r)
		}
		s.beginStep("(failure)")
		var b strings.Builder
		fmt.Fprintf(&b, "schedule seed=%d failed at step %d (t=+%s): %s\n", s.seed, s.step, s.rel(), f.msg)
		fmt.Fprintf(&b, "replay: go test ./coordinator/groups/ -run TestPropertyGroups -seed=%d -v\n", s.seed)
		fmt.Fprintf(&b, "schedule: %d members max, %d steps, static %.2f, old %.2f, restart %.3f, shared client id %v, protocol mix %v, delay %v quiet %v, max size %d\n",
			s.maxMembers, s.steps, s.pStatic, s.pOld, s.pRestart, s.sharedClientID, s.protoMix, s.cfg.InitialDelay, s.cfg.InitialQuiet, s.cfg.MaxSize)
		fmt.Fprintf(&b, "last %d steps:\n", len(s.trace))
		for _, st := range s.trace {
			for _, l := range st {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		b.WriteString("members now:\n")
		for _, m := range s.members {
			fmt.Fprintf(&b, "    %s\n", s.describeMember(m))
		}
		msg = b.String()
	}()
	s.h = newHarness(propTB{s.t}, s.cfg)
	s.h.guardEvery = propGuardEvery
	defer s.h.guard()
	s.beginStep("start")
	for range 1 + s.rng.IntN(s.maxMembers) {
		s.spawn()
	}
	s.deliver()
	s.check()
	for s.step = 1; s.step <= s.steps; s.step++ {
		x := s.rng.Float64()
		switch {
		case x < s.pRestart:
			s.beginStep("coordinator restart")
			s.restart()
		case x < 0.37:
			d := s.randAdvance()
			s.beginStep("advance " + d.String())
			s.advance(d)
		case x < 0.375:
			s.beginStep("admin commits offsets")
			s.acts["admin commits"]++
			s.adminCommit()
		case x < 0.45 && len(s.members) < s.maxMembers:
			s.beginStep("new member")
			s.spawn()
		default:
			s.memberAction()
		}
		s.deliver()
		s.check()
	}
	s.liveness()
	return ""
}

func (s *propSim) randAdvance() time.Duration { return randAdvance(s.rng, 0.45, 15*time.Second) }

func (s *propSim) spawn() {
	m := &pMember{name: fmt.Sprintf("m%02d", len(s.members)), gen: -1}
	m.clientID = m.name
	if s.sharedClientID {
		m.clientID = "kgo" // franz-go's default: every member shares it
	}
	switch x := s.rng.Float64(); {
	case x < s.pStatic:
		inst := "i" + m.name[1:]
		m.instance = &inst
		m.joinV = int16(5 + s.rng.IntN(5))
	case x < s.pStatic+s.pOld:
		m.old = true
		m.joinV = int16(s.rng.IntN(4)) // v0: the rebalance timeout is the session timeout
	case s.rng.IntN(5) == 0:
		m.joinV = int16(4 + s.rng.IntN(5))
	default:
		m.joinV = 9
	}
	if m.old {
		m.syncV = int16(s.rng.IntN(3))
		m.hbV = int16(s.rng.IntN(3))
		m.leaveV = int16(s.rng.IntN(3))
		m.commitV = 2
	} else {
		m.syncV = int16(3 + s.rng.IntN(2))
		if m.joinV >= 7 {
			m.syncV = 5
		}
		m.hbV = int16(3 + s.rng.IntN(2))
		m.leaveV = int16(3 + s.rng.IntN(3))
		m.commitV = int16(7 + s.rng.IntN(2))
	}
	m.session = time.Duration(6000+s.rng.IntN(4001)) * time.Millisecond
	m.rebal = time.Duration(10000+s.rng.IntN(20001)) * time.Millisecond
	m.hbEvery = m.session/3 - time.Duration(s.rng.IntN(300))*time.Millisecond
	m.coop = s.rng.IntN(3) == 0
	m.prefs = []string{"roundrobin", "range"}
	if s.protoMix {
		switch x := s.rng.IntN(10); {
		case x < 4:
			m.prefs = []string{"range", "roundrobin"}
		case x < 6:
			m.prefs = []string{"range"}
		case x < 7:
			m.prefs = []string{"sticky"} // compatible with nobody else
		}
	}
	m.status, m.wakeAt = pIdle, s.now()
	s.members = append(s.members, m)
	kind := "dynamic"
	if m.instance != nil {
		kind = "static " + *m.instance
	} else if m.old {
		kind = "old"
	}
	s.tr("spawn %s: %s, join v%d, session %v, rebalance %v", m.name, kind, m.joinV, m.session, m.rebal)
}

// send hands req to the machine on m's connection.
func (s *propSim) send(m *pMember, req kmsg.Request) machine.RequestID {
	s.events++
	cid := "admin"
	if m != nil {
		cid = m.clientID
	}
	return s.h.sendFrom(req, cid)
}

// pSendNow sends a request that must be answered at once.
func pSendNow[R kmsg.Response](s *propSim, m *pMember, req kmsg.Request) R {
	id := s.send(m, req)
	s.scan()
	r, ok := s.h.reply(id)
	if !ok {
		s.fail(5, "%s v%d was not answered at once", kmsg.NameForKey(req.Key()), req.GetVersion())
	}
	return r.(R)
}

// advance moves fake time by d, stopping at every machine timer and every
// member's own deadline, so that members react at once.
func (s *propSim) advance(d time.Duration) {
	end := s.now().Add(d)
	for i := 0; ; i++ {
		if i > 100000 {
			s.fail(5, "time does not advance (livelock at t=+%s)", s.rel())
		}
		next := end
		for _, at := range s.h.timers {
			if at.Before(next) {
				next = at
			}
		}
		for _, m := range s.members {
			if !m.live() {
				continue
			}
			var at time.Time
			switch {
			case s.now().Before(m.slowTill):
				at = m.slowTill
			case m.status == pIdle:
				at = m.wakeAt
			case m.status == pSyncing || m.status == pStable:
				at = m.nextHB
			case m.status == pRevoking:
				at = m.nextHB
				if m.wakeAt.Before(at) {
					at = m.wakeAt
				}
			}
			if at.After(s.now()) && at.Before(next) {
				next = at
			}
		}
		if next.Before(s.now()) {
			next = s.now()
		}
		s.h.advance(next.Sub(s.now()))
		s.scan()
		s.deliver()
		if !next.Before(end) {
			return
		}
	}
}

// deliver lets every member that is awake process its answers and do
// what is due, until nobody has anything to do.
func (s *propSim) deliver() {
	for i := 0; ; i++ {
		if i > 10000 {
			s.fail(5, "members do not settle (livelock at t=+%s)", s.rel())
		}
		progress := false
		for _, m := range s.members {
			if !m.live() || s.now().Before(m.slowTill) {
				continue
			}
			if m.slept {
				// A consumer back from a long poll commits what it
				// processed before it learns anything new: a zombie if the
				// group moved on.
				m.slept = false
				if m.status == pStable && s.rng.IntN(2) == 0 {
					s.commit(m, pCommitNormal)
				}
			}
			if m.status == pJoining || m.status == pSyncing {
				if r, ok := s.h.reply(m.req); ok {
					progress = true
					switch r := r.(type) {
					case *kmsg.JoinGroupResponse:
						s.onJoin(m, r)
					case *kmsg.SyncGroupResponse:
						s.onSync(m, r)
					}
				}
			}
			if (m.status == pIdle || m.status == pRevoking) && !s.now().Before(m.wakeAt) {
				progress = true
				s.sendJoin(m)
			}
			if m.heartbeats() && !s.now().Before(m.nextHB) {
				progress = true
				s.heartbeat(m)
			}
		}
		if !progress {
			return
		}
	}
}

func (s *propSim) sendJoin(m *pMember) {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = m.joinV
	r.Group, r.MemberID, r.ProtocolType = pGroup, m.memberID, "consumer"
	r.InstanceID = m.instance
	r.SessionTimeoutMillis = int32(m.session.Milliseconds())
	r.RebalanceTimeoutMillis = int32(m.rebal.Milliseconds())
	meta := m.metadata()
	for _, p := range m.prefs {
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: meta})
	}
	id := s.send(m, r)
	rq := &pReq{key: r.Key(), m: m, memberID: m.memberID, instance: m.instance, at: s.now(), sentAt: s.restarts, session: m.session}
	if p, ok := s.pending[m.memberID]; ok {
		// The first join with it; after that it is a member's id, or
		// unknown.
		rq.pending = &p
		delete(s.pending, m.memberID)
	}
	s.reqs[id] = rq
	s.open = append(s.open, id)
	m.status, m.req, m.held = pJoining, id, m.held && m.coop
	_, s.reqs[id].atOnce = s.h.reply(id)
	s.tr("%s → JoinGroup#%d v%d member=%s rev=%d", m.name, id, m.joinV, pShort(m.memberID), m.metaRev)
	s.scan()
}

func (s *propSim) onJoin(m *pMember, r *kmsg.JoinGroupResponse) {
	switch r.ErrorCode {
	case 0:
		if r.MemberID != m.memberID {
			m.idDurable, m.idRestarts, m.leaveSent = false, s.reqs[m.req].restarts, false
		}
		m.memberID, m.gen = r.MemberID, r.Generation
		if !s.calm && !s.reqs[m.req].atOnce && s.rng.IntN(40) == 0 {
			// A broken client that heartbeats but never syncs: the sync
			// timer must remove it (§6.4). (Not after an immediate answer:
			// a follower's rejoin in Stable is answered without adding it
			// to the pending syncs, in Kafka too, so nothing would.)
			s.tr("%s never sends its SyncGroup for generation %d", m.name, m.gen)
			m.status, m.req, m.stuckAt = pSyncing, 0, s.restarts
			if !m.nextHB.After(s.now()) {
				m.nextHB = s.now().Add(m.hbEvery)
			}
			return
		}
		s.sendSync(m, r)
	case kerr.MemberIDRequired.Code:
		m.memberID, m.leaveSent = r.MemberID, false
		m.status, m.wakeAt = pIdle, s.now()
		if s.rng.IntN(8) == 0 {
			// A slow client: the pending id may expire first.
			m.wakeAt = s.now().Add(time.Duration(s.rng.Int64N(int64(m.session * 3 / 2))))
		}
	case kerr.RebalanceInProgress.Code:
		m.status, m.wakeAt = pIdle, s.now()
	case kerr.UnknownMemberID.Code:
		s.reset(m)
	case kerr.FencedInstanceID.Code:
		s.fenced(m, "JoinGroup")
	case kerr.GroupMaxSizeReached.Code:
		s.stop(m, pErrName(r.ErrorCode))
	case kerr.InconsistentGroupProtocol.Code:
		if !s.protoMix {
			s.fail(5, "%s: INCONSISTENT_GROUP_PROTOCOL, but every member has the same protocols", m.name)
		}
		s.stop(m, pErrName(r.ErrorCode))
	default:
		s.fail(5, "%s: unexpected JoinGroup error %v", m.name, pErrName(r.ErrorCode))
	}
}

func (s *propSim) sendSync(m *pMember, jr *kmsg.JoinGroupResponse) {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = m.syncV
	r.Group, r.Generation, r.MemberID = pGroup, jr.Generation, jr.MemberID
	if m.syncV >= 3 {
		r.InstanceID = m.instance
	}
	if m.syncV >= 5 {
		typ, proto := "consumer", ""
		if jr.ProtocolType != nil {
			typ = *jr.ProtocolType
		}
		if jr.Protocol != nil {
			proto = *jr.Protocol
		}
		r.ProtocolType, r.Protocol = &typ, &proto
	}
	what := "follower"
	if jr.LeaderID == jr.MemberID && !jr.SkipAssignment {
		if len(jr.Members) == 0 {
			s.fail(1, "%s leads generation %d but got no member list", m.name, jr.Generation)
		}
		s.nsync++
		ls := &pLeaderSync{gen: jr.Generation, leader: jr.MemberID, assign: map[string][]byte{}}
		list := slices.Clone(jr.Members)
		slices.SortFunc(list, func(a, b kmsg.JoinGroupResponseMember) int { return strings.Compare(a.MemberID, b.MemberID) })
		for i, lm := range list {
			a := pAssignment{gen: jr.Generation, sync: s.nsync, leader: jr.MemberID, member: lm.MemberID}
			if lm.InstanceID != nil {
				a.instance = *lm.InstanceID
			}
			for p := i; p < pPartitions; p += len(list) {
				a.parts = append(a.parts, int32(p))
			}
			b := a.encode()
			ls.assign[lm.MemberID] = b
			r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: lm.MemberID, MemberAssignment: b})
		}
		s.leaderSyncs[s.nsync] = ls
		what = fmt.Sprintf("leader sync#%d over %d members", s.nsync, len(list))
	} else if jr.SkipAssignment {
		what = "leader, skip assignment"
	}
	id := s.send(m, r)
	s.reqs[id] = &pReq{key: r.Key(), m: m, memberID: jr.MemberID, instance: m.instance, gen: jr.Generation, at: s.now(), sentAt: s.restarts, leads: len(r.GroupAssignment) > 0}
	s.open = append(s.open, id)
	s.syncReqs[pSyncKey{jr.MemberID, jr.Generation}] = id
	m.status, m.req = pSyncing, id
	_, s.reqs[id].atOnce = s.h.reply(id)
	if !m.nextHB.After(s.now()) {
		m.nextHB = s.now().Add(m.hbEvery)
	}
	s.tr("%s → SyncGroup#%d v%d gen=%d member=%s (%s)", m.name, id, m.syncV, jr.Generation, pShort(jr.MemberID), what)
	s.scan()
}

func (s *propSim) onSync(m *pMember, r *kmsg.SyncGroupResponse) {
	switch r.ErrorCode {
	case 0:
		a, err := pDecodeAssignment(r.MemberAssignment)
		if err != nil {
			s.fail(1, "%s: %v", m.name, err) // scan has already said so
		}
		m.status, m.held, m.asg, m.asgBytes = pStable, true, a, r.MemberAssignment
		// A member that synced is in the group's record: the leader's
		// sync wrote it, and in Stable every change of members is
		// either a rebalance or a replacement, which writes one too.
		m.idDurable = true
		if rq := s.reqs[m.req]; (!rq.atOnce || rq.leads) && !m.slowTill.After(rq.answeredAt) {
			// Answered by the leader's sync: the session timer was
			// re-armed then (not in Stable, §6.2), and it has not been
			// slow since.
			m.lastOK, m.clean = rq.answeredAt, true
		}
	case kerr.RebalanceInProgress.Code:
		m.status, m.wakeAt = pIdle, s.now()
	case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code:
		s.reset(m)
	case kerr.FencedInstanceID.Code:
		s.fenced(m, "SyncGroup")
	case kerr.InconsistentGroupProtocol.Code:
		// A generation number reused after a restart, with another
		// protocol than the one this member was answered.
		if !s.protoMix || s.restarts == 0 {
			s.fail(5, "%s: SyncGroup INCONSISTENT_GROUP_PROTOCOL with the protocol its JoinGroup was answered", m.name)
		}
		s.stop(m, pErrName(r.ErrorCode))
	default:
		s.fail(5, "%s: unexpected SyncGroup error %v", m.name, pErrName(r.ErrorCode))
	}
}

// reset forgets the member's id and generation and rejoins, as a client
// does after UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION.
func (s *propSim) reset(m *pMember) {
	s.tr("%s resets (was %s gen %d)", m.name, pShort(m.memberID), m.gen)
	m.memberID, m.gen, m.held = "", -1, false
	m.status, m.wakeAt = pIdle, s.now()
}

// fenced stops a static member told FENCED_INSTANCE_ID, after checking
// that it can be: only one process per instance id is alive, so its
// instance can map to another member id only if a coordinator restart
// reloaded an older mapping, i.e. its member id was never durable.
func (s *propSim) fenced(m *pMember, api string) {
	if m.idDurable || m.idRestarts == s.restarts {
		why := "no coordinator restart since it got its id"
		if m.idDurable {
			why = "it had synced with that id, so the id was durable"
		}
		s.fail(6, "%s (%s, instance %s) was fenced by %s, but %s", m.name, pShort(m.memberID), *m.instance, api, why)
	}
	s.stop(m, "fenced")
}

func (s *propSim) stop(m *pMember, why string) {
	s.tr("%s stops: %s", m.name, why)
	m.status, m.gone, m.held = pGone, why, false
}

func (s *propSim) heartbeat(m *pMember) {
	m.nextHB = s.now().Add(m.hbEvery)
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = m.hbV
	r.Group, r.Generation, r.MemberID = pGroup, m.gen, m.memberID
	if m.hbV >= 3 {
		r.InstanceID = m.instance
	}
	_, answered := s.h.reply(m.req)
	parked := m.status == pSyncing && m.req != 0 && !answered
	resp := pSendNow[*kmsg.HeartbeatResponse](s, m, r)
	if parked && resp.ErrorCode != 0 {
		s.fail(3, "%s's SyncGroup#%d is parked (the group is CompletingRebalance on generation %d), but its Heartbeat got %v; §7: NONE", m.name, m.req, m.gen, pErrName(resp.ErrorCode))
	}
	if resp.ErrorCode != 0 {
		s.tr("%s heartbeat gen=%d member=%s: %v", m.name, m.gen, pShort(m.memberID), pErrName(resp.ErrorCode))
		s.errs["Heartbeat "+pErrName(resp.ErrorCode)]++
	}
	switch resp.ErrorCode {
	case 0:
		m.lastOK, m.clean = s.now(), true
	case kerr.RebalanceInProgress.Code:
		if (m.status == pSyncing && m.req != 0) || m.status == pRevoking {
			return // its parked SyncGroup is (or will be) answered; or it is on its way
		}
		if m.status == pStable && m.held && s.rng.IntN(2) == 0 {
			// The Java consumer commits before it rejoins; the old
			// generation is still current in PreparingRebalance (§11.3).
			s.commit(m, pCommitRevoking)
			if m.status != pStable {
				return
			}
		}
		m.status, m.wakeAt = pIdle, s.now()
		if !s.calm && s.rng.IntN(5) == 0 {
			// Revoking takes a while (a slow onPartitionsRevoked); the
			// heartbeats go on. Past the rebalance timeout it misses the
			// generation and must be removed at the join completion.
			m.status = pRevoking
			m.wakeAt = s.now().Add(time.Duration(s.rng.Int64N(int64(m.rebal * 3 / 2))))
			s.tr("%s revokes until +%s", m.name, m.wakeAt.Sub(epoch))
		}
	case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code:
		s.checkRemoval(m, "Heartbeat", resp.ErrorCode)
		s.reset(m)
	case kerr.FencedInstanceID.Code:
		s.fenced(m, "Heartbeat")
	default:
		s.fail(5, "%s: unexpected Heartbeat error %v", m.name, pErrName(resp.ErrorCode))
	}
}

type pCommitMode int8

const (
	pCommitNormal    pCommitMode = iota // a stable member: errors make it rejoin
	pCommitRevoking                     // after Heartbeat said REBALANCE_IN_PROGRESS: must succeed
	pCommitRejoining                    // while its JoinGroup/SyncGroup is out: errors are ignored
)

// commit commits new offsets for some of m's partitions, with the
// generation of its assignment.
func (s *propSim) commit(m *pMember, mode pCommitMode) {
	if !m.held || len(m.asg.parts) == 0 {
		return
	}
	if mode != pCommitRejoining && m.gen != m.asg.gen {
		s.fail(0, "client model: %s holds generation %d's assignment but generation %d", m.name, m.asg.gen, m.gen)
	}
	gen := m.asg.gen
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = m.commitV
	r.Group, r.Generation, r.MemberID = pGroup, gen, m.memberID
	if m.commitV >= 7 {
		r.InstanceID = m.instance
	}
	parts := slices.Clone(m.asg.parts)
	s.rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	parts = parts[:1+s.rng.IntN(len(parts))]
	slices.Sort(parts)
	rt := kmsg.OffsetCommitRequestTopic{Topic: pTopic}
	offs := map[int32]int64{}
	for _, p := range parts {
		s.nextOffset[p] += 1 + s.rng.Int64N(100)
		offs[p] = s.nextOffset[p]
		meta := m.name
		rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, Offset: offs[p], Timestamp: -1, LeaderEpoch: -1, Metadata: &meta})
	}
	r.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	resp := pSendNow[*kmsg.OffsetCommitResponse](s, m, r)
	code := int16(0)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				code = p.ErrorCode
				continue
			}
			o, ok := offs[p.Partition]
			if !ok || t.Topic != pTopic {
				s.fail(4, "OffsetCommit answered %s/%d, which was not committed", t.Topic, p.Partition)
			}
			if gen != s.synced {
				s.fail(4, "%s's commit with generation %d was acknowledged, but generation %d has been synced since: a zombie committed", m.name, gen, s.synced)
			}
			s.acked[p.Partition], s.ackedBy[p.Partition] = o, fmt.Sprintf("%s gen %d at +%s", m.name, gen, s.rel())
			s.commits++
		}
	}
	s.tr("%s → OffsetCommit v%d gen=%d member=%s %v: %v", m.name, m.commitV, gen, pShort(m.memberID), parts, pErrName(code))
	if code != 0 {
		s.errs["OffsetCommit "+pErrName(code)]++
	}
	if mode == pCommitRevoking && code != 0 {
		s.fail(4, "%s's commit with generation %d right after Heartbeat said REBALANCE_IN_PROGRESS got %v; PreparingRebalance must accept it (§11.3)", m.name, gen, pErrName(code))
	}
	if mode == pCommitRejoining {
		return // the JoinGroup or SyncGroup in flight decides
	}
	switch code {
	case 0, kerr.RebalanceInProgress.Code:
	case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code:
		s.checkRemoval(m, "OffsetCommit", code)
		s.reset(m)
	case kerr.FencedInstanceID.Code:
		s.fenced(m, "OffsetCommit")
	default:
		s.fail(5, "%s: unexpected OffsetCommit error %v", m.name, pErrName(code))
	}
}

// adminCommit is AdminClient.alterConsumerGroupOffsets: a simple commit
// (generation -1, no member id), which only an Empty (or absent) group
// accepts (§11.3).
func (s *propSim) adminCommit() {
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version, dr.Groups = 5, []string{pGroup}
	state := pSendNow[*kmsg.DescribeGroupsResponse](s, nil, dr).Groups[0].State
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = int16(2 + s.rng.IntN(7))
	r.Group = pGroup
	rt := kmsg.OffsetCommitRequestTopic{Topic: pTopic}
	offs := map[int32]int64{}
	for p := range int32(pPartitions) {
		if s.rng.IntN(3) > 0 {
			continue
		}
		s.nextOffset[p] += 1 + s.rng.Int64N(100)
		offs[p] = s.nextOffset[p]
		meta := "admin"
		rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, Offset: offs[p], Timestamp: -1, LeaderEpoch: -1, Metadata: &meta})
	}
	if len(offs) == 0 {
		return
	}
	r.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	resp := pSendNow[*kmsg.OffsetCommitResponse](s, nil, r)
	want := int16(0)
	if state != "Empty" && state != "Dead" {
		want = kerr.UnknownMemberID.Code
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != want {
				s.fail(4, "an admin's simple commit to a %s group got %v for partition %d, want %v (§11.3)", state, pErrName(p.ErrorCode), p.Partition, pErrName(want))
			}
			if p.ErrorCode == 0 {
				s.acked[p.Partition], s.ackedBy[p.Partition] = offs[p.Partition], fmt.Sprintf("admin at +%s", s.rel())
				s.commits++
			}
		}
	}
	s.tr("admin → OffsetCommit v%d simple, group %s: %v", r.Version, state, pErrName(want))
	s.errs["OffsetCommit (admin) "+pErrName(want)]++
}

func (s *propSim) leave(m *pMember) {
	if m.memberID == "" {
		s.stop(m, "left before it had an id")
		return
	}
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version, r.Group = m.leaveV, pGroup
	if m.leaveV < 3 {
		r.MemberID = m.memberID
	} else {
		r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m.memberID, InstanceID: m.instance}}
	}
	m.leaveSent = true
	resp := pSendNow[*kmsg.LeaveGroupResponse](s, m, r)
	code := resp.ErrorCode
	if len(resp.Members) == 1 {
		code = resp.Members[0].ErrorCode
	}
	s.tr("%s → LeaveGroup v%d member=%s: %v", m.name, m.leaveV, pShort(m.memberID), pErrName(code))
	s.stop(m, "left")
}

// act begins a step that is a member's action and counts it.
func (s *propSim) act(what, kind string) {
	s.beginStep(what)
	s.acts[kind]++
}

// memberAction picks an action by weight, then a member it applies to.
func (s *propSim) memberAction() {
	awake := func(m *pMember) bool { return m.live() && !s.now().Before(m.slowTill) }
	stable := func(m *pMember) bool { return awake(m) && m.status == pStable }
	static := func(m *pMember) bool { return m.live() && m.instance != nil }
	type action struct {
		weight int
		name   string
		ok     func(m *pMember) bool
		do     func(m *pMember)
	}
	acts := []action{
		{30, "commits", func(m *pMember) bool { return stable(m) && m.held }, func(m *pMember) { s.commit(m, pCommitNormal) }},
		{6, "commits while rejoining", func(m *pMember) bool {
			return awake(m) && m.coop && m.held && (m.status == pJoining || m.status == pSyncing || m.status == pRevoking)
		}, func(m *pMember) { s.commit(m, pCommitRejoining) }},
		{10, "heartbeats", func(m *pMember) bool { return awake(m) && m.heartbeats() }, s.heartbeat},
		{8, "rejoins with the same metadata", stable, s.sendJoin},
		{6, "rejoins with new metadata", stable, func(m *pMember) {
			m.metaRev++
			s.sendJoin(m)
		}},
		{4, "leaves", awake, s.leave},
		{3, "crashes", func(m *pMember) bool { return m.live() }, func(m *pMember) { s.stop(m, "crashed") }},
		{8, "is slow", awake, func(m *pMember) {
			d := time.Duration(1000+s.rng.IntN(19000)) * time.Millisecond
			s.tr("%s is slow for %v", m.name, d)
			m.slowTill, m.slept, m.clean = s.now().Add(d), true, false
		}},
		{8, "restarts (static)", static, func(m *pMember) {
			// A new process with the same instance id; the old one's
			// requests are nobody's now.
			m.memberID, m.gen, m.held, m.slowTill, m.slept, m.req = "", -1, false, time.Time{}, false, 0
			m.status, m.wakeAt = pIdle, s.now().Add(time.Duration(s.rng.IntN(3000))*time.Millisecond)
		}},
		{2, "is removed by an admin (static)", static, func(m *pMember) {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Version, r.Group = int16(3+s.rng.IntN(3)), pGroup
			r.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: m.instance}}
			m.leaveSent, m.clean = true, false
			resp := pSendNow[*kmsg.LeaveGroupResponse](s, nil, r)
			s.tr("admin → LeaveGroup instance %s: %v", *m.instance, pErrName(resp.Members[0].ErrorCode))
		}},
	}
	total := 0
	for _, a := range acts {
		total += a.weight
	}
	x := s.rng.IntN(total)
	for _, a := range acts {
		if x -= a.weight; x >= 0 {
			continue
		}
		var cands []*pMember
		for _, m := range s.members {
			if a.ok(m) {
				cands = append(cands, m)
			}
		}
		if len(cands) == 0 {
			d := s.randAdvance()
			s.beginStep("nobody " + a.name + "; advance " + d.String())
			s.advance(d)
			return
		}
		m := cands[s.rng.IntN(len(cands))]
		s.act(m.name+" "+a.name, a.name)
		a.do(m)
		return
	}
}

// restart restarts the coordinator and checks the reloaded generation
// (invariant 2's restart rule).
func (s *propSim) restart() {
	raw, stored := s.h.records[string(record.GroupKey{Shard: s.cfg.Shard, Group: pGroup}.Key())]
	s.h.restart() // with a new id seed, as the runtime since 3194bd5; invariant 6 checks it
	s.restarts++
	for _, id := range s.open {
		if _, ok := s.h.reply(id); !ok {
			s.reqs[id].lost = true
		}
	}
	for _, m := range s.members {
		m.clean = false
		if m.live() && (m.status == pJoining || m.status == pSyncing) && m.req != 0 && s.reqs[m.req].lost {
			// The connection closed: retry after a backoff.
			m.status, m.wakeAt = pIdle, s.now().Add(time.Duration(s.rng.IntN(2000))*time.Millisecond)
			s.tr("%s lost request #%d", m.name, m.req)
		}
	}
	clear(s.syncReqs)
	clear(s.joined)
	s.leaderLists = nil
	if !stored {
		if s.synced != 0 || s.epochMax != 0 {
			s.fail(2, "the group's record is gone after generation %d was synced", s.synced)
		}
		return
	}
	v, err := record.DecodeClassicGroup(raw)
	if err != nil {
		s.fail(2, "the group's record does not decode: %v", err)
	}
	g := v.Generation
	s.tr("reloaded generation %d with %d members (last synced %d, last answered %d)", g, len(v.Members), s.synced, s.epochMax)
	switch {
	case g < s.synced:
		s.fail(2, "restart reloaded generation %d, but generation %d was synced: a synced generation was lost", g, s.synced)
	case len(v.Members) > 0 && g != s.synced:
		s.fail(2, "restart reloaded generation %d with members, but the last synced generation is %d: an unsynced join phase was made durable (§6.3)", g, s.synced)
	case len(v.Members) == 0 && s.synced > 0 && g == s.synced:
		s.fail(2, "restart reloaded generation %d without members, but that generation was synced with members", g)
	}
	if len(v.Members) > 0 {
		n := s.syncedBy[g]
		for _, rm := range v.Members {
			s.checkStored("the reloaded record", rm.MemberID, rm.InstanceID, rm.Assignment, g, n)
		}
	}
	s.epochMax = g
	for gen := range s.protoOf {
		if gen > g {
			delete(s.protoOf, gen) // may be reused, with another protocol
		}
	}
}

// checkStored checks bytes stored for member id (instance inst): the
// assignment the leader of generation gen gave it (sync n), if gen >= 0.
func (s *propSim) checkStored(where, id string, inst *string, b []byte, gen int32, n int) {
	a, err := pDecodeAssignment(b)
	if err != nil {
		s.fail(3, "%s: member %s: %v", where, pShort(id), err)
	}
	if a.member != id && (inst == nil || a.instance != *inst) {
		s.fail(3, "%s: member %s holds the assignment of %s (%s)", where, pShort(id), pShort(a.member), b)
	}
	ls := s.leaderSyncs[a.sync]
	if ls == nil || ls.gen != a.gen || !bytes.Equal(ls.assign[a.member], b) {
		s.fail(3, "%s: member %s holds %q, which no leader assigned", where, pShort(id), b)
	}
	if n2, ok := s.syncedBy[a.gen]; !ok || n2 != a.sync {
		s.fail(1, "%s: member %s holds generation %d's assignment from leader sync %d, but that generation's answers came from sync %d", where, pShort(id), a.gen, a.sync, n2)
	}
	if gen >= 0 && (a.gen != gen || a.sync != n) {
		s.fail(3, "%s: member %s holds %s, want generation %d's (sync %d)", where, pShort(id), b, gen, n)
	}
	if a.gen > s.synced {
		s.fail(3, "%s: member %s holds generation %d's assignment; the last synced is %d", where, pShort(id), a.gen, s.synced)
	}
}

// scan reads the answers produced since the last scan (invariants 1, 2).
func (s *propSim) scan() {
	for ; s.scanned < len(s.h.order); s.scanned++ {
		id := s.h.order[s.scanned]
		rq := s.reqs[id]
		if rq == nil {
			continue
		}
		if rq.lost {
			s.fail(5, "request #%d was answered by the machine that was restarted after it", id)
		}
		rq.restarts, rq.answeredAt = s.restarts, s.now()
		switch r := s.h.replies[id].(type) {
		case *kmsg.JoinGroupResponse:
			if p := rq.pending; p != nil {
				expired := !rq.at.Before(p.deadline) || rq.sentAt != p.restarts
				switch {
				case expired && r.ErrorCode != kerr.UnknownMemberID.Code &&
					// The size and protocol checks come first (§4.2).
					r.ErrorCode != kerr.GroupMaxSizeReached.Code && r.ErrorCode != kerr.InconsistentGroupProtocol.Code:
					s.fail(5, "%s's JoinGroup#%d with MEMBER_ID_REQUIRED id %s, sent at +%s after it expired (+%s, or a restart), got %v; §4.3: UNKNOWN_MEMBER_ID", rq.m.name, id, pShort(rq.memberID), rq.at.Sub(epoch), p.deadline.Sub(epoch), pErrName(r.ErrorCode))
				case !expired && rq.atOnce && r.ErrorCode == kerr.UnknownMemberID.Code:
					s.fail(5, "%s's JoinGroup#%d with MEMBER_ID_REQUIRED id %s, sent at +%s before it expired (+%s), got UNKNOWN_MEMBER_ID (§4.3)", rq.m.name, id, pShort(rq.memberID), rq.at.Sub(epoch), p.deadline.Sub(epoch))
				}
			}
			if r.ErrorCode == kerr.MemberIDRequired.Code {
				s.pending[r.MemberID] = pPending{s.now().Add(rq.session), s.restarts}
			}
			if r.ErrorCode == kerr.UnknownMemberID.Code {
				s.checkNotExpired(id, rq)
			}
			if rq.memberID == "" && r.MemberID != "" {
				if first, dup := s.ids[r.MemberID]; dup {
					s.tr("%s ← JoinGroup#%d: %v member=%s", rq.m.name, id, pErrName(r.ErrorCode), r.MemberID)
					s.fail(6, "%s's JoinGroup#%d was handed member id %s, which JoinGroup#%d was handed before (%d coordinator restarts since)", rq.m.name, id, r.MemberID, first.req, s.restarts-first.restarts)
				}
				s.ids[r.MemberID] = pIssued{id, s.restarts}
			}
			if r.ErrorCode != 0 {
				s.tr("%s ← JoinGroup#%d: %v member=%s", rq.m.name, id, pErrName(r.ErrorCode), pShort(r.MemberID))
				s.errs["JoinGroup "+pErrName(r.ErrorCode)]++
				continue
			}
			s.tr("%s ← JoinGroup#%d gen=%d member=%s leader=%s members=%d skip=%v", rq.m.name, id, r.Generation, pShort(r.MemberID), pShort(r.LeaderID), len(r.Members), r.SkipAssignment)
			s.seeGeneration(r.Generation, rq.m.name+"'s JoinGroup")
			if r.LeaderID == "" {
				s.fail(1, "%s's JoinGroup#%d succeeded for generation %d without a leader", rq.m.name, id, r.Generation)
			}
			s.joined[pSyncKey{r.MemberID, r.Generation}] = true
			proto := ""
			if r.Protocol != nil {
				proto = *r.Protocol
			}
			if p, ok := s.protoOf[r.Generation]; ok && p != proto {
				s.fail(1, "generation %d was answered with protocols %s and %s", r.Generation, p, proto)
			}
			s.protoOf[r.Generation] = proto
			if !slices.Contains(rq.m.prefs, proto) {
				s.fail(1, "%s was answered protocol %q, which it does not know (%v)", rq.m.name, proto, rq.m.prefs)
			}
			if r.LeaderID == r.MemberID && !r.SkipAssignment {
				l := pLeaderList{gen: r.Generation, leader: rq.m.name, proto: proto}
				for _, lm := range r.Members {
					l.all = append(l.all, lm.MemberID)
					if lm.InstanceID == nil {
						l.dynamic = append(l.dynamic, lm.MemberID)
					}
				}
				s.leaderLists = append(s.leaderLists, l)
			}
			if r.MemberID == "" || (rq.memberID != "" && r.MemberID != rq.memberID && rq.instance == nil) {
				s.fail(5, "%s's JoinGroup as %s was answered for member %q", rq.m.name, pShort(rq.memberID), r.MemberID)
			}
		case *kmsg.SyncGroupResponse:
			if r.ErrorCode == kerr.UnknownMemberID.Code {
				s.checkNotExpired(id, rq)
			}
			if r.ErrorCode != 0 {
				s.tr("%s ← SyncGroup#%d gen=%d: %v", rq.m.name, id, rq.gen, pErrName(r.ErrorCode))
				s.errs["SyncGroup "+pErrName(r.ErrorCode)]++
				continue
			}
			s.seeGeneration(rq.gen, rq.m.name+"'s SyncGroup")
			a, err := pDecodeAssignment(r.MemberAssignment)
			if err != nil {
				s.fail(1, "%s's SyncGroup for generation %d succeeded without the leader's assignment: %v", rq.m.name, rq.gen, err)
			}
			s.tr("%s ← SyncGroup#%d gen=%d sync#%d parts=%v", rq.m.name, id, rq.gen, a.sync, a.parts)
			if a.gen != rq.gen {
				s.fail(1, "%s's SyncGroup for generation %d got generation %d's assignment %s", rq.m.name, rq.gen, a.gen, r.MemberAssignment)
			}
			if a.member != rq.memberID && (rq.instance == nil || a.instance != *rq.instance) {
				s.fail(1, "%s (%s) got the assignment of %s: %s", rq.m.name, pShort(rq.memberID), pShort(a.member), r.MemberAssignment)
			}
			ls := s.leaderSyncs[a.sync]
			if ls == nil || ls.gen != rq.gen || !bytes.Equal(ls.assign[a.member], r.MemberAssignment) {
				s.fail(1, "%s got %s, which no leader of generation %d assigned", rq.m.name, r.MemberAssignment, rq.gen)
			}
			if n, ok := s.syncedBy[rq.gen]; ok && n != a.sync {
				s.fail(1, "generation %d has two assignments: leader syncs %d (%s) and %d (%s)", rq.gen, n, pShort(s.leaderSyncs[n].leader), a.sync, pShort(ls.leader))
			}
			s.syncedBy[rq.gen] = a.sync
			s.synced = max(s.synced, rq.gen)
		}
	}
}

// pErrName is an error code's Kafka name.
func pErrName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

// checkProtocol: the protocol of a generation is one every member knows
// and, while the machine knows every member's full list (no restart has
// cut them down to the chosen one, §18.3), one with the most first-choice
// votes (§5.5).
func (s *propSim) checkProtocol(l pLeaderList) {
	var prefs [][]string
	for _, id := range l.all {
		p, ok := s.ids[id]
		if !ok {
			return
		}
		m := s.reqs[p.req].m
		if !slices.Contains(m.prefs, l.proto) {
			s.fail(1, "generation %d chose protocol %q, which %s (%v) does not know", l.gen, l.proto, m.name, m.prefs)
		}
		prefs = append(prefs, m.prefs)
	}
	if s.restarts > 0 {
		return
	}
	votes := map[string]int{}
	for _, ps := range prefs {
		for _, p := range ps {
			if !slices.ContainsFunc(prefs, func(o []string) bool { return !slices.Contains(o, p) }) {
				votes[p]++
				break
			}
		}
	}
	for p, v := range votes {
		if v > votes[l.proto] {
			s.fail(1, "generation %d chose protocol %q with %d votes, but %q has %d (§5.5)", l.gen, l.proto, votes[l.proto], p, v)
		}
	}
}

// checkNotExpired: a member waiting on the group with a parked JoinGroup
// or SyncGroup is alive (§10, hasSatisfiedHeartbeat); only a LeaveGroup
// (an admin's, since it is still alive) removes it.
func (s *propSim) checkNotExpired(id machine.RequestID, rq *pReq) {
	m := rq.m
	if rq.atOnce || !m.live() || m.req != id || m.leaveSent {
		return
	}
	s.fail(5, "%s's parked %s#%d (member %s, sent at +%s) was answered UNKNOWN_MEMBER_ID: a waiting member was removed", m.name, kmsg.NameForKey(rq.key), id, pShort(rq.memberID), rq.at.Sub(epoch))
}

// checkRemoval: a synced member that heartbeats in time is never removed
// nor left behind by a generation without being told to rejoin first.
func (s *propSim) checkRemoval(m *pMember, api string, code int16) {
	if m.status == pStable && m.clean && !m.leaveSent && s.now().Sub(m.lastOK) < m.session {
		s.fail(5, "%s (%s, gen %d), synced and on time (last answer +%s, session %v), got %v from %s without having been told to rejoin", m.name, pShort(m.memberID), m.gen, m.lastOK.Sub(epoch), m.session, pErrName(code), api)
	}
}

func (s *propSim) seeGeneration(g int32, what string) {
	if g < s.epochMax {
		s.fail(2, "%s answered generation %d after generation %d had been answered, with no coordinator restart between", what, g, s.epochMax)
	}
	if g < s.synced {
		s.fail(2, "%s answered generation %d, below the last synced generation %d", what, g, s.synced)
	}
	s.epochMax = g
}

// check runs the per-step invariants.
func (s *propSim) check() {
	s.scan()

	// 1: no partition owned twice in one generation.
	owner := map[int32]map[int32]string{}
	for _, m := range s.members {
		if !m.live() || !m.held {
			continue
		}
		if n, ok := s.syncedBy[m.asg.gen]; !ok || n != m.asg.sync {
			s.fail(1, "%s holds generation %d's assignment from sync %d, but that generation's is sync %d", m.name, m.asg.gen, m.asg.sync, n)
		}
		own := owner[m.asg.gen]
		if own == nil {
			own = map[int32]string{}
			owner[m.asg.gen] = own
		}
		for _, p := range m.asg.parts {
			if o, dup := own[p]; dup {
				s.fail(1, "%s and %s both own partition %d in generation %d", o, m.name, p, m.asg.gen)
			}
			own[p] = m.name
		}
	}

	// 1: a leader assigns only members of its generation: every dynamic
	// member it was told about had its JoinGroup answered for it (§5.4:
	// dynamic members that did not rejoin are removed).
	for _, l := range s.leaderLists {
		s.checkProtocol(l)
		for _, id := range l.dynamic {
			if !s.joined[pSyncKey{id, l.gen}] {
				s.fail(1, "%s, leader of generation %d, was told about dynamic member %s, which did not join generation %d", l.leader, l.gen, pShort(id), l.gen)
			}
		}
	}
	s.leaderLists = s.leaderLists[:0]

	// 3: DescribeGroups.
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version, dr.Groups = 5, []string{pGroup}
	d := pSendNow[*kmsg.DescribeGroupsResponse](s, nil, dr).Groups[0]
	for _, dm := range d.Members {
		// Whoever it is, the member keeps the client id and host of the
		// JoinGroup that created it (a static replacement: of the old
		// member, from the same client here).
		// (An id not handed out yet belongs to a join still parked.)
		client := dm.ClientID
		if p, ok := s.ids[dm.MemberID]; ok {
			client = s.reqs[p.req].m.clientID
		}
		if dm.ClientID != client || dm.ClientHost != "/127.0.0.1" {
			s.fail(3, "DescribeGroups: member %s has client %q host %q, want %q /127.0.0.1", pShort(dm.MemberID), dm.ClientID, dm.ClientHost, client)
		}
	}
	switch d.State {
	case "Stable":
		if len(d.Members) == 0 {
			s.fail(3, "Stable group without members")
		}
		if p, ok := s.protoOf[s.synced]; d.ProtocolType != "consumer" || (ok && d.Protocol != p) {
			s.fail(3, "Stable group with protocol %q/%q, but generation %d chose consumer/%s", d.ProtocolType, d.Protocol, s.synced, p)
		}
		n := s.syncedBy[s.synced]
		for _, dm := range d.Members {
			s.checkStored("DescribeGroups (Stable)", dm.MemberID, dm.InstanceID, dm.MemberAssignment, s.synced, n)
			if id, ok := s.syncReqs[pSyncKey{dm.MemberID, s.synced}]; ok {
				r, answered := s.h.reply(id)
				if !answered {
					s.fail(3, "the group is Stable on generation %d, but member %s's SyncGroup#%d for it is unanswered", s.synced, pShort(dm.MemberID), id)
				}
				sr := r.(*kmsg.SyncGroupResponse)
				if sr.ErrorCode != 0 || !bytes.Equal(sr.MemberAssignment, dm.MemberAssignment) {
					s.fail(3, "the group is Stable on generation %d; member %s's SyncGroup#%d got %v %q, DescribeGroups shows %q", s.synced, pShort(dm.MemberID), id, pErrName(sr.ErrorCode), sr.MemberAssignment, dm.MemberAssignment)
				}
			}
		}
	case "Empty":
		if len(d.Members) != 0 {
			s.fail(3, "Empty group with %d members", len(d.Members))
		}
	case "PreparingRebalance", "CompletingRebalance":
		for _, dm := range d.Members {
			if len(dm.MemberAssignment) > 0 {
				s.checkStored("DescribeGroups ("+d.State+")", dm.MemberID, dm.InstanceID, dm.MemberAssignment, -1, 0)
			}
		}
	case "Dead":
		if s.epochMax > 0 || s.synced > 0 {
			s.fail(3, "the group is Dead after generation %d", s.epochMax)
		}
	default:
		s.fail(3, "DescribeGroups state %q", d.State)
	}

	// 4: every acknowledged commit is readable.
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.Version, fr.Group = 7, pGroup
	ft := kmsg.OffsetFetchRequestTopic{Topic: pTopic}
	for p := range int32(pPartitions) {
		ft.Partitions = append(ft.Partitions, p)
	}
	fr.Topics = []kmsg.OffsetFetchRequestTopic{ft}
	f := pSendNow[*kmsg.OffsetFetchResponse](s, nil, fr)
	if f.ErrorCode != 0 || len(f.Topics) != 1 || len(f.Topics[0].Partitions) != pPartitions {
		s.fail(4, "OffsetFetch: %v, %d topics", pErrName(f.ErrorCode), len(f.Topics))
	}
	for _, p := range f.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Offset != s.acked[p.Partition] {
			s.fail(4, "OffsetFetch %s/%d = %d (%v), but the last acknowledged commit is %d (%s)", pTopic, p.Partition, p.Offset, pErrName(p.ErrorCode), s.acked[p.Partition], s.ackedBy[p.Partition])
		}
	}

	// 5: parked requests are answered in time.
	open := s.open[:0]
	for _, id := range s.open {
		if _, ok := s.h.reply(id); ok {
			continue
		}
		rq := s.reqs[id]
		if rq.lost {
			continue
		}
		if w := s.now().Sub(rq.at); w > s.bound {
			s.fail(5, "%s's %s#%d (member %s) has been parked for %v (bound %v)", rq.m.name, kmsg.NameForKey(rq.key), id, pShort(rq.memberID), w, s.bound)
		}
		open = append(open, id)
	}
	s.open = open
}

// liveness stops the chaos and requires the group to converge (5).
func (s *propSim) liveness() {
	s.beginStep("liveness: every live member behaves")
	s.calm = true
	for _, m := range s.members {
		m.slowTill = time.Time{}
		if m.live() && m.status == pSyncing && m.req == 0 && m.stuckAt != s.restarts {
			// The sync timer that would remove it died with the
			// coordinator (pending syncs are not durable, §18.3, as in
			// Kafka): nothing will ever tell it to rejoin, so it behaves.
			s.tr("%s rejoins instead of never syncing", m.name)
			m.status, m.wakeAt = pIdle, s.now()
		}
	}
	deadline := s.now().Add(4*pMaxRebal + 2*time.Minute)
	for s.now().Before(deadline) {
		s.step++
		s.beginStep("liveness: advance 500ms")
		s.advance(500 * time.Millisecond)
		s.deliver()
		s.check()
		if why := s.converged(); why == "" {
			s.checkEvents()
			return
		} else if !s.now().Before(deadline) {
			s.fail(5, "the group did not converge in %v with every member behaving: %s", 4*pMaxRebal+2*time.Minute, why)
		}
	}
}

// checkEvents is invariant 7, once the group has converged.
func (s *propSim) checkEvents() {
	t, err := tallyEvents(s.h.events, "", pGroup, "classic")
	if err != nil {
		s.fail(7, "%v", err)
	}
	s.rebalances += t.completed
	if err := s.h.ev.settled("", pGroup, "classic"); err != nil {
		s.fail(7, "%v", err)
	}
	live := map[string]bool{}
	for _, m := range s.members {
		if m.live() {
			live[m.memberID] = true
		}
	}
	var told map[string]bool
	if g := s.h.ev.groups[groups.EventKey{"", pGroup, "classic"}]; g != nil {
		told = g.members
	}
	if len(told) != len(live) {
		s.fail(7, "%d live members, the events report %d present", len(live), len(told))
	}
	for id := range live {
		if !told[id] {
			s.fail(7, "live member %s is not present for the events", pShort(id))
		}
	}
}

// converged says why the group has not converged, or "".
func (s *propSim) converged() string {
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version, dr.Groups = 5, []string{pGroup}
	d := pSendNow[*kmsg.DescribeGroupsResponse](s, nil, dr).Groups[0]
	var live []*pMember
	for _, m := range s.members {
		if !m.live() {
			continue
		}
		live = append(live, m)
		if m.status != pStable {
			return fmt.Sprintf("%s is not synced: %s", m.name, s.describeMember(m))
		}
	}
	if len(live) == 0 {
		if d.State == "Empty" || d.State == "Dead" {
			return ""
		}
		return fmt.Sprintf("no member is alive, but the group is %s with %d members", d.State, len(d.Members))
	}
	if d.State != "Stable" {
		return "the group is " + d.State
	}
	if len(d.Members) != len(live) {
		ids := make([]string, len(d.Members))
		for i, dm := range d.Members {
			ids[i] = pShort(dm.MemberID)
		}
		return fmt.Sprintf("%d live members, the group has %d: %v", len(live), len(d.Members), ids)
	}
	for _, m := range live {
		i := slices.IndexFunc(d.Members, func(dm kmsg.DescribeGroupsResponseGroupMember) bool { return dm.MemberID == m.memberID })
		if i < 0 {
			return fmt.Sprintf("%s (%s) is not in the group", m.name, pShort(m.memberID))
		}
		if m.asg.gen != s.synced || !bytes.Equal(d.Members[i].MemberAssignment, m.asgBytes) {
			return fmt.Sprintf("%s holds %s, the group has %s", m.name, m.asgBytes, d.Members[i].MemberAssignment)
		}
	}
	return ""
}

func (s *propSim) describeMember(m *pMember) string {
	st := [...]string{"idle", "joining", "syncing", "stable", "revoking", "gone"}[m.status]
	out := fmt.Sprintf("%s %s member=%s gen=%d", m.name, st, pShort(m.memberID), m.gen)
	if m.status == pGone {
		out += " (" + m.gone + ")"
	}
	if m.status == pJoining || m.status == pSyncing {
		out += fmt.Sprintf(" req#%d", m.req)
		if _, ok := s.h.reply(m.req); ok {
			out += " (answered)"
		}
	}
	if m.held {
		out += fmt.Sprintf(" holds gen %d sync#%d %v", m.asg.gen, m.asg.sync, m.asg.parts)
	}
	if s.now().Before(m.slowTill) {
		out += " slow till +" + m.slowTill.Sub(epoch).String()
	}
	return out
}
