package groups_test

// KIP-848 consumer groups in the pure machine, in fake time: every
// transition and error code of ConsumerGroupHeartbeat, reconciliation, the
// timeouts, static members, restarts, and the other group APIs on a
// consumer group. The reference is Kafka's GroupMetadataManager and
// CurrentAssignmentBuilder.

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	topicT = [16]byte{1}
	topicU = [16]byte{2}
)

// cgHarness is a harness with topics t (6 partitions) and u (3).
func cgHarness(t *testing.T, mod func(*groups.Config)) *harness {
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	h := newHarness(t, cfg)
	h.catalog = machine.NewCatalog(1, map[string]machine.TopicMeta{
		"t": {ID: topicT, Partitions: 6},
		"u": {ID: topicU, Partitions: 3},
	})
	return h
}

// hb is a heartbeat: member id, epoch, and options.
type hb struct {
	member   string
	epoch    int32
	topics   []string // nil: not sent (unless joining)
	owned    []int32  // partitions of t owned; nil: not sent
	instance string
	assignor string
	regex    string
	rebal    int32
	version  int16
	group    string
}

func (h *harness) hb(o hb) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	if o.version == -1 {
		req.Version = 0
	}
	req.Group = "g"
	if o.group != "" {
		req.Group = o.group
	}
	req.MemberID, req.MemberEpoch = o.member, o.epoch
	req.RebalanceTimeoutMillis = -1
	if o.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if o.topics == nil && o.regex == "" {
			o.topics = []string{"t"}
		}
	}
	if o.rebal != 0 {
		req.RebalanceTimeoutMillis = o.rebal
	}
	if o.topics != nil {
		req.SubscribedTopicNames = o.topics
	}
	if o.regex != "" {
		req.SubscribedTopicRegex = &o.regex
	}
	if o.owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicT, Partitions: o.owned}}
		if len(o.owned) == 0 {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
	}
	if o.instance != "" {
		req.InstanceID = &o.instance
	}
	if o.assignor != "" {
		req.ServerAssignor = &o.assignor
	}
	return do[*kmsg.ConsumerGroupHeartbeatResponse](h, req)
}

// parts returns the partitions of t in a heartbeat response's assignment;
// nil if it carries none.
func parts(r *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
	if r.Assignment == nil {
		return nil
	}
	out := []int32{}
	for _, tp := range r.Assignment.Topics {
		if tp.TopicID == topicT {
			out = append(out, tp.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

func wantErr(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if want == nil && got != 0 || want != nil && got != want.Code {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func (h *harness) cdescribe(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	return do[*kmsg.ConsumerGroupDescribeResponse](h, req).Groups[0]
}

// owners checks that no partition of t is assigned to two members in the
// describe output and returns partition → member.
func (h *harness) owners(group string) map[int32]string {
	h.t.Helper()
	out := map[int32]string{}
	for _, m := range h.cdescribe(group).Members {
		for _, tp := range m.Assignment.TopicPartitions {
			if tp.Topic != "t" {
				continue
			}
			for _, p := range tp.Partitions {
				if o, dup := out[p]; dup {
					h.t.Fatalf("partition %d owned by %s and %s", p, o, m.MemberID)
				}
				out[p] = m.MemberID
			}
		}
	}
	return out
}

func TestConsumerJoinRevokeAssign(t *testing.T) {
	h := cgHarness(t, nil)
	r := h.hb(hb{member: "a"})
	wantErr(t, "a joins", r.ErrorCode, nil)
	if r.MemberEpoch != 1 || !slices.Equal(parts(r), []int32{0, 1, 2, 3, 4, 5}) || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("a joins: epoch %d, %v, interval %d", r.MemberEpoch, parts(r), r.HeartbeatIntervalMillis)
	}
	// A heartbeat with nothing changed carries no assignment.
	if r := h.hb(hb{member: "a", epoch: 1}); r.MemberEpoch != 1 || r.Assignment != nil {
		t.Fatalf("a heartbeats: %+v", r)
	}
	h.advance(time.Second) // the assignment interval
	// b joins: the target moves three partitions; a still owns them, so
	// b waits (UNRELEASED) at the new epoch with nothing.
	r = h.hb(hb{member: "b"})
	if r.MemberEpoch != 2 || len(parts(r)) != 0 {
		t.Fatalf("b joins: epoch %d, %v", r.MemberEpoch, parts(r))
	}
	if d := h.cdescribe("g"); d.State != "Reconciling" || d.Epoch != 2 || d.AssignmentEpoch != 2 {
		t.Fatalf("describe: %s %d %d", d.State, d.Epoch, d.AssignmentEpoch)
	}
	// a must revoke first: it stays on epoch 1 with three partitions.
	r = h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 3, 4, 5}})
	if r.MemberEpoch != 1 || len(parts(r)) != 3 {
		t.Fatalf("a told to revoke: epoch %d, %v", r.MemberEpoch, parts(r))
	}
	kept := parts(r)
	h.owners("g")
	// b still waits: a has not confirmed.
	if r := h.hb(hb{member: "b", epoch: 2, owned: []int32{}}); r.MemberEpoch != 2 || len(parts(r)) != 0 {
		t.Fatalf("b before a revoked: %+v", r)
	}
	// a not yet revoked (still reports six): no change.
	if r := h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 3, 4, 5}}); r.MemberEpoch != 1 || r.Assignment != nil {
		t.Fatalf("a still owning: %+v", r)
	}
	// a revoked: it advances to epoch 2.
	if r := h.hb(hb{member: "a", epoch: 1, owned: kept}); r.MemberEpoch != 2 {
		t.Fatalf("a revoked: %+v", r)
	}
	r = h.hb(hb{member: "b", epoch: 2, owned: []int32{}})
	if r.MemberEpoch != 2 || len(parts(r)) != 3 {
		t.Fatalf("b gets the released partitions: epoch %d %v", r.MemberEpoch, parts(r))
	}
	if len(h.owners("g")) != 6 {
		t.Fatalf("owners %v", h.owners("g"))
	}
	if d := h.cdescribe("g"); d.State != "Stable" || d.AssignorName != "uniform" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
}

