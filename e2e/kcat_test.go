package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file drives kcat (librdkafka) and holds the helpers that
// python_test.go shares: running an external client with a deadline, and
// producing and consuming with franz-go to cross-check it.

// extTimeout bounds every external client run.
const extTimeout = time.Minute

// kcatPath returns kcat's path, failing (never skipping) without it.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat not found on PATH (%v): ./test.sh installs it (Debian package kcat)", err)
	}
	return p
}

// extRun runs name with args and stdin under a deadline and returns its
// stdout, failing the test with stderr if it exits non-zero.
func extRun(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: no exit within %v\nstderr:\n%s", name, strings.Join(args, " "), extTimeout, tail(stderr.String()))
	}
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", name, strings.Join(args, " "), err, tail(stderr.String()))
	}
	t.Logf("%s %s: %v, %d bytes out", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond), stdout.Len())
	return stdout.Bytes()
}

// writeSpec writes spec as JSON to a file for a client script and returns
// its path.
func writeSpec(t *testing.T, name string, spec any) string {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tail keeps the end of a long log.
func tail(s string) string {
	if len(s) > 8000 {
		return "..." + s[len(s)-8000:]
	}
	return s
}

// extCreateTopic creates topic with n partitions through franz-go.
func extCreateTopic(t *testing.T, addr, topic string, n int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, n, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// checkNulls fails unless got's keys and values are null exactly where
// want's are (checkSame compares bytes, for which null and empty are
// equal). Records are matched by partition and offset.
func checkNulls(t *testing.T, want, got []rec) {
	t.Helper()
	type po struct {
		p int32
		o int64
	}
	idx := map[po]rec{}
	for _, r := range got {
		idx[po{r.Partition, r.Offset}] = r
	}
	for _, w := range want {
		g, ok := idx[po{w.Partition, w.Offset}]
		if !ok {
			continue // checkSame reports missing records
		}
		if (w.Key == nil) != (g.Key == nil) || (w.Value == nil) != (g.Value == nil) {
			t.Fatalf("partition %d offset %d: key null %v, value null %v; want %v, %v",
				w.Partition, w.Offset, g.Key == nil, g.Value == nil, w.Key == nil, w.Value == nil)
		}
	}
}

// kcatCodecs are the compression codecs librdkafka offers.
var kcatCodecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// kcatFormat is the -f format the kcat consumer prints records with: keys
// and values here hold no tabs or newlines, and their lengths (-1: null)
// come along to tell null from empty.
const kcatFormat = `%p\t%o\t%T\t%K\t%S\t%h\t%k\t%s\n`

// parseKcatFormat parses kcat -C output in kcatFormat.
func parseKcatFormat(t *testing.T, out []byte) []rec {
	t.Helper()
	var got []rec
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 8 {
			t.Fatalf("kcat output line %q: %d fields, want 8", line, len(f))
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		ts, err3 := strconv.ParseInt(f[2], 10, 64)
		klen, err4 := strconv.Atoi(f[3])
		vlen, err5 := strconv.Atoi(f[4])
		for _, err := range []error{err1, err2, err3, err4, err5} {
			if err != nil {
				t.Fatalf("kcat output line %q: %v", line, err)
			}
		}
		r := rec{Partition: int32(p), Offset: o, Timestamp: time.UnixMilli(ts)}
		r.Key = kcatField(t, line, f[6], klen)
		r.Value = kcatField(t, line, f[7], vlen)
		if f[5] != "" {
			for _, kv := range strings.Split(f[5], ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("kcat output line %q: header %q has no =", line, kv)
				}
				r.Headers = append(r.Headers, hdr{k, v})
			}
		}
		got = append(got, r)
	}
	return got
}

// kcatField returns a key or value kcat printed with its length n.
func kcatField(t *testing.T, line, s string, n int) []byte {
	t.Helper()
	if n == -1 {
		if s != "" {
			t.Fatalf("kcat output line %q: null field printed as %q", line, s)
		}
		return nil
	}
	if len(s) != n {
		t.Fatalf("kcat output line %q: field %q is %d bytes, kcat says %d", line, s, len(s), n)
	}
	return []byte(s)
}

// kcatRun is one kcat producer run: its flags, input and the records it
// should create (partitions known, offsets not yet).
type kcatRun struct {
	args  []string
	input []byte
	recs  []rec
}

// kcatProduceRun builds the input of a kcat -P run of n records: keyed
// tab-separated lines, with a null key (a line without tab) and a null
// value (an empty one, sent as null with -Z) now and then when nulls, and
// four headers from -H on every record. partition -1 means the murmur2
// partitioner picks, which franz-go's Kafka-compatible hasher predicts.
func kcatProduceRun(name string, run, partition, nparts, n int, nulls bool, topic string, extra ...string) kcatRun {
	kr := kcatRun{args: []string{"-P", "-t", topic, "-K", `\t`, "-Z",
		"-H", "codec=" + name, "-H", "run=" + strconv.Itoa(run), "-H", "eq=x=y", "-H", "empty="}}
	if partition >= 0 {
		kr.args = append(kr.args, "-p", strconv.Itoa(partition))
	} else {
		kr.args = append(kr.args, "-X", "partitioner=murmur2_random")
	}
	kr.args = append(kr.args, extra...)
	hdrs := []hdr{{"codec", name}, {"run", strconv.Itoa(run)}, {"eq", "x=y"}, {"empty", ""}}
	hasher := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	var in bytes.Buffer
	for i := range n {
		r := rec{Headers: hdrs, Partition: int32(partition)}
		r.Key = fmt.Appendf(nil, "kcat-%s-%d-key-%d", name, run, i)
		r.Value = bytes.Repeat(fmt.Appendf(nil, "%s-%d-%d;", name, run, i), 1+i%23)
		switch {
		case nulls && i%50 == 7:
			r.Key = nil
			in.Write(r.Value)
		case nulls && i%40 == 3:
			r.Value = nil
			in.Write(r.Key)
			in.WriteByte('\t')
		default:
			in.Write(r.Key)
			in.WriteByte('\t')
			in.Write(r.Value)
		}
		in.WriteByte('\n')
		if partition < 0 {
			r.Partition = int32(hasher.Partition(&kgo.Record{Key: r.Key}, nparts))
		}
		kr.recs = append(kr.recs, r)
	}
	kr.input = in.Bytes()
	return kr
}

// TestKcatProduceConsume: kcat produces 5,000 records to 4 partitions, each
// run with its own compression codec (one of them idempotent, keyed by
// librdkafka's murmur2 partitioner), with keys, null keys and values, and
// headers; kcat and franz-go both read back exactly those records, in
// order, at consecutive offsets, with the same timestamps.
func TestKcatProduceConsume(t *testing.T) {
	kcat := kcatPath(t)
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: true})
	addr := n.KafkaAddr()
	const topic, nparts = "kcat", 4
	extCreateTopic(t, addr, topic, nparts)

	var runs []kcatRun
	for ci, codec := range kcatCodecs {
		var extra []string
		if codec == "gzip" {
			extra = []string{"-z", "gzip"} // kcat's own flag; the rest as librdkafka properties
		} else {
			extra = []string{"-X", "compression.codec=" + codec}
		}
		runs = append(runs, kcatProduceRun(codec, ci, ci%nparts, nparts, 800, true, topic, extra...))
	}
	runs = append(runs, kcatProduceRun("murmur2", len(runs), -1, nparts, 1000, false, topic,
		"-X", "compression.codec=lz4", "-X", "enable.idempotence=true", "-X", "linger.ms=20"))

	// One producer at a time, so each partition's offsets follow the runs'
	// order and, within a run, the input's.
	before := time.Now().Truncate(time.Millisecond)
	var want []rec
	next := map[int32]int64{}
	for _, run := range runs {
		extRun(t, run.input, kcat, append([]string{"-b", addr, "-q"}, run.args...)...)
		for _, r := range run.recs {
			r.Offset = next[r.Partition]
			next[r.Partition]++
			want = append(want, r)
		}
	}
	after := time.Now()
	for p := range int32(nparts) {
		if next[p] == 0 {
			t.Fatalf("partition %d got no records: the runs should cover every partition", p)
		}
	}

	// franz-go reads them; kcat's CreateTime timestamps fall within the
	// runs and never go back within a partition.
	franzGot := franzConsume(t, addr, topic, len(want))
	last := map[int32]time.Time{}
	ts := map[[2]int64]time.Time{}
	for _, r := range franzGot {
		if r.Timestamp.Before(before) || r.Timestamp.After(after) {
			t.Fatalf("partition %d offset %d: timestamp %v outside the produce window [%v, %v]", r.Partition, r.Offset, r.Timestamp, before, after)
		}
		if r.Timestamp.Before(last[r.Partition]) {
			t.Fatalf("partition %d offset %d: timestamp %v before the previous record's %v", r.Partition, r.Offset, r.Timestamp, last[r.Partition])
		}
		last[r.Partition] = r.Timestamp
		ts[[2]int64{int64(r.Partition), r.Offset}] = r.Timestamp
	}
	for i := range want {
		want[i].Timestamp = ts[[2]int64{int64(want[i].Partition), want[i].Offset}]
	}
	checkSame(t, want, franzGot, false)
	checkNulls(t, want, franzGot)

	// kcat reads every partition from the beginning and exits at the end.
	kcatGot := parseKcatFormat(t, extRun(t, nil, kcat, "-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-f", kcatFormat))
	checkSame(t, want, kcatGot, false)
	checkNulls(t, want, kcatGot)

	// A slice of one partition: -p, an absolute -o and -c.
	part1 := parseKcatFormat(t, extRun(t, nil, kcat, "-b", addr, "-C", "-t", topic, "-p", "1", "-o", "100", "-c", "50", "-f", kcatFormat))
	var want1 []rec
	for _, r := range want {
		if r.Partition == 1 && r.Offset >= 100 && r.Offset < 150 {
			want1 = append(want1, r)
		}
	}
	checkSame(t, want1, part1, false)
}

