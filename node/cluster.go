package node

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/store/etcd"
	"github.com/cohort-dev/cohort/topics"
)

// ClusterConfig turns cluster mode on: the node keeps the coordinator's
// records and the topic catalog in etcd, registers there, and serves the
// coordinator shards the cluster's leader gives it.
type ClusterConfig struct {
	// EtcdEndpoints are the etcd cluster's client URLs
	// (--etcd-endpoints). Required.
	EtcdEndpoints []string
	// NodeID is this node's id, unique in the cluster (--node-id).
	NodeID int32
	// Prefix is the cluster's etcd key prefix (--etcd-prefix). Default
	// "/cohort": several Cohort clusters can share one etcd under
	// different prefixes.
	Prefix string
	// LeaseTTL is the node lease's TTL (--cluster-lease-ttl): a node
	// that stops renewing it is taken for dead after this long. Default
	// 6 s; etcd's minimum is 2 s.
	LeaseTTL time.Duration
	// HandoffTimeout bounds how long Shutdown waits for the node's
	// shards to be handed off warm before it leaves anyway. Default
	// 10 s.
	HandoffTimeout time.Duration
	// CompactHistory is how much of etcd's history of old revisions the
	// node keeps (--etcd-compact-history): Cohort's log compactions
	// delete keys, whose old revisions etcd keeps until its history is
	// compacted. Every this long the history older than this is
	// compacted (as the Kubernetes API server does for its etcd). Zero
	// leaves it to etcd's --auto-compaction-retention; `cohort serve`
	// defaults to 5 min.
	CompactHistory time.Duration
	// CatalogRefresh is how often the node reads the shared topic
	// catalog for changes made on other nodes, besides whenever a watch
	// says it changed. Default 1 s.
	CatalogRefresh time.Duration
}

// dirIDFile names the file that identifies a data directory to the
// cluster: a node restarted on the same directory takes its previous
// registration over at once.
const dirIDFile = "cluster-dir-id"

func readDirID(dir string) (string, error) {
	p := filepath.Join(dir, dirIDFile)
	b, err := os.ReadFile(p)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	var id [16]byte
	rand.Read(id[:])
	s := hex.EncodeToString(id[:])
	if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	return s, nil
}

// joinCluster connects to etcd, joins the cluster and opens the shared
// store. The Kafka listener is bound already: its address is what the
// node registers.
func (n *Node) joinCluster(advertised string, endpoints map[string]string) error {
	cc := n.cfg.Cluster
	if len(cc.EtcdEndpoints) == 0 {
		return errors.New("cluster mode: no etcd endpoints")
	}
	if cc.HandoffTimeout <= 0 {
		cc.HandoffTimeout = 10 * time.Second
	}
	if cc.CatalogRefresh <= 0 {
		cc.CatalogRefresh = time.Second
	}
	dirID, err := readDirID(n.cfg.DataDir)
	if err != nil {
		return err
	}
	n.etcd, err = clientv3.New(clientv3.Config{
		Endpoints:   cc.EtcdEndpoints,
		DialTimeout: 5 * time.Second,
		// etcd's client logs through zap; Cohort's own lines say what
		// matters (a failed request is an error where it happens).
		Logger: zap.NewNop(),
		// gRPC waits longer and longer between attempts to reach a
		// member that is down (1 s, 1.6 s, 2.6 s, 4.1 s, ... up to
		// 2 min): one that comes back after a few seconds would be used
		// again only seconds later, and a second member lost meanwhile
		// would leave the client no member to send lease renewals to.
		// At most a second between attempts costs a refused connection
		// a second per member down.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		})},
	})
	if err != nil {
		return fmt.Errorf("etcd client for %v: %w", cc.EtcdEndpoints, err)
	}
	groups := n.cfg.Groups.WithDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), max(cc.LeaseTTL, 6*time.Second)+10*time.Second)
	defer cancel()
	grpcAddr := ""
	if n.grpcLn != nil {
		grpcAddr = n.grpcLn.Addr().String()
	}
	n.member, err = cluster.Join(ctx, cluster.Config{
		Client:    n.etcd,
		Prefix:    cc.Prefix,
		NodeID:    cc.NodeID,
		KafkaAddr: advertised,
		Listeners: endpoints,
		GRPCAddr:  grpcAddr,
		AdminURL:  n.adminURL(advertised),
		DirID:     dirID,
		LeaseTTL:  cc.LeaseTTL,
		Units:     groups.Shards + 1, // the coordinator's, then the assigner's
		TxnUnits:  groups.Shards,     // then the transaction coordinator's
		// then the share coordinator's
		ShareUnits: cmp.Or(n.cfg.ShareStateShards, groups.Shards),
		Logger:     n.logger,
		// The node's observers: the log's INFO line, the metrics, the
		// timeline's list of cluster events.
		OnNodeEvent: func(e observe.ClusterEvent) { observe.ReportCluster(n.obs, e) },
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("cannot reach etcd at %s: %w", strings.Join(cc.EtcdEndpoints, ","), err)
		}
		return err
	}
	n.cfg.Groups.Shards = n.member.Meta().Units - 1
	es, err := etcd.Open(etcd.Options{
		Client:           n.etcd,
		Prefix:           cluster.DataPrefix(cc.Prefix),
		Lease:            n.member.Lease(),
		Logger:           n.logger.With("component", "etcd-store"),
		CompactHistory:   cc.CompactHistory > 0,
		HistoryRetention: cc.CompactHistory,
	})
	if err != nil {
		return err
	}
	n.etcdStore = es
	n.store = es
	if n.registry != nil {
		// etcd refuses every write once its database reaches its quota
		// (NOSPACE): an alert wants to see it coming.
		usage := func(quota bool) func() float64 {
			return func() float64 {
				used, q := es.Usage()
				if quota {
					return float64(q)
				}
				return float64(used)
			}
		}
		n.registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cohort_etcd_db_size_bytes", Help: "Size of etcd's database, as last checked (cluster mode)."}, usage(false)),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cohort_etcd_quota_bytes", Help: "etcd's backend quota: at it, etcd refuses writes (NOSPACE)."}, usage(true)),
		)
	}
	return nil
}

