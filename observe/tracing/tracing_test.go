package tracing

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// newObserver returns an Observer at ratio whose spans are exported at
// once, as they end, to the returned recorder, sampled by Sampler(ratio)
// as in a pipeline.
func newObserver(ratio float64) (*Observer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(Sampler(ratio)), sdktrace.WithSyncer(exp))
	return New(tp, ratio), exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func byName(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func joinRequest(group string) observe.Request {
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group = group
	return observe.Request{Key: kmsg.JoinGroup.Int16(), Version: 9, ClientID: "c1", Host: "127.0.0.1", Tenant: "", Size: 120, Received: time.Now(), Msg: jg}
}

// answer runs a request through the observer: received, then answered
// with resp. It returns the context the request's handler would get.
func answer(o *Observer, r observe.Request, resp kmsg.Response) context.Context {
	ctx := o.RequestReceived(context.Background(), r)
	o.RequestAnswered(ctx, r, observe.Answer{Resp: resp, Latency: time.Millisecond})
	return ctx
}

// TestRequestSpan: a request is a server span named after its API, with
// the request's attributes and, for an error, the error's code and name
// and an Error status.
func TestRequestSpan(t *testing.T) {
	o, exp := newObserver(1)
	r := joinRequest("g1")
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation, resp.MemberID, resp.LeaderID = 3, "m1", "m1"
	answer(o, r, resp)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g1"
	hr := observe.Request{Key: kmsg.Heartbeat.Int16(), Version: 4, ClientID: "c2", Host: "10.0.0.2", Size: 60, Received: time.Now(), Msg: hb}
	hresp := kmsg.NewPtrHeartbeatResponse()
	hresp.ErrorCode = kerr.RebalanceInProgress.Code
	answer(o, hr, hresp)

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	join, beat := spans[0], spans[1]
	if join.Name != "cohort.kafka.JoinGroup" || join.SpanKind != trace.SpanKindServer || join.Status.Code == codes.Error {
		t.Errorf("join span: %q kind %v status %v", join.Name, join.SpanKind, join.Status)
	}
	a := attrs(join)
	for k, want := range map[attribute.Key]attribute.Value{
		KeyRPCSystem: attribute.StringValue("kafka"), KeyRPCMethod: attribute.StringValue("JoinGroup"),
		KeyAPIKey: attribute.IntValue(11), KeyAPIVersion: attribute.IntValue(9), KeyClientID: attribute.StringValue("c1"),
		KeyPeer: attribute.StringValue("127.0.0.1"), KeyTenant: attribute.StringValue(""), KeyRequestSize: attribute.IntValue(120),
		KeyGroup: attribute.StringValue("g1"), KeyErrorCode: attribute.IntValue(0),
		KeyGeneration: attribute.IntValue(3), KeyMember: attribute.StringValue("m1"), KeyLeader: attribute.StringValue("m1"),
	} {
		if a[k] != want {
			t.Errorf("join span %s = %v, want %v", k, a[k].String(), want.String())
		}
	}
	if _, ok := a[KeyErrorType]; ok {
		t.Errorf("join span with no error has %s", KeyErrorType)
	}
	b := attrs(beat)
	if beat.Name != "cohort.kafka.Heartbeat" || beat.Status.Code != codes.Error ||
		b[KeyErrorCode] != attribute.IntValue(27) || b[KeyErrorType] != attribute.StringValue("REBALANCE_IN_PROGRESS") {
		t.Errorf("heartbeat span %q status %v attributes %v", beat.Name, beat.Status, beat.Attributes)
	}
	if !beat.EndTime.After(beat.StartTime) && !beat.EndTime.Equal(beat.StartTime) {
		t.Errorf("heartbeat span ends (%v) before it starts (%v)", beat.EndTime, beat.StartTime)
	}

	// No response (acks=0, or the connection failed): said so, no code.
	exp.Reset()
	answer(o, observe.Request{Key: kmsg.Produce.Int16(), Received: time.Now()}, nil)
	if s := exp.GetSpans(); len(s) != 1 || attrs(s[0])[KeyNoResponse] != attribute.BoolValue(true) {
		t.Errorf("no-response span: %+v", s)
	}
}

// linked returns the span contexts s links to with relation rel.
func linked(s tracetest.SpanStub, rel string) []trace.SpanContext {
	var out []trace.SpanContext
	for _, l := range s.Links {
		for _, kv := range l.Attributes {
			if kv.Key == KeyLinkRelation && kv.Value.AsString() == rel {
				out = append(out, l.SpanContext)
			}
		}
	}
	return out
}

// TestCompletionLinksJoins: a rebalance completion links the group's
// JoinGroups received since its previous completion (not another
// group's, not the same tenant-less group's earlier rounds) and the
// request that completed it; it spans the rebalance.
func TestCompletionLinksJoins(t *testing.T) {
	o, exp := newObserver(1)
	jctx1 := answer(o, joinRequest("g"), kmsg.NewPtrJoinGroupResponse())
	jctx2 := answer(o, joinRequest("g"), kmsg.NewPtrJoinGroupResponse())
	answer(o, joinRequest("other"), kmsg.NewPtrJoinGroupResponse())
	sync := observe.Request{Key: kmsg.SyncGroup.Int16(), Received: time.Now(), Msg: &kmsg.SyncGroupRequest{Group: "g"}}
	sctx := o.RequestReceived(context.Background(), sync)

	at := time.Now()
	done := observe.GroupEvent{Kind: observe.RebalanceCompleted, Group: "g", Protocol: "classic", Generation: 4, Members: 2, Leader: "m1", Duration: 250 * time.Millisecond, At: at}
	o.Group(sctx, done)
	o.RequestAnswered(sctx, sync, observe.Answer{Resp: kmsg.NewPtrSyncGroupResponse()})

	c := byName(exp.GetSpans(), RebalanceCompleteName)
	if len(c) != 1 {
		t.Fatalf("%d completion spans", len(c))
	}
	got := c[0]
	joins := linked(got, linkJoin)
	want := []trace.SpanContext{trace.SpanContextFromContext(jctx1), trace.SpanContextFromContext(jctx2)}
	if len(joins) != 2 || !joins[0].Equal(want[0]) || !joins[1].Equal(want[1]) {
		t.Errorf("completion links joins %v, want %v", joins, want)
	}
	if by := linked(got, linkCausedBy); len(by) != 1 || !by[0].Equal(trace.SpanContextFromContext(sctx)) {
		t.Errorf("completion caused by %v, want the SyncGroup", by)
	}
	if got.Parent.IsValid() || got.SpanContext.TraceID() == trace.SpanContextFromContext(sctx).TraceID() {
		t.Errorf("completion is not the root of its own trace: parent %v", got.Parent)
	}
	if !got.StartTime.Equal(at.Add(-250*time.Millisecond)) || !got.EndTime.Equal(at) {
		t.Errorf("completion spans %v..%v, want the rebalance's 250ms ending %v", got.StartTime, got.EndTime, at)
	}
	a := attrs(got)
	if a[KeyGroup] != attribute.StringValue("g") || a[KeyGeneration] != attribute.IntValue(4) || a[KeyLeader] != attribute.StringValue("m1") ||
		a[KeyProtocol] != attribute.StringValue("classic") || a[KeyMembers] != attribute.IntValue(2) {
		t.Errorf("completion attributes %v", got.Attributes)
	}

	// The next completion of g starts afresh; other's joins are still
	// waiting for its own.
	exp.Reset()
	o.Group(context.Background(), done)
	o.Group(context.Background(), observe.GroupEvent{Kind: observe.RebalanceCompleted, Group: "other", Protocol: "classic", At: at})
	c = byName(exp.GetSpans(), RebalanceCompleteName)
	if len(c) != 2 || len(c[0].Links) != 0 || len(linked(c[1], linkJoin)) != 1 {
		t.Errorf("second completions: %d spans, links %v", len(c), c)
	}
}

// TestJoinMemoryIsBounded: a group's links stop at the SDK's link limit,
// and groups that never complete do not grow the memory past its cap.
func TestJoinMemoryIsBounded(t *testing.T) {
	o, _ := newObserver(1)
	for range maxJoinsPerGroup + 10 {
		answer(o, joinRequest("big"), nil)
	}
	if n := len(o.joins[groupKey{"", "big"}]); n != maxJoinsPerGroup {
		t.Errorf("%d joins kept for one group, want %d", n, maxJoinsPerGroup)
	}
	for i := range maxGroupsRemembered + 10 {
		o.rememberJoin("", string(rune('a'+i%26))+string(rune(i)), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: [16]byte{1}, SpanID: [8]byte{1}, TraceFlags: trace.FlagsSampled,
		}))
	}
	if n := len(o.joins); n > maxGroupsRemembered {
		t.Errorf("%d groups remembered, cap %d", n, maxGroupsRemembered)
	}
}

