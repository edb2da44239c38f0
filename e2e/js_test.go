package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file drives two JavaScript clients under Node.js, kafkajs 2.2.4 and
// @platformatic/kafka 1.35.0, through the scripts in js/. Their versions
// are pinned in js/package.json and js/package-lock.json; ./test.sh
// installs them into js/node_modules with npm ci.

// jsPinned are the packages the scripts need, at their pinned versions.
var jsPinned = map[string]string{"kafkajs": "2.2.4", "@platformatic/kafka": "1.35.0"}

// jsDir returns e2e/js, failing (never skipping) unless node is on PATH and
// node_modules holds the pinned clients.
func jsDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node not found on PATH (%v): the JavaScript client tests need Node.js 20 or later", err)
	}
	dir := filepath.Join(testkit.ModuleRoot(), "e2e", "js")
	for pkg, want := range jsPinned {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
		var meta struct{ Version string }
		if err == nil {
			err = json.Unmarshal(b, &meta)
		}
		if err != nil || meta.Version != want {
			t.Fatalf("%s %s is not installed in %s/node_modules (version %q, %v): ./test.sh installs it (npm ci --prefix e2e/js)", pkg, want, dir, meta.Version, err)
		}
	}
	return dir
}

// jsInt is an integer that kafkajs prints as a string and others as a
// number.
type jsInt int64

func (n *jsInt) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(strings.Trim(string(b), `"`), 10, 64)
	*n = jsInt(v)
	return err
}

// jsOffset is one partition's offset in an offsets or by_time line.
type jsOffset struct {
	P       int32  `json:"p"`
	Offset  jsInt  `json:"offset"`
	High    *jsInt `json:"high"`
	Low     *jsInt `json:"low"`
	FoundTs *jsInt `json:"found_ts"`
}

// jsLine is one JSON line of a script's output; which fields are set
// depends on Kind.
type jsLine struct {
	Kind       string          `json:"kind"`
	Batch      int             `json:"batch"`
	I          int             `json:"i"`
	P          int32           `json:"p"`
	O          *int64          `json:"o"`
	Ts         *int64          `json:"ts"`
	TsType     int             `json:"tstype"`
	Codec      int             `json:"codec"`
	K          []byte          `json:"k"` // base64; null stays nil
	V          []byte          `json:"v"`
	H          [][2]string     `json:"h"` // value base64
	Codecs     []string        `json:"codecs"`
	Offsets    []jsOffset      `json:"offsets"`
	Topics     json.RawMessage `json:"topics"`
	Created    json.RawMessage `json:"created"`
	Begin      []int64         `json:"begin"`
	End        []int64         `json:"end"`
	N          int             `json:"n"`
	ID         string          `json:"id"`
	Partitions int             `json:"partitions"`
	Leaders    []int32         `json:"leaders"`
}

// runJS runs node script mode with spec and returns its output lines by
// kind, checking that it finished.
func runJS(t *testing.T, script, mode string, spec any) map[string][]jsLine {
	t.Helper()
	// Node resolves the pinned packages from the script's own directory.
	out := extRun(t, nil, "node", filepath.Join(jsDir(t), script), mode, writeSpec(t, mode, spec))
	lines := map[string][]jsLine{}
	last := ""
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var jl jsLine
		if err := json.Unmarshal(l, &jl); err != nil {
			t.Fatalf("node %s %s: output line %q: %v", script, mode, l, err)
		}
		lines[jl.Kind] = append(lines[jl.Kind], jl)
		last = jl.Kind
	}
	if last != "done" {
		t.Fatalf("node %s %s did not finish:\n%s", script, mode, tail(string(out)))
	}
	return lines
}

// jsBatch is one batch of a produce spec: records produced with one codec
// by one producer, chunk records per send call.
type jsBatch struct {
	Codec      string     `json:"codec"`
	Idempotent bool       `json:"idempotent"`
	Chunk      int        `json:"chunk"`
	Records    []pyRecord `json:"records"`
}

// jsProduceSpec builds batches of per records for each codec, half of them
// to explicit partitions (and all with null keys), the rest left to the
// client's murmur2 partitioner. It returns the spec's batches, the records
// in order and which went to an explicit partition.
func jsProduceSpec(prefix string, codecs []string, idempotent map[string]bool, per, nparts int, base time.Time) ([]jsBatch, []rec, []bool) {
	var batches []jsBatch
	var want []rec
	var explicit []bool
	for ci, codec := range codecs {
		b := jsBatch{Codec: codec, Idempotent: idempotent[codec], Chunk: 200}
		for i, r := range edgeRecs(prefix+"-"+codec, per, base.Add(time.Duration(ci)*time.Minute)) {
			var p *int32
			if i%2 == 0 || r.Key == nil {
				r.Partition = int32((i / 2) % nparts)
				p = &r.Partition
			}
			b.Records = append(b.Records, toPyRecord(r, p))
			want = append(want, r)
			explicit = append(explicit, p != nil)
		}
		batches = append(batches, b)
	}
	return batches, want, explicit
}

