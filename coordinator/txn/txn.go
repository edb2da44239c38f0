// Package txn is the pure state machine of one transaction coordinator
// shard (Kafka's TransactionCoordinator and TransactionStateManager over
// one __transaction_state partition): the transactional ids whose hash
// falls on the shard, each with its producer id and epoch and the state of
// its transaction: Empty, Ongoing, PrepareCommit, PrepareAbort,
// CompleteCommit, CompleteAbort (and Dead, which is a tombstone).
//
// Like coordinator/groups and coordinator/handoff it is pure: commands in
// (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the
// markers' completion, a timer), records, replies, pushes and timer
// changes out. Durable state is one record.Txn per transactional id and
// follows the one record rule (coordinator/machine): Replay is the only
// code that changes it. It reads no clock, does no I/O, starts no
// goroutine.
//
// Ending a transaction is two records around the markers, as in Kafka:
// EndTxn writes PrepareCommit (or PrepareAbort) and pushes a Markers
// message; the host writes the commit or abort markers to every partition
// of the transaction and the group offsets' outcome to every group, each
// durable, then hands back CompleteCmd, which writes CompleteCommit (or
// CompleteAbort) and answers the EndTxn. A shard that loads a transaction
// in PrepareCommit or PrepareAbort pushes its Markers again, so that a
// crash between the two records only delays the completion. Unlike Kafka,
// which answers EndTxn once the Prepare record is durable, Cohort answers
// it once the transaction is complete: the producer's next transaction
// then never meets CONCURRENT_TRANSACTIONS. The answer does not wait for
// the Complete record's sync (machine.Reply.Early): the Prepare and the
// markers are durable, which is all a crash needs to finish the
// transaction the same way.
package txn

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Config configures a Shard.
type Config struct {
	// Shard is the store shard the machine's records are written under
	// (record.TxnShardBase + its index).
	Shard uint16
	// MaxTimeout caps the transaction timeout a producer may ask for
	// (--transaction-max-timeout, Kafka's transaction.max.timeout.ms,
	// default 15 min); a larger one is INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// IDExpiration is how long a transactional id with no transaction
	// in progress is kept after its last change (Kafka's
	// transactional.id.expiration.ms, default 7 days); ExpirationCheck
	// is how often the shard looks (default 1 h, Kafka's
	// transaction.remove.expired.transaction.cleanup.interval.ms).
	IDExpiration, ExpirationCheck time.Duration
	// Open is what the host's log holds of transactions still open when
	// the shard loads: Loaded adds each partition back to its
	// transaction if the store lost the add (AddPartitionsCmd.Early).
	Open []OpenTxn
	// Marked is the last transaction marker each producer has in each
	// partition of the host's log when the shard loads: Loaded writes
	// again the Prepare record the store lost of a transaction whose
	// markers had begun (Markers.Early).
	Marked []Marked
}

// Marked is a producer's last transaction marker in a partition: its
// epoch, and whether it commits.
type Marked struct {
	Partition     TP
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
}

// OpenTxn is a partition with records of a transaction and no marker
// after them yet: the producer id and epoch of its batches.
type OpenTxn struct {
	Partition     TP
	ProducerID    int64
	ProducerEpoch int16
}

// WithDefaults fills unset fields with Kafka's defaults.
func (c Config) WithDefaults() Config {
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 15 * time.Minute
	}
	if c.IDExpiration <= 0 {
		c.IDExpiration = 7 * 24 * time.Hour
	}
	if c.ExpirationCheck <= 0 {
		c.ExpirationCheck = time.Hour
	}
	return c
}

// TP is a topic partition of a transaction.
type TP = record.TxnPartition

