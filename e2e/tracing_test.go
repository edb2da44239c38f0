package e2e

// Tracing, end to end: real franz-go consumers and a real gRPC client
// against a node with tracing on, and the spans that come out, through
// the SDK's in-memory exporter or over OTLP/gRPC to a receiver in this
// process.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe/tracing"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// keptSpans is an in-memory exporter that keeps its spans when the node
// shuts it down (tracetest's forgets them).
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }

func spanAttr(s tracetest.SpanStub, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// linksOf returns the span contexts s links to with relation rel
// ("join", "caused-by").
func linksOf(s tracetest.SpanStub, rel string) []trace.SpanContext {
	var out []trace.SpanContext
	for _, l := range s.Links {
		for _, kv := range l.Attributes {
			if kv.Key == tracing.KeyLinkRelation && kv.Value.AsString() == rel {
				out = append(out, l.SpanContext)
			}
		}
	}
	return out
}

// rebalanceTrace is what the test waits for: the completion of a
// generation with both members, and each member's JoinGroup of that
// generation among the spans it links.
type rebalanceTrace struct {
	spans     tracetest.SpanStubs
	byID      map[trace.SpanID]tracetest.SpanStub
	done      tracetest.SpanStub
	joinOf    map[string]tracetest.SpanStub // client id → its JoinGroup answered with the generation
	completed bool
}

func findRebalance(spans tracetest.SpanStubs, group string, clients []string) rebalanceTrace {
	rt := rebalanceTrace{spans: spans, byID: map[trace.SpanID]tracetest.SpanStub{}, joinOf: map[string]tracetest.SpanStub{}}
	for _, s := range spans {
		rt.byID[s.SpanContext.SpanID()] = s
	}
	for _, s := range spans {
		if s.Name != tracing.RebalanceCompleteName || spanAttr(s, tracing.KeyGroup).AsString() != group || spanAttr(s, tracing.KeyMembers).AsInt64() != 2 {
			continue
		}
		gen := spanAttr(s, tracing.KeyGeneration).AsInt64()
		joins := map[string]tracetest.SpanStub{}
		for _, sc := range linksOf(s, "join") {
			j, ok := rt.byID[sc.SpanID()]
			if ok && j.Name == "cohort.kafka.JoinGroup" && spanAttr(j, tracing.KeyGeneration).AsInt64() == gen {
				joins[spanAttr(j, tracing.KeyClientID).AsString()] = j
			}
		}
		if len(joins) == len(clients) {
			rt.done, rt.joinOf, rt.completed = s, joins, true
		}
	}
	return rt
}

// TestTracingRebalanceOfRealClients: two franz-go consumers in a classic
// group produce JoinGroup and SyncGroup server spans, a rebalance
// completion linked to both members' JoinGroups with the generation and
// the leader they were told, member-joined spans linked to the JoinGroup
// that added each member, and store-write spans.
func TestTracingRebalanceOfRealClients(t *testing.T) {
	// Export every 20 ms, so the test waits for spans, not for the
	// batch processor's 5 s.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	exp := keptSpans{tracetest.NewInMemoryExporter()}
	every := 1.0
	cfg := node.Config{TraceExporter: exp, TraceSampleRatio: &every}
	cfg.Groups.InitialRebalanceDelay = 3 * time.Second
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n := testkit.StartNode(t, cfg)
	topic, group := "traced", "traced-group"
	clients := []string{"traced-1", "traced-2"}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	extCreateTopic(t, n.KafkaAddr(), topic, 4)
	for _, id := range clients {
		cl := pollingMember(ctx, t, kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID(id), kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
		defer cl.Close()
	}

	var rt rebalanceTrace
	testkit.Eventually(t, 30*time.Second, "a completion with both members, linked to both members' JoinGroups", func() bool {
		rt = findRebalance(exp.GetSpans(), group, clients)
		return rt.completed
	})
	done := rt.done
	gen := spanAttr(done, tracing.KeyGeneration).AsInt64()
	leader := spanAttr(done, tracing.KeyLeader).AsString()
	if done.Parent.IsValid() || spanAttr(done, tracing.KeyProtocol).AsString() != "classic" || gen < 1 {
		t.Errorf("completion: parent %v, attributes %v", done.Parent, done.Attributes)
	}
	// The leader is the one both members were told, and one of them.
	var members []string
	for _, id := range clients {
		j := rt.joinOf[id]
		members = append(members, spanAttr(j, tracing.KeyMember).AsString())
		if got := spanAttr(j, tracing.KeyLeader).AsString(); got != leader {
			t.Errorf("%s was told leader %q; the completion says %q", id, got, leader)
		}
	}
	if leader == "" || !slices.Contains(members, leader) {
		t.Fatalf("completion's leader %q is not one of the members %v", leader, members)
	}
	// It was completed by the leader's SyncGroup.
	by := linksOf(done, "caused-by")
	if len(by) != 1 {
		t.Fatalf("completion caused by %v", by)
	}
	sync := rt.byID[by[0].SpanID()]
	leaderClient := clients[slices.Index(members, leader)]
	if sync.Name != "cohort.kafka.SyncGroup" || spanAttr(sync, tracing.KeyClientID).AsString() != leaderClient || spanAttr(sync, tracing.KeyGroup).AsString() != group {
		t.Errorf("completion caused by %q of %q, want the leader's (%s) SyncGroup", sync.Name, spanAttr(sync, tracing.KeyClientID).AsString(), leaderClient)
	}

	// The tree of one JoinGroup: its span, its attributes, and what
	// links to it.
	j := rt.joinOf["traced-2"]
	if j.SpanKind != trace.SpanKindServer || j.Parent.IsValid() || j.Status.Code != 0 || j.EndTime.Before(j.StartTime) {
		t.Errorf("JoinGroup span: kind %v, parent %v, status %v, %v..%v", j.SpanKind, j.Parent, j.Status, j.StartTime, j.EndTime)
	}
	for k, want := range map[attribute.Key]attribute.Value{
		tracing.KeyRPCSystem: attribute.StringValue("kafka"), tracing.KeyRPCMethod: attribute.StringValue("JoinGroup"),
		tracing.KeyAPIKey: attribute.IntValue(11), tracing.KeyClientID: attribute.StringValue("traced-2"),
		tracing.KeyPeer: attribute.StringValue("127.0.0.1"), tracing.KeyGroup: attribute.StringValue(group),
		tracing.KeyErrorCode: attribute.IntValue(0), tracing.KeyGeneration: attribute.Int64Value(gen),
	} {
		if got := spanAttr(j, k); got != want {
			t.Errorf("JoinGroup %s = %v, want %v", k, got.String(), want.String())
		}
	}
	if spanAttr(j, tracing.KeyAPIVersion).AsInt64() < 4 || spanAttr(j, tracing.KeyRequestSize).AsInt64() <= 0 {
		t.Errorf("JoinGroup version %v, size %v", spanAttr(j, tracing.KeyAPIVersion).String(), spanAttr(j, tracing.KeyRequestSize).String())
	}
	var linkers []string
	for _, s := range rt.spans {
		for _, l := range s.Links {
			if l.SpanContext.SpanID() == j.SpanContext.SpanID() {
				linkers = append(linkers, s.Name)
				if s.Name == "cohort.group.member-joined" && spanAttr(s, tracing.KeyMember).AsString() != spanAttr(j, tracing.KeyMember).AsString() {
					t.Errorf("member-joined of %q links the JoinGroup that made %q", spanAttr(s, tracing.KeyMember).AsString(), spanAttr(j, tracing.KeyMember).AsString())
				}
			}
		}
	}
	if !slices.Contains(linkers, tracing.RebalanceCompleteName) || !slices.Contains(linkers, "cohort.group.member-joined") {
		t.Errorf("spans linking to traced-2's JoinGroup: %v; want the completion and its member-joined", linkers)
	}

	// SyncGroups of both members, and store writes.
	syncs := map[string]bool{}
	writes := 0
	for _, s := range rt.spans {
		switch s.Name {
		case "cohort.kafka.SyncGroup":
			syncs[spanAttr(s, tracing.KeyClientID).AsString()] = true
		case tracing.StoreWriteName:
			if spanAttr(s, tracing.KeyRecords).AsInt64() > 0 && !s.Parent.IsValid() {
				writes++
			}
		}
	}
	if !syncs["traced-1"] || !syncs["traced-2"] || writes == 0 {
		t.Errorf("SyncGroup spans of %v, %d store-write spans", syncs, writes)
	}
}

// otlpReceiver is an OTLP/gRPC trace collector in this process.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
	res   map[string]string // resource attributes seen
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			r.res[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) named(name string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

func startOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{res: map[string]string{}}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return r, ln.Addr().String()
}

// TestTracingOverOTLP: a node started with an OTLP endpoint sends its
// spans there, flushing them at shutdown: a JoinGroup of a real client,
// and a call of the gRPC assignment service, which continues the
// caller's W3C trace context.
func TestTracingOverOTLP(t *testing.T) {
	recv, addr := startOTLPReceiver(t)
	every := 1.0
	n := testkit.StartNode(t, node.Config{OTLPEndpoint: addr, TraceSampleRatio: &every})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := "traced-otlp"
	extCreateTopic(t, n.KafkaAddr(), topic, 1)
	cl := pollingMember(ctx, t, kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID("otlp-1"), kgo.ConsumerGroup("otlp-group"), kgo.ConsumeTopics(topic))
	defer cl.Close()
	// A JoinGroup has been answered once the member has a generation.
	testkit.Eventually(t, 30*time.Second, "the consumer to join its group", func() bool {
		_, gen := cl.GroupMetadata()
		return gen > 0
	})

	// An assignment-service call carrying a caller's trace context. A
	// consumer that never registered is refused: a span all the same.
	cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	cctx := metadata.AppendToOutgoingContext(ctx, "traceparent", fmt.Sprintf("00-%s-%s-01", traceID, parentID))
	kafkaassignerpb.NewKafkaAssignerClient(cc).PartitionReady(cctx, &kafkaassignerpb.PartitionReadyRequest{
		ConsumerName: "nobody", Partition: &kafkaassignerpb.TopicPartition{Topic: topic, Partition: 0},
	})

	// Shutdown flushes what the batch processor holds (it would
	// otherwise wait up to 5 s).
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if err := n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	joins := recv.named("cohort.kafka.JoinGroup")
	if len(joins) == 0 {
		t.Fatalf("no JoinGroup span received over OTLP")
	}
	if j := joins[0]; j.GetKind() != tracepb.Span_SPAN_KIND_SERVER || len(j.GetTraceId()) != 16 {
		t.Errorf("JoinGroup span over OTLP: kind %v, trace id %x", j.GetKind(), j.GetTraceId())
	}
	recv.mu.Lock()
	service := recv.res["service.name"]
	recv.mu.Unlock()
	if service != "cohort" {
		t.Errorf("resource service.name %q, want cohort", service)
	}
	calls := recv.named("kafka_assigner.v1.KafkaAssigner/PartitionReady")
	if len(calls) != 1 {
		t.Fatalf("%d PartitionReady spans received", len(calls))
	}
	if c := calls[0]; fmt.Sprintf("%x", c.GetTraceId()) != traceID || fmt.Sprintf("%x", c.GetParentSpanId()) != parentID || c.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("PartitionReady span: trace %x parent %x kind %v; want the caller's trace %s under %s", c.GetTraceId(), c.GetParentSpanId(), c.GetKind(), traceID, parentID)
	}
}

// TestTracingSampledOut: at ratio 0 a node traced by a real consumer
// group's traffic keeps no span at all.
func TestTracingSampledOut(t *testing.T) {
	zero := 0.0
	exp := keptSpans{tracetest.NewInMemoryExporter()}
	cfg := node.Config{KafkaListen: "127.0.0.1:0", GRPCListen: "-", DataDir: t.TempDir(), TraceExporter: exp, TraceSampleRatio: &zero}
	// Its one group has one member: the default 3 s initial rebalance
	// delay would only wait for members that never come.
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n, err := node.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	extCreateTopic(t, n.KafkaAddr(), "sampled-out", 1)
	cl := pollingMember(ctx, t, kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumerGroup("sampled-out"), kgo.ConsumeTopics("sampled-out"))
	testkit.Eventually(t, 30*time.Second, "the consumer to join its group", func() bool {
		_, gen := cl.GroupMetadata()
		return gen > 0
	})
	cl.Close()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if spans := exp.GetSpans(); len(spans) != 0 {
		t.Errorf("%d spans kept at ratio 0, the first %q", len(spans), spans[0].Name)
	}
}
