package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRetentionKadm: topics with small segments hold several segment
// files; lowering retention.bytes on one and retention.ms on the other
// with kadm's AlterTopicConfigs deletes their oldest segments soon after
// (a config change runs a retention check; the periodic one is 5 minutes
// away): kadm's ListStartOffsets moves forward to the first segment left,
// a consumer from the start begins there, and the files below are gone
// from the data dir. The end offsets do not move.
func TestRetentionKadm(t *testing.T) {
	dir := t.TempDir()
	n := testkit.StartNode(t, node.Config{DataDir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	small := map[string]*string{"segment.bytes": kadm.StringPtr("1024")}
	for _, topic := range []string{"ret-bytes", "ret-ms"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, small, topic); err != nil {
			t.Fatal(err)
		}
	}
	// One record a batch (ProduceSync one at a time), ~250 bytes each:
	// four batches a segment. In ret-ms the first 30 are two days old.
	value := strings.Repeat("v", 200)
	old := time.Now().Add(-48 * time.Hour)
	const records = 40
	for i := range records {
		for _, topic := range []string{"ret-bytes", "ret-ms"} {
			r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d-%s", i, value)}
			if topic == "ret-ms" && i < 30 {
				r.Timestamp = old.Add(time.Duration(i) * time.Millisecond)
			}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	tds, err := adm.ListTopics(ctx, "ret-bytes", "ret-ms")
	if err != nil {
		t.Fatal(err)
	}
	// segments lists a topic's partition 0 segment files by base offset.
	segments := func(topic string) []int64 {
		t.Helper()
		id := tds[topic].ID
		files, err := filepath.Glob(filepath.Join(dir, "topics", hex.EncodeToString(id[:]), "0", "*.log"))
		if err != nil {
			t.Fatal(err)
		}
		var bases []int64
		for _, f := range files {
			b, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(f), ".log"), 10, 64)
			if err != nil {
				t.Fatalf("segment file %s: %v", f, err)
			}
			bases = append(bases, b)
		}
		slices.Sort(bases)
		return bases
	}
	before := map[string][]int64{}
	for _, topic := range []string{"ret-bytes", "ret-ms"} {
		before[topic] = segments(topic)
		if len(before[topic]) < 8 || before[topic][0] != 0 {
			t.Fatalf("%s: segment files %v, want at least 8 from 0", topic, before[topic])
		}
	}

	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("2048")}}, "ret-bytes")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter retention.bytes: %v %v", err, rs)
	}
	rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr(strconv.Itoa(24 * 3600 * 1000))}}, "ret-ms")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter retention.ms: %v %v", err, rs)
	}

	starts := map[string]int64{}
	for _, topic := range []string{"ret-bytes", "ret-ms"} {
		if !testkit.WaitFor(30*time.Second, func() bool {
			so, err := adm.ListStartOffsets(ctx, topic)
			if err != nil || so.Error() != nil {
				t.Logf("list start offsets: %v %v", err, so.Error())
				return false
			}
			o, _ := so.Lookup(topic, 0)
			starts[topic] = o.Offset
			return o.Offset > 0
		}) {
			t.Fatalf("%s: the log start did not move", topic)
		}
		start := starts[topic]
		// The start is a segment's first offset, and the files below it
		// are gone (the files go just after the start moves).
		if !slices.Contains(before[topic], start) {
			t.Fatalf("%s: log start %d is not one of the segment bases %v", topic, start, before[topic])
		}
		testkit.Eventually(t, 10*time.Second, topic+": segment files below the log start removed", func() bool {
			segs := segments(topic)
			return len(segs) > 0 && segs[0] == start
		})
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil || ends.Error() != nil {
			t.Fatalf("list end offsets: %v %v", err, ends.Error())
		}
		if o, _ := ends.Lookup(topic, 0); o.Offset != records {
			t.Fatalf("%s: end offset %d, want %d", topic, o.Offset, records)
		}
	}
	// retention.bytes: the partition keeps at least 2048 bytes, and would
	// not without its oldest segment (sizes as DescribeLogDirs reports
	// them: the batches; a closed segment's file is exactly its batches).
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var total int64 = -1
	all.Each(func(d kadm.DescribedLogDir) {
		if lp, ok := d.Topics["ret-bytes"][0]; ok {
			total = lp.Size
		}
	})
	id := tds["ret-bytes"].ID
	first, err := os.Stat(filepath.Join(dir, "topics", hex.EncodeToString(id[:]), "0", fmt.Sprintf("%020d.log", starts["ret-bytes"])))
	if err != nil {
		t.Fatal(err)
	}
	if total < 2048 || total-first.Size() >= 2048 {
		t.Errorf("ret-bytes: %d bytes left, %d in the oldest segment, under retention.bytes=2048", total, first.Size())
	}
	// retention.ms keeps the segment of the first recent record (30) and
	// everything after; every segment below it held old records only.
	if s := starts["ret-ms"]; s > 30 || s < 24 {
		t.Errorf("ret-ms: log start %d, want the base of the segment holding offset 30", s)
	}

	t.Logf("log starts %v; ret-bytes keeps %d bytes in segments %v, ret-ms segments %v", starts, total, segments("ret-bytes"), segments("ret-ms"))

	// A consumer from the start begins at the log start and reads to the
	// end.
	for _, topic := range []string{"ret-bytes", "ret-ms"} {
		cons, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		var offsets []int64
		for int64(len(offsets)) < records-starts[topic] {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: poll: %v (offsets so far %v)", topic, err, offsets)
			}
			fs.EachRecord(func(r *kgo.Record) { offsets = append(offsets, r.Offset) })
		}
		cons.Close()
		if offsets[0] != starts[topic] || offsets[len(offsets)-1] != records-1 {
			t.Fatalf("%s: consumed offsets %d-%d, want %d-%d", topic, offsets[0], offsets[len(offsets)-1], starts[topic], records-1)
		}
	}
}