func TestConsumerValidation(t *testing.T) {
	h := cgHarness(t, nil)
	req := func(mod func(r *kmsg.ConsumerGroupHeartbeatRequest)) int16 {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.RebalanceTimeoutMillis = 1, "g", "m", 30000
		r.SubscribedTopicNames, r.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		mod(r)
		return do[*kmsg.ConsumerGroupHeartbeatResponse](h, r).ErrorCode
	}
	for _, tc := range []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"v1 empty member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidGroupID},
		{"empty instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") }, kerr.InvalidRequest},
		{"empty rack", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("") }, kerr.InvalidRequest},
		{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"join owning partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicT, Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"join with null owned", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest},
		{"join subscribing to nothing", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"epoch -3", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, kerr.UnsupportedAssignor},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("(") }, kerr.InvalidRegularExpression},
		{"unknown group, epoch 1", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 }, kerr.GroupIDNotFound},
		{"unknown group, leave", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1 }, kerr.GroupIDNotFound},
	} {
		if got := req(tc.mod); got != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
	if n := len(h.records); n != 0 {
		t.Fatalf("invalid requests wrote %d records", n)
	}
	// v0: the coordinator mints the member id.
	r := h.hb(hb{version: -1})
	if r.ErrorCode != 0 || r.MemberID == nil || len(*r.MemberID) != 22 {
		t.Fatalf("v0 join: %+v", r)
	}
	id := *r.MemberID
	for _, tc := range []struct {
		name string
		o    hb
		want *kerr.Error
	}{
		{"unknown member", hb{member: "nobody", epoch: 1}, kerr.UnknownMemberID},
		{"epoch ahead", hb{member: id, epoch: 5}, kerr.FencedMemberEpoch},
		{"epoch 0 again: a rejoin", hb{member: id}, nil},
	} {
		if got := h.hb(tc.o).ErrorCode; tc.want != nil && got != tc.want.Code || tc.want == nil && got != 0 {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
}

func TestConsumerLostResponse(t *testing.T) {
	h := cgHarness(t, nil)
	h.hb(hb{member: "a"}) // epoch 1, all six
	h.advance(time.Second)
	h.hb(hb{member: "b"})                                             // epoch 2
	h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 3, 4, 5}}) // revoke three
	r := h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2}})
	if r.MemberEpoch != 2 {
		t.Fatalf("a advances: %+v", r)
	}
	// The response that moved a to 2 was lost: a retries at 1 owning a
	// subset of what it has: accepted.
	if r := h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2}}); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("retry at the previous epoch: %+v", r)
	}
	// At the previous epoch but owning more than it has: fenced.
	if r := h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 5}}); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("previous epoch, not a subset: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Without saying what it owns: fenced.
	if r := h.hb(hb{member: "a", epoch: 1}); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("previous epoch, owned not sent: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// A regex subscriber loses the response that asks it to revoke; its
	// full heartbeat (rebalance timeout, regex, owned) gets the
	// assignment again, or it would be fenced for not revoking. (Found
	// by TestPropertyConsumerGroups: a full request was recognised only
	// with topic names.)
	h = cgHarness(t, nil)
	h.hb(hb{member: "a", regex: "^t$"})
	h.advance(time.Second)
	h.hb(hb{member: "b", regex: "^t$"})
	all := []int32{0, 1, 2, 3, 4, 5}
	if r := h.hb(hb{member: "a", epoch: 1, owned: all}); len(parts(r)) != 3 {
		t.Fatalf("a is asked to revoke three: %+v", r.Assignment) // this response is "lost"
	}
	if r := h.hb(hb{member: "a", epoch: 1, owned: all}); r.Assignment != nil {
		t.Fatalf("an incremental heartbeat repeats no unchanged assignment: %+v", r.Assignment)
	}
	r = h.hb(hb{member: "a", epoch: 1, owned: all, regex: "^t$", rebal: 30000})
	if len(parts(r)) != 3 {
		t.Fatalf("a full heartbeat with a regex gets the assignment: %+v", r.Assignment)
	}
}

func TestConsumerTimeouts(t *testing.T) {
	h := cgHarness(t, nil)
	h.hb(hb{member: "a"})
	h.advance(time.Second)
	h.hb(hb{member: "b"})
	// a is told to revoke and never confirms (owned not sent): its
	// rebalance timeout (30 s) fences it, b heartbeating meanwhile.
	h.hb(hb{member: "a", epoch: 1})
	for range 6 {
		h.advance(5 * time.Second)
		h.hb(hb{member: "b", epoch: 2, owned: []int32{}})
	}
	d := h.cdescribe("g")
	if len(d.Members) != 1 || d.Members[0].MemberID != "b" {
		t.Fatalf("after a's rebalance timeout: %+v", d.Members)
	}
	if r := h.hb(hb{member: "a", epoch: 1}); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced a: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// b took everything once the target was recomputed (at its
	// heartbeat right after the fence).
	if o := h.owners("g"); len(o) != 6 || o[0] != "b" || o[5] != "b" {
		t.Fatalf("after a is gone: %v", o)
	}
	// b goes silent: its session (45 s) expires and the group empties.
	h.advance(45 * time.Second)
	if d := h.cdescribe("g"); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after b's session timeout: %s %+v", d.State, d.Members)
	}

	// A member that revokes what it was asked, and is at once asked to
	// revoke more (the target moved meanwhile), gets a full rebalance
	// timeout for the new revocation, as in Kafka (the timer restarts
	// whenever the member's assignment changes). Found by
	// TestPropertyConsumerGroups.
	h = cgHarness(t, nil)
	all := []int32{0, 1, 2, 3, 4, 5}
	h.hb(hb{member: "a"})
	h.advance(time.Second)
	h.hb(hb{member: "b"})
	h.hb(hb{member: "a", epoch: 1, owned: all}) // revoke 3: 30 s from now
	h.advance(20 * time.Second)
	h.hb(hb{member: "b", epoch: 2, owned: []int32{}})
	h.hb(hb{member: "c"}) // the target now gives a two
	h.advance(5 * time.Second)
	h.hb(hb{member: "b", epoch: 2, owned: []int32{}})
	h.hb(hb{member: "c", epoch: 3, owned: []int32{}})
	if r := h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2}}); len(parts(r)) != 2 {
		t.Fatalf("a is asked to revoke one more: %+v", r.Assignment)
	}
	for range 3 {
		h.advance(5 * time.Second) // 40 s after the first revocation
		h.hb(hb{member: "b", epoch: 2, owned: []int32{}})
		h.hb(hb{member: "c", epoch: 3, owned: []int32{}})
		if r := h.hb(hb{member: "a", epoch: 1}); r.ErrorCode != 0 {
			t.Fatalf("a still revoking within its new rebalance timeout: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

// TestConsumerGroupConfig: a group's dynamic configs (the broker resolves
// them and sends them with each heartbeat) set the heartbeat interval the
// member is told and its session timeout from that heartbeat on; without
// them the shard's defaults hold.
func TestConsumerGroupConfig(t *testing.T) {
	h := cgHarness(t, nil)
	if r := h.hb(hb{member: "a"}); r.HeartbeatIntervalMillis != int32(h.cfg.ConsumerHeartbeatInterval.Milliseconds()) {
		t.Fatalf("default interval %d", r.HeartbeatIntervalMillis)
	}
	h.groupConfig = machine.GroupConfig{SessionTimeout: 50 * time.Second, HeartbeatInterval: 7 * time.Second}
	if r := h.hb(hb{member: "a", epoch: 1}); r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("interval with the group's config %d, want 7000", r.HeartbeatIntervalMillis)
	}
	// 45 s (the default) would have fenced a by now; 50 s has not.
	h.advance(48 * time.Second)
	if d := h.cdescribe("g"); len(d.Members) != 1 {
		t.Fatalf("a fenced before its group's session timeout: %+v", d.Members)
	}
	h.advance(3 * time.Second)
	if d := h.cdescribe("g"); len(d.Members) != 0 {
		t.Fatalf("a kept past its group's session timeout: %+v", d.Members)
	}
	// The config gone, the next heartbeat gets the defaults again.
	h.groupConfig = machine.GroupConfig{}
	h.hb(hb{member: "b"})
	h.advance(46 * time.Second)
	if d := h.cdescribe("g"); len(d.Members) != 0 {
		t.Fatalf("b kept past the default session timeout: %+v", d.Members)
	}
}

func TestConsumerLeaveAndStatic(t *testing.T) {
	h := cgHarness(t, nil)
	h.hb(hb{member: "a", instance: "i1"})
	h.advance(time.Second)
	h.hb(hb{member: "b"})
	h.hb(hb{member: "a", epoch: 1, instance: "i1", owned: []int32{0, 1, 2, 3, 4, 5}})
	h.hb(hb{member: "a", epoch: 1, instance: "i1", owned: []int32{0, 1, 2}})
	h.hb(hb{member: "b", epoch: 2, owned: []int32{}})
	before := h.owners("g")
	// A second live member with the instance id is refused.
	if r := h.hb(hb{member: "a2", instance: "i1"}); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("second i1: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// a leaves for a while (-2): it keeps its partitions.
	lr := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	lr.Version, lr.Group, lr.MemberID, lr.MemberEpoch, lr.InstanceID = 1, "g", "a", -2, kmsg.StringPtr("i1")
	if r := do[*kmsg.ConsumerGroupHeartbeatResponse](h, lr); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	// It comes back as a new member id and gets the same partitions,
	// without a rebalance.
	epochBefore := h.cdescribe("g").Epoch
	r := h.hb(hb{member: "a-new", instance: "i1"})
	if r.ErrorCode != 0 {
		t.Fatalf("static rejoin: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	var mine []int32
	for p, m := range before {
		if m == "a" {
			mine = append(mine, p)
		}
	}
	slices.Sort(mine)
	if !slices.Equal(parts(r), mine) || h.cdescribe("g").Epoch != epochBefore {
		t.Fatalf("static rejoin got %v (had %v), epoch %d → %d", parts(r), mine, epochBefore, h.cdescribe("g").Epoch)
	}
	// b leaves for good (-1): a new epoch, and a-new gets everything.
	lr = kmsg.NewPtrConsumerGroupHeartbeatRequest()
	lr.Version, lr.Group, lr.MemberID, lr.MemberEpoch = 1, "g", "b", -1
	if r := do[*kmsg.ConsumerGroupHeartbeatResponse](h, lr); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	h.advance(time.Second)
	r = h.hb(hb{member: "a-new", epoch: r.MemberEpoch, instance: "i1", owned: mine})
	if len(parts(r)) != 6 {
		t.Fatalf("after b left, a-new has %v", parts(r))
	}
}

func TestConsumerRestart(t *testing.T) {
	h := cgHarness(t, nil)
	h.hb(hb{member: "a"})
	h.advance(time.Second)
	h.hb(hb{member: "b", assignor: "range"})
	h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 3, 4, 5}}) // a is mid-revocation
	before := h.cdescribe("g")
	h.restart()
	after := h.cdescribe("g")
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("restart changed the group:\nbefore %+v\nafter  %+v", before, after)
	}
	// The members carry on at their epochs.
	r := h.hb(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2}})
	if r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("a after restart: %+v", r)
	}
	if r := h.hb(hb{member: "b", epoch: 2, owned: []int32{}}); r.ErrorCode != 0 || len(parts(r)) != 3 {
		t.Fatalf("b after restart: %+v", r)
	}
	// Sessions restart from the load: 45 s of silence empties the group.
	h.restart()
	h.advance(45 * time.Second)
	if d := h.cdescribe("g"); d.State != "Empty" {
		t.Fatalf("after restart and silence: %s", d.State)
	}
}

