package kafka

// AlterUserScramCredentials, key 51.
//
// Version notes:
//   - v0 (KIP-554): flexible from the start; deletions (user,
//     mechanism) and upsertions (user, mechanism, iterations, salt and
//     the salted password, which the client computes: the password never
//     reaches the server); one result per user.
//
// As Kafka's controller: an empty user name, an iteration count outside
// 4096–16384, or an empty salt or salted password is
// UNACCEPTABLE_CREDENTIAL; an unknown mechanism UNSUPPORTED_SASL_MECHANISM;
// a user whose credential of one mechanism is altered twice in the
// request DUPLICATE_RESOURCE; deleting a credential that does not exist
// RESOURCE_NOT_FOUND. A user with any failed alteration has none of its
// alterations applied. What is stored is the salt, the iterations and
// the keys derived from the salted password (security.CredentialFromSalted),
// in one durable batch before the answer. Anyone on a listener may call
// it while authorization is off, as in Kafka: the first user can be
// created over a PLAINTEXT listener. With it on, it needs ALTER on the
// cluster (CLUSTER_AUTHORIZATION_FAILED for every user).

import (
	"context"

	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.AlterUserSCRAMCredentials, 0, 0, handleAlterUserScramCredentials)
}

func handleAlterUserScramCredentials(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)

	type userResult struct {
		code    int16
		msg     string
		changes []security.Change
	}
	var order []string
	users := map[string]*userResult{}
	seen := map[record.CredentialKey]bool{}
	get := func(name string) *userResult {
		u, ok := users[name]
		if !ok {
			u = &userResult{}
			users[name] = u
			order = append(order, name)
		}
		return u
	}
	failUser := func(u *userResult, code int16, msg string) {
		if u.code == 0 {
			u.code, u.msg = code, msg
		}
	}
	// check validates what every alteration has: a name, a known
	// mechanism, and no other alteration of the same credential.
	check := func(name string, mech int8) (*userResult, security.Mechanism, bool) {
		u := get(name)
		m, ok := scramMechanism(mech)
		switch {
		case name == "":
			failUser(u, kerr.UnacceptableCredential.Code, "Username must not be empty")
			return u, m, false
		case !ok:
			failUser(u, kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism")
			return u, m, false
		}
		k := record.CredentialKey{User: name, Mechanism: mech}
		if seen[k] {
			failUser(u, kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request")
			return u, m, false
		}
		seen[k] = true
		return u, m, true
	}
	for _, d := range req.Deletions {
		u, m, ok := check(d.Name, d.Mechanism)
		if !ok {
			continue
		}
		u.changes = append(u.changes, security.Change{User: d.Name, Mechanism: m})
	}
	for _, up := range req.Upsertions {
		u, m, ok := check(up.Name, up.Mechanism)
		if !ok {
			continue
		}
		switch {
		case up.Iterations < security.MinIterations:
			failUser(u, kerr.UnacceptableCredential.Code, "Too few iterations")
			continue
		case up.Iterations > security.MaxIterations:
			failUser(u, kerr.UnacceptableCredential.Code, "Too many iterations")
			continue
		case len(up.Salt) == 0:
			failUser(u, kerr.UnacceptableCredential.Code, "Salt must not be empty")
			continue
		case len(up.SaltedPassword) == 0:
			failUser(u, kerr.UnacceptableCredential.Code, "Password must not be empty")
			continue
		}
		cred := security.CredentialFromSalted(m, up.Salt, up.SaltedPassword, up.Iterations)
		u.changes = append(u.changes, security.Change{User: up.Name, Mechanism: m, Cred: &cred})
	}

	var apply []security.Change
	if !s.authorizeCluster(hdr, kmsg.ACLOperationAlter) {
		// With authorization on, as Kafka: ALTER on the cluster.
		for _, name := range order {
			users[name].code, users[name].msg = kerr.ClusterAuthorizationFailed.Code, ""
		}
	} else if s.cfg.Credentials == nil {
		for _, name := range order {
			failUser(users[name], kerr.UnknownServerError.Code, "This server keeps no credentials.")
		}
	} else {
		for _, name := range order {
			u := users[name]
			if u.code != 0 {
				continue
			}
			for _, ch := range u.changes {
				if ch.Cred != nil {
					continue
				}
				_, ok, err := s.cfg.Credentials.Get(ch.User, ch.Mechanism)
				switch {
				case err != nil:
					s.logger.Error("reading SCRAM credentials", "user", ch.User, "err", err)
					failUser(u, kerr.UnknownServerError.Code, "")
				case !ok:
					failUser(u, kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist")
				}
			}
			if u.code == 0 {
				apply = append(apply, u.changes...)
			}
		}
		if len(apply) > 0 {
			if err := s.cfg.Credentials.Apply(apply); err != nil {
				s.logger.Error("writing SCRAM credentials", "err", err)
				for _, name := range order {
					failUser(users[name], kerr.UnknownServerError.Code, "")
				}
			}
		}
	}
	for _, name := range order {
		u := users[name]
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode = name, u.code
		if u.msg != "" {
			r.ErrorMessage = errPtr(u.msg)
		}
		resp.Results = append(resp.Results, r)
	}
	return done(resp)
}
