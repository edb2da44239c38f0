package kafka

// DescribeUserScramCredentials, key 50.
//
// Version notes:
//   - v0 (KIP-554): flexible from the start; users by name, null (or
//     empty) for every user; per user its mechanisms and iterations,
//     never a salt or a key.
//
// As Kafka: a user named twice is DUPLICATE_RESOURCE, a user without
// credentials RESOURCE_NOT_FOUND. With authorization off anyone on a listener may call it, as in Kafka without
// an authorizer; with it on, it needs DESCRIBE on the cluster
// (CLUSTER_AUTHORIZATION_FAILED). Credentials are the store's (security.Credentials), shared
// by every node of a cluster.

import (
	"context"
	"sort"

	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials, 0, 0, handleDescribeUserScramCredentials)
}

func handleDescribeUserScramCredentials(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !s.authorizeCluster(hdr, kmsg.ACLOperationDescribe) {
		// With authorization on, as Kafka: DESCRIBE on the cluster.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return done(resp)
	}
	if s.cfg.Credentials == nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		resp.ErrorMessage = errPtr("This server keeps no credentials.")
		return done(resp)
	}
	all, err := s.cfg.Credentials.List()
	if err != nil {
		s.logger.Error("describing SCRAM credentials", "err", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return done(resp)
	}
	var names []string
	count := map[string]int{}
	if len(req.Users) == 0 {
		for u := range all {
			names = append(names, u)
		}
		sort.Strings(names)
	} else {
		for _, u := range req.Users {
			if count[u.Name]++; count[u.Name] == 1 {
				names = append(names, u.Name)
			}
		}
	}
	for _, u := range names {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch infos, ok := all[u]; {
		case count[u] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = errPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case !ok:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = errPtr("Attempt to describe a user credential that does not exist: " + u)
		default:
			for _, in := range infos {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = int8(in.Mechanism), in.Iterations
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return done(resp)
}

// scramMechanism is a request's mechanism number, if known.
func scramMechanism(m int8) (security.Mechanism, bool) {
	sm := security.Mechanism(m)
	return sm, sm.Valid()
}
