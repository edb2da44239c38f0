package groups_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzMachine feeds the machine a sequence of requests, decoded from
// fuzzed bytes, with time passing between them:
//
//	go test ./coordinator/groups -run '^$' -fuzz '^FuzzMachine$' -fuzztime 60s
//
// Each step is: a key index, a version, a time step (units of 100 ms),
// a 2-byte body length and the body. The properties: nothing panics, no
// request is answered twice (the harness checks), every record the machine
// writes replays, and a restart after the sequence loads what was written.
func FuzzMachine(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRun(t, data) })
}

// fuzzRun runs one fuzz input and returns the harness after the restart.
func fuzzRun(t testing.TB, data []byte) *harness {
	cfg := testConfig()
	cfg.MinSessionTimeout = time.Millisecond
	cfg.InitialDelay, cfg.InitialQuiet = 200*time.Millisecond, 100*time.Millisecond
	h := newHarness(t, cfg)
	h.catalog = machine.NewCatalog(1, map[string]machine.TopicMeta{
		"t": {ID: topicT, Partitions: 6},
		"u": {ID: topicU, Partitions: 3},
	})
	for steps := 0; len(data) >= 5 && steps < 64; steps++ {
		key := fuzzKeys[int(data[0])%len(fuzzKeys)]
		version := int16(data[1])
		step := time.Duration(data[2]) * 100 * time.Millisecond
		n := int(binary.BigEndian.Uint16(data[3:]))
		data = data[5:]
		if n > len(data) {
			n = len(data)
		}
		body := data[:n]
		data = data[n:]
		req := kmsg.RequestForKey(key)
		if version > req.MaxVersion() {
			version %= req.MaxVersion() + 1
		}
		req.SetVersion(version)
		if req.ReadFrom(body) != nil {
			continue
		}
		h.send(req)
		h.advance(step)
	}
	h.advance(10 * time.Minute)
	h.restart()
	return h
}

// TestFuzzConsumerSeed checks that the KIP-848 seed does what it says, so
// that the fuzzer starts from a group that works: the commit made with
// the member epoch after the revocation is there after the restart.
func TestFuzzConsumerSeed(t *testing.T) {
	h := fuzzRun(t, consumerSeed())
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, "g"
	resp := do[*kmsg.OffsetFetchResponse](h, req)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("the seed's commit is not there: %+v", resp.Topics)
	}
}

var fuzzKeys = []int16{
	kmsg.JoinGroup.Int16(), kmsg.SyncGroup.Int16(), kmsg.Heartbeat.Int16(), kmsg.LeaveGroup.Int16(),
	kmsg.OffsetCommit.Int16(), kmsg.OffsetFetch.Int16(), kmsg.OffsetDelete.Int16(),
	kmsg.DescribeGroups.Int16(), kmsg.ListGroups.Int16(), kmsg.DeleteGroups.Int16(),
	kmsg.ConsumerGroupHeartbeat.Int16(), kmsg.ConsumerGroupDescribe.Int16(),
	kmsg.ShareGroupHeartbeat.Int16(), kmsg.ShareGroupDescribe.Int16(),
}

func fuzzStep(keyIndex int, req kmsg.Request, version int16, tenths byte) []byte {
	req.SetVersion(version)
	body := req.AppendTo(nil)
	b := []byte{byte(keyIndex), byte(version), tenths}
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

// fuzzSeeds: a member joining (v3, so no MEMBER_ID_REQUIRED), syncing with
// the id the machine will hand out unknown to the seed (so the fuzzer has
// to find it), heartbeating, committing and leaving; and admin requests.
func fuzzSeeds(tb testing.TB) [][]byte {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 1, 0, 1, 't'}}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g", 1, "client-x"
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation = "g", 1
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g"
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "client-x"}}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"g"}

	var one []byte
	one = append(one, fuzzStep(4, commit, 8, 1)...)
	one = append(one, fuzzStep(0, join, 3, 5)...)
	one = append(one, fuzzStep(1, sync, 3, 1)...)
	one = append(one, fuzzStep(2, hb, 3, 1)...)
	one = append(one, fuzzStep(5, fetch, 7, 1)...)
	one = append(one, fuzzStep(7, describe, 5, 1)...)
	one = append(one, fuzzStep(3, leave, 5, 1)...)
	one = append(one, fuzzStep(9, del, 2, 1)...)
	var joins []byte
	for range 3 {
		joins = append(joins, fuzzStep(0, join, 9, 0)...)
	}
	joins = append(joins, fuzzStep(0, join, 5, 50)...)
	return [][]byte{one, joins, consumerSeed(), topicIDSeed(), mixedSeed(tb), shareSeed()}
}

