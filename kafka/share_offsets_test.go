package kafka_test

// The share group offset APIs (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets) over TCP: their sweep
// cases, their outcomes and every error, each against Kafka 4.2's answer.
// Share state is made by AlterShareGroupOffsets, and by a member's
// ShareFetch and ShareAcknowledge.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareJoin makes member a member of share group g on topic and returns
// its epoch.
func shareJoin(t *testing.T, c *rawClient, g, member, topic string) int32 {
	t.Helper()
	resp := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq(g, member, topic))
	wantCode(t, "share join of "+member, resp.ErrorCode, nil)
	return resp.MemberEpoch
}

// shareLeave makes member leave share group g.
func shareLeave(t *testing.T, c *rawClient, g, member string) {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = g, member, -1
	wantCode(t, "share leave of "+member, roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, req).ErrorCode, nil)
}

// emptyShareGroup makes g an empty share group: a member joins and
// leaves.
func emptyShareGroup(t *testing.T, c *rawClient, g, topic string) {
	t.Helper()
	shareJoin(t, c, g, "once-"+g, topic)
	shareLeave(t, c, g, "once-"+g)
}

// alterShareReq is an AlterShareGroupOffsets of g: topic → partition →
// start offset, topics in the order given by names.
func alterShareReq(g string, names []string, offsets map[string]map[int32]int64) *kmsg.AlterShareGroupOffsetsRequest {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = g
	for _, name := range names {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = name
		for _, p := range slices.Sorted(func(yield func(int32) bool) {
			for p := range offsets[name] {
				if !yield(p) {
					return
				}
			}
		}) {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = p, offsets[name][p]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// alterShare alters g's start offset of partitions of one topic and
// fails on any error.
func alterShare(t *testing.T, c *rawClient, g, topic string, offsets map[int32]int64) {
	t.Helper()
	resp := roundTrip[*kmsg.AlterShareGroupOffsetsResponse](c, 0, alterShareReq(g, []string{topic}, map[string]map[int32]int64{topic: offsets}))
	if got := renderAlter(resp); strings.Contains(got, "!") {
		t.Fatalf("alter %s of %s: %s", topic, g, got)
	}
}

// describeShareReq describes g's share offsets: topics nil is every
// partition; each topic is "name:0,1".
func describeShareReq(g string, topics ...string) *kmsg.DescribeShareGroupOffsetsRequest {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = g
	for _, tp := range topics {
		name, parts, _ := strings.Cut(tp, ":")
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic = name
		for _, p := range strings.Split(parts, ",") {
			var n int32
			fmt.Sscan(p, &n)
			rt.Partitions = append(rt.Partitions, n)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	return req
}

// describeShare renders describeShareReq's answer at version v.
func describeShare(c *rawClient, v int16, g string, topics ...string) string {
	c.t.Helper()
	req := describeShareReq(g, topics...)
	if topics != nil && req.Groups[0].Topics == nil {
		req.Groups[0].Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
	}
	return renderDescribe(roundTrip[*kmsg.DescribeShareGroupOffsetsResponse](c, v, req), v)
}

// errTag is "!NAME" for an error code, "" for none.
func errTag(code int16) string {
	if code == 0 {
		return ""
	}
	return "!" + kerr.ErrorForCode(code).(*kerr.Error).Message
}

// idTag is "" for a topic answered with an id, "(no id)" for one without.
func idTag(id [16]byte) string {
	if id == [16]byte{} {
		return "(no id)"
	}
	return ""
}

// renderDescribe prints groups as g: topic[p=start/lag …] …, with errors
// as !NAME, the lag only from v1, a leader epoch other than 0 as @E.
func renderDescribe(resp *kmsg.DescribeShareGroupOffsetsResponse, v int16) string {
	var out []string
	for _, g := range resp.Groups {
		s := g.GroupID + errTag(g.ErrorCode) + ":"
		for _, t := range g.Topics {
			var ps []string
			for _, p := range t.Partitions {
				e := fmt.Sprintf("%d=%d", p.Partition, p.StartOffset)
				if v >= 1 {
					e += fmt.Sprintf("/%d", p.Lag)
				}
				if p.LeaderEpoch != 0 {
					e += fmt.Sprintf("@%d", p.LeaderEpoch)
				}
				ps = append(ps, e+errTag(p.ErrorCode))
			}
			s += fmt.Sprintf(" %s%s[%s]", t.Topic, idTag(t.TopicID), strings.Join(ps, " "))
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

// renderAlter prints an AlterShareGroupOffsets answer as
// topic[p p!ERR] …, or !ERR "message".
func renderAlter(resp *kmsg.AlterShareGroupOffsetsResponse) string {
	if resp.ErrorCode != 0 {
		return fmt.Sprintf("%s %q (%d topics)", errTag(resp.ErrorCode), deref(resp.ErrorMessage), len(resp.Topics))
	}
	var out []string
	for _, t := range resp.Topics {
		var ps []string
		for _, p := range t.Partitions {
			ps = append(ps, fmt.Sprintf("%d%s", p.Partition, errTag(p.ErrorCode)))
		}
		out = append(out, fmt.Sprintf("%s%s[%s]", t.Topic, idTag(t.TopicID), strings.Join(ps, " ")))
	}
	return strings.Join(out, " ")
}

// renderDelete prints a DeleteShareGroupOffsets answer as topic topic!ERR
// …, or !ERR "message".
func renderDelete(resp *kmsg.DeleteShareGroupOffsetsResponse) string {
	if resp.ErrorCode != 0 {
		return fmt.Sprintf("%s %q (%d topics)", errTag(resp.ErrorCode), deref(resp.ErrorMessage), len(resp.Topics))
	}
	var out []string
	for _, t := range resp.Topics {
		out = append(out, t.Topic+idTag(t.TopicID)+errTag(t.ErrorCode))
	}
	return strings.Join(out, " ")
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// deleteShare deletes g's share offsets of topics and renders the
// answer.
func deleteShare(c *rawClient, g string, topics ...string) string {
	c.t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = g
	for _, name := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	return renderDelete(roundTrip[*kmsg.DeleteShareGroupOffsetsResponse](c, 0, req))
}

// shareFetch opens member's share session (epoch 0) on partition p of
// topic id and returns the records it acquired, as first-last/count.
func shareFetch(t *testing.T, c *rawClient, g, member string, id [16]byte, p int32) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr(g), kmsg.StringPtr(member)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 5000, 1, 1<<20, 500, 500
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: p}}}}
	resp := roundTrip[*kmsg.ShareFetchResponse](c, 2, req)
	wantCode(t, "share fetch", resp.ErrorCode, nil)
	var got []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			wantCode(t, "share fetch partition", rp.ErrorCode, nil)
			got = append(got, rp.AcquiredRecords...)
		}
	}
	return got
}

// shareAck acknowledges offsets first to last of partition p with typ
// (1 accept, 2 release, 3 reject) in member's session at epoch (1 after
// the fetch that opened it, one more for each request since).
func shareAck(t *testing.T, c *rawClient, g, member string, epoch int32, id [16]byte, p int32, first, last int64, typ int8) {
	t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(g), kmsg.StringPtr(member), epoch
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{
		Partition: p, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}},
	}}}}
	resp := roundTrip[*kmsg.ShareAcknowledgeResponse](c, 2, req)
	wantCode(t, "share acknowledge", resp.ErrorCode, nil)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			wantCode(t, "share acknowledge partition", rp.ErrorCode, nil)
		}
	}
}

