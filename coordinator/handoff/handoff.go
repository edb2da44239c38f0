// Package handoff is the pure state machine of Cohort's warm-handoff
// assignment service (the gRPC front door kafka-assigner's clients use):
// consumers register for a topic of a group, the coordinator balances the
// topic's partitions over them with the sticky uniform assignor, and a
// partition moves only through a handoff: the new owner warms it, says it
// is ready, becomes the owner, and then the old owner releases it.
//
// Like coordinator/groups it is pure: events in (a registration, a stream
// closing, Ready, Released, a partition count, a timer), records, stream
// commands and timer changes out. It changes its durable state only by
// replaying its own records, reads no clock, does no I/O and starts no
// goroutine.
//
// The states of a partition, as kafka-assigner's: owned by one consumer;
// in a warming handoff (the old owner still works it, the new one warms
// it: two holders); in a complete handoff (the new owner owns it, the old
// one is releasing it: two holders). The invariant is "never zero holders
// while a consumer is alive", not "never two".
package handoff

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
)

// Config configures a Machine.
type Config struct {
	// Shard is the shard whose records the machine writes.
	Shard uint16
	// LeaseTTL is how long a consumer whose stream closed keeps its
	// registration and partitions (--assigner-lease-ttl, default 30 s);
	// the sweep runs every LeaseTTL/2.
	LeaseTTL time.Duration
	// Debounce is how long membership changes settle before a rebalance
	// (--assigner-rebalance-debounce, default 1 s).
	Debounce time.Duration
}

// StreamID names a consumer's open Register stream.
type StreamID uint64

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

func (tp TP) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

func compareTP(a, b TP) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// CommandKind says what a Command is.
type CommandKind uint8

const (
	// Assignment tells a consumer what it now owns (Assigned) and no
	// longer owns (Unassigned).
	Assignment CommandKind = iota + 1
	// Warm tells the new owner to warm Partition; Peer is its current
	// owner.
	Warm
	// Release tells the old owner to let go of Partition; Peer is its
	// new owner.
	Release
)

// Command is one message for a consumer's stream (kafka-assigner's
// AssignmentCommand).
type Command struct {
	Kind                 CommandKind
	Assigned, Unassigned []TP
	Partition            TP
	Peer                 string
}

// Send is the commands for one consumer's stream, in order, batched so
// that a large rebalance is one Send per consumer.
type Send struct {
	Stream   StreamID
	Consumer string
	Commands []Command
}

// Close ends a stream that a newer registration of the same consumer
// replaced.
type Close struct {
	Stream StreamID
	Reason string
}

// Output is what an event produces. Records come first: the runtime sends
// the commands and answers only once they are durable.
type Output struct {
	Records []machine.Record
	Sends   []Send
	Closes  []Close
	Timers  []machine.Timer
}

// Code classifies a refused call; the gRPC server maps it to a status.
type Code uint8

const (
	InvalidArgument Code = iota + 1
	NotFound
	FailedPrecondition
)

// Error is a refused call.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

type consumer struct {
	name, topic string
	stream      StreamID // 0: disconnected
	leaseUntil  time.Time
}

type move struct {
	from, to string
	complete bool
}

type group struct {
	name      string
	consumers map[string]*consumer
	topics    map[string]int32
	owners    map[TP]string
	handoffs  map[TP]*move
	// rebalanceAt is when a debounced rebalance is due; zero: none.
	rebalanceAt time.Time
	sweeping    bool
}

// Shard holds every assigner group of one shard.
type Shard struct {
	cfg    Config
	groups map[string]*group

	rec   machine.Recorder
	out   Output
	sends map[string]int // consumer (group\x00name) → index in out.Sends
}

// New returns an empty machine.
func New(cfg Config) *Shard {
	m := &Shard{cfg: cfg, groups: map[string]*group{}}
	m.rec.Replay = m.Replay
	return m
}

func (m *Shard) group(name string) *group {
	g := m.groups[name]
	if g == nil {
		g = &group{name: name, consumers: map[string]*consumer{}, topics: map[string]int32{}, owners: map[TP]string{}, handoffs: map[TP]*move{}}
		m.groups[name] = g
	}
	return g
}

func (m *Shard) flush() Output {
	out := m.out
	out.Records = m.rec.Take()
	m.out, m.sends = Output{}, nil
	return out
}

