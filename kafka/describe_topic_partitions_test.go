package kafka_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeTopicPartitions sends DescribeTopicPartitions v0 for the named
// topics (none: every topic) with the partition limit and cursor.
func describeTopicPartitions(c *rawClient, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, names ...string) *kmsg.DescribeTopicPartitionsResponse {
	c.t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, name := range names {
		req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
	}
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	return roundTrip[*kmsg.DescribeTopicPartitionsResponse](c, 0, req)
}

func cursorAt(topic string, partition int32) *kmsg.DescribeTopicPartitionsRequestCursor {
	return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: partition}
}

// page renders a response in one line: "a[0 1] nope!UNKNOWN_TOPIC_OR_PARTITION
// next=a/2", the topics in order with their partitions or error.
func page(resp *kmsg.DescribeTopicPartitionsResponse) string {
	var parts []string
	for _, st := range resp.Topics {
		name := "<null>"
		if st.Topic != nil {
			name = *st.Topic
		}
		if st.ErrorCode != 0 {
			parts = append(parts, name+"!"+kerr.ErrorForCode(st.ErrorCode).(*kerr.Error).Message)
			continue
		}
		var ps []string
		for _, sp := range st.Partitions {
			ps = append(ps, fmt.Sprint(sp.Partition))
		}
		parts = append(parts, name+"["+strings.Join(ps, " ")+"]")
	}
	if nc := resp.NextCursor; nc != nil {
		parts = append(parts, fmt.Sprintf("next=%s/%d", nc.Topic, nc.Partition))
	}
	return strings.Join(parts, " ")
}

