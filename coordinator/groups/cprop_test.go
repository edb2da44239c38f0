package groups_test

// A property test of KIP-848 consumer groups: random schedules of up to 50
// simulated consumer-protocol clients against the pure machine (through
// the harness, in fake time), with the invariants below checked after
// every event. A seed replays a schedule exactly:
//
//	go test ./coordinator/groups/ -run TestPropertyConsumerGroups -cseed=N -v
//
// -cschedules and -cseedbase pick how many schedules run and from which
// seed. A failure reports the seed, the invariant, the last steps and
// every client's state.
//
// Schedules: 1–50 clients on topics t (12 partitions) and u (4), 150–300
// steps, each one of: time advancing (1 ms to 12 s, stopping at every
// machine timer and client deadline), a new client, partition growth of t
// or u, a coordinator restart (none, rare or frequent per schedule), or a
// client action. Per schedule: the session timeout (6–15 s), heartbeat
// interval (1–3 s), assignment interval (0 or 1 s), the assignor (uniform
// mostly, range sometimes), and sometimes a small group.max.size. Per
// client: a rebalance timeout (4–20 s), a subscription (t, u, both, or a
// regex), static (an instance id) or not, and whether it sends full
// heartbeats or only what changed.
//
// The client model (cpMember) is what franz-go, librdkafka and the Java
// consumer do: join with epoch 0 and an empty owned list, heartbeat at the
// interval the coordinator returns, and on an assignment give up what it
// no longer has and take the rest, then heartbeat at once with what it now
// owns. FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID make it drop everything
// and rejoin with epoch 0 and the same member id (librdkafka keeps it);
// UNRELEASED_INSTANCE_ID makes it retry; GROUP_MAX_SIZE_REACHED stops it.
// After a lost response it sends a full heartbeat, as the Java client's
// HeartbeatState does. A client drops all its partitions when its own
// deadlines pass: no acknowledged heartbeat for a session timeout, or a
// revocation not done within its rebalance timeout (the poll timer).
//
// Client actions: leave (epoch -1; a static client also -2, and then a new
// process with the same instance id comes back), crash (silent forever),
// pause (silent for 1–20 s, then carries on), lose the next response(s),
// be slow to revoke next time (0.2–1.5 rebalance timeouts), change its
// subscription, restart as a new process with the same instance id without
// leaving (UNRELEASED_INSTANCE_ID until the old one's session ends).
//
// Invariants (the number is in every failure):
//
//  1. No partition is owned by two members at any instant: no two clients
//     that are still members of the group (the coordinator has not fenced
//     them) hold the same partition, and no partition is in the current
//     assignment of two members in ConsumerGroupDescribe. A client the
//     coordinator fenced while it still held partitions (a zombie) must
//     have misbehaved: lost a response, paused, or revoked late.
//  2. Epochs never go backwards: the group epoch and the assignment epoch
//     (across restarts too), and the epoch each member id is answered
//     with. The assignment epoch never passes the group epoch, and no
//     member is ahead of the assignment epoch.
//  3. Answers make sense: every assignment names partitions that exist,
//     of topics the member subscribes to; a client that behaves (answers
//     every heartbeat in time, revokes in time, never lost a response) is
//     never fenced; only the error codes of the client model occur.
//  4. Convergence: once the chaos stops (clients wake, none is slow or
//     loses a response, no new ones), within a session timeout plus the
//     largest rebalance timeout plus five heartbeat intervals plus the
//     assignment interval, the group is Stable: exactly the live clients
//     are members, each at the group epoch, each holding its target, every
//     partition of a subscribed topic is assigned exactly once to a member
//     subscribed to it, and with the uniform assignor and equal
//     subscriptions the counts differ by at most one.
//  5. Events (observe.GroupEvent; the harness checks every output, see
//     events_test.go): once converged, the event log has every completed
//     rebalance after a start, completed generations only grow, no
//     rebalance is left open, and members joined minus members that left,
//     expired or were fenced is the number of live clients (a consumer
//     group's members are durable, so this holds across restarts).

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	cpropSeed      = flag.Int64("cseed", 0, "TestPropertyConsumerGroups: replay only the schedule with this seed, with a longer trace")
	cpropSchedules = flag.Int("cschedules", 120, "TestPropertyConsumerGroups: how many schedules to run")
	cpropSeedBase  = flag.Int64("cseedbase", 0, "TestPropertyConsumerGroups: run seeds cseedbase+1 … cseedbase+cschedules")
)

// cpTP is a partition by topic name.
type cpTP struct {
	topic string
	p     int32
}

func (tp cpTP) String() string { return fmt.Sprintf("%s%d", tp.topic, tp.p) }

type cpSet map[cpTP]bool

