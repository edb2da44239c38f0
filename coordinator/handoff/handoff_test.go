package handoff_test

// Scenario tests of the warm-handoff machine in fake time: join, handoff,
// leave, lease expiry, reconnect within the lease, a new owner dying
// mid-warm, an old owner dying mid-handoff, the empty group, the no-op
// rebalance, partition growth and restarts. After every step every
// partition of the topic must have a live holder once one was assigned.

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/handoff"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/record"
)

const (
	grp   = "g"
	topic = "events"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// tb is what the harness needs of a test: the property test's turns a
// failure into the end of one schedule.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

type harness struct {
	t   tb
	cfg handoff.Config
	m   *handoff.Shard
	now time.Time
	// guardEvery runs the one-record-rule guard after every n-th event
	// (1: every event; the property test thins it out).
	guardEvery, steps int
	records           map[string][]byte
	written           int
	timers            map[string]time.Time
	// got is every command each stream received, in order.
	got    map[handoff.StreamID][]handoff.Command
	closed map[handoff.StreamID]string
	stream map[string]handoff.StreamID // consumer → its current stream
	next   handoff.StreamID
	parts  int32
}

func newHarness(t *testing.T, parts int32) *harness { return newHarnessTB(t, parts) }

func newHarnessTB(t tb, parts int32) *harness {
	h := &harness{
		t:          t,
		cfg:        handoff.Config{LeaseTTL: 30 * time.Second, Debounce: time.Second},
		now:        start,
		records:    map[string][]byte{},
		timers:     map[string]time.Time{},
		guardEvery: 1,
		got:        map[handoff.StreamID][]handoff.Command{},
		closed:     map[handoff.StreamID]string{},
		stream:     map[string]handoff.StreamID{},
		parts:      parts,
	}
	h.m = handoff.New(h.cfg)
	h.apply(h.m.Loaded(h.now))
	return h
}

func (h *harness) apply(out handoff.Output) {
	h.t.Helper()
	h.applyUnchecked(out)
	h.check()
	if h.steps++; h.steps%h.guardEvery == 0 {
		h.guard()
	}
}

// guard checks the one record rule: a machine rebuilt from the records
// written so far holds the same durable state.
func (h *harness) guard() {
	h.t.Helper()
	cfg := h.cfg
	if err := machine.CheckReplay(h.m, h.records, func() *handoff.Shard { return handoff.New(cfg) }); err != nil {
		h.t.Fatalf("at %v: %v", h.now, err)
	}
}

// applyUnchecked applies out without the holder check (the fuzzer's
// inputs need not make sense).
func (h *harness) applyUnchecked(out handoff.Output) {
	h.t.Helper()
	for _, r := range out.Records {
		h.written++
		if r.Value == nil {
			delete(h.records, string(r.Key))
		} else {
			h.records[string(r.Key)] = r.Value
		}
	}
	for _, s := range out.Sends {
		if _, gone := h.closed[s.Stream]; gone {
			h.t.Fatalf("commands sent to closed stream %d: %+v", s.Stream, s.Commands)
		}
		h.got[s.Stream] = append(h.got[s.Stream], s.Commands...)
	}
	for _, c := range out.Closes {
		h.closed[c.Stream] = c.Reason
	}
	for _, tm := range out.Timers {
		if tm.At.IsZero() {
			delete(h.timers, tm.Key)
		} else {
			h.timers[tm.Key] = tm.At
		}
	}
}

func (h *harness) register(name string) handoff.StreamID {
	h.t.Helper()
	h.next++
	out, err := h.m.Register(h.now, grp, name, topic, h.parts, h.next)
	if err != nil {
		h.t.Fatalf("register %s: %v", name, err)
	}
	h.stream[name] = h.next
	h.apply(out)
	return h.next
}

func (h *harness) disconnect(name string) {
	h.t.Helper()
	h.apply(h.m.Disconnect(h.now, grp, name, h.stream[name]))
	delete(h.stream, name)
}

func (h *harness) ready(name string, p int32) error {
	h.t.Helper()
	out, err := h.m.Ready(h.now, grp, name, handoff.TP{Topic: topic, Partition: p})
	h.apply(out)
	return err
}

func (h *harness) released(name string, p int32) error {
	h.t.Helper()
	out, err := h.m.Released(h.now, grp, name, handoff.TP{Topic: topic, Partition: p})
	h.apply(out)
	return err
}

// advance moves fake time, firing due timers in deadline order.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	end := h.now.Add(d)
	testkit.FireDue(h.timers, &h.now, end, func(key string) { h.apply(h.m.Fire(h.now, key)) })
	h.now = end
}

