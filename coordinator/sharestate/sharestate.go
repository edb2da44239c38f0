// Package sharestate is the pure state machine of one share-state shard:
// the share partitions (KIP-932) whose key falls on the shard, each one
// share group's view of one topic partition — Kafka's SharePartition
// (the share-partition leader's in-flight records) and its durable half,
// the __share_group_state records the share coordinator keeps
// (ShareCoordinatorShard).
//
// Per partition it keeps the share-partition start offset (SPSO), below
// which every record is finished, the end offset (SPEO), the first offset
// never taken into flight, and between them each record's state
// (AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED) and delivery count. A
// ShareFetch is two commands: NextCmd says where to read the log (and
// initialises the partition from share.auto.offset.reset, given the log's
// offsets), AcquireCmd hands over the batches read and acquires records
// for a member under a lock; AckCmd settles them (accept, release,
// reject, gap, renew), ReleaseCmd gives back a departed member's, and a
// lock that expires (a keyed timer per partition) makes its records
// available again, or archives them at the delivery limit. AlterCmd and
// DeleteCmd are the admin's, DescribeCmd the view of a partition.
//
// Like coordinator/txn it is pure: commands and timer firings in, records,
// replies and timer changes out; it reads no clock, does no I/O, starts no
// goroutine and logs nothing. Durable state follows the one record rule
// (coordinator/machine): Replay of record.ShareSnapshot and
// record.ShareUpdate is the only code that changes it. What is durable is
// what Kafka persists (acknowledgements, releases, rejections, the
// delivery counts of records whose lock expired or whose member left,
// archives and the start offset) and, unlike Kafka, every acquisition:
// its records, member, delivery count and deadline, written before the
// fetch that took it is answered. Kafka keeps acquisitions in the memory
// of the partition's leader, which also serves the fetches, so a
// coordinator's failure loses none. Here the shard may be another node's
// than the partition's leader; if a move of the shard lost the locks, a
// member's acknowledgement that its client retried (franz-go retries
// NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS, counting on the lock
// being held) would settle a later delivery of the same records to the
// same member, which the client then sees again after the settlement it
// was told succeeded. A load restores the locks, each until its deadline.
package sharestate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Limits are the group configs that bound a partition's deliveries. A
// zero field is the shard's default (Config.Limits).
type Limits struct {
	// DeliveryLimit is how many times a record is delivered before it
	// is archived (Kafka's share.delivery.count.limit, default 5).
	DeliveryLimit int16
	// LockDuration is how long an acquisition holds its records
	// (share.record.lock.duration.ms, default 30 s).
	LockDuration time.Duration
	// MaxInFlight caps the records between the start and end offsets
	// (group.share.partition.max.record.locks, default 2000).
	MaxInFlight int
	// DeadLetter: the group has a dead-letter topic (KIP-1191's
	// errors.deadletterqueue.topic.name). A record acquired under it
	// that its member rejects, or that reaches the delivery limit, goes
	// ARCHIVING rather than ARCHIVED, and TakeDeadLetters names its
	// partition, until DeadLetteredCmd archives it. No default: false.
	DeadLetter bool
}

// Config configures a Shard.
type Config struct {
	// Shard is the store shard the records are written under
	// (record.ShareStateShardBase + the shard's index).
	Shard uint16
	// Limits are the defaults of the commands' Limits.
	Limits Limits
	// SnapshotEvery is how many updates a partition writes before it
	// writes a snapshot again, so that a load replays at most that many
	// (Kafka's share.coordinator.snapshot.update.records.per.snapshot,
	// default 500). A partition also writes a snapshot when its whole
	// state is smaller than the change.
	SnapshotEvery int
	// MaxPartitions caps the share partitions the shard keeps, so that
	// its memory is bounded (each holds at most Limits.MaxInFlight
	// records' states): a NextCmd or AlterCmd that would make one more
	// is answered GROUP_MAX_SIZE_REACHED, Kafka's answer to a share
	// group over one of its caps (group.share.max.groups), and the
	// partition gets no state. Kafka sets no such cap. Default 100,000.
	MaxPartitions int
}