func (s cpSet) String() string {
	var out []string
	for tp := range s {
		out = append(out, tp.String())
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

func (s cpSet) equal(o cpSet) bool {
	if len(s) != len(o) {
		return false
	}
	for tp := range s {
		if !o[tp] {
			return false
		}
	}
	return true
}

func (s cpSet) minus(o cpSet) cpSet {
	out := cpSet{}
	for tp := range s {
		if !o[tp] {
			out[tp] = true
		}
	}
	return out
}

type cpStatus int

const (
	cpLive    cpStatus = iota
	cpPaused           // silent until pausedUntil
	cpCrashed          // silent forever
	cpGone             // left, or stopped by an error
)

// cpMember is one client process.
type cpMember struct {
	name     string
	id       string
	instance *string
	topics   []string // nil: regex
	regex    string
	rebal    time.Duration
	full     bool // sends every field in every heartbeat

	status      cpStatus
	pausedUntil time.Time
	epoch       int32 // 0: joining
	owned       cpSet
	interval    time.Duration
	next        time.Time // next heartbeat
	lastAck     time.Time // last acknowledged heartbeat
	sentSubs    bool      // the subscription has been acknowledged
	sentOwned   bool      // owned has been acknowledged
	sendFull    bool      // the next heartbeat is full

	pending     cpSet     // an assignment waiting for a slow revocation
	applyAt     time.Time // when the slow revocation is done
	revokeSince time.Time // when a revocation was asked; zero: none
	slowNext    time.Duration
	lose        int   // responses still to lose
	lostInRow   int   // responses lost since the last one received
	hadRegex    bool  // the subscription changes kind: send both fields
	inherit     cpSet // a new process for a static member that left with -2: what it must get back

	// misbehaved says why the coordinator may fence this client; empty
	// for a client that behaved since it last joined.
	misbehaved string

	// A classic client (cprop_mixed_test.go): it speaks JoinGroup,
	// SyncGroup and Heartbeat inside the consumer group; id is "" until
	// the coordinator gives it one, epoch is its generation. eager: it
	// revokes everything before rejoining (else cooperative).
	classic, eager bool
	phase          cpPhase
}

func (m *cpMember) joined() bool { return m.epoch > 0 }

type cpSim struct {
	t      *testing.T
	seed   int64
	rng    *rand.Rand
	h      *harness
	cfg    groups.Config
	long   bool
	assign string // the group's assignor

	parts      map[string]int32
	catVersion uint64
	members    []*cpMember
	maxMembers int
	steps      int
	pRestart   float64
	step       int
	grown      bool // partitions were added and no heartbeat has succeeded since

	trace [][]string
	cur   []string

	groupEpoch, assignEpoch int32
	epochs                  map[string]int32 // member id → highest epoch answered
	stats                   map[string]int
	// pClassic is the share of new clients that speak the classic
	// protocol (0 in a third of the schedules: the pure KIP-848 test).
	pClassic float64
}

func TestPropertyConsumerGroups(t *testing.T) {
	stats := map[string]int{}
	runSchedules(t, *cpropSeed, *cpropSeedBase, *cpropSchedules, func(seed int64) (string, func()) {
		s := newCPSim(t, seed, *cpropSeed != 0)
		msg := s.run()
		return msg, func() {
			for k, v := range s.stats {
				stats[k] += v
			}
		}
	})
	keys := make([]string, 0, len(stats))
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, stats[k])
	}
	t.Logf("exercised:%s", b.String())
	// The schedules must reach the situations they are meant to test.
	for _, k := range []string{"assignment moved a partition", "zombie fenced", "static replaced after -2", "unreleased instance id", "partition growth", "coordinator restart", "lost response recovered", "converged",
		"classic joined", "classic told to rejoin", "classic cooperative revoked", "static switched protocol", "converged mixed"} {
		if *cpropSeed == 0 && *cpropSchedules >= 50 && stats[k] == 0 {
			t.Errorf("no schedule exercised %q", k)
		}
	}
}

func newCPSim(t *testing.T, seed int64, long bool) *cpSim {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6b69703834380a))
	s := &cpSim{t: t, seed: seed, rng: rng, long: long, epochs: map[string]int32{}, stats: map[string]int{}}
	s.cfg = testConfig()
	s.cfg.Seed[0] = byte(seed)
	s.cfg.Seed[1] = byte(seed >> 8)
	s.cfg.ConsumerSessionTimeout = time.Duration(6+rng.IntN(10)) * time.Second
	s.cfg.ConsumerHeartbeatInterval = time.Duration(1+rng.IntN(3)) * time.Second
	s.cfg.AssignmentInterval = time.Duration(rng.IntN(2)) * time.Second
	if rng.IntN(8) == 0 {
		s.cfg.ConsumerMaxSize = 2 + rng.IntN(8)
	}
	s.assign = "uniform"
	if rng.IntN(6) == 0 {
		s.assign = "range"
	}
	s.parts = map[string]int32{"t": 12, "u": 4}
	s.maxMembers = 1 + rng.IntN(50)
	s.steps = 150 + rng.IntN(151)
	switch rng.IntN(3) {
	case 1:
		s.pRestart = 0.005
	case 2:
		s.pRestart = 0.03
	}
	if rng.IntN(3) != 0 {
		// A mixed population. The policy keeps the group a consumer
		// group while it has members (a downgrade would make it a
		// classic group, whose join barrier this synchronous model of
		// clients cannot wait on: testdata/mixed.txt and the e2e tests
		// cover downgrades).
		s.pClassic = 0.2 + 0.5*rng.Float64()
		s.cfg.MigrationPolicy = groups.MigrateUpgrade
	}
	return s
}

func (s *cpSim) setCatalog() {
	s.catVersion++
	s.h.catalog = machine.NewCatalog(s.catVersion, map[string]machine.TopicMeta{
		"t": {ID: topicT, Partitions: s.parts["t"]},
		"u": {ID: topicU, Partitions: s.parts["u"]},
	})
}

