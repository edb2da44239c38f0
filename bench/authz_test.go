package bench

import (
	"fmt"
	"testing"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The cost of authorization: BenchmarkSecurityProduce's and
// BenchmarkSecurityCommit's workloads over SASL_PLAINTEXT (principal
// User:bench) against a node without an authorizer and against one with
// --authorizer and 1,000 ACLs, of which the few that grant User:bench its
// topic and groups decide, and others match the same resources (a
// wildcard, a prefixed DENY of another principal), so that each check
// walks more than the one ACL it needs.
//
//	go test ./bench -run '^$' -bench 'Authorizer' -benchtime 5s -count 3

// benchACLs is how many ACLs the authorizing node holds.
const benchACLs = 1000

// authzNode starts a node with authorization on, User:ANONYMOUS (the
// PLAINTEXT listener, which sets up the topic) a super user, and
// benchACLs ACLs.
func authzNode(b *testing.B) *testkit.SecureNode {
	n := testkit.StartSecureNode(b, node.Config{Authorizer: true, SuperUsers: []string{"User:ANONYMOUS"}},
		map[string]string{"bench": "bench-pw"})
	ctx := benchContext(b)
	adm := kadm.NewClient(newClient(b, []kgo.Opt{kgo.SeedBrokers(n.Addr("PLAINTEXT"))}))
	names := func(prefix string, count int) []string {
		out := make([]string, count)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	builders := []*kadm.ACLBuilder{
		// What User:bench needs: 3 ACLs.
		kadm.NewACLs().Topics(topicName).Allow("User:bench").Operations(kadm.OpRead, kadm.OpWrite),
		kadm.NewACLs().Groups("sec-commit-").Allow("User:bench").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		// Others matching the same resources: 3.
		kadm.NewACLs().Topics(topicName).Deny("User:mallory").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Groups("sec-").Deny("User:mallory").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternPrefixed),
		kadm.NewACLs().Topics("*").Allow("User:monitor").Operations(kadm.OpDescribe),
		// Unrelated: 400 + 400 + 194.
		kadm.NewACLs().Topics(names("t-", 200)...).Allow("User:u1", "User:u2").Operations(kadm.OpRead),
		kadm.NewACLs().Groups(names("g-", 400)...).Allow("User:u3").Operations(kadm.OpRead),
		kadm.NewACLs().Topics(names("p-", 97)...).Allow("User:u4").Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
	}
	for _, bl := range builders {
		res, err := adm.CreateACLs(ctx, bl)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatalf("create ACL %+v: %v", r, r.Err)
			}
		}
	}
	d, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		b.Fatal(err)
	}
	count := 0
	for _, r := range d {
		count += len(r.Described)
	}
	if count != benchACLs {
		b.Fatalf("%d ACLs, want %d", count, benchACLs)
	}
	return n
}

var authzModes = []struct {
	name  string
	start func(*testing.B) *testkit.SecureNode
}{
	{"off", securityNode},
	{"on-1000-acls", authzNode},
}

// BenchmarkAuthorizerProduce: BenchmarkSecurityProduce over
// SASL_PLAINTEXT, authorization off and on.
func BenchmarkAuthorizerProduce(b *testing.B) {
	for _, m := range authzModes {
		b.Run(m.name, func(b *testing.B) { benchSecureProduce(b, m.start(b), "SASL_PLAINTEXT") })
	}
}

// BenchmarkAuthorizerCommit: BenchmarkSecurityCommit over SASL_PLAINTEXT,
// authorization off and on.
func BenchmarkAuthorizerCommit(b *testing.B) {
	for _, m := range authzModes {
		b.Run(m.name, func(b *testing.B) { benchSecureCommit(b, m.start(b), "SASL_PLAINTEXT") })
	}
}