// checkJSSent checks a produce run's sent lines against want: every record
// acknowledged, in order, on its explicit partition or murmur2's (franz-go's
// Kafka-compatible hasher), at the next offset of that partition. It sets
// want's partitions and offsets, and returns the end offset of each
// partition.
func checkJSSent(t *testing.T, client, topic string, sent []jsLine, want []rec, explicit []bool, per, nparts int) map[int32]int64 {
	t.Helper()
	if len(sent) != len(want) {
		t.Fatalf("%s acknowledged %d records, want %d", client, len(sent), len(want))
	}
	hasher := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	next := map[int32]int64{}
	for idx, l := range sent {
		if l.Batch*per+l.I != idx || l.O == nil {
			t.Fatalf("%s ack %d: %+v out of order or incomplete", client, idx, l)
		}
		r := &want[idx]
		if explicit[idx] && l.P != r.Partition {
			t.Fatalf("%s record %d: acknowledged on partition %d, sent to %d", client, idx, l.P, r.Partition)
		}
		if !explicit[idx] {
			if p := int32(hasher.Partition(&kgo.Record{Key: r.Key}, nparts)); l.P != p {
				t.Fatalf("%s record %d (key %q): its partitioner chose %d, murmur2 says %d", client, idx, r.Key, l.P, p)
			}
		}
		if *l.O != next[l.P] {
			t.Fatalf("%s record %d: offset %d on partition %d, want %d", client, idx, *l.O, l.P, next[l.P])
		}
		next[l.P]++
		r.Partition, r.Offset = l.P, *l.O
	}
	return next
}

// firstAtOrAfter returns, per partition, the offset of the first record of
// recs with a timestamp at or after ts, or -1 if none.
func firstAtOrAfter(recs []rec, nparts int, ts time.Time) map[int32]int64 {
	m := map[int32]int64{}
	for p := range int32(nparts) {
		m[p] = -1
	}
	sorted := slices.Clone(recs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Offset < sorted[j].Offset })
	for _, r := range sorted {
		if m[r.Partition] < 0 && !r.Timestamp.Before(ts) {
			m[r.Partition] = r.Offset
		}
	}
	return m
}

