package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file drives kafka-python, Debian's python3-kafka (2.0.2), through
// testdata/kafka_python.py. Debian installs it for the system Python only,
// so it runs /usr/bin/python3, not whatever python3 is first on PATH.

const systemPython = "/usr/bin/python3"

// pythonCodecs are kafka-python's compression types; "" is none.
var pythonCodecs = []string{"", "gzip", "snappy", "lz4", "zstd"}

// pythonKafka fails (never skips) unless /usr/bin/python3 imports kafka
// with every compression codec available.
func pythonKafka(t *testing.T) {
	t.Helper()
	check := `import kafka, kafka.codec as c
missing = [n for n, ok in (("python3-snappy", c.has_snappy()), ("python3-lz4", c.has_lz4()), ("python3-zstandard", c.has_zstd())) if not ok]
assert not missing, "missing codec packages: " + " ".join(missing)
print(kafka.__version__)`
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, systemPython, "-c", check).CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot use kafka-python with every codec: %v\n%s\n./test.sh installs it (Debian packages python3-kafka python3-snappy python3-lz4 python3-zstandard)", systemPython, err, out)
	}
	t.Logf("kafka-python %s", bytes.TrimSpace(out))
}

// pyLine is one JSON line of kafka_python.py's output; which fields are set
// depends on Kind.
type pyLine struct {
	Kind       string             `json:"kind"`
	Batch      int                `json:"batch"`
	I          int                `json:"i"`
	P          int32              `json:"p"`
	O          *int64             `json:"o"`
	Ts         *int64             `json:"ts"`
	TsType     int                `json:"tstype"`
	K          []byte             `json:"k"` // base64 in JSON; null stays nil
	V          []byte             `json:"v"`
	H          [][2]string        `json:"h"`
	FoundTs    *int64             `json:"found_ts"`
	Partitions []int32            `json:"partitions"`
	Begin      map[string]int64   `json:"begin"`
	End        map[string]int64   `json:"end"`
	Version    int                `json:"version"`
	Errors     [][2]any           `json:"errors"`
	Error      *string            `json:"error"`
	Topics     any                `json:"topics"`
	Resources  []pyConfigResource `json:"resources"`
	Messages   []*string          `json:"messages"`
	Named      []pyNamedResource  `json:"named"`
}

// pyConfigResource is one resource of a describe_configs answer.
type pyConfigResource struct {
	Name    string            `json:"name"`
	Error   int               `json:"error"`
	Configs map[string][2]any `json:"configs"` // name: [value, source]
}

// pyNamedResource is one resource of a describe_configs answer for named
// configs, with synonyms.
type pyNamedResource struct {
	Name    string            `json:"name"`
	Error   int               `json:"error"`
	Configs map[string][3]any `json:"configs"` // name: [value, source, [[name, value, source]...]]
}

// runPython runs kafka_python.py in mode with spec, and returns its output
// lines, checking that it finished.
func runPython(t *testing.T, mode string, spec any) []pyLine {
	t.Helper()
	script := filepath.Join(testkit.ModuleRoot(), "e2e", "testdata", "kafka_python.py")
	out := extRun(t, nil, systemPython, script, mode, writeSpec(t, mode, spec))
	var lines []pyLine
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var pl pyLine
		if err := json.Unmarshal(l, &pl); err != nil {
			t.Fatalf("kafka_python.py %s: output line %q: %v", mode, l, err)
		}
		lines = append(lines, pl)
	}
	if len(lines) == 0 || lines[len(lines)-1].Kind != "done" {
		t.Fatalf("kafka_python.py %s did not finish:\n%s", mode, tail(string(out)))
	}
	return lines[:len(lines)-1]
}

// pyRecord is a record in the produce spec.
type pyRecord struct {
	P  *int32      `json:"p"` // nil: kafka-python's partitioner picks
	K  []byte      `json:"k"`
	V  []byte      `json:"v"`
	H  [][2]string `json:"h"` // value base64
	Ts int64       `json:"ts"`
}