// Timer keys: the group's name after a kind byte; a lease's key adds the
// consumer's name after a NUL.
const (
	timerRebalance = 'r'
	timerSweep     = 's'
	timerLease     = 'l'
)

func (m *Shard) timer(key string, at time.Time) {
	m.out.Timers = append(m.out.Timers, machine.Timer{Key: key, At: at})
}

func (m *Shard) gk(g *group) record.GroupKey {
	tenant, name := SplitGroup(g.name)
	return record.GroupKey{Shard: m.cfg.Shard, Tenant: tenant, Group: name}
}

// tenantSep separates an organisation from its group in the machine's
// group names: a control character, which gRPC metadata (where group
// names come from) cannot carry, and organisation names never hold.
const tenantSep = "\x01"

// ScopedGroup is the machine's name of a tenant's group: the group itself
// for the default tenant (as before organisations), else the tenant, a
// separator and the group, so that two organisations' groups of one name
// are two groups. The records keep the two apart (record.GroupKey).
func ScopedGroup(tenant, group string) string {
	if tenant == "" {
		return group
	}
	return tenant + tenantSep + group
}

// SplitGroup is ScopedGroup's inverse.
func SplitGroup(scoped string) (tenant, group string) {
	if t, g, ok := strings.Cut(scoped, tenantSep); ok {
		return t, g
	}
	return "", scoped
}

// emit writes a record and applies it through Replay (the one record
// rule, coordinator/machine).
func (m *Shard) emit(key, value []byte) { m.rec.Emit(key, value) }

func (m *Shard) setOwner(g *group, tp TP, owner string) {
	k := record.PartitionKey{GroupKey: m.gk(g), Kind: record.KindAssignerOwner, Topic: tp.Topic, Partition: tp.Partition}
	var v []byte
	if owner != "" {
		v = record.AssignerOwner{Owner: owner}.Encode()
	}
	m.emit(k.Key(), v)
}

func (m *Shard) setHandoff(g *group, tp TP, h *move) {
	k := record.PartitionKey{GroupKey: m.gk(g), Kind: record.KindAssignerHandoff, Topic: tp.Topic, Partition: tp.Partition}
	var v []byte
	if h != nil {
		v = record.AssignerHandoff{From: h.from, To: h.to, Complete: h.complete}.Encode()
	}
	m.emit(k.Key(), v)
}

func (m *Shard) setConsumer(g *group, name, topic string) {
	k := record.MemberKey{GroupKey: m.gk(g), Kind: record.KindAssignerConsumer, Member: name}
	var v []byte
	if topic != "" {
		v = record.AssignerConsumer{Topic: topic}.Encode()
	}
	m.emit(k.Key(), v)
}

func (m *Shard) setTopic(g *group, topic string, n int32) {
	k := record.MemberKey{GroupKey: m.gk(g), Kind: record.KindAssignerTopic, Member: topic}
	m.emit(k.Key(), record.AssignerTopic{Partitions: n}.Encode())
}

// send queues cmd for consumer c, if it is connected; a disconnected
// consumer gets what is pending when it registers again.
func (m *Shard) send(g *group, c *consumer, cmd Command) {
	if c == nil || c.stream == 0 {
		return
	}
	if m.sends == nil {
		m.sends = map[string]int{}
	}
	key := g.name + "\x00" + c.name
	i, ok := m.sends[key]
	if !ok {
		i = len(m.out.Sends)
		m.sends[key] = i
		m.out.Sends = append(m.out.Sends, Send{Stream: c.stream, Consumer: c.name})
	}
	s := &m.out.Sends[i]
	// Assignments in one batch merge into one command.
	if cmd.Kind == Assignment {
		for j := range s.Commands {
			if s.Commands[j].Kind == Assignment {
				s.Commands[j].Assigned = append(s.Commands[j].Assigned, cmd.Assigned...)
				s.Commands[j].Unassigned = append(s.Commands[j].Unassigned, cmd.Unassigned...)
				return
			}
		}
	}
	s.Commands = append(s.Commands, cmd)
}