// kcatJSONRec is a record as kcat -J prints it.
type kcatJSONRec struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	TsType    string   `json:"tstype"`
	Ts        int64    `json:"ts"`
	Broker    int32    `json:"broker"`
	Headers   []string `json:"headers"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

// TestKcatReadsFranz: franz-go produces 3,000 records with every codec and
// explicit timestamps; kcat's JSON consumer reads exactly them, and kcat
// finds offsets by timestamp (-Q, -o s@) as the records say.
func TestKcatReadsFranz(t *testing.T) {
	kcat := kcatPath(t)
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: true})
	addr := n.KafkaAddr()
	const topic = "kcat-franz"
	extCreateTopic(t, addr, topic, 3)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	want := franzProduce(t, addr, topic, makeRecs("franz", 3000, base))

	out := extRun(t, nil, kcat, "-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-J")
	var got []rec
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var j kcatJSONRec
		if err := json.Unmarshal(line, &j); err != nil {
			t.Fatalf("kcat -J line %q: %v", line, err)
		}
		if j.Topic != topic || j.TsType != "create" || j.Broker != 0 || len(j.Headers)%2 != 0 {
			t.Fatalf("kcat -J line %q: want topic %s, tstype create, broker 0, header pairs", line, topic)
		}
		r := rec{Partition: j.Partition, Offset: j.Offset, Timestamp: time.UnixMilli(j.Ts)}
		if j.Key != nil {
			r.Key = []byte(*j.Key)
		}
		if j.Payload != nil {
			r.Value = []byte(*j.Payload)
		}
		for i := 0; i < len(j.Headers); i += 2 {
			r.Headers = append(r.Headers, hdr{j.Headers[i], j.Headers[i+1]})
		}
		got = append(got, r)
	}
	checkSame(t, want, got, false)

	// Offsets by timestamp (ListOffsets with a timestamp): the first
	// record at or after it; -1 past the last one.
	byPart := map[int32][]rec{}
	for _, r := range want {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	for _, rs := range byPart {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
	}
	// Within a partition, makeRecs' timestamps rise with the offsets.
	var args []string
	wantQ := map[int32]int64{}
	for p := range int32(2) {
		mid := byPart[p][len(byPart[p])/2]
		args = append(args, "-t", fmt.Sprintf("%s:%d:%d", topic, p, mid.Timestamp.UnixMilli()))
		wantQ[p] = mid.Offset
	}
	past := want[len(want)-1].Timestamp.Add(time.Hour).UnixMilli()
	args = append(args, "-t", fmt.Sprintf("%s:%d:%d", topic, 2, past))
	wantQ[2] = -1
	q := extRun(t, nil, kcat, append([]string{"-b", addr, "-Q", "-J"}, args...)...)
	var qres map[string]map[string]json.RawMessage
	if err := json.Unmarshal(q, &qres); err != nil {
		t.Fatalf("kcat -Q -J output %q: %v", q, err)
	}
	for p, wo := range wantQ {
		var po struct {
			Partition int32 `json:"partition"`
			Offset    int64 `json:"offset"`
		}
		raw, ok := qres[topic][strconv.Itoa(int(p))]
		if !ok {
			t.Fatalf("kcat -Q: no answer for partition %d in %s", p, q)
		}
		if err := json.Unmarshal(raw, &po); err != nil {
			t.Fatalf("kcat -Q partition %d: %q: %v", p, raw, err)
		}
		if po.Offset != wo {
			t.Errorf("kcat -Q partition %d: offset %d, want %d", p, po.Offset, wo)
		}
	}

	// Consuming from a timestamp (-o s@) starts at that record.
	rs := byPart[0]
	from := rs[len(rs)/3]
	got0 := parseKcatFormat(t, extRun(t, nil, kcat, "-b", addr, "-C", "-t", topic, "-p", "0",
		"-o", fmt.Sprintf("s@%d", from.Timestamp.UnixMilli()), "-e", "-f", kcatFormat))
	checkSame(t, rs[len(rs)/3:], got0, false)
}

// kcatMetadata is kcat -L -J's output.
type kcatMetadata struct {
	ControllerID int32 `json:"controllerid"`
	Brokers      []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
			Replicas  []struct {
				ID int32 `json:"id"`
			} `json:"replicas"`
			ISRs []struct {
				ID int32 `json:"id"`
			} `json:"isrs"`
		} `json:"partitions"`
	} `json:"topics"`
}

// TestKcatMetadata: kcat -L lists the node as the only broker and
// controller, at the address it listens on, and every topic with its
// partitions led by it; -t narrows the listing to one topic.
func TestKcatMetadata(t *testing.T) {
	kcat := kcatPath(t)
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: true})
	addr := n.KafkaAddr()
	topicParts := map[string]int{"meta-a": 1, "meta-b": 3, "meta-c": 8}
	for tp, np := range topicParts {
		extCreateTopic(t, addr, tp, int32(np))
	}

	var md kcatMetadata
	out := extRun(t, nil, kcat, "-b", addr, "-L", "-J")
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J output %q: %v", out, err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != addr || md.ControllerID != md.Brokers[0].ID {
		t.Fatalf("kcat -L: brokers %+v, controller %d; want one broker at %s, the controller", md.Brokers, md.ControllerID, addr)
	}
	id := md.Brokers[0].ID
	seen := map[string]int{}
	for _, tp := range md.Topics {
		if tp.Error != "" {
			t.Errorf("kcat -L: topic %s: error %s", tp.Topic, tp.Error)
		}
		for i, p := range tp.Partitions {
			if p.Partition != int32(i) || p.Leader != id || len(p.Replicas) != 1 || p.Replicas[0].ID != id || len(p.ISRs) != 1 || p.ISRs[0].ID != id {
				t.Errorf("kcat -L: topic %s partition %d: %+v, want partition %d led and replicated by %d", tp.Topic, i, p, i, id)
			}
		}
		seen[tp.Topic] = len(tp.Partitions)
	}
	// Every topic, as Kafka lists them: the internal __consumer_offsets
	// too, one partition per coordinator shard (16 by default).
	want := maps.Clone(topicParts)
	want["__consumer_offsets"] = 16
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("kcat -L: topics %v, want %v", seen, want)
	}

	text := string(extRun(t, nil, kcat, "-b", addr, "-L", "-t", "meta-b"))
	for _, s := range []string{
		fmt.Sprintf("broker %d at %s (controller)", id, addr),
		`topic "meta-b" with 3 partitions:`,
		fmt.Sprintf("partition 2, leader %d, replicas: %d, isrs: %d", id, id, id),
	} {
		if !strings.Contains(text, s) {
			t.Errorf("kcat -L -t meta-b: no %q in\n%s", s, text)
		}
	}
	if strings.Contains(text, "meta-a") || strings.Contains(text, "meta-c") {
		t.Errorf("kcat -L -t meta-b lists other topics:\n%s", text)
	}
}
