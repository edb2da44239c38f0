// Package machine defines the contract between Cohort's coordinator
// runtime and the pure state machines it drives: a Machine consumes
// records, requests and timer firings and returns an Output of records to
// write, replies to send and timers to set.
//
// It holds types only; it must not do I/O, read a clock or start
// goroutines, so that the pure packages can depend on it.
package machine

import (
	"slices"
	"time"

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
	// ClientID and ClientHost identify the connection it came on:
	// the header's client id and the peer's IP address.
	ClientID, ClientHost string
	// DeletedTopics, with Msg nil, tells the machine that the broker
	// deleted these topics: their committed offsets go, as Kafka's
	// OffsetMetadataManager.onPartitionsDeleted. The reply's Resp is nil.
	DeletedTopics []string
	// LiveTopics, with Msg nil, is every topic the broker has, with its
	// id: committed offsets of any other topic, or of an earlier topic of
	// the same name (a deletion a crash interrupted), are deleted.
	LiveTopics map[string][16]byte
	// TopicIDs are the ids of the topics an OffsetCommit names, stamped
	// on the offsets so that LiveTopics can tell a re-created topic
	// from the one committed to.
	TopicIDs map[string][16]byte
	// Cmd, with Msg nil, is a request that is not a Kafka message: the
	// warm-handoff assigner's (coordinator/handoff). Its reply carries Out.
	Cmd any
	// Topics is the broker's topics as the request was handed over,
	// shared and read-only. Consumer groups (KIP-848) resolve
	// subscriptions against it. Nil when the caller has no topic source.
	Topics *Catalog
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

// Record is a store write: Value nil is a tombstone.
type Record struct {
	Key, Value []byte
}

// Reply answers a request: a Kafka request with Resp, a Cmd with Out.
type Reply struct {
	To   RequestID
	Resp kmsg.Response
	Out  any
}

// Push is a message for a long-lived stream the machine knows by number
// (a warm-handoff consumer's Register stream). Like a reply, it leaves
// only once the records produced before it are durable.
type Push struct {
	Stream uint64
	Msg    any
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
}

// Machine is one shard's pure state machine. Its methods are called from
// the shard's loop only, one at a time; they must not block, start
// goroutines, read a clock or do I/O.
type Machine interface {
	// Replay applies one record (Value nil: a tombstone) to the durable
	// state. It is called for every record the machine returns, in order,
	// right after the event that returned it, and for every stored record
	// when the shard loads.
	Replay(r Record) error
	// Loaded is called once after loading, before any event.
	Loaded(now time.Time) Output
	// Handle serves one request.
	Handle(now time.Time, req Request) Output
	// Fire runs timer key, which came due.
	Fire(now time.Time, key string) Output
}
