package e2e

// Share groups' dead-letter topics (KIP-1191) against `cohort serve`,
// with franz-go's share consumer rejecting and releasing records, kadm
// and raw configs setting the group's and the cluster's configs, and a
// plain franz-go consumer reading the dead letters back.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestShareGroupDeadLetters: a group with a dead-letter topic has the
// records its consumer rejects (at delivery 1) and the ones it releases
// until the delivery limit (2) written there, one dead letter per
// record, with Kafka's __dlq.errors.* headers and, with
// errors.deadletterqueue.copy.record.enable, the record's key and value;
// every record then ends archived or acknowledged (the start offset at
// the log's end). A topic without errors.deadletterqueue.group.enable
// gets nothing and the records are archived all the same; a missing
// topic is created when the cluster allows it; a name of an internal
// topic is INVALID_CONFIG.
func TestShareGroupDeadLetters(t *testing.T) {
	p := testkit.StartBinary(t, t.TempDir())
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ClientID("cohort-e2e-share-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const topic, records = "orders", 40
	createTopic(t, adm, topic, 2)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")}, "dlq.orders"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, adm, "dlq.closed", 1) // not opted in
	var rs []*kgo.Record
	for i := range records {
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	where := map[string]string{} // "partition/offset" → key
	for _, r := range rs {
		where[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = string(r.Key)
	}

	// An internal topic is refused when set, as Kafka's GroupConfig.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g-dlq"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "errors.deadletterqueue.topic.name", Value: kmsg.StringPtr("__consumer_offsets")}}
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, cl); err != nil || kerr.ErrorForCode(resp.Resources[0].ErrorCode) != kerr.InvalidConfig {
		t.Fatalf("an internal dead-letter topic: %v %+v, want INVALID_CONFIG", err, resp)
	}

	// consume runs a share consumer of group until every record is
	// settled: keys divisible by 4 rejected, keys 1 mod 4 released each
	// time (archived at the delivery limit of 2), the rest accepted.
	consume := func(group string) {
		t.Helper()
		for name, value := range map[string]string{
			"share.auto.offset.reset":    "earliest",
			"share.delivery.count.limit": "2",
		} {
			setGroupConfig(ctx, t, cl, group, name, value)
		}
		c, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("cohort-e2e-share-dlq-consumer"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		settled := map[string]bool{}
		for len(settled) < records {
			if ctx.Err() != nil {
				t.Fatalf("%s: %d of %d records settled", group, len(settled), records)
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := c.PollRecords(pctx, 100)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) {
				k, _ := strconv.Atoi(string(r.Key))
				switch {
				case k%4 == 0:
					r.Ack(kgo.AckReject)
					settled[string(r.Key)] = true
				case k%4 == 1:
					r.Ack(kgo.AckRelease)
					if r.DeliveryCount() >= 2 {
						settled[string(r.Key)] = true
					}
				default:
					r.Ack(kgo.AckAccept)
					settled[string(r.Key)] = true
				}
			})
			if err := c.FlushAcks(ctx); err != nil {
				t.Fatalf("%s: flush: %v", group, err)
			}
		}
	}
	// finished waits until every record of the group is acknowledged or
	// archived: its start offsets at the log's end, which the dead
	// letters' write holds back.
	finished := func(group string) {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 30*time.Second, group+"'s start offsets at the log's end", func() bool {
			ds, err := adm.DescribeShareGroupOffsets(ctx, group)
			if err != nil || ds[group].Err != nil {
				return false
			}
			n := 0
			for _, o := range ds[group].Offsets.Sorted() {
				if e, ok := ends.Lookup(topic, o.Partition); !ok || o.StartOffset != e.Offset {
					return false
				}
				n++
			}
			return n == 2
		})
	}
	// letters reads every record of a dead-letter topic.
	letters := func(dlq string, want int) []*kgo.Record {
		t.Helper()
		c, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var got []*kgo.Record
		for len(got) < want {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			fs := c.PollFetches(pctx)
			pcancel()
			if pctx.Err() != nil && fs.NumRecords() == 0 {
				break
			}
			got = append(got, fs.Records()...)
		}
		return got
	}
	header := func(r *kgo.Record, name string) string {
		for _, h := range r.Headers {
			if h.Key == name {
				return string(h.Value)
			}
		}
		return "<none>"
	}

	// A dead-letter topic, copying the records.
	setGroupConfig(ctx, t, cl, "g-dlq", "errors.deadletterqueue.topic.name", "dlq.orders")
	setGroupConfig(ctx, t, cl, "g-dlq", "errors.deadletterqueue.copy.record.enable", "true")
	consume("g-dlq")
	finished("g-dlq")
	got := letters("dlq.orders", records/2)
	if len(got) != records/2 {
		t.Fatalf("%d dead letters, want %d", len(got), records/2)
	}
	seen := map[string]bool{}
	for _, r := range got {
		pos := header(r, "__dlq.errors.partition") + "/" + header(r, "__dlq.errors.offset")
		key, ok := where[pos]
		if !ok {
			t.Fatalf("dead letter for %s, no record there: %+v", pos, r.Headers)
		}
		k, _ := strconv.Atoi(key)
		wantCount, wantMsg := "1", "Offset rejected by client."
		if k%4 == 1 {
			wantCount, wantMsg = "2", "Offset delivery count exceeded the threshold."
		}
		switch {
		case k%4 != 0 && k%4 != 1:
			t.Errorf("dead letter for key %d, which was accepted", k)
		case seen[key]:
			t.Errorf("two dead letters for key %d", k)
		case header(r, "__dlq.errors.topic") != topic || header(r, "__dlq.errors.group") != "g-dlq" ||
			header(r, "__dlq.errors.delivery.count") != wantCount || header(r, "__dlq.errors.message") != wantMsg:
			t.Errorf("key %d's dead letter headers %+v, want count %s and %q", k, r.Headers, wantCount, wantMsg)
		case string(r.Key) != key || string(r.Value) != "value-"+key:
			t.Errorf("key %d's dead letter carries key %q value %q", k, r.Key, r.Value)
		}
		seen[key] = true
	}

	// A topic not opted in gets nothing; the records are archived.
	setGroupConfig(ctx, t, cl, "g-closed", "errors.deadletterqueue.topic.name", "dlq.closed")
	consume("g-closed")
	finished("g-closed")
	if got := letters("dlq.closed", 1); len(got) != 0 {
		t.Errorf("%d dead letters in a topic without errors.deadletterqueue.group.enable", len(got))
	}

	// A missing topic, created as the cluster allows; no copy: headers
	// only.
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "errors.deadletterqueue.auto.create.topics.enable", Value: kmsg.StringPtr("true")}}); err != nil {
		t.Fatal(err)
	}
	setGroupConfig(ctx, t, cl, "g-auto", "errors.deadletterqueue.topic.name", "dlq.auto")
	consume("g-auto")
	finished("g-auto")
	got = letters("dlq.auto", records/2)
	if len(got) != records/2 {
		t.Fatalf("%d dead letters in the created topic, want %d", len(got), records/2)
	}
	for _, r := range got {
		if r.Key != nil || r.Value != nil || header(r, "__dlq.errors.group") != "g-auto" {
			t.Fatalf("a dead letter without copy: key %q value %q headers %+v", r.Key, r.Value, r.Headers)
		}
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "dlq.auto")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := cfgs.On("dlq.auto", nil); err != nil || !strings.Contains(fmt.Sprint(c.Configs), "errors.deadletterqueue.group.enable") {
		t.Errorf("the created topic's configs: %+v %v", c, err)
	} else {
		for _, kv := range c.Configs {
			if kv.Key == "errors.deadletterqueue.group.enable" && kv.MaybeValue() != "true" {
				t.Errorf("the created topic has errors.deadletterqueue.group.enable=%s", kv.MaybeValue())
			}
		}
	}
}