// Replay applies one record to the state.
func (m *Shard) Replay(r machine.Record) error {
	kind, k, err := record.ParseKey(r.Key)
	if err != nil {
		return err
	}
	switch kind {
	case record.KindAssignerConsumer:
		mk := k.(record.MemberKey)
		g := m.group(ScopedGroup(mk.Tenant, mk.Group))
		if r.Value == nil {
			delete(g.consumers, mk.Member)
			return nil
		}
		v, err := record.DecodeAssignerConsumer(r.Value)
		if err != nil {
			return err
		}
		c := g.consumers[mk.Member]
		if c == nil {
			c = &consumer{name: mk.Member}
			g.consumers[mk.Member] = c
		}
		c.topic = v.Topic
	case record.KindAssignerTopic:
		mk := k.(record.MemberKey)
		v, err := record.DecodeAssignerTopic(r.Value)
		if err != nil {
			return err
		}
		m.group(ScopedGroup(mk.Tenant, mk.Group)).topics[mk.Member] = v.Partitions
	case record.KindAssignerOwner:
		pk := k.(record.PartitionKey)
		g := m.group(ScopedGroup(pk.Tenant, pk.Group))
		tp := TP{pk.Topic, pk.Partition}
		if r.Value == nil {
			delete(g.owners, tp)
			return nil
		}
		v, err := record.DecodeAssignerOwner(r.Value)
		if err != nil {
			return err
		}
		g.owners[tp] = v.Owner
	case record.KindAssignerHandoff:
		pk := k.(record.PartitionKey)
		g := m.group(ScopedGroup(pk.Tenant, pk.Group))
		tp := TP{pk.Topic, pk.Partition}
		if r.Value == nil {
			delete(g.handoffs, tp)
			return nil
		}
		v, err := record.DecodeAssignerHandoff(r.Value)
		if err != nil {
			return err
		}
		g.handoffs[tp] = &move{from: v.From, to: v.To, complete: v.Complete}
	default:
		return fmt.Errorf("handoff: record kind %v is not the assigner's", kind)
	}
	return nil
}

// DurableState renders what the records hold: per group, its consumers
// and their topics, the topics' partition counts, owners and handoffs.
func (m *Shard) DurableState() string {
	var b strings.Builder
	for _, name := range sortedKeys(m.groups) {
		g := m.groups[name]
		if len(g.consumers)+len(g.topics)+len(g.owners)+len(g.handoffs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "group %q\n", name)
		for _, c := range sortedKeys(g.consumers) {
			fmt.Fprintf(&b, "  consumer %s topic=%s\n", c, g.consumers[c].topic)
		}
		for _, t := range sortedKeys(g.topics) {
			fmt.Fprintf(&b, "  topic %s partitions=%d\n", t, g.topics[t])
		}
		tps := make([]TP, 0, len(g.owners))
		for tp := range g.owners {
			tps = append(tps, tp)
		}
		slices.SortFunc(tps, compareTP)
		for _, tp := range tps {
			fmt.Fprintf(&b, "  owner %v %s\n", tp, g.owners[tp])
		}
		tps = tps[:0]
		for tp := range g.handoffs {
			tps = append(tps, tp)
		}
		slices.SortFunc(tps, compareTP)
		for _, tp := range tps {
			h := g.handoffs[tp]
			fmt.Fprintf(&b, "  handoff %v %s->%s complete=%v\n", tp, h.from, h.to, h.complete)
		}
	}
	return b.String()
}

// Loaded starts every consumer's lease: no stream survives a restart, so
// each has LeaseTTL to register again and keep its partitions. A
// rebalance that was due when the process stopped is not durable, so
// every group gets one after the debounce (nothing is written if nothing
// changes).
func (m *Shard) Loaded(now time.Time) Output {
	for _, name := range sortedKeys(m.groups) {
		g := m.groups[name]
		for _, cn := range sortedKeys(g.consumers) {
			m.startLease(g, g.consumers[cn], now)
		}
		m.armSweep(g, now)
		m.scheduleRebalance(g, now)
	}
	return m.flush()
}

func (m *Shard) startLease(g *group, c *consumer, now time.Time) {
	c.stream = 0
	c.leaseUntil = now.Add(m.cfg.LeaseTTL)
	m.timer(string(timerLease)+g.name+"\x00"+c.name, c.leaseUntil)
}

func (m *Shard) armSweep(g *group, now time.Time) {
	if !g.sweeping && len(g.consumers) > 0 {
		g.sweeping = true
		m.timer(string(timerSweep)+g.name, now.Add(m.cfg.LeaseTTL/2))
	}
}

