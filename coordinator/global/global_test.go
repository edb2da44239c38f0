package global

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a State as the runtime does and keeps what it wrote.
type harness struct {
	t       *testing.T
	s       *State
	written map[string][]byte
	id      machine.RequestID
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, s: New(), written: map[string][]byte{}}
}

// do runs cmd, checks the one record rule, and returns the reply's Out.
func (h *harness) do(cmd any) any {
	h.t.Helper()
	h.id++
	out := h.s.Handle(time.UnixMilli(5000), machine.Request{ID: h.id, Cmd: cmd})
	for _, r := range out.Records {
		if r.Value == nil {
			delete(h.written, string(r.Key))
		} else {
			h.written[string(r.Key)] = r.Value
		}
	}
	if len(out.Replies) != 1 || out.Replies[0].To != h.id {
		h.t.Fatalf("%T: replies %+v", cmd, out.Replies)
	}
	if err := machine.CheckReplay(h.s, h.written, New); err != nil {
		h.t.Fatalf("%T: %v", cmd, err)
	}
	return out.Replies[0].Out
}

func acl(name, principal string, op kmsg.ACLOperation, tenant string) record.ACL {
	return record.ACL{ResourceType: int8(kmsg.ACLResourceTypeTopic), PatternType: int8(kmsg.ACLResourcePatternTypeLiteral),
		Name: name, Principal: principal, Host: "*", Operation: int8(op), Permission: int8(kmsg.ACLPermissionTypeAllow), Tenant: tenant}
}

// TestCommands: every command's records replay to the live state, and the
// state-dependent refusals are Kafka's and the admin API's.
func TestCommands(t *testing.T) {
	h := newHarness(t)
	a, b := acl("t1", "User:a", kmsg.ACLOperationRead, ""), acl("t2", "User:b", kmsg.ACLOperationWrite, "acme")
	h.do(CreateACLs{ACLs: []record.ACL{a, b, a}})
	if got := h.s.Snapshot().ACLs; len(got) != 2 {
		t.Fatalf("ACLs after create: %+v", got)
	}
	// Two filters selecting one binding both report it; it goes once.
	any := ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	res := h.do(DeleteACLs{Filters: []ACLFilter{any, any}}).([][]record.ACL)
	if len(res) != 2 || len(res[0]) != 1 || len(res[1]) != 1 || res[0][0] != a {
		t.Fatalf("delete: %+v", res)
	}
	if got := h.s.Snapshot().ACLs; len(got) != 1 || got[0] != b {
		t.Fatalf("ACLs after delete: %+v (the other tenant's must stay)", got)
	}

	cred := record.ScramCredential{Salt: []byte("salt"), Iterations: 4096, StoredKey: []byte("st"), ServerKey: []byte("sv")}
	k := record.CredentialKey{User: "alice", Mechanism: 2}
	h.do(AlterCredentials{Changes: []CredentialChange{{Key: k, Cred: &cred}}})
	if got, ok := h.s.Snapshot().Credentials[k]; !ok || got.Iterations != 4096 {
		t.Fatalf("credential: %+v %v", got, ok)
	}
	h.do(AlterCredentials{Changes: []CredentialChange{{Key: k}}})
	if _, ok := h.s.Snapshot().Credentials[k]; ok {
		t.Fatal("a deleted credential stays")
	}

	if err, _ := h.do(SetMember{Org: "acme", Principal: "User:a"}).(error); !errors.Is(err, ErrOrgNotFound) {
		t.Fatalf("member of a missing org: %v", err)
	}
	if out := h.do(CreateOrg{Name: "acme"}); out != nil {
		t.Fatal(out)
	}
	if got := h.s.Snapshot().Orgs["acme"].CreatedMs; got != 5000 {
		t.Fatalf("created %d, want the machine's now", got)
	}
	if err, _ := h.do(CreateOrg{Name: "acme"}).(error); !errors.Is(err, ErrOrgExists) {
		t.Fatalf("second create: %v", err)
	}
	h.do(SetMember{Org: "acme", Principal: "User:a"})
	if err, _ := h.do(DeleteOrg{Name: "acme"}).(error); !errors.Is(err, ErrOrgNotEmpty) {
		t.Fatalf("delete with a member: %v", err)
	}
	h.do(SetMember{Principal: "User:a"})
	if out := h.do(DeleteOrg{Name: "acme"}); out != nil {
		t.Fatal(out)
	}
	if err, _ := h.do(DeleteOrg{Name: "acme"}).(error); !errors.Is(err, ErrOrgNotFound) {
		t.Fatalf("delete of a missing org: %v", err)
	}

	q := record.Quota{EntityType: "org", Name: "acme", KeyName: "max_groups"}
	h.do(AlterQuotas{Changes: []QuotaChange{{Quota: q, Value: 3}}})
	if got := h.s.Snapshot().Quotas[q]; got != 3 {
		t.Fatalf("quota %v", got)
	}
	h.do(AlterQuotas{Changes: []QuotaChange{{Quota: q, Remove: true}, {Quota: record.Quota{EntityType: "org", Default: true, KeyName: "x"}, Remove: true}}})
	if len(h.s.Snapshot().Quotas) != 0 {
		t.Fatalf("quotas left: %v", h.s.Snapshot().Quotas)
	}
	if len(h.written) != 1 {
		t.Fatalf("records left %d, want the other tenant's ACL only", len(h.written))
	}
}