// restart replays the records into a fresh machine: every stream is gone.
func (h *harness) restart() {
	h.t.Helper()
	h.m = h.replayed()
	for name, s := range h.stream {
		h.closed[s] = "restart"
		delete(h.stream, name)
	}
	h.timers = map[string]time.Time{}
	h.apply(h.m.Loaded(h.now))
}

// replayed is a fresh machine loaded from the records written so far.
func (h *harness) replayed() *handoff.Shard {
	h.t.Helper()
	m := handoff.New(h.cfg)
	if err := machine.ReplaySorted(h.records, m.Replay); err != nil {
		h.t.Fatalf("%v", err)
	}
	return m
}

// check: once any partition has an owner, and unless a rebalance is due
// (a consumer died, or partitions were added, less than the debounce
// ago), every partition has a registered holder: its owner, or a side of
// its handoff.
func (h *harness) check() {
	h.t.Helper()
	v := h.m.View(grp)
	if _, due := h.timers["r"+grp]; due || len(v.Owners) == 0 || len(v.Consumers) == 0 {
		return
	}
	reg := map[string]bool{}
	for _, c := range v.Consumers {
		if c.Topic == topic {
			reg[c.Name] = true
		}
	}
	if len(reg) == 0 {
		return // nobody consumes the topic: nobody need hold it
	}
	for p := range v.Topics[topic] {
		tp := handoff.TP{Topic: topic, Partition: p}
		hd, moving := v.Handoffs[tp]
		if !reg[v.Owners[tp]] && !(moving && (reg[hd.To] || reg[hd.From])) {
			h.t.Fatalf("%s has no live holder: owner %q, handoff %+v, consumers %+v", tp, v.Owners[tp], hd, v.Consumers)
		}
	}
}

// owned returns partition counts per owner.
func (h *harness) owned() map[string]int {
	out := map[string]int{}
	for _, o := range h.m.View(grp).Owners {
		out[o]++
	}
	return out
}

// cmds returns what stream s received since index from, as text.
func (h *harness) cmds(s handoff.StreamID, from int) []string {
	var out []string
	for _, c := range h.got[s][from:] {
		out = append(out, cmdString(c))
	}
	return out
}

func cmdString(c handoff.Command) string {
	switch c.Kind {
	case handoff.Assignment:
		return fmt.Sprintf("assign +%v -%v", parts(c.Assigned), parts(c.Unassigned))
	case handoff.Warm:
		return fmt.Sprintf("warm %d from %s", c.Partition.Partition, c.Peer)
	case handoff.Release:
		return fmt.Sprintf("release %d to %s", c.Partition.Partition, c.Peer)
	}
	return "?"
}

func parts(tps []handoff.TP) []int32 {
	out := []int32{}
	for _, tp := range tps {
		out = append(out, tp.Partition)
	}
	slices.Sort(out)
	return out
}

func wantCode(t *testing.T, what string, err error, code handoff.Code) {
	t.Helper()
	var e *handoff.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("%s: %v, want code %d", what, err, code)
	}
}

// warms returns the partitions stream s was told to warm since from.
func (h *harness) warms(s handoff.StreamID, from int) map[int32]string {
	out := map[int32]string{}
	for _, c := range h.got[s][from:] {
		if c.Kind == handoff.Warm {
			out[c.Partition.Partition] = c.Peer
		}
	}
	return out
}

