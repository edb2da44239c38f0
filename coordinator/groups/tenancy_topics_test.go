package groups_test

import (
	"testing"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTenancyTopicDeletion: three tenants' groups orders commit to their
// own topic events. A deletion of acme's events removes acme's offsets
// only; a reconcile whose live topics lack globex's events removes
// globex's only; the default tenant's stay throughout.
func TestTenancyTopicDeletion(t *testing.T) {
	h := newHarness(t, testConfig())
	commit := func(tenant string, offset int64) {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, "orders", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "events"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, ok := h.reply(h.sendAs(req, tenant, "c"))
		if !ok || r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("%q: commit: %+v", tenant, r)
		}
	}
	fetch := func(tenant string) int64 {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, "orders"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "events", Partitions: []int32{0}}}
		r, ok := h.reply(h.sendAs(req, tenant, "c"))
		if !ok {
			t.Fatalf("%q: fetch not answered", tenant)
		}
		return r.(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0].Offset
	}
	cmd := func(c any) {
		t.Helper()
		h.nextID++
		h.apply(h.m.Handle(h.now, machine.Request{ID: h.nextID, Cmd: c}))
	}
	want := map[string]int64{"": 10, "acme": 20, "globex": 30}
	for tn, o := range want {
		commit(tn, o)
	}
	check := func(when string) {
		t.Helper()
		for tn, o := range want {
			if got := fetch(tn); got != o {
				t.Errorf("%s: %q reads offset %d, want %d", when, tn, got, o)
			}
		}
	}
	check("before")
	cmd(groups.DeleteTopicsCmd{Tenant: "acme", Topics: []string{"events"}})
	want["acme"] = -1
	check("after acme's events was deleted")
	cmd(groups.ReconcileTopicsCmd{Live: map[string]map[string][16]byte{"": {"events": {1}}, "acme": {"events": {2}}}})
	want["globex"] = -1
	check("after a reconcile without globex's events")
	h.restart()
	check("after a restart")
}
