package kafka

// IncrementalAlterConfigs, key 44 (KIP-339).
//
// Version notes:
//   - v0: resources with their config operations: SET, DELETE (back to
//     the default), APPEND and SUBTRACT (list configs only), and
//     ValidateOnly. v1: flexible.
//
// A resource's explicit configs change by the operations, applied by the
// global unit to the configs it has (so concurrent changes on two nodes
// both stay) and checked as Kafka checks them: INVALID_CONFIG with the
// reason for an unknown config, a bad value, APPEND or SUBTRACT on a
// config that is not a list. A topic's are checked as CreateTopics
// checks them, and the topic log acts at once on those it enforces. A
// broker's (this node's id, or "" for the cluster's defaults): the
// dynamic ones of dynamic_configs.go, durable and on every node; the
// others get Kafka's answer for a config that is not dynamic
// (INVALID_REQUEST). A group's (it need not exist): consumer.* and
// share.*, within the broker's bounds, applied at each member's next
// heartbeat. BROKER_LOGGER: this node's root logger's level, at once.
// Resources and configs named twice, and authorization: as AlterConfigs
// (33_alter_configs.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	changes := make([]configChange, len(req.Resources))
	for i, rr := range req.Resources {
		c := configChange{typ: rr.ResourceType, name: rr.ResourceName}
		for _, e := range rr.Configs {
			c.ops = append(c.ops, configOp{name: e.Name, value: e.Value, op: e.Op})
		}
		changes[i] = c
	}
	denied := s.alterConfigsDenied(hdr, changes)
	return func() kmsg.Response {
		codes := s.alterConfigs(s.scope(hdr), changes, denied, req.ValidateOnly)
		for i, rr := range req.Resources {
			r := kmsg.NewIncrementalAlterConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			r.ErrorCode, r.ErrorMessage = codes[i].code, codes[i].msg
			resp.Resources = append(resp.Resources, r)
		}
		return resp
	}
}
