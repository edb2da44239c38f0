// Package observe is the seam between Cohort's core and what watches it:
// metrics, tracing and the rebalance timeline implement Observer; the wire
// server, the coordinator runtime and (through their outputs) the pure
// group machines report to it.
//
// It holds types only, and must not import the packages that report to
// it: the pure machines depend on it for GroupEvent. An Observer is called
// from the wire server's connection goroutines and from every shard's
// loop, concurrently: it must be safe for concurrent use and must not
// block (record the event, return).
package observe

import (
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Observer receives Cohort's events. Embed Nop to implement only some.
type Observer interface {
	// RequestReceived is called when a request has been decoded, before
	// it is handled. The context it returns travels with the request to
	// its reply (a tracer returns one carrying its span) and is handed to
	// RequestAnswered and to the events the request causes.
	RequestReceived(ctx context.Context, r Request) context.Context
	// RequestAnswered is called once the response is built, just before
	// it is written (or, for a request that gets no response, once it
	// has been handled).
	RequestAnswered(ctx context.Context, r Request, a Answer)
	// BatchWritten is called when a shard's batch of records has been
	// written to the store (durable, or failed with Err).
	BatchWritten(b Batch)
	// Group is called for what happens to a group: a rebalance starting
	// or completing, a member joining, leaving, expiring or being fenced.
	// ctx is the request that caused it, or context.Background() for a
	// timer.
	Group(ctx context.Context, e GroupEvent)
	// Shard is called when a shard starts loading, is loaded, or is
	// unloaded.
	Shard(e ShardEvent)
}

// Request is a request as the wire server read it.
type Request struct {
	Key      int16 // API key
	Version  int16
	ClientID string
	Host     string // the peer's IP address
	// Principal is who the connection acts for, in Kafka's form:
	// "User:ANONYMOUS", "User:alice" (SASL), "User:CN=...,O=..." (a
	// verified TLS client certificate).
	Principal string
	Tenant    string
	Size      int // the frame's bytes
	Received  time.Time
	// Msg is the decoded request; nil for the UNSUPPORTED_VERSION answer
	// to an ApiVersions that did not decode. Read it only in
	// RequestReceived (before the handler has it) or RequestAnswered
	// (after), never change it, and do not keep it. The whole message
	// rather than the fields an observer may want (a tracer wants a
	// JoinGroup's group): it is decoded already, so handing it on costs
	// the wire server nothing per request.
	Msg kmsg.Request
}

// API returns the request's API name ("JoinGroup").
func (r Request) API() string { return kmsg.NameForKey(r.Key) }

// Answer is how a request was answered.
type Answer struct {
	// Resp is the response. Read only. Nil for a request that gets none:
	// a produce with acks=0, or a request whose connection failed (or
	// whose handler panicked) before its response could be written.
	Resp    kmsg.Response
	Latency time.Duration // from Received to the response being built
}

// ErrorCode returns the first non-zero error code anywhere in the
// response (top level first, then each topic, partition or group in
// order), or 0. It walks the response, so call it only when needed.
func (a Answer) ErrorCode() int16 {
	switch r := a.Resp.(type) {
	case nil:
		return 0
	// The hot paths, without reflection: commits, heartbeats, produce
	// and fetch are most of what a broker answers.
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
		return 0
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return r.ErrorCode
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
		return 0
	case *kmsg.ListGroupsResponse:
		// Its groups carry no error code: the reflective walk over a
		// million of them took tens of milliseconds per ListGroups.
		return r.ErrorCode
	case *kmsg.FetchResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
		return 0
	}
	return firstErrorCode(reflect.ValueOf(a.Resp))
}

var int16Type = reflect.TypeFor[int16]()

func firstErrorCode(v reflect.Value) int16 {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return firstErrorCode(v.Elem())
	case reflect.Struct:
		if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Type() == int16Type && f.Int() != 0 {
			return int16(f.Int())
		}
		for i := range v.NumField() {
			f := v.Field(i)
			if f.Kind() == reflect.Slice || f.Kind() == reflect.Struct || f.Kind() == reflect.Pointer {
				if c := firstErrorCode(f); c != 0 {
					return c
				}
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0 // bytes: record data
		}
		for i := range v.Len() {
			if c := firstErrorCode(v.Index(i)); c != 0 {
				return c
			}
		}
	}
	return 0
}

// Batch is one store write of a shard.
type Batch struct {
	Shard   uint16
	Records int
	Bytes   int // keys and values
	Latency time.Duration
	Err     error
}

// GroupEventKind says what happened to a group.
type GroupEventKind uint8

// The group events.
const (
	// RebalanceStarted: a classic group went to PreparingRebalance, or a
	// consumer group's epoch was bumped.
	RebalanceStarted GroupEventKind = iota + 1
	// RebalanceCompleted: a classic group became Stable with a new
	// generation, or a consumer group's members all reached its target
	// assignment epoch; or the rebalance left the group Empty (Members
	// 0). A rebalance in progress when a shard reloads may never
	// complete (a classic one is forgotten), or complete with Duration 0
	// (a consumer one, whose start is not durable).
	RebalanceCompleted
	MemberJoined
	MemberLeft
	// MemberExpired: its session timed out.
	MemberExpired
	// MemberFenced: removed for another reason (a stale epoch, a static
	// member replaced, the rebalance timeout).
	MemberFenced
	// GroupConverted: a group with members changed protocol online (a
	// rolling upgrade to KIP-848 or back): Protocol is the new one,
	// Member the member whose join or departure converted it, Reason
	// says which way and why.
	GroupConverted
	// GroupDeleted: DeleteGroups deleted the group (it had no members;
	// Protocol is its type). The share coordinator's host drops a
	// deleted share group's share-partition state on it. A group that
	// offsets retention removes is not reported.
	GroupDeleted
)

var kindNames = [...]string{"", "rebalance-started", "rebalance-completed", "member-joined", "member-left", "member-expired", "member-fenced", "group-converted", "group-deleted"}

func (k GroupEventKind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "unknown"
}

// GroupEvent is something that happened to a group, reported by the pure
// machine in its output and passed on by the runtime once the records
// before it are durable.
type GroupEvent struct {
	Kind     GroupEventKind
	Tenant   string
	Group    string
	Protocol string // "classic", "consumer" or "share"
	// Generation is the classic generation, or the consumer group's
	// epoch: for RebalanceStarted the one being formed, else the current.
	Generation int32
	// Members is the group's members after the event. A consumer
	// group's static member that left with epoch -2 (MemberLeft) no
	// longer counts, though it keeps its place until its session ends.
	Members    int
	Member     string // the member, for member events
	InstanceID string // the member's static instance id, if any
	Reason     string // why: a member's leave reason, what triggered a rebalance
	// Cause is why a rebalance started, from a closed set (metrics use
	// it as a label; Reason keeps the words). It is set on rebalance
	// events: for RebalanceStarted this start's, for RebalanceCompleted
	// the first start's, the one Duration counts from. On those events
	// Member and InstanceID name who caused it (the member that joined,
	// left, expired, changed its subscription, was replaced...; empty
	// when no member did: a timer, a topic's metadata, a load).
	Cause Cause
	// Phases is, for RebalanceCompleted, how long each phase of the
	// rebalance took; they add up to Duration.
	Phases Phases
	// PartitionsMoved is, for RebalanceCompleted, how many partitions
	// have a different owner after the rebalance than before it (see
	// the machines' rule in coordinator/groups); -1 when not known: a
	// classic group whose protocol type is not "consumer" (its
	// assignments are opaque), or a rebalance under way when the shard
	// loaded.
	PartitionsMoved int
	// Leader is, for a classic group's RebalanceCompleted, the new
	// generation's leader ("" if none, or for other events).
	Leader string
	// Duration is, for RebalanceCompleted, how long the rebalance took,
	// from its first RebalanceStarted: one that starts over (a classic
	// group back to PreparingRebalance, a consumer group's epoch bumped
	// again) keeps its start.
	Duration time.Duration
	At       time.Time
}

// Cause is why a rebalance started: a closed set, so that it can be a
// metric label. Cohort's machines choose it where they start a rebalance;
// the free text (Kafka's words, and a client's own reason) stays in
// GroupEvent.Reason.
type Cause uint8

// The causes.
const (
	// CauseUnknown: not a rebalance event, or a rebalance that was under
	// way when its shard loaded (its start is not durable).
	CauseUnknown Cause = iota
	// CauseMemberJoined: a new member joined.
	CauseMemberJoined
	// CauseMemberLeft: a member left (LeaveGroup, a heartbeat with epoch
	// -1).
	CauseMemberLeft
	// CauseMemberExpired: a member's session timed out (for a static
	// consumer-protocol member that had left with epoch -2, its session
	// after it left).
	CauseMemberExpired
	// CauseMemberRejoined: a classic member joined again without
	// changing its subscribed topics: the client asked for a rebalance
	// (a cooperative assignor's second round, a leader that saw the
	// topics' partitions change, an application's own request). Kafka
	// cannot tell these apart either; Reason has the client's reason.
	CauseMemberRejoined
	// CauseSubscriptionChanged: a member subscribes to other topics (a
	// classic "consumer" member's metadata names other topics; a
	// consumer-protocol member sent other topic names or regex).
	CauseSubscriptionChanged
	// CauseMetadataChanged: a subscribed topic was created, deleted,
	// re-created or given more partitions (consumer groups: the
	// coordinator notices it; classic groups learn it from their clients
	// and show CauseMemberRejoined).
	CauseMetadataChanged
	// CauseStaticMemberReplaced: a new instance of a static member took
	// its place in a way that needs a rebalance (a classic group whose
	// protocol would change, or one not Stable).
	CauseStaticMemberReplaced
	// CauseAdminAction: an administrator removed a member (a LeaveGroup
	// by group.instance.id with no member id: Kafka's
	// removeMembersFromConsumerGroup).
	CauseAdminAction
	// CauseRebalanceTimeout: members did not do their part within the
	// rebalance timeout (a classic member that did not sync, a
	// consumer-protocol member that did not revoke) and were removed.
	CauseRebalanceTimeout
	// CauseOther: anything else (a classic group loaded over
	// group.max.size, a consumer-protocol member that changed its server
	// assignor).
	CauseOther
)

var causeNames = [...]string{"unknown", "member-joined", "member-left", "member-expired", "member-rejoined",
	"subscription-changed", "metadata-changed", "static-member-replaced", "admin-action", "rebalance-timeout", "other"}

func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "unknown"
}