// shareOffsetsSweepCases are TestVersionSweep's cases for the share group
// offset APIs: each in a share group of its own, emptied (a member joined
// and left) where it must be, its state made by an alteration.
func shareOffsetsSweepCases(topic string, topicID [16]byte) map[int16]sweepCase {
	name := func(key kmsg.Key, v int16) string { return fmt.Sprintf("sweep-%s-v%d", key.Name(), v) }
	return map[int16]sweepCase{
		kmsg.DescribeShareGroupOffsets.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.DescribeShareGroupOffsets, v)
			emptyShareGroup(t, c, g, topic)
			alterShare(t, c, g, topic, map[int32]int64{0: 1})
			return describeShareReq(g, topic+":0,1"), func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeShareGroupOffsetsResponse)
				if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 {
					t.Fatalf("describe: %s", renderDescribe(resp, v))
				}
				rg := resp.Groups[0]
				wantCode(t, "describe", rg.ErrorCode, nil)
				rt := rg.Topics[0]
				if rt.Topic != topic || rt.TopicID != topicID || len(rt.Partitions) != 2 {
					t.Fatalf("describe: %s", renderDescribe(resp, v))
				}
				p0, p1 := rt.Partitions[0], rt.Partitions[1]
				// The log holds two records at least: the lag is the
				// rest after offset 1.
				if p0.ErrorCode != 0 || p0.StartOffset != 1 || v >= 1 && p0.Lag < 1 {
					t.Errorf("partition 0: %s", renderDescribe(resp, v))
				}
				if p1.ErrorCode != 0 || p1.StartOffset != -1 || v >= 1 && p1.Lag != -1 {
					t.Errorf("partition 1, which does not exist: %s", renderDescribe(resp, v))
				}
			}
		},
		kmsg.AlterShareGroupOffsets.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.AlterShareGroupOffsets, v)
			emptyShareGroup(t, c, g, topic)
			return alterShareReq(g, []string{topic}, map[string]map[int32]int64{topic: {0: 1}}), func(r kmsg.Response) {
				resp := r.(*kmsg.AlterShareGroupOffsetsResponse)
				if got := renderAlter(resp); got != topic+"[0]" || resp.Topics[0].TopicID != topicID {
					t.Errorf("alter: %s, want %s[0] with its id", got, topic)
				}
			}
		},
		kmsg.DeleteShareGroupOffsets.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			g := name(kmsg.DeleteShareGroupOffsets, v)
			emptyShareGroup(t, c, g, topic)
			alterShare(t, c, g, topic, map[int32]int64{0: 1})
			req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			req.GroupID = g
			req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DeleteShareGroupOffsetsResponse)
				if got := renderDelete(resp); got != topic || resp.Topics[0].TopicID != topicID {
					t.Errorf("delete: %s, want %s with its id", got, topic)
				}
			}
		},
	}
}

