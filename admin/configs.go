package admin

// Configs in the API: a topic's (GET /api/v1/topics) and a group's (GET
// /api/v1/groups/{group}), each value with where it is set, as
// DescribeConfigs reports them.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/topics"
)

// TopicConfig is one config of a topic.
type TopicConfig struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Source is "topic" when the topic sets the value, else "default".
	Source string `json:"source"`
	// Enforced is true when Cohort acts on the value; the others are
	// stored and reported only (topics.TopicConfig).
	Enforced bool `json:"enforced"`
}

// GroupConfig is one config of a group.
type GroupConfig struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Source is where the value is set (ConfigSourceName): "group",
	// "broker", "cluster", "node" or "default".
	Source string `json:"source"`
}

// ConfigSourceName is the API's word for a DescribeConfigs source: the
// topic's or group's own value ("topic", "group"), a dynamic broker
// config of this broker ("broker") or of the cluster ("cluster"), the
// node's flag ("node"), Kafka's default ("default").
func ConfigSourceName(src kmsg.ConfigSource) string {
	switch src {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceGroupConfig:
		return "group"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "broker"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "cluster"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "node"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	}
	return strings.ToLower(src.String())
}

// defaultTopicConfigs are the configs of a topic that sets none, shared:
// the topic list is polled and read by the lag sampler, and most topics
// set nothing.
var defaultTopicConfigs = topicConfigs(&topics.Topic{})

// TopicConfigs are every topic config Cohort knows as t resolves it
// (topics.Topic.Config), in topics.TopicConfigs' order. The slice may be
// shared with other topics: do not change it.
func TopicConfigs(t *topics.Topic) []TopicConfig {
	if len(t.Configs) == 0 {
		return defaultTopicConfigs
	}
	return topicConfigs(t)
}

func topicConfigs(t *topics.Topic) []TopicConfig {
	out := make([]TopicConfig, len(topics.TopicConfigs))
	for i, c := range topics.TopicConfigs {
		v, isDefault := t.Config(c.Name)
		src := kmsg.ConfigSourceDynamicTopicConfig
		if isDefault {
			src = kmsg.ConfigSourceDefaultConfig
		}
		out[i] = TopicConfig{Name: c.Name, Value: v, Source: ConfigSourceName(src), Enforced: c.Enforced}
	}
	return out
}
