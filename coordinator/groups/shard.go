// Package groups is the pure state machine of one group-coordinator shard
// (Kafka's GroupCoordinatorShard): the groups whose ids hash to the shard,
// whatever their protocol, with their committed offsets, as Apache Kafka's
// GroupMetadataManager, ClassicGroup, ConsumerGroup and
// OffsetMetadataManager implement them. docs/kafka-classic-groups.md is the
// reference for the classic protocol; its section numbers (§) are cited in
// comments.
//
// Where to find what:
//   - shard.go: the Shard, its replay, load, dispatch and output;
//     registry.go: the group registry shared by every protocol.
//   - api.go and one file per Kafka API key (08_offset_commit.go …
//     69_consumer_group_describe.go): each API's versions, routing,
//     splitting and merging, error response and handler, in one place.
//   - classic*.go: the classic protocol (JoinGroup, SyncGroup, Heartbeat,
//     LeaveGroup: the join barrier, rebalances, static members).
//   - consumer*.go: the consumer protocol (KIP-848 ConsumerGroupHeartbeat:
//     records, target assignment, reconciliation).
//   - offsets.go: the offset APIs (OffsetCommit, OffsetFetch,
//     OffsetDelete) over the committed offsets, which package offsets
//     keeps (with the pending transactional ones); retention.go: their
//     expiry; admin.go: the group admin APIs.
//   - events.go: the group events (observe.GroupEvent) the handlers
//     report, one helper per protocol.
//
// A Shard is driven by the coordinator runtime one event at a time:
// (state, request, now) in; records, replies, timer changes and group
// events out. It
// must not do I/O, read a clock, log, start goroutines or take locks;
// randomness (member and group ids) comes from a generator seeded through
// Config, so a run is reproducible from its seed.
//
// Durable state is records (package record) and follows the one record
// rule of coordinator/machine: Replay is the only code that changes it,
// live (every record is emitted through the Recorder) or at load. A
// classic group's rebalance in progress is soft state, as in Kafka, where
// a generation becomes durable only with its leader's SyncGroup: its
// committed record is the durable part, and Loaded derives a Stable (or
// Empty) group from it.
package groups

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/assign"
	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures a Shard. All fields are required (the coordinator
// fills Kafka's defaults).
type Config struct {
	Shard uint16
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
	// InitialAdaptive closes the initial barrier after a few times the
	// observed gap between arrivals instead of the whole quiet window
	// (classic_join.go, initialWait); see coordinator.Config.
	InitialAdaptive           bool
	OffsetMetadataMaxBytes    int
	Retention, RetentionCheck time.Duration

	// KIP-848 consumer groups: the session timeout and heartbeat interval
	// the coordinator gives members, the least time between two target
	// assignment computations, the most members (0: no limit), and the
	// server assignors (the first is the default).
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	AssignmentInterval        time.Duration
	ConsumerMaxSize           int
	Assignors                 []assign.Assignor
	// MigrationPolicy: which online conversions of a group with members
	// are allowed (mixed.go); "" is bidirectional.
	MigrationPolicy MigrationPolicy

	// Limits, if set, gives each tenant's limits (its organisation's
	// quotas, limits.go). It is configuration, consulted only for new
	// requests, never on replay. Nil: no per-tenant limits.
	Limits func(tenant string) TenantLimits
	// Counts, if set, is the count of each tenant's groups shared with
	// the coordinator's other shards, for TenantLimits.MaxGroups. Nil:
	// this shard's groups only. The shard publishes to it from Loaded
	// on: a machine that is only replayed (a load under way, or the
	// runtime's invariant check rebuilding one) publishes nothing.
	Counts GroupCounter
}

// Shard is one shard's groups. It implements machine.Machine.
type Shard struct {
	cfg    Config
	rng    *rand.ChaCha8
	groups map[gkey]*group
	// tenantGroups counts each tenant's entries in groups (limits.go).
	tenantGroups map[string]int
	// catalogs are the newest topic catalog a request brought, by
	// tenant: each organisation has its own topics, by the names its
	// clients know them by.
	catalogs map[string]*machine.Catalog
	// offs is the committed offsets and the transactional offsets not
	// yet committed or aborted.
	offs *offsets.Book
	// loaded: Loaded has run, so the shard serves and publishes its
	// group counts (Config.Counts).
	loaded bool

	// The output of the event being handled.
	rec machine.Recorder
	out machine.Output
}

// New returns an empty shard.
func New(cfg Config) *Shard {
	s := &Shard{
		cfg:    cfg,
		rng:    rand.NewChaCha8(cfg.Seed),
		groups: map[gkey]*group{},

		tenantGroups: map[string]int{},
	}
	s.rec.Replay = s.Replay
	s.offs = offsets.New(cfg.Shard, &s.rec)
	return s
}

var (
	_ machine.Machine = (*Shard)(nil)
	_ machine.Durable = (*Shard)(nil)
)

// timerRetention is the shard's retention sweep.
const timerRetention = "r"

// Replay applies a record: the only code that changes durable state.
func (s *Shard) Replay(r machine.Record) error {
	kind, key, err := record.ParseKey(r.Key)
	if err != nil {
		return err
	}
	switch {
	case kind == record.KindOffset:
		return s.replayOffset(key.(record.OffsetKey), r.Value)
	case kind == record.KindClassicGroup:
		return s.replayClassic(key.(record.GroupKey), r.Value)
	case isConsumerKind(kind):
		return s.replayConsumer(kind, key, r.Value)
	case kind == record.KindTxnOffset:
		return s.offs.ReplayPending(key.(record.TxnOffsetKey), r.Value)
	case kind == record.KindOffsetsTopic:
		// The runtime's record of the shard's __consumer_offsets
		// partition (package offsetstopic), not group state; a runtime
		// serving the partition never hands it over.
		return nil
	}
	return fmt.Errorf("groups: record kind %d is not a group coordinator's", kind)
}

// Loaded derives every group's soft state from its durable state (as
// Kafka does on coordinator load): classic groups become Stable or Empty
// with fresh session timers, consumer members get fresh session and
// revocation timers, groups known only by their offsets become simple
// groups; and the retention sweep is scheduled.
func (s *Shard) Loaded(now time.Time) machine.Output {
	for _, g := range s.sortedGroups() {
		switch {
		case g.consumer != nil:
			s.loadedConsumer(g.consumer, now)
		case g.classic != nil:
			s.loadedClassic(g.classic, now)
		default:
			// As Kafka's OffsetMetadataManager.replay: offsets of a group
			// with no record make a simple group.
			g.classic = newClassicGroup(g, now)
		}
	}
	s.loaded = true
	if s.cfg.Counts != nil {
		for tenant, n := range s.tenantGroups {
			s.cfg.Counts.Set(s.cfg.Shard, tenant, n)
		}
	}
	s.timer(timerRetention, now.Add(s.cfg.RetentionCheck))
	return s.flush()
}

// Commands a coordinator hands the shard (machine.Request.Cmd): the
// broker's topic changes, each answered with a Reply whose Out is nil, and
// InspectCmd (inspect.go).
type (
	// DeleteTopicsCmd: the broker deleted these topics of Tenant; the
	// offsets of them of every group of Tenant go, as Kafka's
	// OffsetMetadataManager.onPartitionsDeleted. Other tenants' topics of
	// the same names are other topics.
	DeleteTopicsCmd struct {
		Tenant string
		Topics []string
	}
	// ReconcileTopicsCmd: Live is every topic the broker has, by tenant
	// then name, with its id; offsets of any other topic, or of an
	// earlier topic of the same name (a deletion a crash interrupted),
	// are deleted. A tenant Live has no entry for has no topics.
	ReconcileTopicsCmd struct {
		Live map[string]map[string][16]byte
	}
)

// Handle serves one request.
func (s *Shard) Handle(now time.Time, req machine.Request) machine.Output {
	s.noteCatalog(req.Tenant, req.Topics)
	switch c := req.Cmd.(type) {
	case DeleteTopicsCmd:
		s.offs.DeleteTopics(c.Tenant, c.Topics)
		s.out.Replies = append(s.out.Replies, machine.Reply{To: req.ID})
		return s.flush()
	case ReconcileTopicsCmd:
		s.offs.Reconcile(c.Live)
		s.out.Replies = append(s.out.Replies, machine.Reply{To: req.ID})
		return s.flush()
	case InspectCmd:
		s.out.Replies = append(s.out.Replies, machine.Reply{To: req.ID, Out: s.inspect(c.Only)})
		return s.flush()
	case TxnEndCmd:
		s.txnEnd(now, c)
		s.out.Replies = append(s.out.Replies, machine.Reply{To: req.ID, Out: TxnEnded{}, Early: c.Early})
		return s.flush()
	}
	api, ok := apis[kmsg.Key(req.Msg.Key())]
	if !ok {
		resp := req.Msg.ResponseKind()
		resp.SetVersion(req.Msg.GetVersion())
		if e, ok := resp.(interface{ SetErrorCode(int16) }); ok {
			e.SetErrorCode(kerr.InvalidRequest.Code)
		}
		s.reply(req.ID, resp)
		return s.flush()
	}
	api.handle(s, now, req)
	return s.flush()
}

// noteCatalog keeps the newest topic catalog of tenant a request
// brought.
func (s *Shard) noteCatalog(tenant string, c *machine.Catalog) {
	if cur := s.catalogs[tenant]; c != nil && (cur == nil || c.Version >= cur.Version) {
		if s.catalogs == nil {
			s.catalogs = map[string]*machine.Catalog{}
		}
		s.catalogs[tenant] = c
	}
}

// catalog is the newest topic catalog of tenant, nil if no request of
// the tenant brought one.
func (s *Shard) catalog(tenant string) *machine.Catalog { return s.catalogs[tenant] }

// Fire runs a timer.
func (s *Shard) Fire(now time.Time, key string) machine.Output {
	if key == timerRetention {
		s.sweep(now)
		s.timer(timerRetention, now.Add(s.cfg.RetentionCheck))
		return s.flush()
	}
	kind, k, mid, ok := parseTimer(key)
	g := s.groups[k]
	if !ok || g == nil {
		return s.flush()
	}
	switch kind {
	case timerJoin, timerSync, timerMember:
		if g.classic != nil {
			s.classicTimer(g.classic, kind, mid, now)
		}
	case timerConsumerSession, timerConsumerRevoke, timerClassicJoin, timerClassicSync:
		if g.consumer != nil {
			s.consumerTimer(g.consumer, kind, mid, now)
		}
	}
	return s.flush()
}

// flush returns the output gathered for the current event.
func (s *Shard) flush() machine.Output {
	out := s.out
	out.Records = s.rec.Take()
	s.out = machine.Output{}
	return out
}

func (s *Shard) reply(to machine.RequestID, resp kmsg.Response) {
	s.out.Replies = append(s.out.Replies, machine.Reply{To: to, Resp: resp})
}

// emit writes a record and applies it through Replay.
func (s *Shard) emit(key, value []byte) { s.rec.Emit(key, value) }

func (s *Shard) timer(key string, at time.Time) {
	s.out.Timers = append(s.out.Timers, machine.Timer{Key: key, At: at})
}

// DurableState renders everything replay builds, in a stable order: each
// group's id, offsets, committed classic record and consumer records.
func (s *Shard) DurableState() string {
	var b strings.Builder
	for _, g := range s.sortedGroups() {
		parts := s.offs.Durable(g.off())
		if c := g.classic; c != nil && c.committed != nil {
			parts = append(parts, renderClassic(*c.committed)...)
		}
		if c := g.consumer; c != nil {
			parts = append(parts, c.durableState()...)
		}
		if len(parts) == 0 {
			continue // soft only: not durably there
		}
		fmt.Fprintf(&b, "group %q/%q id=%s\n", g.tenant, g.name, g.id)
		for _, p := range parts {
			b.WriteString(p)
			b.WriteByte('\n')
		}
	}
	b.WriteString(s.offs.PendingState())
	return b.String()
}

// Check reports a broken invariant that only the live state can show: a
// classic group at rest (Stable or Empty, no rebalance under way) whose
// members, generation, protocol, leader or assignments differ from its
// committed record, which would mean a handler changed them without
// writing the record. Tests call it after every step.
func (s *Shard) Check() error {
	for _, g := range s.sortedGroups() {
		if c := g.classic; c != nil {
			if err := c.checkAtRest(); err != nil {
				return fmt.Errorf("group %q/%q: %w", g.tenant, g.name, err)
			}
		}
	}
	return nil
}