// The commands the shard serves (machine.Request.Cmd). The producer's are
// answered with a Result in Reply.Out.
type (
	// InitCmd is InitProducerId with a transactional id. ProducerID and
	// ProducerEpoch are the request's (KIP-360; -1 when absent).
	// NewProducerID is a producer id never handed out before, which the
	// shard uses if it needs one (a new transactional id, or an epoch
	// exhausted): the machine cannot allocate ids itself.
	InitCmd struct {
		Tenant, TxnID string
		TimeoutMs     int32
		ProducerID    int64
		ProducerEpoch int16
		NewProducerID int64
	}
	// AddPartitionsCmd is AddPartitionsToTxn. VerifyOnly (v4's broker
	// form, and the produce path) only checks that every partition is in
	// the ongoing transaction: INVALID_TXN_STATE if one is not.
	//
	// Early (the host's own produce with transaction version 2, whose
	// batches go to its own log) answers the add once its record is
	// written rather than durable (machine.Reply.Early): the produce
	// then waits for its batches' fsync alone. A crash can keep the
	// batches and lose the add; every later record of the store follows
	// the add, so the load finds the transaction as the add found it,
	// and Loaded makes the add again from what the log holds open
	// (Config.Open).
	AddPartitionsCmd struct {
		Tenant, TxnID string
		ProducerID    int64
		ProducerEpoch int16
		Partitions    []TP
		VerifyOnly    bool
		Early         bool
	}
	// AddGroupCmd is AddOffsetsToTxn. Early (the host's own
	// TxnOffsetCommit with transaction version 2, whose pending offsets
	// go next to the same store) answers it once its record is written
	// rather than durable (machine.Reply.Early): the offsets' sync then
	// covers it, so offsets are never durable in a group the
	// transaction does not know of.
	AddGroupCmd struct {
		Tenant, TxnID string
		ProducerID    int64
		ProducerEpoch int16
		Group         string
		Early         bool
	}
	// EndCmd is EndTxn. Bump (EndTxn v5+, KIP-890 part 2) ends the
	// transaction with an epoch bump; NewProducerID (-1: none) is the
	// producer id a bump moves to when the epoch is exhausted.
	EndCmd struct {
		Tenant, TxnID string
		ProducerID    int64
		ProducerEpoch int16
		Commit, Bump  bool
		NewProducerID int64
	}
	// CompleteCmd tells the shard that the markers of a Markers push are
	// durable everywhere. It is answered with a nil Out.
	CompleteCmd struct {
		Tenant, TxnID string
		ProducerID    int64
		ProducerEpoch int16
		Commit        bool
	}
	// DescribeCmd is DescribeTransactions; Out is []Description in
	// request order.
	DescribeCmd struct {
		Tenant string
		TxnIDs []string
	}
	// ListCmd is ListTransactions; Out is []Listing sorted by id. Empty
	// filters match everything; MinDurationMs > 0 keeps transactions
	// running for longer (v1).
	ListCmd struct {
		Tenant        string
		States        []string
		ProducerIDs   []int64
		MinDurationMs int64
	}
)

// Result answers a producer's command: the Kafka error code and, for
// InitProducerId and EndTxn v5+, the producer id and epoch to use.
type Result struct {
	Code          int16
	ProducerID    int64
	ProducerEpoch int16
}

// Description is one transactional id as DescribeTransactions gives it.
type Description struct {
	TxnID         string
	Code          int16
	State         string
	TimeoutMs     int32
	StartMs       int64 // -1 unless a transaction is in progress
	ProducerID    int64
	ProducerEpoch int16
	Partitions    []TP
}

// Listing is one transactional id as ListTransactions gives it.
type Listing struct {
	TxnID      string
	ProducerID int64
	State      string
}

// Markers is the push that ends a transaction: the host writes a commit
// (or abort) marker with ProducerID and ProducerEpoch to every partition
// and the offsets' outcome to every group, durably, then submits the
// CompleteCmd it names. It is pushed on stream 0 once the Prepare record
// is durable, and again at every load that finds the transaction
// prepared, so the host must accept a Markers it has seen before.
//
// An end that bumps the epoch by one (EndTxn v5+, KIP-890; a fence) is
// pushed early (machine.Push.Early): once the Prepare is written, so
// that its sync and the markers' run at once. The EndTxn is answered
// only once both are durable. A crash can then keep a marker and lose
// the Prepare: the marker carries the decision and an epoch above every
// batch of the transaction, so the load writes the Prepare again
// (Config.Marked) and the ending goes on. The groups' outcome is written
// to the same store after the Prepare, so it is never durable without
// it.
type Markers struct {
	Tenant, TxnID string
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	// Bumped: the end bumped the epoch (KIP-890), so the markers' epoch
	// is above every batch of the transaction, and a batch open at it
	// is the producer's next transaction's (its add and this one's
	// Complete lost together): a partition must not close it.
	Bumped     bool
	Partitions []TP
	Groups     []string
}

// Complete returns the command that completes m.
func (m Markers) Complete() CompleteCmd {
	return CompleteCmd{Tenant: m.Tenant, TxnID: m.TxnID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Commit}
}