// TestKafkajs: kafkajs creates a topic with its admin client, produces
// 3,000 records with acks=all (none, gzip, and gzip from an idempotent
// producer), half to explicit partitions and half through its Java-
// compatible partitioner; franz-go reads exactly those records back
// (kafkajs has no consumer without a group). kafkajs's admin then finds
// the bounds and offsets by timestamp, lists and deletes the topic.
func TestKafkajs(t *testing.T) {
	jsDir(t)
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: false})
	addr := n.KafkaAddr()
	const topic, nparts, per = "kafkajs", 4, 1000
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	batches, want, explicit := jsProduceSpec("kafkajs", []string{"none", "gzip"}, nil, per, nparts, base)
	// The third batch: gzip again, from an idempotent producer.
	b3, w3, e3 := jsProduceSpec("kafkajs-idem", []string{"gzip"}, map[string]bool{"gzip": true}, per, nparts, base.Add(2*time.Minute))
	batches, want, explicit = append(batches, b3...), append(want, w3...), append(explicit, e3...)

	lines := runJS(t, "kafkajs.mjs", "produce", map[string]any{"bootstrap": addr, "topic": topic, "partitions": nparts, "batches": batches})
	if c := lines["created"]; len(c) != 1 || string(c[0].Created) != "true" {
		t.Errorf("kafkajs createTopics: %+v, want true", c)
	}
	if c := lines["create_again"]; len(c) != 1 || string(c[0].Created) != "false" {
		t.Errorf("kafkajs createTopics of an existing topic: %+v, want false", c)
	}
	if md := lines["metadata"]; len(md) != 1 || string(md[0].Topics) != fmt.Sprintf(`[{"name":%q,"partitions":[[0,0],[1,0],[2,0],[3,0]]}]`, topic) {
		t.Errorf("kafkajs fetchTopicMetadata: %s, want 4 partitions led by node 0", md[0].Topics)
	}
	next := checkJSSent(t, "kafkajs", topic, lines["sent"], want, explicit, per, nparts)

	got := franzConsume(t, addr, topic, len(want))
	checkSame(t, want, got, false)
	checkNulls(t, want, got)

	// Offsets by timestamp: before everything (0), the middle record's
	// timestamp, and past the end (kafkajs answers the high watermark for
	// Kafka's -1).
	mid := want[len(want)/2].Timestamp
	times := []time.Time{base.Add(-time.Minute), mid, want[len(want)-1].Timestamp.Add(time.Hour)}
	var tms []int64
	for _, tm := range times {
		tms = append(tms, tm.UnixMilli())
	}
	lines = runJS(t, "kafkajs.mjs", "admin", map[string]any{"bootstrap": addr, "topic": topic, "times": tms})
	offs := lines["offsets"]
	if len(offs) != 1 || len(offs[0].Offsets) != nparts {
		t.Fatalf("kafkajs fetchTopicOffsets: %+v, want %d partitions", offs, nparts)
	}
	for _, o := range offs[0].Offsets {
		if int64(o.Offset) != next[o.P] || o.High == nil || int64(*o.High) != next[o.P] || o.Low == nil || *o.Low != 0 {
			t.Errorf("kafkajs fetchTopicOffsets partition %d: %+v, want offset and high %d, low 0", o.P, o, next[o.P])
		}
	}
	if len(lines["by_time"]) != len(times) {
		t.Fatalf("kafkajs fetchTopicOffsetsByTimestamp: %d answers, want %d", len(lines["by_time"]), len(times))
	}
	for i, l := range lines["by_time"] {
		w := firstAtOrAfter(want, nparts, times[i])
		if len(l.Offsets) != nparts {
			t.Errorf("kafkajs fetchTopicOffsetsByTimestamp(%d): %+v, want %d partitions", tms[i], l.Offsets, nparts)
		}
		for _, o := range l.Offsets {
			wo := w[o.P]
			if wo < 0 {
				wo = next[o.P]
			}
			if int64(o.Offset) != wo {
				t.Errorf("kafkajs fetchTopicOffsetsByTimestamp(%d) partition %d: %d, want %d", tms[i], o.P, o.Offset, wo)
			}
		}
	}
	// kafkajs lists every topic Metadata names, the internal
	// __consumer_offsets too, as it does against Kafka.
	if tp := lines["topics"]; len(tp) != 1 || string(tp[0].Topics) != `["__consumer_offsets","kafkajs"]` {
		t.Errorf("kafkajs listTopics: %+v, want [__consumer_offsets kafkajs]", tp)
	}
	if tp := lines["topics_after_delete"]; len(tp) != 1 || string(tp[0].Topics) != `["__consumer_offsets"]` {
		t.Errorf("kafkajs listTopics after deleteTopics: %+v, want [__consumer_offsets]", tp)
	}
}

// platformaticCodecs are the compression codecs @platformatic/kafka must
// offer on any Node.js: zstd comes from node:zlib, only in Node.js 22.15+.
var platformaticCodecs = []string{"none", "gzip", "snappy", "lz4"}

