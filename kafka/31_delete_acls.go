package kafka

// DeleteAcls, key 31.
//
// Version notes:
//   - v0: filters as DescribeAcls v0's; LITERAL patterns.
//   - v1 (KIP-290): the filter's pattern type (ANY, MATCH, LITERAL,
//     PREFIXED).
//   - v2: flexible. v3: the USER resource type; no change of shape.
//
// As Kafka: without an authorizer SECURITY_DISABLED; the principal needs
// ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every filter); a
// filter with an UNKNOWN element is INVALID_REQUEST. Every ACL any valid
// filter selects is deleted in one durable batch, and each filter's
// result lists the ACLs it selected.

import (
	"context"

	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DeleteACLs, 0, 3, handleDeleteAcls)
}

func handleDeleteAcls(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	fail := func(code int16, msg *string) func() kmsg.Response {
		for i := range resp.Results {
			resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		return done(resp)
	}
	if code, msg := s.aclAPIRefused(hdr, kmsg.ACLOperationAlter); code != 0 {
		return fail(code, msg)
	}
	var filters []security.Filter
	var at []int
	for i, rf := range req.Filters {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
		// Within the caller's organisation only.
		f := security.Filter{
			Tenant:       hdr.tenant(),
			ResourceType: rf.ResourceType, Name: rf.ResourceName, PatternType: rf.ResourcePatternType,
			Principal: rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType,
		}
		if req.Version == 0 {
			f.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		if f.Unknown() {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, errPtr("The filter has UNKNOWN elements")
			continue
		}
		filters, at = append(filters, f), append(at, i)
	}
	if len(filters) == 0 {
		return done(resp)
	}
	deleted, err := s.cfg.Authorizer.DeleteACLs(filters)
	if err != nil {
		s.logger.Error("deleting ACLs", "err", err)
		for _, i := range at {
			resp.Results[i].ErrorCode = kerr.UnknownServerError.Code
		}
		return done(resp)
	}
	for j, i := range at {
		for _, acl := range deleted[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(acl.ResourceType), acl.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(acl.PatternType)
			m.Principal, m.Host = acl.Principal, acl.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(acl.Operation), kmsg.ACLPermissionType(acl.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
	}
	return done(resp)
}
