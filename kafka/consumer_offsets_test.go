package kafka_test

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerOffsetsLeaders: in cluster mode, partition p of
// __consumer_offsets is led by shard p's coordinator; the node serves the
// partitions of the shards it holds, and answers the others
// NOT_LEADER_OR_FOLLOWER naming their leader (KIP-951), or
// LEADER_NOT_AVAILABLE in Metadata for a shard no live node owns.
func TestConsumerOffsetsLeaders(t *testing.T) {
	const shards = 6
	// Shard s is node s%3's: node 1's, node 2's, or nobody's.
	state := &clusterState{down: map[int32]bool{}, owner: func(shard int) (int32, bool) {
		return int32(shard % 3), shard%3 != 0
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().(*net.TCPAddr)
	state.brokers = []kafka.Broker{{NodeID: 1, Host: a.IP.String(), Port: int32(a.Port)}, {NodeID: 2, Host: "127.0.0.1", Port: 1}}
	c := fakeCluster{self: 1, state: state}
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	log, err := topics.Open(topics.Config{Dir: filepath.Join(t.TempDir(), "topics"), Store: st, NodeID: 1, Nodes: c.liveIDs, ClusterID: "test-cluster"})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := coordinator.Start(coordinator.Config{Shards: shards}, coordinator.Options{Store: st, Standby: true})
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s < shards; s += 3 {
		if err := groups.Load(s); err != nil {
			t.Fatal(err)
		}
	}
	s, err := kafka.New(kafka.Config{Topics: log, Groups: groups, Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s, ln, func() { log.Close() })
	cl := dial(t, ln.Addr().String())

	md := kmsg.NewPtrMetadataRequest()
	name := offsetstopic.Name
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
	mt := roundTrip[*kmsg.MetadataResponse](cl, 12, md).Topics[0]
	if !mt.IsInternal || len(mt.Partitions) != shards || mt.TopicID != offsetstopic.TopicID("test-cluster") {
		t.Fatalf("metadata: %+v", mt)
	}
	for _, p := range mt.Partitions {
		owner, ok := state.owner(int(p.Partition))
		switch {
		case !ok:
			wantCode(t, "partition without owner", p.ErrorCode, kerr.LeaderNotAvailable)
			if p.Leader != -1 {
				t.Errorf("partition %d: leader %d, want -1", p.Partition, p.Leader)
			}
		case p.Leader != owner || p.ErrorCode != 0:
			t.Errorf("partition %d: leader %d code %d, want %d", p.Partition, p.Leader, p.ErrorCode, owner)
		}
	}

	// Fetch by topic id (v13+), as clients do.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxBytes, fetch.MaxWaitMillis = 1<<20, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = mt.TopicID
	for p := range int32(shards) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = append(fetch.Topics, ft)
	resp := roundTrip[*kmsg.FetchResponse](cl, 16, fetch)
	for _, p := range resp.Topics[0].Partitions {
		owner, ok := state.owner(int(p.Partition))
		switch {
		case ok && owner == 1:
			if p.ErrorCode != 0 || p.HighWatermark < 0 {
				t.Errorf("own partition %d: code %d hw %d", p.Partition, p.ErrorCode, p.HighWatermark)
			}
		case ok:
			wantCode(t, "another node's partition", p.ErrorCode, kerr.NotLeaderForPartition)
			if p.CurrentLeader.LeaderID != owner {
				t.Errorf("partition %d: leader hint %d, want %d", p.Partition, p.CurrentLeader.LeaderID, owner)
			}
		default:
			wantCode(t, "a partition nobody owns", p.ErrorCode, kerr.NotLeaderForPartition)
		}
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 2 {
		t.Errorf("endpoints %+v, want node 2's", resp.Brokers)
	}
}
