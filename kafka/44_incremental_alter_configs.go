package kafka

// IncrementalAlterConfigs, key 44 (KIP-339).
//
// Version notes:
//   - v0: resources with their config operations: SET, DELETE (back to
//     the default), APPEND and SUBTRACT (list configs only), and
//     ValidateOnly. v1: flexible.
//
// A topic's explicit configs change by the operations, checked as
// CreateTopics checks them (INVALID_CONFIG with the reason; APPEND or
// SUBTRACT on a config that is not a list too); the topic log acts at
// once on those it enforces. Brokers, other resource types, resources and
// configs named twice, and authorization: as AlterConfigs
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
