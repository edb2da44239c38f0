package node

import (
	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/topics"
)

// lagSource is what the lag metrics read of this node: the groups as the
// admin API's lag sampler last read them (the one reader of every
// group's offsets), and the partitions its topic log hosts. In cluster
// mode that is the groups of the shards this node holds, with their lag on
// every partition (remote holds the offsets of those other nodes lead),
// and the topic series of the partitions it leads: each node exports its
// own part, as each Kafka broker would.
type lagSource struct {
	api    *admin.API
	topics *topics.Log
	remote *remoteOffsets // nil on a single node
}

var _ admin.LagSource = lagSource{}

func (s lagSource) Groups(maxSeries int) ([]admin.GroupOffsets, int) {
	return s.api.Groups(maxSeries)
}

func (s lagSource) Remote() map[admin.TopicPartition]admin.PartitionOffsets {
	if s.remote == nil {
		return nil
	}
	return s.remote.get()
}

func (s lagSource) Partitions() map[admin.TopicPartition]admin.PartitionOffsets {
	out := map[admin.TopicPartition]admin.PartitionOffsets{}
	for _, t := range s.topics.Topics() {
		for i, p := range t.Partitions {
			if p == nil { // led by another node
				continue
			}
			start, end := p.Offsets()
			out[admin.TopicPartition{Topic: t.Name, Partition: int32(i)}] = admin.PartitionOffsets{Start: start, End: end}
		}
	}
	return out
}
