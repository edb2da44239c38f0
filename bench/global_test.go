package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkGlobalWrite is one CreateAcls of one binding, answered once
// durable: the cost of an admin write of the state every node shares
// (ACLs, credentials, organisations, quotas, topics). On one node on
// Pebble; on two nodes on a three-member etcd with every write to one
// node; and alternating between the two, where each write takes the
// global unit from the node that wrote last.
func BenchmarkGlobalWrite(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		n := testkit.StartNode(b, node.Config{Authorizer: true, SuperUsers: []string{"User:ANONYMOUS"}})
		globalWrites(b, []string{n.KafkaAddr()})
	})
	cluster := func(b *testing.B) []string {
		ec := etcdtest.StartProcs(b, 3)
		var addrs []string
		for id := int32(1); id <= 2; id++ {
			n := testkit.StartNode(b, node.Config{Authorizer: true, SuperUsers: []string{"User:ANONYMOUS"}, Cluster: &node.ClusterConfig{
				EtcdEndpoints: ec.Endpoints(), NodeID: id, LeaseTTL: 6 * time.Second,
			}})
			addrs = append(addrs, n.KafkaAddr())
		}
		return addrs
	}
	b.Run("cluster-one-node", func(b *testing.B) { globalWrites(b, cluster(b)[:1]) })
	b.Run("cluster-alternating", func(b *testing.B) { globalWrites(b, cluster(b)) })
}

// globalWrites sends b.N CreateAcls, the i-th to addrs[i % len(addrs)].
func globalWrites(b *testing.B, addrs []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var cls []*kgo.Client
	for _, a := range addrs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
			b.Fatal(err)
		}
		cls = append(cls, cl)
	}
	b.ResetTimer()
	for i := range b.N {
		req := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, fmt.Sprintf("t-%d", i), kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
		// To the seed itself: a client may send CreateAcls to any
		// broker it knows.
		raw, err := cls[i%len(cls)].SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if code := raw.(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != 0 {
			b.Fatal(kerr.ErrorForCode(code))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/write")
}