func (s *cpSim) run() (msg string) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		f, ok := r.(propFailure)
		if !ok {
			panic(r)
		}
		s.begin("(failure)")
		var b strings.Builder
		fmt.Fprintf(&b, "consumer schedule seed=%d failed at step %d (t=+%s): %s\n", s.seed, s.step, s.h.now.Sub(epoch), f.msg)
		fmt.Fprintf(&b, "replay: go test ./coordinator/groups/ -run TestPropertyConsumerGroups -cseed=%d -v\n", s.seed)
		fmt.Fprintf(&b, "schedule: %d clients max, %d steps, restart %.3f, session %v, interval %v, assignment interval %v, max size %d, assignor %s\n",
			s.maxMembers, s.steps, s.pRestart, s.cfg.ConsumerSessionTimeout, s.cfg.ConsumerHeartbeatInterval, s.cfg.AssignmentInterval, s.cfg.ConsumerMaxSize, s.assign)
		fmt.Fprintf(&b, "last %d steps:\n", len(s.trace))
		for _, st := range s.trace {
			for _, l := range st {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		b.WriteString("clients now:\n")
		for _, m := range s.members {
			fmt.Fprintf(&b, "    %s\n", s.describe(m))
		}
		func() {
			// The harness may fail again (an event check): the message
			// above is what matters.
			defer func() { _ = recover() }()
			d := s.h.cdescribe(pGroup)
			fmt.Fprintf(&b, "group: %s epoch %d assignment epoch %d\n", d.State, d.Epoch, d.AssignmentEpoch)
			for _, dm := range d.Members {
				fmt.Fprintf(&b, "    %s epoch %d topics %v regex %q assignment %v target %v\n", dm.MemberID, dm.MemberEpoch, dm.SubscribedTopics, deref(dm.SubscribedTopicRegex), describedSet(dm.Assignment.TopicPartitions), describedSet(dm.TargetAssignment.TopicPartitions))
			}
		}()
		msg = b.String()
	}()
	s.h = newHarness(propTB{s.t}, s.cfg)
	s.h.guardEvery = propGuardEvery
	defer s.h.guard()
	s.setCatalog()
	s.begin("start")
	for range 1 + s.rng.IntN(s.maxMembers) {
		s.spawn(nil, nil)
	}
	s.check()
	for s.step = 1; s.step <= s.steps; s.step++ {
		switch x := s.rng.Float64(); {
		case x < s.pRestart:
			s.begin("coordinator restart")
			s.stats["coordinator restart"]++
			s.h.restart()
		case x < 0.45:
			d := s.randAdvance()
			s.begin("advance " + d.String())
			s.advance(d)
		case x < 0.50 && s.live() < s.maxMembers:
			s.begin("new client")
			s.spawn(nil, nil)
		case x < 0.515:
			topic := []string{"t", "u"}[s.rng.IntN(2)]
			if s.parts[topic] < 24 {
				s.parts[topic] += int32(1 + s.rng.IntN(4))
				s.begin(fmt.Sprintf("topic %s grows to %d partitions", topic, s.parts[topic]))
				s.stats["partition growth"]++
				s.setCatalog()
				s.grown = true
			}
		default:
			s.action()
		}
		s.check()
	}
	s.converge()
	return ""
}

func (s *cpSim) randAdvance() time.Duration { return randAdvance(s.rng, 0.4, 12*time.Second) }

func (s *cpSim) live() int {
	n := 0
	for _, m := range s.members {
		if m.status == cpLive || m.status == cpPaused {
			n++
		}
	}
	return n
}

// spawn starts a client process; a restarting static one reuses the
// instance id and subscription of old.
//
// inherit is the assignment the coordinator held for old when it left with
// epoch -2: the new process must get at least that back on joining.
func (s *cpSim) spawn(old *cpMember, inherit cpSet) *cpMember {
	n := len(s.members)
	m := &cpMember{name: fmt.Sprintf("c%02d", n), owned: cpSet{}, rebal: time.Duration(4+s.rng.IntN(17)) * time.Second}
	m.id = fmt.Sprintf("%s-%08x", m.name, s.rng.Uint32())
	m.full = s.rng.IntN(4) == 0
	m.classic = s.rng.Float64() < s.pClassic
	if old != nil && s.pClassic > 0 {
		// A restart is when a member changes protocol.
		m.classic = old.classic
		if s.rng.IntN(3) == 0 {
			m.classic = !m.classic
			s.stats["static switched protocol"]++
		}
	}
	if m.classic {
		m.id, m.eager = "", s.rng.IntN(2) == 0
		m.phase = cpJoin
	}
	if old != nil {
		m.instance, m.topics, m.regex = old.instance, old.topics, old.regex
		// The coordinator copies the old member's subscription, which
		// the old process may have changed without saying: send both
		// kinds.
		m.hadRegex = true
		if m.classic && m.topics == nil {
			s.pickSubscription(m)
		}
	} else {
		if s.rng.IntN(4) == 0 {
			inst := "i" + m.name
			m.instance = &inst
		}
		s.pickSubscription(m)
	}
	m.inherit = inherit
	m.next = s.h.now
	s.members = append(s.members, m)
	s.tr("%s spawns: id %s, subscription %s, rebalance timeout %v, static %v, full %v", m.name, m.id, s.subString(m), m.rebal, m.instance != nil, m.full)
	s.tick(m)
	return m
}