// WithDefaults fills unset fields with Kafka's defaults.
func (c Config) WithDefaults() Config {
	c.Limits = c.Limits.or(Limits{DeliveryLimit: 5, LockDuration: 30 * time.Second, MaxInFlight: 2000})
	if c.SnapshotEvery <= 0 {
		c.SnapshotEvery = 500
	}
	if c.MaxPartitions <= 0 {
		c.MaxPartitions = 100_000
	}
	return c
}

// or fills l's unset (zero or negative) fields from def.
func (l Limits) or(def Limits) Limits {
	if l.DeliveryLimit <= 0 {
		l.DeliveryLimit = def.DeliveryLimit
	}
	if l.LockDuration <= 0 {
		l.LockDuration = def.LockDuration
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = def.MaxInFlight
	}
	return l
}

// Key names a share partition: a group's view of a topic partition, the
// topic by id (as Kafka's), so that a topic created again under an old
// name starts afresh.
type Key struct {
	Tenant, Group string
	TopicID       [16]byte
	Partition     int32
}

func compareKeys(a, b Key) int {
	return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Group, b.Group),
		slices.Compare(a.TopicID[:], b.TopicID[:]), cmp.Compare(a.Partition, b.Partition))
}

// Reset is share.auto.offset.reset: where a partition with no state
// starts.
type Reset int8

const (
	// ResetLatest starts at the log's end (Kafka's default).
	ResetLatest Reset = iota
	// ResetEarliest starts at the log's start.
	ResetEarliest
	// ResetByDuration starts at the first record no older than the
	// duration: Log.AtTime, which the host looked up.
	ResetByDuration
)

// Log is what the host's log says of a partition when a fetch begins:
// the machine cannot read it.
type Log struct {
	// Start is the log start offset. A start offset below it moves up
	// to it (records deleted by retention or DeleteRecords are gone).
	Start int64
	// Latest is where "latest" starts: the high watermark.
	Latest int64
	// AtTime is, for ResetByDuration, the offset of the first record at
	// or after now minus the duration (ListOffsets by timestamp); -1 if
	// there is none, which starts at Latest.
	AtTime int64
}

// Mode is the acquire mode of ShareFetch v2 (KIP-1206), Kafka's
// ShareAcquireMode ids.
type Mode int8

const (
	// BatchOptimized acquires whole log batches: MaxRecords may be
	// exceeded to finish one.
	BatchOptimized Mode = 0
	// RecordLimit acquires MaxRecords records at most.
	RecordLimit Mode = 1
)

// AckType is an acknowledgement's type, Kafka's ids.
type AckType int8

const (
	// AckGap marks offsets with no record (compaction, control
	// records): archived.
	AckGap AckType = 0
	// AckAccept: processed; acknowledged.
	AckAccept AckType = 1
	// AckRelease: not processed; available again, or archived at the
	// delivery limit.
	AckRelease AckType = 2
	// AckReject: unprocessable; archived.
	AckReject AckType = 3
	// AckRenew extends the lock (KIP-1222, ShareAcknowledge v2).
	AckRenew AckType = 4
)

// Range is offsets First to Last, inclusive.
type Range struct{ First, Last int64 }

// The commands the shard serves (machine.Request.Cmd).
type (
	// NextCmd begins a fetch: it initialises the partition if it has no
	// state (from Reset and Log), moves its start offset up to the
	// log's start, and answers Next: where to read.
	NextCmd struct {
		Key    Key
		Log    Log
		Reset  Reset
		Limits Limits
	}
	// AcquireCmd hands over what the host read from Next's offset:
	// the log batches (first and last offset of each, in order) and,
	// for read_committed, the offsets of aborted transactions' batches
	// among them, which are archived rather than delivered. It
	// acquires records for Member and answers Acquired.
	AcquireCmd struct {
		Key    Key
		Member string
		// FetchOffset is the offset the log was read from.
		FetchOffset int64
		Batches     []Range
		Aborted     []Range
		// MaxRecords and BatchSize are ShareFetch's (KIP-1206);
		// BatchSize 0 is no splitting.
		MaxRecords int
		BatchSize  int
		Mode       Mode
		Limits     Limits
	}
	// AckCmd is ShareAcknowledge, or the acknowledgements a ShareFetch
	// carries, for one partition: all or nothing, as Kafka's. Answered
	// with a Result.
	AckCmd struct {
		Key    Key
		Member string
		Acks   []Ack
	}
	// ReleaseCmd gives back the records a member holds: it left, was
	// fenced, or closed its share session. Partitions nil is every
	// partition of the group on the shard. Answered with a Result.
	ReleaseCmd struct {
		Tenant, Group, Member string
		Partitions            []Key
	}
	// AlterCmd is AlterShareGroupOffsets for one partition: its state
	// starts again at StartOffset, with the state epoch bumped. The
	// group must be empty (the group coordinator checks); any lock
	// still held is dropped. Answered with a Result.
	AlterCmd struct {
		Key         Key
		StartOffset int64
	}
	// DeleteCmd is DeleteShareGroupOffsets for one partition: its state
	// is forgotten, and the next fetch initialises it again. Answered
	// with a Result.
	DeleteCmd struct{ Key Key }
	// DescribeCmd describes partitions: Partitions nil is every
	// partition of the group on the shard. Out is []Description, in
	// key order.
	DescribeCmd struct {
		Tenant, Group string
		Partitions    []Key
	}
	// DeadLetteredCmd archives the ARCHIVING records among First to
	// Last: their dead letters were written (or could not be, and never
	// will). Answered with a Result.
	DeadLetteredCmd struct {
		Key         Key
		First, Last int64
	}
)