// TestGroupAndStoreSpans: member events are spans linked to their
// request (none for a timer); a store write spans its latency, ending
// now, with its error; a shard load spans its loading.
func TestGroupAndStoreSpans(t *testing.T) {
	o, exp := newObserver(1)
	jctx := o.RequestReceived(context.Background(), joinRequest("g"))
	at := time.Now()
	o.Group(jctx, observe.GroupEvent{Kind: observe.MemberJoined, Group: "g", Protocol: "classic", Member: "m1", InstanceID: "i1", Members: 1, At: at})
	o.Group(context.Background(), observe.GroupEvent{Kind: observe.MemberExpired, Group: "g", Protocol: "classic", Member: "m1", Reason: "session timed out", At: at})
	before := time.Now()
	o.BatchWritten(observe.Batch{Shard: 3, Records: 7, Bytes: 900, Latency: 2 * time.Millisecond})
	o.BatchWritten(observe.Batch{Shard: 3, Records: 1, Err: errors.New("disk full")})
	o.Shard(observe.ShardEvent{Kind: observe.ShardLoading, Shard: 2})
	o.Shard(observe.ShardEvent{Kind: observe.ShardLoaded, Shard: 2, Records: 10, Took: time.Second})

	spans := exp.GetSpans()
	joined := byName(spans, "cohort.group.member-joined")
	if len(joined) != 1 || attrs(joined[0])[KeyMember] != attribute.StringValue("m1") || attrs(joined[0])[KeyInstanceID] != attribute.StringValue("i1") {
		t.Fatalf("member-joined spans: %+v", joined)
	}
	if by := linked(joined[0], linkCausedBy); len(by) != 1 || !by[0].Equal(trace.SpanContextFromContext(jctx)) {
		t.Errorf("member-joined caused by %v, want the JoinGroup", by)
	}
	expired := byName(spans, "cohort.group.member-expired")
	if len(expired) != 1 || len(expired[0].Links) != 0 || attrs(expired[0])[KeyReason] != attribute.StringValue("session timed out") {
		t.Errorf("member-expired spans (a timer's: no links): %+v", expired)
	}
	writes := byName(spans, StoreWriteName)
	if len(writes) != 2 {
		t.Fatalf("%d store-write spans", len(writes))
	}
	w := writes[0]
	if a := attrs(w); a[KeyShard] != attribute.IntValue(3) || a[KeyRecords] != attribute.IntValue(7) || a[KeyBytes] != attribute.IntValue(900) {
		t.Errorf("store write attributes %v", w.Attributes)
	}
	if d := w.EndTime.Sub(w.StartTime); d != 2*time.Millisecond || w.EndTime.Before(before) || w.Parent.IsValid() {
		t.Errorf("store write spans %v ending %v (parent %v): want its 2ms latency, ending now, a root", d, w.EndTime, w.Parent)
	}
	if writes[1].Status.Code != codes.Error || writes[1].Status.Description != "disk full" {
		t.Errorf("failed write status %v", writes[1].Status)
	}
	loads := byName(spans, ShardLoadName)
	if len(loads) != 1 || loads[0].EndTime.Sub(loads[0].StartTime) != time.Second || attrs(loads[0])[KeyRecords] != attribute.IntValue(10) {
		t.Errorf("shard load spans (loading is none): %+v", loads)
	}
}

