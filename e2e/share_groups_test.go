package e2e

// KIP-932 share groups' membership against `cohort serve`: franz-go's
// client sends the share group APIs as kmsg requests, as kgo's share
// consumer does (its member id, the epoch it was last given, its topics
// when joining), so that the test sees every epoch and assignment.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareMember is what a share group member remembers: its id, the epoch
// it was last given and the partitions it was last given.
type shareMember struct {
	id       string
	epoch    int32
	assigned []int32
}

// beat sends member m's ShareGroupHeartbeat (epoch -1: its leave) and
// keeps what it is told.
func (m *shareMember) beat(t *testing.T, cl *kgo.Client, group, topic string, topicID [16]byte, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), groupWait)
	defer cancel()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, m.id, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{topic}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("share heartbeat of %s: %v", m.id, err)
	}
	if resp.ErrorCode != 0 || epoch < 0 {
		return resp
	}
	m.epoch = resp.MemberEpoch
	if a := resp.Assignment; a != nil {
		m.assigned = nil
		for _, tp := range a.TopicPartitions {
			if tp.TopicID != topicID {
				t.Fatalf("%s assigned topic %x, want %s's %x", m.id, tp.TopicID, topic, topicID)
			}
			m.assigned = append(m.assigned, tp.Partitions...)
		}
		slices.Sort(m.assigned)
	}
	return resp
}