func (s *cpSim) pickSubscription(m *cpMember) {
	if m.sentSubs && (m.topics == nil) != (m.regex == "") {
		m.hadRegex = true // changing kinds: send both
	}
	m.topics, m.regex = nil, ""
	if m.classic {
		// A classic Subscription names topics.
		m.topics = [][]string{{"t"}, {"t", "u"}, {"u"}}[s.rng.IntN(3)]
		return
	}
	switch x := s.rng.IntN(10); {
	case x < 5:
		m.topics = []string{"t"}
	case x < 7:
		m.topics = []string{"t", "u"}
	case x < 8:
		m.topics = []string{"u"}
	default:
		m.regex = []string{"^[tu]$", "^t$", "u"}[s.rng.IntN(3)]
	}
}

func (s *cpSim) subString(m *cpMember) string {
	if m.topics == nil {
		return "/" + m.regex + "/"
	}
	return strings.Join(m.topics, ",")
}

// subscribed returns the topics m subscribes to in the current catalog.
func (s *cpSim) subscribed(m *cpMember) map[string]bool {
	out := map[string]bool{}
	if m.topics != nil {
		for _, t := range m.topics {
			if _, ok := s.parts[t]; ok {
				out[t] = true
			}
		}
		return out
	}
	re := regexp.MustCompile(m.regex)
	for t := range s.parts {
		if re.MatchString(t) {
			out[t] = true
		}
	}
	return out
}

func (s *cpSim) action() {
	var cands []*cpMember
	for _, m := range s.members {
		if m.status == cpLive {
			cands = append(cands, m)
		}
	}
	if len(cands) == 0 {
		d := s.randAdvance()
		s.begin("advance " + d.String())
		s.advance(d)
		return
	}
	m := cands[s.rng.IntN(len(cands))]
	switch x := s.rng.Float64(); {
	case x < 0.06:
		s.act(m, "leaves")
		s.leave(m)
	case x < 0.10:
		s.act(m, "crashes")
		s.drop(m)
		m.status = cpCrashed
		if m.instance != nil && s.rng.IntN(2) == 0 {
			s.tr("    and a new process with instance id %s starts", *m.instance)
			s.stats["static restarted without leaving"]++
			s.spawn(m, nil)
		}
	case x < 0.16:
		d := time.Duration(1000+s.rng.IntN(19000)) * time.Millisecond
		s.act(m, "pauses for "+d.String())
		m.status, m.pausedUntil = cpPaused, s.h.now.Add(d)
		// A pause longer than the rebalance timeout (Kafka's
		// max.poll.interval.ms) is a failed consumer too: a revocation
		// asked meanwhile is not done in time.
		if m.joined() && (m.pausedUntil.Sub(m.lastAck) >= s.cfg.ConsumerSessionTimeout || d >= m.rebal) {
			m.misbehaved = "paused too long"
		}
	case m.classic && x < 0.30:
		s.act(m, "heartbeats early")
		m.next = s.h.now
		s.tick(m)
	case x < 0.22:
		m.lose = 1 + s.rng.IntN(2)
		s.act(m, fmt.Sprintf("will lose its next %d responses", m.lose))
	case x < 0.30:
		m.slowNext = time.Duration(float64(m.rebal) * (0.2 + 1.3*s.rng.Float64()))
		s.act(m, "will revoke slowly: "+m.slowNext.String())
	case x < 0.38:
		s.pickSubscription(m)
		m.sentSubs = false
		if m.classic {
			m.phase, m.next = cpJoin, s.h.now // a new Subscription is a JoinGroup
		}
		s.act(m, "subscribes to "+s.subString(m))
		s.tick(m)
	default:
		// Heartbeat now, out of turn (a client that just committed or
		// polled).
		s.act(m, "heartbeats early")
		m.next = s.h.now
		s.tick(m)
	}
}

func (s *cpSim) act(m *cpMember, what string) {
	s.begin(m.name + " " + what)
	w := strings.Fields(what)
	if w[0] == "will" {
		w[0] += " " + w[1]
	}
	s.stats["client "+w[0]]++
}

// drop makes m give up everything it holds, as a client does when it is
// fenced or stops.
func (s *cpSim) drop(m *cpMember) {
	if len(m.owned) > 0 {
		s.tr("    %s drops %s", m.name, m.owned)
	}
	m.owned, m.pending, m.revokeSince = cpSet{}, nil, time.Time{}
	m.sentOwned = false
}

// rejoin resets m to join again with epoch 0 and the same member id.
func (s *cpSim) rejoin(m *cpMember, why string) {
	s.tr("    %s rejoins (%s)", m.name, why)
	s.drop(m)
	m.epoch, m.sentSubs, m.misbehaved = 0, false, ""
	m.next = s.h.now
	if m.classic {
		// A classic client starts over without a member id: the
		// coordinator may have removed the one it had.
		m.phase, m.id = cpJoin, ""
	}
}