// TestDescribeTopicPartitions: every topic or those named, each once and
// by name, described as Metadata describes them, with Kafka's paging: the
// partition limit spent across topics, NextCursor at the first partition
// left out (or the next topic when a topic ended the page), the cursor
// resuming there; unknown and illegal names; a refused cursor.
func TestDescribeTopicPartitions(t *testing.T) {
	groups := coordinator.Config{InitialRebalanceDelay: -1, Shards: 2}
	c := dial(t, testkit.StartNode(t, node.Config{Groups: groups}).KafkaAddr())
	ids := map[string][16]byte{"c": createTopic(c, "c", 2, nil), "a": createTopic(c, "a", 3, nil), "b": createTopic(c, "b", 1, nil)}

	// Every topic, __consumer_offsets included, fully described.
	resp := describeTopicPartitions(c, 100, nil)
	if got, want := page(resp), "__consumer_offsets[0 1] a[0 1 2] b[0] c[0 1]"; got != want {
		t.Fatalf("every topic: %s, want %s", got, want)
	}
	for _, st := range resp.Topics {
		name := *st.Topic
		if internal := name == "__consumer_offsets"; st.IsInternal != internal {
			t.Errorf("%s: internal %v", name, st.IsInternal)
		}
		if id, ok := ids[name]; ok && st.TopicID != id || st.TopicID == [16]byte{} {
			t.Errorf("%s: id %x, want %x", name, st.TopicID, ids[name])
		}
		if st.AuthorizedOperations == -2147483648 || st.AuthorizedOperations&(1<<kmsg.ACLOperationDescribe) == 0 {
			t.Errorf("%s: authorized operations %b", name, st.AuthorizedOperations)
		}
		for _, sp := range st.Partitions {
			if sp.ErrorCode != 0 || sp.LeaderID != 0 || sp.LeaderEpoch != 0 || !slices.Equal(sp.Replicas, []int32{0}) ||
				!slices.Equal(sp.ISR, []int32{0}) || len(sp.OfflineReplicas) != 0 {
				t.Errorf("%s/%d: %+v", name, sp.Partition, sp)
			}
			// Empty, not null: the Java admin client reads them as
			// lists without a check.
			if sp.EligibleLeaderReplicas == nil || len(sp.EligibleLeaderReplicas) != 0 || sp.LastKnownELR == nil || len(sp.LastKnownELR) != 0 {
				t.Errorf("%s/%d: ELR %#v, last known ELR %#v, want empty lists", name, sp.Partition, sp.EligibleLeaderReplicas, sp.LastKnownELR)
			}
		}
	}

	for _, tc := range []struct {
		what   string
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		names  []string
		want   string
	}{
		{"named, sorted, each once", 100, nil, []string{"c", "a", "c"}, "a[0 1 2] c[0 1]"},
		{"unknown and illegal names", 100, nil, []string{"nope", "b", "bad/name", ".."},
			"..!INVALID_TOPIC_EXCEPTION b[0] bad/name!INVALID_TOPIC_EXCEPTION nope!UNKNOWN_TOPIC_OR_PARTITION"},
		{"internal topic by name", 100, nil, []string{"__consumer_offsets"}, "__consumer_offsets[0 1]"},

		// Paging through every topic two partitions at a time.
		{"page 1", 2, nil, nil, "__consumer_offsets[0 1] next=a/0"},
		{"page 2", 2, cursorAt("a", 0), nil, "a[0 1] next=a/2"},
		{"page 3", 2, cursorAt("a", 2), nil, "a[2] b[0] next=c/0"},
		{"page 4", 2, cursorAt("c", 0), nil, "c[0 1]"},
		// The same through named topics, three at a time.
		{"named page 1", 3, nil, []string{"a", "b", "c"}, "a[0 1 2] next=b/0"},
		{"named page 2", 3, cursorAt("b", 0), []string{"a", "b", "c"}, "b[0] c[0 1]"},
		// The page may end at an unknown topic: it is next.
		{"ends before an unknown topic", 3, nil, []string{"a", "aa"}, "a[0 1 2] next=aa/0"},
		{"an unknown topic takes no partition", 1, nil, []string{"aa", "b", "c"}, "aa!UNKNOWN_TOPIC_OR_PARTITION b[0] next=c/0"},

		{"a limit under 1 is 1", 0, nil, []string{"a"}, "a[0] next=a/1"},
		{"a negative limit is 1", -5, cursorAt("a", 1), []string{"a"}, "a[1] next=a/2"},
		{"a cursor past the topic's partitions", 100, cursorAt("a", 7), []string{"a", "b"}, "a[] b[0]"},
		{"a cursor at a topic that does not exist", 100, cursorAt("ab", 1), nil, "b[0] c[0 1]"},
		{"named topics before the cursor are left out", 100, cursorAt("b", 0), []string{"a", "b", "c"}, "b[0] c[0 1]"},

		// Refused whole, each named topic as named.
		{"a cursor at a topic not named", 100, cursorAt("b", 0), []string{"c", "a", "c"},
			"c!INVALID_REQUEST a!INVALID_REQUEST c!INVALID_REQUEST"},
		{"a negative cursor partition", 100, cursorAt("a", -1), []string{"a"}, "a!INVALID_REQUEST"},
		{"a negative cursor partition, every topic", 100, cursorAt("a", -1), nil, ""},
	} {
		if got := page(describeTopicPartitions(c, tc.limit, tc.cursor, tc.names...)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.what, got, tc.want)
		}
	}

	// Unknown topics are told apart from described ones: no id, but
	// Kafka's authorized operations; IsInternal by name.
	st := describeTopicPartitions(c, 100, nil, "nope").Topics[0]
	if st.TopicID != [16]byte{} || st.IsInternal || len(st.Partitions) != 0 || st.AuthorizedOperations == -2147483648 {
		t.Errorf("unknown topic: %+v", st)
	}
}

