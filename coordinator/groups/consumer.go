package groups

// KIP-848 consumer groups: the state, its records and their replay.
//
// A consumer group's durable state is Kafka's five record kinds: the group
// epoch, each member's metadata, the target assignment's epoch, each
// member's target, and each member's current assignment. Unlike the
// classic record (one image of the whole group), these records are the
// only way the state changes: a handler emits a record and applies it at
// once through the same code that replays it at load (emit), so live state
// and replayed state cannot differ. Timers and deadlines are soft state.

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
)

// memberState is a consumer group member's reconciliation state, as
// Kafka's MemberState (the values are stored).
type memberState int8

const (
	memberStable     memberState = 0
	memberUnrevoked  memberState = 1 // must give up partitions first
	memberUnreleased memberState = 2 // waits for partitions others own
	memberUnknown    memberState = 127
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "stable"
	case memberUnrevoked:
		return "unrevoked"
	case memberUnreleased:
		return "unreleased"
	}
	return "unknown"
}

// Member epochs with a meaning of their own (Kafka's
// ConsumerGroupHeartbeatRequest constants).
const (
	leaveEpoch       = -1 // a dynamic member leaves
	leaveStaticEpoch = -2 // a static member leaves for a while
)

// tps is an assignment: topic id → ascending partitions.
type tps map[[16]byte][]int32

func (a tps) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a tps) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

