package kafka

// What AlterConfigs (33) and IncrementalAlterConfigs (44) share: a
// resource's changes as operations, checked and applied the same way
// (Kafka's ConfigAdminManager). AlterConfigs is the operations SET of
// every config named, replacing the rest.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configChange is one resource's requested change.
type configChange struct {
	typ  kmsg.ConfigResourceType
	name string
	ops  []configOp
	// replace: the configs not named go back to their defaults
	// (AlterConfigs).
	replace bool
}

type configOp struct {
	name  string
	value *string
	op    kmsg.IncrementalAlterConfigOp
}

type codeMsg struct {
	code int16
	msg  *string
}

// alterConfigsDenied decides authorization on the reader, as Kafka:
// ALTER_CONFIGS on the topic or the group, or on the cluster for a
// broker and its loggers.
func (s *Server) alterConfigsDenied(hdr *reqHeader, changes []configChange) []bool {
	denied := make([]bool, len(changes))
	for i, c := range changes {
		switch c.typ {
		case kmsg.ConfigResourceTypeTopic:
			denied[i] = !s.authorize(hdr, kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeTopic, c.name)
		case kmsg.ConfigResourceTypeGroupConfig:
			denied[i] = !s.authorize(hdr, kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeGroup, c.name)
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			denied[i] = !s.authorizeCluster(hdr, kmsg.ACLOperationAlterConfigs)
		}
	}
	return denied
}

// alterConfigs applies the changes in request order, one result each.
func (s *Server) alterConfigs(sc scope, changes []configChange, denied []bool, validateOnly bool) []codeMsg {
	out := make([]codeMsg, len(changes))
	seen := map[[2]string]int{}
	for _, c := range changes {
		seen[[2]string{c.typ.String(), c.name}]++
	}
	for i, c := range changes {
		fail := func(code int16, format string, args ...any) {
			out[i] = codeMsg{code: code, msg: errPtr(fmt.Sprintf(format, args...))}
		}
		switch {
		case seen[[2]string{c.typ.String(), c.name}] > 1:
			fail(kerr.InvalidRequest.Code, "Error due to duplicate resource %s in request.", c.name)
			continue
		case denied[i] && c.typ == kmsg.ConfigResourceTypeTopic:
			fail(kerr.TopicAuthorizationFailed.Code, "Authorization failed.")
			continue
		case denied[i] && c.typ == kmsg.ConfigResourceTypeGroupConfig:
			fail(kerr.GroupAuthorizationFailed.Code, "Authorization failed.")
			continue
		case denied[i]:
			fail(kerr.ClusterAuthorizationFailed.Code, "Authorization failed.")
			continue
		}
		names := map[string]bool{}
		dup := ""
		for _, o := range c.ops {
			if names[o.name] {
				dup = o.name
			}
			names[o.name] = true
		}
		if dup != "" {
			fail(kerr.InvalidRequest.Code, "Error due to duplicate config keys: %s", dup)
			continue
		}
		var code int16
		var msg string
		switch c.typ {
		case kmsg.ConfigResourceTypeTopic:
			code, msg = s.alterTopicConfigs(sc, c, validateOnly)
		case kmsg.ConfigResourceTypeBroker:
			code, msg = s.alterBrokerConfigs(c, names, validateOnly)
		case kmsg.ConfigResourceTypeGroupConfig:
			code, msg = s.alterGroupConfigs(sc, c, validateOnly)
		case kmsg.ConfigResourceTypeBrokerLogger:
			switch self := strconv.Itoa(int(s.cluster.Self())); {
			case c.replace:
				code, msg = kerr.InvalidRequest.Code, "AlterConfigs does not support the BROKER_LOGGER resource type; use IncrementalAlterConfigs"
			case c.name == "":
				code, msg = kerr.InvalidRequest.Code, "Broker id must not be empty"
			case c.name != self:
				code, msg = kerr.InvalidRequest.Code, "Unexpected broker id, expected "+self+" but received "+c.name
			default:
				code, msg = s.alterLoggers(c, validateOnly)
			}
		default:
			code, msg = kerr.InvalidRequest.Code, "Unsupported resource type "+c.typ.String()
		}
		if code != 0 {
			out[i] = codeMsg{code: code, msg: errPtr(msg)}
		}
	}
	return out
}

