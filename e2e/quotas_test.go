package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/quota"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startQuotaNode starts a node whose rate quotas measure over a short
// window (2 samples of 100 ms: a throttle is at most 200 ms), so that a
// throttled client is not held for Kafka's 11 s.
func startQuotaNode(t *testing.T) *node.Node {
	t.Helper()
	return testkit.StartNode(t, node.Config{HTTPListen: "127.0.0.1:0", QuotaWindow: quota.Window{Size: 100 * time.Millisecond, Samples: 2}})
}

func quotaClient(t *testing.T, addr string, opts ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func orgEntity(name *string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: quota.EntityOrg, Name: name}}
}

// setQuotas sets (or, with a negative value, removes) keys of an org
// entity and fails the test on any error.
func setQuotas(t *testing.T, adm *kadm.Client, name *string, kv map[string]float64) {
	t.Helper()
	var ops []kadm.AlterClientQuotaOp
	for k, v := range kv {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: v, Remove: v < 0})
	}
	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{Entity: orgEntity(name), Ops: ops}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas %v: %v %+v", kv, err, res)
	}
}

func describeString(qs kadm.DescribedClientQuotas) string {
	var b strings.Builder
	for _, q := range qs {
		for _, e := range q.Entity {
			b.WriteString(e.String())
		}
		for _, v := range q.Values {
			fmt.Fprintf(&b, " %s=%g", v.Key, v.Value)
		}
		b.WriteString(";")
	}
	return b.String()
}

func TestClientQuotasAPIs(t *testing.T) {
	n := startQuotaNode(t)
	_, adm := quotaClient(t, n.KafkaAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acme, def := "acme", "default"

	setQuotas(t, adm, nil, map[string]float64{quota.ProducerByteRate: 1 << 20, quota.MaxGroups: 100})
	setQuotas(t, adm, &acme, map[string]float64{quota.RequestRate: 50.5, quota.MaxMembersPerGroup: 10})
	setQuotas(t, adm, &def, map[string]float64{quota.ConsumerByteRate: 2048})

	all, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "org=<default> max_groups=100 producer_byte_rate=1.048576e+06;org=acme max_members_per_group=10 request_rate=50.5;org=default consumer_byte_rate=2048;"
	if got := describeString(all); got != want {
		t.Fatalf("describe all:\n got %s\nwant %s", got, want)
	}
	// Strict with no components: no entity has none.
	if qs, err := adm.DescribeClientQuotas(ctx, true, nil); err != nil || len(qs) != 0 {
		t.Fatalf("strict, no components: %v %s", err, describeString(qs))
	}
	exact, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: quota.EntityOrg, MatchName: &acme, MatchType: kmsg.QuotasMatchTypeExact}})
	if got := describeString(exact); err != nil || got != "org=acme max_members_per_group=10 request_rate=50.5;" {
		t.Fatalf("describe exact acme: %v %s", err, got)
	}
	dflt, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: quota.EntityOrg, MatchType: kmsg.QuotasMatchTypeDefault}})
	if got := describeString(dflt); err != nil || got != "org=<default> max_groups=100 producer_byte_rate=1.048576e+06;" {
		t.Fatalf("describe default: %v %s", err, got)
	}

	// validate_only: valid, and nothing changes.
	res, err := adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: orgEntity(&acme), Ops: []kadm.AlterClientQuotaOp{{Key: quota.RequestRate, Value: 1}}}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("validate only: %v %+v", err, res)
	}
	// Removal of one key; the entity keeps the other.
	setQuotas(t, adm, &acme, map[string]float64{quota.RequestRate: -1})
	exact, err = adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: quota.EntityOrg, MatchName: &acme, MatchType: kmsg.QuotasMatchTypeExact}})
	if got := describeString(exact); err != nil || got != "org=acme max_members_per_group=10;" {
		t.Fatalf("after validate_only and removal: %v %s", err, got)
	}

	// Bad entries: each refused on its own with INVALID_REQUEST and a
	// message; the good one beside them is applied.
	user := "alice"
	bad := []kadm.AlterClientQuotaEntry{
		{Entity: orgEntity(&acme), Ops: []kadm.AlterClientQuotaOp{{Key: "bogus_rate", Value: 1}}},
		{Entity: orgEntity(&acme), Ops: []kadm.AlterClientQuotaOp{{Key: quota.MaxGroups, Value: 0}}},
		{Entity: orgEntity(&acme), Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: 1.5}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &user}}, Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: 1}}},
		{Entity: nil, Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: 1}}},
		{Entity: orgEntity(&def), Ops: []kadm.AlterClientQuotaOp{{Key: quota.ConsumerByteRate, Remove: true}}},
	}
	wantMsg := []string{"Invalid configuration key bogus_rate", "Quota max_groups must be greater than 0",
		"Proposed value for producer_byte_rate is not a whole number: 1.5", "Unhandled client quota entity type: user",
		"Invalid empty client quota entity", ""}
	res, err = adm.AlterClientQuotas(ctx, bad)
	if err != nil || len(res) != len(bad) {
		t.Fatalf("bad entries: %v %+v", err, res)
	}
	for i, r := range res {
		if wantMsg[i] == "" {
			if r.Err != nil {
				t.Errorf("entry %d: %v", i, r.Err)
			}
			continue
		}
		if !errors.Is(r.Err, kerr.InvalidRequest) || !strings.HasPrefix(r.ErrMessage, wantMsg[i]) {
			t.Errorf("entry %d: %v %q, want INVALID_REQUEST %q", i, r.Err, r.ErrMessage, wantMsg[i])
		}
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: kmsg.QuotasMatchTypeAny}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("describe client-id: %v, want INVALID_REQUEST", err)
	}
	all, err = adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: quota.EntityOrg, MatchType: kmsg.QuotasMatchTypeAny}})
	if got := describeString(all); err != nil || got != "org=<default> max_groups=100 producer_byte_rate=1.048576e+06;org=acme max_members_per_group=10;" {
		t.Fatalf("describe any after the bad entries: %v %s", err, got)
	}
}