// TestDescribeShareGroupOffsets: as Kafka 4.2, a partition with no state
// is start offset -1, lag -1, no error (a group that does not exist, a
// partition out of range, an unknown topic, which has no id and comes
// after the known ones); one with state has its start offset and the lag
// high watermark − start − the records acknowledged or archived after
// it; every partition is the group's ShareGroupPartitions (altered ones,
// and those its members were assigned), with no error for a name that
// is no share group; v0 has no lag.
func TestDescribeShareGroupOffsets(t *testing.T) {
	c := dial(t, startNode(t, false))
	const topic, g = "so", "describe"
	id := createTopic(c, topic, 3, nil)
	mustProduce(c, topic, 0, plain(10, 8).encode())
	mustProduce(c, topic, 1, plain(4, 8).encode())

	for _, tc := range []struct {
		name   string
		v      int16
		topics []string
		want   string
	}{
		{"no group, every partition", 1, nil, "describe:"},
		{"no group, named", 1, []string{"so:0,1,7,-1", "ghost:0", "so:2"},
			"describe: so[0=-1/-1 1=-1/-1 7=-1/-1 -1=-1/-1] so[2=-1/-1] ghost(no id)[0=-1/-1]"},
		{"no topics", 1, []string{}, "describe:"},
	} {
		if got := describeShare(c, tc.v, g, tc.topics...); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}

	emptyShareGroup(t, c, g, "unrelated") // a share group with no state
	if got, want := describeShare(c, 1, g), "describe:"; got != want {
		t.Errorf("an empty share group's every partition: %s, want %s", got, want)
	}
	alterShare(t, c, g, topic, map[int32]int64{0: 0, 1: 4})
	if got, want := describeShare(c, 1, g, "so:0,1,2"), "describe: so[0=0/10 1=4/0 2=-1/-1]"; got != want {
		t.Errorf("altered: %s, want %s", got, want)
	}

	// A member acquires the ten records of partition 0 and accepts 2–5:
	// the start stays at 0 (0 and 1 are still in flight), four records
	// are done, the lag is 10 − 0 − 4. Rejecting 6–7 archives them.
	shareJoin(t, c, g, "m1", topic)
	if got := shareFetch(t, c, g, "m1", id, 0); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 9 || got[0].DeliveryCount != 1 {
		t.Fatalf("acquired %+v, want 0–9 at their first delivery", got)
	}
	shareAck(t, c, g, "m1", 1, id, 0, 2, 5, 1)
	if got, want := describeShare(c, 1, g, "so:0"), "describe: so[0=0/6]"; got != want {
		t.Errorf("after accepting 2–5: %s, want %s", got, want)
	}
	shareAck(t, c, g, "m1", 2, id, 0, 6, 7, 3)
	if got, want := describeShare(c, 1, g, "so:0"), "describe: so[0=0/4]"; got != want {
		t.Errorf("after rejecting 6–7: %s, want %s", got, want)
	}
	if got, want := describeShare(c, 0, g, "so:0"), "describe: so[0=0]"; got != want {
		t.Errorf("v0: %s, want %s", got, want)
	}
	// Accepting 0–1 moves the start past every finished record.
	shareAck(t, c, g, "m1", 3, id, 0, 0, 1, 1)
	if got, want := describeShare(c, 1, g, "so:0"), "describe: so[0=8/2]"; got != want {
		t.Errorf("after accepting 0–1: %s, want %s", got, want)
	}
	// Every partition: the altered ones and those the member was
	// assigned (2 has no state yet).
	if got, want := describeShare(c, 1, g), "describe: so[0=8/2 1=4/0 2=-1/-1]"; got != want {
		t.Errorf("every partition: %s, want %s", got, want)
	}

	// Several groups at once; a classic group is no share group, and has
	// no share state (no error).
	joinAlone(t, c, 9, "classic", topic)
	req := describeShareReq(g, "so:1")
	req.Groups = append(req.Groups, describeShareReq("classic", "so:1").Groups[0], describeShareReq("nobody").Groups[0])
	req.Groups[2].Topics = nil
	if got, want := renderDescribe(roundTrip[*kmsg.DescribeShareGroupOffsetsResponse](c, 1, req), 1),
		"describe: so[1=4/0]; classic: so[1=-1/-1]; nobody:"; got != want {
		t.Errorf("three groups: %s, want %s", got, want)
	}
}

