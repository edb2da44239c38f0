package node_test

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/loadgen"
	"github.com/cohort-dev/cohort/node"
)

// answeredBrokers asks the node at addr for Metadata and
// DescribeCluster and returns the node ids each lists.
func answeredBrokers(t *testing.T, addr string) (metadata, describe []int32) {
	t.Helper()
	c, err := loadgen.Dial(addr, "brokers-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	md, err := loadgen.Do[*kmsg.MetadataResponse](c, 12, kmsg.NewPtrMetadataRequest())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		metadata = append(metadata, b.NodeID)
	}
	dc, err := loadgen.Do[*kmsg.DescribeClusterResponse](c, 0, kmsg.NewPtrDescribeClusterRequest())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range dc.Brokers {
		describe = append(describe, b.NodeID)
	}
	slices.Sort(metadata)
	slices.Sort(describe)
	return metadata, describe
}

// TestClusterBrokersFromFirstAnswer: a node started in a cluster lists
// every node started before it, and itself, in its first Metadata and
// DescribeCluster answers, and the others list it soon after. It used to
// list only itself until its cluster loop's first read, and a client
// bootstrapped from it kept that (one broker) for its metadata max age.
func TestClusterBrokersFromFirstAnswer(t *testing.T) {
	ec := etcdtest.StartProcs(t, 1)
	var nodes []*node.Node
	var want []int32
	for id := int32(1); id <= 3; id++ {
		n := testkit.StartNode(t, node.Config{Cluster: &node.ClusterConfig{
			EtcdEndpoints: ec.Endpoints(), NodeID: id, LeaseTTL: 2 * time.Second,
		}})
		nodes = append(nodes, n)
		want = append(want, id)
		if md, dc := answeredBrokers(t, n.KafkaAddr()); !slices.Equal(md, want) || !slices.Equal(dc, want) {
			t.Errorf("node %d's first answers list %v (Metadata) and %v (DescribeCluster); want %v", id, md, dc, want)
		}
		for _, other := range nodes {
			testkit.Eventually(t, 5*time.Second, "every node lists every node started", func() bool {
				md, dc := answeredBrokers(t, other.KafkaAddr())
				return slices.Equal(md, want) && slices.Equal(dc, want)
			})
		}
	}
}
