package kafka_test

import (
	"fmt"
	"testing"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// markersReq is a WriteTxnMarkers of one commit marker for the given
// topics' partitions.
func markersReq(parts map[string][]int32, order ...string) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 4242, 0, true
	for _, topic := range order {
		m.Topics = append(m.Topics, kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: topic, Partitions: parts[topic]})
	}
	req.Markers = append(req.Markers, m)
	return req
}

// markerCodes flattens a WriteTxnMarkers answer: "topic/partition" → code.
func markerCodes(t *testing.T, resp *kmsg.WriteTxnMarkersResponse) map[string]int16 {
	t.Helper()
	out := map[string]int16{}
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != 4242 {
		t.Fatalf("markers answered %+v", resp.Markers)
	}
	for _, rt := range resp.Markers[0].Topics {
		for _, p := range rt.Partitions {
			out[fmt.Sprintf("%s/%d", rt.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

// TestWriteTxnMarkersLeaders: WriteTxnMarkers between nodes answers each
// partition for what the node holds: written (no open transaction of the
// producer: nothing to write, a retried marker), NOT_LEADER_OR_FOLLOWER
// for a partition another node leads (the sender looks again),
// UNKNOWN_TOPIC_OR_PARTITION for one that does not exist (a deleted
// topic: the sender drops it); a __consumer_offsets partition is a group
// shard, ended when served here, unknown past the shard count.
func TestWriteTxnMarkersLeaders(t *testing.T) {
	_, nodes := startCluster(t)
	n1 := nodes[0]
	if _, err := n1.log.CreateAssigned("mk", []int32{1, 2}, nil, false); err != nil {
		t.Fatal(err)
	}
	refreshAll(t, nodes)
	c := dial(t, n1.addr)
	for v := int16(0); v <= 2; v++ {
		req := markersReq(map[string][]int32{"mk": {0, 1}, "nope": {0}, "__consumer_offsets": {0, 9999}}, "mk", "nope", "__consumer_offsets")
		got := markerCodes(t, roundTrip[*kmsg.WriteTxnMarkersResponse](c, v, req))
		want := map[string]int16{
			"mk/0":                    0,
			"mk/1":                    kerr.NotLeaderForPartition.Code,
			"nope/0":                  kerr.UnknownTopicOrPartition.Code,
			"__consumer_offsets/0":    0,
			"__consumer_offsets/9999": kerr.UnknownTopicOrPartition.Code,
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("v%d %s: %v, want %v", v, k, kerr.ErrorForCode(got[k]), kerr.ErrorForCode(w))
			}
		}
	}
}

// TestWriteTxnMarkersAuthorization: with authorization on, markers need
// CLUSTER_ACTION on the cluster, as Kafka asks of brokers: refused, every
// partition is CLUSTER_AUTHORIZATION_FAILED and nothing is attempted; a
// super user (a node's own principal) is served.
func TestWriteTxnMarkersAuthorization(t *testing.T) {
	for _, tc := range []struct {
		name  string
		super []string
		want  int16
	}{
		{"refused", nil, kerr.ClusterAuthorizationFailed.Code},
		{"super user", []string{"User:ANONYMOUS"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := testkit.StartNode(t, node.Config{Authorizer: true, SuperUsers: tc.super})
			c := dial(t, n.KafkaAddr())
			req := markersReq(map[string][]int32{"__consumer_offsets": {0}}, "__consumer_offsets")
			got := markerCodes(t, roundTrip[*kmsg.WriteTxnMarkersResponse](c, 1, req))
			if got["__consumer_offsets/0"] != tc.want {
				t.Fatalf("%v, want %v", kerr.ErrorForCode(got["__consumer_offsets/0"]), kerr.ErrorForCode(tc.want))
			}
		})
	}
}