// TestSamplerAtZero: nothing is kept, no JoinGroup is remembered, and a
// request or store write not kept allocates nothing: the SDK is not
// even asked.
func TestSamplerAtZero(t *testing.T) {
	o, exp := newObserver(0)
	r := joinRequest("g")
	resp := kmsg.NewPtrJoinGroupResponse()
	answer(o, r, resp)
	o.Group(context.Background(), observe.GroupEvent{Kind: observe.RebalanceCompleted, Group: "g", Protocol: "classic", At: time.Now()})
	o.BatchWritten(observe.Batch{Shard: 1, Records: 1})
	o.Shard(observe.ShardEvent{Kind: observe.ShardLoaded})
	if s := exp.GetSpans(); len(s) != 0 {
		t.Errorf("%d spans kept at ratio 0: %v", len(s), s)
	}
	if len(o.joins) != 0 {
		t.Errorf("unsampled JoinGroups remembered: %v", o.joins)
	}
	commit := observe.Request{Key: kmsg.OffsetCommit.Int16(), Version: 8, ClientID: "c", Host: "127.0.0.1", Received: time.Now(), Msg: kmsg.NewPtrOffsetCommitRequest()}
	cresp := kmsg.NewPtrOffsetCommitResponse()
	allocs := testing.AllocsPerRun(1000, func() {
		ctx := o.RequestReceived(context.Background(), commit)
		o.RequestAnswered(ctx, commit, observe.Answer{Resp: cresp})
	})
	if allocs != 0 {
		t.Errorf("an unsampled request costs %v allocations, want none", allocs)
	}
	bAllocs := testing.AllocsPerRun(1000, func() { o.BatchWritten(observe.Batch{Shard: 1, Records: 5, Bytes: 100}) })
	if bAllocs != 0 {
		t.Errorf("an unsampled store write costs %v allocations, want none", bAllocs)
	}
}

