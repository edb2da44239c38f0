package kafka

// WriteTxnMarkers, key 27: a transaction coordinator tells a partition's
// leader that a producer's transaction ended (Kafka's
// TransactionMarkerChannelManager, one request per broker). Between
// Cohort's nodes: the node serving a transactional id's shard sends each
// other node the markers of the partitions it leads, and, for the
// transaction's groups, of the __consumer_offsets partitions (= group
// shards) it coordinates, whose handler ends the producer's pending
// offsets in every group of the shard.
//
// Version notes:
//   - v0: markers (producer id and epoch, commit, topics' partitions,
//     coordinator epoch).
//   - v1: flexible.
//   - v2 (KIP-890 part 2): TransactionVersion, which changes nothing
//     here.
//
// As Kafka's KafkaApis.handleWriteTxnMarkersRequest: CLUSTER_ACTION on
// the cluster (the brokers' own principal), else every partition
// CLUSTER_AUTHORIZATION_FAILED; a partition this node does not lead is
// NOT_LEADER_OR_FOLLOWER, one unknown UNKNOWN_TOPIC_OR_PARTITION, one
// holding a newer epoch's marker INVALID_PRODUCER_EPOCH; a
// __consumer_offsets partition whose shard is not served here is
// NOT_COORDINATOR. The answer waits until every marker is fsynced and
// every group shard's write is durable. The coordinator epoch is not
// checked: a coordinator that lost its shard can no longer complete the
// transaction (its writes are fenced), and a marker written twice is
// harmless (topics.Partition.WriteMarker writes nothing for a producer
// with no open transaction).

import (
	"context"
	"errors"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/topics"
	"github.com/cohort-dev/cohort/txncoord"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.WriteTxnMarkers, 0, 2, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	if !s.authorizeCluster(hdr, kmsg.ACLOperationClusterAction) {
		for _, m := range req.Markers {
			resp.Markers = append(resp.Markers, markerAnswer(m, func(string, int32) int16 { return kerr.ClusterAuthorizationFailed.Code }))
		}
		return done(resp)
	}
	sc := s.scope(hdr)
	return func() kmsg.Response {
		for _, m := range req.Markers {
			resp.Markers = append(resp.Markers, s.writeMarker(ctx, sc, m))
		}
		return resp
	}
}

// writeMarker writes one marker and answers each of its partitions.
//
// The nodes send topic log names, organisations' topics included, from
// the default organisation (their own principals). A connection of
// another organisation (a client given CLUSTER_ACTION, or any client with
// authorization off) reaches only its own organisation's topics, by the
// names its clients know, and no group shard.
func (s *Server) writeMarker(ctx context.Context, sc scope, m kmsg.WriteTxnMarkersRequestMarker) kmsg.WriteTxnMarkersResponseMarker {
	mk := txncoord.Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Committed}
	type tp struct {
		topic string
		p     int32
	}
	codes := map[tp]int16{}
	asked := map[string]string{} // log name → the name asked for
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			switch {
			case sc.tenant != "" && (t.Topic == offsetstopic.Name || !topics.ValidTopicName(t.Topic)):
				codes[tp{t.Topic, p}] = kerr.UnknownTopicOrPartition.Code
			case t.Topic == offsetstopic.Name:
				mk.GroupShards = append(mk.GroupShards, int(p))
			default:
				name := t.Topic
				if sc.tenant != "" {
					name = sc.in(t.Topic)
				}
				asked[name] = t.Topic
				mk.Partitions = append(mk.Partitions, txn.TP{Topic: name, Partition: p})
			}
		}
	}
	for _, shard := range mk.GroupShards {
		if shard < 0 || shard >= s.groups.Shards() {
			codes[tp{offsetstopic.Name, int32(shard)}] = kerr.UnknownTopicOrPartition.Code
		}
	}
	partErrs, shardErrs := txncoord.WriteLocal(ctx, s.topics, s.groups, mk)
	for i, err := range partErrs {
		codes[tp{asked[mk.Partitions[i].Topic], mk.Partitions[i].Partition}] = markerCode(err)
	}
	for i, err := range shardErrs {
		k := tp{offsetstopic.Name, int32(mk.GroupShards[i])}
		if _, ok := codes[k]; !ok {
			codes[k] = markerCode(err)
		}
	}
	return markerAnswer(m, func(topic string, p int32) int16 { return codes[tp{topic, p}] })
}

// markerCode is the answer for one partition's outcome of WriteLocal.
func markerCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, txncoord.ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, txncoord.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, topics.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, coordinator.ErrNotServed):
		return kerr.NotCoordinator.Code
	default:
		return kerr.KafkaStorageError.Code
	}
}

// markerAnswer answers a marker's partitions with code(topic, partition).
func markerAnswer(m kmsg.WriteTxnMarkersRequestMarker, code func(string, int32) int16) kmsg.WriteTxnMarkersResponseMarker {
	rm := kmsg.NewWriteTxnMarkersResponseMarker()
	rm.ProducerID = m.ProducerID
	for _, t := range m.Topics {
		rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
			rp.Partition, rp.ErrorCode = p, code(t.Topic, p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		rm.Topics = append(rm.Topics, rt)
	}
	return rm
}