// scheduleRebalance debounces: the rebalance runs Debounce after the last
// change that asked for it.
func (m *Shard) scheduleRebalance(g *group, now time.Time) {
	g.rebalanceAt = now.Add(m.cfg.Debounce)
	m.timer(string(timerRebalance)+g.name, g.rebalanceAt)
}

// Register attaches a consumer's new stream: it registers the consumer
// (or renews one within its lease, which moves nothing), closes an older
// stream of the same consumer, and sends the consumer what it owns and
// every warm or release it still has to act on. partitions is the
// topic's partition count as the server found it.
func (m *Shard) Register(now time.Time, groupName, name, topic string, partitions int32, stream StreamID) (Output, error) {
	switch {
	case groupName == "" || strings.ContainsRune(groupName, 0):
		return Output{}, &Error{InvalidArgument, fmt.Sprintf("group name %q is empty or holds a NUL", groupName)}
	case name == "":
		return Output{}, &Error{InvalidArgument, "consumer_name is empty"}
	case topic == "":
		return Output{}, &Error{InvalidArgument, "topic is empty"}
	case partitions < 1:
		return Output{}, &Error{InvalidArgument, fmt.Sprintf("topic %s has no partitions", topic)}
	case stream == 0:
		return Output{}, &Error{InvalidArgument, "no stream"}
	}
	g := m.group(groupName)
	if partitions > g.topics[topic] {
		m.setTopic(g, topic, partitions)
		m.scheduleRebalance(g, now)
	}
	c := g.consumers[name]
	switch {
	case c == nil:
		m.setConsumer(g, name, topic)
		c = g.consumers[name]
		m.scheduleRebalance(g, now)
	case c.topic != topic:
		// A consumer that comes back for another topic gives up what
		// it had of the old one, and its handoffs.
		m.forget(g, name)
		m.setConsumer(g, name, topic)
		m.scheduleRebalance(g, now)
	}
	if c.stream != 0 && c.stream != stream {
		m.out.Closes = append(m.out.Closes, Close{Stream: c.stream, Reason: fmt.Sprintf("consumer %s registered again on another stream", name)})
	}
	if !c.leaseUntil.IsZero() {
		c.leaseUntil = time.Time{}
		m.timer(string(timerLease)+g.name+"\x00"+name, time.Time{})
	}
	c.stream = stream
	m.armSweep(g, now)

	// The snapshot first (even if empty), then what is pending.
	snap := Command{Kind: Assignment, Assigned: []TP{}}
	for _, tp := range sortedTPs(g.owners) {
		if g.owners[tp] == name {
			snap.Assigned = append(snap.Assigned, tp)
		}
	}
	m.send(g, c, snap)
	for _, tp := range sortedTPs(g.handoffs) {
		h := g.handoffs[tp]
		switch {
		case h.to == name && !h.complete:
			m.send(g, c, Command{Kind: Warm, Partition: tp, Peer: h.from})
		case h.from == name && h.complete:
			m.send(g, c, Command{Kind: Release, Partition: tp, Peer: h.to})
		}
	}
	return m.flush(), nil
}

// Disconnect tells the machine that stream closed: its consumer keeps its
// registration and partitions for LeaseTTL.
func (m *Shard) Disconnect(now time.Time, groupName, name string, stream StreamID) Output {
	g := m.groups[groupName]
	if g == nil {
		return Output{}
	}
	if c := g.consumers[name]; c != nil && c.stream == stream {
		m.startLease(g, c, now)
	}
	return m.flush()
}

func (m *Shard) known(groupName, name string) (*group, *consumer, error) {
	g := m.groups[groupName]
	var c *consumer
	if g != nil {
		c = g.consumers[name]
	}
	if c == nil {
		return nil, nil, &Error{NotFound, fmt.Sprintf("consumer %s is not registered in group %s", name, groupName)}
	}
	return g, c, nil
}

