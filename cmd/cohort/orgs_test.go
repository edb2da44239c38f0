package main

import (
	"context"
	"crypto/tls"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	adminapi "github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// TestOrgs: cohort orgs create, add-member, list, remove-member and
// delete against a real node's admin listener, with the admin token and
// with a super user's password; their refusals (a duplicate, a missing
// organisation, a caller who is not an operator) exit 1 with the API's
// message. Then cohort groups list and describe with --admin-url as alice
// (acme) show acme's cgp_ id and RRL for a group named orders that the
// default organisation and acme both have, each seeing its own over the
// Kafka protocol too.
func TestOrgs(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{
		HTTPListen: "127.0.0.1:0", AdminToken: "tok", SuperUsers: []string{"User:ops"},
		LagSampleInterval: 50 * time.Millisecond, FailedAuthenticationDelay: -1,
	}, map[string]string{"alice": "alice-pw", "ops": "ops-pw"})
	admin := "http://" + n.HTTPAddr()
	asToken := []string{"--admin-url", admin, "--admin-token", "tok"}
	asOps := []string{"--admin-url", admin, "--user", "ops", "--password", "ops-pw"}
	asAlice := []string{"--admin-url", admin, "--user", "alice", "--password", "alice-pw"}
	orgsCLI := func(creds []string, args ...string) (int, string, string) {
		return cliRun(append(append([]string{"orgs"}, args...), creds...)...)
	}

	if code, out, errOut := orgsCLI(asToken, "create", "acme"); code != 0 || out != "organisation acme created\n" {
		t.Fatalf("orgs create: %d %q %s", code, out, errOut)
	}
	if code, _, errOut := orgsCLI(asToken, "create", "acme"); code != 1 || !strings.Contains(errOut, "409") || !strings.Contains(errOut, "already exists") {
		t.Errorf("creating acme again: %d %s", code, errOut)
	}
	if code, _, errOut := orgsCLI(asToken, "create", "Not_Valid"); code != 1 || !strings.Contains(errOut, "400") {
		t.Errorf("creating an invalid name: %d %s", code, errOut)
	}
	if code, out, errOut := orgsCLI(asOps, "add-member", "acme", "User:alice"); code != 0 || out != "User:alice is in organisation acme\n" {
		t.Fatalf("orgs add-member: %d %q %s", code, out, errOut)
	}
	var list []adminapi.OrgInfo
	cliJSON(t, &list, append([]string{"orgs", "list"}, asToken...)...)
	if len(list) != 2 || list[0].Name != "default" || list[1].Name != "acme" || list[1].CreatedAt == nil || len(list[1].Members) != 1 || list[1].Members[0] != "User:alice" {
		t.Errorf("orgs list: %+v", list)
	}
	if code, out, _ := orgsCLI(asToken, "list"); code != 0 || !regexp.MustCompile(`(?m)^acme\s+\S+\s+User:alice$`).MatchString(out) {
		t.Errorf("orgs list text: %d\n%s", code, out)
	}
	// alice is no operator.
	if code, _, errOut := orgsCLI(asAlice, "list"); code != 1 || !strings.Contains(errOut, "403") || !strings.Contains(errOut, "not an operator") {
		t.Errorf("orgs list as alice: %d %s", code, errOut)
	}
	if code, _, errOut := orgsCLI([]string{"--admin-url", admin, "--user", "alice", "--password", "wrong"}, "list"); code != 1 || !strings.Contains(errOut, "401") {
		t.Errorf("orgs list with a wrong password: %d %s", code, errOut)
	}
	if code, _, _ := orgsCLI(asToken, "create"); code != 2 {
		t.Errorf("orgs create without a name: exit %d, want 2", code)
	}

	// orders in the default organisation (anonymous, over PLAINTEXT) and
	// in acme (alice, over SASL_SSL), each on its own topic events.
	plain := n.Addr("PLAINTEXT")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	asAliceKafka := []string{"--brokers", n.Addr("SASL_SSL"), "--tls-ca", n.CA.File, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "alice", "--sasl-password", "alice-pw"}
	for i, opts := range [][]kgo.Opt{
		{kgo.SeedBrokers(plain)},
		{kgo.SeedBrokers(n.Addr("SASL_SSL")), kgo.DialTLSConfig(&tls.Config{RootCAs: n.CA.Pool()}), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism())},
	} {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, "events"); err != nil {
			t.Fatal(err)
		}
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "events", Partition: 0, At: int64(1 + 4*i)})
		if r, err := adm.CommitOffsets(ctx, "orders", offs); err != nil || r.Error() != nil {
			t.Fatalf("commit %d: %v %v", i, err, r.Error())
		}
	}
	aliceGroups := append([]string{"--admin-url", admin, "--admin-user", "alice", "--admin-password", "alice-pw"}, asAliceKafka...)
	var rows []listedGroup
	testkit.Eventually(t, 10*time.Second, "groups list --admin-url shows acme's orders", func() bool {
		rows = nil
		cliJSON(t, &rows, append([]string{"groups", "list"}, aliceGroups...)...)
		return len(rows) == 1 && rows[0].CgpID != ""
	})
	if rows[0].RRL != "acme/consumer-groups/orders" || !strings.HasPrefix(rows[0].CgpID, "cgp_") {
		t.Errorf("groups list as alice: %+v", rows)
	}
	var opsRows []listedGroup
	cliJSON(t, &opsRows, "groups", "list", "--brokers", plain, "--admin-url", admin, "--admin-token", "tok")
	if len(opsRows) != 1 || opsRows[0].RRL != "default/consumer-groups/orders" || opsRows[0].CgpID == rows[0].CgpID {
		t.Errorf("groups list as the operator: %+v, want the default organisation's orders, not acme's %s", opsRows, rows[0].CgpID)
	}
	code, out, errOut := cliRun(append([]string{"groups", "describe", "orders"}, aliceGroups...)...)
	if code != 0 || !regexp.MustCompile(`(?m)^CGP-ID\s+`+rows[0].CgpID+`$`).MatchString(out) || !regexp.MustCompile(`(?m)^RRL\s+acme/consumer-groups/orders$`).MatchString(out) {
		t.Errorf("groups describe as alice: %d %s\n%s", code, errOut, out)
	}

	// Out, and the organisation goes.
	if code, _, errOut := orgsCLI(asToken, "delete", "acme"); code != 1 || !strings.Contains(errOut, "members") {
		t.Errorf("deleting acme with a member: %d %s", code, errOut)
	}
	if code, out, errOut := orgsCLI(asToken, "remove-member", "acme", "User:alice"); code != 0 || out != "User:alice is in organisation default\n" {
		t.Errorf("orgs remove-member: %d %q %s", code, out, errOut)
	}
	if code, _, errOut := orgsCLI(asToken, "delete", "acme"); code != 0 {
		t.Errorf("orgs delete: %d %s", code, errOut)
	}
	if code, _, errOut := orgsCLI(asToken, "delete", "acme"); code != 1 || !strings.Contains(errOut, "404") || !strings.Contains(errOut, "no such organisation") {
		t.Errorf("deleting acme again: %d %s", code, errOut)
	}
}