func (a tps) equal(b tps) bool {
	if a.count() != b.count() {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

// records turns a into record form, topics sorted by id.
func (a tps) records() []record.TopicPartitions {
	ids := make([][16]byte, 0, len(a))
	for id, ps := range a {
		if len(ps) > 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	out := make([]record.TopicPartitions, len(ids))
	for i, id := range ids {
		out[i] = record.TopicPartitions{TopicID: id, Partitions: a[id]}
	}
	return out
}

func tpsOf(rs []record.TopicPartitions) tps {
	out := make(tps, len(rs))
	for _, r := range rs {
		if len(r.Partitions) > 0 {
			out[r.TopicID] = r.Partitions
		}
	}
	return out
}

// tp names one partition.
type tp struct {
	id [16]byte
	p  int32
}

// cmember is a consumer group member (Kafka's ConsumerGroupMember).
type cmember struct {
	id string
	// From the member metadata record.
	instance, rack   *string
	clientID         string
	clientHost       string
	topics           []string // sorted
	regex            string
	rebalanceTimeout int32 // ms
	assignor         string

	// From the current assignment record.
	epoch, prevEpoch int32
	state            memberState
	assigned         tps
	revoking         tps

	// Soft state: the session deadline (and the deadline its timer is
	// armed for), and the revocation deadline with the epoch it is for.
	expireAt, armedAt time.Time
	revokeBy          time.Time
	revokeEpoch       int32
}

// cgroup is a consumer group's KIP-848 state.
type cgroup struct {
	epoch       int32
	metaHash    uint64
	targetEpoch int32
	targetTime  int64 // Unix ms the assignor last ran
	members     map[string]*cmember
	static      map[string]string // instance id → member id
	target      map[string]tps
	// owners is Kafka's currentPartitionEpoch: the epoch of the member
	// that owns (or is revoking) each partition.
	owners map[tp]int32

	// hashAt is the catalog version metaHash was last checked against
	// (soft).
	hashAt uint64
}

func newCgroup() *cgroup {
	return &cgroup{
		members: map[string]*cmember{},
		static:  map[string]string{},
		target:  map[string]tps{},
		owners:  map[tp]int32{},
	}
}

// state derives the group state, as Kafka's ConsumerGroup: it is never
// stored.
func (cg *cgroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.targetEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.state != memberStable || m.epoch != cg.targetEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (cg *cgroup) sortedMembers() []*cmember {
	out := make([]*cmember, 0, len(cg.members))
	for _, id := range sortedKeys(cg.members) {
		out = append(out, cg.members[id])
	}
	return out
}

// release forgets m's ownership of its partitions.
func (cg *cgroup) release(m *cmember) {
	for _, a := range []tps{m.assigned, m.revoking} {
		for id, ps := range a {
			for _, p := range ps {
				delete(cg.owners, tp{id, p})
			}
		}
	}
}

// own records m's ownership of its partitions at its epoch.
func (cg *cgroup) own(m *cmember) {
	for _, a := range []tps{m.assigned, m.revoking} {
		for id, ps := range a {
			for _, p := range ps {
				cg.owners[tp{id, p}] = m.epoch
			}
		}
	}
}

// subscribedTopics resolves every member's subscription against the
// catalog: topic names and regex matches.
func (cg *cgroup) subscribedTopics(cat *machine.Catalog) map[string]bool {
	out := map[string]bool{}
	for _, m := range cg.members {
		for _, t := range m.subscription(cat) {
			out[t] = true
		}
	}
	return out
}

// subscription is the member's topics: its names, plus the catalog's
// topics its regex matches, sorted and without duplicates.
func (m *cmember) subscription(cat *machine.Catalog) []string {
	if m.regex == "" || cat == nil {
		return m.topics
	}
	re, err := regexp.Compile(m.regex)
	if err != nil {
		return m.topics
	}
	out := slices.Clone(m.topics)
	for _, n := range cat.Names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// metadataHash summarises the subscribed topics that exist: names, ids and
// partition counts. It changes when a subscribed topic is created,
// deleted, re-created or grows: what bumps the group epoch in Kafka.
func metadataHash(topics map[string]bool, cat *machine.Catalog) uint64 {
	h := fnv.New64a()
	for _, n := range sortedKeys(topics) {
		if cat == nil {
			break
		}
		t, ok := cat.ByName[n]
		if !ok {
			continue
		}
		fmt.Fprintf(h, "%s\x00%x\x00%d\x00", n, t.ID, t.Partitions)
	}
	return h.Sum64()
}

// Record keys.

func (mc *Machine) memberKey(kind record.Kind, group, member string) []byte {
	return record.MemberKey{GroupKey: mc.groupKey(group), Kind: kind, Member: member}.Key()
}

// emit writes a consumer group record and applies it: the one way a
// consumer group's durable state changes.
func (mc *Machine) emit(key, value []byte) {
	mc.write(key, value)
	if err := mc.applyConsumer(key, value); err != nil {
		panic(fmt.Sprintf("groups: applying a record the machine made: %v", err))
	}
}

func (mc *Machine) emitGroupEpoch(g *group) {
	v := record.ConsumerGroup{ID: g.id, Epoch: g.cg.epoch, MetadataHash: g.cg.metaHash}
	mc.emit(mc.groupKey(g.name).KindKey(record.KindConsumerGroup), v.Encode())
}

func (mc *Machine) emitMember(g *group, m *cmember) {
	v := record.ConsumerMember{
		InstanceID: m.instance, RackID: m.rack, ClientID: m.clientID, ClientHost: m.clientHost,
		Topics: m.topics, Regex: m.regex, RebalanceTimeout: m.rebalanceTimeout, Assignor: m.assignor,
	}
	mc.emit(mc.memberKey(record.KindConsumerMember, g.name, m.id), v.Encode())
}

func (mc *Machine) emitTarget(g *group, id string, a tps) {
	mc.emit(mc.memberKey(record.KindConsumerTarget, g.name, id), record.ConsumerTarget{Topics: a.records()}.Encode())
}

func (mc *Machine) emitTargetEpoch(g *group, epoch int32, at int64) {
	v := record.ConsumerTargetEpoch{Epoch: epoch, Timestamp: at}
	mc.emit(mc.groupKey(g.name).KindKey(record.KindConsumerTargetEpoch), v.Encode())
}

// emitRemoveMember writes a member's tombstones in Kafka's order: current
// assignment, target, metadata.
func (mc *Machine) emitRemoveMember(g *group, id string) {
	mc.emit(mc.memberKey(record.KindConsumerCurrent, g.name, id), nil)
	mc.emit(mc.memberKey(record.KindConsumerTarget, g.name, id), nil)
	mc.emit(mc.memberKey(record.KindConsumerMember, g.name, id), nil)
}

// emitRemoveGroup writes the tombstones of the whole consumer group (not
// its offsets): members, target epoch, group epoch.
func (mc *Machine) emitRemoveGroup(g *group) {
	for _, id := range sortedKeys(g.cg.members) {
		mc.emitRemoveMember(g, id)
	}
	for _, id := range sortedKeys(g.cg.target) {
		mc.emit(mc.memberKey(record.KindConsumerTarget, g.name, id), nil)
	}
	mc.emit(mc.groupKey(g.name).KindKey(record.KindConsumerTargetEpoch), nil)
	mc.emit(mc.groupKey(g.name).KindKey(record.KindConsumerGroup), nil)
}

// isConsumerKind reports whether kind is a KIP-848 record.
func isConsumerKind(kind record.Kind) bool {
	switch kind {
	case record.KindConsumerGroup, record.KindConsumerMember, record.KindConsumerTargetEpoch,
		record.KindConsumerTarget, record.KindConsumerCurrent:
		return true
	}
	return false
}

// applyConsumer applies a KIP-848 record, live or at load.
func (mc *Machine) applyConsumer(key, value []byte) error {
	kind, k, err := record.ParseKey(key)
	if err != nil {
		return err
	}
	switch kind {
	case record.KindConsumerGroup:
		gk := k.(record.GroupKey)
		g := mc.groups[gk.Group]
		if value == nil {
			if g != nil && g.cg != nil {
				g.cg = nil
				if len(g.offsets) == 0 && g.protocolType == "" && len(g.members) == 0 {
					delete(mc.groups, gk.Group)
				}
			}
			return nil
		}
		v, err := record.DecodeConsumerGroup(value)
		if err != nil {
			return fmt.Errorf("consumer group %q: %w", gk.Group, err)
		}
		if g == nil {
			g = newGroup(gk.Group, v.ID, time.Time{})
			mc.groups[gk.Group] = g
		}
		g.durable = true
		g.id = v.ID
		if g.cg == nil {
			g.cg = newCgroup()
		}
		g.cg.epoch, g.cg.metaHash = v.Epoch, v.MetadataHash
		return nil
	case record.KindConsumerTargetEpoch:
		gk := k.(record.GroupKey)
		cg := mc.cgroupFor(gk.Group)
		if cg == nil {
			return nil
		}
		if value == nil {
			cg.targetEpoch, cg.targetTime = 0, 0
			return nil
		}
		v, err := record.DecodeConsumerTargetEpoch(value)
		if err != nil {
			return fmt.Errorf("consumer group %q target epoch: %w", gk.Group, err)
		}
		cg.targetEpoch, cg.targetTime = v.Epoch, v.Timestamp
		return nil
	}
	mk := k.(record.MemberKey)
	cg := mc.cgroupFor(mk.Group)
	if cg == nil {
		// The group's tombstone came first (a deleted group): nothing
		// to apply to.
		return nil
	}
	switch kind {
	case record.KindConsumerMember:
		m := cg.members[mk.Member]
		if value == nil {
			if m != nil {
				cg.release(m)
				if m.instance != nil && cg.static[*m.instance] == m.id {
					delete(cg.static, *m.instance)
				}
				delete(cg.members, mk.Member)
			}
			return nil
		}
		v, err := record.DecodeConsumerMember(value)
		if err != nil {
			return fmt.Errorf("consumer member %q/%q: %w", mk.Group, mk.Member, err)
		}
		if m == nil {
			m = &cmember{id: mk.Member, assigned: tps{}, revoking: tps{}}
			cg.members[mk.Member] = m
		}
		if m.instance != nil && cg.static[*m.instance] == m.id {
			delete(cg.static, *m.instance)
		}
		m.instance, m.rack, m.clientID, m.clientHost = v.InstanceID, v.RackID, v.ClientID, v.ClientHost
		m.topics, m.regex, m.rebalanceTimeout, m.assignor = v.Topics, v.Regex, v.RebalanceTimeout, v.Assignor
		if m.instance != nil {
			cg.static[*m.instance] = m.id
		}
	case record.KindConsumerTarget:
		if value == nil {
			delete(cg.target, mk.Member)
			return nil
		}
		v, err := record.DecodeConsumerTarget(value)
		if err != nil {
			return fmt.Errorf("consumer target %q/%q: %w", mk.Group, mk.Member, err)
		}
		cg.target[mk.Member] = tpsOf(v.Topics)
	case record.KindConsumerCurrent:
		m := cg.members[mk.Member]
		if value == nil {
			if m != nil {
				cg.release(m)
				m.epoch, m.prevEpoch, m.state = leaveEpoch, leaveEpoch, memberStable
				m.assigned, m.revoking = tps{}, tps{}
			}
			return nil
		}
		v, err := record.DecodeConsumerCurrent(value)
		if err != nil {
			return fmt.Errorf("consumer current %q/%q: %w", mk.Group, mk.Member, err)
		}
		if m == nil {
			m = &cmember{id: mk.Member}
			cg.members[mk.Member] = m
		}
		cg.release(m)
		m.epoch, m.prevEpoch, m.state = v.MemberEpoch, v.PreviousMemberEpoch, memberState(v.State)
		m.assigned, m.revoking = tpsOf(v.Assigned), tpsOf(v.Revoking)
		cg.own(m)
	}
	return nil
}

func (mc *Machine) cgroupFor(name string) *cgroup {
	if g := mc.groups[name]; g != nil {
		return g.cg
	}
	return nil
}
