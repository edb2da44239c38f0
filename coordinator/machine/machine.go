// Package machine defines the contract between Cohort's coordinator
// runtime and the pure state machines it drives: a Machine consumes
// records, requests and timer firings and returns an Output of records to
// write, replies to send and timers to set.
//
// # The one record rule
//
// A machine's durable state is what its records say, and one function
// changes it: the machine's Replay. At load the runtime hands Replay every
// stored record; live, a handler never changes durable state itself, it
// emits a record through a Recorder, which hands the record to the same
// Replay at once (so the handler sees its effect) and queues it for the
// runtime to write. Live state and state rebuilt from the store therefore
// cannot differ. What a handler may change directly is soft state, rebuilt
// at load by Loaded or not at all: timers and deadlines, parked requests,
// a classic group's rebalance in progress (a generation becomes durable
// only with its leader's SyncGroup, as in Kafka).
//
// Every machine implements Durable, and CheckReplay (replay.go) rebuilds
// a machine from the records written so far and compares the two
// renderings: the guard that fails when a handler changes durable state
// without a record. The machines' scenario, property and fuzz tests run
// it after every step; under the invariants build tag, which the whole
// test suite sets, the shard runtime runs it too, on every machine it
// runs, end-to-end tests included (coordinator/invariants.go).
//
// It holds the contract's types and the pure functions that check it; it
// must not do I/O, read a clock or start goroutines, so that the pure
// packages, and the runtime, can depend on it.
package machine

