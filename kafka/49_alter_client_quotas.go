package kafka

// AlterClientQuotas, key 49.
//
// Version notes:
//   - v0 (KIP-546): entries of an entity and ops (a key and a value, or
//     its removal); validate_only.
//   - v1: flexible.
//
// Entity type "org" only (see 48_describe_client_quotas.go): named (an
// organisation's name, "default" for the default organisation) or the
// default entity (a null name). Org quotas are an operator's business,
// not an organisation's: as Kafka, with an authorizer the principal
// needs ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED for
// every entry). Validation as Kafka's ClientQuotaControlManager, each
// entry answered on its own with INVALID_REQUEST and a message: an empty
// entity, an entity type other than org (or given twice), an empty name,
// an unknown key, a value not greater than 0 (or not a whole number for
// a byte rate or a count), a key given twice. With validate_only nothing
// is written; otherwise the valid entries are written in one durable
// batch before the answer. Removing a key that is not set succeeds.

import (
	"context"

	"github.com/cohort-dev/cohort/quota"
	"github.com/cohort-dev/cohort/security"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.AlterClientQuotas, 0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(_ context.Context, s *Server, hdr *reqHeader, kreq kmsg.Request) func() kmsg.Response {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := s.authorizeCluster(hdr, kmsg.ACLOperationAlterConfigs)
	changes := map[quota.Entity][]quota.Op{}
	var at []int
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		for _, ent := range e.Entity {
			x := kmsg.NewAlterClientQuotasResponseEntryEntity()
			x.Type, x.Name = ent.Type, ent.Name
			re.Entity = append(re.Entity, x)
		}
		entity, ops, msg := validateQuotaEntry(e)
		switch {
		case !allowed:
			re.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		case msg != "":
			re.ErrorCode, re.ErrorMessage = kerr.InvalidRequest.Code, errPtr(msg)
		case s.quotas.reg == nil:
			re.ErrorCode = kerr.UnknownServerError.Code
		default:
			changes[entity] = append(changes[entity], ops...)
			at = append(at, len(resp.Entries))
		}
		resp.Entries = append(resp.Entries, re)
	}
	if len(changes) > 0 && !req.ValidateOnly {
		if err := s.quotas.reg.Alter(changes); err != nil {
			s.logger.Error("altering client quotas", "err", err)
			for _, i := range at {
				resp.Entries[i].ErrorCode = kerr.UnknownServerError.Code
			}
		}
	}
	return done(resp)
}

// validateQuotaEntry checks one entry: its entity and ops, or the
// message of its INVALID_REQUEST.
func validateQuotaEntry(e kmsg.AlterClientQuotasRequestEntry) (quota.Entity, []quota.Op, string) {
	var entity quota.Entity
	if len(e.Entity) == 0 {
		return entity, nil, "Invalid empty client quota entity"
	}
	seen := false
	for _, ent := range e.Entity {
		if ent.Type != quota.EntityOrg {
			return entity, nil, unsupportedEntity(ent.Type)
		}
		if seen {
			return entity, nil, "Duplicate entity type " + ent.Type
		}
		seen = true
		switch {
		case ent.Name == nil:
			entity.Default = true
		case *ent.Name == "":
			return entity, nil, "Empty org not supported"
		case *ent.Name != security.DefaultOrg:
			if err := security.ValidateOrgName(*ent.Name); err != nil {
				return entity, nil, err.Error()
			}
			fallthrough
		default:
			entity.Name = *ent.Name
		}
	}
	ops := make([]quota.Op, 0, len(e.Ops))
	keys := map[string]bool{}
	for _, op := range e.Ops {
		if keys[op.Key] {
			return entity, nil, "Duplicate quota key " + op.Key
		}
		keys[op.Key] = true
		if op.Remove {
			if msg := quota.ValidateValue(op.Key, 1); msg != "" {
				return entity, nil, msg // an unknown key
			}
			ops = append(ops, quota.Op{Key: op.Key, Remove: true})
			continue
		}
		if msg := quota.ValidateValue(op.Key, op.Value); msg != "" {
			return entity, nil, msg
		}
		ops = append(ops, quota.Op{Key: op.Key, Value: op.Value})
	}
	return entity, ops, ""
}
