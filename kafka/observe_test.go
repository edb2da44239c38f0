package kafka_test

// The wire server's reports to its observer (kafka.Config.Observer), seen
// through observetest.Recorder: every request that decodes is received and
// answered exactly once, with its context, also when it gets no response
// or its connection fails.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/observetest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitFor is how long a test waits for the recorder to see something.
const waitFor = 30 * time.Second

// checkExactlyOnce fails the test unless every request the recorder saw
// received was answered exactly once, with the context RequestReceived
// returned for it, and nothing else was answered.
func checkExactlyOnce(t *testing.T, snap observetest.Snapshot) {
	t.Helper()
	open := map[observe.Request]int{}
	for _, r := range snap.Received {
		open[r]++
	}
	for _, a := range snap.Answered {
		if open[a.Request] == 0 {
			t.Errorf("%s v%d answered more often than received (or never received)", a.Request.API(), a.Request.Version)
			continue
		}
		open[a.Request]--
		got, ok := observetest.Received(a.Ctx)
		if !ok || got != a.Request {
			t.Errorf("%s v%d: RequestAnswered's context is not the one RequestReceived returned for it", a.Request.API(), a.Request.Version)
		}
		if a.Answer.Latency < 0 {
			t.Errorf("%s v%d: latency %v", a.Request.API(), a.Request.Version, a.Answer.Latency)
		}
	}
	for r, n := range open {
		if n > 0 {
			t.Errorf("%s v%d received %d more times than answered", r.API(), r.Version, n)
		}
	}
}