// TestDescribeTopicPartitionsAuthorization: with authorization on, as
// Kafka: every topic is every topic the principal may DESCRIBE; a named
// topic it may not is TOPIC_AUTHORIZATION_FAILED whether it exists or
// not, with no id or partitions, after the described ones; the described
// ones carry the principal's authorized operations.
func TestDescribeTopicPartitionsAuthorization(t *testing.T) {
	groups := coordinator.Config{InitialRebalanceDelay: -1, Shards: 1}
	n := testkit.StartNode(t, node.Config{Groups: groups, Authorizer: true, AllowEveryoneIfNoACLFound: true})
	c := dial(t, n.KafkaAddr())
	createTopic(c, "open", 2, nil)
	createTopic(c, "secret", 1, nil)
	acls := kmsg.NewPtrCreateACLsRequest()
	for _, name := range []string{"secret", "ghost"} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:ANONYMOUS", "*", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeDeny
		acls.Creations = append(acls.Creations, cr)
	}
	for _, r := range roundTrip[*kmsg.CreateACLsResponse](c, 3, acls).Results {
		wantCode(t, "create acl", r.ErrorCode, nil)
	}

	if got, want := page(describeTopicPartitions(c, 100, nil)), "__consumer_offsets[0] open[0 1]"; got != want {
		t.Errorf("every topic: %s, want %s", got, want)
	}
	resp := describeTopicPartitions(c, 1, nil, "secret", "open", "ghost", "missing")
	if got, want := page(resp), "missing!UNKNOWN_TOPIC_OR_PARTITION open[0] ghost!TOPIC_AUTHORIZATION_FAILED secret!TOPIC_AUTHORIZATION_FAILED next=open/1"; got != want {
		t.Errorf("named: %s, want %s", got, want)
	}
	for _, st := range resp.Topics {
		switch *st.Topic {
		case "open", "missing":
			// The principal's operations, DESCRIBE among them.
			if st.AuthorizedOperations == -2147483648 || st.AuthorizedOperations&(1<<kmsg.ACLOperationDescribe) == 0 {
				t.Errorf("open: authorized operations %b", st.AuthorizedOperations)
			}
		default:
			if st.TopicID != [16]byte{} || len(st.Partitions) != 0 || st.IsInternal || st.AuthorizedOperations != -2147483648 {
				t.Errorf("%s refused: %+v", *st.Topic, st)
			}
		}
	}
	if got, want := page(describeTopicPartitions(c, 100, cursorAt("open", 1), "secret", "open", "missing")),
		"open[1] secret!TOPIC_AUTHORIZATION_FAILED"; got != want {
		t.Errorf("named, second page: %s, want %s", got, want)
	}
}

// TestDescribeTopicPartitionsOffline: in cluster mode a partition whose
// leader is down is described as Metadata describes it, leader -1 and its
// replica offline, but without LEADER_NOT_AVAILABLE: Kafka's
// KRaftMetadataCache sets no partition error here. A __consumer_offsets
// partition whose shard has no owner has no leader and no replica.
func TestDescribeTopicPartitionsOffline(t *testing.T) {
	state, nodes := startCluster(t)
	c := dial(t, nodes[0].addr)
	createTopic(c, "t", 2, nil)
	refreshAll(t, nodes)
	state.setDown(2, true)
	resp := describeTopicPartitions(c, 100, nil, "t", "__consumer_offsets")
	if len(resp.Topics) != 2 {
		t.Fatalf("topics: %s", page(resp))
	}
	offsets, topic := resp.Topics[0], resp.Topics[1]
	if ps := topic.Partitions; len(ps) != 2 {
		t.Fatalf("t: %+v", ps)
	}
	up, down := topic.Partitions[0], topic.Partitions[1]
	if up.ErrorCode != 0 || up.LeaderID != 1 || !slices.Equal(up.Replicas, []int32{1}) || len(up.OfflineReplicas) != 0 {
		t.Errorf("partition on the live node: %+v", up)
	}
	if down.ErrorCode != 0 || down.LeaderID != -1 || !slices.Equal(down.Replicas, []int32{2}) ||
		!slices.Equal(down.ISR, []int32{2}) || !slices.Equal(down.OfflineReplicas, []int32{2}) {
		t.Errorf("partition on the node that is down: %+v", down)
	}
	// startCluster: shard p is owned by node p%3, none when 0; node 2 is
	// down.
	for _, sp := range offsets.Partitions {
		leader := sp.Partition % 3
		if leader != 1 {
			leader = -1
		}
		if sp.ErrorCode != 0 || sp.LeaderID != leader || leader == -1 && len(sp.Replicas) != 0 {
			t.Errorf("__consumer_offsets/%d: %+v, want leader %d", sp.Partition, sp, leader)
		}
	}
}