// TestSamplerKeepsGroupSpans: at a ratio that keeps (almost) no request,
// group and shard spans are kept all the same; at 50%, about half the
// requests are. The pipeline's sampler keeps Cohort's spans (decided by
// the Observer) and samples the rest (gRPC calls) parent-based.
func TestSamplerKeepsGroupSpans(t *testing.T) {
	o, exp := newObserver(1e-12)
	for range 100 {
		answer(o, joinRequest("g"), kmsg.NewPtrJoinGroupResponse())
	}
	o.Group(context.Background(), observe.GroupEvent{Kind: observe.RebalanceStarted, Group: "g", Protocol: "classic", At: time.Now()})
	o.Shard(observe.ShardEvent{Kind: observe.ShardUnloaded, Reason: "released"})
	spans := exp.GetSpans()
	if len(spans) != 2 || len(byName(spans, RebalanceStartName)) != 1 || len(byName(spans, ShardUnloadName)) != 1 {
		t.Errorf("kept at 1e-12: %d spans %v, want the rebalance start and the shard unload", len(spans), spans)
	}

	o, exp = newObserver(0.5)
	for range 1000 {
		answer(o, joinRequest("g"), nil)
	}
	// Binomial(1000, 0.5): outside 400..600 with probability ~1e-10.
	if n := len(exp.GetSpans()); n < 400 || n > 600 {
		t.Errorf("%d of 1000 requests kept at 0.5", n)
	}

	s := Sampler(1e-12)
	parent := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: [16]byte{1}, SpanID: [8]byte{1}, TraceFlags: trace.FlagsSampled,
	}))
	const call = "kafka_assigner.v1.KafkaAssigner/PartitionReady"
	if d := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: parent, TraceID: [16]byte{1}, Name: call}).Decision; d != sdktrace.RecordAndSample {
		t.Errorf("a call whose caller sampled it: %v", d)
	}
	if d := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: [16]byte{15: 0xff, 14: 0xff, 8: 0xff}, Name: call}).Decision; d != sdktrace.Drop {
		t.Errorf("a call with no parent at 1e-12: %v", d)
	}
	if d := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: [16]byte{15: 0xff, 14: 0xff, 8: 0xff}, Name: "cohort.kafka.Heartbeat"}).Decision; d != sdktrace.RecordAndSample {
		t.Errorf("a request the Observer started: %v", d)
	}
}

