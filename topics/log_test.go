package topics

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
)

func TestValidTopicName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"orders", true},
		{"Orders.v2_final-1", true},
		{"...", true},
		{"_", true},
		{"-", true},
		{".a", true},
		{strings.Repeat("x", 249), true},
		{strings.Repeat("x", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"a b", false},
		{"a/b", false},
		{"a\\b", false},
		{"a:b", false},
		{"ü", false},
		{"a\x00", false},
		{"tab\t", false},
		{"star*", false},
	}
	for _, c := range cases {
		if got := ValidTopicName(c.name); got != c.ok {
			t.Errorf("ValidTopicName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}

func TestCreate(t *testing.T) {
	e := newEnv(t)
	tp, err := e.log.Create("orders", 3, map[string]string{"retention.ms": "1000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Name != "orders" || len(tp.Partitions) != 3 || tp.ID == ([16]byte{}) {
		t.Fatalf("created %+v", tp)
	}
	for i, p := range tp.Partitions {
		if p.Topic != "orders" || p.Index != int32(i) {
			t.Fatalf("partition %d is %s-%d", i, p.Topic, p.Index)
		}
		if _, err := os.Stat(p.dir); err != nil {
			t.Fatalf("partition dir: %v", err)
		}
	}
	if e.log.Topic("orders") != tp || e.log.TopicByID(tp.ID) != tp {
		t.Fatal("lookup does not find the new topic")
	}
	if v, def := tp.Config("retention.ms"); v != "1000" || def {
		t.Fatalf("retention.ms = %q %v", v, def)
	}
	if v, def := tp.Config("cleanup.policy"); v != "delete" || !def {
		t.Fatalf("cleanup.policy = %q %v", v, def)
	}
	if _, err := e.log.Create("orders", 1, nil, false); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate = %v", err)
	}
	if _, err := e.log.Create("orders", 1, nil, true); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate validateOnly = %v", err)
	}
	for _, name := range []string{"", ".", "..", "a b", strings.Repeat("x", 250)} {
		if _, err := e.log.Create(name, 1, nil, false); !errors.Is(err, ErrInvalidTopic) {
			t.Fatalf("Create(%q) = %v", name, err)
		}
	}
	for _, n := range []int32{0, -1} {
		if _, err := e.log.Create("p", n, nil, false); !errors.Is(err, ErrInvalidPartitions) {
			t.Fatalf("Create with %d partitions = %v", n, err)
		}
	}
	if _, err := e.log.Create(strings.Repeat("y", 249), 1, nil, false); err != nil {
		t.Fatalf("249-character name: %v", err)
	}

	badConfigs := []map[string]string{
		{"no.such.config": "1"},
		{"segment.bytes": "abc"},
		{"segment.bytes": "10"},
		{"segment.bytes": "-1"},
		{"segment.bytes": "4294967296"}, // not an int32
		{"max.message.bytes": "13"},
		{"max.message.bytes": "1.5"},
		{"retention.ms": "soon"},
		{"retention.ms": "99999999999999999999"},
		{"unclean.leader.election.enable": "maybe"},
		{"retention.ms": "1", "bogus": "x"},
		// Kafka's validators (LogConfig's ConfigDef), which kafkactl's
		// alter topic met: values Kafka refuses with INVALID_CONFIG.
		{"compression.type": "brotli"},
		{"compression.type": " gzip"},
		{"retention.ms": "-2"},
		{"segment.ms": "0"},
		{"delete.retention.ms": "-1"},
		{"min.insync.replicas": "0"},
		{"unclean.leader.election.enable": "1"},
		{"unclean.leader.election.enable": "t"},
		{"message.timestamp.type": "createtime"},
		{"cleanup.policy": "compact,shred"},
	}
	for _, c := range badConfigs {
		if _, err := e.log.Create("cfg", 1, c, false); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("Create with %v = %v", c, err)
		}
		if _, err := e.log.Create("cfg", 1, c, true); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("validateOnly Create with %v = %v", c, err)
		}
	}
	goodConfigs := map[string]string{
		"segment.bytes":                  "14",
		"max.message.bytes":              "2147483647",
		"unclean.leader.election.enable": "true",
		"cleanup.policy":                 "compact",
		"retention.ms":                   "-1",
	}
	if err := ValidateTopicConfigs(goodConfigs); err != nil {
		t.Fatalf("good configs: %v", err)
	}
	// At each validator's edge, and its other values.
	for _, c := range []map[string]string{
		{"compression.type": "uncompressed"}, {"compression.type": "zstd"}, {"compression.type": "lz4"},
		{"compression.type": "snappy"}, {"compression.type": "gzip"},
		{"segment.ms": "1"}, {"delete.retention.ms": "0"}, {"min.insync.replicas": "1"},
		{"retention.bytes": "-5"}, // Kafka checks retention.bytes for nothing but a long
		{"unclean.leader.election.enable": "TRUE"}, {"unclean.leader.election.enable": "False"},
		{"cleanup.policy": "compact, delete"}, {"cleanup.policy": ""},
	} {
		if err := ValidateTopicConfigs(c); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	if err := ValidateTopicConfigs(map[string]string{"retention.ms": "-2"}); err == nil ||
		!strings.Contains(err.Error(), "Invalid value -2 for configuration retention.ms: Value must be at least -1") {
		t.Errorf("retention.ms=-2: %v, want Kafka's message", err)
	}
	if e.log.Topic("cfg") != nil {
		t.Fatal("a refused Create left a topic")
	}
	names := []string{}
	for _, tp := range e.log.Topics() {
		names = append(names, tp.Name)
	}
	if len(names) != 2 || names[0] != "orders" || names[1] != strings.Repeat("y", 249) {
		t.Fatalf("Topics = %v", names)
	}
}

func TestTopicConfigTable(t *testing.T) {
	for i, c := range TopicConfigs {
		if i > 0 && TopicConfigs[i-1].Name >= c.Name {
			t.Fatalf("TopicConfigs not sorted at %s", c.Name)
		}
		if err := ValidateTopicConfigs(map[string]string{c.Name: c.Default}); err != nil {
			t.Fatalf("default of %s does not validate: %v", c.Name, err)
		}
		if got := TopicConfigDefault(c.Name); got != c.Default {
			t.Fatalf("TopicConfigDefault(%s) = %q", c.Name, got)
		}
	}
	if _, ok := LookupTopicConfig("nope"); ok || TopicConfigDefault("nope") != "" {
		t.Fatal("unknown config found")
	}
}

func TestCreateValidateOnly(t *testing.T) {
	e := newEnv(t)
	tp, err := e.log.Create("v", 4, map[string]string{"segment.bytes": "2048"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if tp == nil || tp.Name != "v" || len(tp.Partitions) != 0 {
		t.Fatalf("validateOnly returned %+v", tp)
	}
	if e.log.Topic("v") != nil || e.log.TopicByID(tp.ID) != nil || len(e.log.Topics()) != 0 {
		t.Fatal("validateOnly created the topic")
	}
	if ents, _ := os.ReadDir(e.dataDir()); len(ents) != 0 {
		t.Fatalf("validateOnly created %d entries in the data dir", len(ents))
	}
	e.reopen()
	if e.log.Topic("v") != nil {
		t.Fatal("validateOnly topic appeared after reopen")
	}
	// And the name is still free.
	e.create("v", 1, nil)
}

func TestDelete(t *testing.T) {
	e := newEnv(t)
	tp := e.create("gone", 2, nil)
	keep := e.create("kept", 1, nil)
	mustAppend(t, tp.Partitions[1], plainBatch(t, 3, "x"))
	mustAppend(t, keep.Partitions[0], plainBatch(t, 3, "y"))
	dir := filepath.Join(e.dataDir(), hex.EncodeToString(tp.ID[:]))
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	if err := e.log.Delete("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("topic dir after Delete: %v", err)
	}
	if e.log.Topic("gone") != nil || e.log.TopicByID(tp.ID) != nil {
		t.Fatal("deleted topic still found")
	}
	if err := e.log.Delete("gone"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second Delete = %v", err)
	}
	if err := e.log.Delete("never"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Delete unknown = %v", err)
	}
	e.reopen()
	if e.log.Topic("gone") != nil {
		t.Fatal("deleted topic back after reopen")
	}
	checkLog(t, e.part("kept", 0), []appended{{base: 0, records: simpleRecords(3, "y", 1000)}})
	// The name can be reused, with a new id and an empty log.
	again := e.create("gone", 1, nil)
	if again.ID == tp.ID {
		t.Fatal("recreated topic reused the id")
	}
	if _, hw := again.Partitions[0].Offsets(); hw != 0 {
		t.Fatalf("recreated topic has end %d", hw)
	}
}

func TestGrow(t *testing.T) {
	e := newEnv(t)
	tp := e.create("g", 2, map[string]string{"segment.bytes": "1024"})
	p0 := tp.Partitions[0]
	mustAppend(t, p0, plainBatch(t, 2, "a"))
	for _, n := range []int32{2, 1, 0, -1} {
		if err := e.log.Grow("g", n, false); !errors.Is(err, ErrInvalidPartitions) {
			t.Fatalf("Grow to %d = %v", n, err)
		}
	}
	if err := e.log.Grow("nope", 5, false); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Grow unknown = %v", err)
	}
	if err := e.log.Grow("g", 5, true); err != nil {
		t.Fatal(err)
	}
	if n := len(e.log.Topic("g").Partitions); n != 2 {
		t.Fatalf("validateOnly Grow made %d partitions", n)
	}
	if err := e.log.Grow("g", 5, false); err != nil {
		t.Fatal(err)
	}
	grown := e.log.Topic("g")
	if len(grown.Partitions) != 5 || grown.ID != tp.ID || e.log.TopicByID(tp.ID) != grown {
		t.Fatalf("grown topic %+v", grown)
	}
	if grown.Partitions[0] != p0 {
		t.Fatal("Grow replaced an existing partition")
	}
	if len(tp.Partitions) != 2 {
		t.Fatal("Grow changed the old Topic view")
	}
	for i, p := range grown.Partitions {
		if p.Index != int32(i) {
			t.Fatalf("partition %d has index %d", i, p.Index)
		}
	}
	// New partitions take the topic's configs.
	if grown.Partitions[4].cfg.segmentBytes != 1024 {
		t.Fatalf("new partition segment.bytes %d", grown.Partitions[4].cfg.segmentBytes)
	}
	mustAppend(t, grown.Partitions[4], plainBatch(t, 1, "new"))
	e.reopen()
	g := e.log.Topic("g")
	if len(g.Partitions) != 5 {
		t.Fatalf("%d partitions after reopen", len(g.Partitions))
	}
	if _, hw := g.Partitions[0].Offsets(); hw != 2 {
		t.Fatalf("partition 0 end %d", hw)
	}
	if _, hw := g.Partitions[4].Offsets(); hw != 1 {
		t.Fatalf("partition 4 end %d", hw)
	}
}

func TestIDsStableAcrossReopen(t *testing.T) {
	e := newEnv(t)
	cid := e.log.ClusterID()
	if len(cid) != 22 {
		t.Fatalf("cluster id %q", cid)
	}
	a := e.create("a", 1, nil)
	b := e.create("b", 2, map[string]string{"retention.ms": "5"})
	if a.ID == b.ID {
		t.Fatal("two topics share an id")
	}
	e.reopen()
	if e.log.ClusterID() != cid {
		t.Fatalf("cluster id changed: %q → %q", cid, e.log.ClusterID())
	}
	a2, b2 := e.log.Topic("a"), e.log.Topic("b")
	if a2 == nil || b2 == nil || a2.ID != a.ID || b2.ID != b.ID {
		t.Fatal("topic ids changed across reopen")
	}
	if e.log.TopicByID(b.ID) != b2 || len(b2.Partitions) != 2 {
		t.Fatal("TopicByID after reopen")
	}
	if v, def := b2.Config("retention.ms"); v != "5" || def {
		t.Fatalf("configs after reopen: %q %v", v, def)
	}
	// Another store means another cluster.
	other, err := Open(Config{Dir: t.TempDir(), Store: newMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.ClusterID() == cid {
		t.Fatal("two stores share a cluster id")
	}
}

func TestNextProducerID(t *testing.T) {
	e := newEnv(t)
	seen := map[int64]bool{}
	last := int64(-1)
	next := func() int64 {
		t.Helper()
		id, err := e.log.NextProducerID()
		if err != nil {
			t.Fatal(err)
		}
		if id < 0 || seen[id] || id <= last {
			t.Fatalf("producer id %d after %d (seen %v)", id, last, seen[id])
		}
		seen[id], last = true, id
		return id
	}
	for range 3 {
		next()
	}
	e.reopen()
	// The rest of the reserved block is skipped, never reused.
	if id := next(); id < producerIDBlock {
		t.Fatalf("id %d after reopen is inside the first block", id)
	}
	for range producerIDBlock + 10 { // crosses a block boundary
		next()
	}
	e.reopen()
	next()

	// Concurrent callers get distinct ids.
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[int64]bool{}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				id, err := e.log.NextProducerID()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if got[id] || seen[id] {
					t.Errorf("producer id %d handed out twice", id)
				}
				got[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestNextProducerIDStoreFailure(t *testing.T) {
	st := newMemStore()
	l, err := Open(Config{Dir: t.TempDir(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st.failPuts.Store(true)
	if _, err := l.NextProducerID(); err == nil {
		t.Fatal("NextProducerID without a durable reservation succeeded")
	}
	st.failPuts.Store(false)
	if id, err := l.NextProducerID(); err != nil || id != 0 {
		t.Fatalf("after recovery: %d %v", id, err)
	}
	if v, _ := st.Get(record.MetaKey(record.MetaNextProducerID)); len(v) != 1+1+8 {
		t.Fatalf("reservation record %x", v)
	}
}

func TestOrphanTopicDirsRemoved(t *testing.T) {
	st := newMemStore()
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := l.Create("orphan", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	keep, err := l.Create("keep", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, tp.Partitions[0], plainBatch(t, 1, "o"))
	mustAppend(t, keep.Partitions[0], plainBatch(t, 1, "k"))
	l.Close()
	// A crash after the record was deleted and before the files were.
	var del store.Batch
	del.Delete(record.TopicKey("orphan"))
	if err := st.Apply(&del); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, hex.EncodeToString(tp.ID[:]))
	// Entries that are not topic ids are left alone.
	others := []string{"lost+found", "abcd", strings.Repeat("ab", 17), strings.Repeat("zz", 16)}
	for _, o := range others {
		if err := os.Mkdir(filepath.Join(dir, o), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err = Open(Config{Dir: dir, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphan dir: %v", err)
	}
	for _, o := range others {
		if _, err := os.Stat(filepath.Join(dir, o)); err != nil {
			t.Fatalf("%s: %v", o, err)
		}
	}
	if l.Topic("orphan") != nil {
		t.Fatal("orphan topic loaded")
	}
	checkLog(t, l.Topic("keep").Partitions[0], []appended{{base: 0, records: simpleRecords(1, "k", 1000)}})
}

func TestOpenCorruptTopicRecord(t *testing.T) {
	for _, rec := range []string{
		`not json`,
		`{"v":2,"name":"x","id":"00000000000000000000000000000001","partitions":1}`,
		`{"v":1,"name":"x","id":"zz","partitions":1}`,
		`{"v":1,"name":"x","id":"0011","partitions":1}`,
		`{"v":1,"name":"x","id":"` + strings.Repeat("ab", 17) + `","partitions":1}`,
	} {
		st := newMemStore()
		// As an older version wrote it: the upgrade into the global
		// unit refuses it, and the log does not open.
		var b store.Batch
		b.Put([]byte("topic/x"), []byte(rec))
		if err := st.Apply(&b); err != nil {
			t.Fatal(err)
		}
		l, err := Open(Config{Dir: t.TempDir(), Store: st})
		if err == nil {
			l.Close()
			t.Fatalf("Open accepted topic record %s", rec)
		}
	}
}

func TestLogClosed(t *testing.T) {
	st := newMemStore()
	l, err := Open(Config{Dir: t.TempDir(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	tp, _ := l.Create("t", 1, nil, false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Create("u", 1, nil, false); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Create after Close = %v", err)
	}
	if _, err := tp.Partitions[0].Append(plainBatch(t, 1, "x"), 0); !errors.Is(err, ErrDeleted) {
		t.Fatalf("Append after Close = %v", err)
	}
}

func TestCreateStoreFailure(t *testing.T) {
	st := newMemStore()
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st.failPuts.Store(true)
	if _, err := l.Create("t", 1, nil, false); err == nil {
		t.Fatal("Create without a durable record succeeded")
	}
	if l.Topic("t") != nil {
		t.Fatal("topic visible after a failed Create")
	}
	st.failPuts.Store(false)
	if _, err := l.Create("t", 1, nil, false); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCorruptProducerIDReservation(t *testing.T) {
	st := newMemStore()
	// As an older version kept it: upgraded into the global unit as
	// it is, and refused when a reservation reads it.
	var b store.Batch
	b.Put([]byte("meta/next-producer-id"), []byte{1, 2, 3})
	if err := st.Apply(&b); err != nil {
		t.Fatal(err)
	}
	l, err := Open(Config{Dir: t.TempDir(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if id, err := l.NextProducerID(); err == nil {
		t.Fatalf("a 3-byte producer id reservation gave id %d", id)
	}
}

// TestAlterConfigs: a topic's configs change through the global unit and
// the partitions act on the new ones at once: a smaller segment.bytes
// rolls the next append into a new segment file; the configs survive a
// reopen, and an invalid or unknown config changes nothing.
func TestAlterConfigs(t *testing.T) {
	e := newEnv(t)
	tp, err := e.log.Create("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p := tp.Partitions[0]
	// Records of now: the config change starts a retention pass, which
	// would delete a closed segment of plainBatch's records (stamped in
	// 1970, past retention.ms) while the test counts segments.
	batch := func(tag string) []byte {
		o := noProducer()
		o.records = simpleRecords(4, tag, time.Now().UnixMilli())
		return makeBatch(t, o)
	}
	mustAppend(t, p, batch("a"))
	if err := e.log.AlterConfigs("t", map[string]string{"segment.bytes": "100"}, false); err != nil {
		t.Fatal(err)
	}
	if got := e.log.Topic("t"); got.Partitions[0] != p || got.Configs["segment.bytes"] != "100" {
		t.Fatalf("after the change: partition kept %v, configs %v", got.Partitions[0] == p, got.Configs)
	}
	mustAppend(t, p, batch("b"))
	p.mu.Lock()
	segs := len(p.segs)
	p.mu.Unlock()
	if segs != 2 {
		t.Fatalf("%d segments after an append past the new segment.bytes, want 2", segs)
	}
	for _, bad := range []map[string]string{{"segment.bytes": "x"}, {"no.such": "1"}} {
		if err := e.log.AlterConfigs("t", bad, false); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("configs %v: %v, want ErrInvalidConfig", bad, err)
		}
	}
	if err := e.log.AlterConfigs("nope", nil, false); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("an unknown topic: %v", err)
	}
	e.reopen()
	if got := e.log.Topic("t").Configs; got["segment.bytes"] != "100" || len(got) != 1 {
		t.Fatalf("configs after reopen %v", got)
	}
}

// TestDeleteRecordsBefore: the log start moves durably (it survives a
// reopen), reads below it are out of range, a timestamp search never
// answers below it, and an offset past the end changes nothing.
func TestDeleteRecordsBefore(t *testing.T) {
	e := newEnv(t)
	e.create("t", 1, nil)
	p := e.part("t", 0)
	for range 3 {
		mustAppend(t, p, plainBatch(t, 2, "x")) // offsets 0-5
	}
	if _, err := p.DeleteRecordsBefore(7); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past the end: %v", err)
	}
	if low, err := p.DeleteRecordsBefore(3); err != nil || low != 3 {
		t.Fatalf("delete before 3: %d %v", low, err)
	}
	check := func(when string, p *Partition) {
		t.Helper()
		if start, hw := p.Offsets(); start != 3 || hw != 6 {
			t.Fatalf("%s: offsets %d-%d, want 3-6", when, start, hw)
		}
		if _, err := p.Read(2, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("%s: read at 2: %v", when, err)
		}
		if _, err := p.Read(3, 1<<20, true); err != nil {
			t.Fatalf("%s: read at 3: %v", when, err)
		}
		if off, _, found, err := p.OffsetForTimestamp(0); err != nil || !found || off < 3 {
			t.Fatalf("%s: first record at or after time 0: %d %v %v, want at or above the log start", when, off, found, err)
		}
	}
	check("live", p)
	if low, err := p.DeleteRecordsBefore(1); err != nil || low != 3 {
		t.Fatalf("below the start: %d %v", low, err)
	}
	e.reopen()
	check("after a reopen", e.part("t", 0))
}