func toPyRecord(r rec, partition *int32) pyRecord {
	pr := pyRecord{P: partition, K: r.Key, V: r.Value, Ts: r.Timestamp.UnixMilli(), H: [][2]string{}}
	for _, h := range r.Headers {
		pr.H = append(pr.H, [2]string{h.Key, base64.StdEncoding.EncodeToString([]byte(h.Value))})
	}
	return pr
}

// pyConsumed returns the records in consume output, and its other lines by
// kind.
func pyConsumed(t *testing.T, lines []pyLine) ([]rec, map[string][]pyLine) {
	t.Helper()
	var got []rec
	other := map[string][]pyLine{}
	for _, l := range lines {
		if l.Kind != "rec" {
			other[l.Kind] = append(other[l.Kind], l)
			continue
		}
		if l.O == nil || l.Ts == nil || l.TsType != 0 {
			t.Fatalf("kafka-python record %+v: want an offset and a CreateTime (type 0) timestamp", l)
		}
		r := rec{Partition: l.P, Offset: *l.O, Key: l.K, Value: l.V, Timestamp: time.UnixMilli(*l.Ts)}
		for _, h := range l.H {
			v, err := base64.StdEncoding.DecodeString(h[1])
			if err != nil {
				t.Fatalf("kafka-python header %q: %v", h, err)
			}
			r.Headers = append(r.Headers, hdr{h[0], string(v)})
		}
		got = append(got, r)
	}
	return got, other
}

// pyRecs returns edgeRecs for kafka-python to produce with codec, named
// after it.
func pyRecs(codec string, n int, base time.Time) []rec {
	name := codec
	if name == "" {
		name = "none"
	}
	return edgeRecs("py-"+name, n, base)
}