// TestObserverRealClient: a franz-go client creates a topic, produces
// (acks=-1, and acks=0 from a second client), consumes in a group and
// commits, then sends an OffsetCommit for a topic that does not exist and
// a Heartbeat for a member that does not exist. Every request is received
// and answered exactly once, with the client's id and address, the
// observer's context and the error its response carries; the contexts end
// when the connections close.
func TestObserverRealClient(t *testing.T) {
	rec := &observetest.Recorder{}
	n := testkit.StartNode(t, node.Config{
		Groups:   coordinator.Config{InitialRebalanceDelay: -1},
		Observer: rec,
	})
	addr := n.KafkaAddr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID("observe-test"),
		kgo.DefaultProduceTopic("obs"),
		kgo.ConsumerGroup("g"),
		kgo.ConsumeTopics("obs"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "obs"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	noAck, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID("observe-noack"),
		kgo.DefaultProduceTopic("obs"),
		kgo.RequiredAcks(kgo.NoAck()),
		kgo.DisableIdempotentWrite(),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer noAck.Close()
	if err := noAck.ProduceSync(ctx, &kgo.Record{Value: []byte("two")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	bad := kmsg.NewPtrOffsetCommitRequest()
	bad.Group, bad.Generation = "simple", -1
	// franz-go sends it at v10, by id: an id the node does not have.
	bad.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "no-such-topic", TopicID: [16]byte{0xde, 0xad}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}
	if _, err := bad.RequestWith(ctx, cl); err != nil {
		t.Fatalf("offset commit: %v", err)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "g", 1, "nobody"
	if _, err := hb.RequestWith(ctx, cl); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}

	cl.Close()
	noAck.Close()
	// Shutdown returns once every connection is closed: every report has
	// been made by then.
	sctx, scancel := context.WithTimeout(context.Background(), waitFor)
	defer scancel()
	if err := n.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	snap := rec.Snapshot()
	checkExactlyOnce(t, snap)

	// The errors a request may get: the failures the test causes, and
	// those of the client's normal course.
	allowed := map[int16]int16{
		kmsg.ApiVersions.Int16():  kerr.UnsupportedVersion.Code,      // franz-go opens with a newer version
		kmsg.Metadata.Int16():     kerr.UnknownTopicOrPartition.Code, // asked for before it was created
		kmsg.JoinGroup.Int16():    kerr.MemberIDRequired.Code,        // a new member's first join (KIP-394)
		kmsg.OffsetCommit.Int16(): kerr.UnknownTopicID.Code,
		kmsg.Heartbeat.Int16():    kerr.UnknownMemberID.Code,
	}
	seen := map[int16]int{}
	for _, a := range snap.Answered {
		r := a.Request
		seen[r.Key]++
		what := fmt.Sprintf("%s v%d", r.API(), r.Version)
		if r.ClientID != "observe-test" && r.ClientID != "observe-noack" {
			t.Errorf("%s: client id %q", what, r.ClientID)
		}
		if r.Host != "127.0.0.1" || r.Tenant != "" || r.Size < 8 || r.Received.IsZero() {
			t.Errorf("%s: host %q, tenant %q, size %d, received %v", what, r.Host, r.Tenant, r.Size, r.Received)
		}
		if a.Ctx.Err() == nil {
			t.Errorf("%s: its context is not done after its connection closed", what)
		}
		resp := a.Answer.Resp
		switch {
		case r.Key == kmsg.Produce.Int16() && r.ClientID == "observe-noack":
			if resp != nil {
				t.Errorf("%s with acks=0 answered with a %T", what, resp)
			}
			continue
		case resp == nil:
			t.Errorf("%s: no response", what)
			continue
		case resp.Key() != r.Key:
			t.Errorf("%s answered with a %T", what, resp)
		}
		if a.Code != 0 && a.Code != allowed[r.Key] {
			t.Errorf("%s: error %s", what, codeName(a.Code))
		}
		wantVersion := r.Version
		if a.Code == kerr.UnsupportedVersion.Code {
			wantVersion = 0 // ApiVersions' answer to a version it does not serve
		}
		if resp.GetVersion() != wantVersion {
			t.Errorf("%s: response version %d, want %d", what, resp.GetVersion(), wantVersion)
		}
	}
	for _, key := range []kmsg.Key{kmsg.ApiVersions, kmsg.Metadata, kmsg.CreateTopics, kmsg.InitProducerID, kmsg.Produce, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.OffsetFetch, kmsg.Fetch, kmsg.OffsetCommit, kmsg.Heartbeat, kmsg.LeaveGroup} {
		if seen[key.Int16()] == 0 {
			t.Errorf("no %s was answered", key.Name())
		}
	}
	failed := map[int16]int{}
	for _, a := range snap.Answered {
		if a.Code != 0 {
			failed[a.Request.Key]++
		}
	}
	if failed[kmsg.OffsetCommit.Int16()] != 1 || failed[kmsg.Heartbeat.Int16()] != 1 || failed[kmsg.ApiVersions.Int16()] == 0 {
		t.Errorf("failed requests by key: %v; want one OffsetCommit, one Heartbeat and the ApiVersions of a version not served", failed)
	}
}

// TestObserverConnectionClosedInFlight: a client pipelines requests behind
// a long poll and hangs up before any answer. The server still answers
// (or, once a write fails, drains) every one of them, and each is reported
// answered exactly once; their contexts end with the connection.
func TestObserverConnectionClosedInFlight(t *testing.T) {
	rec := &observetest.Recorder{}
	addr, _, s := startKafka(t, kafka.Config{Observer: rec})
	setup := dial(t, addr)
	id := createTopic(setup, "quiet", 1, nil)
	createTopic(setup, "other", 1, nil)

	c := dial(t, addr)
	var wire []byte
	push := func(v int16, req kmsg.Request) {
		req.SetVersion(v)
		b, _ := c.frame(req)
		wire = append(wire, b...)
	}
	push(12, fetchReq("quiet", id, 0, 0, 500, 1)) // nothing to fetch: waits 500 ms
	const behind = 20
	for i := range behind {
		if i%2 == 0 {
			push(12, kmsg.NewPtrMetadataRequest())
		} else {
			push(11, produceReq("other", [16]byte{}, 0, 1, plain(1, 8).encode()))
		}
	}
	c.write(wire)
	c.nc.Close()

	const want = 2 + 1 + behind // setup's CreateTopics, the long poll, the rest
	snap, ok := rec.Wait(waitFor, func(s observetest.Snapshot) bool { return len(s.Received) == want })
	if !ok {
		t.Fatalf("%d requests received, want %d", len(snap.Received), want)
	}
	// The connection is gone only once its writer has drained its queue.
	testkit.Eventually(t, waitFor, "the closed connection is gone", func() bool { return s.Conns().Open == 1 })
	snap = rec.Snapshot()
	checkExactlyOnce(t, snap)
	if len(snap.Answered) != want {
		t.Errorf("%d answered, want %d", len(snap.Answered), want)
	}
	for _, a := range snap.Answered[2:] {
		if a.Ctx.Err() == nil {
			t.Errorf("%s v%d: its context is not done after its connection closed", a.Request.API(), a.Request.Version)
		}
	}
}

// TestObserverWriteFailure: a client that never reads its responses is
// cut off by ResponseWriteTimeout; the requests whose responses were never
// built are reported answered with no response.
func TestObserverWriteFailure(t *testing.T) {
	rec := &observetest.Recorder{}
	addr, _, s := startKafka(t, kafka.Config{Observer: rec, ResponseWriteTimeout: 300 * time.Millisecond})
	setup := dial(t, addr)
	id := createTopic(setup, "big", 1, nil)
	mustProduce(setup, "big", 0, plain(1, 900<<10).encode())

	c := dial(t, addr)
	var wire []byte
	const fetches = 100 // 90 MB of responses: more than socket buffers hold
	for range fetches {
		b, _ := c.frame(at(12, fetchReq("big", id, 0, 0, 0, 1)))
		wire = append(wire, b...)
	}
	c.write(wire)
	const want = 2 + fetches // setup's CreateTopics and Produce, the fetches
	if snap, ok := rec.Wait(waitFor, func(s observetest.Snapshot) bool { return len(s.Received) == want }); !ok {
		t.Fatalf("%d requests received, want %d", len(snap.Received), want)
	}
	testkit.Eventually(t, waitFor, "the connection that does not read is closed", func() bool { return s.Conns().Open == 1 })

	snap := rec.Snapshot()
	checkExactlyOnce(t, snap)
	unbuilt := 0
	for _, a := range snap.Answered[2:] {
		if a.Request.Key != kmsg.Fetch.Int16() {
			t.Fatalf("answered %s v%d", a.Request.API(), a.Request.Version)
		}
		if a.Answer.Resp == nil {
			unbuilt++
		}
	}
	if len(snap.Answered) != want || unbuilt == 0 {
		t.Errorf("%d answered, %d of them with no response; want %d, some with none", len(snap.Answered), unbuilt, want)
	}
}
