package groups_test

import (
	"testing"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchV10RecreatedTopic: an offset stamped with the id of an older
// topic of the same name (a crash between the topic's deletion and its
// offsets' tombstones, before reconcileTopics) is not the new topic's:
// v10, which names the new id, answers -1 (KAFKA-19154) and leaves it out
// of every offset; v9, by name, still sees it.
func TestFetchV10RecreatedTopic(t *testing.T) {
	h := newHarness(t, testConfig())
	old, recreated := [16]byte{1}, [16]byte{2}
	h.catalog = machine.NewCatalog(1, map[string]machine.TopicMeta{"t": {ID: old, Partitions: 1}})
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{TopicID: old, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}}}
	cr := do[*kmsg.OffsetCommitResponse](h, commit)
	if len(cr.Topics) != 1 || cr.Topics[0].TopicID != old || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", cr.Topics)
	}
	h.catalog = machine.NewCatalog(2, map[string]machine.TopicMeta{"t": {ID: recreated, Partitions: 1}})

	fetch := func(version int16, topics []kmsg.OffsetFetchRequestGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = version
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: topics}}
		resp := do[*kmsg.OffsetFetchResponse](h, req)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("v%d fetch: %+v", version, resp.Groups)
		}
		return resp.Groups[0].Topics
	}
	got := fetch(10, []kmsg.OffsetFetchRequestGroupTopic{{TopicID: recreated, Partitions: []int32{0}}})
	if len(got) != 1 || got[0].TopicID != recreated || got[0].Partitions[0].Offset != -1 || got[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("v10 fetch of the new id: %+v, want offset -1, no error", got)
	}
	got = fetch(10, []kmsg.OffsetFetchRequestGroupTopic{{TopicID: old, Partitions: []int32{0}}})
	if len(got) != 1 || got[0].TopicID != old || got[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("v10 fetch of the old id: %+v, want UNKNOWN_TOPIC_ID", got)
	}
	if got := fetch(10, nil); len(got) != 0 {
		t.Errorf("v10 fetch of every offset: %+v, want none", got)
	}
	got = fetch(9, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}})
	if len(got) != 1 || got[0].Partitions[0].Offset != 7 {
		t.Errorf("v9 fetch by name: %+v, want offset 7", got)
	}
}

// TestFuzzTopicIDSeed checks that the v10 seed does what it says: the
// commit by id is there after the restart, under the topic's name.
func TestFuzzTopicIDSeed(t *testing.T) {
	h := fuzzRun(t, topicIDSeed())
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, "g"
	resp := do[*kmsg.OffsetFetchResponse](h, req)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "t" || resp.Topics[0].Partitions[0].Offset != 3 {
		t.Fatalf("the seed's commit is not there: %+v", resp.Topics)
	}
}
