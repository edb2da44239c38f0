package kafka_test

import (
	"encoding/binary"
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
			// v5+ adds the group to the producer's transaction (KIP-890
			// part 2): the producer must be the id's.
			id := name(kmsg.TxnOffsetCommit, v)
			pid := initTwice(t, c, id)
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, id, pid, 1, -1
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

// transactional is b encoded as a transactional batch.
func transactional(b batch) []byte {
	out := b.encode()
	binary.BigEndian.PutUint16(out[21:], binary.BigEndian.Uint16(out[21:])|0x10)
	fixCRC(out)
	return out
}

// TestTxnTV2ImplicitAdds: with transaction version 2 (the default), a
// transactional produce of version 12+ adds its partition to the
// transaction (version 11 is only verified: INVALID_TXN_STATE for a
// partition never added), and a TxnOffsetCommit of version 5+ its group
// (version 4 does not: its offsets stay pending after the commit, as in
// Kafka); EndTxn v5 commits both with an epoch bump.
func TestTxnTV2ImplicitAdds(t *testing.T) {
	c := dial(t, startNode(t, false))
	topicID := createTopic(c, "tv2p", 2, nil)
	const id = "tv2p-id"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	ir := roundTrip[*kmsg.InitProducerIDResponse](c, 4, init)
	wantCode(t, "init", ir.ErrorCode, nil)
	pid, epoch := ir.ProducerID, ir.ProducerEpoch

	produce := func(v int16, seq int32) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(id), -1, 5000
		rt := kmsg.ProduceRequestTopic{Topic: "tv2p", TopicID: topicID}
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: 0, Records: transactional(idempotent(pid, epoch, seq, 1))})
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.ProduceResponse](c, v, req)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "produce v11, partition not added", produce(11, 0), kerr.InvalidTxnState)
	wantCode(t, "produce v12", produce(12, 0), nil)
	wantCode(t, "produce v13", produce(13, 1), nil)

	commit := func(v int16, group string) {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, group, pid, epoch, -1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "tv2p", TopicID: topicID, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2, LeaderEpoch: -1}}}}
		resp := roundTrip[*kmsg.TxnOffsetCommitResponse](c, v, req)
		wantCode(t, fmt.Sprintf("txn offset commit v%d", v), resp.Topics[0].Partitions[0].ErrorCode, nil)
	}
	commit(4, "tv2-g4")
	commit(5, "tv2-g5")

	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{id}
	d := roundTrip[*kmsg.DescribeTransactionsResponse](c, 0, dreq).TransactionStates[0]
	if d.State != "Ongoing" || len(d.Topics) != 1 || d.Topics[0].Topic != "tv2p" || len(d.Topics[0].Partitions) != 1 {
		t.Fatalf("described %+v, want Ongoing with tv2p/0", d)
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	er := roundTrip[*kmsg.EndTxnResponse](c, 5, end)
	wantCode(t, "end", er.ErrorCode, nil)
	if er.ProducerID != pid || er.ProducerEpoch != epoch+1 {
		t.Fatalf("end: producer %d/%d, want %d/%d", er.ProducerID, er.ProducerEpoch, pid, epoch+1)
	}

	fetch := func(group string) int64 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "tv2p", Partitions: []int32{0}}}
		resp := roundTrip[*kmsg.OffsetFetchResponse](c, 7, req)
		wantCode(t, "offset fetch "+group, resp.ErrorCode, nil)
		return resp.Topics[0].Partitions[0].Offset
	}
	if got := fetch("tv2-g5"); got != 2 {
		t.Errorf("tv2-g5 (TxnOffsetCommit v5) offset %d after the commit, want 2", got)
	}
	if got := fetch("tv2-g4"); got != -1 {
		t.Errorf("tv2-g4 (TxnOffsetCommit v4, group never added) offset %d, want -1 (pending)", got)
	}
}
