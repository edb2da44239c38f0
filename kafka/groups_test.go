package kafka_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Raw-client helpers for the group APIs, and their version sweep cases:
// each case runs the API at one version in a group of its own, after
// whatever it needs (a joined and synced member, a committed offset) was
// set up at the newest version.

// subscription is a consumer-protocol Subscription v0 for topics.
func subscription(topics ...string) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Topics = topics
	return s.AppendTo(nil)
}

// joinReq is a JoinGroup for one "range" protocol on topic.
func joinReq(group, member, topic string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: subscription(topic)}}
	return req
}

// joinAlone makes c the only member of group at JoinGroup version v,
// answering MEMBER_ID_REQUIRED, and returns the successful response.
func joinAlone(t *testing.T, c *rawClient, v int16, group, topic string) *kmsg.JoinGroupResponse {
	t.Helper()
	resp := roundTrip[*kmsg.JoinGroupResponse](c, v, joinReq(group, "", topic))
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		if v < 4 {
			t.Fatalf("JoinGroup v%d got MEMBER_ID_REQUIRED", v)
		}
		resp = roundTrip[*kmsg.JoinGroupResponse](c, v, joinReq(group, resp.MemberID, topic))
	} else if v >= 4 {
		t.Fatalf("JoinGroup v%d with no member id: error %s, want MEMBER_ID_REQUIRED", v, codeName(resp.ErrorCode))
	}
	wantCode(t, "join", resp.ErrorCode, nil)
	if resp.Generation != 1 || resp.LeaderID != resp.MemberID || len(resp.Members) != 1 {
		t.Fatalf("join: generation %d, leader %q, member %q, %d members; want generation 1 led by the only member", resp.Generation, resp.LeaderID, resp.MemberID, len(resp.Members))
	}
	return resp
}

// joinSynced makes c the only member of group, synced with assignment.
func joinSynced(t *testing.T, c *rawClient, group, topic string, assignment []byte) (member string, generation int32) {
	t.Helper()
	j := joinAlone(t, c, 9, group, topic)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = group, j.Generation, j.MemberID
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: assignment}}
	resp := roundTrip[*kmsg.SyncGroupResponse](c, 5, sync)
	wantCode(t, "sync", resp.ErrorCode, nil)
	return j.MemberID, j.Generation
}

// commitSimple commits offset to group for topic partition 0 as an admin
// does (generation -1, no member).
func commitSimple(t *testing.T, c *rawClient, group, topic string, offset int64, meta string) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: 3, Metadata: &meta}}}}
	resp := roundTrip[*kmsg.OffsetCommitResponse](c, 8, req)
	wantCode(t, "commit", resp.Topics[0].Partitions[0].ErrorCode, nil)
}

// fetchOffset reads group's committed offset of topic partition 0.
func fetchOffset(t *testing.T, c *rawClient, group, topic string) kmsg.OffsetFetchResponseGroupTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
	resp := roundTrip[*kmsg.OffsetFetchResponse](c, 9, req)
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("offset fetch: %+v", resp)
	}
	return resp.Groups[0].Topics[0].Partitions[0]
}

func describeGroup(t *testing.T, c *rawClient, group string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp := roundTrip[*kmsg.DescribeGroupsResponse](c, 5, req)
	if len(resp.Groups) != 1 {
		t.Fatalf("describe: %d groups", len(resp.Groups))
	}
	return resp.Groups[0]
}

// shareJoinReq is a share group member's first ShareGroupHeartbeat (v1:
// the client mints its id).
func shareJoinReq(g, member, topic string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = g, member, 0, []string{topic}
	return req
}

