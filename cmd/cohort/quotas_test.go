package main

import (
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// TestQuotas: cohort quotas set, list and remove an organisation's
// quotas and the default entity's through a real node's client-quota
// APIs, and pass the broker's refusals on.
func TestQuotas(t *testing.T) {
	n := testkit.StartNode(t, node.Config{})
	b := []string{"--brokers", n.KafkaAddr()}
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, errOut := cliRun(append(args, b...)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d: %s %s", args, code, want, out, errOut)
		}
		return out, errOut
	}
	if out, _ := run(0, "quotas", "set", "acme", "max_groups=5", "producer_byte_rate=1048576"); !strings.Contains(out, "org acme: max_groups=5 set") {
		t.Errorf("set: %q", out)
	}
	run(0, "quotas", "set", "*", "max_members_per_group=100")
	run(0, "quotas", "set", "globex", "max_groups=7", "--validate-only")
	var all []quotaJSON
	cliJSON(t, &all, append([]string{"quotas", "list"}, b...)...)
	if len(all) != 2 || all[0].Org != "*" || all[0].Quotas["max_members_per_group"] != 100 ||
		all[1].Org != "acme" || all[1].Quotas["max_groups"] != 5 || all[1].Quotas["producer_byte_rate"] != 1048576 {
		t.Errorf("list (globex only validated): %+v", all)
	}
	var acme []quotaJSON
	cliJSON(t, &acme, append([]string{"quotas", "list", "acme"}, b...)...)
	if len(acme) != 1 || acme[0].Org != "acme" {
		t.Errorf("list acme: %+v", acme)
	}
	run(0, "quotas", "remove", "acme", "max_groups")
	acme = nil // json merges into a map it already has
	cliJSON(t, &acme, append([]string{"quotas", "list", "acme"}, b...)...)
	if len(acme) != 1 || len(acme[0].Quotas) != 1 || acme[0].Quotas["producer_byte_rate"] != 1048576 {
		t.Errorf("after remove: %+v", acme)
	}
	if _, errOut := run(1, "quotas", "set", "acme", "no_such_key=1"); !strings.Contains(errOut, "INVALID_REQUEST") {
		t.Errorf("unknown key: %s", errOut)
	}
	if _, errOut := run(1, "quotas", "set", "acme", "max_groups=1.5"); !strings.Contains(errOut, "INVALID_REQUEST") {
		t.Errorf("fractional max_groups: %s", errOut)
	}
	run(2, "quotas", "set", "acme", "max_groups")
}
