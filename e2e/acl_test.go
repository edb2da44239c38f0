package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclUsers are the users of the ACL tests: admin is the super user.
var aclUsers = map[string]string{"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}

// startACLNode starts a node with authorization on, User:admin its
// super user, and aclUsers.
func startACLNode(t *testing.T) *testkit.SecureNode {
	t.Helper()
	return testkit.StartSecureNode(t, node.Config{Authorizer: true, SuperUsers: []string{"User:admin"}}, aclUsers)
}

// aclClient is a kadm client of user over SASL_PLAINTEXT (SCRAM-SHA-256).
func aclClient(t *testing.T, n *testkit.SecureNode, user string, extra ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(secureClientOpts(t, n, "SASL_PLAINTEXT", "SCRAM-SHA-256", user, aclUsers[user], extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func TestACLAPIs(t *testing.T) {
	n := startACLNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, admin := aclClient(t, n, "admin")
	_, alice := aclClient(t, n, "alice")

	// alice may neither create nor describe ACLs: CLUSTER ALTER and
	// DESCRIBE are nobody's but the super user's yet.
	res, err := alice.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice CreateACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, res)
	}
	all := kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	if d, err := alice.DescribeACLs(ctx, all); err != nil || len(d) == 0 || !errors.Is(d[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice DescribeACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, d)
	}

	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead),
		kadm.NewACLs().Groups("app-").Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Topics("*").Deny("User:bob").Operations(kadm.OpAll),
		kadm.NewACLs().Clusters().Allow("User:alice").Operations(kadm.OpDescribe),
	} {
		res, err := admin.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("admin CreateACLs %+v: %v %s", r, r.Err, r.ErrMessage)
			}
		}
	}

	// Kafka's validation: the cluster has one name, a principal has a
	// type, a pattern is LITERAL or PREFIXED.
	bad := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
		p    string
	}{
		{kmsg.ACLResourceTypeCluster, "not-the-cluster", kmsg.ACLResourcePatternTypeLiteral, "User:alice"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "alice"},
		{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeMatch, "User:alice"},
		{kmsg.ACLResourceTypeTopic, "", kmsg.ACLResourcePatternTypeLiteral, "User:alice"},
	} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType, cr.Principal = c.rt, c.name, c.pt, c.p
		cr.Host, cr.Operation, cr.PermissionType = "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		bad.Creations = append(bad.Creations, cr)
	}
	rawAdmin, _ := aclClient(t, n, "admin")
	resp, err := bad.RequestWith(ctx, rawAdmin)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("invalid creation %d: code %d, want INVALID_REQUEST", i, r.ErrorCode)
		}
	}

	// alice, with CLUSTER DESCRIBE now, describes; a MATCH filter on
	// topic orders finds the literal ACL and the wildcard one.
	d, err := alice.DescribeACLs(ctx, kadm.NewACLs().Topics("orders").Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternMatch))
	if err != nil || len(d) != 1 || d[0].Err != nil {
		t.Fatalf("alice DescribeACLs: %v %+v", err, d)
	}
	got := map[string]bool{}
	for _, a := range d[0].Described {
		got[a.Name+" "+a.Principal+" "+a.Operation.String()+" "+a.Permission.String()] = true
	}
	want := map[string]bool{"orders User:alice READ ALLOW": true, "* User:bob ALL DENY": true}
	if len(got) != len(want) || !got["orders User:alice READ ALLOW"] || !got["* User:bob ALL DENY"] {
		t.Fatalf("MATCH orders described %v, want %v", got, want)
	}
	// But alice may not delete (CLUSTER ALTER).
	if dr, err := alice.DeleteACLs(ctx, all); err != nil || len(dr) == 0 || !errors.Is(dr[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice DeleteACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, dr)
	}

	// admin deletes the prefixed group ACL; the rest stay.
	dr, err := admin.DeleteACLs(ctx, kadm.NewACLs().Groups("app-").Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil || len(dr) != 1 || dr[0].Err != nil || len(dr[0].Deleted) != 1 || dr[0].Deleted[0].Name != "app-" {
		t.Fatalf("admin DeleteACLs app-: %v %+v", err, dr)
	}
	d, err = admin.DescribeACLs(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, r := range d {
		if r.Err != nil {
			t.Fatalf("admin DescribeACLs: %v", r.Err)
		}
		count += len(r.Described)
	}
	if count != 3 {
		t.Fatalf("%d ACLs left, want 3: %+v", count, d)
	}
}

// TestACLAPIsWithoutAuthorizer: as Kafka without an authorizer, the ACL
// APIs answer SECURITY_DISABLED.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:a").Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("CreateACLs: %v %+v, want SECURITY_DISABLED", err, res)
	}
	d, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(d) == 0 || !errors.Is(d[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeACLs: %v %+v, want SECURITY_DISABLED", err, d)
	}
}