// Ready completes a warming handoff: the consumer that warmed tp becomes
// its owner in one step (the owner record and the handoff record in one
// output), and the old owner is told to release it. An old owner that is
// gone has nothing to release: the handoff ends there.
func (m *Shard) Ready(now time.Time, groupName, name string, tp TP) (Output, error) {
	g, c, err := m.known(groupName, name)
	if err != nil {
		return Output{}, err
	}
	h := g.handoffs[tp]
	if h == nil || h.to != name || h.complete {
		return Output{}, &Error{FailedPrecondition, fmt.Sprintf("consumer %s is not warming %s", name, tp)}
	}
	m.setOwner(g, tp, name)
	old := g.consumers[h.from]
	if old == nil {
		m.setHandoff(g, tp, nil)
	} else {
		m.setHandoff(g, tp, &move{from: h.from, to: name, complete: true})
		m.send(g, old, Command{Kind: Release, Partition: tp, Peer: name})
	}
	m.send(g, c, Command{Kind: Assignment, Assigned: []TP{tp}})
	return m.flush(), nil
}

// Released ends a complete handoff: the old owner has let go.
func (m *Shard) Released(now time.Time, groupName, name string, tp TP) (Output, error) {
	g, c, err := m.known(groupName, name)
	if err != nil {
		return Output{}, err
	}
	h := g.handoffs[tp]
	if h == nil || h.from != name || !h.complete {
		return Output{}, &Error{FailedPrecondition, fmt.Sprintf("consumer %s is not releasing %s", name, tp)}
	}
	m.setHandoff(g, tp, nil)
	m.send(g, c, Command{Kind: Assignment, Unassigned: []TP{tp}})
	return m.flush(), nil
}

// Partitions tells the machine a topic's partition count; growth is
// rebalanced.
func (m *Shard) Partitions(now time.Time, groupName, topic string, n int32) Output {
	g := m.groups[groupName]
	if g != nil && n > g.topics[topic] {
		m.setTopic(g, topic, n)
		m.scheduleRebalance(g, now)
	}
	return m.flush()
}

// Fire runs a timer.
func (m *Shard) Fire(now time.Time, key string) Output {
	if key == "" {
		return Output{}
	}
	kind, rest := key[0], key[1:]
	switch kind {
	case timerRebalance:
		if g := m.groups[rest]; g != nil && !g.rebalanceAt.IsZero() && !now.Before(g.rebalanceAt) {
			g.rebalanceAt = time.Time{}
			m.rebalance(g)
		}
	case timerSweep:
		if g := m.groups[rest]; g != nil {
			g.sweeping = false
			m.sweep(g, now)
			m.armSweep(g, now)
		}
	case timerLease:
		gn, cn, _ := strings.Cut(rest, "\x00")
		if g := m.groups[gn]; g != nil {
			if c := g.consumers[cn]; c != nil && c.stream == 0 && !c.leaseUntil.IsZero() && !now.Before(c.leaseUntil) {
				m.expire(g, c, now)
			}
		}
	}
	return m.flush()
}

// expire removes a consumer whose lease ran out, and the handoffs it can
// no longer finish. Its partitions keep it as their owner until the next
// rebalance gives them to live consumers directly (the dead-owner fast
// path).
func (m *Shard) expire(g *group, c *consumer, now time.Time) {
	m.setConsumer(g, c.name, "")
	m.dropHandoffs(g, c.name)
	m.scheduleRebalance(g, now)
}

// dropHandoffs deletes the handoffs name can no longer finish: those it
// was warming (the old owner keeps the partition; if it was complete, the
// partition is ownerless until the next rebalance), and those it was
// releasing once complete (nobody is left to release). One it was giving
// up while the new owner still warms stays: the new owner takes the
// partition at Ready.
func (m *Shard) dropHandoffs(g *group, name string) {
	for _, tp := range sortedTPs(g.handoffs) {
		h := g.handoffs[tp]
		if h.to == name || (h.from == name && h.complete) {
			m.setHandoff(g, tp, nil)
		}
	}
}

// forget makes name own nothing and take part in no handoff.
func (m *Shard) forget(g *group, name string) {
	m.dropHandoffs(g, name)
	for _, tp := range sortedTPs(g.owners) {
		if g.owners[tp] == name {
			m.setOwner(g, tp, "")
		}
	}
}

// sweep deletes handoffs whose new owner is gone, and rebalances once no
// handoff is pending (kafka-assigner's periodic cleanup).
func (m *Shard) sweep(g *group, now time.Time) {
	for _, tp := range sortedTPs(g.handoffs) {
		h := g.handoffs[tp]
		if g.consumers[h.to] == nil || (h.complete && g.consumers[h.from] == nil) {
			m.setHandoff(g, tp, nil)
		}
	}
	if len(g.handoffs) == 0 {
		m.rebalance(g)
	}
}