// TestClusterShareGroupDeadLetters: dead letters on three nodes on etcd.
// The source topic has two partitions on each node, the dead-letter
// topic one partition, on node 3; the share-state units are spread over
// the three. A franz-go share consumer rejects every record: each
// partition's dead letters are written by the node serving its
// share-state unit, which reads the record from its leader and writes to
// node 3 through its peer client when they are other nodes'. Every
// record gets exactly its dead letter, its key and value copied.
func TestClusterShareGroupDeadLetters(t *testing.T) {
	longTest(t)
	c := startCluster(t, 1, 3)
	clusterDeadLetters(t, c, func(id int32) string { return c.node(id).Addr }, nil, "orders-c", "g-cdlq")
}

// TestClusterOrgDeadLetters: the same for a group of an organisation,
// acme, whose member alice (SCRAM, over the SASL listeners) makes the
// topics and consumes: the node serving a partition's share state writes
// its dead letters to the leader of acme's dead-letter partition, and
// reads the copies from the source partition's leader, naming acme in
// the requests' topic entries, which the leaders believe from the nodes'
// principal (a super user, with --authorizer). Before, every such letter
// was archived unwritten (UNKNOWN_TOPIC_ID: the node's requests acted for
// the default organisation). The default organisation sees none of it.
func TestClusterOrgDeadLetters(t *testing.T) {
	longTest(t)
	c := startCluster(t, 1, 3, "--authorizer", "--super-users", "User:ANONYMOUS;User:alice",
		"--kafka-listen", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/v1/orgs", `{"name":"acme"}`},
		{"PUT", "/api/v1/orgs/acme/members/User:alice", ""},
	} {
		req, err := http.NewRequestWithContext(ctx, r.method, "http://"+c.node(1).HTTPAddr+r.path, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %s", r.method, r.path, resp.Status)
		}
	}
	listener := regexp.MustCompile(`msg="cohort listening" kafka=(\S+) listener=SASL_PLAINTEXT`)
	sasl := map[int32]string{}
	for _, id := range c.live() {
		m := listener.FindStringSubmatch(c.node(id).Log())
		if m == nil {
			t.Fatalf("node %d logged no SASL_PLAINTEXT listener", id)
		}
		sasl[id] = m[1]
	}
	alice := []kgo.Opt{kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism())}
	clusterDeadLetters(t, c, func(id int32) string { return sasl[id] }, alice, "orders-o", "g-odlq")
	for _, id := range c.live() {
		if leaders, err := partitionLeaders(c.node(id).Addr, "dlq.orders-o"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("node %d: the default organisation's dlq.orders-o: %v %v, want UNKNOWN_TOPIC_OR_PARTITION", id, leaders, err)
		}
	}
}

