// Package groups is the pure state machine of one coordinator shard: the
// classic consumer-group protocol (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup), committed offsets and the group admin APIs, as Apache
// Kafka's GroupMetadataManager, ClassicGroup and OffsetMetadataManager
// implement them. docs/kafka-classic-groups.md is the reference; its
// section numbers (§) are cited in comments.
//
// A Machine is driven by the coordinator runtime one event at a time:
// (state, request, now) in; records, replies and timer changes out. It
// must not do I/O, read a clock, log, start goroutines or take locks;
// randomness (member and group ids) comes from a generator seeded through
// Config, so a run is reproducible from its seed.
//
// Durable state is records (package record): a group's classic record
// (written when a generation's assignment is stored, when the group
// empties, when it is created) and one record per committed offset. Live
// handling mutates the group and emits its record; loading replays the
// records. Offsets are applied by replay in both cases.
package groups

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures a Machine. All fields are required (the coordinator
// fills Kafka's defaults).
type Config struct {
	Shard  uint16
	Tenant string
	// Seed seeds the generator of member and group ids.
	Seed [32]byte

	MinSessionTimeout, MaxSessionTimeout time.Duration
	MaxSize                              int
	// MaxPendingMembers caps the ids handed out with MEMBER_ID_REQUIRED
	// and not yet used, per group (0: no cap); see coordinator.Config.
	MaxPendingMembers int
	// InitialDelay and InitialQuiet: see coordinator.Config. Quiet is at
	// most Delay.
	InitialDelay, InitialQuiet time.Duration
	OffsetMetadataMaxBytes     int
	Retention, RetentionCheck  time.Duration

	// KIP-848 consumer groups: the session timeout and heartbeat interval
	// the coordinator gives members, the least time between two target
	// assignment computations, the most members (0: no limit), and the
	// server assignors (the first is the default).
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	AssignmentInterval        time.Duration
	ConsumerMaxSize           int
	Assignors                 []assign.Assignor
}

// newMemberJoinTimeout is how long a new member has to complete its
// first join (Kafka's fixed CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS).
const newMemberJoinTimeout = 5 * time.Minute

// Machine is one shard's groups. It implements machine.Machine.
type Machine struct {
	cfg     Config
	rng     *rand.ChaCha8
	groups  map[string]*group
	loading bool
	// catalog is the newest topic catalog a request brought.
	catalog *machine.Catalog

	out machine.Output // the output of the event being handled
}

// New returns an empty machine.
func New(cfg Config) *Machine {
	return &Machine{
		cfg:     cfg,
		rng:     rand.NewChaCha8(cfg.Seed),
		groups:  map[string]*group{},
		loading: true,
	}
}

var _ machine.Machine = (*Machine)(nil)

// Timer keys. A member's key is "m", the group name's length, ":", the
// group name and the member id, so that any group name parses back.
const (
	timerRetention = "r"
	timerJoin      = 'j'
	timerSync      = 's'
	timerMember    = 'm'
)

func groupTimer(kind byte, g string) string {
	return string(kind) + strconv.Itoa(len(g)) + ":" + g
}

func memberTimer(g, m string) string { return groupTimer(timerMember, g) + m }

// parseTimer splits a group or member timer key.
func parseTimer(key string) (kind byte, g, m string, ok bool) {
	if len(key) < 3 {
		return 0, "", "", false
	}
	kind = key[0]
	n, rest, found := strings.Cut(key[1:], ":")
	l, err := strconv.Atoi(n)
	if !found || err != nil || l < 0 || l > len(rest) {
		return 0, "", "", false
	}
	return kind, rest[:l], rest[l:], true
}

// Replay applies a stored record.
func (mc *Machine) Replay(r machine.Record) error {
	kind, key, err := record.ParseKey(r.Key)
	if err != nil {
		return err
	}
	if isConsumerKind(kind) {
		if !mc.loading {
			return nil // applied when emitted
		}
		return mc.applyConsumer(r.Key, r.Value)
	}
	switch kind {
	case record.KindOffset:
		k := key.(record.OffsetKey)
		return mc.replayOffset(k, r.Value)
	case record.KindClassicGroup:
		if !mc.loading {
			// Live, the handler has already changed the group; the
			// record is its durable image.
			return nil
		}
		k := key.(record.GroupKey)
		if r.Value == nil {
			delete(mc.groups, k.Group)
			return nil
		}
		v, err := record.DecodeClassicGroup(r.Value)
		if err != nil {
			return fmt.Errorf("group %q: %w", k.Group, err)
		}
		mc.loadGroup(k.Group, v)
	}
	return nil
}

func (mc *Machine) replayOffset(k record.OffsetKey, v []byte) error {
	g := mc.groups[k.Group]
	if v == nil {
		if g != nil {
			if ps := g.offsets[k.Topic]; ps != nil {
				delete(ps, k.Partition)
				if len(ps) == 0 {
					delete(g.offsets, k.Topic)
				}
			}
		}
		return nil
	}
	o, err := record.DecodeOffset(v)
	if err != nil {
		return fmt.Errorf("offset %s/%s/%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	if g == nil {
		// As Kafka's OffsetMetadataManager.replay: an offset of a group
		// that does not exist creates a simple group. Records sort by
		// kind, so a classic record (kind 2) loads after its offsets
		// (kind 1) and fills the group in.
		g = newGroup(k.Group, "", time.UnixMilli(o.CommitTimestamp))
		g.durable = true
		mc.groups[k.Group] = g
	}
	ps := g.offsets[k.Topic]
	if ps == nil {
		ps = map[int32]*offset{}
		g.offsets[k.Topic] = ps
	}
	ps[k.Partition] = &offset{Offset: o}
	return nil
}

// loadGroup restores a group from its record (§18.3): with members it is
// Stable, without it is Empty.
func (mc *Machine) loadGroup(name string, v record.ClassicGroup) {
	old := mc.groups[name]
	g := newGroup(name, v.ID, time.UnixMilli(v.StateTimestamp))
	g.durable = true
	if old != nil {
		g.offsets = old.offsets
	}
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	for _, rm := range v.Members {
		m := &member{
			id:               rm.MemberID,
			instance:         rm.InstanceID,
			clientID:         rm.ClientID,
			clientHost:       rm.ClientHost,
			rebalanceTimeout: rm.RebalanceTimeout,
			sessionTimeout:   rm.SessionTimeout,
			protocolType:     v.ProtocolType,
			protocols:        []protocol{{name: g.protocol, meta: rm.Subscription}},
			assignment:       rm.Assignment,
		}
		if m.rebalanceTimeout < 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[m.id] = m
		if m.instance != nil {
			g.static[*m.instance] = m.id
		}
		g.countProtocols(m, 1)
	}
	if len(g.members) > 0 {
		g.state, g.prevState = stable, empty
	}
	g.computeSubscribed()
	mc.groups[name] = g
}

// Loaded arms every loaded member's session timer afresh (as Kafka on
// coordinator load), starts a rebalance in groups over the size limit,
// and schedules the retention sweep.
func (mc *Machine) Loaded(now time.Time) machine.Output {
	mc.loading = false
	for _, name := range mc.sortedGroupNames() {
		g := mc.groups[name]
		for _, m := range g.sortedMembers() {
			mc.armSession(g, m, now, time.Duration(m.sessionTimeout)*time.Millisecond)
		}
		if len(g.members) > mc.cfg.MaxSize {
			mc.prepareRebalance(g, now)
		}
		if g.cg != nil {
			for _, m := range g.cg.sortedMembers() {
				mc.armConsumerSession(g, m, now)
				mc.armRevocation(g, m, now)
			}
		}
	}
	mc.timer(timerRetention, now.Add(mc.cfg.RetentionCheck))
	return mc.flush()
}

// Handle serves one request.
func (mc *Machine) Handle(now time.Time, req machine.Request) machine.Output {
	if req.Msg == nil && req.LiveTopics != nil {
		mc.reconcileTopics(req.LiveTopics)
		mc.reply(req.ID, nil)
		return mc.flush()
	}
	if req.Msg == nil {
		mc.topicsDeleted(req.DeletedTopics)
		mc.reply(req.ID, nil)
		return mc.flush()
	}
	switch r := req.Msg.(type) {
	case *kmsg.JoinGroupRequest:
		mc.joinGroup(now, req, r)
	case *kmsg.SyncGroupRequest:
		mc.syncGroup(now, req, r)
	case *kmsg.HeartbeatRequest:
		mc.heartbeat(now, req, r)
	case *kmsg.LeaveGroupRequest:
		mc.leaveGroup(now, req, r)
	case *kmsg.OffsetCommitRequest:
		mc.offsetCommit(now, req, r, req.TopicIDs)
	case *kmsg.OffsetFetchRequest:
		mc.offsetFetch(req, r)
	case *kmsg.OffsetDeleteRequest:
		mc.offsetDelete(now, req, r)
	case *kmsg.DescribeGroupsRequest:
		mc.describeGroups(req, r)
	case *kmsg.ListGroupsRequest:
		mc.listGroups(req, r)
	case *kmsg.DeleteGroupsRequest:
		mc.deleteGroups(req, r)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		mc.consumerHeartbeat(now, req, r)
	case *kmsg.ConsumerGroupDescribeRequest:
		mc.consumerDescribe(req, r)
	default:
		resp := req.Msg.ResponseKind()
		if e, ok := resp.(interface{ SetErrorCode(int16) }); ok {
			e.SetErrorCode(kerr.InvalidRequest.Code)
		}
		mc.reply(req.ID, resp)
	}
	return mc.flush()
}

// Fire runs a timer.
func (mc *Machine) Fire(now time.Time, key string) machine.Output {
	if key == timerRetention {
		mc.sweep(now)
		mc.timer(timerRetention, now.Add(mc.cfg.RetentionCheck))
		return mc.flush()
	}
	kind, name, mid, ok := parseTimer(key)
	g := mc.groups[name]
	if !ok || g == nil {
		return mc.flush()
	}
	switch kind {
	case timerJoin:
		mc.joinTimer(g, now)
	case timerSync:
		mc.syncTimer(g, now)
	case timerMember:
		mc.memberTimer(g, mid, now)
	case timerConsumerSession, timerConsumerRevoke:
		mc.consumerTimer(g, kind, mid, now)
	}
	return mc.flush()
}

// flush returns the output gathered for the current event.
func (mc *Machine) flush() machine.Output {
	out := mc.out
	mc.out = machine.Output{}
	return out
}

func (mc *Machine) reply(to machine.RequestID, resp kmsg.Response) {
	mc.out.Replies = append(mc.out.Replies, machine.Reply{To: to, Resp: resp})
}

func (mc *Machine) write(key, value []byte) {
	mc.out.Records = append(mc.out.Records, machine.Record{Key: key, Value: value})
}

func (mc *Machine) timer(key string, at time.Time) {
	mc.out.Timers = append(mc.out.Timers, machine.Timer{Key: key, At: at})
}

func (mc *Machine) groupKey(name string) record.GroupKey {
	return record.GroupKey{Shard: mc.cfg.Shard, Tenant: mc.cfg.Tenant, Group: name}
}

// writeGroup writes the group's record.
func (mc *Machine) writeGroup(g *group, now time.Time) {
	g.durable = true
	mc.write(mc.groupKey(g.name).Key(), g.snapshot(now).Encode())
}

// armSession sets member m's deadline to now+d and makes sure a timer
// will fire by then.
func (mc *Machine) armSession(g *group, m *member, now time.Time, d time.Duration) {
	m.expireAt = now.Add(d)
	if m.armedAt.IsZero() || m.armedAt.After(m.expireAt) {
		m.armedAt = m.expireAt
		mc.timer(memberTimer(g.name, m.id), m.expireAt)
	}
}

// cancelSession forgets member m's deadline.
func (mc *Machine) cancelSession(g *group, m *member) {
	m.expireAt = time.Time{}
	if !m.armedAt.IsZero() {
		m.armedAt = time.Time{}
		mc.timer(memberTimer(g.name, m.id), time.Time{})
	}
}

// newGroup creates and registers a group with a fresh id.
func (mc *Machine) newGroup(name string, now time.Time) *group {
	g := newGroup(name, mc.groupID(now), now)
	mc.groups[name] = g
	return g
}

// groupID mints cgp_<ULID>: 48 bits of Unix milliseconds and 80 random
// bits, in Crockford's base32.
func (mc *Machine) groupID(now time.Time) string {
	var u [16]byte
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		u[i] = byte(ms)
		ms >>= 8
	}
	binary.BigEndian.PutUint64(u[6:], mc.rng.Uint64())
	binary.BigEndian.PutUint16(u[14:], uint16(mc.rng.Uint64()))
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	hi, lo := binary.BigEndian.Uint64(u[:8]), binary.BigEndian.Uint64(u[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = alphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return "cgp_" + string(out[:])
}

// memberID is Kafka's generateMemberId: the client id (or instance id)
// and a random UUID.
func (mc *Machine) memberID(prefix string) string {
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], mc.rng.Uint64())
	binary.BigEndian.PutUint64(u[8:], mc.rng.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(prefix)+37)
	b = append(b, prefix...)
	b = append(b, '-')
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&15])
	}
	return string(b)
}

// sortedKeys returns m's keys in order, so that map order never reaches
// an output.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (mc *Machine) sortedGroupNames() []string { return sortedKeys(mc.groups) }
