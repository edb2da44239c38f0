// Package topics is Cohort's embedded single-node topic log: the topics and
// partitions that let ordinary Kafka clients produce and consume end to end
// against `cohort serve` with nothing else installed.
//
// Topic metadata (name, id, partition count, configs) is a record in the
// store. Partition data lives beside the store in segment files that hold
// record batches exactly as Kafka writes them; they are append-only and read
// sequentially, which plain files do best (a key-value store would write
// every byte at least twice). Nothing here knows about the Kafka wire
// protocol or consumer groups.
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
	"sort"
	"strconv"
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

// topicRecord is the stored form of a topic. Version 1; a future version
// adds fields and bumps V, and decode keeps reading version 1.
type topicRecord struct {
	V          int               `json:"v"`
	Name       string            `json:"name"`
	ID         string            `json:"id"` // 32 hex digits
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// Topic is an immutable view of a topic. Growing a topic publishes a new
// Topic that shares the existing partitions.
type Topic struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string // set explicitly at creation; see Config
	Partitions []*Partition
}

// Config returns the value of a topic config and whether it is the default.
func (t *Topic) Config(name string) (string, bool) {
	if v, ok := t.Configs[name]; ok {
		return v, false
	}
	return TopicConfigDefault(name), true
}

// Config configures a Log.
type Config struct {
	// Dir holds the partition data. Required.
	Dir string
	// Store holds topic metadata. Required.
	Store store.Store
	// Logger; nil discards.
	Logger *slog.Logger
	// SyncFile makes a segment file durable. Nil means (*os.File).Sync.
	// Tests set it to record or hold fsyncs, to prove that nothing is
	// acknowledged before it is synced.
	SyncFile func(*os.File) error
}

// Log is the set of topics. It is safe for concurrent use.
type Log struct {
	dir      string
	st       store.Store
	logger   *slog.Logger
	syncFile func(*os.File) error

	mu        sync.RWMutex
	byName    map[string]*Topic
	byID      map[[16]byte]*Topic
	closed    bool
	clusterID string
	// version counts changes to the set of topics and their partition
	// counts, so that readers can cache what they derive from them.
	version atomic.Uint64

	pidMu             sync.Mutex
	pidNext, pidLimit int64
}

// Open loads every topic from the store and recovers its partitions.
func Open(cfg Config) (*Log, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SyncFile == nil {
		cfg.SyncFile = (*os.File).Sync
	}
	l := &Log{
		dir:      cfg.Dir,
		st:       cfg.Store,
		logger:   cfg.Logger,
		syncFile: cfg.SyncFile,
		byName:   make(map[string]*Topic),
		byID:     make(map[[16]byte]*Topic),
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create topic dir: %w", err)
	}
	if err := l.loadClusterID(); err != nil {
		return nil, err
	}
	if err := l.loadProducerIDs(); err != nil {
		return nil, err
	}
	err := l.st.Scan(topicPrefix, func(_, v []byte) error {
		var rec topicRecord
		if err := json.Unmarshal(v, &rec); err != nil || rec.V != 1 {
			return fmt.Errorf("corrupt topic record %q: %v", v, err)
		}
		t := &Topic{Name: rec.Name, Configs: rec.Configs}
		var ok bool
		if t.ID, ok = parseTopicID(rec.ID); !ok {
			return fmt.Errorf("corrupt topic id %q", rec.ID)
		}
		if err := l.openPartitions(t, rec.Partitions); err != nil {
			return err
		}
		l.byName[t.Name] = t
		l.byID[t.ID] = t
		return nil
	})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("load topics: %w", err)
	}
	l.removeOrphans()
	return l, nil
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

func (l *Log) openPartitions(t *Topic, count int32) error {
	segBytes := t.int64Config("segment.bytes")
	for i := int32(len(t.Partitions)); i < count; i++ {
		dir := filepath.Join(l.topicDir(t.ID), strconv.Itoa(int(i)))
		p, err := openPartition(dir, t.Name, i, segBytes, l.logger, l.syncFile)
		if err != nil {
			return err
		}
		t.Partitions = append(t.Partitions, p)
	}
	return nil
}

