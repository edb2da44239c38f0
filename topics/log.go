// Package topics is Cohort's embedded topic log: the topics and partitions
// that let ordinary Kafka clients produce and consume end to end against
// `cohort serve` with nothing else installed.
//
// Topic metadata (name, id, partition count, configs, each partition's
// leader) is a record of the global unit (record.KindTopic,
// coordinator/global): a Log changes it by commands to the unit and is a
// view of it, opening and closing partitions as the snapshots it is
// handed say. Partition data lives beside the store
// in segment files that hold record batches exactly as Kafka writes them;
// they are append-only and read sequentially, which plain files do best (a
// key-value store would write every byte at least twice).
//
// One goroutine per Log deletes the segments retention no longer keeps
// (retention.go); partitions run none of their own.
//
// In cluster mode the store is shared and each node opens the partitions
// it leads, the one copy of each (no replication); the unit's snapshots
// bring the changes other nodes made, and the Config hooks (Nodes,
// ReserveProducerIDs) are the cluster's. Nothing here knows about the
// Kafka wire protocol, consumer groups or how nodes find each other.
package topics

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
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
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store"
)

// Errors from topic administration, mapped to Kafka error codes by the wire
// layer.
// layer. The global unit decides ErrTopicExists, ErrUnknownTopic and
// ErrInvalidPartitions, and these are its.
var (
	ErrTopicExists       = global.ErrTopicExists
	ErrUnknownTopic      = global.ErrUnknownTopic
	ErrInvalidTopic      = errors.New("invalid topic name")
	ErrInvalidPartitions = global.ErrInvalidPartitions
	ErrInvalidConfig     = errors.New("invalid topic config")
)

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
	// epochs are the partitions' leader epochs (record.Topic.Epochs).
	epochs []int32
}

// LeaderEpoch is partition p's leader epoch as the catalog has it (what
// Metadata reports; the partition takes it on when this node's snapshot
// reaches it).
func (t *Topic) LeaderEpoch(p int32) int32 {
	if int(p) < len(t.epochs) {
		return t.epochs[p]
	}
	return 0
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
	// Unit is the global unit whose topic records the log is a view of
	// (coordinator.GlobalUnit). Nil: the log runs one of its own on
	// Store, shared (cluster mode) when NodeID or Nodes is set.
	Unit global.Unit
	// Store holds the unit's records when Unit is nil. In cluster mode it
	// is shared by every node; Dir is each node's own.
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
	// ReserveProducerIDs reserves n producer ids never handed out before
	// by any node and returns the first. Nil: reserved in blocks by the
	// global unit (record.MetaNextProducerID).
	ReserveProducerIDs func(n int64) (first int64, err error)
	// ClusterID, if set, is the cluster id; else one is minted at first
	// start and kept by the global unit (record.MetaClusterID).
	ClusterID string

	// Clock gives the time retention.ms and segment.ms are measured
	// against and LogAppendTime stamps, and arms the retention check.
	// Nil: the system clock. Tests pass a fake one.
	Clock coordinator.Clock
	// RetentionCheckInterval is how often the log deletes the segments
	// retention no longer keeps (Kafka's log.retention.check.interval.ms).
	// A change of a topic's configs runs a check at once as well. Zero:
	// DefaultRetentionCheckInterval (5 min); it must not be negative.
	RetentionCheckInterval time.Duration
}

// Log is the set of topics. It is safe for concurrent use.
type Log struct {
	dir      string
	unit     global.Unit
	ownUnit  *coordinator.GlobalUnit // the unit the log started, if it did
	logger   *slog.Logger
	syncFile func(*os.File) error
	nodeID   int32
	nodes    func() []int32
	reserve  func(int64) (int64, error)
	clock    coordinator.Clock

	// The retention loop (retention.go): wake asks it for a pass,
	// stopLoop ends it, loopDone is closed when it has ended (nil if it
	// never started).
	retentionEvery time.Duration
	wake           chan struct{}
	stopLoop       chan struct{}
	stopOnce       sync.Once
	loopDone       chan struct{}

	// admin serializes the applications of the unit's snapshots, so that
	// an older one applied late cannot undo a newer one. Taken before mu.
	admin sync.Mutex
	// lastSnap is the snapshot last applied.
	lastSnap *global.Snapshot

	mu     sync.RWMutex
	byName map[string]*Topic
	byID   map[[16]byte]*Topic
	// raw is the encoded record each topic in byName was last built
	// from and fully opened; a snapshot whose record of the topic is the
	// same changes nothing.
	raw map[string][]byte
	// openErr is why a topic's partitions did not all open, until one
	// snapshot opens them.
	openErr   map[string]error
	closed    bool
	clusterID string
	// version counts changes to the set of topics and their partition
	// counts, so that readers can cache what they derive from them.
	version atomic.Uint64

	pidMu             sync.Mutex
	pidNext, pidLimit int64
}

