package record

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// KindConfig is the dynamic configs of one resource other than a topic
// (a topic's are in its KindTopic record): a broker's, the cluster-wide
// broker defaults, a group's, a broker's loggers (Kafka's ConfigRecord,
// one per resource here rather than one per key). A resource with no
// config left has no record.
const KindConfig Kind = 27

// ConfigResource names a config record: Kafka's resource type number
// (kmsg.ConfigResourceType: 4 broker, 8 broker logger, 32 group) and
// name (a broker's id, "" for the cluster-wide broker defaults, a
// group's id, "<tenant>/<id>" for an organisation's group).
type ConfigResource struct {
	Type int8
	Name string
}

// ConfigPrefix is the prefix of every config record.
func ConfigPrefix() []byte { return KindPrefix(GlobalShard, KindConfig) }

// Key encodes the record's key: the type byte, then the name.
func (c ConfigResource) Key() []byte {
	return appendKeyString(append(ConfigPrefix(), byte(c.Type)), c.Name)
}

// ParseConfigKey decodes a config key.
func ParseConfigKey(key []byte) (ConfigResource, error) {
	var c ConfigResource
	p := ConfigPrefix()
	if !bytes.HasPrefix(key, p) || len(key) == len(p) {
		return c, fmt.Errorf("%w: key %q is not a config key", ErrCorrupt, key)
	}
	c.Type = int8(key[len(p)])
	r := keyReader{b: key[len(p)+1:]}
	c.Name = r.string()
	if r.err != nil || len(r.b) != 0 {
		return c, fmt.Errorf("%w: config key %q", ErrCorrupt, key)
	}
	return c, nil
}

// EncodeConfigs encodes a config record's value: the configs in key
// order.
func EncodeConfigs(configs map[string]string) []byte {
	return appendConfigs([]byte{valueVersion1}, configs)
}

func appendConfigs(b []byte, configs map[string]string) []byte {
	b = kbin.AppendUvarint(b, uint32(len(configs)))
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		b = kbin.AppendCompactString(b, k)
		b = kbin.AppendCompactString(b, configs[k])
	}
	return b
}

// DecodeConfigs decodes a config record's value.
func DecodeConfigs(v []byte) (map[string]string, error) {
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return nil, err
	}
	out, err := readConfigs(r, "config")
	if err != nil {
		return nil, err
	}
	if err := complete(r, "config"); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: config value without configs", ErrCorrupt)
	}
	return out, nil
}

// readConfigs reads what appendConfigs wrote; nil for none.
func readConfigs(r *kbin.Reader, what string) (map[string]string, error) {
	n := r.Uvarint()
	if n == 0 {
		return nil, nil
	}
	if n > uint32(len(r.Src)) {
		return nil, fmt.Errorf("%w: %s value: %d configs", ErrCorrupt, what, n)
	}
	out := make(map[string]string, n)
	for range n {
		k := r.CompactString()
		out[k] = r.CompactString()
	}
	return out, nil
}

// Kafka's config resource types (kmsg.ConfigResourceType) that Cohort
// keeps configs of.
const (
	// ConfigTopic is a topic: its configs are in its KindTopic record,
	// never in a config record.
	ConfigTopic        int8 = 2
	ConfigBroker       int8 = 4
	ConfigBrokerLogger int8 = 8
	ConfigGroup        int8 = 32
)