func TestJoinAndHandoff(t *testing.T) {
	h := newHarness(t, 12)
	a, b, c := h.register("a"), h.register("b"), h.register("c")
	for _, s := range []handoff.StreamID{a, b, c} {
		if got := h.cmds(s, 0); len(got) != 1 || got[0] != "assign +[] -[]" {
			t.Fatalf("first command of a new consumer: %v", got)
		}
	}
	h.advance(999 * time.Millisecond)
	if h.written != 4 {
		t.Fatalf("before the debounce: %d records, want the 3 consumers and the topic", h.written)
	}
	h.advance(time.Millisecond)
	if o := h.owned(); o["a"] != 4 || o["b"] != 4 || o["c"] != 4 {
		t.Fatalf("3 consumers on 12 partitions: %v", o)
	}
	// Nothing owned them: assigned at once, no handoff.
	if got := h.cmds(a, 1); len(got) != 1 || got[0] != "assign +[0 1 2 3] -[]" {
		t.Fatalf("a: %v", got)
	}

	// A fourth joins: three partitions move, one from each, and only
	// through handoffs: the owners stay until the new one is ready.
	before := h.owned()
	d := h.register("d")
	h.advance(time.Second)
	warms := h.warms(d, 1)
	if len(warms) != 3 {
		t.Fatalf("d warms %v, want 3 partitions", warms)
	}
	if o := h.owned(); o["d"] != 0 || o["a"] != before["a"] {
		t.Fatalf("owners changed before ready: %v", o)
	}
	var p int32
	var from string
	for p, from = range warms {
		break
	}
	mark := len(h.got[h.stream[from]])
	if err := h.ready("d", p); err != nil {
		t.Fatal(err)
	}
	if o := h.m.View(grp).Owners[handoff.TP{Topic: topic, Partition: p}]; o != "d" {
		t.Fatalf("after ready, %d is owned by %q", p, o)
	}
	if got := h.cmds(h.stream[from], mark); len(got) != 1 || got[0] != fmt.Sprintf("release %d to d", p) {
		t.Fatalf("old owner %s got %v", from, got)
	}
	// Calls that do not fit the state are refused.
	wantCode(t, "ready twice", h.ready("d", p), handoff.FailedPrecondition)
	wantCode(t, "released by the new owner", h.released("d", p), handoff.FailedPrecondition)
	wantCode(t, "ready from an unknown consumer", h.ready("zz", p), handoff.NotFound)
	other := "a"
	if from == "a" {
		other = "b"
	}
	wantCode(t, "released by a consumer not releasing it", h.released(other, p), handoff.FailedPrecondition)
	if err := h.released(from, p); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.m.View(grp).Handoffs[handoff.TP{Topic: topic, Partition: p}]; ok {
		t.Fatal("the handoff outlived its release")
	}
	wantCode(t, "released twice", h.released(from, p), handoff.FailedPrecondition)
	// The other two complete too; then 3/3/3/3 and no handoff.
	for q, f := range warms {
		if q == p {
			continue
		}
		if err := h.ready("d", q); err != nil {
			t.Fatal(err)
		}
		if err := h.released(f, q); err != nil {
			t.Fatal(err)
		}
	}
	if o := h.owned(); o["a"] != 3 || o["b"] != 3 || o["c"] != 3 || o["d"] != 3 || len(h.m.View(grp).Handoffs) != 0 {
		t.Fatalf("after the handoffs: %v %v", o, h.m.View(grp).Handoffs)
	}
	// No-op: a sweep with nothing to change writes nothing.
	n := h.written
	h.advance(time.Minute)
	if h.written != n {
		t.Fatalf("a quiet minute wrote %d records", h.written-n)
	}
}

