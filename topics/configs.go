package topics

import (
	"fmt"
	"strconv"
)

// ConfigType is the type DescribeConfigs reports for a config (v3+), with
// Kafka's numbering.
type ConfigType int8

// Kafka's config types.
const (
	ConfigBoolean ConfigType = 1
	ConfigString  ConfigType = 2
	ConfigInt     ConfigType = 3
	ConfigShort   ConfigType = 4
	ConfigLong    ConfigType = 5
	ConfigDouble  ConfigType = 6
	ConfigList    ConfigType = 7
)

// TopicConfig is one topic-level config Cohort knows, with Kafka's default.
type TopicConfig struct {
	Name    string
	Default string
	Type    ConfigType
	// Enforced is true when Cohort acts on the value; the others are
	// stored and reported so that tools which set them keep working.
	Enforced bool
	Doc      string
}

// TopicConfigs lists the topic configs Cohort accepts, sorted by name.
var TopicConfigs = []TopicConfig{
	{Name: "cleanup.policy", Default: "delete", Type: ConfigList, Enforced: true, Doc: "delete lets retention.ms and retention.bytes delete old segments; without it they delete nothing. compact refuses a produced batch with records without a key whole, INVALID_RECORD with each keyless record named (KIP-467), as Kafka; old records are not compacted, so a compacted topic keeps everything (Kafka Connect and Streams create compacted topics)."},
	{Name: "compression.type", Default: "producer", Type: ConfigString, Doc: "Batches are kept as the producer compressed them."},
	{Name: "delete.retention.ms", Default: "86400000", Type: ConfigLong, Doc: "Stored and reported."},
	{Name: "max.message.bytes", Default: "1048588", Type: ConfigInt, Enforced: true, Doc: "Largest record batch a producer may append."},
	{Name: "message.timestamp.type", Default: "CreateTime", Type: ConfigString, Enforced: true, Doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the time it is appended."},
	{Name: "min.insync.replicas", Default: "1", Type: ConfigInt, Doc: "One node, one replica."},
	{Name: "retention.bytes", Default: "-1", Type: ConfigLong, Enforced: true, Doc: "Bytes a partition keeps: its oldest whole segments are deleted while what remains is at least this large; never the active segment; -1: no limit. Applies when cleanup.policy includes delete, checked every 5 minutes and when the topic's configs change."},
	{Name: "retention.ms", Default: "604800000", Type: ConfigLong, Enforced: true, Doc: "Milliseconds a partition keeps records: a whole segment is deleted once its newest record timestamp is older than this; never the active segment; -1: forever. Applies when cleanup.policy includes delete, checked every 5 minutes and when the topic's configs change."},
	{Name: "segment.bytes", Default: "268435456", Type: ConfigInt, Enforced: true, Doc: "Size at which a partition starts a new segment file."},
	{Name: "segment.ms", Default: "604800000", Type: ConfigLong, Enforced: true, Doc: "Milliseconds after which a partition starts a new segment, at the next append: when the appended batch's timestamp is more than this after the active segment's first batch's (or, without timestamps, the segment is this old). At least 1."},
	{Name: "unclean.leader.election.enable", Default: "false", Type: ConfigBoolean, Doc: "One node: never applies."},
}

// LookupTopicConfig returns the config named name.
func LookupTopicConfig(name string) (TopicConfig, bool) {
	for _, c := range TopicConfigs {
		if c.Name == name {
			return c, true
		}
	}
	return TopicConfig{}, false
}

// TopicConfigDefault returns a config's default, or "" if unknown.
func TopicConfigDefault(name string) string {
	c, _ := LookupTopicConfig(name)
	return c.Default
}

// ValidateTopicConfigs checks that every config is known and its value
// parses as its type, as Kafka's CreateTopics does (INVALID_CONFIG).
func ValidateTopicConfigs(configs map[string]string) error {
	for name, v := range configs {
		c, ok := LookupTopicConfig(name)
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q", ErrInvalidConfig, name)
		}
		var err error
		switch c.Type {
		case ConfigInt:
			_, err = strconv.ParseInt(v, 10, 32)
		case ConfigLong:
			_, err = strconv.ParseInt(v, 10, 64)
		case ConfigBoolean:
			_, err = strconv.ParseBool(v)
		}
		if err != nil {
			return fmt.Errorf("%w: %s=%q is not a valid %s", ErrInvalidConfig, name, v, typeName(c.Type))
		}
		if name == "message.timestamp.type" && v != "CreateTime" && v != "LogAppendTime" {
			return fmt.Errorf("%w: Invalid value %s for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime", ErrInvalidConfig, v)
		}
		if name == "cleanup.policy" {
			for _, x := range policyList(v) {
				if x != "compact" && x != "delete" {
					return fmt.Errorf("%w: Invalid value %s for configuration cleanup.policy: String must be one of: compact, delete", ErrInvalidConfig, x)
				}
			}
		}
		// Kafka's LogConfig bounds: segment.ms at least 1, retention.ms
		// at least -1 (forever).
		if least, ok := map[string]int64{"segment.ms": 1, "retention.ms": -1}[name]; ok {
			if n, _ := strconv.ParseInt(v, 10, 64); n < least {
				return fmt.Errorf("%w: Invalid value %s for configuration %s: Value must be at least %d", ErrInvalidConfig, v, name, least)
			}
		}
		if name == "segment.bytes" || name == "max.message.bytes" {
			if n, _ := strconv.ParseInt(v, 10, 64); n < 14 {
				return fmt.Errorf("%w: %s=%s is too small", ErrInvalidConfig, name, v)
			}
		}
	}
	return nil
}

func typeName(t ConfigType) string {
	switch t {
	case ConfigInt:
		return "int"
	case ConfigLong:
		return "long"
	case ConfigBoolean:
		return "boolean"
	}
	return "string"
}
