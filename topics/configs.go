package topics

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cohort-dev/cohort/coordinator/global"
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
	// AtLeast is the least value of a number, as Kafka's atLeast
	// validator (LogConfig's ConfigDef); nil for any.
	AtLeast *int64
	// OneOf is the values a string, or each item of a list, may take, as
	// Kafka's ValidString.in and ValidList.in; nil for any.
	OneOf []string
}

func atLeast(n int64) *int64 { return &n }

// TopicConfigs lists the topic configs Cohort accepts, sorted by name.
var TopicConfigs = []TopicConfig{
	{Name: "cleanup.policy", Default: "delete", Type: ConfigList, OneOf: []string{"compact", "delete"}, Enforced: true, Doc: "delete lets retention.ms and retention.bytes delete old segments; without it they delete nothing. compact refuses a produced batch with records without a key whole, INVALID_RECORD with each keyless record named (KIP-467), as Kafka; old records are not compacted, so a compacted topic keeps everything (Kafka Connect and Streams create compacted topics)."},
	{Name: "compression.type", Default: "producer", Type: ConfigString, OneOf: []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}, Doc: "Batches are kept as the producer compressed them."},
	{Name: "delete.retention.ms", Default: "86400000", Type: ConfigLong, AtLeast: atLeast(0), Doc: "Stored and reported."},
	{Name: "errors.deadletterqueue.group.enable", Default: "false", Type: ConfigBoolean, Enforced: true, Doc: "true lets share groups name the topic as their dead-letter topic (KIP-1191's errors.deadletterqueue.topic.name); without it they write nothing to it."},
	// Kafka's floor is 0; Cohort's is 14 bytes, as segment.bytes', the
	// smallest record (Kafka 3's LegacyRecord.RECORD_OVERHEAD_V0).
	{Name: "max.message.bytes", Default: "1048588", Type: ConfigInt, AtLeast: atLeast(14), Enforced: true, Doc: "Largest record batch a producer may append."},
	{Name: "message.timestamp.type", Default: "CreateTime", Type: ConfigString, OneOf: []string{"CreateTime", "LogAppendTime"}, Enforced: true, Doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the time it is appended."},
	{Name: "min.insync.replicas", Default: "1", Type: ConfigInt, AtLeast: atLeast(1), Doc: "One node, one replica."},
	{Name: "retention.bytes", Default: "-1", Type: ConfigLong, Enforced: true, Doc: "Bytes a partition keeps: its oldest whole segments are deleted while what remains is at least this large; never the active segment; -1: no limit. Applies when cleanup.policy includes delete, checked every 5 minutes and when the topic's configs change."},
	{Name: "retention.ms", Default: "604800000", Type: ConfigLong, AtLeast: atLeast(-1), Enforced: true, Doc: "Milliseconds a partition keeps records: a whole segment is deleted once its newest record timestamp is older than this; never the active segment; -1: forever. Applies when cleanup.policy includes delete, checked every 5 minutes and when the topic's configs change."},
	// Kafka 3's floor (Kafka 4 asks for 1 MiB, KIP-1030).
	{Name: "segment.bytes", Default: "268435456", Type: ConfigInt, AtLeast: atLeast(14), Enforced: true, Doc: "Size at which a partition starts a new segment file."},
	{Name: "segment.ms", Default: "604800000", Type: ConfigLong, AtLeast: atLeast(1), Enforced: true, Doc: "Milliseconds after which a partition starts a new segment, at the next append: when the appended batch's timestamp is more than this after the active segment's first batch's (or, without timestamps, the segment is this old). At least 1."},
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
// parses as its type and passes its validator, as Kafka's CreateTopics
// and AlterConfigs do (INVALID_CONFIG, with Kafka's messages).
func ValidateTopicConfigs(configs map[string]string) error {
	for name, v := range configs {
		c, ok := LookupTopicConfig(name)
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q", ErrInvalidConfig, name)
		}
		var n int64
		var err error
		switch c.Type {
		case ConfigInt:
			n, err = strconv.ParseInt(v, 10, 32)
		case ConfigLong:
			n, err = strconv.ParseInt(v, 10, 64)
		case ConfigBoolean:
			// As Kafka's ConfigDef: true or false in any case, not
			// strconv's 1, t and the like.
			if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
				return fmt.Errorf("%w: Invalid value %s for configuration %s: Expected value to be either true or false", ErrInvalidConfig, v, name)
			}
		}
		if err != nil {
			return fmt.Errorf("%w: %s=%q is not a valid %s", ErrInvalidConfig, name, v, typeName(c.Type))
		}
		if c.AtLeast != nil && n < *c.AtLeast {
			return fmt.Errorf("%w: Invalid value %s for configuration %s: Value must be at least %d", ErrInvalidConfig, v, name, *c.AtLeast)
		}
		if c.OneOf == nil {
			continue
		}
		items := []string{v}
		if c.Type == ConfigList {
			// A list's items are trimmed, and may be empty, as Kafka
			// parses lists.
			items = global.SplitList(v)
		}
		for _, x := range items {
			if !slices.Contains(c.OneOf, x) {
				return fmt.Errorf("%w: Invalid value %s for configuration %s: String must be one of: %s", ErrInvalidConfig, x, name, strings.Join(c.OneOf, ", "))
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
