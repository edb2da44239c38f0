package groups_test

import (
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnShard drives a groups.Shard directly for the transactional offset
// tests, keeping its records and checking the one record rule after
// every event.
type txnShard struct {
	t       *testing.T
	m       *groups.Shard
	now     time.Time
	records map[string][]byte
	next    machine.RequestID
}

func newTxnShard(t *testing.T) *txnShard {
	s := &txnShard{t: t, m: groups.New(testConfig()), now: epoch, records: map[string][]byte{}}
	s.apply(s.m.Loaded(s.now))
	return s
}

func (s *txnShard) apply(out machine.Output) machine.Output {
	s.t.Helper()
	for _, r := range out.Records {
		if r.Value == nil {
			delete(s.records, string(r.Key))
		} else {
			s.records[string(r.Key)] = r.Value
		}
	}
	if err := machine.CheckReplay(s.m, s.records, func() *groups.Shard { return groups.New(testConfig()) }); err != nil {
		s.t.Fatal(err)
	}
	return out
}

func (s *txnShard) do(msg kmsg.Request, cmd any) machine.Reply {
	s.t.Helper()
	s.next++
	out := s.apply(s.m.Handle(s.now, machine.Request{ID: s.next, Msg: msg, Cmd: cmd}))
	if len(out.Replies) != 1 {
		s.t.Fatalf("%d replies", len(out.Replies))
	}
	return out.Replies[0]
}

func (s *txnShard) restart() {
	s.t.Helper()
	s.m = groups.New(testConfig())
	if err := machine.ReplaySorted(s.records, s.m.Replay); err != nil {
		s.t.Fatal(err)
	}
	s.apply(s.m.Loaded(s.now))
}

func txnCommit(group string, pid int64, offset int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version, r.Group, r.TransactionalID, r.ProducerID, r.ProducerEpoch = 3, group, "tx", pid, 0
	r.Generation, r.MemberID = -1, ""
	r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
	return r
}

func stableFetch(group string) *kmsg.OffsetFetchRequest {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version, r.Group, r.RequireStable = 7, group, true
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	return r
}

func fetched(t *testing.T, rep machine.Reply) (int64, int16) {
	t.Helper()
	p := rep.Resp.(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// TestTxnOffsets: a transactional commit is pending (UNSTABLE_OFFSET_COMMIT
// with RequireStable, not visible without) until the transaction commits;
// an abort drops it; the group with pending offsets is not deleted; all of
// it survives a restart.
func TestTxnOffsets(t *testing.T) {
	s := newTxnShard(t)
	if rep := s.do(txnCommit("g", 7, 10), nil); rep.Resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", rep.Resp)
	}
	if off, code := fetched(t, s.do(stableFetch("g"), nil)); code != kerr.UnstableOffsetCommit.Code || off != -1 {
		t.Fatalf("stable fetch while pending: %d %d", off, code)
	}
	plain := stableFetch("g")
	plain.RequireStable = false
	if off, code := fetched(t, s.do(plain, nil)); code != 0 || off != -1 {
		t.Fatalf("fetch while pending: %d %d", off, code)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"g"}
	if code := s.do(del, nil).Resp.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with pending offsets: %d", code)
	}
	s.restart()
	if _, code := fetched(t, s.do(stableFetch("g"), nil)); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("stable fetch after restart: %d", code)
	}
	if rep := s.do(nil, groups.TxnEndCmd{Group: "g", ProducerID: 7, Commit: true}); rep.Out != (groups.TxnEnded{}) {
		t.Fatalf("end: %+v", rep)
	}
	if off, code := fetched(t, s.do(stableFetch("g"), nil)); code != 0 || off != 10 {
		t.Fatalf("after commit: %d %d", off, code)
	}
	// An aborted transaction's offsets are dropped.
	s.do(txnCommit("g", 8, 20), nil)
	s.do(nil, groups.TxnEndCmd{Group: "g", ProducerID: 8, Commit: false})
	if off, code := fetched(t, s.do(stableFetch("g"), nil)); code != 0 || off != 10 {
		t.Fatalf("after abort: %d %d", off, code)
	}
	// KIP-447: a member of an older generation is fenced.
	zombie := txnCommit("g", 9, 30)
	zombie.Generation, zombie.MemberID = 5, "m"
	if code := s.do(zombie, nil).Resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownMemberID.Code {
		t.Fatalf("zombie: %d", code)
	}
	s.restart()
	if off, _ := fetched(t, s.do(stableFetch("g"), nil)); off != 10 {
		t.Fatalf("after restart: %d", off)
	}
}