// TestAlterShareGroupOffsets: as Kafka 4.2, the group must be an empty
// share group (else the request's error, with Kafka's message, and no
// topics); unknown topics first, then each partition: out of range
// UNKNOWN_TOPIC_OR_PARTITION, a negative one or offset INVALID_REQUEST
// (Cohort's), the others altered. An alteration forgets what was in
// flight: the records are delivered again, as new.
func TestAlterShareGroupOffsets(t *testing.T) {
	c := dial(t, startNode(t, false))
	const topic = "sa"
	id := createTopic(c, topic, 2, nil)
	mustProduce(c, topic, 0, plain(5, 8).encode())
	alter := func(g string, names []string, offsets map[string]map[int32]int64) string {
		return renderAlter(roundTrip[*kmsg.AlterShareGroupOffsetsResponse](c, 0, alterShareReq(g, names, offsets)))
	}
	one := map[string]map[int32]int64{topic: {0: 1}}

	joinAlone(t, c, 9, "classic", topic)
	shareJoin(t, c, "busy", "m1", topic)
	for _, tc := range []struct{ g, want string }{
		// An id no group has gets an empty share group (Kafka's
		// getOrMaybeCreatePersistedShareGroup).
		{"nobody", `sa[0]`},
		{"classic", `!GROUP_ID_NOT_FOUND "Group classic is not a share group." (0 topics)`},
		{"busy", `!NON_EMPTY_GROUP "The group is not empty." (0 topics)`},
		{"", `!INVALID_GROUP_ID "The group id is invalid." (0 topics)`},
	} {
		if got := alter(tc.g, []string{topic}, one); got != tc.want {
			t.Errorf("group %q: %s, want %s", tc.g, got, tc.want)
		}
	}
	// A refused group's partitions are answered with nothing else.
	if got, want := alter("classic", []string{"ghost", topic}, map[string]map[int32]int64{"ghost": {0: 0}, topic: {0: 1}}), `!GROUP_ID_NOT_FOUND "Group classic is not a share group." (0 topics)`; got != want {
		t.Errorf("not a share group, with an unknown topic: %s, want %s", got, want)
	}

	const g = "alter"
	emptyShareGroup(t, c, g, topic)
	got := alter(g, []string{topic, "ghost"}, map[string]map[int32]int64{topic: {0: 3, 2: 0, -1: 0, 1: -5}, "ghost": {0: 0}})
	if want := "ghost(no id)[0!UNKNOWN_TOPIC_OR_PARTITION] sa[-1!INVALID_REQUEST 0 1!INVALID_REQUEST 2!UNKNOWN_TOPIC_OR_PARTITION]"; got != want {
		t.Errorf("alter: %s, want %s", got, want)
	}
	resp := roundTrip[*kmsg.AlterShareGroupOffsetsResponse](c, 0, alterShareReq(g, []string{"ghost"}, map[string]map[int32]int64{"ghost": {0: 0}}))
	if m := resp.Topics[0].Partitions[0].ErrorMessage; m == nil || *m != "This server does not host this topic-partition." {
		t.Errorf("unknown topic's message %v", deref(m))
	}
	if got, want := describeShare(c, 1, g, "sa:0,1"), "alter: sa[0=3/2 1=-1/-1]"; got != want {
		t.Errorf("after the alteration: %s, want %s", got, want)
	}

	// In flight, then altered back: delivered again as new.
	shareJoin(t, c, g, "m2", topic)
	if got := shareFetch(t, c, g, "m2", id, 0); len(got) != 1 || got[0].FirstOffset != 3 || got[0].LastOffset != 4 {
		t.Fatalf("acquired %+v, want 3–4", got)
	}
	shareLeave(t, c, g, "m2")
	alterShare(t, c, g, topic, map[int32]int64{0: 0})
	if got, want := describeShare(c, 1, g, "sa:0"), "alter: sa[0=0/5]"; got != want {
		t.Errorf("altered back: %s, want %s", got, want)
	}
	shareJoin(t, c, g, "m3", topic)
	if got := shareFetch(t, c, g, "m3", id, 0); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 4 || got[0].DeliveryCount != 1 {
		t.Fatalf("acquired %+v after the alteration, want 0–4 at their first delivery", got)
	}
}