// unsetenv unsets the variables for the test (t.Setenv restores them):
// set but empty, the SDK would read them as a sampler named "".
func unsetenv(t *testing.T, keys ...string) {
	for _, k := range keys {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestRatioFromEnv(t *testing.T) {
	unsetenv(t, envSampler, envSamplerArg)
	for _, tc := range []struct {
		sampler, arg string
		ratio        float64
		ok, err      bool
	}{
		{"always_on", "", 1, true, false},
		{"parentbased_always_off", "", 0, true, false},
		{"traceidratio", "0.25", 0.25, true, false},
		{"parentbased_traceidratio", "", 1, true, false},
		{"parentbased_traceidratio", "2", 0, false, true},
		{"parentbased_traceidratio", "x", 0, false, true},
		{"jaeger_remote", "", 0, false, true},
	} {
		t.Setenv(envSampler, tc.sampler)
		t.Setenv(envSamplerArg, tc.arg)
		r, ok, err := RatioFromEnv()
		if r != tc.ratio || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%s=%q %s=%q: %v %v %v", envSampler, tc.sampler, envSamplerArg, tc.arg, r, ok, err)
		}
	}
}

// TestStart: off with nothing set; an endpoint from a flag or the
// standard variables turns it on; bad endpoints and ratios are refused.
func TestStart(t *testing.T) {
	unsetenv(t, envEndpoint, envTracesEndpoint, envSampler, envSamplerArg)
	if p, err := Start(Config{}); p != nil || err != nil {
		t.Fatalf("Start with nothing set: %v, %v; want off", p, err)
	}
	bad := 1.5
	for _, cfg := range []Config{
		{Endpoint: "no-port"},
		{Endpoint: "ftp://h:1"},
		{Endpoint: "http://"},
		{Endpoint: "127.0.0.1:4317", SampleRatio: &bad},
	} {
		if p, err := Start(cfg); err == nil {
			p.Shutdown(context.Background())
			t.Errorf("Start(%+v) succeeded", cfg)
		}
	}
	for _, cfg := range []Config{{Endpoint: "127.0.0.1:4317"}, {Endpoint: "https://collector.invalid:4317"}} {
		p, err := Start(cfg)
		if err != nil || p == nil || p.Ratio() != DefaultSampleRatio {
			t.Fatalf("Start(%+v): %v, %v", cfg, p, err)
		}
		p.Shutdown(context.Background())
	}
	if _, ok, _ := RatioFromEnv(); ok {
		t.Errorf("RatioFromEnv with no sampler set says ok")
	}
	t.Setenv(envEndpoint, "http://127.0.0.1:4317")
	t.Setenv(envSampler, "traceidratio")
	t.Setenv(envSamplerArg, "0.5")
	p, err := Start(Config{})
	if err != nil || p == nil || p.Ratio() != 0.5 {
		t.Fatalf("Start from the environment: %v, %v", p, err)
	}
	p.Shutdown(context.Background())
	zero := 0.0
	if p, err = Start(Config{SampleRatio: &zero}); err != nil || p.Ratio() != 0 {
		t.Fatalf("a ratio set wins over the environment's: %v, %v", p, err)
	}
	p.Shutdown(context.Background())
}