// TestPythonProduceConsume: kafka-python produces 5,000 records with
// acks=all, a fifth with each compression codec, half to explicit
// partitions and half through its (murmur2) partitioner; the broker's
// acknowledgements, franz-go and kafka-python's groupless consumer all
// agree on every record. kafka-python also reads what franz-go produced,
// and finds offsets by timestamp.
func TestPythonProduceConsume(t *testing.T) {
	pythonKafka(t)
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: true})
	addr := n.KafkaAddr()
	const topic, nparts = "py", 4
	extCreateTopic(t, addr, topic, nparts)

	type batch struct {
		Codec   string     `json:"codec"`
		Records []pyRecord `json:"records"`
	}
	var batches []batch
	var want []rec
	var explicit []bool
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for ci, codec := range pythonCodecs {
		b := batch{Codec: codec}
		for i, r := range pyRecs(codec, 1000, base.Add(time.Duration(ci)*time.Minute)) {
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
	lines := runPython(t, "produce", map[string]any{"bootstrap": addr, "topic": topic, "batches": batches})

	// Every record is acknowledged where it should be: its explicit
	// partition or murmur2's (franz-go's Kafka-compatible hasher), at the
	// next offset of that partition (one producer at a time, no retries),
	// with its own timestamp.
	hasher := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	next := map[int32]int64{}
	sent := 0
	for _, l := range lines {
		switch l.Kind {
		case "partitions_for":
			if !slices.Equal(l.Partitions, []int32{0, 1, 2, 3}) {
				t.Fatalf("kafka-python partitions_for: %v, want [0 1 2 3]", l.Partitions)
			}
		case "sent":
			idx := l.Batch*1000 + l.I
			if l.I != sent%1000 || idx != sent || l.O == nil || l.Ts == nil {
				t.Fatalf("kafka-python ack %d: %+v out of order or incomplete", sent, l)
			}
			sent++
			r := &want[idx]
			if explicit[idx] && l.P != r.Partition {
				t.Fatalf("record %d: acknowledged on partition %d, sent to %d", idx, l.P, r.Partition)
			}
			if !explicit[idx] {
				if p := int32(hasher.Partition(&kgo.Record{Key: r.Key}, nparts)); l.P != p {
					t.Fatalf("record %d (key %q): kafka-python's partitioner chose %d, murmur2 says %d", idx, r.Key, l.P, p)
				}
			}
			if *l.O != next[l.P] {
				t.Fatalf("record %d: offset %d on partition %d, want %d", idx, *l.O, l.P, next[l.P])
			}
			if *l.Ts != r.Timestamp.UnixMilli() {
				t.Fatalf("record %d: acknowledged timestamp %d, want %d", idx, *l.Ts, r.Timestamp.UnixMilli())
			}
			next[l.P]++
			r.Partition, r.Offset = l.P, *l.O
		default:
			t.Fatalf("kafka-python produce: unexpected %+v", l)
		}
	}
	if sent != len(want) {
		t.Fatalf("kafka-python acknowledged %d records, want %d", sent, len(want))
	}

	franzGot := franzConsume(t, addr, topic, len(want))
	checkSame(t, want, franzGot, false)
	checkNulls(t, want, franzGot)

	// kafka-python reads it all back without a group, and finds, by
	// timestamp, the middle record of each partition and none past the
	// last (within a partition, timestamps rise with offsets here).
	byPart := map[int32][]rec{}
	for _, r := range want {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	type timeQuery struct {
		P  int32 `json:"p"`
		Ts int64 `json:"ts"`
	}
	var times []timeQuery
	wantTimes := map[int32]*int64{}
	for p := range int32(nparts) {
		rs := byPart[p]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
		mid := rs[len(rs)/2]
		times = append(times, timeQuery{p, mid.Timestamp.UnixMilli()})
		wantTimes[p] = &mid.Offset
	}
	times[nparts-1].Ts = want[len(want)-1].Timestamp.Add(time.Hour).UnixMilli()
	wantTimes[nparts-1] = nil
	pyGot, other := pyConsumed(t, runPython(t, "consume", map[string]any{"bootstrap": addr, "topic": topic, "times": times}))
	checkSame(t, want, pyGot, false)
	checkNulls(t, want, pyGot)
	checkPyBounds(t, other, next)
	if len(other["time"]) != nparts {
		t.Fatalf("kafka-python offsets_for_times: %d answers, want %d", len(other["time"]), nparts)
	}
	for _, l := range other["time"] {
		w := wantTimes[l.P]
		switch {
		case w == nil && l.O != nil:
			t.Errorf("offsets_for_times partition %d past the end: offset %d, want none", l.P, *l.O)
		case w != nil && (l.O == nil || *l.O != *w || l.FoundTs == nil || *l.FoundTs != *l.Ts):
			t.Errorf("offsets_for_times partition %d at %d: %+v, want offset %d with that timestamp", l.P, *l.Ts, l, *w)
		}
	}

	// kafka-python reads what franz-go produced, every codec.
	const ftopic = "py-franz"
	extCreateTopic(t, addr, ftopic, 3)
	fwant := franzProduce(t, addr, ftopic, makeRecs("franz", 3000, base))
	fgot, fother := pyConsumed(t, runPython(t, "consume", map[string]any{"bootstrap": addr, "topic": ftopic}))
	checkSame(t, fwant, fgot, false)
	fnext := map[int32]int64{}
	for _, r := range fwant {
		fnext[r.Partition]++
	}
	checkPyBounds(t, fother, fnext)
}

// checkPyBounds checks kafka_python.py consume's partitions and bounds
// lines: partitions 0..len(end)-1, each from offset 0 to end.
func checkPyBounds(t *testing.T, other map[string][]pyLine, end map[int32]int64) {
	t.Helper()
	var wantParts []int32
	wantBegin, wantEnd := map[string]int64{}, map[string]int64{}
	for p := range int32(len(end)) {
		wantParts = append(wantParts, p)
		wantBegin[strconv.Itoa(int(p))] = 0
		wantEnd[strconv.Itoa(int(p))] = end[p]
	}
	if len(other["partitions"]) != 1 || !slices.Equal(other["partitions"][0].Partitions, wantParts) {
		t.Errorf("kafka-python partitions_for_topic: %+v, want %v", other["partitions"], wantParts)
	}
	if len(other["bounds"]) != 1 || fmt.Sprint(other["bounds"][0].Begin) != fmt.Sprint(wantBegin) || fmt.Sprint(other["bounds"][0].End) != fmt.Sprint(wantEnd) {
		t.Errorf("kafka-python beginning/end offsets: %+v, want %v / %v", other["bounds"], wantBegin, wantEnd)
	}
}

// TestPythonAdmin: kafka-python's KafkaAdminClient creates topics (one
// with configs), is refused a duplicate and an unknown config, lists and
// describes them and their configs, adds partitions and deletes them;
// franz-go sees each change.
func TestPythonAdmin(t *testing.T) {
	pythonKafka(t)
	n := testkit.StartNode(t, node.Config{AutoCreateTopics: true})
	addr := n.KafkaAddr()
	const a, b, invalid = "pyadm-a", "pyadm-b", "pyadm-invalid"
	spec := map[string]any{"bootstrap": addr, "topics": []string{a, b}, "invalid": invalid}
	extCreateTopic(t, addr, "pyadm-other", 2)

	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	// A fresh franz-go admin client each time: kadm caches metadata.
	newAdm := func() *kadm.Client {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	topicParts := func() map[string]int {
		t.Helper()
		tds, err := newAdm().ListTopics(ctx)
		if err != nil {
			t.Fatalf("list topics: %v", err)
		}
		m := map[string]int{}
		for _, td := range tds.Sorted() {
			if td.Err != nil {
				t.Fatalf("topic %s: %v", td.Topic, td.Err)
			}
			m[td.Topic] = len(td.Partitions)
		}
		return m
	}

	byKind := map[string]pyLine{}
	for _, l := range runPython(t, "admin-create", spec) {
		byKind[l.Kind] = l
	}
	expect := func(kind, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("kafka-python %s: %s, want %s", kind, got, want)
		}
	}
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	errName := func(l pyLine) string {
		if l.Error == nil {
			return "no error"
		}
		return *l.Error
	}
	t.Logf("kafka-python chose CreateTopics v%d, CreatePartitions v%d", byKind["created"].Version, byKind["create_partitions"].Version)
	expect("create_topics", jsonOf(byKind["created"].Errors), `[["pyadm-a",0],["pyadm-b",0]]`)
	expect("create_topics of an existing topic", errName(byKind["create_again"]), "TopicAlreadyExistsError")
	expect("create_topics with an unknown config", errName(byKind["create_invalid"]), "InvalidConfigurationError")
	// list_topics lists every topic, as from Kafka: the internal
	// __consumer_offsets too.
	expect("list_topics", jsonOf(byKind["topics"].Topics), `["__consumer_offsets","pyadm-a","pyadm-b","pyadm-other"]`)
	expect("describe_topics", jsonOf(byKind["described"].Topics), `[["pyadm-a",0,3],["pyadm-b",0,1]]`)
	expect("create_partitions", jsonOf(byKind["create_partitions"].Errors), `[["pyadm-a",0]]`)

	// describe_configs: every config Cohort knows, those set at creation
	// as DYNAMIC_TOPIC_CONFIG (source 1), the rest DEFAULT_CONFIG (5).
	res := byKind["configs"].Resources
	if len(res) != 2 || res[0].Name != a || res[1].Name != b || res[0].Error != 0 || res[1].Error != 0 {
		t.Fatalf("kafka-python describe_configs: %+v, want %s and %s without errors", res, a, b)
	}
	for _, r := range res {
		if len(r.Configs) != len(topics.TopicConfigs) {
			t.Errorf("kafka-python describe_configs %s: %d configs, want the %d Cohort knows", r.Name, len(r.Configs), len(topics.TopicConfigs))
		}
		for _, c := range topics.TopicConfigs {
			if _, ok := r.Configs[c.Name]; !ok {
				t.Errorf("kafka-python describe_configs %s: no %s", r.Name, c.Name)
			}
		}
		for name, want := range map[string][2]any{
			"retention.ms":     {"604800000", 5.0},
			"cleanup.policy":   {"delete", 5.0},
			"segment.bytes":    {"268435456", 5.0},
			"compression.type": {"producer", 5.0},
		} {
			if r.Name == a && name == "retention.ms" {
				want = [2]any{"3600000", 1.0}
			}
			if r.Name == a && name == "cleanup.policy" {
				want = [2]any{"delete", 1.0}
			}
			if got, ok := r.Configs[name]; !ok || got != want {
				t.Errorf("kafka-python describe_configs %s: %s = %v, want %v", r.Name, name, got, want)
			}
		}
	}

	// franz-go agrees: the partitions, the configs, and no invalid topic.
	if got, want := fmt.Sprint(topicParts()), fmt.Sprint(map[string]int{a: 5, b: 1, "pyadm-other": 2}); got != want {
		t.Errorf("after kafka-python's create_topics and create_partitions: topics %s, want %s", got, want)
	}
	rcs, err := newAdm().DescribeTopicConfigs(ctx, a)
	if err != nil {
		t.Fatalf("describe configs of %s: %v", a, err)
	}
	rc, err := rcs.On(a, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v %v", a, err, rc.Err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = true
			if c.MaybeValue() != "3600000" {
				t.Errorf("franz-go sees %s retention.ms = %q, want 3600000", a, c.MaybeValue())
			}
		}
	}
	if !found {
		t.Errorf("franz-go sees no retention.ms on %s", a)
	}

	byKind = map[string]pyLine{}
	for _, l := range runPython(t, "admin-delete", spec) {
		byKind[l.Kind] = l
	}
	t.Logf("kafka-python chose DeleteTopics v%d", byKind["deleted"].Version)
	expect("delete_topics", jsonOf(byKind["deleted"].Errors), `[["pyadm-a",0],["pyadm-b",0]]`)
	expect("delete_topics of a deleted topic", errName(byKind["delete_again"]), "UnknownTopicOrPartitionError")
	expect("list_topics after delete_topics", jsonOf(byKind["topics"].Topics), `["__consumer_offsets","pyadm-other"]`)
	if res := byKind["configs"].Resources; len(res) != 1 || res[0].Error != 3 {
		t.Errorf("kafka-python describe_configs of a deleted topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION (3)", res)
	}
	if got, want := fmt.Sprint(topicParts()), fmt.Sprint(map[string]int{"pyadm-other": 2}); got != want {
		t.Errorf("after kafka-python's delete_topics: topics %s, want %s", got, want)
	}
}

// TestPythonAlterConfigs: kafka-python's alter_configs (AlterConfigs,
// which replaces a topic's whole set of configs) then describe_configs
// reads each set back, as franz-go does; a malformed value, one below
// Kafka's least, an unknown config and an unknown topic are refused,
// changing nothing; and
// describe_configs of named configs answers those alone, a set one with
// itself first among its synonyms.
//
// kafka-python 2.0.2 has no delete_records (DeleteRecords is only a name
// in its table of API keys: no request class, no admin method); kadm,
// Sarama (delete_records_test.go) and kafkactl (kafkactl_test.go) delete
// records instead.
func TestPythonAlterConfigs(t *testing.T) {
	pythonKafka(t)
	n := testkit.StartNode(t, node.Config{})
	addr := n.KafkaAddr()
	const topic = "pycfg"
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), extTimeout)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000")}, topic); err != nil {
		t.Fatal(err)
	}

	sets := []map[string]string{
		{"retention.ms": "7200000", "cleanup.policy": "compact"},
		{"segment.ms": "60000"}, // the others go back to their defaults
	}
	spec := map[string]any{
		"bootstrap": addr,
		"topic":     topic,
		"sets":      sets,
		"refused": [][2]any{
			{topic, map[string]string{"retention.ms": "soon"}},
			{topic, map[string]string{"retention.ms": "-2"}},
			{topic, map[string]string{"no.such.config": "1"}},
			{"pycfg-missing", map[string]string{"retention.ms": "1"}},
		},
		"named": []string{"segment.ms", "retention.ms"},
	}
	lines := runPython(t, "admin-configs", spec)
	// dynamic is a describe_configs answer's DYNAMIC_TOPIC_CONFIG (source
	// 1) configs; every other must be a DEFAULT_CONFIG (5).
	dynamic := func(what string, res []pyConfigResource) map[string]string {
		t.Helper()
		if len(res) != 1 || res[0].Name != topic || res[0].Error != 0 {
			t.Fatalf("kafka-python describe_configs %s: %+v, want %s without an error", what, res, topic)
		}
		m := map[string]string{}
		for name, c := range res[0].Configs {
			switch c[1] {
			case 1.0:
				m[name], _ = c[0].(string)
			case 5.0:
			default:
				t.Errorf("kafka-python describe_configs %s: %s = %v, source neither 1 nor 5", what, name, c)
			}
		}
		return m
	}
	var altered, refused int
	for _, l := range lines {
		switch l.Kind {
		case "altered":
			if l.Version != 1 || fmt.Sprint(l.Errors) != fmt.Sprintf("[[%s 0]]", topic) {
				t.Fatalf("kafka-python alter_configs %d: AlterConfigs v%d, errors %v; want v1 and none", l.I, l.Version, l.Errors)
			}
			altered++
		case "configs":
			sameConfigs(t, fmt.Sprintf("kafka-python describe_configs after alter_configs %d", l.I), dynamic("after alter_configs", l.Resources), sets[l.I])
		case "refused":
			want := []string{
				fmt.Sprintf("[[%s 40]]", topic), // INVALID_CONFIG
				fmt.Sprintf("[[%s 40]]", topic),
				fmt.Sprintf("[[%s 40]]", topic),
				"[[pycfg-missing 3]]", // UNKNOWN_TOPIC_OR_PARTITION
			}[l.I]
			if fmt.Sprint(l.Errors) != want || len(l.Messages) != 1 || l.Messages[0] == nil || *l.Messages[0] == "" {
				t.Errorf("kafka-python alter_configs refusal %d: errors %v, messages %v; want %s with a message", l.I, l.Errors, l.Messages, want)
			}
			refused++
		case "after_refused":
			sameConfigs(t, "kafka-python describe_configs after the refusals", dynamic("after the refusals", l.Resources), sets[1])
		case "named":
			t.Logf("kafka-python chose DescribeConfigs v%d", l.Version)
			if len(l.Named) != 1 || l.Named[0].Name != topic || l.Named[0].Error != 0 || len(l.Named[0].Configs) != 2 {
				t.Fatalf("kafka-python describe_configs of segment.ms and retention.ms: %+v, want those two alone", l.Named)
			}
			seg, ret := l.Named[0].Configs["segment.ms"], l.Named[0].Configs["retention.ms"]
			if seg[0] != "60000" || seg[1] != 1.0 || ret[0] != "604800000" || ret[1] != 5.0 {
				t.Errorf("kafka-python describe_configs: segment.ms %v, retention.ms %v; want 60000 set on the topic and the 7-day default", seg, ret)
			}
			// As Kafka: the value in force first among the synonyms.
			if syn, _ := seg[2].([]any); len(syn) == 0 || fmt.Sprint(syn[0]) != "[segment.ms 60000 1]" {
				t.Errorf("kafka-python describe_configs segment.ms synonyms %v, want [segment.ms 60000 1] first", seg[2])
			}
		default:
			t.Fatalf("kafka-python admin-configs: unexpected %+v", l)
		}
	}
	if altered != len(sets) || refused != 4 {
		t.Fatalf("kafka-python admin-configs: %d alterations and %d refusals reported, want %d and 4", altered, refused, len(sets))
	}
	sameConfigs(t, "franz-go after kafka-python's alter_configs", topicConfigs(t, adm, topic), sets[len(sets)-1])
}
