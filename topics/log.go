// Package topics is Cohort's embedded topic log: the topics and partitions
// that let ordinary Kafka clients produce and consume end to end against
// `cohort serve` with nothing else installed.
//
// Topic metadata (name, id, partition count, configs, each partition's
// leader) is a record in the store. Partition data lives beside the store
// in segment files that hold record batches exactly as Kafka writes them;
// they are append-only and read sequentially, which plain files do best (a
// key-value store would write every byte at least twice).
//
// In cluster mode the store is shared and each node opens the partitions
// it leads, the one copy of each (no replication); Refresh applies the
// changes other nodes made, and the Config hooks (Lock, Nodes,
// ReserveProducerIDs) are the cluster's. Nothing here knows about the
// Kafka wire protocol, consumer groups or how nodes find each other.
package topics

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cohort-dev/cohort/store"
)

// Errors from topic administration, mapped to Kafka error codes by the wire
// layer.
var (
	ErrTopicExists       = errors.New("topic already exists")
	ErrUnknownTopic      = errors.New("unknown topic")
	ErrInvalidTopic      = errors.New("invalid topic name")
	ErrInvalidPartitions = errors.New("invalid partition count")
	ErrInvalidConfig     = errors.New("invalid topic config")
)

// Store keys. Topic records are "topic/<name>" → JSON topicRecord; the
// cluster id and the producer-id reservation live under "meta/".
var (
	topicPrefix    = []byte("topic/")
	clusterIDKey   = []byte("meta/cluster-id")
	nextProducerID = []byte("meta/next-producer-id")
)

// topicRecord is the stored form of a topic.
//
// Version 1 has no leaders: every partition is led by node 0, which is
// what a single node (node id 0) means. Version 2 adds Leaders, the node
// that hosts each partition (cluster mode; there is one copy of each
// partition). A record whose leaders are all node 0 is still written as
// version 1, so that a single node's records read the same by any Cohort;
// decode reads both. A future version adds fields and bumps V, and decode
// keeps reading the older ones.
type topicRecord struct {
	V          int               `json:"v"`
	Name       string            `json:"name"`
	ID         string            `json:"id"` // 32 hex digits
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
	Leaders    []int32           `json:"leaders,omitempty"` // v2: one per partition
}

// decodeTopic parses a stored topic record into a Topic without
// partitions.
func decodeTopic(v []byte) (*Topic, int32, error) {
	var rec topicRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, 0, fmt.Errorf("corrupt topic record %q: %w", v, err)
	}
	t := &Topic{Name: rec.Name, Configs: rec.Configs}
	var ok bool
	if t.ID, ok = parseTopicID(rec.ID); !ok {
		return nil, 0, fmt.Errorf("corrupt topic id %q", rec.ID)
	}
	if rec.Partitions <= 0 || rec.Partitions > MaxPartitions {
		return nil, 0, fmt.Errorf("corrupt topic record %q: %d partitions", v, rec.Partitions)
	}
	switch {
	case rec.V == 1 && rec.Leaders == nil:
		t.Leaders = make([]int32, rec.Partitions)
	case rec.V == 2 && len(rec.Leaders) == int(rec.Partitions):
		t.Leaders = rec.Leaders
	default:
		return nil, 0, fmt.Errorf("corrupt topic record %q: version %d with %d leaders", v, rec.V, len(rec.Leaders))
	}
	return t, rec.Partitions, nil
}

// encodeTopic is the stored form of t with its leaders.
func encodeTopic(t *Topic) ([]byte, error) {
	rec := topicRecord{V: 1, Name: t.Name, ID: hex.EncodeToString(t.ID[:]), Partitions: int32(len(t.Leaders)), Configs: t.Configs}
	for _, n := range t.Leaders {
		if n != 0 {
			rec.V, rec.Leaders = 2, t.Leaders
			break
		}
	}
	return json.Marshal(rec)
}

// Topic is an immutable view of a topic. Growing a topic publishes a new
// Topic that shares the existing partitions.
type Topic struct {
	Name    string
	ID      [16]byte
	Configs map[string]string // set explicitly at creation; see Config
	// Partitions has one entry per partition; an entry is nil when another
	// node leads that partition (cluster mode), so this node holds none of
	// its data.
	Partitions []*Partition
	// Leaders is the node that leads (and alone stores) each partition,
	// chosen when the partition was created; as long as Partitions.
	Leaders []int32
}

