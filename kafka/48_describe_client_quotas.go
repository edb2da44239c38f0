package kafka

// DescribeClientQuotas, key 48.
//
// Version notes:
//   - v0 (KIP-546): filter components (an entity type and EXACT, DEFAULT
//     or ANY), strict; entries of entities and their values.
//   - v1: flexible.
//
// Cohort keeps quotas per organisation (package quota): entity type
// "org", named ("default" is the default organisation) or the default
// entity (a null name). A component of another type, Kafka's "user",
// "client-id" or "ip" included, is INVALID_REQUEST saying so, as Kafka
// answers an entity type it does not handle. As Kafka: with an
// authorizer, DESCRIBE_CONFIGS on the cluster (else
// CLUSTER_AUTHORIZATION_FAILED); a duplicate entity type, or EXACT
// without a name, is INVALID_REQUEST. With a single entity type, strict
// only matters with no components: then no entity matches.

import (
	"context"
	"sort"

	"github.com/cohort-dev/cohort/quota"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeClientQuotas, 0, 1, handleDescribeClientQuotas) }

func handleDescribeClientQuotas(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code int16, msg string) func() kmsg.Response {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = errPtr(msg)
		}
		return done(resp)
	}
	if !s.authorizeCluster(hdr, kmsg.ACLOperationDescribeConfigs) {
		return fail(kerr.ClusterAuthorizationFailed.Code, "")
	}
	var org *kmsg.DescribeClientQuotasRequestComponent
	for i, c := range req.Components {
		if c.EntityType != quota.EntityOrg {
			return fail(kerr.InvalidRequest.Code, unsupportedEntity(c.EntityType))
		}
		if org != nil {
			return fail(kerr.InvalidRequest.Code, "Duplicate filter component entity type "+c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return fail(kerr.InvalidRequest.Code, "Request specified exact match with no name for entity type "+c.EntityType)
			}
		case kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny:
		default:
			return fail(kerr.InvalidRequest.Code, "Unknown match type "+c.MatchType.String())
		}
		org = &req.Components[i]
	}
	if org == nil && req.Strict {
		return done(resp) // no entity has no components
	}
	for _, e := range s.quotas.reg.Entries() {
		if org != nil {
			switch org.MatchType {
			case kmsg.QuotasMatchTypeExact:
				if e.Entity.Default || e.Entity.Name != *org.Match {
					continue
				}
			case kmsg.QuotasMatchTypeDefault:
				if !e.Entity.Default {
					continue
				}
			}
		}
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
		ent.Type = quota.EntityOrg
		if !e.Entity.Default {
			ent.Name = errPtr(e.Entity.Name)
		}
		re.Entity = append(re.Entity, ent)
		ks := make([]string, 0, len(e.Values))
		for k := range e.Values {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			re.Values = append(re.Values, v)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return done(resp)
}

// unsupportedEntity is the INVALID_REQUEST message for an entity type
// other than "org".
func unsupportedEntity(typ string) string {
	return "Unhandled client quota entity type: " + typ + ". Cohort keeps quotas per organisation: use entity type org (a name, or null for the default)"
}