type tkey struct{ tenant, id string }

// txn is a transactional id: its durable record and the EndTxn requests
// waiting for the transaction to complete (soft).
type txn struct {
	key    tkey
	rec    record.Txn
	parked []machine.RequestID
	// orphans are partitions a load found holding the next
	// transaction's batches while this one was being prepared: its
	// Complete and the next one's add were lost together. They begin
	// the next transaction once this one completes (soft).
	orphans []TP
}

// Shard is one transaction coordinator shard. It implements
// machine.Machine and machine.Durable.
type Shard struct {
	cfg  Config
	txns map[tkey]*txn

	rec machine.Recorder
	out machine.Output
}

// New returns an empty shard.
func New(cfg Config) *Shard {
	s := &Shard{cfg: cfg.WithDefaults(), txns: map[tkey]*txn{}}
	s.rec.Replay = s.Replay
	return s
}

var (
	_ machine.Machine = (*Shard)(nil)
	_ machine.Durable = (*Shard)(nil)
)

// Timer keys: a transaction's timeout ("t" + tenant NUL id) and the
// transactional id expiry sweep.
const (
	timerExpire   = "x"
	timeoutPrefix = "t"
)

func timeoutKey(k tkey) string { return timeoutPrefix + k.tenant + "\x00" + k.id }

// Replay applies a record: the only code that changes durable state.
func (s *Shard) Replay(r machine.Record) error {
	kind, key, err := record.ParseKey(r.Key)
	if err != nil {
		return err
	}
	if kind != record.KindTxn {
		return fmt.Errorf("txn: record kind %s is not a transaction coordinator's", kind)
	}
	k := key.(record.TxnKey)
	tk := tkey{k.Tenant, k.TxnID}
	if r.Value == nil {
		delete(s.txns, tk)
		return nil
	}
	v, err := record.DecodeTxn(r.Value)
	if err != nil {
		return fmt.Errorf("transaction %q: %w", k.TxnID, err)
	}
	t := s.txns[tk]
	if t == nil {
		t = &txn{key: tk}
		s.txns[tk] = t
	}
	t.rec = v
	return nil
}

// DurableState renders every transactional id's record, sorted.
func (s *Shard) DurableState() string {
	var b strings.Builder
	for _, t := range s.sorted() {
		fmt.Fprintf(&b, "%s/%s %s\n", t.key.tenant, t.key.id, render(t.rec))
	}
	return b.String()
}

func render(r record.Txn) string {
	var ps []string
	for _, p := range r.Partitions {
		ps = append(ps, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
	}
	return fmt.Sprintf("%s pid=%d/%d prev=%d last=%d timeout=%d parts=[%s] groups=[%s] start=%d bumped=%t",
		r.State, r.ProducerID, r.ProducerEpoch, r.PrevProducerID, r.LastProducerEpoch, r.TimeoutMs,
		strings.Join(ps, " "), strings.Join(r.Groups, " "), r.StartTimestamp, r.Bumped)
}

func (s *Shard) sorted() []*txn {
	out := make([]*txn, 0, len(s.txns))
	for _, t := range s.txns {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *txn) int {
		if c := strings.Compare(a.key.tenant, b.key.tenant); c != 0 {
			return c
		}
		return strings.Compare(a.key.id, b.key.id)
	})
	return out
}

// Loaded rebuilds the soft state: a timeout timer for every ongoing
// transaction, the Markers of every prepared one again, and the expiry
// sweep.
func (s *Shard) Loaded(now time.Time) machine.Output {
	s.decide(now)
	s.adopt(now)
	for _, t := range s.sorted() {
		switch t.rec.State {
		case record.TxnOngoing:
			s.armTimeout(t)
		case record.TxnPrepareCommit, record.TxnPrepareAbort:
			s.pushMarkers(t, false)
		}
	}
	s.timer(timerExpire, now.Add(s.cfg.ExpirationCheck))
	return s.flush()
}