// Config returns the value of a topic config and whether it is the default.
func (t *Topic) Config(name string) (string, bool) {
	if v, ok := t.Configs[name]; ok {
		return v, false
	}
	return TopicConfigDefault(name), true
}

// Config configures a Log. The zero value of each optional field is a
// single node that leads every partition.
type Config struct {
	// Dir holds the partition data. Required.
	Dir string
	// Store holds topic metadata. Required. In cluster mode it is shared by
	// every node; Dir is each node's own.
	Store store.Store
	// Logger; nil discards.
	Logger *slog.Logger
	// SyncFile makes a segment file durable. Nil means fdatasync(2)
	// (fsync(2) where there is none).
	// Tests set it to record or hold fsyncs, to prove that nothing is
	// acknowledged before it is synced.
	SyncFile func(*os.File) error

	// Cluster mode. Nil hooks and NodeID 0 are a single node.

	// NodeID is this node's id. This node opens the data of the partitions
	// it leads and no other. Default 0.
	NodeID int32
	// Nodes returns the ids of the live nodes, this one included; new
	// partitions' leaders are spread over them. It is called under the
	// log's lock and must not call back into the Log. Nil (or an empty
	// answer): this node alone.
	Nodes func() []int32
	// Lock takes a cluster-wide lock on a topic name and returns its
	// release; Create, Delete and Grow hold it while they re-read the
	// topic's record and write it, so that two nodes creating one topic at
	// once end with one topic id. Nil: the Log's own mutex alone, enough
	// when no other node writes the store.
	Lock func(name string) (unlock func(), err error)
	// ReserveProducerIDs reserves n producer ids never handed out before
	// by any node and returns the first. Nil: reserved in blocks under a
	// key of the store, which is safe only if one node writes it.
	ReserveProducerIDs func(n int64) (first int64, err error)
	// ClusterID, if set, is the cluster id; else one is minted at first
	// start and kept in the store.
	ClusterID string
}

// Log is the set of topics. It is safe for concurrent use.
type Log struct {
	dir      string
	st       store.Store
	logger   *slog.Logger
	syncFile func(*os.File) error
	nodeID   int32
	nodes    func() []int32
	lock     func(string) (func(), error)
	reserve  func(int64) (int64, error)

	// admin serializes the changes to the set of topics (Create, Delete,
	// Grow, Refresh), so that a Refresh applying an older read of the store
	// cannot undo a change made meanwhile. Taken after a Config.Lock and
	// before mu.
	admin sync.Mutex

	mu     sync.RWMutex
	byName map[string]*Topic
	byID   map[[16]byte]*Topic
	// raw is the stored record each topic in byName was last built from
	// and fully opened; Refresh skips topics whose record is unchanged.
	raw       map[string][]byte
	closed    bool
	clusterID string
	// version counts changes to the set of topics and their partition
	// counts, so that readers can cache what they derive from them.
	version atomic.Uint64

	pidMu             sync.Mutex
	pidNext, pidLimit int64
}

// Open loads every topic from the store and recovers the partitions this
// node leads.
func Open(cfg Config) (*Log, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SyncFile == nil {
		cfg.SyncFile = dataSync
	}
	l := &Log{
		dir:       cfg.Dir,
		st:        cfg.Store,
		logger:    cfg.Logger,
		syncFile:  cfg.SyncFile,
		nodeID:    cfg.NodeID,
		nodes:     cfg.Nodes,
		lock:      cfg.Lock,
		reserve:   cfg.ReserveProducerIDs,
		byName:    make(map[string]*Topic),
		byID:      make(map[[16]byte]*Topic),
		raw:       make(map[string][]byte),
		clusterID: cfg.ClusterID,
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create topic dir: %w", err)
	}
	if l.clusterID == "" {
		if err := l.loadClusterID(); err != nil {
			return nil, err
		}
	}
	if l.reserve == nil {
		if err := l.loadProducerIDs(); err != nil {
			return nil, err
		}
	}
	if err := l.Refresh(); err != nil {
		l.Close()
		return nil, fmt.Errorf("load topics: %w", err)
	}
	l.removeOrphans()
	return l, nil
}