// Phases is how long each phase of a rebalance took, measured in the
// machine's time (the now each request or timer brings; the machines read
// no clock). Each field is the total time the group spent in that phase,
// also when the rebalance went back to an earlier one, so the fields add
// up to the rebalance's Duration. A phase a protocol does not have is 0.
type Phases struct {
	// Join is a classic group's join barrier: its time in
	// PreparingRebalance, waiting for every member to (re)join. 0 for a
	// consumer group.
	Join time.Duration
	// Sync is a classic group's time in CompletingRebalance, waiting for
	// the leader's SyncGroup with the assignment; for a consumer group,
	// reconciliation: the target is computed and nothing is left to
	// revoke, but members are still to reach the target epoch (taking
	// partitions others have released, or heartbeating to learn their
	// assignment).
	Sync time.Duration
	// Assignment is a consumer group's time with its target assignment
	// behind the group epoch, waiting for the assignor, which runs in a
	// member's heartbeat: 0 when that heartbeat is the one that bumped
	// the epoch (a member joining or changing its subscription) and the
	// assignment interval does not hold it back; a member leaving or
	// expiring waits for another member's next heartbeat. 0 for a classic
	// group (whose leader assigns during Sync).
	Assignment time.Duration
	// Revocation is a consumer group's time with some member still owning
	// a partition its target no longer gives it. 0 for a classic group.
	Revocation time.Duration
}

