package kafka

// Authorization: with Config.Authorizer set, each API checks what Kafka's
// KafkaApis checks (through its AuthHelper) before it does anything, and
// answers Kafka's error code when the request's principal may not. With
// it nil, everything is allowed, as Kafka without an authorizer.

import (
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authorize reports whether the request's principal, from its host, may
// do op on the resource of type typ named name. Always true with
// authorization off.
func (s *Server) authorize(hdr *reqHeader, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return s.authorizeAs(authzRequest(hdr), op, typ, name)
}

// authorizeAs is authorize for who: what a response function running on
// the connection's writer uses, with who taken on the reader (which owns
// the connection's principal, changed by a re-authentication).
func (s *Server) authorizeAs(who security.Request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	az := s.cfg.Authorizer
	if az == nil {
		return true
	}
	return az.Authorize(who, op, typ, name)
}

// authorizeCluster is authorize on the CLUSTER resource.
func (s *Server) authorizeCluster(hdr *reqHeader, op kmsg.ACLOperation) bool {
	return s.authorize(hdr, op, kmsg.ACLResourceTypeCluster, security.ClusterName)
}

// aclAPIRefused is the gate of the ACL APIs (Describe/Create/DeleteAcls):
// SECURITY_DISABLED (with Kafka's message) without an authorizer,
// CLUSTER_AUTHORIZATION_FAILED without op on the cluster; 0 when served.
func (s *Server) aclAPIRefused(hdr *reqHeader, op kmsg.ACLOperation) (int16, *string) {
	switch {
	case s.cfg.Authorizer == nil:
		return kerr.SecurityDisabled.Code, errPtr(securityDisabled)
	case !s.authorizeCluster(hdr, op):
		return kerr.ClusterAuthorizationFailed.Code, nil
	}
	return 0, nil
}

// authorizeTxnID is authorize of WRITE on a transactional id: what every
// transactional API needs (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func (s *Server) authorizeTxnID(hdr *reqHeader, id string) bool {
	return s.authorize(hdr, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id)
}

// authorizedOperations is Kafka's AuthorizedOperations bit field for the
// resource: with authorization off, as Kafka's AuthHelper, every
// operation the resource type supports.
func (s *Server) authorizedOperations(hdr *reqHeader, typ kmsg.ACLResourceType, name string) int32 {
	return s.authorizedOperationsAs(authzRequest(hdr), typ, name)
}

// authorizedOperationsAs is authorizedOperations for who (see authorizeAs).
func (s *Server) authorizedOperationsAs(who security.Request, typ kmsg.ACLResourceType, name string) int32 {
	az := s.cfg.Authorizer
	if az == nil {
		var bits int32
		for _, op := range security.Operations[typ] {
			bits |= 1 << op
		}
		return bits
	}
	return az.AuthorizedOperations(who, typ, name)
}

func authzRequest(hdr *reqHeader) security.Request {
	return security.Request{Principal: hdr.Principal(), Host: hdr.host, Tenant: hdr.tenant()}
}

// securityDisabled is Kafka's message for an ACL API without an
// authorizer (SECURITY_DISABLED).
const securityDisabled = "No Authorizer is configured."