// TestReplayRefusesOtherKeys: a record of another shard, or of an
// unknown kind, stops the load rather than being ignored.
func TestReplayRefusesOtherKeys(t *testing.T) {
	s := New()
	if err := s.Replay(machine.Record{Key: record.GroupKey{Shard: 0, Group: "g"}.Key(), Value: []byte{1}}); err == nil {
		t.Error("a group shard's record replayed")
	}
	if err := s.Replay(machine.Record{Key: append(record.ShardPrefix(record.GlobalShard), 99), Value: []byte{1}}); err == nil {
		t.Error("an unknown kind replayed")
	}
}

// TestTopicsAndMeta: the topic catalog's and the meta's commands replay
// to the live state; placement spreads partitions over the live nodes by
// load; ids are reserved in blocks that never overlap.
func TestTopicsAndMeta(t *testing.T) {
	h := newHarness(t)
	live := Placement{Live: []int32{2, 1, 3}, Self: 1}
	t1 := h.do(CreateTopic{Name: "a", ID: [16]byte{1}, Partitions: 4, Configs: map[string]string{"cleanup.policy": "compact"}, Placement: live}).(record.Topic)
	if want := []int32{1, 2, 3, 1}; !slices.Equal(t1.Leaders, want) {
		t.Fatalf("leaders of a: %v, want %v", t1.Leaders, want)
	}
	// b's first partitions go to the nodes leading fewest (2 and 3).
	t2 := h.do(CreateTopic{Name: "b", ID: [16]byte{2}, Partitions: 2, Placement: live}).(record.Topic)
	if want := []int32{2, 3}; !slices.Equal(t2.Leaders, want) {
		t.Fatalf("leaders of b: %v, want %v", t2.Leaders, want)
	}
	if err, _ := h.do(CreateTopic{Name: "a", ID: [16]byte{9}, Partitions: 1, Placement: live}).(error); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v", err)
	}
	if err, _ := h.do(GrowTopic{Name: "a", Count: 4, Placement: live}).(error); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("grow to the same count: %v", err)
	}
	if err, _ := h.do(GrowTopic{Name: "a", Count: 7, Leaders: []int32{1}, Placement: live}).(error); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("grow by 3 with one leader: %v", err)
	}
	g := h.do(GrowTopic{Name: "a", Count: 6, Leaders: []int32{3, 3}, Placement: live}).(record.Topic)
	if !slices.Equal(g.Leaders, []int32{1, 2, 3, 1, 3, 3}) || g.ID != t1.ID || g.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("grown: %+v", g)
	}
	if err, _ := h.do(GrowTopic{Name: "nope", Count: 2, Placement: live}).(error); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("grow of a missing topic: %v", err)
	}
	h.do(BumpLeaderEpochs{Node: 3})
	h.do(BumpLeaderEpochs{Node: 3})
	if a := h.s.Snapshot().Topics["a"]; !slices.Equal(a.Epochs, []int32{0, 0, 2, 0, 2, 2}) || a.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("node 3's partitions' epochs twice raised: %+v", a)
	}
	topicA := record.ConfigResource{Type: record.ConfigTopic, Name: "a"}
	h.do(AlterConfigs{Resource: topicA, Replace: true, Ops: []ConfigOp{{Name: "retention.ms", Value: "1"}}})
	if a := h.s.Snapshot().Topics["a"]; a.ID != t1.ID || len(a.Configs) != 1 || a.Configs["retention.ms"] != "1" || len(a.Leaders) != 6 {
		t.Fatalf("altered: %+v", a)
	}
	if err, _ := h.do(AlterConfigs{Resource: record.ConfigResource{Type: record.ConfigTopic, Name: "nope"}}).(error); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("configs of a missing topic: %v", err)
	}
	if d := h.do(DeleteTopic{Name: "b"}).(record.Topic); d.ID != t2.ID {
		t.Fatalf("deleted %+v", d)
	}
	if err, _ := h.do(DeleteTopic{Name: "b"}).(error); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v", err)
	}
	if got := h.s.Snapshot().Topics; len(got) != 1 || got["a"].ID != t1.ID {
		t.Fatalf("topics: %+v", got)
	}

	if v := h.do(EnsureMeta{Name: record.MetaClusterID, Value: []byte("first")}).([]byte); string(v) != "first" {
		t.Fatalf("cluster id %q", v)
	}
	if v := h.do(EnsureMeta{Name: record.MetaClusterID, Value: []byte("second")}).([]byte); string(v) != "first" {
		t.Fatalf("cluster id after a second ensure %q, want the first kept", v)
	}
	if first := h.do(ReserveIDs{Name: record.MetaNextProducerID, N: 1000}).(int64); first != 0 {
		t.Fatalf("first block at %d", first)
	}
	if first := h.do(ReserveIDs{Name: record.MetaNextProducerID, N: 1000}).(int64); first != 1000 {
		t.Fatalf("second block at %d", first)
	}
}