// TestShareGroupMembership: share group members on the real binary get
// the topic's partitions spread over them (two each of six for three
// members), ShareGroupDescribe and ListGroups show the group, a leaving
// member's partitions go to the others, the group survives a kill -9,
// its id refuses the classic and consumer protocols, and it is deleted
// once empty. ApiVersions advertises ShareGroupHeartbeat and
// ShareGroupDescribe at v1 and ShareFetch and ShareAcknowledge at v1–v2,
// Kafka 4.2's, which franz-go's share consumer needs.
func TestShareGroupMembership(t *testing.T) {
	dir := t.TempDir()
	p := testkit.StartBinary(t, dir)
	client := func(addr string) (*kgo.Client, *kadm.Client) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("cohort-e2e-share"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl, kadm.NewClient(cl)
	}
	cl, adm := client(p.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, bv := range versions {
		for key, want := range map[int16][2]int16{76: {1, 1}, 77: {1, 1}, 78: {1, 2}, 79: {1, 2}} {
			min, max, ok := bv.KeyVersions(key)
			if !ok {
				min, max = -1, -1
			}
			if [2]int16{min, max} != want {
				t.Errorf("ApiVersions: %s at %d–%d, want %v", kmsg.NameForKey(key), min, max, want)
			}
		}
	}

	const topic, group = "share-events", "share-workers"
	createTopic(t, adm, topic, 6)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("list %s: %v %v", topic, err, details[topic].Err)
	}
	topicID := [16]byte(details[topic].ID)

	members := []*shareMember{{id: "m0"}, {id: "m1"}, {id: "m2"}}
	for _, m := range members {
		if resp := m.beat(t, cl, group, topic, topicID, 0); resp.ErrorCode != 0 {
			t.Fatalf("join of %s: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	// converge heartbeats every member until each has n partitions and
	// together they have every partition once, and returns who has what.
	converge := func(ms []*shareMember, n int) map[int32]string {
		t.Helper()
		var owners map[int32]string
		testkit.Eventually(t, groupWait, fmt.Sprintf("%d members with %d partitions each", len(ms), n), func() bool {
			owners = map[int32]string{}
			ok := true
			for _, m := range ms {
				if resp := m.beat(t, cl, group, topic, topicID, m.epoch); resp.ErrorCode != 0 {
					t.Fatalf("heartbeat of %s: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
				}
				ok = ok && len(m.assigned) == n
				for _, p := range m.assigned {
					if o, dup := owners[p]; dup {
						ok = false
						t.Logf("partition %d given to %s and %s (not yet settled)", p, o, m.id)
					}
					owners[p] = m.id
				}
			}
			return ok && len(owners) == 6
		})
		return owners
	}
	before := converge(members, 2)

	describe := func(cl *kgo.Client, groups ...string) []kmsg.ShareGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = groups
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("share group describe: %v", err)
		}
		return resp.Groups
	}
	check := func(cl *kgo.Client, ms []*shareMember) {
		t.Helper()
		d := describe(cl, group)[0]
		if d.ErrorCode != 0 || d.GroupState != "Stable" || d.Assignor != "simple" || len(d.Members) != len(ms) {
			t.Fatalf("described %+v", d)
		}
		for i, dm := range d.Members {
			m := ms[i]
			var got []int32
			for _, tp := range dm.Assignment.TopicPartitions {
				if tp.Topic != topic {
					t.Fatalf("%s described with topic %q", dm.MemberID, tp.Topic)
				}
				got = append(got, tp.Partitions...)
			}
			slices.Sort(got)
			if dm.MemberID != m.id || dm.MemberEpoch != m.epoch || !slices.Equal(got, m.assigned) {
				t.Errorf("described member %s epoch %d %v, its heartbeats say %s epoch %d %v", dm.MemberID, dm.MemberEpoch, got, m.id, m.epoch, m.assigned)
			}
		}
	}
	check(cl, members)

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed[group]; !ok || g.ProtocolType != "share" || g.State != "Stable" {
		t.Fatalf("ListGroups: %+v", listed)
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"share"}
	if resp, err := lreq.RequestWith(ctx, cl); err != nil || len(resp.Groups) != 1 || resp.Groups[0].GroupType != "share" {
		t.Fatalf("ListGroups of type share: %v %+v", err, resp)
	}

	// m1 leaves: the two others take its partitions, three each.
	if resp := members[1].beat(t, cl, group, topic, topicID, -1); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave of m1: %v epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}
	rest := []*shareMember{members[0], members[2]}
	after := converge(rest, 3)
	for p, o := range before {
		if o == "m1" && after[p] == "m1" {
			t.Errorf("partition %d still m1's after it left", p)
		}
		if o != "m1" && after[p] != o {
			t.Errorf("partition %d moved from %s to %s when m1 left", p, o, after[p])
		}
	}

	// The group's id is a share group's: other protocols are refused, as
	// Kafka refuses them.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = group, "consumer", 30000, 30000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}}}
	if resp, err := join.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("JoinGroup to a share group: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis = group, "c1", 30000
	cg.SubscribedTopicNames, cg.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if resp, err := cg.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("ConsumerGroupHeartbeat to a share group: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}

	// kill -9 and start again on the same data: the group, its epochs and
	// its assignments are its records'.
	p.Kill()
	p = testkit.StartBinary(t, dir)
	cl, adm = client(p.Addr)
	check(cl, rest)
	for _, m := range rest {
		if resp := m.beat(t, cl, group, topic, topicID, m.epoch); resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s after the restart: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
		}
	}

	// Deleted only once empty.
	deleted := func() kerr.Error {
		t.Helper()
		resp, err := adm.DeleteGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := resp[group].Err.(*kerr.Error); ok {
			return *e
		}
		return kerr.Error{}
	}
	if err := deleted(); err.Code != kerr.NonEmptyGroup.Code {
		t.Fatalf("DeleteGroups of a share group with members: %v", err)
	}
	for _, m := range rest {
		if resp := m.beat(t, cl, group, topic, topicID, -1); resp.ErrorCode != 0 {
			t.Fatalf("leave of %s: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	if err := deleted(); err.Code != 0 {
		t.Fatalf("DeleteGroups of an empty share group: %v", err)
	}
	if d := describe(cl, group)[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("described after deletion: %+v", d)
	}
	listed, err = adm.ListGroups(ctx)
	if err != nil || slices.Contains(slices.Collect(maps.Keys(listed)), group) {
		t.Fatalf("ListGroups after deletion: %v %v", err, listed)
	}
}
