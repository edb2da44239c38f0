package txn_test

import (
	"testing"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/txn"
)

// TestEarlyReplies: which answers leave before their records are synced
// (machine.Reply.Early, honoured by the runtime on a one-log store). The
// EndTxn answered at completion, a group or partition add the host asks
// to be early, and the markers of an end that bumps the epoch are;
// AddOffsetsToTxn, AddPartitionsToTxn and the markers of an end that
// keeps the epoch are not. Without them a transaction waits for two more syncs
// (BENCHMARKS "Transactions").
func TestEarlyReplies(t *testing.T) {
	m := txn.New(txn.Config{Shard: shard})
	id := machine.RequestID(0)
	do := func(cmd any) machine.Output {
		id++
		return m.Handle(start, machine.Request{ID: id, Cmd: cmd})
	}
	reply := func(out machine.Output, what string) machine.Reply {
		t.Helper()
		if len(out.Replies) != 1 {
			t.Fatalf("%s: %d replies, want 1", what, len(out.Replies))
		}
		if r, _ := out.Replies[0].Out.(txn.Result); r.Code != 0 {
			t.Fatalf("%s: error %d", what, r.Code)
		}
		return out.Replies[0]
	}
	init := reply(do(txn.InitCmd{TxnID: "t", TimeoutMs: 60000, ProducerID: -1, ProducerEpoch: -1, NewProducerID: 7}), "init")
	r := init.Out.(txn.Result)
	if init.Early {
		t.Error("InitProducerId answered early")
	}
	add := reply(do(txn.AddPartitionsCmd{TxnID: "t", ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Partitions: []txn.TP{{Topic: "a", Partition: 0}}}), "add partitions")
	if add.Early {
		t.Error("AddPartitionsToTxn answered early: its produce's data could be durable without it")
	}
	if a := reply(do(txn.AddPartitionsCmd{TxnID: "t", ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Partitions: []txn.TP{{Topic: "a", Partition: 1}}, Early: true}), "early add partitions"); !a.Early {
		t.Error("a partition add asked to be early (the host's produce) was not")
	}
	if v := reply(do(txn.AddPartitionsCmd{TxnID: "t", ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Partitions: []txn.TP{{Topic: "a", Partition: 1}}, VerifyOnly: true, Early: true}), "verify"); v.Early {
		t.Error("a verification answered early: it writes nothing")
	}
	if g := reply(do(txn.AddGroupCmd{TxnID: "t", ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Group: "g1"}), "add group"); g.Early {
		t.Error("AddOffsetsToTxn answered early")
	}
	if g := reply(do(txn.AddGroupCmd{TxnID: "t", ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Group: "g2", Early: true}), "early add group"); !g.Early {
		t.Error("a group add asked to be early was not")
	}
	end := do(txn.EndCmd{TxnID: "t", ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Commit: true, NewProducerID: -1})
	if len(end.Replies) != 0 || len(end.Pushes) != 1 {
		t.Fatalf("EndTxn: %d replies and %d pushes, want it parked and the markers pushed", len(end.Replies), len(end.Pushes))
	}
	if end.Pushes[0].Early {
		t.Error("the markers of an end that keeps the epoch (EndTxn v4-) pushed early: a load could not tell them from an earlier transaction's")
	}
	mk := end.Pushes[0].Msg.(txn.Markers)
	done := do(mk.Complete())
	if len(done.Records) != 1 || len(done.Replies) != 2 {
		t.Fatalf("Complete: %d records and %d replies, want the Complete record, the EndTxn's answer and its own", len(done.Records), len(done.Replies))
	}
	for _, rp := range done.Replies {
		if !rp.Early {
			t.Errorf("reply to %d at completion is not early", rp.To)
		}
	}
	// An end with a bump (EndTxn v5+) pushes its markers early: they
	// carry the decision and an epoch above the transaction's batches.
	reply(do(txn.AddPartitionsCmd{TxnID: "t", ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Partitions: []txn.TP{{Topic: "a", Partition: 0}}}), "add partitions")
	bumped := do(txn.EndCmd{TxnID: "t", ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Commit: true, Bump: true, NewProducerID: -1})
	if len(bumped.Pushes) != 1 || !bumped.Pushes[0].Early {
		t.Errorf("EndTxn with a bump: pushes %+v, want the markers early", bumped.Pushes)
	}
}
