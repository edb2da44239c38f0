package kafka

// AlterConfigs, key 33.
//
// Version notes:
//   - v0: resources with their configs (a name and a nullable value) and
//     ValidateOnly. v1: no change. v2: flexible.
//
// A resource's configs become exactly those given (Kafka's legacy
// AlterConfigs: any config not named goes back to its default), checked
// as IncrementalAlterConfigs checks them (44_incremental_alter_configs.go)
// for a topic, a broker (this node's id, or "" for the cluster's
// defaults) or a group. BROKER_LOGGER is IncrementalAlterConfigs' only,
// as Kafka's: INVALID_REQUEST. Other resource types get INVALID_REQUEST,
// as do a resource named twice and a config named twice. With
// authorization on: ALTER_CONFIGS on the topic (else
// TOPIC_AUTHORIZATION_FAILED), on the group (else
// GROUP_AUTHORIZATION_FAILED), on the cluster for a broker (else
// CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AlterConfigs, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	changes := make([]configChange, len(req.Resources))
	for i, rr := range req.Resources {
		c := configChange{typ: rr.ResourceType, name: rr.ResourceName, replace: true}
		for _, e := range rr.Configs {
			c.ops = append(c.ops, configOp{name: e.Name, value: e.Value, op: kmsg.IncrementalAlterConfigOpSet})
		}
		changes[i] = c
	}
	denied := s.alterConfigsDenied(hdr, changes)
	return func() kmsg.Response {
		codes := s.alterConfigs(s.scope(hdr), changes, denied, req.ValidateOnly)
		for i, rr := range req.Resources {
			r := kmsg.NewAlterConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			r.ErrorCode, r.ErrorMessage = codes[i].code, codes[i].msg
			resp.Resources = append(resp.Resources, r)
		}
		return resp
	}
}