// Ack is one acknowledgement batch: Types holds one type for every
// offset, or one for them all.
type Ack struct {
	First, Last int64
	Types       []AckType
}

// Next answers NextCmd.
type Next struct {
	Code int16
	// Offset is where to read the log from.
	Offset int64
	// Full: the partition holds its maximum of records in flight and
	// none is available, so there is nothing to acquire until some are
	// acknowledged (Kafka's canAcquireRecords false).
	Full bool
}

// Acquired answers AcquireCmd: the records acquired, each run with its
// delivery count, as ShareFetch's AcquiredRecords.
type Acquired struct {
	Code    int16
	Records []Records
	// LockDuration is how long the locks hold (ShareFetch's
	// AcquisitionLockTimeoutMs).
	LockDuration time.Duration
}

// Records is a run of acquired offsets and their delivery count.
type Records struct {
	First, Last   int64
	DeliveryCount int16
}

// Result answers the other commands: a Kafka error code.
type Result struct{ Code int16 }

// Description is one partition as DescribeCmd gives it.
type Description struct {
	Key Key
	// Code is GROUP_ID_NOT_FOUND for a partition with no state.
	Code                   int16
	StartOffset, EndOffset int64
	StateEpoch             int32
	// Runs are the states from the start to the end offset.
	Runs []Run
}

// Run is offsets First to Last in one state. Member and Deadline are
// those of an acquisition.
type Run struct {
	First, Last   int64
	State         record.ShareState
	DeliveryCount int16
	Member        string
	Deadline      time.Time
}

// Shard is one share-state shard. It implements machine.Machine and
// machine.Durable.
type Shard struct {
	cfg   Config
	parts map[Key]*part
	// orphans are update slots in the store of partitions with no
	// snapshot: left by a deletion a crash cut short. Loaded deletes
	// them.
	orphans map[Key][]uint32
	// letters are the partitions that wrote ARCHIVING records since
	// TakeDeadLetters last ran (soft: a load names every partition that
	// holds some).
	letters map[Key]bool

	rec machine.Recorder
	out machine.Output
}

// New returns an empty shard.
func New(cfg Config) *Shard {
	s := &Shard{cfg: cfg.WithDefaults(), parts: map[Key]*part{}, orphans: map[Key][]uint32{}, letters: map[Key]bool{}}
	s.rec.Replay = s.Replay
	return s
}

var (
	_ machine.Machine = (*Shard)(nil)
	_ machine.Durable = (*Shard)(nil)
)

// timerLock prefixes a partition's lock timer key; the rest is the
// partition's snapshot key.
const timerLock = "l"

func (s *Shard) snapshotKey(k Key) []byte {
	return record.ShareKey{Shard: s.cfg.Shard, Tenant: k.Tenant, Group: k.Group, TopicID: k.TopicID, Partition: k.Partition}.Key()
}

func keyOf(k record.ShareKey) Key {
	return Key{Tenant: k.Tenant, Group: k.Group, TopicID: k.TopicID, Partition: k.Partition}
}