// unitOps checks a change's operations against the configs of its
// resource (lookup says whether a name is one and whether it is a list)
// and converts them for the global unit, as Kafka's
// ConfigAdminManager checks them.
func unitOps(c configChange, lookup func(string) (known, list bool), unknown string) ([]global.ConfigOp, int16, string) {
	ops := make([]global.ConfigOp, 0, len(c.ops))
	for _, o := range c.ops {
		known, list := lookup(o.name)
		if !known {
			return nil, kerr.InvalidConfig.Code, unknown + o.name
		}
		op := global.ConfigOp{Name: o.name}
		switch o.op {
		case kmsg.IncrementalAlterConfigOpSet:
			op.Op = global.ConfigSet
		case kmsg.IncrementalAlterConfigOpDelete:
			op.Op = global.ConfigDelete
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			op.Op = global.ConfigAppend
			verb := "append"
			if o.op == kmsg.IncrementalAlterConfigOpSubtract {
				op.Op, verb = global.ConfigSubtract, "subtract"
			}
			if !list {
				return nil, kerr.InvalidConfig.Code, fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, o.name)
			}
		default:
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Unknown config operation %d for %s", o.op, o.name)
		}
		if op.Op != global.ConfigDelete {
			if o.value == nil {
				return nil, kerr.InvalidRequest.Code, "Null value not supported for : " + o.name
			}
			op.Value = *o.value
		}
		ops = append(ops, op)
	}
	return ops, 0, ""
}

// inDyn is unitOps' lookup of a list of dynamic configs (none a list).
func inDyn(list []dynConfig) func(string) (known, isList bool) {
	return func(name string) (bool, bool) {
		_, ok := lookupDyn(list, name)
		return ok, false
	}
}

// alterTopicConfigs changes a topic's explicit configs.
func (s *Server) alterTopicConfigs(sc scope, c configChange, validateOnly bool) (int16, string) {
	if sc.isOffsets(c.name, [16]byte{}, false) {
		return kerr.InvalidRequest.Code, "The configs of " + c.name + " are fixed."
	}
	if t := sc.topic(c.name); t == nil || !topics.ValidTopicName(c.name) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", c.name)
	}
	ops, code, msg := unitOps(c, func(name string) (bool, bool) {
		tc, ok := topics.LookupTopicConfig(name)
		return ok, tc.Type == topics.ConfigList
	}, "Unknown topic config name: ")
	if code != 0 {
		return code, msg
	}
	configs, err := s.topics.ChangeConfigs(sc.in(c.name), ops, c.replace, validateOnly)
	if err != nil {
		return errorCode(err), err.Error()
	}
	if !validateOnly {
		s.logger.Info("altered topic configs", "topic", c.name, "configs", configs)
	}
	return 0, ""
}

// alterBrokerConfigs changes this broker's dynamic configs, or the
// cluster's defaults (name ""). Any other broker config gets Kafka's
// answer for one that is not dynamic.
func (s *Server) alterBrokerConfigs(c configChange, names map[string]bool, validateOnly bool) (int16, string) {
	if c.name != "" && c.name != strconv.Itoa(int(s.cluster.Self())) {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", s.cluster.Self(), c.name)
	}
	var static []string
	for name := range names {
		if _, ok := lookupDyn(brokerDynamicConfigs, name); !ok && s.isBrokerConfig(name) {
			static = append(static, name)
		}
	}
	if len(static) > 0 {
		slices.Sort(static)
		return kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(" + strings.Join(static, ", ") + ")"
	}
	ops, code, msg := unitOps(c, inDyn(brokerDynamicConfigs), "Unknown broker config name: ")
	if code != 0 {
		return code, msg
	}
	return s.alterUnitConfigs(record.ConfigResource{Type: record.ConfigBroker, Name: c.name}, ops, c.replace, validateOnly, s.validateBroker)
}

// alterGroupConfigs changes a group's configs. The group need not exist,
// as Kafka's: its configs wait for it.
func (s *Server) alterGroupConfigs(sc scope, c configChange, validateOnly bool) (int16, string) {
	if c.name == "" {
		return kerr.InvalidRequest.Code, "Group name must not be empty"
	}
	ops, code, msg := unitOps(c, inDyn(groupConfigs), "Unknown group config name: ")
	if code != 0 {
		return code, msg
	}
	name := sc.in(c.name)
	return s.alterUnitConfigs(record.ConfigResource{Type: record.ConfigGroup, Name: name}, ops, c.replace, validateOnly, s.validateGroup(name))
}

// alterUnitConfigs has the global unit apply ops to a resource's config
// record.
func (s *Server) alterUnitConfigs(r record.ConfigResource, ops []global.ConfigOp, replace, validateOnly bool, validate func(map[string]string) error) (int16, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.unit.Do(ctx, global.AlterConfigs{Resource: r, Ops: ops, Replace: replace, ValidateOnly: validateOnly, Validate: validate})
	if err != nil {
		return errConfigs(err)
	}
	if !validateOnly {
		s.logger.Info("altered configs", "resource_type", kmsg.ConfigResourceType(r.Type).String(), "resource", r.Name, "configs", out)
	}
	return 0, ""
}