func (s *cpSim) leave(m *cpMember) {
	if m.classic {
		s.classicLeave(m)
		return
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = pGroup, m.id, -1
	req.InstanceID = m.instance
	static := m.instance != nil && m.joined() && s.rng.IntN(2) == 0
	var held cpSet
	if static {
		req.MemberEpoch = -2
		d := s.h.cdescribe(pGroup)
		for _, dm := range d.Members {
			// Only with the target up to date (also with the
			// catalog: growth reaches the group epoch at the next
			// heartbeat): a newer one may take partitions away at
			// the join.
			if dm.MemberID == m.id && m.sentSubs && d.Epoch == d.AssignmentEpoch && !s.grown {
				// What it holds and keeps in its target.
				target := cpSet{}
				for _, tp := range dm.TargetAssignment.TopicPartitions {
					for _, p := range tp.Partitions {
						target[cpTP{tp.Topic, p}] = true
					}
				}
				held = cpSet{}
				for _, tp := range dm.Assignment.TopicPartitions {
					for _, p := range tp.Partitions {
						if target[cpTP{tp.Topic, p}] {
							held[cpTP{tp.Topic, p}] = true
						}
					}
				}
			}
		}
	}
	s.drop(m)
	m.status = cpGone
	if !m.joined() {
		return
	}
	resp := s.send(m, req)
	if resp == nil {
		return
	}
	if resp.ErrorCode != 0 {
		if c := resp.ErrorCode; c == kerr.UnknownMemberID.Code || c == kerr.FencedInstanceID.Code {
			return // the coordinator had fenced it already
		}
		s.fail(3, "%s leaving with epoch %d: %s", m.name, req.MemberEpoch, pErrName(resp.ErrorCode))
	}
	if resp.MemberEpoch != req.MemberEpoch {
		s.fail(3, "%s left with epoch %d and was answered epoch %d", m.name, req.MemberEpoch, resp.MemberEpoch)
	}
	if static {
		s.tr("    a new process with instance id %s starts", *m.instance)
		s.stats["static left with -2"]++
		s.spawn(m, held)
	}
}

// send sends req for m and returns the response, or nil if m loses it.
func (s *cpSim) send(m *cpMember, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := do[*kmsg.ConsumerGroupHeartbeatResponse](s.h, req)
	var owned string
	if req.Topics != nil {
		owned = " owned " + s.toSet(req.Topics).String()
	}
	line := fmt.Sprintf("    %s → epoch %d%s: ", m.name, req.MemberEpoch, owned)
	if resp.ErrorCode != 0 {
		line += pErrName(resp.ErrorCode)
	} else {
		line += fmt.Sprintf("epoch %d", resp.MemberEpoch)
		if resp.Assignment != nil {
			line += " assignment " + s.assignment(resp).String()
		}
	}
	if m.lose > 0 && req.MemberEpoch >= 0 {
		m.lose--
		// One lost response is recovered through the previous
		// epoch; two in a row may not be, in Kafka too.
		if m.lostInRow++; m.lostInRow >= 2 {
			m.misbehaved = "lost two responses in a row"
		}
		if resp.ErrorCode == 0 && resp.Assignment != nil && len(m.owned.minus(s.assignment(resp))) > 0 && m.slowNext > 0 {
			// The coordinator's rebalance timeout runs from now; the
			// client learns of the revocation only later, and then
			// is slow too.
			m.misbehaved = "lost a revocation and revoked slowly"
		}
		s.tr("%s (lost)", line)
		return nil
	}
	s.tr("%s", line)
	m.lostInRow = 0
	return resp
}

func (s *cpSim) toSet(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) cpSet {
	out := cpSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out[cpTP{s.h.catalog.ByID[t.TopicID], p}] = true
		}
	}
	return out
}

func (s *cpSim) assignment(r *kmsg.ConsumerGroupHeartbeatResponse) cpSet {
	out := cpSet{}
	for _, t := range r.Assignment.Topics {
		name, ok := s.h.catalog.ByID[t.TopicID]
		if !ok {
			s.fail(3, "an assignment names topic id %x, which is not in the catalog", t.TopicID)
		}
		for _, p := range t.Partitions {
			out[cpTP{name, p}] = true
		}
	}
	return out
}

// tick runs what m has to do now: its own deadlines, a finished slow
// revocation, a heartbeat that is due.
func (s *cpSim) tick(m *cpMember) {
	now := s.h.now
	if m.status == cpPaused && !now.Before(m.pausedUntil) {
		s.tr("    %s wakes", m.name)
		m.status = cpLive
	}
	if m.status != cpLive && m.status != cpPaused {
		return
	}
	s.localDeadlines(m)
	if m.status == cpPaused {
		return
	}
	if m.pending != nil && !now.Before(m.applyAt) {
		s.tr("    %s finishes revoking: %s → %s", m.name, m.owned, m.pending)
		s.apply(m, m.pending)
		m.next = now
	}
	if now.Before(m.next) {
		return
	}
	if m.classic {
		s.classicStep(m)
		return
	}
	s.heartbeat(m)
}

func (s *cpSim) apply(m *cpMember, a cpSet) {
	if len(m.owned.minus(a)) > 0 || len(a.minus(m.owned)) > 0 {
		m.sentOwned = false
	}
	m.owned, m.pending, m.revokeSince = a, nil, time.Time{}
}