func TestLeaseReconnectAndExpiry(t *testing.T) {
	h := newHarness(t, 6)
	h.register("a")
	h.register("b")
	h.advance(time.Second)
	n := h.written
	// a's stream drops; it comes back within the lease: nothing moves,
	// and its snapshot lists what it owns.
	h.disconnect("a")
	h.advance(20 * time.Second)
	s := h.register("a")
	if got := h.cmds(s, 0); len(got) != 1 || got[0] != "assign +[0 1 2] -[]" {
		t.Fatalf("snapshot after reconnect: %v", got)
	}
	h.advance(time.Minute)
	if h.written != n {
		t.Fatalf("a reconnect within the lease wrote %d records", h.written-n)
	}
	// A second stream for b replaces the first, which is closed.
	old := h.stream["b"]
	h.register("b")
	if h.closed[old] == "" {
		t.Fatal("b's first stream was not closed")
	}
	// b goes away for good: after the lease, its partitions go to a at
	// once (the dead-owner fast path: no handoff).
	h.disconnect("b")
	mark := len(h.got[h.stream["a"]])
	h.advance(30 * time.Second)
	if h.m.View(grp).Consumers[0].Name != "a" || len(h.m.View(grp).Consumers) != 1 {
		t.Fatalf("after b's lease: %+v", h.m.View(grp).Consumers)
	}
	h.advance(time.Second)
	if got := h.cmds(h.stream["a"], mark); len(got) != 1 || got[0] != "assign +[3 4 5] -[]" {
		t.Fatalf("a after b's lease: %v", got)
	}
	if len(h.m.View(grp).Handoffs) != 0 {
		t.Fatalf("handoffs from a dead owner: %v", h.m.View(grp).Handoffs)
	}
	// The last one goes: the group's assignments are deleted.
	h.disconnect("a")
	h.advance(32 * time.Second)
	if v := h.m.View(grp); len(v.Owners) != 0 || len(v.Consumers) != 0 {
		t.Fatalf("empty group keeps %v", v.Owners)
	}
}

func TestNewOwnerDiesMidWarm(t *testing.T) {
	h := newHarness(t, 4)
	h.register("a")
	h.advance(time.Second)
	h.register("b")
	h.advance(time.Second)
	if w := h.warms(h.stream["b"], 1); len(w) != 2 {
		t.Fatalf("b warms %v", w)
	}
	h.disconnect("b")
	h.advance(31 * time.Second)
	v := h.m.View(grp)
	if len(v.Handoffs) != 0 || len(v.Consumers) != 1 {
		t.Fatalf("after b died warming: %+v", v)
	}
	if o := h.owned(); o["a"] != 4 {
		t.Fatalf("a keeps everything: %v", o)
	}
}

func TestOldOwnerDiesMidHandoff(t *testing.T) {
	h := newHarness(t, 4)
	h.register("a")
	h.advance(time.Second)
	h.register("b")
	h.advance(time.Second)
	warms := h.warms(h.stream["b"], 1)
	h.disconnect("a")
	h.advance(31 * time.Second)
	// a is gone; b is still warming two of a's partitions: those
	// handoffs stay, and a's other two went to b at once at the
	// rebalance after the lease (the dead-owner fast path).
	v := h.m.View(grp)
	if len(v.Handoffs) != 2 || h.owned()["b"] != 2 {
		t.Fatalf("after the old owner died: handoffs %v, owners %v", v.Handoffs, v.Owners)
	}
	for p := range warms {
		if err := h.ready("b", p); err != nil {
			t.Fatal(err)
		}
	}
	// Nobody to release to: the handoffs end at Ready.
	if v := h.m.View(grp); len(v.Handoffs) != 0 {
		t.Fatalf("handoffs after ready with a dead old owner: %v", v.Handoffs)
	}
	if o := h.owned(); o["b"] != 4 {
		t.Fatalf("b alone: %v", o)
	}
}

func TestPartitionGrowth(t *testing.T) {
	h := newHarness(t, 4)
	h.register("a")
	h.register("b")
	h.advance(time.Second)
	h.apply(h.m.Partitions(h.now, grp, topic, 8))
	h.advance(time.Second)
	if o := h.owned(); o["a"] != 4 || o["b"] != 4 {
		t.Fatalf("after growth to 8: %v", o)
	}
	if len(h.m.View(grp).Handoffs) != 0 {
		t.Fatal("new partitions went through handoffs")
	}
	// A shrink is ignored (Kafka partitions never go away).
	n := h.written
	h.apply(h.m.Partitions(h.now, grp, topic, 2))
	h.advance(time.Minute)
	if h.written != n {
		t.Fatal("a smaller partition count was written")
	}
}