// timeout bounds a command to the unit.
const timeout = 30 * time.Second

// Open applies the unit's topics and recovers the partitions this node
// leads.
func Open(cfg Config) (*Log, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SyncFile == nil {
		cfg.SyncFile = dataSync
	}
	if cfg.Clock == nil {
		cfg.Clock = coordinator.SystemClock{}
	}
	if cfg.RetentionCheckInterval < 0 {
		return nil, fmt.Errorf("topics: negative RetentionCheckInterval %v", cfg.RetentionCheckInterval)
	}
	if cfg.RetentionCheckInterval == 0 {
		cfg.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	l := &Log{
		dir:            cfg.Dir,
		unit:           cfg.Unit,
		logger:         cfg.Logger,
		syncFile:       cfg.SyncFile,
		nodeID:         cfg.NodeID,
		nodes:          cfg.Nodes,
		reserve:        cfg.ReserveProducerIDs,
		clock:          cfg.Clock,
		retentionEvery: cfg.RetentionCheckInterval,
		wake:           make(chan struct{}, 1),
		stopLoop:       make(chan struct{}),
		byName:         make(map[string]*Topic),
		byID:           make(map[[16]byte]*Topic),
		raw:            make(map[string][]byte),
		openErr:        make(map[string]error),
		clusterID:      cfg.ClusterID,
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create topic dir: %w", err)
	}
	if l.unit == nil {
		if cfg.Store == nil {
			return nil, errors.New("topics: Config needs Unit or Store")
		}
		u, err := coordinator.StartGlobal(coordinator.GlobalConfig{Store: cfg.Store, Shared: cfg.NodeID != 0 || cfg.Nodes != nil, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		l.unit, l.ownUnit = u, u
	}
	if l.clusterID == "" {
		if err := l.loadClusterID(); err != nil {
			l.Close()
			return nil, err
		}
	}
	l.unit.Subscribe(l.apply)
	if err := l.openErrs(); err != nil {
		l.Close()
		return nil, fmt.Errorf("load topics: %w", err)
	}
	// This node serves its partitions again: a new leader epoch each, as
	// Kafka's controller gives a partition whose leader came back, so
	// that clients check their positions (KIP-320).
	if _, err := l.do(global.BumpLeaderEpochs{Node: l.nodeID}); err != nil {
		l.Close()
		return nil, fmt.Errorf("raise leader epochs: %w", err)
	}
	l.removeOrphans()
	l.loopDone = make(chan struct{})
	go l.retainLoop(l.clock.At(l.clock.Now().Add(l.retentionEvery), l.kick))
	return l, nil
}

// Unit is the global unit the log is a view of: the wire server's dynamic
// configs are its records too.
func (l *Log) Unit() global.Unit { return l.unit }

// do sends the unit a command.
func (l *Log) do(cmd any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.unit.Do(ctx, cmd)
}

// Refresh has the unit read its records again (in cluster mode, the
// changes other nodes made) and applies them: topics created or grown
// elsewhere (opening the new partitions this node leads) and topics
// deleted elsewhere (closing them and removing their data here). It also
// retries the partitions an earlier snapshot could not open. Version
// grows if anything changed.
func (l *Log) Refresh() error {
	if err := l.reread(); err != nil {
		return err
	}
	return l.openErrs()
}

// reread has the unit read its records again and applies its snapshot.
func (l *Log) reread() error {
	if err := l.unit.Refresh(); err != nil {
		return err
	}
	l.apply(l.unit.Snapshot())
	return nil
}

// openErrs is why some topics' partitions are not open.
func (l *Log) openErrs() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(l.openErr)) {
		errs = append(errs, l.openErr[name])
	}
	return errors.Join(errs...)
}

// apply makes the log what a snapshot of the unit says. The unit calls it
// after every change, before the reply that acknowledges the change
// leaves; Refresh calls it too, to retry what did not open.
func (l *Log) apply(snap *global.Snapshot) {
	l.admin.Lock()
	defer l.admin.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if l.lastSnap != nil && snap.Version < l.lastSnap.Version {
		// An older snapshot than one applied already (a Refresh racing
		// the unit's own publication): the newer one stands.
		return
	}
	l.lastSnap = snap
	names := slices.Collect(maps.Keys(snap.Topics))
	for name := range l.byName {
		if _, ok := snap.Topics[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		var raw []byte
		if t, ok := snap.Topics[name]; ok {
			raw = t.Encode()
		}
		if err := l.syncLocked(name, raw); err != nil {
			l.openErr[name] = err
			l.logger.Warn("opening topic", "topic", name, "err", err)
		} else {
			delete(l.openErr, name)
		}
	}
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
	rec, err := record.DecodeTopic(raw)
	if err != nil {
		return err
	}
	t := &Topic{Name: name, ID: rec.ID, Configs: rec.Configs, Leaders: rec.Leaders, epochs: rec.Epochs}
	count := len(rec.Leaders)
	if other := l.byID[t.ID]; other != nil && other.Name != name {
		return fmt.Errorf("corrupt topic record: %s has the id of %s", name, other.Name)
	}
	if old != nil && old.ID != t.ID {
		// Deleted and created again elsewhere since we looked.
		l.dropLocked(old)
		old = nil
	}
	t.Partitions = make([]*Partition, count)
	var epochErrs []error
	if old != nil {
		cfg := t.partConfig()
		for i, p := range old.Partitions {
			switch {
			case p == nil:
			case i < len(t.Partitions) && t.Leaders[i] == l.nodeID:
				t.Partitions[i] = p
				p.setConfigs(cfg) // the configs may have changed
				epochErrs = append(epochErrs, p.setEpoch(t.LeaderEpoch(int32(i))))
			default:
				p.close()
			}
		}
		if !maps.Equal(old.Configs, t.Configs) {
			l.kick() // retention may now delete more
		}
	}
	err = errors.Join(append(epochErrs, l.openPartitions(t))...)
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
	delete(l.openErr, t.Name)
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
	cfg := t.partConfig()
	var errs []error
	for i, p := range t.Partitions {
		if p != nil || t.Leaders[i] != l.nodeID {
			continue
		}
		dir := filepath.Join(l.topicDir(t.ID), strconv.Itoa(i))
		p, err := openPartition(dir, t.Name, int32(i), cfg, l.logger, l.syncFile, l.clock.Now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := p.setEpoch(t.LeaderEpoch(int32(i))); err != nil {
			p.close()
			errs = append(errs, err)
			continue
		}
		t.Partitions[i] = p
	}
	return errors.Join(errs...)
}

// partConfig is what the topic's partitions act on of its configs.
func (t *Topic) partConfig() partConfig {
	ts, _ := t.Config("message.timestamp.type")
	policy, _ := t.Config("cleanup.policy")
	return partConfig{
		segmentBytes:    t.int64Config("segment.bytes"),
		segmentMs:       t.int64Config("segment.ms"),
		retentionMs:     t.int64Config("retention.ms"),
		retentionBytes:  t.int64Config("retention.bytes"),
		deleteRetention: slices.Contains(global.SplitList(policy), "delete"),
		logAppendTime:   ts == "LogAppendTime",
	}
}

func (t *Topic) int64Config(name string) int64 {
	v, _ := t.Config(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// MaxBatchBytes is the topic's max.message.bytes: the largest batch a
// producer may append.
func (t *Topic) MaxBatchBytes() int { return int(t.int64Config("max.message.bytes")) }

// Dir is the directory that holds the partitions' data (Config.Dir).
func (l *Log) Dir() string { return l.dir }

// ClusterID is the stable cluster id: Config.ClusterID, or the one minted
// at first start.
func (l *Log) ClusterID() string { return l.clusterID }

// NodeID is this node's id, Config.NodeID.
func (l *Log) NodeID() int32 { return l.nodeID }

func (l *Log) loadClusterID() error {
	var raw [16]byte
	rand.Read(raw[:])
	out, err := l.do(global.EnsureMeta{Name: record.MetaClusterID, Value: []byte(base64.RawURLEncoding.EncodeToString(raw[:]))})
	if err != nil {
		return fmt.Errorf("cluster id: %w", err)
	}
	l.clusterID = string(out.([]byte))
	return nil
}

// producerIDBlock is how many producer ids one reservation takes.
const producerIDBlock = 1000

// NextProducerID hands out a producer id never handed out before, even
// across restarts: ids are reserved in durable blocks, through
// Config.ReserveProducerIDs if set, else by the global unit.
func (l *Log) NextProducerID() (int64, error) {
	l.pidMu.Lock()
	defer l.pidMu.Unlock()
	if l.pidNext == l.pidLimit {
		var first int64
		if l.reserve != nil {
			var err error
			if first, err = l.reserve(producerIDBlock); err != nil {
				return 0, fmt.Errorf("reserve producer ids: %w", err)
			}
		} else {
			out, err := l.do(global.ReserveIDs{Name: record.MetaNextProducerID, N: producerIDBlock})
			if err != nil {
				return 0, fmt.Errorf("reserve producer ids: %w", err)
			}
			first = out.(int64)
		}
		l.pidNext, l.pidLimit = first, first+producerIDBlock
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
	if err := l.open(); err != nil {
		return nil, err
	}
	t := &Topic{Name: name, Configs: maps.Clone(configs)}
	rand.Read(t.ID[:])
	if validateOnly {
		// On this node's view: a topic another node created a moment
		// ago may still validate.
		if l.Topic(name) != nil {
			return nil, ErrTopicExists
		}
		return t, nil
	}
	if _, err := l.do(global.CreateTopic{Name: name, ID: t.ID, Partitions: partitions, Leaders: leaders, Configs: configs, Placement: l.placement()}); err != nil {
		return nil, err
	}
	return l.applied(name, t.ID)
}

// open reports ErrClosed once the log is closed.
func (l *Log) open() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return store.ErrClosed
	}
	return nil
}

// placement is what the unit needs to place new partitions.
func (l *Log) placement() global.Placement {
	p := global.Placement{Self: l.nodeID}
	if l.nodes != nil {
		p.Live = l.nodes()
	}
	return p
}

// applied returns the topic the unit just changed, once applied here
// (the unit applies a change to its views before its reply leaves): the
// error of its partitions that did not open, if any.
func (l *Log) applied(name string, id [16]byte) (*Topic, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	t := l.byName[name]
	if t == nil || t.ID != id {
		return nil, fmt.Errorf("topic %s changed while it was written: %w", name, ErrUnknownTopic)
	}
	if err := l.openErr[name]; err != nil {
		return nil, err
	}
	return t, nil
}

// Sync applies what every node last wrote (Refresh) and returns the
// named topic, nil if there is none.
func (l *Log) Sync(name string) (*Topic, error) {
	if err := l.reread(); err != nil {
		return nil, err
	}
	return l.Topic(name), nil
}

// Version returns a number that grows whenever a topic is created,
// deleted or grown.
func (l *Log) Version() uint64 { return l.version.Load() }

// AlterConfigs makes configs (validated here, as CreateTopics validates
// them) the topic's explicit configs; the others go back to their
// defaults (Kafka's AlterConfigs). With validateOnly it checks and
// changes nothing.
func (l *Log) AlterConfigs(name string, configs map[string]string, validateOnly bool) error {
	ops := make([]global.ConfigOp, 0, len(configs))
	for k, v := range configs {
		ops = append(ops, global.ConfigOp{Name: k, Value: v})
	}
	_, err := l.ChangeConfigs(name, ops, true, validateOnly)
	return err
}

// ChangeConfigs applies ops to the topic's explicit configs (to none with
// replace) in the global unit, so that concurrent changes on other nodes
// are not lost, validates the result as CreateTopics validates configs,
// and returns it. The partitions act on the configs they enforce at once
// (max.message.bytes on the next produce, segment.bytes and segment.ms at
// the next append, retention.ms and retention.bytes at a retention check
// the change starts). With validateOnly it checks and changes nothing.
func (l *Log) ChangeConfigs(name string, ops []global.ConfigOp, replace, validateOnly bool) (map[string]string, error) {
	if err := l.open(); err != nil {
		return nil, err
	}
	out, err := l.do(global.AlterConfigs{
		Resource: record.ConfigResource{Type: record.ConfigTopic, Name: name},
		Ops:      ops, Replace: replace, ValidateOnly: validateOnly,
		Default: TopicConfigDefault, Validate: ValidateTopicConfigs,
	})
	if err != nil {
		return nil, err
	}
	configs, _ := out.(map[string]string)
	if validateOnly {
		return configs, nil
	}
	t := l.Topic(name)
	if t == nil {
		return nil, fmt.Errorf("topic %s deleted while it was written: %w", name, ErrUnknownTopic)
	}
	_, err = l.applied(name, t.ID)
	return configs, err
}

// Delete removes a topic and this node's data of it; the other nodes
// remove theirs when the unit's snapshot reaches them.
func (l *Log) Delete(name string) error {
	if err := l.open(); err != nil {
		return err
	}
	_, err := l.do(global.DeleteTopic{Name: name})
	return err
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
	if err := l.open(); err != nil {
		return err
	}
	if count > MaxPartitions {
		return ErrInvalidPartitions
	}
	if validateOnly {
		t := l.Topic(name)
		if t == nil {
			return ErrUnknownTopic
		}
		if have := int32(len(t.Partitions)); count <= have || leaders != nil && int32(len(leaders)) != count-have {
			return ErrInvalidPartitions
		}
		return nil
	}
	out, err := l.do(global.GrowTopic{Name: name, Count: count, Leaders: leaders, Placement: l.placement()})
	if err != nil {
		return err
	}
	_, err = l.applied(name, out.(record.Topic).ID)
	return err
}

// Close stops the retention loop, syncs and closes every partition, and
// stops the unit if the log started it. The store is the caller's.
func (l *Log) Close() error {
	if l.ownUnit != nil {
		defer l.ownUnit.Close()
	}
	l.stopOnce.Do(func() { close(l.stopLoop) })
	if l.loopDone != nil {
		<-l.loopDone
	}
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