func TestConsumerGrowthAndThrottle(t *testing.T) {
	h := cgHarness(t, nil)
	h.hb(hb{member: "a"})
	// b joins within the assignment interval: the target waits.
	r := h.hb(hb{member: "b"})
	if d := h.cdescribe("g"); d.State != "Assigning" || d.Epoch != 2 || d.AssignmentEpoch != 1 || r.MemberEpoch != 1 {
		t.Fatalf("within the interval: %s epoch %d assignment %d; b at %d", d.State, d.Epoch, d.AssignmentEpoch, r.MemberEpoch)
	}
	h.advance(time.Second)
	h.hb(hb{member: "b", epoch: 1, owned: []int32{}})
	if d := h.cdescribe("g"); d.AssignmentEpoch != 2 {
		t.Fatalf("after the interval: %+v", d)
	}
	// t grows to 8 partitions: the next heartbeat bumps the epoch.
	h.catalog = machine.NewCatalog(2, map[string]machine.TopicMeta{"t": {ID: topicT, Partitions: 8}, "u": {ID: topicU, Partitions: 3}})
	h.advance(time.Second)
	h.hb(hb{member: "b", epoch: 2, owned: []int32{}})
	d := h.cdescribe("g")
	if d.Epoch != 3 || d.AssignmentEpoch != 3 {
		t.Fatalf("after growth: epoch %d assignment %d", d.Epoch, d.AssignmentEpoch)
	}
	n := 0
	for _, m := range d.Members {
		for _, tp := range m.TargetAssignment.TopicPartitions {
			n += len(tp.Partitions)
		}
	}
	if n != 8 {
		t.Fatalf("target covers %d partitions, want 8", n)
	}
}

