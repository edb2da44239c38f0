package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestClusterGlobalUnit: ACLs, SCRAM credentials and client quotas are
// the global unit's records, which any node writes and every node's
// views replay. franz-go, pinned to one node per request, writes on both
// nodes in turn (each write fences the other node's hold on the unit, so
// none is lost) and reads every change back from the other node; a user
// deleted on one node no longer authenticates on the other.
func TestClusterGlobalUnit(t *testing.T) {
	c := startCluster(t, 1, 2, "--authorizer", "--super-users", "User:ANONYMOUS;User:alice",
		"--kafka-listen", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	on := func(node int32, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := cl.Broker(int(node)).Request(ctx, req)
		if err != nil {
			t.Fatalf("node %d: %v", node, err)
		}
		return resp
	}
	createACL := func(node int32, topic string) {
		t.Helper()
		req := kmsg.NewPtrCreateACLsRequest()
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:bob", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
		if r := on(node, req).(*kmsg.CreateACLsResponse).Results[0]; r.ErrorCode != 0 {
			t.Fatalf("create ACL on node %d: %v", node, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	aclTopics := func(node int32) []string {
		t.Helper()
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp := on(node, req).(*kmsg.DescribeACLsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("describe ACLs on node %d: %v", node, kerr.ErrorForCode(resp.ErrorCode))
		}
		var out []string
		for _, r := range resp.Resources {
			out = append(out, r.ResourceName)
		}
		slices.Sort(out)
		return out
	}

	// Writes alternate between the nodes, each on the unit as the other
	// left it; each node reads its own at once.
	var want []string
	for i := range 6 {
		node := int32(i%2 + 1)
		topic := fmt.Sprintf("t%d", i)
		createACL(node, topic)
		want = append(want, topic)
		if got := aclTopics(node); !slices.Equal(got, want) {
			t.Fatalf("node %d after its own write: ACLs of %v, want %v", node, got, want)
		}
	}
	for _, node := range []int32{1, 2} {
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("node %d has every node's ACLs", node), func() bool {
			return slices.Equal(aclTopics(node), want)
		})
	}

	// A deletion on node 2 reaches node 1.
	delACL := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	name := "t0"
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeLiteral
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	delACL.Filters = append(delACL.Filters, f)
	if r := on(2, delACL).(*kmsg.DeleteACLsResponse).Results[0]; r.ErrorCode != 0 || len(r.MatchingACLs) != 1 {
		t.Fatalf("delete on node 2: %v, %d matched", kerr.ErrorForCode(r.ErrorCode), len(r.MatchingACLs))
	}
	testkit.Eventually(t, 30*time.Second, "node 1 loses the deleted ACL", func() bool {
		return slices.Equal(aclTopics(1), want[1:])
	})

	// A SCRAM user made on node 1 is listed on node 2.
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "alice", 2, 8192, []byte("salt-salt-salt"), make([]byte, 64)
	alter.Upsertions = append(alter.Upsertions, up)
	if r := on(1, alter).(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0]; r.ErrorCode != 0 {
		t.Fatalf("alter credentials on node 1: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	testkit.Eventually(t, 30*time.Second, "node 2 lists alice's credential", func() bool {
		resp := on(2, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		for _, r := range resp.Results {
			if r.User == "alice" && r.ErrorCode == 0 && len(r.CredentialInfos) == 1 && r.CredentialInfos[0].Iterations == 8192 {
				return true
			}
		}
		return false
	})

	// alice, made on node 1 with a password, authenticates on node 2's
	// SASL listener; deleted on node 1, she cannot, at once: a lookup
	// reads the store, not a view that may lag.
	adm := kadm.NewClient(cl)
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"}}); err != nil {
		t.Fatal(err)
	}
	saslListener := regexp.MustCompile(`msg="cohort listening" kafka=(\S+) listener=SASL_PLAINTEXT`)
	m := saslListener.FindStringSubmatch(c.node(2).Log())
	if m == nil {
		t.Fatalf("node 2 logged no SASL_PLAINTEXT listener:\n%s", c.node(2).Log())
	}
	authenticates := func() error {
		sc, err := kgo.NewClient(kgo.SeedBrokers(m[1]), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()))
		if err != nil {
			return err
		}
		defer sc.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, sc)
		return err
	}
	if err := authenticates(); err != nil {
		t.Fatalf("alice on node 2: %v", err)
	}
	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "alice", 1
	del.Deletions = append(del.Deletions, d)
	if r := on(1, del).(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0]; r.ErrorCode != 0 {
		t.Fatalf("delete alice on node 1: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if err := authenticates(); err == nil {
		t.Fatal("alice, deleted on node 1, still authenticates on node 2")
	}

	// A quota set on node 2 is described on node 1.
	aq := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
	org := "default"
	ec.Type, ec.Name = "org", &org
	e.Entity = append(e.Entity, ec)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "max_groups", 42
	e.Ops = append(e.Ops, op)
	aq.Entries = append(aq.Entries, e)
	if r := on(2, aq).(*kmsg.AlterClientQuotasResponse).Entries[0]; r.ErrorCode != 0 {
		t.Fatalf("alter quotas on node 2: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	testkit.Eventually(t, 30*time.Second, "node 1 describes the quota", func() bool {
		dq := kmsg.NewPtrDescribeClientQuotasRequest()
		comp := kmsg.NewDescribeClientQuotasRequestComponent()
		comp.EntityType, comp.MatchType = "org", 2 // any entity of the type
		dq.Components = append(dq.Components, comp)
		resp := on(1, dq).(*kmsg.DescribeClientQuotasResponse)
		for _, en := range resp.Entries {
			for _, v := range en.Values {
				if v.Key == "max_groups" && v.Value == 42 {
					return true
				}
			}
		}
		return false
	})

	// Configs: one group's configs set on both nodes, each one key on the
	// unit as the other left it, so both stay; a cluster-wide broker
	// default set on node 1 is in force on node 2.
	groupConfig := func(node int32, name, value string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "shared"
		if name == "max.connections.per.ip" {
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
		}
		e := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		e.Name, e.Value = name, kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, e)
		req.Resources = append(req.Resources, rr)
		if r := on(node, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != 0 {
			t.Fatalf("alter %s on node %d: %v", name, node, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	groupConfig(1, "consumer.session.timeout.ms", "55000")
	groupConfig(2, "consumer.heartbeat.interval.ms", "6000")
	groupConfig(1, "max.connections.per.ip", "777")
	describe := func(node int32, typ kmsg.ConfigResourceType, name string) map[string]string {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		req.Resources = append(req.Resources, rr)
		out := map[string]string{}
		for _, c := range on(node, req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
			if c.Source != kmsg.ConfigSourceDefaultConfig && c.Source != kmsg.ConfigSourceStaticBrokerConfig && c.Value != nil {
				out[c.Name] = *c.Value
			}
		}
		return out
	}
	for _, node := range []int32{1, 2} {
		testkit.Eventually(t, 30*time.Second, fmt.Sprintf("node %d has both nodes' group configs and the broker default", node), func() bool {
			g := describe(node, kmsg.ConfigResourceTypeGroupConfig, "shared")
			b := describe(node, kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(node)))
			return g["consumer.session.timeout.ms"] == "55000" && g["consumer.heartbeat.interval.ms"] == "6000" && b["max.connections.per.ip"] == "777"
		})
	}
}