// ShardEventKind says what happened to a shard.
type ShardEventKind uint8

// The shard events.
const (
	ShardLoading ShardEventKind = iota + 1
	ShardLoaded
	ShardUnloaded
)

var shardKindNames = [...]string{"", "loading", "loaded", "unloaded"}

func (k ShardEventKind) String() string {
	if int(k) < len(shardKindNames) && k != 0 {
		return shardKindNames[k]
	}
	return "unknown"
}

// ShardEvent is a shard's life.
type ShardEvent struct {
	Kind    ShardEventKind
	Shard   uint16
	Records int           // ShardLoaded: records replayed
	Took    time.Duration // ShardLoaded: how long loading took
	Reason  string        // ShardUnloaded: why (ReasonUnloaded, ReasonFenced, "store write failed: ...")
	Err     error         // ShardLoaded: a load that failed
}

// Reasons of ShardUnloaded events that observers tell apart.
const (
	// ReasonUnloaded: the shard's owner unloaded it (it moved, or the
	// node stops).
	ReasonUnloaded = "unloaded"
	// ReasonFenced: another owner took the shard while this one wrote.
	ReasonFenced = "fenced: another owner has the shard"
)

// ClusterEventKind says what happened to a node of the cluster (cluster
// mode), as this node saw it: a closed set, so that it can be a metric
// label.
type ClusterEventKind uint8

