package kafka

// CreateAcls, key 30.
//
// Version notes:
//   - v0: each creation a resource type and name, a principal, a host,
//     an operation and a permission; LITERAL patterns.
//   - v1 (KIP-290): the pattern type (LITERAL or PREFIXED).
//   - v2: flexible. v3: the USER resource type; no change of shape.
//
// As Kafka: without an authorizer SECURITY_DISABLED; the principal needs
// ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every
// creation); an invalid binding (security.ValidateACL) is
// INVALID_REQUEST. The valid ones are written in one durable batch
// before the answer; creating an existing ACL succeeds and changes
// nothing.

import (
	"context"

	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.CreateACLs, 0, 3, handleCreateAcls)
}

func handleCreateAcls(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	fail := func(code int16, msg *string) func() kmsg.Response {
		for i := range resp.Results {
			resp.Results[i] = kmsg.NewCreateACLsResponseResult()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
		return done(resp)
	}
	if code, msg := s.aclAPIRefused(hdr, kmsg.ACLOperationAlter); code != 0 {
		return fail(code, msg)
	}
	var valid []record.ACL
	var at []int
	for i, c := range req.Creations {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		acl := record.ACL{
			ResourceType: int8(c.ResourceType), PatternType: int8(c.ResourcePatternType), Name: c.ResourceName,
			Principal: c.Principal, Host: c.Host, Operation: int8(c.Operation), Permission: int8(c.PermissionType),
			// The caller's organisation's: it applies to its
			// principals only, and only they see it.
			Tenant: hdr.tenant(),
		}
		if req.Version == 0 {
			acl.PatternType = int8(kmsg.ACLResourcePatternTypeLiteral)
		}
		if msg := security.ValidateACL(acl); msg != "" {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, errPtr(msg)
			continue
		}
		valid, at = append(valid, acl), append(at, i)
	}
	if len(valid) > 0 {
		if err := s.cfg.Authorizer.CreateACLs(valid); err != nil {
			s.logger.Error("creating ACLs", "err", err)
			for _, i := range at {
				resp.Results[i].ErrorCode = kerr.UnknownServerError.Code
			}
		}
	}
	return done(resp)
}