func (t *Topic) int64Config(name string) int64 {
	v, _ := t.Config(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// MaxBatchBytes is the topic's max.message.bytes: the largest batch a
// producer may append.
func (t *Topic) MaxBatchBytes() int { return int(t.int64Config("max.message.bytes")) }

// ClusterID is this node's stable cluster id, minted at first start.
func (l *Log) ClusterID() string { return l.clusterID }

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
// across restarts: ids are reserved in durable blocks.
func (l *Log) NextProducerID() (int64, error) {
	l.pidMu.Lock()
	defer l.pidMu.Unlock()
	if l.pidNext == l.pidLimit {
		limit := l.pidNext + producerIDBlock
		var b store.Batch
		b.Put(nextProducerID, binary.BigEndian.AppendUint64(nil, uint64(limit)))
		if err := l.st.Apply(&b); err != nil {
			return 0, fmt.Errorf("reserve producer ids: %w", err)
		}
		l.pidLimit = limit
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

// Create makes a topic with the given partitions and explicit configs. With
// validateOnly it checks everything and creates nothing. The returned Topic
// has no partitions when validateOnly is set.
func (l *Log) Create(name string, partitions int32, configs map[string]string, validateOnly bool) (*Topic, error) {
	if !ValidTopicName(name) {
		return nil, ErrInvalidTopic
	}
	if partitions <= 0 || partitions > MaxPartitions {
		return nil, ErrInvalidPartitions
	}
	if err := ValidateTopicConfigs(configs); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, store.ErrClosed
	}
	if _, ok := l.byName[name]; ok {
		return nil, ErrTopicExists
	}
	t := &Topic{Name: name, Configs: maps.Clone(configs)}
	rand.Read(t.ID[:])
	if validateOnly {
		return t, nil
	}
	if err := l.put(t, partitions); err != nil {
		return nil, err
	}
	if err := l.openPartitions(t, partitions); err != nil {
		// The record is stored: the next Open retries these partitions.
		for _, p := range t.Partitions {
			p.close()
		}
		return nil, err
	}
	l.byName[name] = t
	l.byID[t.ID] = t
	l.version.Add(1)
	return t, nil
}

// Version returns a number that grows whenever a topic is created,
// deleted or grown.
func (l *Log) Version() uint64 { return l.version.Load() }

func (l *Log) put(t *Topic, partitions int32) error {
	rec, err := json.Marshal(topicRecord{V: 1, Name: t.Name, ID: hex.EncodeToString(t.ID[:]), Partitions: partitions, Configs: t.Configs})
	if err != nil {
		return err
	}
	var b store.Batch
	b.Put(append(bytes.Clone(topicPrefix), t.Name...), rec)
	if err := l.st.Apply(&b); err != nil {
		return fmt.Errorf("store topic %s: %w", t.Name, err)
	}
	return nil
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

// Delete removes a topic and its data.
func (l *Log) Delete(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, err := l.topicLocked(name)
	if err != nil {
		return err
	}
	var b store.Batch
	b.Delete(append(bytes.Clone(topicPrefix), name...))
	if err := l.st.Apply(&b); err != nil {
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	delete(l.byName, name)
	delete(l.byID, t.ID)
	l.version.Add(1)
	for _, p := range t.Partitions {
		p.close()
	}
	// Once the record is gone the data is an orphan; Open removes it if
	// this does not finish.
	if err := os.RemoveAll(l.topicDir(t.ID)); err != nil {
		l.logger.Warn("removing deleted topic's data", "topic", name, "err", err)
	}
	return nil
}

// Grow raises a topic's partition count; partitions are never removed, as
// in Kafka.
func (l *Log) Grow(name string, count int32, validateOnly bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, err := l.topicLocked(name)
	if err != nil {
		return err
	}
	if count <= int32(len(t.Partitions)) || count > MaxPartitions {
		return ErrInvalidPartitions
	}
	if validateOnly {
		return nil
	}
	if err := l.put(t, count); err != nil {
		return err
	}
	grown := &Topic{Name: t.Name, ID: t.ID, Configs: t.Configs, Partitions: append([]*Partition(nil), t.Partitions...)}
	if err := l.openPartitions(grown, count); err != nil {
		return err
	}
	l.byName[name] = grown
	l.byID[t.ID] = grown
	l.version.Add(1)
	return nil
}

// Close syncs and closes every partition. The store is the caller's.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var first error
	for _, t := range l.byName {
		for _, p := range t.Partitions {
			if err := p.close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}