// TestConfigs: AlterConfigs applies its operations to the configs the unit
// has (so two writers cannot lose each other's change), validates the
// result, keeps a topic's in its topic record and every other resource's
// in a config record that goes when its last config does.
func TestConfigs(t *testing.T) {
	h := newHarness(t)
	h.do(CreateTopic{Name: "t", Partitions: 1, Configs: map[string]string{"retention.ms": "5"}})
	group := record.ConfigResource{Type: record.ConfigGroup, Name: "g"}
	set := func(r record.ConfigResource, ops ...ConfigOp) any {
		return h.do(AlterConfigs{Resource: r, Ops: ops, Default: func(name string) string {
			if name == "cleanup.policy" {
				return "delete"
			}
			return ""
		}})
	}
	// Two incremental changes, as two nodes would send them: both stay.
	set(group, ConfigOp{Name: "consumer.session.timeout.ms", Value: "50000"})
	set(group, ConfigOp{Name: "consumer.heartbeat.interval.ms", Value: "6000"})
	if got := h.s.Snapshot().Configs[group]; len(got) != 2 || got["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("group configs %v", got)
	}
	// A list appended to starts from its default; subtract removes.
	topic := record.ConfigResource{Type: record.ConfigTopic, Name: "t"}
	if got := set(topic, ConfigOp{Name: "cleanup.policy", Value: "compact", Op: ConfigAppend}).(map[string]string); got["cleanup.policy"] != "delete,compact" || got["retention.ms"] != "5" {
		t.Fatalf("appended: %v", got)
	}
	set(topic, ConfigOp{Name: "cleanup.policy", Value: "delete", Op: ConfigSubtract})
	if got := h.s.Snapshot().Topics["t"].Configs; got["cleanup.policy"] != "compact" {
		t.Fatalf("subtracted: %v", got)
	}
	// Refused by Validate, or validate only: nothing changes.
	refuse := errors.New("no")
	if err, _ := h.do(AlterConfigs{Resource: group, Ops: []ConfigOp{{Name: "x", Value: "1"}}, Validate: func(map[string]string) error { return refuse }}).(error); err != refuse {
		t.Fatalf("refused: %v", err)
	}
	if got := h.do(AlterConfigs{Resource: group, Replace: true, ValidateOnly: true}); got != nil && len(got.(map[string]string)) != 0 {
		t.Fatalf("validate only replace: %v", got)
	}
	if got := h.s.Snapshot().Configs[group]; len(got) != 2 {
		t.Fatalf("group configs after a refusal and a validation %v", got)
	}
	// Deleting the last config deletes the record.
	set(group, ConfigOp{Name: "consumer.session.timeout.ms", Op: ConfigDelete}, ConfigOp{Name: "consumer.heartbeat.interval.ms", Op: ConfigDelete})
	if _, ok := h.s.Snapshot().Configs[group]; ok || len(h.written) != 1 {
		t.Fatalf("after deleting every config: %v, written %d", h.s.Snapshot().Configs, len(h.written))
	}
	broker := record.ConfigResource{Type: record.ConfigBroker}
	set(broker, ConfigOp{Name: "max.connections", Value: "10"})
	if got := h.s.Snapshot().Configs[broker]; got["max.connections"] != "10" {
		t.Fatalf("cluster default %v", got)
	}
}