func TestRestartMidHandoff(t *testing.T) {
	h := newHarness(t, 6)
	h.register("a")
	h.advance(time.Second)
	h.register("b")
	h.advance(time.Second)
	warms := h.warms(h.stream["b"], 1)
	var p int32
	for p = range warms {
		break
	}
	if err := h.ready("b", p); err != nil {
		t.Fatal(err)
	}
	before := h.m.View(grp)
	h.restart()
	after := h.m.View(grp)
	for i := range after.Consumers {
		after.Consumers[i].Connected = true // streams do not survive
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("restart changed the state:\n%+v\n%+v", before, after)
	}
	// Both come back within the lease and get what is pending: b the
	// warms it has not finished, a the release of p.
	a, b := h.register("a"), h.register("b")
	if got := h.cmds(a, 0); !slices.Contains(got, fmt.Sprintf("release %d to b", p)) {
		t.Fatalf("a after the restart: %v", got)
	}
	if w := h.warms(b, 0); len(w) != len(warms)-1 {
		t.Fatalf("b after the restart warms %v, want %d", w, len(warms)-1)
	}
}

func TestInvalidRegister(t *testing.T) {
	h := newHarness(t, 4)
	for _, c := range []struct {
		group, name, topic string
		parts              int32
	}{{"", "a", "t", 1}, {"g\x00", "a", "t", 1}, {"g", "", "t", 1}, {"g", "a", "", 1}, {"g", "a", "t", 0}} {
		_, err := h.m.Register(h.now, c.group, c.name, c.topic, c.parts, 1)
		wantCode(t, fmt.Sprintf("register %+v", c), err, handoff.InvalidArgument)
	}
}

// A rebalance that was due when the process stopped is not durable: the
// load schedules one. (Found by TestPropertyHandoff.)
func TestRestartRebalances(t *testing.T) {
	h := newHarness(t, 4)
	h.register("a")
	h.advance(time.Second)
	h.apply(h.m.Partitions(h.now, grp, topic, 6))
	h.restart() // before the debounce
	h.advance(time.Second)
	if o := h.owned(); o["a"] != 6 {
		t.Fatalf("after the restart, the added partitions: %v", o)
	}
}

// TestTenantGroups: two organisations' groups of one name are two groups
// (handoff.ScopedGroup), written under their own record keys and loaded
// apart again after a restart.
func TestTenantGroups(t *testing.T) {
	if tenant, group := handoff.SplitGroup(handoff.ScopedGroup("acme", grp)); tenant != "acme" || group != grp {
		t.Fatalf("split of acme's %s: %q %q", grp, tenant, group)
	}
	if handoff.ScopedGroup("", grp) != grp {
		t.Fatal("the default organisation's group is not its plain name")
	}
	h := newHarness(t, 6)
	h.register("a")
	h.next++
	acme := handoff.ScopedGroup("acme", grp)
	out, err := h.m.Register(h.now, acme, "a", topic, 4, h.next)
	if err != nil {
		t.Fatal(err)
	}
	h.apply(out)
	h.advance(time.Second)
	if v := h.m.View(acme); len(v.Owners) != 4 || len(v.Consumers) != 1 {
		t.Fatalf("acme's %s: %d owners, %d consumers; want 4 and 1", grp, len(v.Owners), len(v.Consumers))
	}
	if o := h.owned(); o["a"] != 6 {
		t.Fatalf("the default organisation's %s: %v, want a owning its 6", grp, o)
	}
	tenants := map[string]bool{}
	for k := range h.records {
		if _, key, err := record.ParseKey([]byte(k)); err == nil {
			switch rk := key.(type) {
			case record.PartitionKey:
				tenants[rk.Tenant+"/"+rk.Group] = true
			case record.MemberKey:
				tenants[rk.Tenant+"/"+rk.Group] = true
			}
		}
	}
	if !tenants["acme/"+grp] || !tenants["/"+grp] || len(tenants) != 2 {
		t.Fatalf("records' groups: %v, want acme's and the default's %s", tenants, grp)
	}
	m := h.replayed()
	if v := m.View(acme); len(v.Owners) != 4 {
		t.Fatalf("acme's %s after a restart: %d owners, want 4", grp, len(v.Owners))
	}
	if v := m.View(grp); len(v.Owners) != 6 {
		t.Fatalf("the default's %s after a restart: %d owners, want 6", grp, len(v.Owners))
	}
}