// Replay applies a record: the only code that changes durable state.
func (s *Shard) Replay(r machine.Record) error {
	kind, key, err := record.ParseKey(r.Key)
	if err != nil {
		return err
	}
	switch kind {
	case record.KindShareSnapshot:
		k := keyOf(key.(record.ShareKey))
		if r.Value == nil {
			delete(s.parts, k)
			return nil
		}
		v, err := record.DecodeShareSnapshot(r.Value)
		if err != nil {
			return fmt.Errorf("share partition %v: %w", k, err)
		}
		p := s.parts[k]
		if p == nil {
			p = &part{key: k}
			s.parts[k] = p
		}
		slots := p.d.slots
		if o := s.orphans[k]; len(o) > 0 {
			slots = max(slots, o[len(o)-1])
			delete(s.orphans, k)
		}
		p.d = durable{start: v.StartOffset, stateEpoch: v.StateEpoch, snapEpoch: v.SnapshotEpoch, slots: slots,
			batches: normalize(v.Batches, v.StartOffset), locks: locksOf(v.Locks)}
		return nil
	case record.KindShareUpdate:
		uk := key.(record.ShareUpdateKey)
		k := keyOf(uk.ShareKey)
		p := s.parts[k]
		if p == nil {
			// A slot of a partition with no snapshot: a deletion's
			// leftover, or its tombstone.
			o := s.orphans[k]
			i, found := slices.BinarySearch(o, uk.Slot)
			switch {
			case r.Value == nil && found:
				o = slices.Delete(o, i, i+1)
			case r.Value != nil && !found:
				o = slices.Insert(o, i, uk.Slot)
			}
			if len(o) == 0 {
				delete(s.orphans, k)
			} else {
				s.orphans[k] = o
			}
			return nil
		}
		if r.Value == nil {
			return fmt.Errorf("share partition %v: update slot %d deleted under its snapshot", k, uk.Slot)
		}
		v, err := record.DecodeShareUpdate(r.Value)
		if err != nil {
			return fmt.Errorf("share partition %v: %w", k, err)
		}
		p.d.slots = max(p.d.slots, uk.Slot)
		if v.SnapshotEpoch != p.d.snapEpoch {
			return nil // written before the snapshot: stale
		}
		p.d.apply(v.StartOffset, v.Batches)
		if v.HasLocks {
			p.d.locks = replaceLocks(p.d.locks, v.LockFirst, v.LockLast, locksOf(v.Locks))
		}
		p.d.updates = uk.Slot
		return nil
	}
	return fmt.Errorf("sharestate: record kind %s is not a share-state record", kind)
}

// DurableState renders every partition's durable state, sorted.
func (s *Shard) DurableState() string {
	var b strings.Builder
	for _, p := range s.sorted(func(*part) bool { return true }) {
		d := p.d
		fmt.Fprintf(&b, "%s start=%d epoch=%d snap=%d updates=%d slots=%d batches=%s locks=%s\n",
			renderKey(p.key), d.start, d.stateEpoch, d.snapEpoch, d.updates, d.slots, renderBatches(d.batches), renderLocks(d.locks))
	}
	keys := make([]Key, 0, len(s.orphans))
	for k := range s.orphans {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s orphan slots %v\n", renderKey(k), s.orphans[k])
	}
	return b.String()
}

func renderKey(k Key) string {
	return fmt.Sprintf("%s/%s/%x/%d", k.Tenant, k.Group, k.TopicID, k.Partition)
}

