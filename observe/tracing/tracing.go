// Package tracing turns Cohort's observer events into OpenTelemetry spans:
// a server span per Kafka request, a span per rebalance (linked to the
// JoinGroup requests that formed it) and per member event, a span per
// store batch write and per shard load, and, through otelgrpc, a span per
// call of the gRPC assignment service. Start builds the pipeline (the
// SDK's batch processor, a sampler, an OTLP/gRPC exporter); Observer can
// also be fed any TracerProvider.
//
// It is installed only when tracing is on (node.Config.OTLPEndpoint or the
// standard OTEL_EXPORTER_OTLP_* variables): a node without it pays nothing,
// not even for building request events. Like every observer it is called
// from connection goroutines and shard loops at once and must not block:
// it starts and ends spans, the batch processor queues them (dropping
// when its queue is full rather than waiting) and exports them on its own
// goroutine. It reads Cohort's types only; it must not reach into the
// coordinator or the wire server.
package tracing

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of Cohort's spans.
const ScopeName = "github.com/cohort-dev/cohort"

// Span names. Requests are "cohort.kafka." and the API's name
// ("cohort.kafka.JoinGroup").
const (
	RebalanceStartName    = "cohort.group.rebalance-start"
	RebalanceCompleteName = "cohort.group.rebalance-complete"
	StoreWriteName        = "cohort.store.write"
	ShardLoadName         = "cohort.shard.load"
	ShardUnloadName       = "cohort.shard.unload"
	cohortPrefix          = "cohort."
	requestPrefix         = "cohort.kafka."
	groupPrefix           = "cohort.group."
)

// Attribute keys. Where OpenTelemetry's semantic conventions have a name
// (rpc.*, messaging.*, network.*, error.type) it is used; the rest are
// Cohort's, under "cohort.".
const (
	KeyRPCSystem    = attribute.Key("rpc.system") // "kafka"
	KeyRPCMethod    = attribute.Key("rpc.method") // the API ("JoinGroup")
	KeyMessagingSys = attribute.Key("messaging.system")
	KeyClientID     = attribute.Key("messaging.client.id")
	KeyGroup        = attribute.Key("messaging.consumer.group.name")
	KeyPeer         = attribute.Key("network.peer.address")
	KeyErrorType    = attribute.Key("error.type") // the Kafka error's name
	KeyAPIKey       = attribute.Key("cohort.kafka.api_key")
	KeyAPIVersion   = attribute.Key("cohort.kafka.api_version")
	KeyRequestSize  = attribute.Key("cohort.kafka.request_size") // bytes of the frame
	KeyErrorCode    = attribute.Key("cohort.kafka.error_code")   // the response's first non-zero code
	KeyNoResponse   = attribute.Key("cohort.kafka.no_response")  // true: acks=0, or the connection failed first
	KeyTenant       = attribute.Key("cohort.tenant")
	KeyProtocol     = attribute.Key("cohort.group.protocol") // "classic" or "consumer"
	KeyGeneration   = attribute.Key("cohort.group.generation")
	KeyLeader       = attribute.Key("cohort.group.leader")
	KeyMembers      = attribute.Key("cohort.group.members")
	KeyMember       = attribute.Key("cohort.group.member")
	KeyInstanceID   = attribute.Key("cohort.group.instance_id")
	KeyReason       = attribute.Key("cohort.group.reason")
	KeyShard        = attribute.Key("cohort.shard")
	KeyRecords      = attribute.Key("cohort.store.records")
	KeyBytes        = attribute.Key("cohort.store.bytes")
	KeyLinkRelation = attribute.Key("cohort.link") // on a link: "caused-by" or "join"
)

const (
	linkCausedBy        = "caused-by" // the request whose handling reported the event
	linkJoin            = "join"      // a JoinGroup of the rebalance
	systemKafka         = "kafka"
	maxJoinsPerGroup    = 127   // JoinGroups a completion links: with its caused-by link, the SDK's default limit of 128
	maxGroupsRemembered = 10000 // groups with JoinGroups waiting for their completion
)

// requestNames holds "cohort.kafka.<API>" for every key, built once so
// that starting a request's span concatenates nothing.
var requestNames = func() []string {
	names := make([]string, kmsg.MaxKey+1)
	for k := range names {
		names[k] = requestPrefix + kmsg.NameForKey(int16(k))
	}
	return names
}()

// RequestName returns the span name of requests with API key k.
func RequestName(k int16) string {
	if k >= 0 && int(k) < len(requestNames) {
		return requestNames[k]
	}
	return requestPrefix + "Unknown"
}

// groupNames names the span of each group event kind.
var groupNames = [...]string{
	observe.RebalanceStarted:   RebalanceStartName,
	observe.RebalanceCompleted: RebalanceCompleteName,
	observe.MemberJoined:       groupPrefix + "member-joined",
	observe.MemberLeft:         groupPrefix + "member-left",
	observe.MemberExpired:      groupPrefix + "member-expired",
	observe.MemberFenced:       groupPrefix + "member-fenced",
}

