package kafka

// ListTransactions, key 66 (KIP-664): the transactional ids of the shards
// this node serves, filtered by state and producer id. Admin clients ask
// every broker and join the answers. Only the ids the principal may
// DESCRIBE are listed (Kafka's KafkaApis filters the same way, without an
// error).
//
// Version notes:
//   - v0: StateFilters, ProducerIDFilters; an unknown state is listed in
//     UnknownStateFilters.
//   - v1 (KIP-994): DurationFilterMillis: transactions running longer.
//   - v2 (KIP-1152): TransactionalIDPattern, a regular expression (RE2
//     here; Kafka's is Java's) the id must match; a bad one is
//     INVALID_REGULAR_EXPRESSION.

import (
	"context"
	"regexp"
	"slices"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListTransactions, 0, 2, handleListTransactions) }

var txnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func handleListTransactions(ctx context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var re *regexp.Regexp
	if hdr.version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if re, err = regexp.Compile(*req.TransactionalIDPattern); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return done(resp)
		}
	}
	var states []string
	for _, st := range req.StateFilters {
		if !slices.Contains(txnStates, st) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, st)
			continue
		}
		states = append(states, st)
	}
	if len(req.StateFilters) > 0 && len(states) == 0 || s.txn == nil {
		return done(resp)
	}
	who := authzRequest(hdr)
	return func() kmsg.Response {
		cmd := txn.ListCmd{Tenant: hdr.tenant(), States: states, ProducerIDs: req.ProducerIDFilters}
		if hdr.version >= 1 {
			cmd.MinDurationMs = req.DurationFilterMillis
		}
		for _, l := range s.txn.List(ctx, cmd) {
			if re != nil && !re.MatchString(l.TxnID) ||
				!s.authorizeAs(who, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, l.TxnID) {
				continue
			}
			resp.TransactionStates = append(resp.TransactionStates, kmsg.ListTransactionsResponseTransactionState{TransactionalID: l.TxnID, ProducerID: l.ProducerID, TransactionState: l.State})
		}
		return resp
	}
}