// liveTopics is every topic clients may commit offsets to: the topic
// log's and the internal ones (the default tenant's), by tenant then the
// name its clients know it by, with their ids.
func liveTopics(n *Node) map[string]map[string][16]byte {
	live := map[string]map[string][16]byte{"": {}}
	for _, t := range n.topics.Topics() {
		tenant, name := topics.Owner(t.Name)
		if live[tenant] == nil {
			live[tenant] = map[string][16]byte{}
		}
		live[tenant][name] = t.ID
	}
	for name, t := range n.internalTopics() {
		live[""][name] = t.ID
	}
	return live
}

// internalTopics are the topics the node serves that are not in its
// topic log: __consumer_offsets (one partition per coordinator shard),
// unless the coordinator does not serve it.
func (n *Node) internalTopics() map[string]machine.TopicMeta {
	if !n.groups.OffsetsTopic() {
		return nil
	}
	return map[string]machine.TopicMeta{offsetstopic.Name: {
		ID:         offsetstopic.TopicID(n.topics.ClusterID()),
		Partitions: int32(n.groups.Shards()),
	}}
}

// refreshCatalog reads the shared topic catalog whenever the store's
// global log (where topic records are written) changes, and at least
// every ClusterConfig.CatalogRefresh, so that topics created, grown or
// deleted on other nodes are served here within milliseconds; offsets of
// a deleted topic are removed from the shards this node holds (the
// deleting node did its own).
func (n *Node) refreshCatalog(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The store's global log (the topic catalog) and the global unit's.
	changed := n.etcdStore.Changes(ctx, record.ShardPrefix(record.GlobalShard))
	t := time.NewTicker(n.cfg.Cluster.CatalogRefresh)
	defer t.Stop()
	version, known := n.topics.Version(), liveTopics(n)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-changed:
		}
		// The topic catalog, credentials, ACLs, organisations and quotas
		// are the global unit's records: another node's topic change,
		// CreateAcls, DeleteAcls, AlterUserScramCredentials,
		// organisation change or AlterClientQuotas reaches this node's
		// views here (the topic log's Refresh reads the unit again).
		if err := n.topics.Refresh(); err != nil {
			n.logger.Debug("refresh topic catalog", "err", err)
			continue
		}
		if v := n.topics.Version(); v == version {
			continue
		} else {
			version = v
		}
		// Changed here or elsewhere: the topics gone since the last look
		// (or re-created under another id) lose their offsets.
		cur := liveTopics(n)
		for tenant, ts := range known {
			var gone []string
			for name, id := range ts {
				if cid, ok := cur[tenant][name]; !ok || cid != id {
					gone = append(gone, name)
				}
			}
			n.groups.TopicsDeleted(tenant, gone)
		}
		known = cur
	}
}

// clusterView is what the Kafka server sees of the cluster.
type clusterView struct{ m *cluster.Member }

var _ kafka.Cluster = clusterView{}

func (c clusterView) Self() int32 { return c.m.NodeID() }

func (c clusterView) Brokers() []kafka.Broker {
	var out []kafka.Broker
	for _, nd := range c.m.Brokers() {
		out = append(out, toBroker(nd))
	}
	return out
}

func toBroker(nd cluster.Node) kafka.Broker {
	b := kafka.Broker{NodeID: nd.ID, Host: nd.Host(), Port: nd.Port()}
	for name, addr := range nd.Listeners {
		host, port, err := net.SplitHostPort(addr)
		p, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil {
			continue
		}
		if b.Endpoints == nil {
			b.Endpoints = map[string]kafka.Endpoint{}
		}
		b.Endpoints[name] = kafka.Endpoint{Host: host, Port: int32(p)}
	}
	if nd.Rack != "" {
		r := nd.Rack
		b.Rack = &r
	}
	return b
}

func (c clusterView) Controller() int32 {
	if l := c.m.Leader(); l != cluster.None {
		return l
	}
	return c.m.NodeID()
}

func (c clusterView) Coordinator(shard int) (kafka.Broker, bool) {
	nd, ok := c.m.Owner(shard)
	if !ok {
		return kafka.Broker{}, false
	}
	return toBroker(nd), true
}

// adminURL is the base URL other nodes reach this node's admin HTTP API
// at, or "" with none: the listener's address, with the advertised
// Kafka address's host when it is bound to every interface.
func (n *Node) adminURL(advertised string) string {
	if n.httpLn == nil {
		return ""
	}
	host, port, err := net.SplitHostPort(n.httpLn.Addr().String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if h, _, err := net.SplitHostPort(advertised); err == nil && h != "" {
			host = h
		}
	}
	scheme := "http"
	if n.cfg.HTTPTLS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