// Observer is an observe.Observer that makes spans with a tracer of its
// TracerProvider.
//
// Sampling: the Observer decides which of its spans to start, and its
// provider's sampler should keep the "cohort." spans it is handed
// (Sampler does). Requests and store writes are kept with the ratio's
// probability; they are roots (a Kafka request carries no trace
// context), so this is what a parent-based ratio sampler would decide,
// but decided before the SDK is called: one random number, and nothing
// else, for a request not kept. Group and shard spans are kept whenever
// the ratio is above 0: they are rare (a few per rebalance or shard
// move), and what tracing a coordinator is most often for; at 1% a
// rebalance would almost never be seen.
//
// Requests: one SpanKindServer span each, from when the request was
// decoded to its response being built, its attributes set in one go
// when it ends.
//
// Group events: a span each, the root of its own trace, linked to the
// request whose handling reported it ("caused-by"; none for a timer). A
// rebalance involves every member's requests, and no one of them owns it. A
// completion spans the whole rebalance (from its start, GroupEvent
// Duration) and also links the JoinGroups of the group received since
// its previous completion (at most 127: with the caused-by link, the
// SDK's default limit of 128): the requests that formed the generation,
// MEMBER_ID_REQUIRED rounds included. They are remembered when received, not answered: a
// follower's JoinGroup is received before the completion it takes part
// in, while its answer may be written after the leader's SyncGroup has
// completed the rebalance. Only sampled JoinGroups are remembered; a link
// to a trace nobody kept leads nowhere.
//
// Store writes: a root span per shard batch, from the write's start
// (now less its latency) to now. A batch is a group commit of many
// requests' records, so no one request is its parent.
type Observer struct {
	tracer trace.Tracer
	// all, none and below: a request or store write is kept if all,
	// never if none, else if a random uint64 is below below.
	all, none bool
	below     uint64

	mu    sync.Mutex
	joins map[groupKey][]trace.Link // sampled JoinGroups since the group's last completion
}

type groupKey struct{ tenant, group string }

var _ observe.Observer = (*Observer)(nil)

// New returns an Observer whose spans go to tp, keeping requests and
// store writes with probability ratio (0 to 1) and group and shard spans
// when ratio is above 0. tp's sampler should keep the spans it is handed
// (Sampler does; so does the SDK's default).
func New(tp trace.TracerProvider, ratio float64) *Observer {
	o := &Observer{
		tracer: tp.Tracer(ScopeName),
		all:    ratio >= 1,
		none:   !(ratio > 0), // NaN too
		joins:  map[groupKey][]trace.Link{},
	}
	if !o.all && !o.none {
		o.below = uint64(ratio * (1 << 64))
	}
	return o
}

// keep decides whether to start a span for a request or a store write.
func (o *Observer) keep() bool {
	switch {
	case o.all:
		return true
	case o.none:
		return false
	}
	// math/rand/v2's generator is per thread: no lock to contend for.
	return rand.Uint64() < o.below
}

// serverKind is built once: an option boxed in an interface per request
// would be an allocation per request.
var serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// RequestReceived starts the request's span, if it is kept.
func (o *Observer) RequestReceived(ctx context.Context, r observe.Request) context.Context {
	if !o.keep() {
		return ctx
	}
	ctx, span := o.tracer.Start(ctx, RequestName(r.Key), serverKind...)
	if jg, ok := r.Msg.(*kmsg.JoinGroupRequest); ok && span.IsRecording() {
		o.rememberJoin(r.Tenant, jg.Group, span.SpanContext())
	}
	return ctx
}

// RequestAnswered ends the request's span with its attributes and the
// response's error code.
func (o *Observer) RequestAnswered(ctx context.Context, r observe.Request, a observe.Answer) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return // not kept
	}
	// One SetAttributes, from an array on the stack: the span copies
	// them once.
	var buf [16]attribute.KeyValue
	attrs := append(buf[:0],
		KeyRPCSystem.String(systemKafka),
		KeyRPCMethod.String(r.API()),
		KeyMessagingSys.String(systemKafka),
		KeyAPIKey.Int(int(r.Key)),
		KeyAPIVersion.Int(int(r.Version)),
		KeyClientID.String(r.ClientID),
		KeyPeer.String(r.Host),
		KeyTenant.String(r.Tenant),
		KeyRequestSize.Int(r.Size),
	)
	if g := groupOf(r.Msg); g != "" {
		attrs = append(attrs, KeyGroup.String(g))
	}
	if a.Resp == nil {
		attrs = append(attrs, KeyNoResponse.Bool(true))
	} else {
		code := a.ErrorCode()
		attrs = append(attrs, KeyErrorCode.Int(int(code)))
		if code != 0 {
			name, desc := strconv.Itoa(int(code)), "Kafka error code "+strconv.Itoa(int(code))
			if e := kerr.TypedErrorForCode(code); e.Code == code {
				name, desc = e.Message, e.Error()
			}
			attrs = append(attrs, KeyErrorType.String(name))
			span.SetStatus(codes.Error, desc)
		}
		if jr, ok := a.Resp.(*kmsg.JoinGroupResponse); ok && code == 0 {
			attrs = append(attrs, KeyGeneration.Int(int(jr.Generation)), KeyMember.String(jr.MemberID), KeyLeader.String(jr.LeaderID))
		}
	}
	span.SetAttributes(attrs...)
	span.End()
}

