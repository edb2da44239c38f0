package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/topics"
)

// lagSource reads the lag metrics' inputs from this node: the groups its
// coordinator serves (through the same group APIs a client uses: ListGroups,
// DescribeGroups, ConsumerGroupDescribe, OffsetFetch), and the partitions
// its topic log hosts. In cluster mode that is the groups of the shards
// this node holds, with their lag on every partition (remote holds the
// offsets of those other nodes lead), and the topic series of the
// partitions it leads: each node exports its own part, as each Kafka
// broker would.
//
// It holds the coordinator and the log themselves, not the node: a
// reading started by the last scrape may still run while the node shuts
// down, and a closed coordinator answers NOT_COORDINATOR.
type lagSource struct {
	co     *coordinator.Coordinator
	topics *topics.Log
	remote *remoteOffsets // nil on a single node
}

func (s lagSource) Remote() map[admin.TopicPartition]admin.PartitionOffsets {
	if s.remote == nil {
		return nil
	}
	return s.remote.get()
}

var _ admin.LagSource = lagSource{}

func (s lagSource) handle(ctx context.Context, req kmsg.Request) kmsg.Response {
	return s.co.Handle(ctx, coordinator.Request{Msg: req, ClientID: "cohort-metrics"})()
}

func (s lagSource) Groups(ctx context.Context) ([]admin.GroupOffsets, error) {
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	lresp := s.handle(ctx, lreq).(*kmsg.ListGroupsResponse)
	if err := kerr.ErrorForCode(lresp.ErrorCode); err != nil {
		return nil, fmt.Errorf("ListGroups: %w", err)
	}
	var classic, consumer []string
	for _, g := range lresp.Groups {
		if g.GroupType == "consumer" {
			consumer = append(consumer, g.Group)
		} else {
			classic = append(classic, g.Group)
		}
	}
	members := map[string]int{}
	if len(classic) > 0 {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = 5, classic
		for _, g := range s.handle(ctx, req).(*kmsg.DescribeGroupsResponse).Groups {
			members[g.Group] = len(g.Members)
		}
	}
	if len(consumer) > 0 {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = consumer
		for _, g := range s.handle(ctx, req).(*kmsg.ConsumerGroupDescribeResponse).Groups {
			members[g.Group] = len(g.Members)
		}
	}
	var out []admin.GroupOffsets
	names := append(classic, consumer...)
	if len(names) == 0 {
		return nil, nil
	}
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 8
	for _, name := range names {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = name // Topics nil: every committed offset
		freq.Groups = append(freq.Groups, rg)
	}
	for _, g := range s.handle(ctx, freq).(*kmsg.OffsetFetchResponse).Groups {
		if g.ErrorCode != 0 {
			continue // moved away meanwhile, or loading: next scrape
		}
		gl := admin.GroupOffsets{Group: g.Group, Members: members[g.Group], Committed: map[admin.TopicPartition]int64{}}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 && p.Offset >= 0 {
					gl.Committed[admin.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Offset
				}
			}
		}
		out = append(out, gl)
	}
	return out, nil
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
