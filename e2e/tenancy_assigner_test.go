package e2e

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/assigner"
	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/quota"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestTenancyAssigner: the warm-handoff assignment service keeps each
// organisation's groups apart. Services of acme, globex and the default
// organisation (client certificates, their subjects put in the
// organisations) register a consumer of the same name in a group of the
// same name on a topic of the same name, each organisation's topic with
// its own partition count: each is assigned all of its own
// organisation's partitions, none of another's. A default-organisation
// caller that names an organisation itself is refused.
func TestTenancyAssigner(t *testing.T) {
	n := startTenancyNode(t, node.Config{GRPCTLS: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parts := map[string]int32{"alice": 4, "bob": 2, "carol": 3} // acme, globex, default
	for user, p := range parts {
		_, adm := tenantClient(t, n, user)
		if r, err := adm.CreateTopic(ctx, p, 1, nil, "events"); err != nil || r.Err != nil {
			t.Fatalf("%s: create events: %v %v", user, err, r.Err)
		}
	}
	services := map[string]string{"acme-svc": "acme", "globex-svc": "globex", "plain-svc": ""}
	want := map[string]int32{"acme-svc": 4, "globex-svc": 2, "plain-svc": 3}
	clients := map[string]kafkaassignerpb.KafkaAssignerClient{}
	for svc, org := range services {
		if org != "" {
			if err := n.Orgs().SetMember(org, "User:CN="+svc); err != nil {
				t.Fatal(err)
			}
		}
		cert := n.CA.Client(t, svc, pkix.Name{CommonName: svc})
		cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(n.CA.ClientTLS(cert))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		clients[svc] = kafkaassignerpb.NewKafkaAssignerClient(cc)
	}
	inGroup := metadata.AppendToOutgoingContext(ctx, assigner.GroupMetadataKey, "orders")
	var mu sync.Mutex
	owned := map[string]map[uint32]bool{}
	for _, svc := range []string{"acme-svc", "globex-svc", "plain-svc"} {
		owned[svc] = map[uint32]bool{}
		stream, err := clients[svc].Register(inGroup, &kafkaassignerpb.RegisterRequest{ConsumerName: "c1", Topic: "events"})
		if err != nil {
			t.Fatalf("%s: register: %v", svc, err)
		}
		// The consumer: says it is ready for what it is told to warm,
		// and keeps what it is assigned.
		go func() {
			for {
				cmd, err := stream.Recv()
				if err != nil {
					return
				}
				switch x := cmd.Command.(type) {
				case *kafkaassignerpb.AssignmentCommand_Warm:
					go clients[svc].PartitionReady(inGroup, &kafkaassignerpb.PartitionReadyRequest{ConsumerName: "c1", Partition: x.Warm.GetPartition()})
				case *kafkaassignerpb.AssignmentCommand_Assignment:
					mu.Lock()
					for _, tp := range x.Assignment.GetAssigned() {
						if tp.GetTopic() != "events" || int32(tp.GetPartition()) >= want[svc] {
							t.Errorf("%s assigned %s/%d, not a partition of its organisation's events (%d partitions)", svc, tp.GetTopic(), tp.GetPartition(), want[svc])
						}
						owned[svc][tp.GetPartition()] = true
					}
					mu.Unlock()
				}
			}
		}()
	}
	testkit.Eventually(t, 30*time.Second, "each service owns all of its organisation's events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for svc, w := range want {
			if int32(len(owned[svc])) != w {
				return false
			}
		}
		return true
	})
	spoof := metadata.AppendToOutgoingContext(inGroup, assigner.OrgMetadataKey, "acme")
	if _, err := clients["plain-svc"].PartitionReady(spoof, &kafkaassignerpb.PartitionReadyRequest{ConsumerName: "c1", Partition: &kafkaassignerpb.TopicPartition{Topic: "events"}}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a default-organisation caller naming acme: %v, want PermissionDenied", err)
	}
}

// TestTenancyQuotas: an organisation's byte-rate quota throttles its own
// principals' connections and no other organisation's: alice (acme) and
// carol (default) produce the same records; only alice's produce
// responses carry a throttle, and the throttle counter grows for acme
// alone.
func TestTenancyQuotas(t *testing.T) {
	n := startTenancyNode(t, node.Config{HTTPListen: "127.0.0.1:0", QuotaWindow: quota.Window{Size: 100 * time.Millisecond, Samples: 2}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, admin := tenantClient(t, n, "admin") // the default organisation's
	setQuotas(t, admin, kmsg.StringPtr("acme"), map[string]float64{quota.ProducerByteRate: 1024})
	throttled := map[string]*throttleHook{}
	for _, user := range []string{"alice", "carol"} {
		hook := &throttleHook{}
		throttled[user] = hook
		prod, adm := tenantClient(t, n, user, kgo.WithHooks(hook), kgo.DefaultProduceTopic("rated"), kgo.ProducerBatchMaxBytes(4<<10))
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, "rated"); err != nil || r.Err != nil {
			t.Fatalf("%s: create: %v %v", user, err, r.Err)
		}
		value := make([]byte, 1024)
		var failed atomic.Int64
		for i := range 32 {
			prod.Produce(ctx, &kgo.Record{Value: value, Key: fmt.Append(nil, i)}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
			})
		}
		if err := prod.Flush(ctx); err != nil || failed.Load() != 0 {
			t.Fatalf("%s: flush: %v, %d records failed", user, err, failed.Load())
		}
	}
	if throttled["alice"].n.Load() == 0 {
		t.Error("acme's producer over its quota was never throttled")
	}
	if c := throttled["carol"].n.Load(); c != 0 {
		t.Errorf("the default organisation's producer was throttled %d times by acme's quota", c)
	}
	if got := throttledSeconds(t, n.Node, "acme", "produce"); got <= 0 {
		t.Errorf("cohort_quota_throttle_seconds_total{org=acme,kind=produce} = %v", got)
	}
	if got := throttledSeconds(t, n.Node, "default", "produce"); got != 0 {
		t.Errorf("cohort_quota_throttle_seconds_total{org=default,kind=produce} = %v, want 0", got)
	}
}
