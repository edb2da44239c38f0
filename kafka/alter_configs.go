package kafka

// What AlterConfigs (33) and IncrementalAlterConfigs (44) share: a
// resource's changes as operations, checked and applied the same way
// (Kafka's ConfigAdminManager). AlterConfigs is the operations SET of
// every config named, replacing the rest.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

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
// ALTER_CONFIGS on the topic, or on the cluster for a broker.
func (s *Server) alterConfigsDenied(hdr *reqHeader, changes []configChange) []bool {
	denied := make([]bool, len(changes))
	for i, c := range changes {
		switch c.typ {
		case kmsg.ConfigResourceTypeTopic:
			denied[i] = !s.authorize(hdr, kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeTopic, c.name)
		case kmsg.ConfigResourceTypeBroker:
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
		switch c.typ {
		case kmsg.ConfigResourceTypeTopic:
			code, msg := s.alterTopicConfigs(sc, c, validateOnly)
			if code != 0 {
				out[i] = codeMsg{code: code, msg: errPtr(msg)}
			}
		case kmsg.ConfigResourceTypeBroker:
			if c.name != "" && c.name != strconv.Itoa(int(s.cluster.Self())) {
				fail(kerr.InvalidRequest.Code, "Unexpected broker id, expected %d or empty string, but received %s", s.cluster.Self(), c.name)
				continue
			}
			if len(c.ops) > 0 {
				// No broker config changes while Cohort runs yet: Kafka's
				// answer for configs that are not dynamic.
				fail(kerr.InvalidRequest.Code, "Cannot update these configs dynamically: Set(%s)", strings.Join(slices.Sorted(maps.Keys(names)), ", "))
			}
		default:
			fail(kerr.InvalidRequest.Code, "Unsupported resource type %s", c.typ)
		}
	}
	return out
}

// alterTopicConfigs computes a topic's new explicit configs from its
// current ones and the operations, and stores them.
func (s *Server) alterTopicConfigs(sc scope, c configChange, validateOnly bool) (int16, string) {
	if sc.isOffsets(c.name, [16]byte{}, false) {
		return kerr.InvalidRequest.Code, "The configs of " + c.name + " are fixed."
	}
	t := sc.topic(c.name)
	if t == nil || !topics.ValidTopicName(c.name) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", c.name)
	}
	configs := maps.Clone(t.Configs)
	if c.replace || configs == nil {
		configs = map[string]string{}
	}
	for _, o := range c.ops {
		tc, ok := topics.LookupTopicConfig(o.name)
		if !ok {
			return kerr.InvalidConfig.Code, "Unknown topic config name: " + o.name
		}
		switch o.op {
		case kmsg.IncrementalAlterConfigOpSet:
			if o.value == nil {
				return kerr.InvalidRequest.Code, "Null value not supported for : " + o.name
			}
			configs[o.name] = *o.value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(configs, o.name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if tc.Type != topics.ConfigList {
				verb := "append"
				if o.op == kmsg.IncrementalAlterConfigOpSubtract {
					verb = "subtract"
				}
				return kerr.InvalidConfig.Code, fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, o.name)
			}
			if o.value == nil {
				return kerr.InvalidRequest.Code, "Null value not supported for : " + o.name
			}
			cur, _ := t.Config(o.name)
			if v, ok := configs[o.name]; ok {
				cur = v
			}
			configs[o.name] = listOp(cur, *o.value, o.op == kmsg.IncrementalAlterConfigOpAppend)
		default:
			return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown config operation %d for %s", o.op, o.name)
		}
	}
	if err := s.topics.AlterConfigs(sc.in(c.name), configs, validateOnly); err != nil {
		return errorCode(err), err.Error()
	}
	if !validateOnly {
		s.logger.Info("altered topic configs", "topic", c.name, "configs", configs)
	}
	return 0, ""
}

// listOp appends the items of v missing from the list cur, or removes
// those of v from it.
func listOp(cur, v string, add bool) string {
	items := splitList(cur)
	for _, x := range splitList(v) {
		i := slices.Index(items, x)
		switch {
		case add && i < 0:
			items = append(items, x)
		case !add && i >= 0:
			items = slices.Delete(items, i, i+1)
		}
	}
	return strings.Join(items, ",")
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
