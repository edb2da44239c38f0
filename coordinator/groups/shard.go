// Package groups is the pure state machine of one group-coordinator shard
// (Kafka's GroupCoordinatorShard): the groups whose ids hash to the shard,
// whatever their type, with their committed offsets. It is a dispatcher:
// it keeps the registry by (tenant, group) of each group's type and cgp_
// id, and routes every record, timer and request to the type that owns the
// group; the rules of each type are in a package of their own.
// docs/kafka-classic-groups.md is the reference for the classic protocol;
// its section numbers (§) are cited in comments.
//
// Where to find what:
//   - shard.go: the Shard, its replay, load, timers, dispatch and output,
//     each routed by record kind, timer kind or the group's type;
//     registry.go: its view of the registry, which package grouptype keeps
//     with the Host every type shares (records, timers, replies, events,
//     catalogs, ids, tenant limits).
//   - api.go and one file per Kafka API key (08_offset_commit.go …
//     69_consumer_group_describe.go): each API's versions, routing,
//     splitting and merging, error response, and handler, which routes
//     the request to the type that owns the group.
//   - package classic: the classic protocol (JoinGroup, SyncGroup,
//     Heartbeat, LeaveGroup: the join barrier, rebalances, static
//     members; simple groups; the classic record).
//   - package consumer: the consumer protocol (KIP-848: its records,
//     ConsumerGroupHeartbeat, target assignment, reconciliation).
//   - package migration: the online conversions between the two, and the
//     classic members inside a consumer group.
//   - package share: KIP-932 share groups (their records,
//     ShareGroupHeartbeat, the simple assignor's target assignment,
//     ShareGroupDescribe); share_state.go: what the share-partition
//     state's host asks of them.
//   - package offsets: the committed and transactional offsets and their
//     APIs; offsets.go answers offsets.Groups from the group's type;
//     txn_offsets.go ends transactions; retention.go runs the expiry
//     sweep, each type deciding what expires; inspect.go: the summaries
//     the admin views read.
//
// Adding a group type is a package beside classic and consumer (importing
// grouptype only) and its registrations here: its record kinds in Replay,
// its part in Loaded, Check, the sweep, inspect, offsets.go and the admin
// APIs, its timer kinds in Fire, its APIs' files.
//
// A Shard is driven by the coordinator runtime one event at a time:
// (state, request, now) in; records, replies, timer changes and group
// events out. It, and every group type's package, must not do I/O, read
// a clock, log, start goroutines or take locks; randomness (member and
// group ids) comes from a generator seeded through Config, so a run is
// reproducible from its seed.
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
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups/classic"
	"github.com/cohort-dev/cohort/coordinator/groups/consumer"
	"github.com/cohort-dev/cohort/coordinator/groups/grouptype"
	"github.com/cohort-dev/cohort/coordinator/groups/migration"
	"github.com/cohort-dev/cohort/coordinator/groups/offsets"
	"github.com/cohort-dev/cohort/coordinator/groups/share"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures a Shard (grouptype.Config: every group type reads
// it).
type Config = grouptype.Config

// MigrationPolicy is Kafka's group.consumer.migration.policy
// (grouptype.MigrationPolicy; package migration applies it).
type MigrationPolicy = grouptype.MigrationPolicy

// The policies.
const (
	MigrateBidirectional = grouptype.MigrateBidirectional
	MigrateUpgrade       = grouptype.MigrateUpgrade
	MigrateDowngrade     = grouptype.MigrateDowngrade
	MigrateDisabled      = grouptype.MigrateDisabled
)

// ParseMigrationPolicy parses a policy, case-insensitively as Kafka.
func ParseMigrationPolicy(s string) (MigrationPolicy, error) {
	return grouptype.ParseMigrationPolicy(s)
}

// Shard is one shard's groups. It implements machine.Machine.
type Shard struct {
	// h is the shard's state that is no group type's own (the registry,
	// the catalogs, the id generator, the offsets) and the output of the
	// event being handled; every group type shares it.
	h    *grouptype.Host
	cfg  *Config
	offs *offsets.Book
	// inspectToken is the Token of the last InspectCmd that asked for
	// changes (inspect.go).
	inspectToken uint64
	// inspectOffs builds the Offsets of the summaries inspect reads.
	inspectOffs offsetsBuilder
	// due is the retention sweep's index of the groups by their next
	// expiry (retention.go).
	due sweepIndex
	// lastOffsetKey is the last offset record's key Replay parsed, whose
	// names the next one's parse reuses (record.ParseOffsetKeyAfter).
	lastOffsetKey record.OffsetKey

	// The group types, and the migration between them.
	classic   *classic.Type
	consumer  *consumer.Type
	migration *migration.Type
	share     *share.Type
}

// New returns an empty shard.
func New(cfg Config) *Shard {
	s := &Shard{}
	s.h = grouptype.NewHost(cfg, s.Replay)
	s.cfg, s.offs = &s.h.Cfg, s.h.Offs
	s.inspectOffs = newOffsetsBuilder()
	s.classic = classic.New(s.h)
	s.migration = migration.New(s.h, s.classic)
	s.consumer = s.migration.Consumer()
	s.share = share.New(s.h)
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
	if len(r.Key) > 3 && record.Kind(r.Key[3]) == record.KindOffset {
		// Most records are offsets: parsed without ParseKey's interface.
		k, err := record.ParseOffsetKeyAfter(r.Key, &s.lastOffsetKey)
		if err != nil {
			return err
		}
		s.lastOffsetKey = k
		s.h.Replayed()
		return s.replayOffset(k, r.Value)
	}
	kind, key, err := record.ParseKey(r.Key)
	if err != nil {
		return err
	}
	if kind == record.KindOffsetsTopic {
		// The reservation of the shard's __consumer_offsets offsets
		// (grouptype.Reserver).
		if r.Value == nil {
			return fmt.Errorf("groups: a tombstone of the offsets topic's reservation")
		}
		return s.h.Reserve.Replay(r.Value)
	}
	s.h.Replayed()
	switch {
	case kind == record.KindOffset:
		return s.replayOffset(key.(record.OffsetKey), r.Value)
	case kind == record.KindClassicGroup:
		return s.classic.Replay(key.(record.GroupKey), r.Value)
	case consumer.IsKind(kind):
		return s.consumer.Replay(kind, key, r.Value)
	case share.IsKind(kind):
		return s.share.Replay(kind, key, r.Value)
	case kind == record.KindTxnOffset:
		return s.offs.ReplayPending(key.(record.TxnOffsetKey), r.Value)
	}
	return fmt.Errorf("groups: record kind %d is not a group coordinator's", kind)
}

// Loaded derives every group's soft state from its durable state (as
// Kafka does on coordinator load): classic groups become Stable or Empty
// with fresh session timers, consumer members get fresh session and
// revocation timers, share members fresh session timers, groups known
// only by their offsets become simple groups; and the retention sweep is
// scheduled.
func (s *Shard) Loaded(now time.Time) machine.Output {
	for _, g := range s.sortedGroups() {
		switch p := g.Part.(type) {
		case *consumer.Group:
			s.consumer.Loaded(p, now)
		case *classic.Group:
			s.classic.Loaded(p, now)
		case *share.Group:
			s.share.Loaded(p, now)
		case nil:
			// As Kafka's OffsetMetadataManager.replay: offsets of a group
			// with no record make a simple group.
			classic.NewGroup(g, now)
		}
	}
	s.h.SetLoaded()
	s.h.TouchAll()
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
	// ReserveCmd: the shard's __consumer_offsets partition showed
	// Records records again for a reader it woke; the shard's
	// reservations must cover their offsets too (grouptype.Reserver's
	// Add).
	ReserveCmd struct {
		Records int64
	}
)

// Handle serves one request.
func (s *Shard) Handle(now time.Time, req machine.Request) machine.Output {
	s.h.NoteCatalog(req.Tenant, req.Topics)
	switch c := req.Cmd.(type) {
	case DeleteTopicsCmd:
		s.offs.DeleteTopics(c.Tenant, c.Topics)
		s.h.Out.Replies = append(s.h.Out.Replies, machine.Reply{To: req.ID})
		return s.flush()
	case ReconcileTopicsCmd:
		s.offs.Reconcile(c.Live)
		s.h.Out.Replies = append(s.h.Out.Replies, machine.Reply{To: req.ID})
		return s.flush()
	case ReserveCmd:
		s.h.Reserve.Add(c.Records)
		s.h.Out.Replies = append(s.h.Out.Replies, machine.Reply{To: req.ID})
		return s.flush()
	case InspectCmd:
		var out any
		if c.Token != 0 && c.Only == nil {
			out = s.inspectDelta(c)
		} else {
			out = s.inspect(c.Only)
		}
		s.h.Out.Replies = append(s.h.Out.Replies, machine.Reply{To: req.ID, Out: out})
		return s.flush()
	case shareCmd: // share_state.go
		s.h.Out.Replies = append(s.h.Out.Replies, machine.Reply{To: req.ID, Out: c.serve(s, now)})
		return s.flush()
	case TxnEndCmd:
		s.txnEnd(now, c)
		s.h.Out.Replies = append(s.h.Out.Replies, machine.Reply{To: req.ID, Out: TxnEnded{}, Early: c.Early})
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

// catalog is the newest topic catalog of tenant, nil if no request of
// the tenant brought one.
func (s *Shard) catalog(tenant string) *machine.Catalog { return s.h.Catalog(tenant) }

// Fire runs a timer.
func (s *Shard) Fire(now time.Time, key string) machine.Output {
	if key == timerRetention {
		s.sweep(now)
		s.timer(timerRetention, now.Add(s.cfg.RetentionCheck))
		return s.flush()
	}
	kind, k, mid, ok := grouptype.ParseTimer(key)
	g := s.h.Get(k)
	if !ok || g == nil {
		return s.flush()
	}
	switch kind {
	case classic.TimerJoin, classic.TimerSync, classic.TimerMember:
		if c := classic.Of(g); c != nil {
			s.classic.Fire(c, kind, mid, now)
		}
	case consumer.TimerSession, consumer.TimerRevoke, consumer.TimerClassicJoin, consumer.TimerClassicSync:
		if c := consumer.Of(g); c != nil {
			s.consumer.Fire(c, kind, mid, now)
		}
	case share.TimerSession:
		if c := share.Of(g); c != nil {
			s.share.Fire(c, kind, mid, now)
		}
	}
	return s.flush()
}

// flush returns the output gathered for the current event.
func (s *Shard) flush() machine.Output { return s.h.Flush() }

func (s *Shard) reply(to machine.RequestID, resp kmsg.Response) { s.h.Reply(to, resp) }

func (s *Shard) timer(key string, at time.Time) { s.h.Timer(key, at) }

// DurableState renders everything replay builds, in a stable order: each
// group's id, offsets, committed classic record, consumer or share
// records; the share-partition state each share group name may hold.
func (s *Shard) DurableState() string {
	var b strings.Builder
	for _, g := range s.sortedGroups() {
		parts := s.offs.Durable(g.Off())
		if g.Part != nil {
			parts = append(parts, g.Part.DurableState()...)
		}
		if len(parts) == 0 {
			continue // soft only: not durably there
		}
		fmt.Fprintf(&b, "group %q/%q id=%s\n", g.Tenant, g.Name, g.ID)
		for _, p := range parts {
			b.WriteString(p)
			b.WriteByte('\n')
		}
	}
	b.WriteString(s.offs.PendingState())
	b.WriteString(s.share.PartitionsState())
	if r := s.h.Reserve.Reserved; r != 0 {
		fmt.Fprintf(&b, "offsets topic reserved=%d\n", r)
	}
	return b.String()
}

// Check reports a broken invariant that only the live state can show: a
// classic group at rest (Stable or Empty, no rebalance under way) whose
// members, generation, protocol, leader or assignments differ from its
// committed record, which would mean a handler changed them without
// writing the record; a share group whose epochs or targets disagree;
// a group whose state a Summary has no GroupState for. Tests call it
// after every step.
func (s *Shard) Check() error {
	if err := s.checkDue(); err != nil {
		return err
	}
	if err := s.checkTouched(); err != nil {
		return err
	}
	for _, g := range s.sortedGroups() {
		var err error
		var state string
		switch p := g.Part.(type) {
		case *classic.Group:
			err, state = p.CheckAtRest(), p.State.String()
		case *consumer.Group:
			state = p.State()
		case *share.Group:
			err, state = p.Check(), p.State()
		}
		if _, ok := stateOf(state); err == nil && state != "" && !ok {
			err = fmt.Errorf("state %q has no GroupState: the group's summary would show none", state)
		}
		if err != nil {
			return fmt.Errorf("group %q/%q: %w", g.Tenant, g.Name, err)
		}
	}
	return nil
}