// rebalance computes the sticky balanced assignment of every topic over
// its consumers and starts what it takes: a partition with no live owner
// is assigned at once (the dead-owner fast path), one with a live owner
// moves through a handoff, a partition already in a handoff is left to
// finish. Nothing is written when nothing changes.
func (m *Shard) rebalance(g *group) {
	if len(g.consumers) == 0 {
		// Empty group: every assignment and handoff goes.
		for _, tp := range sortedTPs(g.handoffs) {
			m.setHandoff(g, tp, nil)
		}
		for _, tp := range sortedTPs(g.owners) {
			m.setOwner(g, tp, "")
		}
		return
	}
	byTopic := map[string][]string{}
	for _, name := range sortedKeys(g.consumers) {
		c := g.consumers[name]
		byTopic[c.topic] = append(byTopic[c.topic], name)
	}
	for _, topic := range sortedKeys(g.topics) {
		n := g.topics[topic]
		names := byTopic[topic]
		if len(names) == 0 {
			// No consumer for this topic: its partitions have no owner.
			for p := range n {
				tp := TP{topic, p}
				if _, ok := g.handoffs[tp]; ok {
					m.setHandoff(g, tp, nil)
				}
				if _, ok := g.owners[tp]; ok {
					m.setOwner(g, tp, "")
				}
			}
			continue
		}
		member := map[string]bool{}
		in := assign.Group{Topics: map[string]assign.Topic{topic: {Partitions: n}}}
		current := map[string][]int32{}
		for p := range n {
			tp := TP{topic, p}
			holder := g.owners[tp]
			if h := g.handoffs[tp]; h != nil {
				holder = h.to // already on its way there
			}
			current[holder] = append(current[holder], p)
		}
		for _, name := range names {
			member[name] = true
			in.Members = append(in.Members, assign.Member{ID: name, Topics: []string{topic}, Current: assign.Partitions{topic: current[name]}})
		}
		out := assign.Uniform{}.Assign(in)
		want := map[int32]string{}
		for _, name := range names {
			for _, p := range out[name][topic] {
				want[p] = name
			}
		}
		for p := range n {
			tp := TP{topic, p}
			to := want[p]
			if _, busy := g.handoffs[tp]; busy {
				continue
			}
			from := g.owners[tp]
			switch {
			case from == to:
			case from == "" || !member[from]:
				m.setOwner(g, tp, to)
				m.send(g, g.consumers[to], Command{Kind: Assignment, Assigned: []TP{tp}})
			default:
				h := &move{from: from, to: to}
				m.setHandoff(g, tp, h)
				m.send(g, g.consumers[to], Command{Kind: Warm, Partition: tp, Peer: from})
			}
		}
	}
}

func sortedKeys[V any](mp map[string]V) []string {
	out := make([]string, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedTPs[V any](mp map[TP]V) []TP {
	out := make([]TP, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	slices.SortFunc(out, compareTP)
	return out
}

// View is a group's state, for tests, describe calls and the CLI.
type View struct {
	Consumers []ConsumerView
	Owners    map[TP]string
	Handoffs  map[TP]HandoffView
	Topics    map[string]int32
}

// ConsumerView is one registered consumer.
type ConsumerView struct {
	Name, Topic string
	Connected   bool
}

// HandoffView is one partition on the move.
type HandoffView struct {
	From, To string
	Complete bool
}

// View returns a copy of a group's state; the zero View if there is none.
func (m *Shard) View(groupName string) View {
	v := View{Owners: map[TP]string{}, Handoffs: map[TP]HandoffView{}, Topics: map[string]int32{}}
	g := m.groups[groupName]
	if g == nil {
		return v
	}
	for _, name := range sortedKeys(g.consumers) {
		c := g.consumers[name]
		v.Consumers = append(v.Consumers, ConsumerView{Name: name, Topic: c.topic, Connected: c.stream != 0})
	}
	for tp, o := range g.owners {
		v.Owners[tp] = o
	}
	for tp, h := range g.handoffs {
		v.Handoffs[tp] = HandoffView{From: h.from, To: h.to, Complete: h.complete}
	}
	for t, n := range g.topics {
		v.Topics[t] = n
	}
	return v
}
