package security_test

import (
	"fmt"
	"testing"

	"github.com/cohort-dev/cohort/internal/globaltest"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/store/memstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	txnID   = kmsg.ACLResourceTypeTransactionalId
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
)

func acl(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) record.ACL {
	return record.ACL{ResourceType: int8(rt), PatternType: int8(pt), Name: name, Principal: principal, Host: host, Operation: int8(op), Permission: int8(perm)}
}

func TestAuthorizerRules(t *testing.T) {
	st := memstore.New(memstore.Options{})
	u := globaltest.Start(t, st)
	az, err := security.NewAuthorizer(security.AuthorizerConfig{Global: u, SuperUsers: []string{"User:root"}})
	if err != nil {
		t.Fatal(err)
	}
	acls := []record.ACL{
		acl(topic, literal, "orders", "User:alice", "*", kmsg.ACLOperationRead, allow),
		acl(topic, prefix, "pay-", "User:alice", "*", kmsg.ACLOperationWrite, allow),
		acl(topic, prefix, "pay-secret", "User:alice", "*", kmsg.ACLOperationAll, deny),
		acl(topic, literal, "*", "User:*", "*", kmsg.ACLOperationDescribeConfigs, allow),
		acl(group, literal, "g1", "User:alice", "10.0.0.1", kmsg.ACLOperationRead, allow),
		acl(group, literal, "g2", "User:alice", "*", kmsg.ACLOperationDescribe, allow),
		acl(group, literal, "g2", "User:alice", "*", kmsg.ACLOperationRead, deny),
		acl(cluster, literal, security.ClusterName, "User:*", "*", kmsg.ACLOperationAlter, allow),
		acl(txnID, literal, "tx", "User:alice", "*", kmsg.ACLOperationWrite, allow),
	}
	if err := az.CreateACLs(acls); err != nil {
		t.Fatal(err)
	}
	alice := security.Request{Principal: security.User("alice"), Host: "/127.0.0.1"}
	for _, tc := range []struct {
		r    security.Request
		op   kmsg.ACLOperation
		typ  kmsg.ACLResourceType
		name string
		want bool
	}{
		{alice, kmsg.ACLOperationRead, topic, "orders", true},
		{alice, kmsg.ACLOperationDescribe, topic, "orders", true}, // implied by READ
		{alice, kmsg.ACLOperationWrite, topic, "orders", false},
		{alice, kmsg.ACLOperationWrite, topic, "pay-in", true}, // prefixed
		{alice, kmsg.ACLOperationDescribe, topic, "pay-in", true},
		{alice, kmsg.ACLOperationWrite, topic, "pay-secret-1", false},         // DENY ALL wins
		{alice, kmsg.ACLOperationDescribeConfigs, topic, "pay-secret", false}, // DENY ALL denies what "*" allows
		{alice, kmsg.ACLOperationDescribeConfigs, topic, "other", true},       // wildcard resource and principal
		{alice, kmsg.ACLOperationRead, topic, "other", false},
		{alice, kmsg.ACLOperationRead, topic, "nothing-matches", false}, // "*" matches: not "no ACL found"
		{alice, kmsg.ACLOperationRead, group, "g1", false},              // wrong host
		{security.Request{Principal: security.User("alice"), Host: "10.0.0.1"}, kmsg.ACLOperationRead, group, "g1", true},
		{alice, kmsg.ACLOperationDescribe, group, "g2", true},
		{alice, kmsg.ACLOperationRead, group, "g2", false}, // DENY READ
		{alice, kmsg.ACLOperationRead, group, "g3", false}, // no ACL, allowIfNone false
		{alice, kmsg.ACLOperationDescribe, cluster, security.ClusterName, true},
		{alice, kmsg.ACLOperationDescribe, txnID, "tx", true},
		{security.Request{Principal: security.User("bob")}, kmsg.ACLOperationRead, topic, "orders", false},
		{security.Request{Principal: security.User("root")}, kmsg.ACLOperationDelete, group, "g2", true}, // super user
	} {
		if got := az.Authorize(tc.r, tc.op, tc.typ, tc.name); got != tc.want {
			t.Errorf("%s %v %v %q: got %v, want %v", tc.r.Principal, tc.op, tc.typ, tc.name, got, tc.want)
		}
	}
	if got, want := az.AuthorizedOperations(alice, group, "g2"), int32(1<<kmsg.ACLOperationDescribe); got != want {
		t.Errorf("authorized operations on g2: %b, want %b", got, want)
	}

	// The ACLs are the store's: a new authorizer of a unit that loads
	// them again (a restart) sees them.
	u.Close()
	az2, err := security.NewAuthorizer(security.AuthorizerConfig{Global: globaltest.Start(t, st), AllowEveryoneIfNoACLFound: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(az2.ACLs(security.Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny})) != len(acls) {
		t.Fatal("a new authorizer does not see every stored ACL")
	}
	if !az2.Authorize(alice, kmsg.ACLOperationRead, group, "g3") || az2.Authorize(alice, kmsg.ACLOperationRead, group, "g2") {
		t.Error("allow.everyone.if.no.acl.found: g3 (no ACL) must be allowed, g2 (ACLs) not")
	}

	// DeleteACLs with a MATCH filter takes the ACLs that apply to
	// pay-secret-1: the prefixed ones and the "*" one.
	name := "pay-secret-1"
	deleted, err := az2.DeleteACLs([]security.Filter{{ResourceType: topic, Name: &name, PatternType: kmsg.ACLResourcePatternTypeMatch,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}})
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted[0]) != 3 {
		t.Fatalf("MATCH pay-secret-1 deleted %v, want the 2 prefixed ACLs and the wildcard", deleted[0])
	}
	// No ACL is left for pay-in: allow.everyone.if.no.acl.found
	// decides, where alice's READ on it was refused by the "*" ACL.
	if !az2.Authorize(alice, kmsg.ACLOperationRead, topic, "pay-in") {
		t.Error("a deleted ACL still decides")
	}
	az3, err := security.NewAuthorizer(security.AuthorizerConfig{Global: globaltest.Start(t, st)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(az3.ACLs(security.Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny})); n != len(acls)-3 {
		t.Errorf("after the deletion a reloaded unit has %d ACLs, want %d", n, len(acls)-3)
	}
}

func TestValidateACL(t *testing.T) {
	ok := acl(topic, literal, "t", "User:a", "*", kmsg.ACLOperationRead, allow)
	if msg := security.ValidateACL(ok); msg != "" {
		t.Fatalf("valid ACL refused: %s", msg)
	}
	for _, bad := range []func(*record.ACL){
		func(a *record.ACL) { a.ResourceType = int8(kmsg.ACLResourceTypeAny) },
		func(a *record.ACL) { a.PatternType = int8(kmsg.ACLResourcePatternTypeMatch) },
		func(a *record.ACL) { a.Operation = int8(kmsg.ACLOperationAny) },
		func(a *record.ACL) { a.Permission = int8(kmsg.ACLPermissionTypeAny) },
		func(a *record.ACL) { a.Name = "" },
		func(a *record.ACL) { a.Principal = "alice" },
		func(a *record.ACL) { a.ResourceType, a.Name = int8(cluster), "c" },
	} {
		a := ok
		bad(&a)
		if security.ValidateACL(a) == "" {
			t.Errorf("invalid ACL %+v accepted", a)
		}
	}
}

// BenchmarkAuthorize is one check against 1,000 ACLs (half LITERAL, half
// PREFIXED topic ACLs of 100 principals): the cost every Produce, Fetch
// and commit pays per topic with authorization on.
func BenchmarkAuthorize(b *testing.B) {
	az, err := security.NewAuthorizer(security.AuthorizerConfig{Global: globaltest.Start(b, nil)})
	if err != nil {
		b.Fatal(err)
	}
	var acls []record.ACL
	for i := range 1000 {
		pt := literal
		if i%2 == 1 {
			pt = prefix
		}
		acls = append(acls, acl(topic, pt, fmt.Sprintf("topic-%d", i), fmt.Sprintf("User:u%d", i%100), "*", kmsg.ACLOperationRead, allow))
	}
	if err := az.CreateACLs(acls); err != nil {
		b.Fatal(err)
	}
	r := security.Request{Principal: security.User("u42"), Host: "/127.0.0.1"}
	b.ReportAllocs()
	for b.Loop() {
		if !az.Authorize(r, kmsg.ACLOperationDescribe, topic, "topic-42") {
			b.Fatal("refused")
		}
	}
}

// TestAuthorizerTenants: an organisation's ACLs apply to its principals
// only, even where they name another organisation's principal; "no ACL
// found" is counted per organisation; filters select one organisation's;
// super users are every organisation's operators.
func TestAuthorizerTenants(t *testing.T) {
	st := memstore.New(memstore.Options{})
	u := globaltest.Start(t, st)
	az, err := security.NewAuthorizer(security.AuthorizerConfig{Global: u, SuperUsers: []string{"User:root"}})
	if err != nil {
		t.Fatal(err)
	}
	inAcme := func(a record.ACL) record.ACL { a.Tenant = "acme"; return a }
	acls := []record.ACL{
		inAcme(acl(topic, literal, "events", "User:alice", "*", kmsg.ACLOperationRead, allow)),
		inAcme(acl(topic, literal, "events", "User:bob", "*", kmsg.ACLOperationRead, allow)),
		inAcme(acl(topic, literal, "*", "User:*", "*", kmsg.ACLOperationWrite, allow)),
		inAcme(acl(group, prefix, "ord", "User:*", "*", kmsg.ACLOperationRead, allow)),
		acl(topic, literal, "events", "User:carol", "*", kmsg.ACLOperationRead, allow), // the default organisation's
	}
	if err := az.CreateACLs(acls); err != nil {
		t.Fatal(err)
	}
	alice := security.Request{Principal: security.User("alice"), Host: "127.0.0.1", Tenant: "acme"}
	bob := security.Request{Principal: security.User("bob"), Host: "127.0.0.1", Tenant: "globex"}
	carol := security.Request{Principal: security.User("carol"), Host: "127.0.0.1"}
	aliceDefault := security.Request{Principal: security.User("alice"), Host: "127.0.0.1"} // as if in the default organisation
	root := security.Request{Principal: security.User("root"), Host: "127.0.0.1", Tenant: "globex"}
	for _, tc := range []struct {
		who  string
		r    security.Request
		op   kmsg.ACLOperation
		typ  kmsg.ACLResourceType
		name string
		want bool
	}{
		{"alice", alice, kmsg.ACLOperationRead, topic, "events", true},
		{"alice", alice, kmsg.ACLOperationWrite, topic, "other", true},
		{"alice", alice, kmsg.ACLOperationRead, group, "orders", true},
		{"bob, named by acme's ACL", bob, kmsg.ACLOperationRead, topic, "events", false},
		{"bob, User:* of acme", bob, kmsg.ACLOperationWrite, topic, "events", false},
		{"bob, prefixed of acme", bob, kmsg.ACLOperationRead, group, "orders", false},
		{"carol", carol, kmsg.ACLOperationRead, topic, "events", true},
		{"carol, User:* of acme", carol, kmsg.ACLOperationWrite, topic, "events", false},
		{"alice in the default organisation", aliceDefault, kmsg.ACLOperationRead, topic, "events", false},
		{"root, a super user", root, kmsg.ACLOperationDelete, topic, "events", true},
	} {
		if got := az.Authorize(tc.r, tc.op, tc.typ, tc.name); got != tc.want {
			t.Errorf("%s: %v on %v %q = %v, want %v", tc.who, tc.op, tc.typ, tc.name, got, tc.want)
		}
	}
	if az.AuthorizeByResourceType(bob, kmsg.ACLOperationWrite, topic) {
		t.Error("bob may WRITE some topic through acme's User:* ACL")
	}
	if !az.AuthorizeByResourceType(alice, kmsg.ACLOperationWrite, topic) {
		t.Error("alice may WRITE no topic")
	}

	// "No ACL found" is per organisation: globex has none, acme some.
	open, err := security.NewAuthorizer(security.AuthorizerConfig{Global: u, AllowEveryoneIfNoACLFound: true})
	if err != nil {
		t.Fatal(err)
	}
	if !open.Authorize(bob, kmsg.ACLOperationRead, topic, "events") {
		t.Error("allow-if-none: bob refused on globex's events, which no globex ACL covers")
	}
	if open.Authorize(alice, kmsg.ACLOperationDelete, topic, "events") {
		t.Error("allow-if-none: alice allowed DELETE on acme's events, which acme's ACLs cover")
	}

	everything := func(tenant string) security.Filter {
		return security.Filter{Tenant: tenant, ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	}
	if got := len(az.ACLs(everything("acme"))); got != 4 {
		t.Errorf("acme's filter selects %d ACLs, want 4", got)
	}
	if got := len(az.ACLs(everything(""))); got != 1 {
		t.Errorf("the default organisation's filter selects %d ACLs, want 1", got)
	}
	deleted, err := az.DeleteACLs([]security.Filter{everything("globex")})
	if err != nil || len(deleted[0]) != 0 {
		t.Fatalf("globex's delete-all took %v, %v; want nothing", deleted, err)
	}
	deleted, err = az.DeleteACLs([]security.Filter{everything("")})
	if err != nil || len(deleted[0]) != 1 || len(az.ACLs(everything("acme"))) != 4 {
		t.Fatalf("the default organisation's delete-all took %v, %v, leaving acme %d", deleted, err, len(az.ACLs(everything("acme"))))
	}
}