// clusterDeadLetters: on c's three nodes, a franz-go share consumer of
// group rejects every record of topic (6 partitions over the nodes,
// share state on every node), whose dead letters go to dlq.<topic>, one
// partition on node 3, with the records' keys and values; each comes
// back from there once, with Kafka's headers. The clients are those of
// opts, reaching node id at addr(id).
func clusterDeadLetters(t *testing.T, c *testCluster, addr func(int32) string, opts []kgo.Opt, topic, group string) {
	t.Helper()
	const records = 60
	dlq := "dlq." + topic
	c.createTopicAs(addr, opts, topic, 6, 1, 2, 3)
	c.createTopicAs(addr, opts, dlq, 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var seeds []string
	for _, id := range c.live() {
		seeds = append(seeds, addr(id))
	}
	with := func(more ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...), more...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	cl := with(kgo.DefaultProduceTopic(topic))
	adm := kadm.NewClient(cl)
	if rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "errors.deadletterqueue.group.enable", Value: kmsg.StringPtr("true")}}, dlq); err != nil || rs[0].Err != nil {
		t.Fatalf("opt %s in: %v %+v", dlq, err, rs)
	}
	for name, value := range map[string]string{
		"share.auto.offset.reset":                   "earliest",
		"errors.deadletterqueue.topic.name":         dlq,
		"errors.deadletterqueue.copy.record.enable": "true",
	} {
		setGroupConfig(ctx, t, cl, group, name, value)
	}
	var rs []*kgo.Record
	for i := range records {
		rs = append(rs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	where := map[string]string{}
	for _, r := range rs {
		where[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = string(r.Key)
	}

	sc := with(kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	rejected := map[string]bool{}
	for len(rejected) < records {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records rejected", len(rejected), records)
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := sc.PollRecords(pctx, 100)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			r.Ack(kgo.AckReject)
			rejected[string(r.Key)] = true
		})
		if err := sc.FlushAcks(ctx); err != nil {
			t.Logf("flush: %v (the records come again)", err)
		}
	}

	rc := with(kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]int{}
	for n := 0; n < records; {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		fs := rc.PollFetches(pctx)
		pcancel()
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			t.Fatalf("%d dead letters in 10 s, want %d", n, records)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			hs := map[string]string{}
			for _, h := range r.Headers {
				hs[h.Key] = string(h.Value)
			}
			key := where[hs["__dlq.errors.partition"]+"/"+hs["__dlq.errors.offset"]]
			got[key]++
			if key == "" || string(r.Key) != key || string(r.Value) != "value-"+key || hs["__dlq.errors.topic"] != topic ||
				hs["__dlq.errors.group"] != group || hs["__dlq.errors.message"] != "Offset rejected by client." {
				t.Errorf("dead letter key %q value %q headers %v", r.Key, r.Value, hs)
			}
		})
	}
	for i := range records {
		if n := got[strconv.Itoa(i)]; n != 1 {
			t.Errorf("key %d has %d dead letters", i, n)
		}
	}
}
