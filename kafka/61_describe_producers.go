package kafka

// DescribeProducers, key 61 (KIP-664): a partition's active producers, as
// its leader knows them from the log: id, epoch, last sequence and the
// first offset of an open transaction (-1: none). Answered by the
// partition's leader: elsewhere NOT_LEADER_OR_FOLLOWER. Needs READ on
// the topic (Kafka's KafkaApis), else TOPIC_AUTHORIZATION_FAILED on each
// of its partitions, checked before the topic is looked up so that a
// refused principal learns nothing of which topics exist.
//
// Version notes: v0 only (flexible). LastTimestamp and CoordinatorEpoch
// are not kept: -1.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeProducers, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	sc := s.scope(hdr)
	for _, rt := range req.Topics {
		st := kmsg.DescribeProducersResponseTopic{Topic: rt.Topic}
		if !s.authorize(hdr, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic) {
			for _, i := range rt.Partitions {
				sp := kmsg.NewDescribeProducersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = i, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		t := sc.topic(rt.Topic)
		for _, i := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = i
			p, code := s.partitionOf(t, i, false)
			if code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, pi := range p.Producers() {
				sp.ActiveProducers = append(sp.ActiveProducers, kmsg.DescribeProducersResponseTopicPartitionActiveProducer{
					ProducerID: pi.ProducerID, ProducerEpoch: int32(pi.ProducerEpoch), LastSequence: pi.LastSequence,
					LastTimestamp: -1, CoordinatorEpoch: -1, CurrentTxnStartOffset: pi.TxnStartOffset,
				})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return done(resp)
}