// TestDeleteShareGroupOffsets: as Kafka 4.2, the group must be an empty
// share group; an unknown topic, and one whose state the group does not
// hold ("There is no offset information to delete."), are
// UNKNOWN_TOPIC_OR_PARTITION with no id; the others' state is deleted
// (described as -1 after, left out of every partition), they are
// answered with their id, and they are assigned again afterwards.
func TestDeleteShareGroupOffsets(t *testing.T) {
	c := dial(t, startNode(t, false))
	createTopic(c, "sd", 2, nil)
	createTopic(c, "other", 1, nil)
	mustProduce(c, "sd", 0, plain(3, 8).encode())

	joinAlone(t, c, 9, "classic", "sd")
	shareJoin(t, c, "busy", "m1", "sd")
	for _, tc := range []struct{ g, want string }{
		{"nobody", `!GROUP_ID_NOT_FOUND "Group nobody not found." (0 topics)`},
		{"classic", `!GROUP_ID_NOT_FOUND "Group classic is not a share group." (0 topics)`},
		{"busy", `!NON_EMPTY_GROUP "The group is not empty." (0 topics)`},
		{"", `!INVALID_GROUP_ID "The group id is invalid." (0 topics)`},
	} {
		if got := deleteShare(c, tc.g, "sd", "ghost"); got != tc.want {
			t.Errorf("group %q: %s, want %s", tc.g, got, tc.want)
		}
	}

	const g = "delete"
	emptyShareGroup(t, c, g, "other")
	alterShare(t, c, g, "sd", map[int32]int64{0: 1, 1: 0})
	if got, want := describeShare(c, 1, g), "delete: other[0=-1/-1] sd[0=1/2 1=0/0]"; got != want {
		t.Fatalf("before: %s, want %s", got, want)
	}
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = g
	for _, name := range []string{"ghost", "sd", "unrelated"} {
		req.Topics = append(req.Topics, kmsg.DeleteShareGroupOffsetsRequestTopic{Topic: name})
	}
	createTopic(c, "unrelated", 1, nil)
	resp := roundTrip[*kmsg.DeleteShareGroupOffsetsResponse](c, 0, req)
	if got, want := renderDelete(resp), "sd ghost(no id)!UNKNOWN_TOPIC_OR_PARTITION unrelated(no id)!UNKNOWN_TOPIC_OR_PARTITION"; got != want {
		t.Errorf("delete: %s, want %s", got, want)
	}
	for i, want := range []string{"<nil>", "This server does not host this topic-partition.", "There is no offset information to delete."} {
		if got := deref(resp.Topics[i].ErrorMessage); got != want {
			t.Errorf("%s: message %q, want %q", resp.Topics[i].Topic, got, want)
		}
	}
	if got, want := describeShare(c, 1, g, "sd:0,1"), "delete: sd[0=-1/-1 1=-1/-1]"; got != want {
		t.Errorf("after: %s, want %s", got, want)
	}
	if got, want := describeShare(c, 1, g), "delete: other[0=-1/-1]"; got != want {
		t.Errorf("every partition after: %s, want %s", got, want)
	}
	if got, want := deleteShare(c, g, "sd"), "sd(no id)!UNKNOWN_TOPIC_OR_PARTITION"; got != want {
		t.Errorf("deleted again: %s, want %s", got, want)
	}
	// The topic is the group's to assign again.
	hb := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq(g, "m2", "sd"))
	if hb.ErrorCode != 0 || hb.Assignment == nil || len(hb.Assignment.TopicPartitions) != 1 || len(hb.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Errorf("a member joining after: %+v", hb)
	}
}

