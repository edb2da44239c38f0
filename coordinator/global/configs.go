package global

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cohort-dev/cohort/record"
)

// Dynamic configs: a topic's live in its topic record, every other
// resource's (a broker's, the cluster-wide broker defaults, a group's, a
// broker's loggers) in a config record (record.KindConfig). AlterConfigs
// changes either the same way, as Kafka's ConfigAdminManager: the
// operations are applied here, to the configs as the unit has them, so
// two nodes altering one resource at once cannot lose each other's
// change; the caller's Validate then judges the result.

// ConfigOpKind is an IncrementalAlterConfigs operation, with Kafka's
// numbering.
type ConfigOpKind int8

// The operations.
const (
	ConfigSet      ConfigOpKind = 0
	ConfigDelete   ConfigOpKind = 1
	ConfigAppend   ConfigOpKind = 2
	ConfigSubtract ConfigOpKind = 3
)

// ConfigOp is one operation on one config. Append and Subtract treat the
// value as a comma-separated list.
type ConfigOp struct {
	Name  string
	Value string
	Op    ConfigOpKind
}

// AlterConfigs changes a resource's explicit configs. Out: the configs
// that result (map[string]string, nil for none), a Validate error, or
// ErrUnknownTopic.
type AlterConfigs struct {
	// Resource is the resource; Type record.ConfigTopic is the topic
	// named, which must exist.
	Resource record.ConfigResource
	Ops      []ConfigOp
	// Replace starts from no explicit configs (Kafka's AlterConfigs, which
	// sets exactly those given); else from the current ones.
	Replace bool
	// Default is a config's value when none is set: a list appended to or
	// subtracted from starts from it. Nil: "".
	Default func(name string) string
	// Validate judges the configs that would result; an error is the
	// reply and nothing changes. Nil: every result is valid.
	Validate func(map[string]string) error
	// ValidateOnly answers as if it changed them and changes nothing.
	ValidateOnly bool
}

func (s *State) alterConfigs(c AlterConfigs) any {
	var cur map[string]string
	topic := c.Resource.Type == record.ConfigTopic
	if topic {
		t, ok := s.topics[c.Resource.Name]
		if !ok {
			return ErrUnknownTopic
		}
		cur = t.Configs
	} else {
		cur = s.configs[c.Resource]
	}
	next := map[string]string{}
	if !c.Replace {
		maps.Copy(next, cur)
	}
	for _, o := range c.Ops {
		switch o.Op {
		case ConfigSet:
			next[o.Name] = o.Value
		case ConfigDelete:
			delete(next, o.Name)
		case ConfigAppend, ConfigSubtract:
			v, ok := next[o.Name]
			if !ok && c.Default != nil {
				v = c.Default(o.Name)
			}
			next[o.Name] = listOp(v, o.Value, o.Op == ConfigAppend)
		default:
			return fmt.Errorf("unknown config operation %d for %s", o.Op, o.Name)
		}
	}
	if c.Validate != nil {
		if err := c.Validate(next); err != nil {
			return err
		}
	}
	if len(next) == 0 {
		next = nil
	}
	if c.ValidateOnly || maps.Equal(next, cur) {
		return next
	}
	if topic {
		t := s.topics[c.Resource.Name]
		t.Configs = next
		s.rec.Emit(record.TopicKey(c.Resource.Name), t.Encode())
		return next
	}
	if next == nil {
		s.rec.Emit(c.Resource.Key(), nil)
	} else {
		s.rec.Emit(c.Resource.Key(), record.EncodeConfigs(next))
	}
	return next
}

// listOp appends the items of v missing from the list cur, or removes
// those of v from it.
func listOp(cur, v string, add bool) string {
	items := SplitList(cur)
	for _, x := range SplitList(v) {
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

// SplitList is a list config's items, trimmed, the empty ones left out,
// as Kafka parses a list.
func SplitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
