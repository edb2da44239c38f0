package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// versionLog records, per client id, the highest version of each API key
// the node received (kgo's write hooks do not report the version; the
// node's observer seam does).
type versionLog struct {
	observe.Nop
	mu  sync.Mutex
	max map[string]map[int16]int16
}

func (l *versionLog) RequestReceived(ctx context.Context, r observe.Request) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max[r.ClientID] == nil {
		l.max[r.ClientID] = map[int16]int16{}
	}
	if v, ok := l.max[r.ClientID][r.Key]; !ok || r.Version > v {
		l.max[r.ClientID][r.Key] = r.Version
	}
	return ctx
}

// version returns the highest version of key client sent, or -1.
func (l *versionLog) version(client string, key kmsg.Key) int16 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.max[client][key.Int16()]; ok {
		return v
	}
	return -1
}

// TestFranzOffsetsV10: OffsetCommit and OffsetFetch v10 name topics by id.
// franz-go's group consumer uses v10 once the node advertises it (the
// node's observer sees the versions), and what it commits is what a v9
// fetch by name reads. Raw v10 requests through kgo: the node answers at
// v10, by id, an unknown id with UNKNOWN_TOPIC_ID in each partition, and
// a fetch of every offset with the topic's id.
func TestFranzOffsetsV10(t *testing.T) {
	vl := &versionLog{max: map[string]map[int16]int16{}}
	// Its one group has one member: the default 3 s initial rebalance
	// delay was most of this test's time, waiting for no one.
	cfg := node.Config{Observer: vl}
	cfg.Groups.InitialRebalanceDelay = 200 * time.Millisecond
	cfg.Groups.InitialRebalanceQuiet = 50 * time.Millisecond
	n := testkit.StartNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const topic, group, records = "v10", "g10", 40
	adm, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID("v10-admin"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	kadmin := kadm.NewClient(adm)
	created, err := kadmin.CreateTopic(ctx, 2, 1, nil, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("create topic: %v %v", err, created.Err)
	}
	id := [16]byte(created.ID)
	for i := range records {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "r%d", i)}
		if err := adm.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	// The group consumer: reads everything, commits, and leaves.
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID("v10-group"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	for got := 0; got < records; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, records, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("fetch: %v", err) })
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cl.Close()
	if v := vl.version("v10-group", kmsg.OffsetCommit); v != 10 {
		t.Errorf("franz-go's group client committed with OffsetCommit v%d, want v10", v)
	}
	if v := vl.version("v10-group", kmsg.OffsetFetch); v != 10 {
		t.Errorf("franz-go's group client fetched with OffsetFetch v%d, want v10", v)
	}

	// A v9 fetch by name reads what the v10 commit wrote by id. kgo sends
	// a request at the highest version both sides have (and turns names
	// into ids for OffsetFetch v10), so this client is capped at v9.
	old, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID("v9-admin"),
		kgo.MaxVersions(capped(kmsg.OffsetFetch, 9)))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	v9 := kmsg.NewPtrOffsetFetchRequest()
	v9.Version = 9
	v9.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0, 1}}}}}
	got9 := fetchOffsetsRaw(ctx, t, old, v9)
	if want := "v10/0=20 v10/1=20"; got9 != want {
		t.Errorf("v9 fetch by name: %s, want %s", got9, want)
	}

	// A raw v10 commit: by id, and an id the node does not have.
	unknown := [16]byte{0xde, 0xad}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, "raw10", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: id, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}, {Partition: 5, Offset: 1, LeaderEpoch: -1}}},
		{TopicID: unknown, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}, {Partition: 1, Offset: 1, LeaderEpoch: -1}}},
	}
	cr, err := commit.RequestWith(ctx, adm)
	if err != nil {
		t.Fatalf("v10 commit: %v", err)
	}
	if cr.Version != 10 {
		t.Errorf("v10 commit answered at v%d", cr.Version)
	}
	if got, want := commitCodes(cr), fmt.Sprintf("%x/0=<nil> %x/5=%v %x/0=%v %x/1=%v", id, id, kerr.UnknownTopicOrPartition, unknown, kerr.UnknownTopicID, unknown, kerr.UnknownTopicID); got != want {
		t.Errorf("v10 commit answered\n%s\nwant\n%s", got, want)
	}
	if v := vl.version("v10-admin", kmsg.OffsetCommit); v != 10 {
		t.Errorf("node saw the raw commit at v%d, want v10", v)
	}

	// A raw v10 fetch: by id, an unknown id, and every offset.
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 10
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "raw10", Topics: []kmsg.OffsetFetchRequestGroupTopic{{TopicID: id, Partitions: []int32{0, 1}}, {TopicID: unknown, Partitions: []int32{3}}}},
		{Group: group}, // Topics nil: every offset
	}
	want := fmt.Sprintf("%x/0=7 %x/1=-1 %x/3=-1:%v | %x/0=20 %x/1=20", id, id, unknown, kerr.UnknownTopicID, id, id)
	if got := fetchOffsetsRaw(ctx, t, adm, fetch); got != want {
		t.Errorf("v10 fetch:\n%s\nwant\n%s", got, want)
	}
}

// capped is kgo's stable versions with key capped at v.
func capped(key kmsg.Key, v int16) *kversion.Versions {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(key.Int16(), v)
	return vs
}

// commitCodes prints an OffsetCommit response as topic/partition=error,
// topics by id.
func commitCodes(r *kmsg.OffsetCommitResponse) string {
	s := ""
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if s != "" {
				s += " "
			}
			s += fmt.Sprintf("%x/%d=%v", t.TopicID, p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	return s
}

// fetchOffsetsRaw sends an OffsetFetch v8+ at its version, checks that it
// is answered at that version without group errors, and prints the
// offsets as topic/partition=offset[:error], topics by name before v10
// and by id from v10, groups separated by |.
func fetchOffsetsRaw(ctx context.Context, t *testing.T, cl *kgo.Client, req *kmsg.OffsetFetchRequest) string {
	t.Helper()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("v%d fetch: %v", req.Version, err)
	}
	if resp.Version != req.Version {
		t.Errorf("v%d fetch answered at v%d", req.Version, resp.Version)
	}
	s := ""
	for i, g := range resp.Groups {
		if i > 0 {
			s += " |"
		}
		if g.ErrorCode != 0 {
			t.Errorf("v%d fetch of %s: %v", req.Version, g.Group, kerr.ErrorForCode(g.ErrorCode))
		}
		for _, tp := range g.Topics {
			name := tp.Topic
			if req.Version >= 10 {
				name = fmt.Sprintf("%x", tp.TopicID)
			}
			for _, p := range tp.Partitions {
				if s != "" {
					s += " "
				}
				s += fmt.Sprintf("%s/%d=%d", name, p.Partition, p.Offset)
				if p.ErrorCode != 0 {
					s += fmt.Sprintf(":%v", kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
	}
	return s
}
