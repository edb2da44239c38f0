package main

import (
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// TestUsers: cohort users add, list and delete over the PLAINTEXT
// listener, and groups list over SASL_SSL as the user added (--tls-ca,
// --sasl-*), which fails once the user is deleted.
func TestUsers(t *testing.T) {
	n := testkit.StartSecureNode(t, node.Config{FailedAuthenticationDelay: -1}, nil)
	plain := n.Addr("PLAINTEXT")
	if code, out, errOut := cliRun("users", "add", "carol", "--password", "pw1", "--brokers", plain); code != 0 || !strings.Contains(out, "SCRAM-SHA-256, SCRAM-SHA-512 set") {
		t.Fatalf("users add: %d %q %s", code, out, errOut)
	}
	if code, _, errOut := cliRun("users", "add", "dave", "--password", "pw2", "--mechanism", "SCRAM-SHA-512", "--brokers", plain); code != 0 {
		t.Fatalf("users add dave: %d %s", code, errOut)
	}
	var users []userJSON
	cliJSON(t, &users, "users", "list", "--brokers", plain)
	if len(users) != 2 || users[0].User != "carol" || len(users[0].Mechanisms) != 2 || users[1].User != "dave" || len(users[1].Mechanisms) != 1 || users[1].Mechanisms[0].Iterations != 8192 {
		t.Errorf("users list: %+v", users)
	}
	sasl := []string{"--brokers", n.Addr("SASL_SSL"), "--tls-ca", n.CA.File, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "carol", "--sasl-password", "pw1", "--timeout", "5s"}
	if code, _, errOut := cliRun(append([]string{"groups", "list"}, sasl...)...); code != 0 {
		t.Errorf("groups list over SASL_SSL: %d %s", code, errOut)
	}
	if code, _, errOut := cliRun("users", "delete", "carol", "--brokers", plain); code != 0 {
		t.Fatalf("users delete: %d %s", code, errOut)
	}
	if code, _, _ := cliRun(append([]string{"groups", "list"}, sasl...)...); code == 0 {
		t.Errorf("groups list as a deleted user succeeded")
	}
	if code, _, errOut := cliRun("users", "delete", "carol", "--brokers", plain); code != 1 || !strings.Contains(errOut, "RESOURCE_NOT_FOUND") {
		t.Errorf("deleting a deleted user: %d %s", code, errOut)
	}
	if code, _, _ := cliRun("users", "add", "x", "--brokers", plain); code != 2 {
		t.Errorf("users add without a password: exit %d, want 2", code)
	}
}