// topicIDSeed: OffsetCommit and OffsetFetch v10, which name topics by id:
// a commit to a known id and an unknown one, a fetch of both, and a fetch
// of every offset.
func topicIDSeed() []byte {
	unknown := [16]byte{0xee}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: topicT, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}, {Partition: 9, Offset: 1}}},
		{TopicID: unknown, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 4}}},
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{
		{TopicID: topicT, Partitions: []int32{0, 1}},
		{TopicID: unknown, Partitions: []int32{0}},
	}}}
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	var b []byte
	b = append(b, fuzzStep(4, commit, 10, 1)...)
	b = append(b, fuzzStep(5, fetch, 10, 1)...)
	b = append(b, fuzzStep(5, all, 10, 1)...)
	return b
}

// consumerSeed: two KIP-848 members join (v1, client-chosen ids), the
// first heartbeats with what it owns, revokes, commits with its epoch,
// a static third joins and leaves with -2, and the group is described.
func consumerSeed() []byte {
	const hbKey, describeKey, commitKey = 10, 11, 4
	beat := func(id string, epoch int32, owned []int32, instance string) *kmsg.ConsumerGroupHeartbeatRequest {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "g", id, epoch, -1
		if epoch == 0 {
			r.RebalanceTimeoutMillis = 5000
			r.SubscribedTopicNames = []string{"t", "u"}
		}
		if owned != nil {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			if len(owned) > 0 {
				r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: topicT, Partitions: owned})
			}
		}
		if instance != "" {
			r.InstanceID = &instance
		}
		return r
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID = "g", 2, "a"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7}}}}
	describe := kmsg.NewPtrConsumerGroupDescribeRequest()
	describe.Groups = []string{"g"}
	var b []byte
	b = append(b, fuzzStep(hbKey, beat("a", 0, []int32{}, ""), 1, 10)...)
	b = append(b, fuzzStep(hbKey, beat("b", 0, []int32{}, ""), 1, 1)...)
	b = append(b, fuzzStep(hbKey, beat("a", 1, []int32{0, 1, 2, 3, 4, 5}, ""), 1, 1)...)
	b = append(b, fuzzStep(hbKey, beat("a", 1, []int32{0, 1, 2}, ""), 1, 1)...)
	b = append(b, fuzzStep(commitKey, commit, 9, 1)...)
	b = append(b, fuzzStep(hbKey, beat("b", 2, []int32{}, ""), 1, 1)...)
	b = append(b, fuzzStep(hbKey, beat("s", 0, []int32{}, "i"), 1, 1)...)
	b = append(b, fuzzStep(hbKey, beat("s", -2, nil, "i"), 1, 1)...)
	b = append(b, fuzzStep(describeKey, describe, 1, 1)...)
	b = append(b, fuzzStep(hbKey, beat("a", -1, nil, ""), 1, 100)...)
	return b
}

// mixedSeed: a classic member forms a group with a consumer-protocol
// assignment, a consumer-protocol member's heartbeat converts it (an
// online upgrade), the classic member is told to rejoin, rejoins and
// syncs inside the consumer group and commits, then the consumer-protocol
// member leaves and the group goes back to the classic protocol. The
// classic member's id is the first the machine mints, learned by a dry run.
func mixedSeed(tb testing.TB) []byte {
	const joinKey, syncKey, hbKey, commitKey, describeKey, cgKey = 0, 1, 2, 4, 7, 10
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version, sub.Topics = 1, []string{"t"}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub.AppendTo(nil)}}
	first := fuzzStep(joinKey, join, 3, 5)

	dry := fuzzRun(tb, first)
	id := ""
	if len(dry.order) > 0 {
		if r, ok := dry.replies[dry.order[0]].(*kmsg.JoinGroupResponse); ok {
			id = r.MemberID
		}
	}
	as := kmsg.NewConsumerMemberAssignment()
	as.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0, 1, 2, 3, 4, 5}}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g", 1, id
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: id, MemberAssignment: as.AppendTo(nil)}}
	beat := func(epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "g", "b", epoch, -1
		if epoch == 0 {
			r.RebalanceTimeoutMillis = 5000
			r.SubscribedTopicNames = []string{"t"}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		return r
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "g", 1, id
	rejoin := *join
	rejoin.MemberID = id
	sync2 := kmsg.NewPtrSyncGroupRequest()
	sync2.Group, sync2.Generation, sync2.MemberID = "g", 2, id
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID = "g", 2, id
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 9}}}}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"g"}
	b := first
	b = append(b, fuzzStep(syncKey, sync, 3, 1)...)
	b = append(b, fuzzStep(cgKey, beat(0), 1, 1)...)
	b = append(b, fuzzStep(hbKey, hb, 3, 1)...)
	b = append(b, fuzzStep(joinKey, &rejoin, 3, 1)...)
	b = append(b, fuzzStep(syncKey, sync2, 3, 1)...)
	b = append(b, fuzzStep(commitKey, commit, 8, 1)...)
	b = append(b, fuzzStep(cgKey, beat(2), 1, 1)...)
	b = append(b, fuzzStep(cgKey, beat(-1), 1, 1)...)
	b = append(b, fuzzStep(describeKey, describe, 5, 1)...)
	return b
}