// groupOf returns the group a group request names, or "".
func groupOf(m kmsg.Request) string {
	switch m := m.(type) {
	case *kmsg.JoinGroupRequest:
		return m.Group
	case *kmsg.SyncGroupRequest:
		return m.Group
	case *kmsg.HeartbeatRequest:
		return m.Group
	case *kmsg.LeaveGroupRequest:
		return m.Group
	case *kmsg.OffsetCommitRequest:
		return m.Group
	case *kmsg.TxnOffsetCommitRequest:
		return m.Group
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return m.Group
	case *kmsg.OffsetDeleteRequest:
		return m.Group
	case *kmsg.OffsetFetchRequest:
		if len(m.Groups) == 1 {
			return m.Groups[0].Group
		}
		return m.Group
	}
	return ""
}

// rememberJoin keeps a sampled JoinGroup's span context for the links of
// its group's next completion.
func (o *Observer) rememberJoin(tenant, group string, sc trace.SpanContext) {
	if !sc.IsSampled() {
		return
	}
	k := groupKey{tenant, group}
	o.mu.Lock()
	defer o.mu.Unlock()
	links, ok := o.joins[k]
	if !ok && len(o.joins) >= maxGroupsRemembered {
		// A group whose rebalance never completes (its members all
		// gone) would hold its entry for ever: past the cap, forget
		// one, any one, rather than grow.
		for old := range o.joins {
			delete(o.joins, old)
			break
		}
	}
	if len(links) >= maxJoinsPerGroup {
		return
	}
	o.joins[k] = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{KeyLinkRelation.String(linkJoin)}})
}

// takeJoins returns and forgets the JoinGroups remembered for a group.
func (o *Observer) takeJoins(tenant, group string) []trace.Link {
	k := groupKey{tenant, group}
	o.mu.Lock()
	defer o.mu.Unlock()
	links := o.joins[k]
	delete(o.joins, k)
	return links
}

// Group makes a span of a group event, the root of its own trace.
func (o *Observer) Group(ctx context.Context, e observe.GroupEvent) {
	if int(e.Kind) >= len(groupNames) || groupNames[e.Kind] == "" || o.none {
		return
	}
	start := e.At
	var links []trace.Link
	if e.Kind == observe.RebalanceCompleted {
		start = e.At.Add(-e.Duration)
		links = o.takeJoins(e.Tenant, e.Group)
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{KeyLinkRelation.String(linkCausedBy)}})
	}
	_, span := o.tracer.Start(context.Background(), groupNames[e.Kind],
		trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithLinks(links...))
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		KeyMessagingSys.String(systemKafka),
		KeyGroup.String(e.Group),
		KeyTenant.String(e.Tenant),
		KeyProtocol.String(e.Protocol),
		KeyGeneration.Int(int(e.Generation)),
		KeyMembers.Int(e.Members),
	)
	if e.Member != "" {
		span.SetAttributes(KeyMember.String(e.Member))
	}
	if e.InstanceID != "" {
		span.SetAttributes(KeyInstanceID.String(e.InstanceID))
	}
	if e.Reason != "" {
		span.SetAttributes(KeyReason.String(e.Reason))
	}
	if e.Leader != "" {
		span.SetAttributes(KeyLeader.String(e.Leader))
	}
	span.End(trace.WithTimestamp(e.At))
}

// BatchWritten makes a root span of a shard's store write.
func (o *Observer) BatchWritten(b observe.Batch) {
	if !o.keep() {
		return
	}
	end := time.Now()
	_, span := o.tracer.Start(context.Background(), StoreWriteName, trace.WithTimestamp(end.Add(-b.Latency)))
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(KeyShard.Int(int(b.Shard)), KeyRecords.Int(b.Records), KeyBytes.Int(b.Bytes))
	if b.Err != nil {
		span.RecordError(b.Err)
		span.SetStatus(codes.Error, b.Err.Error())
	}
	span.End(trace.WithTimestamp(end))
}

// Shard makes a span of a shard's load (from its start, now less the time
// it took) or unload; loading is not one.
func (o *Observer) Shard(e observe.ShardEvent) {
	var name string
	switch e.Kind {
	case observe.ShardLoaded:
		name = ShardLoadName
	case observe.ShardUnloaded:
		name = ShardUnloadName
	default:
		return
	}
	if o.none {
		return
	}
	end := time.Now()
	_, span := o.tracer.Start(context.Background(), name, trace.WithTimestamp(end.Add(-e.Took)))
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(KeyShard.Int(int(e.Shard)))
	switch {
	case e.Err != nil:
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	case e.Kind == observe.ShardLoaded:
		span.SetAttributes(KeyRecords.Int(e.Records))
	default:
		span.SetAttributes(KeyReason.String(e.Reason))
	}
	span.End(trace.WithTimestamp(end))
}