// throttleHook counts the throttles brokers tell a client of.
type throttleHook struct{ n, maxMs atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	for {
		cur := h.maxMs.Load()
		if d.Milliseconds() <= cur || h.maxMs.CompareAndSwap(cur, d.Milliseconds()) {
			return
		}
	}
}

var _ kgo.HookBrokerThrottle = (*throttleHook)(nil)

// TestQuotaProducerThrottled: a producer over its organisation's
// producer_byte_rate is told to back off (ThrottleMillis > 0) and every
// record still arrives.
func TestQuotaProducerThrottled(t *testing.T) {
	n := startQuotaNode(t)
	_, adm := quotaClient(t, n.KafkaAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "throttled"); err != nil {
		t.Fatal(err)
	}
	setQuotas(t, adm, nil, map[string]float64{quota.ProducerByteRate: 1024})

	hook := &throttleHook{}
	// Small batches: several produce requests, each over the quota.
	prod, _ := quotaClient(t, n.KafkaAddr(), kgo.WithHooks(hook), kgo.DefaultProduceTopic("throttled"), kgo.ProducerBatchMaxBytes(4<<10))
	const records = 64
	value := make([]byte, 1024)
	var failed atomic.Int64
	for i := range records {
		prod.Produce(ctx, &kgo.Record{Value: value, Key: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil || failed.Load() != 0 {
		t.Fatalf("flush: %v, %d records failed", err, failed.Load())
	}
	if hook.n.Load() == 0 {
		t.Fatal("no produce response carried a throttle")
	}
	offs, err := adm.ListEndOffsets(ctx, "throttled")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("throttled", 0); o.Offset != records {
		t.Fatalf("end offset %d, want %d", o.Offset, records)
	}
	if got := throttledSeconds(t, n, "default", "produce"); got <= 0 {
		t.Fatalf("cohort_quota_throttle_seconds_total{org=default,kind=produce} = %v", got)
	}
}

// throttledSeconds reads the node's throttle counter from /metrics.
func throttledSeconds(t *testing.T, n *node.Node, org, kind string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	series := fmt.Sprintf(`cohort_quota_throttle_seconds_total{kind=%q,org=%q} `, kind, org)
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, series); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	return 0
}

// TestQuotaConsumerThrottled: a consumer over consumer_byte_rate is
// throttled and still gets every record (Kafka returns the data and
// throttles after).
func TestQuotaConsumerThrottled(t *testing.T) {
	n := startQuotaNode(t)
	prod, adm := quotaClient(t, n.KafkaAddr(), kgo.DefaultProduceTopic("fetched"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "fetched"); err != nil {
		t.Fatal(err)
	}
	const records = 64
	value := make([]byte, 1024)
	for range records {
		prod.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	setQuotas(t, adm, nil, map[string]float64{quota.ConsumerByteRate: 1024})

	hook := &throttleHook{}
	cons, _ := quotaClient(t, n.KafkaAddr(), kgo.WithHooks(hook), kgo.ConsumeTopics("fetched"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(8<<10))
	got := 0
	for got < records {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("after %d records: %v", got, err)
		}
		got += fs.NumRecords()
	}
	if got != records {
		t.Fatalf("consumed %d records, want %d", got, records)
	}
	if hook.n.Load() == 0 {
		t.Fatal("no fetch response carried a throttle")
	}
}

// rawJoin sends one JoinGroup v9 without a member id.
func rawJoin(ctx context.Context, cl *kgo.Client, group string) (*kmsg.JoinGroupResponse, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.ProtocolType = group, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
	return req.RequestWith(ctx, cl)
}

// rawHeartbeat sends a KIP-848 join (epoch 0) of member id.
func rawHeartbeat(ctx context.Context, cl *kgo.Client, group, id string) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, id, 0
	req.RebalanceTimeoutMillis = 10000
	req.SubscribedTopicNames = []string{"t"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req.RequestWith(ctx, cl)
}

// TestQuotaMaxMembersPerGroup: the organisation's max_members_per_group
// refuses the member beyond it, classic and KIP-848, with
// GROUP_MAX_SIZE_REACHED (the heartbeat's message naming the quota).
func TestQuotaMaxMembersPerGroup(t *testing.T) {
	n := startQuotaNode(t)
	cl, adm := quotaClient(t, n.KafkaAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	setQuotas(t, adm, nil, map[string]float64{quota.MaxMembersPerGroup: 1})

	// Classic: the first JoinGroup gets its member id (and holds the only
	// place: ids handed out count), the second is refused.
	if r, err := rawJoin(ctx, cl, "classic"); err != nil || r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v %+v", err, r)
	}
	if r, err := rawJoin(ctx, cl, "classic"); err != nil || r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("second join: %v %+v, want GROUP_MAX_SIZE_REACHED", err, r)
	}

	// KIP-848.
	if r, err := rawHeartbeat(ctx, cl, "kip848", "m1-aaaaaaaaaaaaaaaaaa"); err != nil || r.ErrorCode != 0 {
		t.Fatalf("first heartbeat: %v %+v", err, r)
	}
	r, err := rawHeartbeat(ctx, cl, "kip848", "m2-aaaaaaaaaaaaaaaaaa")
	if err != nil || r.ErrorCode != kerr.GroupMaxSizeReached.Code || r.ErrorMessage == nil ||
		!strings.Contains(*r.ErrorMessage, "max_members_per_group") {
		t.Fatalf("second heartbeat: %v %+v, want GROUP_MAX_SIZE_REACHED naming the quota", err, r)
	}
	// Raised, the member fits.
	setQuotas(t, adm, nil, map[string]float64{quota.MaxMembersPerGroup: 2})
	if r, err := rawHeartbeat(ctx, cl, "kip848", "m2-aaaaaaaaaaaaaaaaaa"); err != nil || r.ErrorCode != 0 {
		t.Fatalf("heartbeat after raising the quota: %v %+v", err, r)
	}
}

// TestQuotaMaxGroups: the organisation's max_groups refuses a new group
// beyond it, whichever shard it hashes to, with GROUP_MAX_SIZE_REACHED;
// its existing groups are unaffected, and a deleted group makes room.
func TestQuotaMaxGroups(t *testing.T) {
	n := startQuotaNode(t)
	cl, adm := quotaClient(t, n.KafkaAddr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	setQuotas(t, adm, nil, map[string]float64{quota.MaxGroups: 3})

	for _, g := range []string{"g1", "g2", "g3"} {
		if r, err := rawJoin(ctx, cl, g); err != nil || r.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("join %s: %v %+v", g, err, r)
		}
	}
	if r, err := rawJoin(ctx, cl, "g4"); err != nil || r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("join g4: %v %+v, want GROUP_MAX_SIZE_REACHED", err, r)
	}
	r, err := rawHeartbeat(ctx, cl, "g5", "m1-aaaaaaaaaaaaaaaaaa")
	if err != nil || r.ErrorCode != kerr.GroupMaxSizeReached.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "max_groups") {
		t.Fatalf("heartbeat g5: %v %+v, want GROUP_MAX_SIZE_REACHED naming the quota", err, r)
	}
	// An existing group still takes members.
	if r, err := rawJoin(ctx, cl, "g1"); err != nil || r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("join g1 again: %v %+v", err, r)
	}
	// A simple consumer's commit to a new group is refused too.
	cr, err := adm.CommitOffsets(ctx, "g6", kadm.Offsets{"t": {0: {Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1}}})
	if err == nil {
		err = cr.Error()
	}
	if !errors.Is(err, kerr.GroupMaxSizeReached) {
		t.Fatalf("commit to g6: %v, want GROUP_MAX_SIZE_REACHED", err)
	}
}
