package kafka_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initTwice makes a transactional id whose producer 0 epoch is fenced: it
// returns the producer id; epoch 0 is stale, epoch 1 current.
func initTwice(t *testing.T, c *rawClient, id string) int64 {
	t.Helper()
	var pid int64
	for range 2 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		resp := roundTrip[*kmsg.InitProducerIDResponse](c, 4, req)
		wantCode(t, "init "+id, resp.ErrorCode, nil)
		pid = resp.ProducerID
	}
	return pid
}

// fencedFor is the code a stale epoch gets at version v of an API that
// gained PRODUCER_FENCED at version since (KIP-588).
func fencedFor(v, since int16) *kerr.Error {
	if v < since {
		return kerr.InvalidProducerEpoch
	}
	return kerr.ProducerFenced
}

// txnSweepCases are TestVersionSweep's cases for the transactional APIs:
// at every version, a producer with a stale epoch is fenced with the
// version's code, and the admin APIs answer.
func txnSweepCases(topic string, topicID [16]byte) map[int16]sweepCase {
	name := func(key kmsg.Key, v int16) string { return fmt.Sprintf("sweep-%s-v%d", key.Name(), v) }
	return map[int16]sweepCase{
		kmsg.AddPartitionsToTxn.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			id := name(kmsg.AddPartitionsToTxn, v)
			pid := initTwice(t, c, id)
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, 0
			req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
			req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: id, ProducerID: pid, ProducerEpoch: 1,
				Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{0}}}}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.AddPartitionsToTxnResponse)
				if v >= 4 {
					// The broker form, at the current epoch.
					if len(resp.Transactions) != 1 || resp.Transactions[0].Topics[0].Partitions[0].ErrorCode != 0 {
						t.Errorf("v%d: %+v", v, resp)
					}
					return
				}
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("v%d: %+v", v, resp)
				}
				wantCode(t, "stale epoch", resp.Topics[0].Partitions[0].ErrorCode, fencedFor(v, 2))
			}
		},
		kmsg.WriteTxnMarkers.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			// A producer with no open transaction in the partition: a
			// marker sent again, which writes nothing.
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			req.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 777, Committed: true,
				Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.WriteTxnMarkersResponse)
				if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 1 || resp.Markers[0].Topics[0].Partitions[0].ErrorCode != 0 {
					t.Errorf("v%d: %+v", v, resp)
				}
			}
		},
		kmsg.AddOffsetsToTxn.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			id := name(kmsg.AddOffsetsToTxn, v)
			pid := initTwice(t, c, id)
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, 0, "g"
			return req, func(r kmsg.Response) {
				wantCode(t, "stale epoch", r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode, fencedFor(v, 2))
			}
		},
		kmsg.EndTxn.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			id := name(kmsg.EndTxn, v)
			pid := initTwice(t, c, id)
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, 0, true
			return req, func(r kmsg.Response) {
				wantCode(t, "stale epoch", r.(*kmsg.EndTxnResponse).ErrorCode, fencedFor(v, 2))
			}
		},
		kmsg.TxnOffsetCommit.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.Generation = "tx", name(kmsg.TxnOffsetCommit, v), 7, -1
			req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, TopicID: topicID, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3, LeaderEpoch: -1}}}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.TxnOffsetCommitResponse)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("v%d: %+v", v, resp)
				}
				wantCode(t, "txn offset commit", resp.Topics[0].Partitions[0].ErrorCode, nil)
			}
		},
		kmsg.DescribeTransactions.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			id := name(kmsg.DescribeTransactions, v)
			pid := initTwice(t, c, id)
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{id, "nope"}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeTransactionsResponse)
				if len(resp.TransactionStates) != 2 {
					t.Fatalf("%+v", resp)
				}
				if s := resp.TransactionStates[0]; s.ErrorCode != 0 || s.State != "Empty" || s.ProducerID != pid || s.ProducerEpoch != 1 || s.TimeoutMillis != 60000 {
					t.Errorf("described %+v", s)
				}
				wantCode(t, "unknown id", resp.TransactionStates[1].ErrorCode, kerr.TransactionalIDNotFound)
			}
		},
		kmsg.ListTransactions.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			id := name(kmsg.ListTransactions, v)
			pid := initTwice(t, c, id)
			req := kmsg.NewPtrListTransactionsRequest()
			req.StateFilters, req.ProducerIDFilters = []string{"Empty", "Bogus"}, []int64{pid}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.ListTransactionsResponse)
				if resp.ErrorCode != 0 || len(resp.UnknownStateFilters) != 1 || len(resp.TransactionStates) != 1 || resp.TransactionStates[0].TransactionalID != id {
					t.Errorf("%+v", resp)
				}
			}
		},
		kmsg.DescribeProducers.Int16(): func(t *testing.T, c *rawClient, v int16) (kmsg.Request, func(kmsg.Response)) {
			req := kmsg.NewPtrDescribeProducersRequest()
			req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: topic, Partitions: []int32{0, 99}}}
			return req, func(r kmsg.Response) {
				resp := r.(*kmsg.DescribeProducersResponse)
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
					t.Fatalf("%+v", resp)
				}
				wantCode(t, "partition 0", resp.Topics[0].Partitions[0].ErrorCode, nil)
				wantCode(t, "partition 99", resp.Topics[0].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
			}
		},
	}
}