func renderBatches(bs []batch) string {
	parts := make([]string, len(bs))
	for i, x := range bs {
		parts[i] = fmt.Sprintf("%d-%d:%s/%d", x.First, x.Last, x.State, x.DeliveryCount)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func renderLocks(ls []lock) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%d-%d:%s/%d/%d/%v/%d/%v", l.first, l.last, l.member, l.count, l.limit, l.dur, l.deadline.UnixNano(), l.dlq)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// sorted returns the partitions that keep is true of, in key order.
func (s *Shard) sorted(keep func(*part) bool) []*part {
	var out []*part
	for _, p := range s.parts {
		if keep(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *part) int { return compareKeys(a.key, b.key) })
	return out
}

// Check is the shard's invariants, beyond the one record rule: each
// partition's state is normalized and its start offset moved as far as
// it can, its locks lie over available records one delivery behind, in
// flight, within their delivery limit, with the timer armed for the
// earliest.
func (s *Shard) Check() error {
	var errs []error
	for _, p := range s.sorted(func(*part) bool { return true }) {
		if err := p.check(s.cfg.SnapshotEvery); err != nil {
			errs = append(errs, fmt.Errorf("share partition %s: %w", renderKey(p.key), err))
		}
	}
	return errors.Join(errs...)
}

// Loaded rebuilds the soft state: each partition's locks as written
// (a lock past its deadline expires at once: the timer is armed), and its
// end offset past its durable state (what was in flight beyond it is read
// again). It deletes the update slots a deletion cut short by a crash
// left.
func (s *Shard) Loaded(time.Time) machine.Output {
	for _, p := range s.sorted(func(*part) bool { return true }) {
		p.end = p.d.end()
		p.locks = slices.Clone(p.d.locks)
		s.arm(p)
		if slices.ContainsFunc(p.d.batches, func(b batch) bool { return b.State == record.ShareArchiving }) {
			s.letters[p.key] = true
		}
	}
	keys := make([]Key, 0, len(s.orphans))
	for k := range s.orphans {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		for _, slot := range slices.Clone(s.orphans[k]) {
			s.rec.Emit(s.updateKey(k, slot), nil)
		}
	}
	return s.flush()
}

// Handle serves one command.
func (s *Shard) Handle(now time.Time, req machine.Request) machine.Output {
	var out any
	switch c := req.Cmd.(type) {
	case NextCmd:
		out = s.next(c)
	case AcquireCmd:
		out = s.acquire(now, c)
	case AckCmd:
		out = s.ack(now, c)
	case ReleaseCmd:
		out = s.release(c)
	case AlterCmd:
		out = s.alter(c)
	case DeleteCmd:
		out = s.delete(c)
	case DescribeCmd:
		out = s.describe(c)
	case DeadLetteredCmd:
		out = s.deadLettered(c)
	default:
		out = Result{Code: kerr.InvalidRequest.Code}
	}
	s.out.Replies = append(s.out.Replies, machine.Reply{To: req.ID, Out: out})
	return s.flush()
}

// Fire runs a partition's lock timer: the locks due are released.
func (s *Shard) Fire(now time.Time, key string) machine.Output {
	if !strings.HasPrefix(key, timerLock) {
		return s.flush()
	}
	_, k, err := record.ParseKey([]byte(key[len(timerLock):]))
	sk, ok := k.(record.ShareKey)
	if err != nil || !ok {
		return s.flush()
	}
	if p := s.parts[keyOf(sk)]; p != nil {
		p.armed = time.Time{}
		s.expire(now, p)
	}
	return s.flush()
}

// TakeDeadLetters returns the partitions that hold records on their way
// to the dead-letter topic written since it last ran (after a load:
// every one that holds some), in key order, and forgets them. The host
// writes their dead letters and then sends DeadLetteredCmd.
func (s *Shard) TakeDeadLetters() []Key {
	if len(s.letters) == 0 {
		return nil
	}
	out := make([]Key, 0, len(s.letters))
	for k := range s.letters {
		out = append(out, k)
	}
	clear(s.letters)
	slices.SortFunc(out, compareKeys)
	return out
}

func (s *Shard) updateKey(k Key, slot uint32) []byte {
	return record.ShareUpdateKey{ShareKey: record.ShareKey{Shard: s.cfg.Shard, Tenant: k.Tenant, Group: k.Group, TopicID: k.TopicID, Partition: k.Partition}, Slot: slot}.Key()
}

// arm sets the partition's lock timer for its earliest lock, if it is
// not set for earlier already (a timer that fires early re-arms), and
// cancels it when no lock is left.
func (s *Shard) arm(p *part) {
	t := p.earliest()
	switch {
	case t.IsZero() && !p.armed.IsZero():
		p.armed = time.Time{}
		s.timer(p.key, time.Time{})
	case !t.IsZero() && (p.armed.IsZero() || t.Before(p.armed)):
		p.armed = t
		s.timer(p.key, t)
	}
}

func (s *Shard) timer(k Key, at time.Time) {
	s.out.Timers = append(s.out.Timers, machine.Timer{Key: timerLock + string(s.snapshotKey(k)), At: at})
}

func (s *Shard) flush() machine.Output {
	out := s.out
	out.Records = s.rec.Take()
	s.out = machine.Output{}
	return out
}
