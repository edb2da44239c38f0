package kafka

// DescribeTransactions, key 65 (KIP-664): each transactional id's state,
// producer, timeout, start and partitions, from its coordinator. An id
// whose shard this node does not serve is NOT_COORDINATOR (admin clients
// ask the id's coordinator, found with FindCoordinator); one it does not
// know is TRANSACTIONAL_ID_NOT_FOUND. Each id needs DESCRIBE on it (else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and the partitions of a
// described transaction are only those of topics the principal may
// DESCRIBE, as Kafka's KafkaApis answers.
//
// Version notes: v0 only (flexible).

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeTransactions, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	who, sc := authzRequest(hdr), s.scope(hdr)
	return func() kmsg.Response {
		for _, id := range req.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
			if !s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
				st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				resp.TransactionStates = append(resp.TransactionStates, st)
				continue
			}
			if s.txn == nil {
				st.ErrorCode = kerr.TransactionalIDNotFound.Code
				resp.TransactionStates = append(resp.TransactionStates, st)
				continue
			}
			out, code := s.txn.Do(ctx, hdr.tenant(), id, txn.DescribeCmd{Tenant: hdr.tenant(), TxnIDs: []string{id}})
			ds, _ := out.([]txn.Description)
			if code != 0 || len(ds) != 1 {
				st.ErrorCode = code
				if st.ErrorCode == 0 {
					st.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
				resp.TransactionStates = append(resp.TransactionStates, st)
				continue
			}
			d := ds[0]
			st.ErrorCode, st.State, st.TimeoutMillis, st.StartTimestamp = d.Code, d.State, d.TimeoutMs, d.StartMs
			st.ProducerID, st.ProducerEpoch = d.ProducerID, d.ProducerEpoch
			for _, p := range d.Partitions {
				name, ok := sc.out(p.Topic)
				if !ok || !s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name) {
					continue
				}
				if n := len(st.Topics); n > 0 && st.Topics[n-1].Topic == name {
					st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, p.Partition)
					continue
				}
				st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: name, Partitions: []int32{p.Partition}})
			}
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp
	}
}
