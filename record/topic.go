package record

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The topic catalog and the cluster's meta are the global unit's too
// (GlobalShard): every node serves every topic's metadata, and the
// cluster id, the coordinator's shard count and the producer-id
// reservation are one per cluster.

// KindTopic is a topic of the topic log: its id, each partition's leader
// (so the partition count) and its explicit configs (Kafka's TopicRecord,
// PartitionRecord and ConfigRecord in one; a KRaft metadata record of its
// own numbering, 25 here).
const KindTopic Kind = 25

// KindMeta is one named value of the cluster's meta: "cluster-id",
// "coordinator-shards", "share-state-shards", "next-producer-id"
// (MetaClusterID …).
const KindMeta Kind = 26

// The meta names.
const (
	MetaClusterID         = "cluster-id"
	MetaCoordinatorShards = "coordinator-shards"
	MetaNextProducerID    = "next-producer-id"
	// MetaShareStateShards is the share coordinator's shard count
	// (sharecoord), stored at the first start that has share groups.
	MetaShareStateShards = "share-state-shards"
)

// TopicPrefix is the prefix of every topic record.
func TopicPrefix() []byte { return KindPrefix(GlobalShard, KindTopic) }

// TopicKey is a topic's key: its name (an organisation's topic is
// "<tenant>/<name>").
func TopicKey(name string) []byte { return appendKeyString(TopicPrefix(), name) }

// ParseTopicKey decodes a topic key into the topic's name.
func ParseTopicKey(key []byte) (string, error) { return parseOneString(key, TopicPrefix(), "topic") }

// MetaKey is the key of a meta value.
func MetaKey(name string) []byte { return appendKeyString(KindPrefix(GlobalShard, KindMeta), name) }

// ParseMetaKey decodes a meta key into its name.
func ParseMetaKey(key []byte) (string, error) {
	return parseOneString(key, KindPrefix(GlobalShard, KindMeta), "meta")
}

// Topic is a topic record's value.
type Topic struct {
	ID [16]byte
	// Leaders is the node that leads (and alone stores) each partition;
	// its length is the partition count.
	Leaders []int32
	// Configs are the configs set explicitly at creation.
	Configs map[string]string
	// Epochs are each partition's leader epoch (Kafka's), raised each
	// time its leader starts serving it again; nil while every one is 0.
	Epochs []int32
}

// Epoch is partition p's leader epoch.
func (t Topic) Epoch(p int32) int32 {
	if int(p) < len(t.Epochs) {
		return t.Epochs[p]
	}
	return 0
}

// Encode returns the value's bytes: the id, the leaders, then the configs
// in key order; then, in version 2 (once a leader epoch is above 0),
// every partition's leader epoch.
func (t Topic) Encode() []byte {
	version := byte(valueVersion1)
	if slices.ContainsFunc(t.Epochs, func(e int32) bool { return e != 0 }) {
		version = valueVersion2
	}
	b := append([]byte{version}, t.ID[:]...)
	b = kbin.AppendUvarint(b, uint32(len(t.Leaders)))
	for _, l := range t.Leaders {
		b = kbin.AppendInt32(b, l)
	}
	b = appendConfigs(b, t.Configs)
	if version == valueVersion2 {
		for i := range t.Leaders {
			b = kbin.AppendInt32(b, t.Epoch(int32(i)))
		}
	}
	return b
}

// DecodeTopic decodes a Topic value.
func DecodeTopic(v []byte) (Topic, error) {
	var t Topic
	if len(v) == 0 || v[0] != valueVersion1 && v[0] != valueVersion2 {
		return t, fmt.Errorf("%w: topic value version", ErrCorrupt)
	}
	r := &kbin.Reader{Src: v[1:]}
	copy(t.ID[:], r.Span(16))
	n := r.Uvarint()
	if n > uint32(len(r.Src))/4 {
		return t, fmt.Errorf("%w: topic value: %d leaders", ErrCorrupt, n)
	}
	t.Leaders = make([]int32, n)
	for i := range t.Leaders {
		t.Leaders[i] = r.Int32()
	}
	var err error
	if t.Configs, err = readConfigs(r, "topic"); err != nil {
		return t, err
	}
	if v[0] == valueVersion2 {
		t.Epochs = make([]int32, len(t.Leaders))
		for i := range t.Epochs {
			t.Epochs[i] = r.Int32()
		}
		if !slices.ContainsFunc(t.Epochs, func(e int32) bool { return e != 0 }) {
			return t, fmt.Errorf("%w: topic value version 2 without a leader epoch", ErrCorrupt)
		}
	}
	if err := complete(r, "topic"); err != nil {
		return t, err
	}
	if len(t.Leaders) == 0 {
		return t, fmt.Errorf("%w: topic value without partitions", ErrCorrupt)
	}
	return t, nil
}

// MetaValue encodes a meta value.
func MetaValue(v []byte) []byte { return kbin.AppendCompactBytes([]byte{valueVersion1}, v) }

// DecodeMetaValue decodes a meta value.
func DecodeMetaValue(v []byte) ([]byte, error) {
	rv, err := valueReader(v)
	r := &rv
	if err != nil {
		return nil, err
	}
	if len(v) > 1 && v[1] == 0 {
		return nil, fmt.Errorf("%w: null meta value", ErrCorrupt) // compact null: never written
	}
	out := slices.Clone(r.CompactBytes())
	if out == nil {
		out = []byte{}
	}
	return out, complete(r, "meta")
}

// The topic log and the coordinator before the global unit: a topic was
// "topic/<name>" → JSON, the meta "meta/<name>" → the bare value.
var (
	legacyTopicPrefix = []byte("topic/")
	legacyMetaPrefix  = []byte("meta/")
)

// legacyTopic is the JSON form of a topic before the global unit: version
// 1 with every partition on node 0, or 2 with Leaders.
type legacyTopic struct {
	V          int               `json:"v"`
	Name       string            `json:"name"`
	ID         string            `json:"id"` // 32 hex digits
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	Leaders    []int32           `json:"leaders,omitempty"`
}

// upgradeLegacyTopic converts a "topic/<name>" record.
func upgradeLegacyTopic(key, v []byte) (nk, nv []byte, err error) {
	var rec legacyTopic
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, nil, fmt.Errorf("%w: topic record %q: %v", ErrCorrupt, v, err)
	}
	name := string(key[len(legacyTopicPrefix):])
	var t Topic
	if id, err := hex.DecodeString(rec.ID); err != nil || len(id) != 16 || rec.Name != name {
		return nil, nil, fmt.Errorf("%w: topic record %q under %q", ErrCorrupt, v, key)
	} else {
		copy(t.ID[:], id)
	}
	switch {
	case rec.Partitions <= 0:
		return nil, nil, fmt.Errorf("%w: topic record %q: %d partitions", ErrCorrupt, v, rec.Partitions)
	case rec.V == 1 && rec.Leaders == nil:
		t.Leaders = make([]int32, rec.Partitions)
	case rec.V == 2 && len(rec.Leaders) == int(rec.Partitions):
		t.Leaders = rec.Leaders
	default:
		return nil, nil, fmt.Errorf("%w: topic record %q: version %d with %d leaders", ErrCorrupt, v, rec.V, len(rec.Leaders))
	}
	if len(rec.Configs) > 0 {
		t.Configs = rec.Configs
	}
	return TopicKey(name), t.Encode(), nil
}