// groupSweepCases are TestVersionSweep's cases for the group APIs; topicID
// is topic's id (OffsetCommit and OffsetFetch v10 name topics by id).
func groupSweepCases(topic string, topicID [16]byte) map[int16]sweepCase {
	name := func(key kmsg.Key, v int16) string { return fmt.Sprintf("sweep-%s-v%d", key.Name(), v) }
	heartbeat := func(g, member string) *kmsg.ConsumerGroupHeartbeatRequest {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = g, member, 0
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 60000, []string{topic}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return req
	}
	return map[int16]sweepCase{
		kmsg.ConsumerGroupHeartbeat.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.ConsumerGroupHeartbeat, v)
			member := ""
			if v >= 1 {
				member = "client-minted-" + g // KIP-1082: the client mints it
			}
			return heartbeat(g, member), func(r kmsg.Response) {
				resp := r.(*kmsg.ConsumerGroupHeartbeatResponse)
				wantCode(t, "heartbeat", resp.ErrorCode, nil)
				if resp.MemberID == nil || *resp.MemberID == "" || (v >= 1 && *resp.MemberID != member) {
					t.Errorf("member id %v, want %q (or minted for v0)", resp.MemberID, member)
				}
				if resp.MemberEpoch != 1 || resp.HeartbeatIntervalMillis <= 0 {
					t.Errorf("epoch %d, interval %d: want 1 and the configured interval", resp.MemberEpoch, resp.HeartbeatIntervalMillis)
				}
				if resp.Assignment == nil || len(resp.Assignment.Topics) != 1 || len(resp.Assignment.Topics[0].Partitions) == 0 {
					t.Errorf("assignment %+v: want every partition of %s", resp.Assignment, topic)
				}
			}
		},
		kmsg.ConsumerGroupDescribe.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.ConsumerGroupDescribe, v)
			hb := roundTrip[*kmsg.ConsumerGroupHeartbeatResponse](c, 1, heartbeat(g, "m-"+g))
			wantCode(t, "join", hb.ErrorCode, nil)
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{g, "no-such-group"}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.ConsumerGroupDescribeResponse)
				if len(resp.Groups) != 2 {
					t.Fatalf("groups: %+v", resp.Groups)
				}
				d := resp.Groups[0]
				wantCode(t, "describe", d.ErrorCode, nil)
				if d.Group != g || d.State != "Stable" || d.Epoch != 1 || d.AssignmentEpoch != 1 || d.AssignorName != "uniform" || len(d.Members) != 1 {
					t.Fatalf("described %+v", d)
				}
				m := d.Members[0]
				if m.MemberID != "m-"+g || m.MemberEpoch != 1 || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != topic ||
					len(m.TargetAssignment.TopicPartitions) != 1 || (v >= 1 && m.MemberType != 1) {
					t.Errorf("member %+v", m)
				}
				wantCode(t, "unknown group", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
			}
		},
		kmsg.ShareGroupHeartbeat.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.ShareGroupHeartbeat, v)
			return shareJoinReq(g, "m-"+g, topic), func(r kmsg.Response) {
				resp := r.(*kmsg.ShareGroupHeartbeatResponse)
				wantCode(t, "share heartbeat", resp.ErrorCode, nil)
				if resp.MemberID == nil || *resp.MemberID != "m-"+g || resp.MemberEpoch != 1 || resp.HeartbeatIntervalMillis != 5000 {
					t.Errorf("member %v epoch %d interval %d: want the client's id, 1 and Kafka's 5000", resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis)
				}
				if resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 || resp.Assignment.TopicPartitions[0].TopicID != topicID ||
					len(resp.Assignment.TopicPartitions[0].Partitions) == 0 {
					t.Errorf("assignment %+v: want every partition of %s", resp.Assignment, topic)
				}
			}
		},
		kmsg.ShareGroupDescribe.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.ShareGroupDescribe, v)
			hb := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq(g, "m-"+g, topic))
			wantCode(t, "join", hb.ErrorCode, nil)
			req := kmsg.NewPtrShareGroupDescribeRequest()
			req.GroupIDs = []string{g, "no-such-group"}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.ShareGroupDescribeResponse)
				if len(resp.Groups) != 2 {
					t.Fatalf("groups: %+v", resp.Groups)
				}
				d := resp.Groups[0]
				wantCode(t, "describe", d.ErrorCode, nil)
				if d.GroupID != g || d.GroupState != "Stable" || d.GroupEpoch != 1 || d.AssignmentEpoch != 1 || d.Assignor != "simple" || len(d.Members) != 1 {
					t.Fatalf("described %+v", d)
				}
				if m := d.Members[0]; m.MemberID != "m-"+g || m.MemberEpoch != 1 || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != topic {
					t.Errorf("member %+v", m)
				}
				wantCode(t, "unknown group", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
			}
		},
		kmsg.JoinGroup.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.JoinGroup, v)
			req := joinReq(g, "", topic)
			if v >= 4 {
				first := roundTrip[*kmsg.JoinGroupResponse](c, v, joinReq(g, "", topic))
				wantCode(t, "first join", first.ErrorCode, kerr.MemberIDRequired)
				req.MemberID = first.MemberID
			}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.JoinGroupResponse)
				wantCode(t, "join", resp.ErrorCode, nil)
				if resp.Generation != 1 || resp.LeaderID != resp.MemberID || len(resp.Members) != 1 || resp.Protocol == nil || *resp.Protocol != "range" {
					t.Errorf("join: %+v", resp)
				}
				if v >= 4 && resp.MemberID != req.MemberID {
					t.Errorf("member id %q, want the one handed out, %q", resp.MemberID, req.MemberID)
				}
				if v >= 7 && (resp.ProtocolType == nil || *resp.ProtocolType != "consumer") {
					t.Errorf("protocol type %v, want consumer", resp.ProtocolType)
				}
			}
		},
		kmsg.SyncGroup.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.SyncGroup, v)
			j := joinAlone(t, c, 9, g, topic)
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.Generation, req.MemberID = g, j.Generation, j.MemberID
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			assignment := []byte("assignment-" + g)
			req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: assignment}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.SyncGroupResponse)
				wantCode(t, "sync", resp.ErrorCode, nil)
				if string(resp.MemberAssignment) != string(assignment) {
					t.Errorf("assignment %q, want %q", resp.MemberAssignment, assignment)
				}
				if v >= 5 && (resp.Protocol == nil || *resp.Protocol != "range") {
					t.Errorf("protocol %v, want range", resp.Protocol)
				}
				if d := describeGroup(t, c, g); d.State != "Stable" {
					t.Errorf("state %s after the leader's sync, want Stable", d.State)
				}
			}
		},
		kmsg.Heartbeat.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.Heartbeat, v)
			m, gen := joinSynced(t, c, g, topic, nil)
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation, req.MemberID = g, gen, m
			return req, func(r kmsg.Response) {
				wantCode(t, "heartbeat", r.(*kmsg.HeartbeatResponse).ErrorCode, nil)
			}
		},
		kmsg.LeaveGroup.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.LeaveGroup, v)
			m, _ := joinSynced(t, c, g, topic, nil)
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group, req.MemberID = g, m
			req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.LeaveGroupResponse)
				wantCode(t, "leave", resp.ErrorCode, nil)
				if v >= 3 && (len(resp.Members) != 1 || resp.Members[0].ErrorCode != 0 || resp.Members[0].MemberID != m) {
					t.Errorf("leave members %+v", resp.Members)
				}
				if d := describeGroup(t, c, g); d.State != "Empty" || len(d.Members) != 0 {
					t.Errorf("after the last member left: state %s, %d members; want Empty, none", d.State, len(d.Members))
				}
			}
		},
		kmsg.OffsetCommit.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.OffsetCommit, v)
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation, req.RetentionTimeMillis = g, -1, -1
			meta := "m"
			req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, TopicID: topicID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{
				{Partition: 0, Offset: 1, Timestamp: -1, LeaderEpoch: -1, Metadata: &meta},
				{Partition: 7, Offset: 1, Timestamp: -1, LeaderEpoch: -1, Metadata: &meta},
			}}}
			return req, func(r kmsg.Response) {
				rt := r.(*kmsg.OffsetCommitResponse).Topics[0]
				if v >= 10 && rt.TopicID != topicID || v < 10 && rt.Topic != topic {
					t.Errorf("response names topic %q / %x", rt.Topic, rt.TopicID)
				}
				ps := rt.Partitions
				wantCode(t, "commit p0", ps[0].ErrorCode, nil)
				wantCode(t, "commit p7", ps[1].ErrorCode, kerr.UnknownTopicOrPartition)
				if got := fetchOffset(t, c, g, topic); got.Offset != 1 || *got.Metadata != "m" {
					t.Errorf("committed %+v, want offset 1 metadata m", got)
				}
			}
		},
		kmsg.OffsetFetch.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.OffsetFetch, v)
			commitSimple(t, c, g, topic, 42, "meta")
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group = g
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0, 1}}}
			req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: g, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, TopicID: topicID, Partitions: []int32{0, 1}}}}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.OffsetFetchResponse)
				type part struct {
					offset int64
					epoch  int32
					meta   string
					code   int16
				}
				var got []part
				if v < 8 {
					wantCode(t, "fetch", resp.ErrorCode, nil)
					for _, p := range resp.Topics[0].Partitions {
						got = append(got, part{p.Offset, p.LeaderEpoch, *p.Metadata, p.ErrorCode})
					}
				} else {
					wantCode(t, "fetch group", resp.Groups[0].ErrorCode, nil)
					if rt := resp.Groups[0].Topics[0]; v >= 10 && rt.TopicID != topicID || v < 10 && rt.Topic != topic {
						t.Errorf("response names topic %q / %x", rt.Topic, rt.TopicID)
					}
					for _, p := range resp.Groups[0].Topics[0].Partitions {
						got = append(got, part{p.Offset, p.LeaderEpoch, *p.Metadata, p.ErrorCode})
					}
				}
				epoch := int32(3)
				if v < 5 {
					epoch = -1 // not in the response before v5
				}
				want := []part{{42, epoch, "meta", 0}, {-1, -1, "", 0}}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("fetched %+v, want %+v", got, want)
				}
			}
		},
		kmsg.OffsetDelete.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.OffsetDelete, v)
			commitSimple(t, c, g, topic, 5, "")
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Group = g
			req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.OffsetDeleteResponse)
				wantCode(t, "offset delete", resp.ErrorCode, nil)
				wantCode(t, "offset delete p0", resp.Topics[0].Partitions[0].ErrorCode, nil)
				if got := fetchOffset(t, c, g, topic); got.Offset != -1 {
					t.Errorf("offset %d after delete, want -1", got.Offset)
				}
			}
		},
		kmsg.DescribeGroups.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.DescribeGroups, v)
			m, _ := joinSynced(t, c, g, topic, []byte("a1"))
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{g, "sweep-no-such-group"}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeGroupsResponse)
				if len(resp.Groups) != 2 {
					t.Fatalf("%d groups, want 2", len(resp.Groups))
				}
				d := resp.Groups[0]
				wantCode(t, "describe", d.ErrorCode, nil)
				if d.Group != g || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 1 {
					t.Fatalf("described %+v", d)
				}
				dm := d.Members[0]
				if dm.MemberID != m || dm.ClientHost != "/127.0.0.1" || string(dm.MemberAssignment) != "a1" || len(dm.ProtocolMetadata) == 0 {
					t.Errorf("member %+v", dm)
				}
				if v >= 3 && d.AuthorizedOperations != -2147483648 {
					t.Errorf("authorized operations %d when not asked for", d.AuthorizedOperations)
				}
				u := resp.Groups[1]
				wantUnknown := (*kerr.Error)(nil)
				if v >= 6 {
					wantUnknown = kerr.GroupIDNotFound
				}
				wantCode(t, "describe unknown", u.ErrorCode, wantUnknown)
				if u.State != "Dead" {
					t.Errorf("unknown group state %q, want Dead", u.State)
				}
			}
		},
		kmsg.ListGroups.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.ListGroups, v)
			commitSimple(t, c, g, topic, 1, "")
			req := kmsg.NewPtrListGroupsRequest()
			req.StatesFilter = []string{"empty"}
			req.TypesFilter = []string{"Classic"}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.ListGroupsResponse)
				wantCode(t, "list", resp.ErrorCode, nil)
				for _, lg := range resp.Groups {
					if lg.Group == g {
						if v >= 4 && lg.GroupState != "Empty" {
							t.Errorf("state %q, want Empty", lg.GroupState)
						}
						if v >= 5 && lg.GroupType != "classic" {
							t.Errorf("type %q, want classic", lg.GroupType)
						}
						return
					}
				}
				t.Errorf("group %s not listed in %+v", g, resp.Groups)
			}
		},
		kmsg.DeleteGroups.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.DeleteGroups, v)
			commitSimple(t, c, g, topic, 1, "")
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{g, "sweep-no-such-group"}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DeleteGroupsResponse)
				if len(resp.Groups) != 2 {
					t.Fatalf("%d results, want 2", len(resp.Groups))
				}
				wantCode(t, "delete", resp.Groups[0].ErrorCode, nil)
				wantCode(t, "delete unknown", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
				if got := fetchOffset(t, c, g, topic); got.Offset != -1 {
					t.Errorf("offset %d after the group was deleted, want -1", got.Offset)
				}
			}
		},
	}
}

// As Kafka: deleting a topic deletes every group's offsets for it, so a
// topic created again under the same name starts with none.
func TestDeleteTopicDropsOffsets(t *testing.T) {
	c := dial(t, startNode(t, false))
	createTopic(c, "doomed", 1, nil)
	createTopic(c, "kept", 1, nil)
	commitSimple(t, c, "g", "doomed", 7, "")
	commitSimple(t, c, "g", "kept", 8, "")
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames = []string{"doomed"}
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("doomed")}}
	resp := roundTrip[*kmsg.DeleteTopicsResponse](c, 6, del)
	wantCode(t, "delete topic", resp.Topics[0].ErrorCode, nil)
	createTopic(c, "doomed", 1, nil)
	if got := fetchOffset(t, c, "g", "doomed"); got.Offset != -1 {
		t.Errorf("offset %d for the re-created topic, want -1", got.Offset)
	}
	if got := fetchOffset(t, c, "g", "kept"); got.Offset != 8 {
		t.Errorf("offset %d for the other topic, want 8", got.Offset)
	}
}
