package groups_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzMachine feeds the machine a sequence of requests, decoded from
// fuzzed bytes, with time passing between them:
//
//	go test ./coordinator/groups -run '^$' -fuzz '^FuzzMachine$' -fuzztime 60s
//
// Each step is: a key index, a version, a time step (units of 100 ms),
// a 2-byte body length and the body. The properties: nothing panics, no
// request is answered twice (the harness checks), every record the machine
// writes replays, and a restart after the sequence loads what was written.
func FuzzMachine(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := testConfig()
		cfg.MinSessionTimeout = time.Millisecond
		cfg.InitialDelay, cfg.InitialQuiet = 200*time.Millisecond, 100*time.Millisecond
		h := newHarness(t, cfg)
		for steps := 0; len(data) >= 5 && steps < 64; steps++ {
			key := fuzzKeys[int(data[0])%len(fuzzKeys)]
			version := int16(data[1])
			step := time.Duration(data[2]) * 100 * time.Millisecond
			n := int(binary.BigEndian.Uint16(data[3:]))
			data = data[5:]
			if n > len(data) {
				n = len(data)
			}
			body := data[:n]
			data = data[n:]
			req := kmsg.RequestForKey(key)
			if version > req.MaxVersion() {
				version %= req.MaxVersion() + 1
			}
			req.SetVersion(version)
			if req.ReadFrom(body) != nil {
				continue
			}
			h.send(req)
			h.advance(step)
		}
		h.advance(10 * time.Minute)
		h.restart()
	})
}

var fuzzKeys = []int16{
	kmsg.JoinGroup.Int16(), kmsg.SyncGroup.Int16(), kmsg.Heartbeat.Int16(), kmsg.LeaveGroup.Int16(),
	kmsg.OffsetCommit.Int16(), kmsg.OffsetFetch.Int16(), kmsg.OffsetDelete.Int16(),
	kmsg.DescribeGroups.Int16(), kmsg.ListGroups.Int16(), kmsg.DeleteGroups.Int16(),
}

func fuzzStep(keyIndex int, req kmsg.Request, version int16, tenths byte) []byte {
	req.SetVersion(version)
	body := req.AppendTo(nil)
	b := []byte{byte(keyIndex), byte(version), tenths}
	b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

// fuzzSeeds: a member joining (v3, so no MEMBER_ID_REQUIRED), syncing with
// the id the machine will hand out unknown to the seed (so the fuzzer has
// to find it), heartbeating, committing and leaving; and admin requests.
func fuzzSeeds() [][]byte {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 1, 0, 1, 't'}}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g", 1, "client-x"
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation = "g", 1
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g"
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "client-x"}}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"g"}

	var one []byte
	one = append(one, fuzzStep(4, commit, 8, 1)...)
	one = append(one, fuzzStep(0, join, 3, 5)...)
	one = append(one, fuzzStep(1, sync, 3, 1)...)
	one = append(one, fuzzStep(2, hb, 3, 1)...)
	one = append(one, fuzzStep(5, fetch, 7, 1)...)
	one = append(one, fuzzStep(7, describe, 5, 1)...)
	one = append(one, fuzzStep(3, leave, 5, 1)...)
	one = append(one, fuzzStep(9, del, 2, 1)...)
	var joins []byte
	for range 3 {
		joins = append(joins, fuzzStep(0, join, 9, 0)...)
	}
	joins = append(joins, fuzzStep(0, join, 5, 50)...)
	return [][]byte{one, joins}
}