// Handle serves one command.
func (s *Shard) Handle(now time.Time, req machine.Request) machine.Output {
	var out any
	early := false
	switch c := req.Cmd.(type) {
	case InitCmd:
		out = s.init(now, c)
	case AddPartitionsCmd:
		// Early only where no Complete record of an end without a bump
		// may still be unsynced before it: that one's markers would not
		// tell a lost Complete's next transaction from its own.
		t := s.txns[tkey{c.Tenant, c.TxnID}]
		early = c.Early && !c.VerifyOnly && t != nil && (t.rec.Bumped || t.rec.State == record.TxnOngoing || t.rec.State == record.TxnEmpty)
		out = s.addPartitions(now, c)
	case AddGroupCmd:
		out, early = s.addGroup(now, c), c.Early
	case EndCmd:
		r, parked := s.end(now, req.ID, c)
		if parked {
			return s.flush()
		}
		out = r
	case CompleteCmd:
		s.complete(now, c)
		early = true
	case DescribeCmd:
		out = s.describe(c)
	case ListCmd:
		out = s.list(now, c)
	default:
		out = Result{Code: kerr.InvalidRequest.Code}
	}
	s.out.Replies = append(s.out.Replies, machine.Reply{To: req.ID, Out: out, Early: early})
	return s.flush()
}

// Fire runs a timer: a transaction's timeout, or the expiry sweep.
func (s *Shard) Fire(now time.Time, key string) machine.Output {
	switch {
	case key == timerExpire:
		s.expire(now)
		s.timer(timerExpire, now.Add(s.cfg.ExpirationCheck))
	case strings.HasPrefix(key, timeoutPrefix):
		tenant, id, _ := strings.Cut(key[len(timeoutPrefix):], "\x00")
		t := s.txns[tkey{tenant, id}]
		if t == nil || t.rec.State != record.TxnOngoing {
			break
		}
		if deadline := t.deadline(); now.Before(deadline) {
			s.timer(key, deadline)
			break
		}
		// As Kafka's abortTimedOutTransactions: fence the producer
		// (bump its epoch) and abort.
		s.fenceAndAbort(now, t)
	}
	return s.flush()
}

func (t *txn) deadline() time.Time {
	return time.UnixMilli(t.rec.StartTimestamp).Add(time.Duration(t.rec.TimeoutMs) * time.Millisecond)
}

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: the
// epoch cannot be bumped again (one value is kept for fencing).
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