// shareSeed: two share group members join "s" (v1, client-minted ids)
// and heartbeat, the group is described, a classic JoinGroup and a commit
// to it are refused, b leaves, a deletion is refused while a is in it,
// then a leaves and the empty group is deleted.
func shareSeed() []byte {
	const joinKey, commitKey, deleteKey, hbKey, describeKey = 0, 4, 9, 12, 13
	beat := func(id string, epoch int32) *kmsg.ShareGroupHeartbeatRequest {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.MemberEpoch = "s", id, epoch
		if epoch == 0 {
			r.SubscribedTopicNames = []string{"t", "u"}
		}
		return r
	}
	describe := kmsg.NewPtrShareGroupDescribeRequest()
	describe.GroupIDs = []string{"s", "g"}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "s", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "s", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"s"}
	var b []byte
	b = append(b, fuzzStep(hbKey, beat("a", 0), 1, 1)...)
	b = append(b, fuzzStep(hbKey, beat("b", 0), 1, 1)...)
	b = append(b, fuzzStep(hbKey, beat("a", 1), 1, 1)...)
	b = append(b, fuzzStep(describeKey, describe, 1, 1)...)
	b = append(b, fuzzStep(joinKey, join, 3, 1)...)
	b = append(b, fuzzStep(commitKey, commit, 8, 1)...)
	b = append(b, fuzzStep(hbKey, beat("b", -1), 1, 1)...)
	b = append(b, fuzzStep(deleteKey, del, 2, 1)...)
	b = append(b, fuzzStep(hbKey, beat("a", -1), 1, 1)...)
	b = append(b, fuzzStep(deleteKey, del, 2, 1)...)
	return b
}

// TestFuzzShareSeed checks that the share group seed does what it says:
// the group is gone after it, and the share-partition state its members
// were given is left for the share-state host to drop.
func TestFuzzShareSeed(t *testing.T) {
	h := fuzzRun(t, shareSeed())
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.Version, d.GroupIDs = 1, []string{"s"}
	if r := do[*kmsg.ShareGroupDescribeResponse](h, d); len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("after the seed: %+v", r.Groups)
	}
	h.nextID++
	out := h.m.Handle(h.now, machine.Request{ID: h.nextID, Cmd: groups.ShareDeletionsCmd{}})
	dels, _ := out.Replies[0].Out.([]groups.ShareDeletion)
	if len(dels) != 1 || dels[0].Group != "s" || len(dels[0].Topics) != 2 {
		t.Fatalf("share-partition state left to drop: %+v", dels)
	}
	joined := 0
	for _, e := range h.events {
		if e.Protocol == "share" && e.Kind == observe.MemberJoined {
			joined++
		}
	}
	if joined != 2 {
		t.Fatalf("%d share members joined, want 2", joined)
	}
}

// TestFuzzMixedSeed checks that the mixed-group seed does what it says:
// after it the group is a classic group again, and the commit the classic member made inside the consumer group is
// there.
func TestFuzzMixedSeed(t *testing.T) {
	h := fuzzRun(t, mixedSeed(t))
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Version, d.Groups = 5, []string{"g"}
	r := do[*kmsg.DescribeGroupsResponse](h, d)
	// (Ten minutes later: the classic member's session has ended.)
	if len(r.Groups) != 1 || r.Groups[0].ProtocolType != "consumer" || r.Groups[0].State != "Empty" {
		t.Fatalf("after the seed: %+v", r.Groups)
	}
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version, f.Group = 7, "g"
	if resp := do[*kmsg.OffsetFetchResponse](h, f); len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != 9 {
		t.Fatalf("the classic member's commit in the mixed group is not there: %+v", resp.Topics)
	}
	conversions := 0
	for _, e := range h.events {
		if e.Kind == observe.GroupConverted {
			conversions++
		}
	}
	if conversions != 2 {
		t.Fatalf("%d conversions, want an upgrade and a downgrade", conversions)
	}
}
