package sharestate_test

import (
	"strings"
	"testing"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
)

// TestDeleteCutShort: the runtime may write one event's records in more
// than one batch, so a crash can keep the first records of a deletion and
// lose the rest. The snapshot goes first: what is left is update slots
// with no snapshot, which the load deletes, and the partition starts
// afresh.
func TestDeleteCutShort(t *testing.T) {
	h := newHarness(t, sharestate.Config{SnapshotEvery: 10})
	k := key("g", "t/0")
	h.logOf(k).produce(false, 2, 2, 2)
	for _, m := range []string{"m1", "m2", "m3"} {
		_, a := h.fetch(k, m, sharestate.NextCmd{Reset: sharestate.ResetEarliest}, sharestate.AcquireCmd{MaxRecords: 1}, 1)
		r := a.Records[0]
		h.send(sharestate.AckCmd{Key: k, Member: m, Acks: []sharestate.Ack{{First: r.First, Last: r.Last, Types: []sharestate.AckType{sharestate.AckRelease}}}})
	}
	if n := len(h.records); n != 7 {
		t.Fatalf("%d records before the deletion, want a snapshot and 6 updates (3 acquisitions, 3 releases)", n)
	}

	out := h.m.Handle(h.now, machine.Request{ID: 99, Cmd: sharestate.DeleteCmd{Key: k}})
	if len(out.Records) != 7 || out.Records[0].Value != nil || !strings.HasPrefix(renderRecord(t, out.Records[0]), "delete t/0 snapshot") {
		t.Fatalf("deletion wrote %d records, the first %q", len(out.Records), renderRecord(t, out.Records[0]))
	}
	// Only the first record reaches the store.
	delete(h.records, string(out.Records[0].Key))

	h.lines = nil
	h.restart()
	if got := strings.Join(h.lines, "\n"); got != "delete t/0 #1\ndelete t/0 #2\ndelete t/0 #3\ndelete t/0 #4\ndelete t/0 #5\ndelete t/0 #6" {
		t.Fatalf("the load wrote:\n%s", got)
	}
	if len(h.records) != 0 {
		t.Fatalf("%d records left", len(h.records))
	}
	if d := h.describe(k); d.Code == 0 {
		t.Fatalf("deleted partition described: %+v", d)
	}
	n, a := h.fetch(k, "m1", sharestate.NextCmd{Reset: sharestate.ResetEarliest}, sharestate.AcquireCmd{MaxRecords: 10}, 0)
	if n.Offset != 0 || len(a.Records) != 1 || a.Records[0] != (sharestate.Records{First: 0, Last: 5, DeliveryCount: 1}) {
		t.Fatalf("afresh: next %+v, acquired %+v", n, a)
	}
}

// TestUnknownCommand: a command the shard does not know is a bad
// request, not a crash.
func TestUnknownCommand(t *testing.T) {
	h := newHarness(t, sharestate.Config{})
	if r := h.send(struct{}{}).(sharestate.Result); r.Code == 0 {
		t.Fatal("unknown command answered NONE")
	}
}