func (s *Shard) init(now time.Time, c InitCmd) Result {
	fail := func(code int16) Result { return Result{Code: code, ProducerID: -1, ProducerEpoch: -1} }
	if c.TimeoutMs <= 0 || time.Duration(c.TimeoutMs)*time.Millisecond > s.cfg.MaxTimeout {
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	k := tkey{c.Tenant, c.TxnID}
	t := s.txns[k]
	if t == nil {
		// A new transactional id: a new producer id at epoch 0, as
		// Kafka's (a KIP-360 id and epoch for an id it does not know is
		// taken as a producer migrating, not fenced).
		s.write(now, k, record.Txn{ProducerID: c.NewProducerID, PrevProducerID: -1, LastProducerEpoch: -1,
			TimeoutMs: c.TimeoutMs, State: record.TxnEmpty})
		return Result{ProducerID: c.NewProducerID}
	}
	r := t.rec
	if c.ProducerID >= 0 && c.ProducerID != r.ProducerID &&
		!(c.ProducerID == r.PrevProducerID && c.ProducerEpoch == r.LastProducerEpoch) {
		return fail(kerr.ProducerFenced.Code)
	}
	switch r.State {
	case record.TxnPrepareCommit, record.TxnPrepareAbort:
		return fail(kerr.ConcurrentTransactions.Code)
	case record.TxnOngoing:
		// As Kafka: fence the current producer and abort its
		// transaction first; the client retries and then gets its bump.
		s.fenceAndAbort(now, t)
		return fail(kerr.ConcurrentTransactions.Code)
	}
	if c.ProducerID >= 0 {
		switch {
		case c.ProducerID == r.PrevProducerID:
			// A retry of a bump that moved to a new producer id.
			return Result{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}
		case c.ProducerEpoch == r.ProducerEpoch:
		case c.ProducerEpoch == r.LastProducerEpoch:
			// A retry of the last bump, whose answer was lost.
			return Result{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}
		default:
			return fail(kerr.ProducerFenced.Code)
		}
	}
	r = bump(r, c.NewProducerID)
	r.TimeoutMs, r.State = c.TimeoutMs, record.TxnEmpty
	r.Partitions, r.Groups, r.StartTimestamp, r.Bumped = nil, nil, 0, false
	s.write(now, k, r)
	return Result{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}
}

// bump returns r with its epoch bumped, or with a new producer id at
// epoch 0 if the epoch is exhausted.
func bump(r record.Txn, newID int64) record.Txn {
	if epochExhausted(r.ProducerEpoch) {
		r.PrevProducerID, r.LastProducerEpoch = r.ProducerID, r.ProducerEpoch
		r.ProducerID, r.ProducerEpoch = newID, 0
		return r
	}
	r.LastProducerEpoch = r.ProducerEpoch
	r.ProducerEpoch++
	return r
}

// check is the producer check of every transactional request: the id
// must be known and mapped to the producer id, the epoch current, and no
// transaction being completed.
func (s *Shard) check(tenant, id string, pid int64, epoch int16) (*txn, int16) {
	t := s.txns[tkey{tenant, id}]
	switch {
	case t == nil || t.rec.ProducerID != pid:
		return nil, kerr.InvalidProducerIDMapping.Code
	case t.rec.ProducerEpoch != epoch:
		return nil, kerr.ProducerFenced.Code
	case t.rec.State == record.TxnPrepareCommit || t.rec.State == record.TxnPrepareAbort:
		return nil, kerr.ConcurrentTransactions.Code
	}
	return t, 0
}

func (s *Shard) addPartitions(now time.Time, c AddPartitionsCmd) Result {
	t, code := s.check(c.Tenant, c.TxnID, c.ProducerID, c.ProducerEpoch)
	if code != 0 {
		return Result{Code: code}
	}
	missing := false
	for _, p := range c.Partitions {
		if !hasTP(t.rec.Partitions, p) {
			missing = true
			break
		}
	}
	if c.VerifyOnly {
		if t.rec.State != record.TxnOngoing || missing {
			return Result{Code: kerr.InvalidTxnState.Code}
		}
		return Result{}
	}
	if t.rec.State == record.TxnOngoing && !missing {
		return Result{}
	}
	s.addTo(now, t, c.Partitions)
	return Result{}
}

// addTo adds partitions to t's ongoing transaction, starting one if none
// is (begin), and arms its timeout.
func (s *Shard) addTo(now time.Time, t *txn, tps []TP) {
	r := s.begin(now, t)
	r.Partitions = append(r.Partitions, tps...)
	slices.SortFunc(r.Partitions, compareTP)
	r.Partitions = slices.Compact(r.Partitions)
	s.write(now, t.key, r)
	s.armTimeout(t)
}

// decide writes again the Prepare records the store lost (an early
// Markers push): a transaction ongoing at epoch E, one of whose
// partitions holds a marker of its producer at E+1, was being ended that
// way (nothing else writes a marker above the coordinator's epoch), and
// is prepared again: the load then pushes its markers to every
// partition and group. A commit was an EndTxn's, whose retry (KIP-890)
// is answered as the first; an abort may have been a fence's, so its
// retry is refused (PRODUCER_FENCED) rather than taken for the end.
func (s *Shard) decide(now time.Time) {
	if len(s.cfg.Marked) == 0 {
		return
	}
	marked := byProducer(s.cfg.Marked, func(m Marked) int64 { return m.ProducerID })
	for _, t := range s.sorted() {
		r := t.rec
		if r.State != record.TxnOngoing || epochExhausted(r.ProducerEpoch) {
			continue // an exhausted epoch's end is never early
		}
		for _, m := range marked[r.ProducerID] {
			if m.ProducerEpoch != r.ProducerEpoch+1 || !hasTP(r.Partitions, m.Partition) {
				continue
			}
			r.Partitions, r.Groups = slices.Clone(r.Partitions), slices.Clone(r.Groups)
			r.LastProducerEpoch = r.ProducerEpoch
			r.ProducerEpoch++
			r.State, r.Bumped = record.TxnPrepareAbort, false
			if m.Commit {
				r.State, r.Bumped = record.TxnPrepareCommit, true
			}
			s.write(now, t.key, r)
			break
		}
	}
}

// adopt makes again the adds the store lost (AddPartitionsCmd.Early): a
// partition the log holds open at a transactional id's producer id and
// epoch, missing from its ongoing transaction or with no transaction
// ongoing (the lost add began it), is added, and the transaction goes on
// from there: its end reaches the partition. A partition open at another
// epoch, or for a transaction being prepared, is not the trace of a lost
// add of this transaction (the Prepare follows every add in the store);
// at a prepared transaction's bumped epoch it is the next one's, added
// once this one completes (orphans).
func (s *Shard) adopt(now time.Time) {
	if len(s.cfg.Open) == 0 {
		return
	}
	open := byProducer(s.cfg.Open, func(o OpenTxn) int64 { return o.ProducerID })
	for _, t := range s.sorted() {
		var lost []TP
		for _, o := range open[t.rec.ProducerID] {
			if o.ProducerEpoch != t.rec.ProducerEpoch {
				continue
			}
			switch t.rec.State {
			case record.TxnOngoing:
				if !hasTP(t.rec.Partitions, o.Partition) {
					lost = append(lost, o.Partition)
				}
			case record.TxnEmpty, record.TxnCompleteCommit, record.TxnCompleteAbort:
				lost = append(lost, o.Partition)
			case record.TxnPrepareCommit, record.TxnPrepareAbort:
				if t.rec.Bumped {
					// The next transaction's batches, at the
					// bumped epoch: added once this one completes.
					t.orphans = append(t.orphans, o.Partition)
				}
			}
		}
		if len(lost) > 0 {
			s.addTo(now, t, lost)
		}
	}
}

// byProducer groups what the log holds by producer id.
func byProducer[T any](xs []T, pid func(T) int64) map[int64][]T {
	out := map[int64][]T{}
	for _, x := range xs {
		out[pid(x)] = append(out[pid(x)], x)
	}
	return out
}

func (s *Shard) addGroup(now time.Time, c AddGroupCmd) Result {
	t, code := s.check(c.Tenant, c.TxnID, c.ProducerID, c.ProducerEpoch)
	if code != 0 {
		return Result{Code: code}
	}
	if t.rec.State == record.TxnOngoing && slices.Contains(t.rec.Groups, c.Group) {
		return Result{}
	}
	r := s.begin(now, t)
	if !slices.Contains(r.Groups, c.Group) {
		r.Groups = append(r.Groups, c.Group)
		slices.Sort(r.Groups)
	}
	s.write(now, t.key, r)
	s.armTimeout(t)
	return Result{}
}

// begin returns t's record as the ongoing transaction's, starting one
// (Empty or Complete* → Ongoing) if none is.
func (s *Shard) begin(now time.Time, t *txn) record.Txn {
	r := t.rec
	r.Partitions, r.Groups = slices.Clone(r.Partitions), slices.Clone(r.Groups)
	if r.State != record.TxnOngoing {
		r.State, r.StartTimestamp, r.Partitions, r.Groups, r.Bumped = record.TxnOngoing, now.UnixMilli(), nil, nil, false
	}
	return r
}

func (s *Shard) end(now time.Time, id machine.RequestID, c EndCmd) (Result, bool) {
	t := s.txns[tkey{c.Tenant, c.TxnID}]
	if t == nil {
		return Result{Code: kerr.InvalidProducerIDMapping.Code}, false
	}
	r := t.rec
	want := record.TxnCompleteAbort
	prepared := record.TxnPrepareAbort
	if c.Commit {
		want, prepared = record.TxnCompleteCommit, record.TxnPrepareCommit
	}
	ok := Result{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}
	// KIP-890 (Kafka's endTransaction for transaction version 2): a
	// retried EndTxn v5 names the epoch before its own bump
	// (retryOnEpochBump), or, when that bump rolled over to a new
	// producer id, the old id at its last epoch (retryOnOverflow). It is
	// answered as the first was, once complete; the other outcome is
	// INVALID_TXN_STATE.
	retry := c.Bump && r.Bumped && c.ProducerEpoch == r.LastProducerEpoch &&
		(c.ProducerID == r.ProducerID || rolledOver(r) && c.ProducerID == r.PrevProducerID)
	if retry {
		switch r.State {
		case want:
			return ok, false
		case prepared:
			t.parked = append(t.parked, id)
			return Result{}, true
		}
		return Result{Code: kerr.InvalidTxnState.Code}, false
	}
	if r.ProducerID != c.ProducerID {
		return Result{Code: kerr.InvalidProducerIDMapping.Code}, false
	}
	if r.ProducerEpoch != c.ProducerEpoch {
		return Result{Code: kerr.ProducerFenced.Code}, false
	}
	switch r.State {
	case record.TxnOngoing:
		r.State = prepared
		s.bumpEnd(&r, c)
		s.write(now, t.key, r)
		s.timer(timeoutKey(t.key), time.Time{})
		s.pushMarkers(t, r.Bumped && !rolledOver(r))
		t.parked = append(t.parked, id)
		return Result{}, true
	case prepared:
		t.parked = append(t.parked, id)
		return Result{}, true
	case record.TxnEmpty, record.TxnCompleteCommit, record.TxnCompleteAbort:
		switch {
		case c.Bump && !c.Commit:
			// KIP-890: an abort with nothing in the transaction
			// succeeds and bumps the epoch (Kafka's table for
			// transaction version 2: Empty, CompleteAbort and
			// CompleteCommit all take an abort at the current epoch).
			// Nothing was written anywhere, so no markers: the
			// record goes straight to CompleteAbort.
			s.bumpEnd(&r, c)
			r.State, r.Partitions, r.Groups = record.TxnCompleteAbort, nil, nil
			s.write(now, t.key, r)
			return Result{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}, false
		case !c.Bump && r.State == want:
			return ok, false // a retry of the end just completed (v4-)
		}
	}
	return Result{Code: kerr.InvalidTxnState.Code}, false
}

// bumpEnd gives a transaction's end its KIP-890 epoch bump (EndTxn
// v5+): the markers carry the bumped epoch, and the producer goes on with
// it. An exhausted epoch moves the producer to c.NewProducerID at epoch
// 0 (Kafka's prepareAbortOrCommit with a nextProducerId): the markers
// then close the old producer id's transaction at the highest epoch,
// math.MaxInt16 (see markerOf). Without a new id (v4-, or none handed
// in) the epoch stays.
func (s *Shard) bumpEnd(r *record.Txn, c EndCmd) {
	r.Bumped = false
	switch {
	case !c.Bump:
	case !epochExhausted(r.ProducerEpoch):
		r.LastProducerEpoch = r.ProducerEpoch
		r.ProducerEpoch++
		r.Bumped = true
	case c.NewProducerID >= 0:
		r.PrevProducerID, r.LastProducerEpoch = r.ProducerID, r.ProducerEpoch
		r.ProducerID, r.ProducerEpoch = c.NewProducerID, 0
		r.Bumped = true
	}
}

// rolledOver reports whether r's bumped end moved the producer to a new
// producer id (its epoch was exhausted): a bump otherwise never yields
// epoch 0.
func rolledOver(r record.Txn) bool {
	return r.Bumped && r.ProducerEpoch == 0 && r.PrevProducerID >= 0
}

// markerOf is the producer id and epoch a prepared transaction's markers
// carry: its own, or, if its end rolled over to a new producer id, the
// old id at the highest epoch, above every batch the old id wrote, as
// Kafka's markers at Short.MaxValue.
func markerOf(r record.Txn) (int64, int16) {
	if rolledOver(r) {
		return r.PrevProducerID, math.MaxInt16
	}
	return r.ProducerID, r.ProducerEpoch
}

// complete is the host's word that a prepared transaction's markers are
// durable: it becomes CompleteCommit or CompleteAbort and the waiting
// EndTxns are answered, early (machine.Reply.Early): what they report is
// durable already (the Prepare record, then the markers), and a load
// that finds the Complete record missing finds the Prepare, writes the
// markers again (a partition holding them already takes them as done)
// and completes. A stale word (another epoch, already complete) changes
// nothing.
func (s *Shard) complete(now time.Time, c CompleteCmd) {
	t := s.txns[tkey{c.Tenant, c.TxnID}]
	if t == nil {
		return
	}
	if pid, epoch := markerOf(t.rec); pid != c.ProducerID || epoch != c.ProducerEpoch {
		return
	}
	r := t.rec
	switch {
	case c.Commit && r.State == record.TxnPrepareCommit:
		r.State = record.TxnCompleteCommit
	case !c.Commit && r.State == record.TxnPrepareAbort:
		r.State = record.TxnCompleteAbort
	default:
		return
	}
	r.Partitions, r.Groups = nil, nil
	s.write(now, t.key, r)
	if len(t.orphans) > 0 {
		s.addTo(now, t, t.orphans)
		t.orphans = nil
	}
	for _, id := range t.parked {
		s.out.Replies = append(s.out.Replies, machine.Reply{To: id, Out: Result{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}, Early: true})
	}
	t.parked = nil
}

// fenceAndAbort bumps the producer's epoch, so that its later requests
// are fenced, and aborts its transaction (Kafka's
// prepareFenceProducerEpoch then PrepareAbort).
func (s *Shard) fenceAndAbort(now time.Time, t *txn) {
	r := t.rec
	early := !epochExhausted(r.ProducerEpoch)
	if r.ProducerEpoch < math.MaxInt16 {
		r.LastProducerEpoch = r.ProducerEpoch
		r.ProducerEpoch++
	}
	r.State, r.Bumped = record.TxnPrepareAbort, false
	s.write(now, t.key, r)
	s.timer(timeoutKey(t.key), time.Time{})
	s.pushMarkers(t, early)
}

// pushMarkers pushes t's Markers; early (an end that bumped the epoch by
// one) once the Prepare is written rather than durable (see Markers).
func (s *Shard) pushMarkers(t *txn, early bool) {
	r := t.rec
	pid, epoch := markerOf(r)
	s.out.Pushes = append(s.out.Pushes, machine.Push{Early: early, Msg: Markers{
		Tenant: t.key.tenant, TxnID: t.key.id,
		ProducerID: pid, ProducerEpoch: epoch,
		Commit: r.State == record.TxnPrepareCommit, Bumped: r.Bumped,
		Partitions: slices.Clone(r.Partitions), Groups: slices.Clone(r.Groups),
	}})
}

func (s *Shard) armTimeout(t *txn) { s.timer(timeoutKey(t.key), t.deadline()) }

// expire deletes transactional ids idle for IDExpiration with no
// transaction in progress (Kafka's removeExpiredTransactionalIds: the
// state passes through Dead, which is the tombstone).
func (s *Shard) expire(now time.Time) {
	for _, t := range s.sorted() {
		switch t.rec.State {
		case record.TxnEmpty, record.TxnCompleteCommit, record.TxnCompleteAbort:
		default:
			continue
		}
		if time.UnixMilli(t.rec.UpdateTimestamp).Add(s.cfg.IDExpiration).After(now) || len(t.parked) > 0 {
			continue
		}
		s.rec.Emit(s.key(t.key), nil)
	}
}

func (s *Shard) describe(c DescribeCmd) []Description {
	out := make([]Description, 0, len(c.TxnIDs))
	for _, id := range c.TxnIDs {
		t := s.txns[tkey{c.Tenant, id}]
		if t == nil {
			out = append(out, Description{TxnID: id, Code: kerr.TransactionalIDNotFound.Code, State: "", ProducerID: -1, ProducerEpoch: -1, StartMs: -1})
			continue
		}
		r := t.rec
		d := Description{TxnID: id, State: r.State.String(), TimeoutMs: r.TimeoutMs, StartMs: -1,
			ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Partitions: slices.Clone(r.Partitions)}
		if r.State == record.TxnOngoing || r.State == record.TxnPrepareCommit || r.State == record.TxnPrepareAbort {
			d.StartMs = r.StartTimestamp
		}
		out = append(out, d)
	}
	return out
}

func (s *Shard) list(now time.Time, c ListCmd) []Listing {
	var out []Listing
	for _, t := range s.sorted() {
		r := t.rec
		switch {
		case t.key.tenant != c.Tenant:
			continue
		case len(c.States) > 0 && !slices.Contains(c.States, r.State.String()):
			continue
		case len(c.ProducerIDs) > 0 && !slices.Contains(c.ProducerIDs, r.ProducerID):
			continue
		case c.MinDurationMs > 0 && (r.State != record.TxnOngoing || now.UnixMilli()-r.StartTimestamp < c.MinDurationMs):
			// KIP-994: only transactions running longer than the
			// filter.
			continue
		}
		out = append(out, Listing{TxnID: t.key.id, ProducerID: r.ProducerID, State: r.State.String()})
	}
	return out
}

// write emits a transactional id's record, stamped now.
func (s *Shard) write(now time.Time, k tkey, r record.Txn) {
	r.UpdateTimestamp = now.UnixMilli()
	s.rec.Emit(s.key(k), r.Encode())
}

func (s *Shard) key(k tkey) []byte {
	return record.TxnKey{Shard: s.cfg.Shard, Tenant: k.tenant, TxnID: k.id}.Key()
}

func (s *Shard) timer(key string, at time.Time) {
	s.out.Timers = append(s.out.Timers, machine.Timer{Key: key, At: at})
}

func (s *Shard) flush() machine.Output {
	out := s.out
	out.Records = s.rec.Take()
	s.out = machine.Output{}
	return out
}

func hasTP(ps []TP, p TP) bool {
	_, ok := slices.BinarySearchFunc(ps, p, compareTP)
	return ok
}

func compareTP(a, b TP) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}