// The cluster events.
const (
	// NodeJoined: a node's registration seen for the first time (at
	// this node's start, every node already registered).
	NodeJoined ClusterEventKind = iota + 1
	// NodeLost: a node's registration is gone: its lease expired (it
	// died, or was cut off from etcd) or was revoked (it left).
	NodeLost
	// NodeRejoined: a node lost earlier registered again.
	NodeRejoined
	// NodeDraining: a node's registration says it is draining (it is
	// leaving: its units are moving to the others).
	NodeDraining
	// NodeSuspended: this node cannot renew its lease in time and
	// serves nothing until it can (Self is set).
	NodeSuspended
	// NodeResumed: this node renewed its lease and serves again.
	NodeResumed
)

var clusterKindNames = [...]string{"", "joined", "lost", "rejoined", "draining", "suspended", "resumed"}

func (k ClusterEventKind) String() string {
	if int(k) < len(clusterKindNames) && k != 0 {
		return clusterKindNames[k]
	}
	return "unknown"
}

// ClusterEventKinds are every cluster event kind, in order.
func ClusterEventKinds() []ClusterEventKind {
	return []ClusterEventKind{NodeJoined, NodeLost, NodeRejoined, NodeDraining, NodeSuspended, NodeResumed}
}

// ClusterEvent is a change in the cluster's nodes that this node saw in
// successive reads of the registrations (cluster.Member), or in its own
// lease.
type ClusterEvent struct {
	Kind ClusterEventKind
	// Node is the node it happened to; Self that it is this node.
	Node int32
	Self bool
	// Kafka is the node's advertised Kafka address, where known.
	Kafka string
	// Reason says more, in words: why a node was lost ("lease expired
	// or revoked", "left after draining", "registered again under a new
	// lease"), why this node was suspended.
	Reason string
	// Serving, Draining and Suspended count the nodes in each state
	// after the event, as this node sees them: registered and not
	// draining, registered and draining, and this node if it is
	// suspended (then not counted in the others).
	Serving, Draining, Suspended int
	At                           time.Time
}

// ClusterObserver is implemented by an Observer that wants cluster
// events (Nop and Multi do). ReportCluster hands one on.
type ClusterObserver interface {
	Cluster(e ClusterEvent)
}

// ReportCluster hands e to o if o wants cluster events.
func ReportCluster(o Observer, e ClusterEvent) {
	if c, ok := o.(ClusterObserver); ok {
		c.Cluster(e)
	}
}

// RequestWanter is implemented by an Observer that may not want request
// events (RequestReceived, RequestAnswered): the wire server then skips
// them, and what building them costs.
type RequestWanter interface {
	WantsRequests() bool
}

// WantsRequests reports whether o wants request events: not Nop, not an
// observer whose WantsRequests says no, and for Multi, any of its parts.
func WantsRequests(o Observer) bool {
	switch o := o.(type) {
	case nil, Nop:
		return false
	case multi:
		for _, p := range o {
			if WantsRequests(p) {
				return true
			}
		}
		return false
	case RequestWanter:
		return o.WantsRequests()
	}
	return true
}

// Nop ignores every event. Embed it to implement part of Observer.
type Nop struct{}

func (Nop) RequestReceived(ctx context.Context, _ Request) context.Context { return ctx }
func (Nop) RequestAnswered(context.Context, Request, Answer)               {}
func (Nop) BatchWritten(Batch)                                             {}
func (Nop) Group(context.Context, GroupEvent)                              {}
func (Nop) Shard(ShardEvent)                                               {}
func (Nop) Cluster(ClusterEvent)                                           {}

// Multi reports every event to each of obs in order.
func Multi(obs ...Observer) Observer {
	var keep multi
	for _, o := range obs {
		if o != nil {
			keep = append(keep, o)
		}
	}
	switch len(keep) {
	case 0:
		return Nop{}
	case 1:
		return keep[0]
	}
	return keep
}

type multi []Observer

func (m multi) RequestReceived(ctx context.Context, r Request) context.Context {
	for _, o := range m {
		ctx = o.RequestReceived(ctx, r)
	}
	return ctx
}

func (m multi) RequestAnswered(ctx context.Context, r Request, a Answer) {
	for _, o := range m {
		o.RequestAnswered(ctx, r, a)
	}
}

func (m multi) BatchWritten(b Batch) {
	for _, o := range m {
		o.BatchWritten(b)
	}
}

func (m multi) Group(ctx context.Context, e GroupEvent) {
	for _, o := range m {
		o.Group(ctx, e)
	}
}

func (m multi) Shard(e ShardEvent) {
	for _, o := range m {
		o.Shard(e)
	}
}

func (m multi) Cluster(e ClusterEvent) {
	for _, o := range m {
		ReportCluster(o, e)
	}
}
