package kafka

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/observetest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type connKey struct{}

// TestRequestContextReachesHandler: the context a request's handler gets
// (for a group API, the one groupHandler hands to the coordinator) is the
// one the observer's RequestReceived returned, derived from the
// connection's, and RequestAnswered gets it back; with observe.Nop it is
// the connection's own.
func TestRequestContextReachesHandler(t *testing.T) {
	key := kmsg.Heartbeat.Int16()
	orig := handlers[key]
	var got context.Context
	handlers[key] = handler{min: orig.min, max: orig.max, fn: func(ctx context.Context, s *Server, hdr *reqHeader, req kmsg.Request) func() kmsg.Response {
		got = ctx
		return orig.fn(ctx, s, hdr, req)
	}}
	t.Cleanup(func() { handlers[key] = orig })

	env := newFuzzEnv(t)
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(4)
	req.Group, req.MemberID = "g", "nobody"
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("ctx-test")).AppendRequest(nil, req, 7)[4:]
	connCtx := context.WithValue(context.Background(), connKey{}, "conn")

	for _, tc := range []struct {
		name string
		obs  observe.Observer
	}{{"nop", nil}, {"recorder", &observetest.Recorder{}}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Topics: env.log, Groups: fuzzGroups(t), Observer: tc.obs, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			got = nil
			received := time.Now()
			p, err := s.decode(connCtx, frame, "/127.0.0.1", received, nil)
			if err != nil {
				t.Fatal(err)
			}
			(&conn{s: s}).appendResponse(nil, &p)
			if got == nil || got.Value(connKey{}) != "conn" {
				t.Fatalf("the handler's context %v does not derive from the connection's", got)
			}
			rec, ok := tc.obs.(*observetest.Recorder)
			if !ok {
				if got != connCtx {
					t.Errorf("with Nop, the handler's context is not the connection's")
				}
				return
			}
			snap := rec.Snapshot()
			if len(snap.Received) != 1 || len(snap.Answered) != 1 {
				t.Fatalf("%d received, %d answered", len(snap.Received), len(snap.Answered))
			}
			// Msg is the request the handler decoded: a Heartbeat of
			// member "nobody".
			msg, ok := snap.Received[0].Msg.(*kmsg.HeartbeatRequest)
			if !ok || msg.Group != "g" || msg.MemberID != "nobody" {
				t.Fatalf("Msg is %#v, want the decoded heartbeat", snap.Received[0].Msg)
			}
			want := observe.Request{Key: key, Version: 4, ClientID: "ctx-test", Host: "127.0.0.1", Principal: "User:ANONYMOUS", Size: len(frame), Received: received, Msg: msg}
			if r, ok := observetest.Received(got); !ok || r != want || snap.Received[0] != want {
				t.Errorf("the handler's context carries %+v (%v), received %+v; want %+v", r, ok, snap.Received[0], want)
			}
			a := snap.Answered[0]
			if a.Ctx != got || a.Request != want {
				t.Errorf("RequestAnswered got another context or request: %+v", a.Request)
			}
			if a.Code != kerr.UnknownMemberID.Code {
				t.Errorf("heartbeat of an unknown member: code %d", a.Code)
			}
		})
	}
}

// TestPanickedHandlerIsReported: a handler that panics (a bug) closes its
// connection, and its request, already reported received, is reported
// answered with no response, so the counts still meet.
func TestPanickedHandlerIsReported(t *testing.T) {
	key := kmsg.DescribeCluster.Int16()
	orig := handlers[key]
	handlers[key] = handler{min: orig.min, max: orig.max, fn: func(context.Context, *Server, *reqHeader, kmsg.Request) func() kmsg.Response {
		panic("a bug")
	}}
	t.Cleanup(func() { handlers[key] = orig })

	env := newFuzzEnv(t)
	rec := &observetest.Recorder{}
	s, err := New(Config{Topics: env.log, Groups: fuzzGroups(t), Observer: rec, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(0)
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)[4:]
	if _, err := s.decode(context.Background(), frame, "/127.0.0.1", time.Now(), nil); err == nil {
		t.Fatal("a panicking handler's request decoded")
	}
	snap := rec.Snapshot()
	if len(snap.Received) != 1 || len(snap.Answered) != 1 || snap.Answered[0].Answer.Resp != nil || snap.Answered[0].Request != snap.Received[0] {
		t.Fatalf("received %+v, answered %+v; want it once each, with no response", snap.Received, snap.Answered)
	}
}
