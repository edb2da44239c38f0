package kafka

// DescribeAcls, key 29.
//
// Version notes:
//   - v0: a filter of resource type, name, principal, host, operation
//     and permission; LITERAL patterns only.
//   - v1 (KIP-290): the filter's pattern type (ANY, MATCH, LITERAL,
//     PREFIXED) and each resource's.
//   - v2: flexible. v3 (KIP-290 follow-up): the USER resource type; no
//     change of shape.
//
// As Kafka: without an authorizer SECURITY_DISABLED; the principal needs
// DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); a filter with
// an UNKNOWN element is INVALID_REQUEST. The ACLs come grouped by
// resource pattern.

import (
	"context"

	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeACLs, 0, 3, handleDescribeAcls)
}

func handleDescribeAcls(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	// Within the caller's organisation: another's ACLs are not there.
	f := security.Filter{
		Tenant:       hdr.tenant(),
		ResourceType: req.ResourceType, Name: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType,
	}
	if req.Version == 0 {
		f.PatternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if code, msg := s.aclAPIRefused(hdr, kmsg.ACLOperationDescribe); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return done(resp)
	}
	switch {
	case f.Unknown():
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, errPtr("The filter has UNKNOWN elements")
		return done(resp)
	}
	acls := s.cfg.Authorizer.ACLs(f)
	security.SortACLs(acls)
	var last *kmsg.DescribeACLsResponseResource
	for _, acl := range acls {
		if last == nil || !samePattern(last, acl) {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName = kmsg.ACLResourceType(acl.ResourceType), acl.Name
			r.ResourcePatternType = kmsg.ACLResourcePatternType(acl.PatternType)
			resp.Resources = append(resp.Resources, r)
			last = &resp.Resources[len(resp.Resources)-1]
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = acl.Principal, acl.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(acl.Operation), kmsg.ACLPermissionType(acl.Permission)
		last.ACLs = append(last.ACLs, e)
	}
	return done(resp)
}

func samePattern(r *kmsg.DescribeACLsResponseResource, acl record.ACL) bool {
	return int8(r.ResourceType) == acl.ResourceType && r.ResourceName == acl.Name && int8(r.ResourcePatternType) == acl.PatternType
}