// TestShareGroupOffsetsAuthorization: Kafka 4.2's checks. Describe needs
// DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED for that group) and
// on each topic (named: TOPIC_AUTHORIZATION_FAILED per partition, start
// offset -1, no id, last; every partition: left out). Alter needs READ
// on the group (not ALTER) and on each topic (TOPIC_AUTHORIZATION_FAILED
// per partition, first). Delete needs DELETE on the group and READ on
// each topic (TOPIC_AUTHORIZATION_FAILED, no id).
func TestShareGroupOffsetsAuthorization(t *testing.T) {
	groups := coordinator.Config{InitialRebalanceDelay: -1, Shards: 1}
	n := testkit.StartNode(t, node.Config{Groups: groups, Authorizer: true, AllowEveryoneIfNoACLFound: true})
	c := dial(t, n.KafkaAddr())
	createTopic(c, "open", 1, nil)
	createTopic(c, "secret", 1, nil)
	const g = "authz"
	emptyShareGroup(t, c, g, "open")
	alterShare(t, c, g, "open", map[int32]int64{0: 0})
	alterShare(t, c, g, "secret", map[int32]int64{0: 0})

	acls := kmsg.NewPtrCreateACLsRequest()
	deny := func(typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = typ, name, kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:ANONYMOUS", "*", op, kmsg.ACLPermissionTypeDeny
		acls.Creations = append(acls.Creations, cr)
	}
	// Everything on every group, but what is denied (an ACL of a
	// resource ends "allow if no ACL is found" for it).
	allow := kmsg.NewCreateACLsRequestCreation()
	allow.ResourceType, allow.ResourceName, allow.ResourcePatternType = kmsg.ACLResourceTypeGroup, "*", kmsg.ACLResourcePatternTypeLiteral
	allow.Principal, allow.Host, allow.Operation, allow.PermissionType = "User:ANONYMOUS", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
	acls.Creations = append(acls.Creations, allow)
	deny(kmsg.ACLResourceTypeTopic, "secret", kmsg.ACLOperationDescribe)
	deny(kmsg.ACLResourceTypeTopic, "secret", kmsg.ACLOperationRead)
	deny(kmsg.ACLResourceTypeGroup, "hidden", kmsg.ACLOperationDescribe)
	deny(kmsg.ACLResourceTypeGroup, "noread", kmsg.ACLOperationRead)
	deny(kmsg.ACLResourceTypeGroup, "noalter", kmsg.ACLOperationAlter)
	deny(kmsg.ACLResourceTypeGroup, "nodelete", kmsg.ACLOperationDelete)
	for _, r := range roundTrip[*kmsg.CreateACLsResponse](c, 3, acls).Results {
		wantCode(t, "create acl", r.ErrorCode, nil)
	}

	if got, want := describeShare(c, 1, g, "secret:0", "open:0"), "authz: open[0=0/0] secret(no id)[0=-1/-1!TOPIC_AUTHORIZATION_FAILED]"; got != want {
		t.Errorf("describe named: %s, want %s", got, want)
	}
	if got, want := describeShare(c, 1, g), "authz: open[0=0/0]"; got != want {
		t.Errorf("describe every partition: %s, want %s", got, want)
	}
	if got, want := describeShare(c, 1, "hidden"), "hidden!GROUP_AUTHORIZATION_FAILED:"; got != want {
		t.Errorf("describe a hidden group: %s, want %s", got, want)
	}

	alter := func(g string, names ...string) string {
		offsets := map[string]map[int32]int64{}
		for _, name := range names {
			offsets[name] = map[int32]int64{0: 0}
		}
		return renderAlter(roundTrip[*kmsg.AlterShareGroupOffsetsResponse](c, 0, alterShareReq(g, names, offsets)))
	}
	for _, tc := range []struct {
		g     string
		names []string
		want  string
	}{
		{g, []string{"open", "secret"}, "secret[0!TOPIC_AUTHORIZATION_FAILED] open[0]"},
		{"noread", []string{"open"}, `!GROUP_AUTHORIZATION_FAILED "Group authorization failed." (0 topics)`},
		{"noalter", []string{"open"}, "open[0]"},
		{"nodelete", []string{"open"}, "open[0]"},
	} {
		if got := alter(tc.g, tc.names...); got != tc.want {
			t.Errorf("alter %s %v: %s, want %s", tc.g, tc.names, got, tc.want)
		}
	}
	for _, tc := range []struct {
		g     string
		names []string
		want  string
	}{
		{"nodelete", []string{"open"}, `!GROUP_AUTHORIZATION_FAILED "Group authorization failed." (0 topics)`},
		{"noread", []string{"open"}, `!GROUP_ID_NOT_FOUND "Group noread not found." (0 topics)`},
		{g, []string{"open", "secret"}, "secret(no id)!TOPIC_AUTHORIZATION_FAILED open"},
	} {
		if got := deleteShare(c, tc.g, tc.names...); got != tc.want {
			t.Errorf("delete %s %v: %s, want %s", tc.g, tc.names, got, tc.want)
		}
	}
}