func TestConsumerGroupAPIs(t *testing.T) {
	h := cgHarness(t, nil)
	h.hb(hb{member: "a"})
	// ListGroups with the type filter.
	list := func(types ...string) []kmsg.ListGroupsResponseGroup {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version, r.TypesFilter = 5, types
		return do[*kmsg.ListGroupsResponse](h, r).Groups
	}
	if gs := list("consumer"); len(gs) != 1 || gs[0].GroupType != "consumer" || gs[0].ProtocolType != "consumer" || gs[0].GroupState != "Stable" {
		t.Fatalf("list consumer: %+v", gs)
	}
	if gs := list("classic"); len(gs) != 0 {
		t.Fatalf("list classic: %+v", gs)
	}
	// DescribeGroups v6: not a classic group.
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version, dr.Groups = 6, []string{"g"}
	if d := do[*kmsg.DescribeGroupsResponse](h, dr).Groups[0]; d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe groups: %+v", d)
	}
	// Offsets: the member's epoch is checked.
	commit := func(member string, epoch int32, v int16) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID, r.Generation = v, "g", member, epoch
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 10}}}}
		return do[*kmsg.OffsetCommitResponse](h, r).Topics[0].Partitions[0].ErrorCode
	}
	wantErr(t, "commit", commit("a", 1, 9), nil)
	wantErr(t, "stale commit", commit("a", 0, 9), kerr.StaleMemberEpoch)
	wantErr(t, "unknown member commit", commit("x", 1, 9), kerr.UnknownMemberID)
	wantErr(t, "v8 commit", commit("a", 1, 8), kerr.UnsupportedVersion)
	fetch := func(member string, epoch int32) int16 {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 9
		r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", MemberID: &member, MemberEpoch: epoch}}
		return do[*kmsg.OffsetFetchResponse](h, r).Groups[0].ErrorCode
	}
	wantErr(t, "fetch", fetch("a", 1), nil)
	wantErr(t, "stale fetch", fetch("a", 3), kerr.StaleMemberEpoch)
	wantErr(t, "unknown member fetch", fetch("x", 1), kerr.UnknownMemberID)
	// A classic member of another protocol type cannot join a non-empty
	// consumer group (a "consumer" one can: testdata/mixed.txt).
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Version, jr.Group, jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis, jr.ProtocolType = 9, "g", 10000, 10000, "connect"
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	if r := do[*kmsg.JoinGroupResponse](h, jr); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// DeleteGroups: not while a member is in.
	del := func() int16 {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version, r.Groups = 2, []string{"g"}
		return do[*kmsg.DeleteGroupsResponse](h, r).Groups[0].ErrorCode
	}
	wantErr(t, "delete non-empty", del(), kerr.NonEmptyGroup)
	lr := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	lr.Version, lr.Group, lr.MemberID, lr.MemberEpoch = 1, "g", "a", -1
	do[*kmsg.ConsumerGroupHeartbeatResponse](h, lr)
	if d := h.cdescribe("g"); d.State != "Empty" {
		t.Fatalf("after leave: %s", d.State)
	}
	wantErr(t, "delete empty", del(), nil)
	if d := h.cdescribe("g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("after delete: %+v", d)
	}
	h.restart()
	if len(h.records) != 0 {
		t.Fatalf("records left after delete: %d", len(h.records))
	}
}