// Refresh re-reads every topic record from the store and applies what
// other nodes changed: topics created or grown elsewhere (opening the new
// partitions this node leads) and topics deleted elsewhere (closing them
// and removing their data here). A topic whose record is unchanged costs a
// comparison. Version grows if anything changed. An error opening one
// partition does not stop the others; the next Refresh retries it.
func (l *Log) Refresh() error {
	l.admin.Lock()
	defer l.admin.Unlock()
	recs := make(map[string][]byte)
	err := l.st.Scan(topicPrefix, func(k, v []byte) error {
		recs[string(k[len(topicPrefix):])] = bytes.Clone(v)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read topics: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return store.ErrClosed
	}
	names := make([]string, 0, len(recs))
	for name := range recs {
		names = append(names, name)
	}
	for name := range l.byName {
		if _, ok := recs[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		if err := l.syncLocked(name, recs[name]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// syncLocked makes the named topic what its stored record raw says (nil:
// no record): it adds, replaces, grows or drops the topic, reusing the
// partitions already open. Callers hold admin and mu.
func (l *Log) syncLocked(name string, raw []byte) error {
	old := l.byName[name]
	if raw == nil {
		if old != nil {
			l.dropLocked(old)
		}
		return nil
	}
	if old != nil && bytes.Equal(l.raw[name], raw) {
		return nil
	}
	t, count, err := decodeTopic(raw)
	if err != nil {
		return err
	}
	if t.Name != name {
		return fmt.Errorf("corrupt topic record: %q stored as %q", t.Name, name)
	}
	if other := l.byID[t.ID]; other != nil && other.Name != name {
		return fmt.Errorf("corrupt topic record: %s has the id of %s", name, other.Name)
	}
	if old != nil && old.ID != t.ID {
		// Deleted and created again elsewhere since we looked.
		l.dropLocked(old)
		old = nil
	}
	t.Partitions = make([]*Partition, count)
	if old != nil {
		for i, p := range old.Partitions {
			switch {
			case p == nil:
			case i < len(t.Partitions) && t.Leaders[i] == l.nodeID:
				t.Partitions[i] = p
			default:
				p.close()
			}
		}
	}
	err = l.openPartitions(t)
	l.byName[name] = t
	l.byID[t.ID] = t
	if err == nil {
		l.raw[name] = raw
	} else {
		delete(l.raw, name) // retried by the next Refresh
	}
	l.version.Add(1)
	return err
}

// dropLocked forgets a deleted topic and removes its data here. Callers
// hold mu.
func (l *Log) dropLocked(t *Topic) {
	delete(l.byName, t.Name)
	delete(l.byID, t.ID)
	delete(l.raw, t.Name)
	l.version.Add(1)
	for _, p := range t.Partitions {
		if p != nil {
			p.close()
		}
	}
	// Once the record is gone the data is an orphan; Open removes it if
	// this does not finish.
	if err := os.RemoveAll(l.topicDir(t.ID)); err != nil {
		l.logger.Warn("removing deleted topic's data", "topic", t.Name, "err", err)
	}
}

// removeOrphans deletes the data of topics whose deletion was recorded but
// whose files a crash left behind.
func (l *Log) removeOrphans() {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		id, ok := parseTopicID(e.Name())
		if !ok {
			continue
		}
		if _, ok := l.byID[id]; !ok {
			l.logger.Info("removing data of a deleted topic", "dir", e.Name())
			os.RemoveAll(filepath.Join(l.dir, e.Name()))
		}
	}
}

// parseTopicID decodes a topic id from its 32 hex digits. (hex.Decode
// would panic on a longer string: it writes past a too-short dst.)
func parseTopicID(s string) ([16]byte, bool) {
	var id [16]byte
	if len(s) != 2*len(id) {
		return id, false
	}
	_, err := hex.Decode(id[:], []byte(s))
	return id, err == nil
}

func (l *Log) topicDir(id [16]byte) string { return filepath.Join(l.dir, hex.EncodeToString(id[:])) }

// openPartitions opens the partitions of t that this node leads and has
// not opened yet. One that fails to open is left nil, and the others are
// still opened.
func (l *Log) openPartitions(t *Topic) error {
	segBytes := t.int64Config("segment.bytes")
	var errs []error
	for i, p := range t.Partitions {
		if p != nil || t.Leaders[i] != l.nodeID {
			continue
		}
		dir := filepath.Join(l.topicDir(t.ID), strconv.Itoa(i))
		p, err := openPartition(dir, t.Name, int32(i), segBytes, l.logger, l.syncFile)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.Partitions[i] = p
	}
	return errors.Join(errs...)
}

func (t *Topic) int64Config(name string) int64 {
	v, _ := t.Config(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// MaxBatchBytes is the topic's max.message.bytes: the largest batch a
// producer may append.
func (t *Topic) MaxBatchBytes() int { return int(t.int64Config("max.message.bytes")) }

// ClusterID is the stable cluster id: Config.ClusterID, or the one minted
// at first start.
func (l *Log) ClusterID() string { return l.clusterID }

// NodeID is this node's id, Config.NodeID.
func (l *Log) NodeID() int32 { return l.nodeID }

func (l *Log) loadClusterID() error {
	v, err := l.st.Get(clusterIDKey)
	if err == nil {
		l.clusterID = string(v)
		return nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("load cluster id: %w", err)
	}
	var raw [16]byte
	rand.Read(raw[:])
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	var b store.Batch
	b.Put(clusterIDKey, []byte(id))
	if err := l.st.Apply(&b); err != nil {
		return fmt.Errorf("store cluster id: %w", err)
	}
	l.clusterID = id
	return nil
}

// producerIDBlock is how many producer ids one store write reserves.
const producerIDBlock = 1000

func (l *Log) loadProducerIDs() error {
	v, err := l.st.Get(nextProducerID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fmt.Errorf("load producer ids: %w", err)
	case len(v) != 8:
		return fmt.Errorf("corrupt producer id reservation %x", v)
	default:
		l.pidNext = int64(binary.BigEndian.Uint64(v))
	}
	l.pidLimit = l.pidNext
	return nil
}

// NextProducerID hands out a producer id never handed out before, even
// across restarts: ids are reserved in durable blocks, through
// Config.ReserveProducerIDs if set.
func (l *Log) NextProducerID() (int64, error) {
	l.pidMu.Lock()
	defer l.pidMu.Unlock()
	if l.pidNext == l.pidLimit {
		if l.reserve != nil {
			first, err := l.reserve(producerIDBlock)
			if err != nil {
				return 0, fmt.Errorf("reserve producer ids: %w", err)
			}
			l.pidNext, l.pidLimit = first, first+producerIDBlock
		} else {
			limit := l.pidNext + producerIDBlock
			var b store.Batch
			b.Put(nextProducerID, binary.BigEndian.AppendUint64(nil, uint64(limit)))
			if err := l.st.Apply(&b); err != nil {
				return 0, fmt.Errorf("reserve producer ids: %w", err)
			}
			l.pidLimit = limit
		}
	}
	id := l.pidNext
	l.pidNext++
	return id, nil
}

// Topic returns the named topic or nil.
func (l *Log) Topic(name string) *Topic {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.byName[name]
}

// TopicByID returns the topic with that id or nil.
func (l *Log) TopicByID(id [16]byte) *Topic {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.byID[id]
}

// Topics returns every topic, sorted by name.
func (l *Log) Topics() []*Topic {
	l.mu.RLock()
	ts := make([]*Topic, 0, len(l.byName))
	for _, t := range l.byName {
		ts = append(ts, t)
	}
	l.mu.RUnlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// MaxPartitions caps the partitions of one topic. Creating a partition costs
// a directory, a file and fsyncs, under the registry's lock; without a cap
// one request for 2^31 partitions would stall the node. Kafka has no fixed
// cap; real topics stay far below this one.
const MaxPartitions = 10000

// ValidTopicName reports whether name is a legal Kafka topic name: 1 to 249
// characters of [a-zA-Z0-9._-], and not "." or "..".
func ValidTopicName(name string) bool {
	if name == "" || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validLogName reports whether name may name a topic of the log: a legal
// Kafka topic name, or an organisation's topic "<tenant>/<name>" with name
// a legal Kafka topic name (the Kafka layer's internal name for it, which
// no client can name since '/' is not legal in topic names).
func validLogName(name string) bool {
	if i := strings.IndexByte(name, '/'); i > 0 {
		return ValidTopicName(name[i+1:])
	}
	return ValidTopicName(name)
}

// Create makes a topic with the given partitions and explicit configs,
// spreading the partitions' leaders over Config.Nodes. With validateOnly
// it checks everything and creates nothing. The returned Topic has no
// partitions when validateOnly is set.
func (l *Log) Create(name string, partitions int32, configs map[string]string, validateOnly bool) (*Topic, error) {
	return l.create(name, partitions, nil, configs, validateOnly)
}

// CreateAssigned is Create with each partition's leader given: partition i
// is led by leaders[i]. The caller checks that those nodes exist.
func (l *Log) CreateAssigned(name string, leaders []int32, configs map[string]string, validateOnly bool) (*Topic, error) {
	return l.create(name, int32(len(leaders)), leaders, configs, validateOnly)
}

func (l *Log) create(name string, partitions int32, leaders []int32, configs map[string]string, validateOnly bool) (*Topic, error) {
	if !validLogName(name) {
		return nil, ErrInvalidTopic
	}
	if partitions <= 0 || partitions > MaxPartitions {
		return nil, ErrInvalidPartitions
	}
	if err := ValidateTopicConfigs(configs); err != nil {
		return nil, err
	}
	unlock, err := l.lockTopic(name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := l.topicLocked(name); err == nil {
		return nil, ErrTopicExists
	} else if err != ErrUnknownTopic {
		return nil, err
	}
	t := &Topic{Name: name, Configs: maps.Clone(configs)}
	rand.Read(t.ID[:])
	if validateOnly {
		return t, nil
	}
	if leaders == nil {
		leaders = l.placeLocked(int(partitions))
	}
	t.Leaders = slices.Clone(leaders)
	t.Partitions = make([]*Partition, partitions)
	raw, err := l.put(t)
	if err != nil {
		return nil, err
	}
	if err := l.openPartitions(t); err != nil {
		// The record is stored: the next Open or Refresh retries these
		// partitions.
		for _, p := range t.Partitions {
			if p != nil {
				p.close()
			}
		}
		return nil, err
	}
	l.byName[name] = t
	l.byID[t.ID] = t
	l.raw[name] = raw
	l.version.Add(1)
	return t, nil
}

// lockTopic takes the cluster-wide lock on name (Config.Lock), then
// syncTopic's locks, so that the caller decides on what every node last
// wrote. The returned func releases them all.
func (l *Log) lockTopic(name string) (func(), error) {
	if l.lock == nil {
		return l.syncTopic(name)
	}
	release, err := l.lock(name)
	if err != nil {
		return nil, fmt.Errorf("lock topic %s: %w", name, err)
	}
	unlock, err := l.syncTopic(name)
	if err != nil {
		release()
		return nil, err
	}
	return func() {
		unlock()
		release()
	}, nil
}

// syncTopic takes admin and mu and brings the named topic up to date with
// its stored record. The returned func releases both.
func (l *Log) syncTopic(name string) (func(), error) {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil, store.ErrClosed
	}
	l.admin.Lock()
	raw, err := l.st.Get(append(bytes.Clone(topicPrefix), name...))
	switch {
	case errors.Is(err, store.ErrNotFound):
		raw = nil
	case err != nil:
		l.admin.Unlock()
		return nil, fmt.Errorf("read topic %s: %w", name, err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.admin.Unlock()
		return nil, store.ErrClosed
	}
	if err := l.syncLocked(name, raw); err != nil {
		l.logger.Warn("opening topic", "topic", name, "err", err)
	}
	return func() {
		l.mu.Unlock()
		l.admin.Unlock()
	}, nil
}

// Sync re-reads the named topic's record from the store, applies it as
// Refresh would, and returns the topic, nil if there is none. Admin
// requests use it to act on what every node last wrote rather than on this
// node's last Refresh.
func (l *Log) Sync(name string) (*Topic, error) {
	unlock, err := l.syncTopic(name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return l.byName[name], nil
}

// placeLocked chooses leaders for n new partitions: each goes to the live
// node that leads the fewest partitions so far, ties going round robin
// (in node id order) from after the previous choice. Callers hold mu.
func (l *Log) placeLocked(n int) []int32 {
	var nodes []int32
	if l.nodes != nil {
		nodes = slices.Clone(l.nodes())
		slices.Sort(nodes)
		nodes = slices.Compact(nodes)
	}
	if len(nodes) == 0 {
		nodes = []int32{l.nodeID}
	}
	counts := make(map[int32]int, len(nodes))
	for _, t := range l.byName {
		for _, id := range t.Leaders {
			counts[id]++
		}
	}
	out := make([]int32, n)
	next := 0
	for i := range out {
		best := next % len(nodes)
		for k := 1; k < len(nodes); k++ {
			j := (next + k) % len(nodes)
			if counts[nodes[j]] < counts[nodes[best]] {
				best = j
			}
		}
		out[i] = nodes[best]
		counts[nodes[best]]++
		next = best + 1
	}
	return out
}

// Version returns a number that grows whenever a topic is created,
// deleted or grown.
func (l *Log) Version() uint64 { return l.version.Load() }

// put stores t's record and returns it.
func (l *Log) put(t *Topic) ([]byte, error) {
	rec, err := encodeTopic(t)
	if err != nil {
		return nil, err
	}
	var b store.Batch
	b.Put(append(bytes.Clone(topicPrefix), t.Name...), rec)
	if err := l.st.Apply(&b); err != nil {
		return nil, fmt.Errorf("store topic %s: %w", t.Name, err)
	}
	return rec, nil
}

// topicLocked returns the named topic of an open log. Callers hold mu.
func (l *Log) topicLocked(name string) (*Topic, error) {
	if l.closed {
		return nil, store.ErrClosed
	}
	t, ok := l.byName[name]
	if !ok {
		return nil, ErrUnknownTopic
	}
	return t, nil
}

// Delete removes a topic and this node's data of it; the other nodes
// remove theirs when they Refresh.
func (l *Log) Delete(name string) error {
	unlock, err := l.lockTopic(name)
	if err != nil {
		return err
	}
	defer unlock()
	t, err := l.topicLocked(name)
	if err != nil {
		return err
	}
	var b store.Batch
	b.Delete(append(bytes.Clone(topicPrefix), name...))
	if err := l.st.Apply(&b); err != nil {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	l.dropLocked(t)
	return nil
}

// Grow raises a topic's partition count; partitions are never removed, as
// in Kafka. The new partitions' leaders are spread as Create spreads them.
func (l *Log) Grow(name string, count int32, validateOnly bool) error {
	return l.grow(name, count, nil, validateOnly)
}

// GrowAssigned is Grow with the new partitions' leaders given, one each,
// in partition order. The caller checks that those nodes exist.
func (l *Log) GrowAssigned(name string, count int32, leaders []int32, validateOnly bool) error {
	if leaders == nil {
		leaders = []int32{}
	}
	return l.grow(name, count, leaders, validateOnly)
}

func (l *Log) grow(name string, count int32, leaders []int32, validateOnly bool) error {
	unlock, err := l.lockTopic(name)
	if err != nil {
		return err
	}
	defer unlock()
	t, err := l.topicLocked(name)
	if err != nil {
		return err
	}
	have := int32(len(t.Partitions))
	if count <= have || count > MaxPartitions || leaders != nil && int32(len(leaders)) != count-have {
		return ErrInvalidPartitions
	}
	if validateOnly {
		return nil
	}
	if leaders == nil {
		leaders = l.placeLocked(int(count - have))
	}
	grown := &Topic{Name: t.Name, ID: t.ID, Configs: t.Configs,
		Partitions: append(slices.Clone(t.Partitions), make([]*Partition, count-have)...),
		Leaders:    append(slices.Clone(t.Leaders), leaders...)}
	raw, err := l.put(grown)
	if err != nil {
		return err
	}
	err = l.openPartitions(grown)
	l.byName[name] = grown
	l.byID[t.ID] = grown
	if err == nil {
		l.raw[name] = raw
	} else {
		delete(l.raw, name) // the next Refresh retries
	}
	l.version.Add(1)
	return err
}

// Close syncs and closes every partition. The store is the caller's.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var first error
	for _, t := range l.byName {
		for _, p := range t.Partitions {
			if p == nil {
				continue
			}
			if err := p.close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}