// TestShareStateOfADeletedGroup: a deleted share group's state is
// dropped by the node soon after (its hooks: node/share_hooks.go), and
// until it is the group's topics are not assigned to a new group of the
// name, so that it never reads the old group's state; then they are.
// (Altering such a topic's offsets while the old state waits, which
// drops the rest of it, is groups' testdata/share.txt "offsets".)
func TestShareStateOfADeletedGroup(t *testing.T) {
	c := dial(t, startNode(t, false))
	const topic, g = "sx", "reborn"
	createTopic(c, topic, 3, nil)
	for p := range int32(3) {
		mustProduce(c, topic, p, plain(4, 8).encode())
	}
	emptyShareGroup(t, c, g, topic)
	alterShare(t, c, g, topic, map[int32]int64{0: 1, 1: 2, 2: 3})
	if got, want := describeShare(c, 1, g, "sx:0,1,2"), "reborn: sx[0=1/3 1=2/2 2=3/1]"; got != want {
		t.Fatalf("altered: %s, want %s", got, want)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{g}
	if r := roundTrip[*kmsg.DeleteGroupsResponse](c, 2, del); len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete group: %+v", r.Groups)
	}
	deadline := time.Now().Add(20 * time.Second)
	for member := 0; ; member++ {
		gone := describeShare(c, 1, g, "sx:0,1,2") == "reborn: sx[0=-1/-1 1=-1/-1 2=-1/-1]"
		id := fmt.Sprintf("m%d", member)
		hb := roundTrip[*kmsg.ShareGroupHeartbeatResponse](c, 1, shareJoinReq(g, id, topic))
		if hb.ErrorCode != 0 || hb.Assignment == nil {
			t.Fatalf("join %s: %+v", id, hb)
		}
		assigned := len(hb.Assignment.TopicPartitions) == 1 && len(hb.Assignment.TopicPartitions[0].Partitions) == 3
		if assigned && gone {
			return
		}
		if assigned && !gone {
			// The topic was assigned: its old state must be gone.
			if got := describeShare(c, 1, g, "sx:0,1,2"); got != "reborn: sx[0=-1/-1 1=-1/-1 2=-1/-1]" {
				t.Fatalf("the topic assigned to %s while the old group's state is %s", id, got)
			}
			return
		}
		shareLeave(t, c, g, id)
		if time.Now().After(deadline) {
			t.Fatalf("the deleted group's state was not dropped: %s", describeShare(c, 1, g, "sx:0,1,2"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
