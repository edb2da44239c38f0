package kafka

// The group APIs (OffsetCommit, JoinGroup, ConsumerGroupHeartbeat, ...)
// are registered here from the coordinator's table (coordinator/groups,
// one file per API key with its version notes): the wire server
// advertises and dispatches them like any other API, and hands every
// request to the coordinator, which checks it against the topic catalog,
// routes it to its shards and answers once the records it wrote are
// durable. The connection's writer waits for that, so later requests on
// the connection keep being read and started meanwhile.

import (
	"context"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	for _, api := range groups.APIs() {
		register(api.Key, api.MinVersion, api.MaxVersion, groupHandler)
	}
}

// groupHandler hands a group request, with its context, to the
// coordinator, for the organisation of the request's connection: the
// coordinator keys every group and offset by it, so that two
// organisations' groups of one name are two groups.
func groupHandler(ctx context.Context, s *Server, hdr *reqHeader, req kmsg.Request) func() kmsg.Response {
	creq := coordinator.Request{Msg: req, Tenant: hdr.tenant(), ClientID: hdr.clientID, ClientHost: hdr.host}
	switch r := req.(type) {
	case *kmsg.ConsumerGroupHeartbeatRequest:
		creq.GroupConfig = s.groupConfigFor(creq.Tenant, r.Group)
	case *kmsg.ShareGroupHeartbeatRequest:
		creq.GroupConfig = s.groupConfigFor(creq.Tenant, r.GroupID)
	}
	if r, ok := req.(*kmsg.TxnOffsetCommitRequest); ok {
		if resp := s.txnOffsetCommitAdd(ctx, hdr, r); resp != nil {
			return done(resp) // KIP-890 part 2: the group is not in the transaction
		}
	}
	if s.cfg.Authorizer != nil {
		return s.authorizedGroupRequest(ctx, hdr, creq)
	}
	return s.groups.Handle(ctx, creq)
}