// codecIDs are the codec numbers of a record batch's attributes.
var codecIDs = map[string]int{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// TestPlatformatic: @platformatic/kafka creates a topic with its admin
// client and produces 800 records with each codec it offers (one batch
// from an idempotent producer), half to explicit partitions and half
// through its Java-compatible partitioner. franz-go reads exactly those
// records back, and so does @platformatic/kafka without a group, with its
// low-level Consumer.fetch (topic IDs, Fetch v13+); it finds the bounds
// and offsets by timestamp, then lists and deletes the topic.
func TestPlatformatic(t *testing.T) {
	longTest(t)
	jsDir(t)
	codecs := runJS(t, "platformatic.mjs", "codecs", map[string]any{})["codecs"]
	if len(codecs) != 1 {
		t.Fatalf("platformatic codecs: %+v", codecs)
	}
	for _, c := range platformaticCodecs {
		if !slices.Contains(codecs[0].Codecs, c) {
			t.Fatalf("@platformatic/kafka offers codecs %v: no %s", codecs[0].Codecs, c)
		}
	}
	t.Logf("@platformatic/kafka codecs on this Node.js: %v", codecs[0].Codecs)

	n := testkit.StartNode(t, node.Config{AutoCreateTopics: false})
	addr := n.KafkaAddr()
	const topic, nparts, per = "platformatic", 4, 800
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	batches, want, explicit := jsProduceSpec("plat", codecs[0].Codecs, map[string]bool{"gzip": true}, per, nparts, base)
	lines := runJS(t, "platformatic.mjs", "produce", map[string]any{"bootstrap": addr, "topic": topic, "partitions": nparts, "batches": batches})
	if c := lines["created"]; len(c) != 1 || string(c[0].Created) != fmt.Sprintf(`[{"name":%q,"partitions":%d}]`, topic, nparts) {
		t.Errorf("platformatic createTopics: %+v", c)
	}
	next := checkJSSent(t, "platformatic", topic, lines["sent"], want, explicit, per, nparts)
	type po struct {
		p int32
		o int64
	}
	wantCodec := map[po]int{}
	for i, r := range want {
		wantCodec[po{r.Partition, r.Offset}] = codecIDs[batches[i/per].Codec]
	}

	fgot := franzConsume(t, addr, topic, len(want))
	checkSame(t, want, fgot, false)
	checkNulls(t, want, fgot)

	mid := want[len(want)/2].Timestamp
	times := []time.Time{base.Add(-time.Minute), mid, want[len(want)-1].Timestamp.Add(time.Hour)}
	var tms []int64
	for _, tm := range times {
		tms = append(tms, tm.UnixMilli())
	}
	lines = runJS(t, "platformatic.mjs", "consume", map[string]any{"bootstrap": addr, "topic": topic, "times": tms})
	if md := lines["metadata"]; len(md) != 1 || md[0].Partitions != nparts || len(md[0].ID) != 36 || fmt.Sprint(md[0].Leaders) != "[0 0 0 0]" {
		t.Errorf("platformatic metadata: %+v, want %d partitions led by node 0, with a topic ID", md, nparts)
	}
	var wantEnd []int64
	for p := range int32(nparts) {
		wantEnd = append(wantEnd, next[p])
	}
	if b := lines["bounds"]; len(b) != 1 || fmt.Sprint(b[0].Begin) != "[0 0 0 0]" || fmt.Sprint(b[0].End) != fmt.Sprint(wantEnd) {
		t.Errorf("platformatic listOffsets: %+v, want begin 0, end %v", b, wantEnd)
	}
	var got []rec
	for _, l := range lines["rec"] {
		if l.O == nil || l.Ts == nil || l.TsType != 0 {
			t.Fatalf("platformatic record %+v: want an offset and a CreateTime timestamp", l)
		}
		if w, ok := wantCodec[po{l.P, *l.O}]; ok && l.Codec != w {
			t.Errorf("platformatic fetched partition %d offset %d in a batch with codec %d, produced with %d", l.P, *l.O, l.Codec, w)
		}
		r := rec{Partition: l.P, Offset: *l.O, Key: l.K, Value: l.V, Timestamp: time.UnixMilli(*l.Ts)}
		for _, h := range l.H {
			v, err := base64.StdEncoding.DecodeString(h[1])
			if err != nil {
				t.Fatalf("platformatic header %q: %v", h, err)
			}
			r.Headers = append(r.Headers, hdr{h[0], string(v)})
		}
		got = append(got, r)
	}
	checkSame(t, want, got, false)
	checkNulls(t, want, got)
	// Small fetch limits (64 KiB, 16 KiB a partition): many rounds.
	if f := lines["fetches"]; len(f) != 1 || f[0].N < 2 {
		t.Errorf("platformatic fetches: %+v, want several rounds", f)
	} else {
		t.Logf("platformatic read %d records in %d fetches", len(got), f[0].N)
	}
	if len(lines["by_time"]) != len(times) {
		t.Fatalf("platformatic listOffsetsWithTimestamps: %d answers, want %d", len(lines["by_time"]), len(times))
	}
	byPO := map[po]rec{}
	for _, r := range want {
		byPO[po{r.Partition, r.Offset}] = r
	}
	for i, l := range lines["by_time"] {
		w := firstAtOrAfter(want, nparts, times[i])
		if len(l.Offsets) != nparts {
			t.Errorf("platformatic listOffsetsWithTimestamps(%d): %+v, want %d partitions", tms[i], l.Offsets, nparts)
		}
		for _, o := range l.Offsets {
			wantTs := int64(-1)
			if w[o.P] >= 0 {
				wantTs = byPO[po{o.P, w[o.P]}].Timestamp.UnixMilli()
			}
			if int64(o.Offset) != w[o.P] || o.FoundTs == nil || int64(*o.FoundTs) != wantTs {
				t.Errorf("platformatic listOffsetsWithTimestamps(%d) partition %d: %+v, want offset %d timestamp %d", tms[i], o.P, o, w[o.P], wantTs)
			}
		}
	}

	lines = runJS(t, "platformatic.mjs", "delete", map[string]any{"bootstrap": addr, "topic": topic})
	if tp := lines["topics"]; len(tp) != 1 || string(tp[0].Topics) != `["platformatic"]` {
		t.Errorf("platformatic listTopics: %+v, want [platformatic]", tp)
	}
	if tp := lines["topics_after_delete"]; len(tp) != 1 || string(tp[0].Topics) != `[]` {
		t.Errorf("platformatic listTopics after deleteTopics: %+v, want []", tp)
	}
}