func TestConsumerMaxSizeAndRange(t *testing.T) {
	h := cgHarness(t, nil)
	h.cfg.ConsumerMaxSize = 2
	h.restart()
	h.hb(hb{member: "a", assignor: "range"})
	h.advance(time.Second)
	h.hb(hb{member: "b", assignor: "range"})
	if r := h.hb(hb{member: "c"}); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	d := h.cdescribe("g")
	if d.AssignorName != "range" {
		t.Fatalf("assignor %s", d.AssignorName)
	}
	for _, m := range d.Members {
		want := []int32{0, 1, 2}
		if m.MemberID == "b" {
			want = []int32{3, 4, 5}
		}
		if got := m.TargetAssignment.TopicPartitions[0].Partitions; !slices.Equal(got, want) {
			t.Fatalf("%s target %v, want %v", m.MemberID, got, want)
		}
	}
}

// A member asked to revoke that unsubscribes from a topic before it has
// revoked gives up that topic at once too (Kafka's newer
// CurrentAssignmentBuilder), instead of keeping it until the next target.
// Found by TestPropertyConsumerGroups.
func TestConsumerUnsubscribeWhileRevoking(t *testing.T) {
	h := cgHarness(t, func(c *groups.Config) { c.AssignmentInterval = 30 * time.Second })
	h.hb(hb{member: "a", topics: []string{"t", "u"}})
	h.advance(30 * time.Second)
	h.hb(hb{member: "b", topics: []string{"t", "u"}})
	owned := []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicT, Partitions: []int32{0, 1, 2, 3, 4, 5}}, {TopicID: topicU, Partitions: []int32{0, 1, 2}}}
	beat := func(topics []string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", "a", 1, -1
		req.Topics, req.SubscribedTopicNames = owned, topics
		return do[*kmsg.ConsumerGroupHeartbeatResponse](h, req)
	}
	r := beat(nil)
	if r.Assignment == nil || len(parts(r)) == 0 || len(parts(r)) == 6 {
		t.Fatalf("a keeps part of t and revokes the rest: %+v", r.Assignment)
	}
	// a now subscribes to u only, still owning everything: the next
	// target is 30 s away (the assignment interval), but t goes now.
	r = beat([]string{"u"})
	if r.ErrorCode != 0 || r.Assignment == nil || len(parts(r)) != 0 {
		t.Fatalf("unsubscribing from t while revoking: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Assignment)
	}
	if d := h.cdescribe("g"); d.Members[0].MemberID != "a" || len(d.Members[0].Assignment.TopicPartitions) != 0 {
		t.Fatalf("describe: a's assignment %+v", d.Members[0].Assignment)
	}
	// Once it has revoked, a is at the target epoch with nothing (the
	// target still names t until it is recomputed).
	owned = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r = beat(nil); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("after revoking: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
}