import (
	"fmt"
	"slices"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestID names a request inside a shard until it is answered. A machine
// that cannot answer at once (a JoinGroup parked on the barrier) keeps the
// id in its state and replies to it from a later event.
type RequestID uint64

// Request is a decoded request for a machine.
type Request struct {
	ID  RequestID
	Msg kmsg.Request
	// Tenant is the organisation the request acts for; every group and
	// offset key carries it, so that two tenants' groups of the same name
	// are two groups. "" is the default tenant.
	Tenant string
	// ClientID and ClientHost identify the connection it came on:
	// the header's client id and the peer's IP address.
	ClientID, ClientHost string
	// Cmd, with Msg nil, is a request that is not a Kafka message (the
	// warm-handoff assigner's, a topic deletion the broker reports). Its
	// reply carries Out.
	Cmd any
	// Topics is the broker's topics as the request was handed over,
	// shared and read-only: offset commits check partitions and stamp
	// topic ids against it, consumer groups (KIP-848) resolve
	// subscriptions against it. Nil when the caller has no topic source
	// (then every topic is taken to exist).
	Topics *Catalog
	// GroupConfig is the group's dynamic configs as the broker resolved
	// them when it handed the request over (a group's own, set with
	// IncrementalAlterConfigs, else the cluster's dynamic defaults):
	// ConsumerGroupHeartbeat and ShareGroupHeartbeat apply them. A zero
	// field is the shard's own default.
	GroupConfig GroupConfig
}

// GroupConfig is what a group's dynamic configs change in its machine.
type GroupConfig struct {
	// SessionTimeout and HeartbeatInterval are a consumer group's
	// (KIP-848: consumer.session.timeout.ms,
	// consumer.heartbeat.interval.ms), applied to each member at its
	// next heartbeat.
	SessionTimeout, HeartbeatInterval time.Duration
	// ShareSessionTimeout and ShareHeartbeatInterval are a share group's
	// (KIP-932: share.session.timeout.ms, share.heartbeat.interval.ms),
	// applied the same way.
	ShareSessionTimeout, ShareHeartbeatInterval time.Duration
}

// Catalog is a snapshot of the broker's topics. It is never modified
// after it is built; a change makes a new Catalog with a higher Version.
type Catalog struct {
	Version uint64
	ByName  map[string]TopicMeta
	ByID    map[[16]byte]string
	// Names are the topic names, sorted.
	Names []string
}

// TopicMeta is what a coordinator needs to know of a topic.
type TopicMeta struct {
	ID         [16]byte
	Partitions int32
}

// NewCatalog builds a catalog of topics at version v.
func NewCatalog(v uint64, topics map[string]TopicMeta) *Catalog {
	c := &Catalog{Version: v, ByName: topics, ByID: make(map[[16]byte]string, len(topics))}
	for name, t := range topics {
		c.ByID[t.ID] = name
		c.Names = append(c.Names, name)
	}
	slices.Sort(c.Names)
	return c
}

// Partition looks a topic partition up: its topic's id, or false if the
// broker does not have it. A nil catalog (a caller with no topic source)
// has every partition, with no id.
func (c *Catalog) Partition(topic string, p int32) ([16]byte, bool) {
	if c == nil {
		return [16]byte{}, true
	}
	t, ok := c.ByName[topic]
	if !ok || p < 0 || p >= t.Partitions {
		return [16]byte{}, false
	}
	return t.ID, true
}

// Name resolves a topic id (requests that name topics by id, such as
// OffsetCommit and OffsetFetch v10) to the broker's name for it, or false
// if the broker has no topic with that id (UNKNOWN_TOPIC_ID, as Kafka). A
// nil catalog knows no id; the zero id names no topic.
func (c *Catalog) Name(id [16]byte) (string, bool) {
	if c == nil || id == [16]byte{} {
		return "", false
	}
	name, ok := c.ByID[id]
	return name, ok
}

// Record is a store write: Value nil is a tombstone.
type Record struct {
	Key, Value []byte
}

// Reply answers a request: a Kafka request with Resp, a Cmd with Out.
type Reply struct {
	To   RequestID
	Resp kmsg.Response
	Out  any
	// Early lets the reply leave once the records before it are written
	// to the store in order, before they are durable, where the store is
	// one log (store.OneLog); elsewhere it waits like any reply. It is
	// for a reply whose truth something durable later covers: the
	// caller's next write to the same log, which cannot be durable
	// without it, or records a load would rebuild from anyway. A crash
	// may lose what an early reply told. It still waits for every
	// record before its output that an ordinary reply waits on to be
	// durable: only its own output's records are spared the wait.
	Early bool
}

// Push is a message for a long-lived stream the machine knows by number
// (a warm-handoff consumer's Register stream). Like a reply, it leaves
// only once the records produced before it are durable.
type Push struct {
	Stream uint64
	Msg    any
	// Early lets the push leave once its output's records are written,
	// as an early reply; unlike those of an early reply, the records
	// are still synced at once. It is for work that may run while they
	// sync, whose traces a load can tell apart (a transaction's markers
	// carry its decision and a bumped epoch).
	Early bool
}

// Timer sets (At non-zero) or cancels (At zero) the machine's timer Key.
type Timer struct {
	Key string
	At  time.Time
}

// Output is what a machine returns from an event.
type Output struct {
	Records []Record
	Replies []Reply
	Pushes  []Push
	Timers  []Timer
	// Events are what happened to groups, for the observer. Like
	// replies, they are passed on once the records produced before them
	// are durable, with the context of the request that caused them.
	Events []observe.GroupEvent
}

// Machine is one shard's pure state machine. Its methods are called from
// the shard's loop only, one at a time; they must not block, start
// goroutines, read a clock or do I/O.
type Machine interface {
	// Replay applies one record (Value nil: a tombstone) to the durable
	// state: the only code that changes it (see the package doc). The
	// runtime calls it for every stored record when the shard loads; live,
	// the machine calls it itself for each record it emits (Recorder).
	Replay(r Record) error
	// Loaded is called once after loading, before any event.
	Loaded(now time.Time) Output
	// Handle serves one request.
	Handle(now time.Time, req Request) Output
	// Fire runs timer key, which came due.
	Fire(now time.Time, key string) Output
}

// Durable is implemented by every pure machine: a deterministic rendering
// of its durable state, exactly what replaying its records builds and
// nothing soft. The guard tests compare a live machine's rendering with
// that of a machine rebuilt from the records it wrote.
type Durable interface {
	DurableState() string
}

// Recorder is the record half of an event's output, and the one way a
// machine changes its durable state live: Emit applies the record through
// the machine's Replay at once, then queues it for the runtime to write.
type Recorder struct {
	// Replay is the machine's replay function.
	Replay  func(Record) error
	records []Record
}

// Emit applies the record (value nil: a tombstone) and queues it. A machine
// that cannot replay its own record is broken: Emit panics.
func (r *Recorder) Emit(key, value []byte) {
	rec := Record{Key: key, Value: value}
	if err := r.Replay(rec); err != nil {
		panic(fmt.Sprintf("machine: cannot replay its own record %x: %v", key, err))
	}
	r.records = append(r.records, rec)
}

// Applied queues a record whose effect the machine has already applied to
// its durable state, with the very code its Replay runs for that record
// once decoded: the hot path of a record kind whose decoding costs more
// than the rest of its handling (a committed offset). The guard tests
// hold it to the same rule as Emit: a machine rebuilt by replaying the
// records has the durable state of the live one.
func (r *Recorder) Applied(key, value []byte) {
	r.records = append(r.records, Record{Key: key, Value: value})
}

// Grow makes room for n more records.
func (r *Recorder) Grow(n int) { r.records = slices.Grow(r.records, n) }

// Take returns the records emitted since the last Take.
func (r *Recorder) Take() []Record {
	out := r.records
	r.records = nil
	return out
}