func (s *cpSim) heartbeat(m *cpMember) {
	now := s.h.now
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = pGroup, m.id, m.epoch
	req.InstanceID = m.instance
	req.RebalanceTimeoutMillis = -1
	full := m.epoch == 0 || m.full || m.sendFull
	if full {
		req.RebalanceTimeoutMillis = int32(m.rebal.Milliseconds())
	}
	if full || !m.sentSubs {
		// A client sends the kind of subscription it has; switching
		// kinds, it also clears the other (names [] or regex "").
		if m.topics != nil || m.hadRegex {
			req.SubscribedTopicNames = slices.Clone(m.topics)
			if req.SubscribedTopicNames == nil {
				req.SubscribedTopicNames = []string{}
			}
		}
		if m.topics == nil || m.hadRegex {
			re := m.regex
			req.SubscribedTopicRegex = &re
		}
		if s.assign != "uniform" {
			a := s.assign
			req.ServerAssignor = &a
		}
	}
	if full || !m.sentOwned {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		byTopic := map[string][]int32{}
		for tp := range m.owned {
			byTopic[tp.topic] = append(byTopic[tp.topic], tp.p)
		}
		for _, name := range []string{"t", "u"} {
			if ps := byTopic[name]; len(ps) > 0 {
				slices.Sort(ps)
				req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: s.h.catalog.ByName[name].ID, Partitions: ps})
			}
		}
	}
	resp := s.send(m, req)
	if resp == nil {
		// The client times the request out and retries with a full
		// heartbeat.
		m.sendFull = true
		m.next = now.Add(time.Second)
		if m.epoch > 0 {
			s.stats["lost response"]++
		}
		return
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		if m.epoch == 0 {
			s.fail(3, "%s joining with epoch 0 got %s", m.name, pErrName(resp.ErrorCode))
		}
		if m.misbehaved == "" {
			s.fail(3, "%s behaved and was fenced with %s", m.name, pErrName(resp.ErrorCode))
		}
		s.stats["fenced: "+m.misbehaved]++
		s.rejoin(m, pErrName(resp.ErrorCode))
		return
	case kerr.UnreleasedInstanceID.Code:
		if m.epoch != 0 || m.instance == nil {
			s.fail(3, "%s at epoch %d got UNRELEASED_INSTANCE_ID", m.name, m.epoch)
		}
		s.stats["unreleased instance id"]++
		m.next = now.Add(time.Second)
		return
	case kerr.GroupMaxSizeReached.Code:
		if m.epoch != 0 || s.cfg.ConsumerMaxSize == 0 {
			s.fail(3, "%s at epoch %d got GROUP_MAX_SIZE_REACHED", m.name, m.epoch)
		}
		s.stats["group max size reached"]++
		m.status = cpGone
		return
	default:
		s.fail(3, "%s heartbeat at epoch %d: %s (%s)", m.name, m.epoch, pErrName(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	if resp.MemberID == nil || *resp.MemberID != m.id {
		s.fail(3, "%s was answered member id %v", m.name, resp.MemberID)
	}
	if resp.MemberEpoch < s.epochs[m.id] {
		s.fail(2, "member %s was answered epoch %d after epoch %d", m.id, resp.MemberEpoch, s.epochs[m.id])
	}
	if resp.MemberEpoch <= 0 {
		s.fail(3, "%s was answered epoch %d", m.name, resp.MemberEpoch)
	}
	if m.epoch > 0 && resp.MemberEpoch != m.epoch && req.Topics == nil {
		// Not an invariant, but worth counting: epochs advance also on
		// heartbeats without the owned list.
		s.stats["epoch advanced without owned"]++
	}
	if m.epoch == 0 && m.inherit != nil {
		if resp.Assignment == nil || len(m.inherit.minus(s.assignment(resp))) > 0 {
			s.fail(3, "%s replaced a static member that left with -2 holding %s, and got %v", m.name, m.inherit, resp.Assignment)
		}
		s.stats["static replaced after -2"]++
		m.inherit = nil
	}
	if m.sendFull && m.epoch > 0 {
		s.stats["lost response recovered"]++
	}
	m.sendFull = false
	s.grown = false
	s.epochs[m.id] = resp.MemberEpoch
	m.epoch = resp.MemberEpoch
	m.lastAck = now
	m.interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
	if m.interval <= 0 {
		s.fail(3, "heartbeat interval %d ms", resp.HeartbeatIntervalMillis)
	}
	m.next = now.Add(m.interval)
	if req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil {
		m.sentSubs = true
		m.hadRegex = false
	}
	if req.Topics != nil && s.toSet(req.Topics).equal(m.owned) {
		m.sentOwned = true
	}
	if resp.Assignment == nil {
		return
	}
	a := s.assignment(resp)
	sub := s.subscribed(m)
	for tp := range a {
		if !sub[tp.topic] && m.sentSubs {
			s.fail(3, "%s (subscribed to %s) was assigned %s", m.name, s.subString(m), tp)
		}
		if tp.p < 0 || tp.p >= s.parts[tp.topic] {
			s.fail(3, "%s was assigned %s, which does not exist", m.name, tp)
		}
	}
	if len(a.minus(m.owned)) > 0 && len(m.owned) > 0 {
		s.stats["assignment moved a partition"]++
	}
	revoke := m.owned.minus(a)
	if len(revoke) > 0 && m.slowNext > 0 {
		if m.revokeSince.IsZero() {
			m.revokeSince = now
			m.applyAt = now.Add(m.slowNext)
			if m.slowNext >= m.rebal {
				m.misbehaved = "revoked late"
			}
			s.tr("    %s will revoke %s at +%s", m.name, revoke, m.applyAt.Sub(epoch))
			m.slowNext = 0
		}
		m.pending = a
		return
	}
	if m.pending != nil {
		// A newer assignment replaces the one waiting.
		m.pending = a
		return
	}
	if !a.equal(m.owned) {
		s.apply(m, a)
		m.next = now // acknowledge the reconciliation at once
	}
}

func describedSet(tps []kmsg.AssignmentTopicPartition) cpSet {
	out := cpSet{}
	for _, tp := range tps {
		for _, p := range tp.Partitions {
			out[cpTP{tp.Topic, p}] = true
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// advance moves time forward by d, stopping at every machine timer and
// client deadline.
func (s *cpSim) advance(d time.Duration) {
	end := s.h.now.Add(d)
	for {
		at := end
		for _, tm := range s.h.timers {
			if tm.Before(at) {
				at = tm
			}
		}
		for _, m := range s.members {
			for _, t := range s.deadlines(m) {
				if t.Before(at) {
					at = t
				}
			}
		}
		if at.Before(s.h.now) {
			at = s.h.now
		}
		s.h.advance(at.Sub(s.h.now))
		// The clients' own deadlines first, so that a client the
		// coordinator fenced at this instant has dropped its partitions
		// before another gets them.
		for _, m := range s.members {
			s.localDeadlines(m)
		}
		for _, m := range s.members {
			s.tick(m)
		}
		s.check()
		if !at.Before(end) {
			return
		}
	}
}

func (s *cpSim) localDeadlines(m *cpMember) {
	now := s.h.now
	if m.status != cpLive && m.status != cpPaused {
		return
	}
	if m.joined() && !now.Before(m.lastAck.Add(s.cfg.ConsumerSessionTimeout)) {
		s.rejoin(m, "no acknowledged heartbeat for a session timeout")
	}
	if !m.revokeSince.IsZero() && !now.Before(m.revokeSince.Add(m.rebal)) {
		s.rejoin(m, "revocation not done within the rebalance timeout")
	}
}

func (s *cpSim) deadlines(m *cpMember) []time.Time {
	switch m.status {
	case cpLive:
		out := []time.Time{m.next}
		if m.pending != nil {
			out = append(out, m.applyAt)
		}
		if m.joined() {
			out = append(out, m.lastAck.Add(s.cfg.ConsumerSessionTimeout))
		}
		if !m.revokeSince.IsZero() {
			out = append(out, m.revokeSince.Add(m.rebal))
		}
		return out
	case cpPaused:
		out := []time.Time{m.pausedUntil}
		if m.joined() {
			out = append(out, m.lastAck.Add(s.cfg.ConsumerSessionTimeout))
		}
		return out
	}
	return nil
}

// check verifies invariants 1 and 2.
func (s *cpSim) check() {
	d := s.h.cdescribe(pGroup)
	if d.ErrorCode != 0 {
		if d.ErrorCode == kerr.GroupIDNotFound.Code && s.groupEpoch == 0 {
			return
		}
		s.fail(2, "ConsumerGroupDescribe: %s", pErrName(d.ErrorCode))
	}
	if d.Epoch < s.groupEpoch || d.AssignmentEpoch < s.assignEpoch {
		s.fail(2, "group epoch %d / assignment epoch %d after %d / %d", d.Epoch, d.AssignmentEpoch, s.groupEpoch, s.assignEpoch)
	}
	if d.AssignmentEpoch > d.Epoch {
		s.fail(2, "assignment epoch %d is ahead of group epoch %d", d.AssignmentEpoch, d.Epoch)
	}
	s.groupEpoch, s.assignEpoch = d.Epoch, d.AssignmentEpoch
	members := map[string]bool{}
	server := map[cpTP]string{}
	for _, dm := range d.Members {
		members[dm.MemberID] = true
		if dm.MemberEpoch > d.AssignmentEpoch {
			s.fail(2, "member %s at epoch %d is ahead of the assignment epoch %d", dm.MemberID, dm.MemberEpoch, d.AssignmentEpoch)
		}
		for _, tp := range dm.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				k := cpTP{tp.Topic, p}
				if o, dup := server[k]; dup {
					s.fail(1, "ConsumerGroupDescribe: %s is assigned to %s and %s", k, o, dm.MemberID)
				}
				server[k] = dm.MemberID
			}
		}
	}
	held := map[cpTP]*cpMember{}
	for _, m := range s.members {
		if len(m.owned) == 0 {
			continue
		}
		if !members[m.id] {
			// A zombie: fenced while it still believes it owns
			// partitions. Only a misbehaving client may become one.
			if m.misbehaved == "" {
				s.fail(1, "%s behaved but the coordinator fenced it while it holds %s", m.name, m.owned)
			}
			s.stats["zombie fenced"]++
			continue
		}
		for tp := range m.owned {
			if o := held[tp]; o != nil {
				s.fail(1, "%s is held by %s and %s, both members", tp, o.name, m.name)
			}
			held[tp] = m
		}
	}
}

// converge stops the chaos and requires invariant 4.
func (s *cpSim) converge() {
	s.begin("quiet")
	s.anchor()
	maxRebal := time.Duration(0)
	for _, m := range s.members {
		if m.status == cpPaused {
			m.pausedUntil = s.h.now
		}
		m.lose, m.slowNext = 0, 0
		if m.pending != nil && m.applyAt.After(s.h.now) {
			m.applyAt = s.h.now
		}
		maxRebal = max(maxRebal, m.rebal)
	}
	bound := s.cfg.ConsumerSessionTimeout + maxRebal + 5*s.cfg.ConsumerHeartbeatInterval + s.cfg.AssignmentInterval
	deadline := s.h.now.Add(bound)
	why := ""
	for {
		if why = s.converged(); why == "" {
			s.stats["converged"]++
			for _, m := range s.members {
				if m.classic && m.status == cpLive {
					s.stats["converged mixed"]++
					break
				}
			}
			s.checkEvents()
			return
		}
		if !s.h.now.Before(deadline) {
			break
		}
		s.advance(min(500*time.Millisecond, deadline.Sub(s.h.now)))
	}
	s.fail(4, "not converged %v after the chaos stopped: %s", bound, why)
}

// checkEvents is invariant 5, once converged.
func (s *cpSim) checkEvents() {
	t, err := tallyEvents(s.h.events, "", pGroup, "consumer")
	if err != nil {
		s.fail(5, "%v", err)
	}
	if err := s.h.ev.settled("", pGroup, "consumer"); err != nil {
		s.fail(5, "%v", err)
	}
	live := 0
	for _, m := range s.members {
		if m.status == cpLive {
			live++
		}
	}
	if t.joined-t.departed != live {
		s.fail(5, "%d members joined and %d left, expired or were fenced, but %d clients are live", t.joined, t.departed, live)
	}
	s.stats["events"] += len(s.h.events)
	s.stats["rebalances completed"] += t.completed
}

func (s *cpSim) converged() string {
	d := s.h.cdescribe(pGroup)
	liveIDs := map[string]*cpMember{}
	for _, m := range s.members {
		if m.status == cpLive {
			liveIDs[m.id] = m
		}
	}
	if d.ErrorCode != 0 {
		if len(liveIDs) == 0 {
			return ""
		}
		return "describe: " + pErrName(d.ErrorCode)
	}
	if len(liveIDs) == 0 {
		if d.State != "Empty" {
			return "no client is live, but the group is " + d.State
		}
		return ""
	}
	if d.State != "Stable" {
		return "state " + d.State
	}
	if len(d.Members) != len(liveIDs) {
		return fmt.Sprintf("%d members, %d live clients", len(d.Members), len(liveIDs))
	}
	owner := map[cpTP]string{}
	counts := map[string]int{}
	subs := map[string]bool{}
	for _, dm := range d.Members {
		m := liveIDs[dm.MemberID]
		if m == nil {
			return "member " + dm.MemberID + " is no live client"
		}
		if !m.sentSubs {
			return m.name + " has not sent its new subscription yet"
		}
		if dm.MemberEpoch != d.Epoch || m.epoch != d.Epoch {
			return fmt.Sprintf("%s at epoch %d (client %d), group at %d", m.name, dm.MemberEpoch, m.epoch, d.Epoch)
		}
		a := cpSet{}
		for _, tp := range dm.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				a[cpTP{tp.Topic, p}] = true
			}
		}
		t := cpSet{}
		for _, tp := range dm.TargetAssignment.TopicPartitions {
			for _, p := range tp.Partitions {
				t[cpTP{tp.Topic, p}] = true
			}
		}
		if !a.equal(t) || !a.equal(m.owned) {
			return fmt.Sprintf("%s holds %s, assignment %s, target %s", m.name, m.owned, a, t)
		}
		sub := s.subscribed(m)
		var names []string
		for tp := range a {
			if !sub[tp.topic] {
				return fmt.Sprintf("%s holds %s outside its subscription", m.name, tp)
			}
			owner[tp] = m.name
		}
		for t := range sub {
			names = append(names, t)
		}
		sort.Strings(names)
		subs[strings.Join(names, ",")] = true
		counts[m.name] = len(a)
	}
	for _, m := range liveIDs {
		for t := range s.subscribed(m) {
			for p := range s.parts[t] {
				if owner[cpTP{t, p}] == "" {
					return fmt.Sprintf("%s%d is not assigned", t, p)
				}
			}
		}
	}
	if s.assign == "uniform" && len(subs) == 1 {
		lo, hi := 1<<30, 0
		for _, c := range counts {
			lo, hi = min(lo, c), max(hi, c)
		}
		if hi-lo > 1 {
			s.fail(4, "converged but unbalanced: %v", counts)
		}
	}
	return ""
}

func (s *cpSim) describe(m *cpMember) string {
	st := []string{"live", "paused", "crashed", "gone"}[m.status]
	out := fmt.Sprintf("%s %s id %s epoch %d %s owned %s sub %s", m.name, st, m.id, m.epoch, st, m.owned, s.subString(m))
	if m.pending != nil {
		out += fmt.Sprintf(" pending %s at +%s", m.pending, m.applyAt.Sub(epoch))
	}
	if m.misbehaved != "" {
		out += " (" + m.misbehaved + ")"
	}
	return out
}

func (s *cpSim) fail(inv int, format string, args ...any) {
	panic(propFailure{fmt.Sprintf("invariant %d: ", inv) + fmt.Sprintf(format, args...)})
}

func (s *cpSim) begin(what string) {
	if s.cur != nil {
		s.trace = append(s.trace, s.cur)
		keep := 30
		if s.long {
			keep = 400
		}
		if len(s.trace) > keep {
			s.trace = s.trace[len(s.trace)-keep:]
		}
	}
	s.cur = []string{fmt.Sprintf("  step %d (+%s): %s", s.step, s.h.now.Sub(epoch), what)}
}

func (s *cpSim) tr(format string, args ...any) {
	s.cur = append(s.cur, fmt.Sprintf(format, args...))
}
