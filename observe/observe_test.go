package observe_test

import (
	"context"
	"testing"

	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/observetest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestErrorCodeFindsTheFirstNested(t *testing.T) {
	resp := kmsg.NewPtrOffsetCommitResponse()
	for _, codes := range [][]int16{{0, 0}, {0, 25}, {27}} {
		tp := kmsg.NewOffsetCommitResponseTopic()
		for _, c := range codes {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.ErrorCode = c
			tp.Partitions = append(tp.Partitions, p)
		}
		resp.Topics = append(resp.Topics, tp)
	}
	if got := (observe.Answer{Resp: resp}).ErrorCode(); got != 25 {
		t.Fatalf("nested: got %d, want 25", got)
	}
	jr := kmsg.NewPtrJoinGroupResponse()
	jr.ErrorCode = 79
	jr.Members = []kmsg.JoinGroupResponseMember{{ProtocolMetadata: []byte{1, 2}}}
	if got := (observe.Answer{Resp: jr}).ErrorCode(); got != 79 {
		t.Fatalf("top level: got %d, want 79", got)
	}
	if got := (observe.Answer{Resp: kmsg.NewPtrHeartbeatResponse()}).ErrorCode(); got != 0 {
		t.Fatalf("no error: got %d", got)
	}
	fr := kmsg.NewPtrFetchResponse()
	fr.Topics = []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{}, {ErrorCode: 1}}}}
	if got := (observe.Answer{Resp: fr}).ErrorCode(); got != 1 {
		t.Fatalf("fetch: got %d, want 1", got)
	}
	pr := kmsg.NewPtrProduceResponse()
	pr.Topics = []kmsg.ProduceResponseTopic{{Partitions: []kmsg.ProduceResponseTopicPartition{{ErrorCode: 6}}}}
	if got := (observe.Answer{Resp: pr}).ErrorCode(); got != 6 {
		t.Fatalf("produce: got %d, want 6", got)
	}
	if got := (observe.Answer{}).ErrorCode(); got != 0 {
		t.Fatalf("no response: got %d", got)
	}
	lr := kmsg.NewPtrListGroupsResponse()
	lr.Groups = make([]kmsg.ListGroupsResponseGroup, 100000)
	if got := (observe.Answer{Resp: lr}).ErrorCode(); got != 0 {
		t.Fatalf("list groups: got %d", got)
	}
	lr.ErrorCode = 15
	if got := (observe.Answer{Resp: lr}).ErrorCode(); got != 15 {
		t.Fatalf("list groups: got %d, want 15", got)
	}

}

// BenchmarkErrorCodeListGroups: the error code of a ListGroups answer of
// 100,000 groups, which every answered request's metrics ask for.
func BenchmarkErrorCodeListGroups(b *testing.B) {
	lr := kmsg.NewPtrListGroupsResponse()
	lr.Groups = make([]kmsg.ListGroupsResponseGroup, 100000)
	for b.Loop() {
		if (observe.Answer{Resp: lr}).ErrorCode() != 0 {
			b.Fatal("an error code")
		}
	}
}

func TestMultiReportsToEach(t *testing.T) {
	var a, b observetest.Recorder
	o := observe.Multi(&a, nil, &b)
	ctx := o.RequestReceived(context.Background(), observe.Request{Key: 11})
	if r, ok := observetest.Received(ctx); !ok || r.Key != 11 {
		t.Fatalf("context lost the request: %v %v", r, ok)
	}
	o.Group(ctx, observe.GroupEvent{Kind: observe.MemberJoined, Group: "g"})
	o.Shard(observe.ShardEvent{Kind: observe.ShardLoaded})
	o.BatchWritten(observe.Batch{Records: 3})
	o.RequestAnswered(ctx, observe.Request{Key: 11}, observe.Answer{})
	for _, r := range []*observetest.Recorder{&a, &b} {
		s := r.Snapshot()
		if len(s.Received) != 1 || len(s.Answered) != 1 || len(s.Groups) != 1 || len(s.Shards) != 1 || len(s.Batches) != 1 {
			t.Fatalf("recorder missed events: %+v", s)
		}
	}
	if _, ok := observe.Multi().(observe.Nop); !ok {
		t.Fatal("Multi() is not Nop")
	}
	if observe.MemberFenced.String() != "member-fenced" || observe.ShardUnloaded.String() != "unloaded" {
		t.Fatal("kind names")
	}
}

func TestCauseNames(t *testing.T) {
	seen := map[string]bool{}
	for c := observe.CauseUnknown; c <= observe.CauseOther; c++ {
		name := c.String()
		if seen[name] || (c != observe.CauseUnknown && name == "unknown") {
			t.Errorf("cause %d is named %q, a name taken or missing", c, name)
		}
		seen[name] = true
	}
	if got := (observe.CauseOther + 1).String(); got != "unknown" {
		t.Errorf("a cause past the last is %q", got)
	}
	if observe.CauseMemberJoined.String() != "member-joined" || observe.CauseRebalanceTimeout.String() != "rebalance-timeout" {
		t.Errorf("names: %v, %v", observe.CauseMemberJoined, observe.CauseRebalanceTimeout)
	}
}

// TestMultiReportsCluster: Multi hands cluster events to the parts that
// want them, and ReportCluster ignores an observer that does not.
func TestMultiReportsCluster(t *testing.T) {
	var a, b observetest.Recorder
	e := observe.ClusterEvent{Kind: observe.NodeLost, Node: 3}
	observe.ReportCluster(observe.Multi(&a, noCluster{}, &b), e)
	observe.ReportCluster(noCluster{}, e)
	for _, r := range []*observetest.Recorder{&a, &b} {
		if got := r.Snapshot().Cluster; len(got) != 1 || got[0] != e {
			t.Fatalf("recorded %+v; want %+v", got, e)
		}
	}
	for _, k := range observe.ClusterEventKinds() {
		if k.String() == "unknown" {
			t.Errorf("kind %d has no name", k)
		}
	}
}

// noCluster implements Observer without Cluster.
type noCluster struct{}

func (noCluster) RequestReceived(ctx context.Context, _ observe.Request) context.Context { return ctx }
func (noCluster) RequestAnswered(context.Context, observe.Request, observe.Answer)       {}
func (noCluster) BatchWritten(observe.Batch)                                             {}
func (noCluster) Group(context.Context, observe.GroupEvent)                              {}
func (noCluster) Shard(observe.ShardEvent)                                               {}
