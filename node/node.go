// Package node assembles one Cohort node from its parts: the data
// directory and its lock, the embedded store, the topic log and the Kafka
// listener. `cohort serve` and the end-to-end tests both start nodes
// through it, so the tests run the real server code.
//
// It wires and orders start-up and shutdown; it must not hold protocol
// logic of its own.
package node

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/admin/web"
	"github.com/cohort-dev/cohort/assigner"
	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
	"github.com/cohort-dev/cohort/cluster"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/coordinator/machine"
	"github.com/cohort-dev/cohort/coordinator/sharestate"
	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/logs"
	"github.com/cohort-dev/cohort/observe/timeline"
	"github.com/cohort-dev/cohort/observe/tracing"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/quota"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/store"
	"github.com/cohort-dev/cohort/store/etcd"
	"github.com/cohort-dev/cohort/store/pebble"
	"github.com/cohort-dev/cohort/topics"
	"github.com/cohort-dev/cohort/txncoord"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Config configures a node. Fields mirror the `cohort serve` flags.
type Config struct {
	// KafkaListen is the Kafka listeners in Kafka's syntax,
	// NAME://host:port,... (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, or
	// a name ListenerProtocols maps), or one host:port, a PLAINTEXT
	// listener; port 0 picks a free one. Default 127.0.0.1:9092.
	KafkaListen string
	// AdvertisedKafkaAddr is what Metadata, FindCoordinator and
	// DescribeCluster tell clients, per listener in the same syntax (a
	// bare host:port is the first listener's). Default: each listener's
	// bound address.
	AdvertisedKafkaAddr string
	// ListenerProtocols maps listener names to security protocols,
	// Kafka's listener.security.protocol.map: "INTERNAL:SASL_SSL,...".
	// Default: a listener's name is its protocol.
	ListenerProtocols string
	// TLS: the PEM certificate chain and key of the SSL and SASL_SSL
	// listeners (and of the admin and gRPC listeners with HTTPTLS and
	// GRPCTLS), read again on ReloadTLS and when the files change;
	// TLSClientCA the PEM CAs client certificates are verified against,
	// TLSClientAuth whether they are asked for: none (default),
	// request or require (Kafka's ssl.client.auth). TLS 1.2 at least.
	TLSCert, TLSKey string
	TLSClientCA     string
	TLSClientAuth   string
	// TLSReloadInterval is how often the certificate files are checked
	// for changes. Default 10 s; negative: only ReloadTLS (SIGHUP).
	TLSReloadInterval time.Duration
	// SASLMechanisms are the mechanisms the SASL listeners offer.
	// Default PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
	SASLMechanisms []string
	// FailedAuthenticationDelay and SASLSessionLifetime: see
	// kafka.Config's FailedAuthenticationDelay (default 100 ms) and
	// SessionLifetime (default 0: sessions never end).
	FailedAuthenticationDelay time.Duration
	// QuotaWindow is how the organisations' rate quotas are measured:
	// see kafka.Config.QuotaWindow (default 11 samples of 1 s, Kafka's).
	QuotaWindow         quota.Window
	SASLSessionLifetime time.Duration
	// Authorizer turns authorization on: Kafka's ACLs, kept in the store
	// and managed with CreateAcls/DeleteAcls/DescribeAcls, decide what
	// each request's principal may do (security.Authorizer). Default
	// off: every request allowed, so the embedded default needs no
	// setup. SuperUsers ("User:alice") may do everything;
	// AllowEveryoneIfNoACLFound allows what no ACL matches (Kafka's
	// allow.everyone.if.no.acl.found, default false).
	Authorizer                bool
	SuperUsers                []string
	AllowEveryoneIfNoACLFound bool
	// HTTPTLS and GRPCTLS serve the admin HTTP listener and the gRPC
	// assignment service over TLS with the TLS files (client
	// certificates as TLSClientAuth says). AdminToken and GRPCToken, if
	// set, are bearer tokens every caller of those listeners must send
	// (Authorization: Bearer ...), unless it presented a verified client
	// certificate; /healthz, /readyz and gRPC health checks are exempt.
	HTTPTLS, GRPCTLS      bool
	AdminToken, GRPCToken string
	// DataDir holds everything durable; created if missing. Default
	// ./cohort-data.
	DataDir string
	// AutoCreateTopics, DefaultPartitions and MaxRequestBytes: see
	// kafka.Config.
	AutoCreateTopics  bool
	DefaultPartitions int32
	MaxRequestBytes   int32
	// MaxConnections, MaxConnectionsPerIP, ConnectionsMaxIdle,
	// QueuedMaxRequestBytes, RequestReadTimeout and ResponseWriteTimeout
	// bound what clients can hold: see kafka.Config. ConnectionsMaxIdle
	// is also the gRPC listener's MaxConnectionIdle.
	MaxConnections        int
	MaxConnectionsPerIP   int
	ConnectionsMaxIdle    time.Duration
	QueuedMaxRequestBytes int64
	RequestReadTimeout    time.Duration
	ResponseWriteTimeout  time.Duration
	// Groups configures the group coordinator; zero fields take Kafka's
	// defaults (see coordinator.Config).
	Groups coordinator.Config
	// TransactionMaxTimeout caps the transaction timeout producers may
	// ask for (--transaction-max-timeout, Kafka's
	// transaction.max.timeout.ms). Default 15 min; negative turns
	// transactions off (transactional ids are refused).
	TransactionMaxTimeout time.Duration
	// TransactionVersion is the transaction.version feature level
	// finalized in ApiVersions (--transaction-version, 1 or 2; default
	// 2, as Kafka 4): 2 serves KIP-890 part 2 (produce v12+ and
	// TxnOffsetCommit v5+ add to the transaction themselves, every
	// transaction ends with an epoch bump), 1 keeps clients to the
	// explicit AddPartitionsToTxn and AddOffsetsToTxn (kafka.Config).
	TransactionVersion int16
	// ShareStateShards is the number of share-state shards (the share
	// partitions' state of KIP-932 share groups, sharecoord) a new data
	// directory or cluster gets; an existing one keeps its count, and
	// one created before share groups gets this at its first start.
	// Default: the group coordinator's shard count.
	ShareStateShards int
	// ShareState configures the share-state machines: the defaults of
	// the share groups' limits that a group's configs do not set
	// (Kafka's group.share.delivery.count.limit 5,
	// group.share.record.lock.duration.ms 30 s,
	// group.share.partition.max.record.locks 2000), the snapshot
	// interval (500 updates) and the partitions a shard keeps (100,000);
	// zero fields take those defaults.
	ShareState sharestate.Config
	// MaxShareSessions caps the share sessions this node keeps (Kafka's
	// group.share.max.share.sessions, kafka.Config.MaxShareSessions):
	// a ShareFetch that would open one more is answered
	// SHARE_SESSION_LIMIT_REACHED. Default 2000.
	MaxShareSessions int
	// GRPCListen is the host:port of the gRPC warm-handoff assignment
	// service (kafka-assigner's contract, with health checking and
	// reflection); port 0 picks a free one. Default 127.0.0.1:9095; "-"
	// turns it off.
	GRPCListen string
	// Profiling serves Go's profiles on the admin HTTP listener under
	// /debug/pprof/ (admin.Config.Profiling). Off by default.
	Profiling bool
	// HTTPListen is the host:port of the admin HTTP listener: /metrics
	// (Prometheus), /healthz, /readyz. Port 0 picks a free one. Empty or
	// "-" turns it off (`cohort serve` defaults to 127.0.0.1:9644).
	HTTPListen string
	// Assigner configures that service: DefaultGroup, LeaseTTL, Debounce,
	// GrowthCheck (see assigner.Config; the rest is filled in here).
	Assigner assigner.Config
	// AssignerKafkaBootstrap is an external Kafka cluster's bootstrap
	// servers (comma-separated host:port): the assignment service takes
	// the partition count of a topic this node does not host from there.
	AssignerKafkaBootstrap string
	// GRPCMaxConcurrentStreams caps the streams (calls) one gRPC
	// connection may have open at once. Default 1000: a consumer process
	// holds one Register stream per consumer, and a flood of streams on
	// one connection is refused rather than served. grpc-go's default is
	// unlimited.
	GRPCMaxConcurrentStreams uint32
	// MetricsMaxPartitionSeries caps the per-partition lag series of
	// one /metrics scrape (--metrics-max-partition-series; see
	// admin.LagConfig). Default 10,000; negative: none.
	MetricsMaxPartitionSeries int
	// MetricsMaxGroupSeries caps the per-group lag series of one
	// /metrics scrape, the groups with the most lag kept
	// (--metrics-max-group-series; see admin.LagConfig.MaxGroupSeries).
	MetricsMaxGroupSeries int
	// LagSampleInterval is how often the admin API's lag tracker reads
	// every group's offsets for lag status and time to clear
	// (--lag-sample-interval). Default 5 s; a status needs a window of
	// 10 samples.
	LagSampleInterval time.Duration
	// LagHistoryMaxBytes bounds the lag histories' bytes in total
	// (--lag-history-max-bytes; admin.LagTrackerConfig.MaxBytes: 0 is
	// its default, negative no bound).
	LagHistoryMaxBytes int64
	// Version is what the admin API reports as the node's version.
	Version string
	// Logger; nil discards.
	Logger *slog.Logger
	// LogLevel is the level of Logger's handler: the broker logger
	// "root" changes it (IncrementalAlterConfigs on BROKER_LOGGER). Nil:
	// that changes nothing.
	LogLevel *slog.LevelVar
	// Cluster, if set, runs the node in cluster mode on etcd (see
	// ClusterConfig); nil: a single node on the embedded store.
	Cluster *ClusterConfig
	// Observer receives the node's events: requests received and
	// answered, batches written, shards loaded and unloaded, group
	// events. Metrics, tracing and the rebalance timeline implement it.
	// Nil: none.
	Observer observe.Observer
	// OTLPEndpoint is the OpenTelemetry collector the node sends its
	// traces to over OTLP/gRPC (--otlp-endpoint): host:port
	// (plaintext), http://host:port, or https://host:port (TLS). Empty:
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
	// OTEL_EXPORTER_OTLP_ENDPOINT, if set; with neither (and no
	// TraceExporter) tracing is off and free: no tracer observes
	// anything. See observe/tracing for the spans.
	OTLPEndpoint string
	// TraceSampleRatio is the share of traces kept when tracing is on
	// (--trace-sample-ratio), 0 to 1: of Kafka requests, store writes
	// and gRPC calls (a gRPC caller's own decision stands); rebalance,
	// member and shard spans are kept whenever it is above 0 (see
	// tracing.Observer). Nil: OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG if set, else 0.01
	// (tracing.DefaultSampleRatio, which says why).
	TraceSampleRatio *float64
	// TraceExporter, if set, turns tracing on with the spans going to it
	// instead of to OTLP, through the same sampler and batch processor:
	// for tests and benchmarks. The node shuts it down.
	TraceExporter sdktrace.SpanExporter
}

// ErrDataDirLocked is returned by Start when another process (or node in
// this process) has the data directory.
var ErrDataDirLocked = errors.New("data directory is in use by another cohort process")

// Node is a running Cohort node.
type Node struct {
	cfg    Config
	logger *slog.Logger
	obs    observe.Observer // the log's, the metrics', the tracer's and cfg.Observer
	logObs *logs.Observer
	// tracing is the trace pipeline, nil when tracing is off.
	tracing *tracing.Pipeline
	// The admin HTTP listener, when on.
	registry *prometheus.Registry
	remote   *remoteOffsets // cluster mode
	timeline *timeline.Observer
	api      *admin.API
	apiStop  context.CancelFunc
	http     *http.Server
	httpLn   net.Listener
	started  atomic.Bool // Start returned: every listener accepts
	lock     *os.File
	store    store.Store
	topics   *topics.Log
	// Cluster mode: the etcd client, the membership and the shared
	// store (also n.store); nil on a single node.
	etcd        *clientv3.Client
	member      *cluster.Member
	etcdStore   *etcd.Store
	catalogStop chan struct{}
	groups      *coordinator.Coordinator
	txn         *txncoord.Coordinator
	share       *sharecoord.Host
	// shareHooks carries share groups' departures and deletions to the
	// share coordinator (share_hooks.go).
	shareHooks *shareHooks
	peers      *peers // cluster mode: requests to other nodes
	kafka      *kafka.Server
	// authz is the authorizer with Config.Authorizer, else nil.
	authz *security.Authorizer
	// orgs maps principals to their organisations (tenants).
	orgs *security.Orgs
	// creds are the SCRAM credentials: SASL's, and the admin API's HTTP
	// Basic authentication's.
	creds *security.Credentials
	// quotas are the organisations' quotas.
	quotas *quota.Registry
	// global runs the global unit, whose views are authz, creds, orgs
	// and quotas.
	global *coordinator.GlobalUnit
	// lns are the Kafka listeners, in the order given, and listeners
	// their descriptions (the advertised address filled in).
	lns       []net.Listener
	listeners []kafka.Listener
	// certs is the TLS pair (nil without TLS), tlsConf the listeners'
	// TLS configuration, clientCAs the client CA pool (nil: none).
	certs     *security.Certs
	tlsConf   *tls.Config
	clientCAs *x509.CertPool
	certStop  context.CancelFunc
	// failed delivers the error of a listener that stopped on its own.
	failed chan error
	// serving counts the listeners' Serve goroutines; Shutdown waits
	// for them.
	serving sync.WaitGroup

	assigner      *assigner.Service
	grpc          *grpc.Server
	grpcLn        net.Listener
	grpcAddr      string
	externalKafka *kgo.Client
}

// gRPC limits that are not flags: the assignment service's requests are
// a consumer name, a topic and a partition, far below 64 KiB (grpc-go's
// default allows 4 MiB); a client pinging more often than every 10 s is
// told to calm down and closed (grpc-go allows one ping per 5 min without
// PermitWithoutStream, which makes clients that keep idle channels alive
// fail); the server pings a silent connection after a minute and drops
// it if the ping goes unanswered for 20 s, so that a consumer whose host
// vanished loses its stream, and starts its lease, within ~80 s rather
// than when TCP gives up.
const (
	grpcMaxRecvMsgSize     = 64 << 10
	grpcKeepaliveMinTime   = 10 * time.Second
	grpcKeepaliveTime      = time.Minute
	grpcKeepaliveTimeout   = 20 * time.Second
	defaultGRPCMaxStreams  = 1000
	defaultConnectionsIdle = 10 * time.Minute
	// traceFlushTimeout bounds how long shutdown waits for the last
	// spans to reach the collector.
	traceFlushTimeout = 5 * time.Second
)

// Start opens the data directory and starts serving. If it fails, it has
// released everything it took (listeners, store, lock, goroutines), and
// its error names the cause.
func Start(cfg Config) (_ *Node, err error) {
	if cfg.KafkaListen == "" {
		cfg.KafkaListen = "127.0.0.1:9092"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "cohort-data"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	n := &Node{cfg: cfg, logger: cfg.Logger, failed: make(chan error, 3)}
	// The log is an observer like any other: rebalances, expiries and
	// fencings at INFO, requests at DEBUG, rate-limited. So are the
	// metrics and the rebalance timeline, when the admin listener serves
	// them.
	n.logObs = logs.New(cfg.Logger, logs.Options{})
	var metrics observe.Observer
	if cfg.HTTPListen != "" && cfg.HTTPListen != "-" {
		n.registry = prometheus.NewRegistry()
		n.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		metrics = admin.NewMetrics(n.registry)
		n.timeline = timeline.New(timeline.Options{})
	}
	// Tracing likewise, when an endpoint (or exporter) is set: otherwise
	// it is not in the list at all, so that with nothing else wanting
	// them the wire server skips request events (observe.WantsRequests).
	var tracer observe.Observer
	trcfg := tracing.Config{Endpoint: cfg.OTLPEndpoint, SampleRatio: cfg.TraceSampleRatio, Exporter: cfg.TraceExporter}
	if cfg.Cluster != nil {
		trcfg.Attributes = []attribute.KeyValue{attribute.Int("cohort.node_id", int(cfg.Cluster.NodeID))}
	}
	if n.tracing, err = tracing.Start(trcfg); err != nil {
		n.logObs.Close()
		return nil, fmt.Errorf("tracing: %w", err)
	}
	if n.tracing != nil {
		tracer = n.tracing.Observer
		cfg.Logger.Info("cohort tracing", "otlp_endpoint", cfg.OTLPEndpoint, "sample_ratio", n.tracing.Ratio())
	}
	var tl observe.Observer
	if n.timeline != nil {
		tl = n.timeline
	}
	n.shareHooks = newShareHooks(cfg.Logger)
	n.obs = observe.Multi(n.logObs, metrics, tl, tracer, n.shareHooks, cfg.Observer)
	// Pebble logs a failure to open as well as returning it: hold its
	// lines until start-up is over, so that a failed start says its cause
	// once, in the error.
	storeLog := newHeldHandler(cfg.Logger.With("component", "pebble").Handler())
	defer func() {
		if err != nil {
			n.stop()
		}
		storeLog.release(err == nil)
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	if n.lock, err = lockDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if err := n.setupTLS(); err != nil {
		return nil, err
	}
	// Bound first: in cluster mode the node registers its addresses.
	advertised, endpoints, err := n.bindKafka()
	if err != nil {
		return nil, err
	}
	if cfg.GRPCListen != "-" {
		addr := cfg.GRPCListen
		if addr == "" {
			addr = "127.0.0.1:9095"
		}
		// Bound early too: a cluster node registers it, and a port in
		// use fails fast.
		if n.grpcLn, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("grpc listener: %w", err)
		}
		n.grpcAddr = n.grpcLn.Addr().String()
	}
	if n.registry != nil {
		// Bound early too: a cluster node registers its address, and a
		// port in use fails with one line and nothing else said.
		if n.httpLn, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
			return nil, fmt.Errorf("http listener: %w", err)
		}
	}
	tcfg := topics.Config{Dir: filepath.Join(cfg.DataDir, "topics"), Logger: cfg.Logger}
	if cfg.Cluster != nil {
		if err := n.joinCluster(advertised, endpoints); err != nil {
			return nil, err
		}
		tcfg.NodeID = cfg.Cluster.NodeID
		tcfg.Nodes = n.member.Live
		tcfg.ReserveProducerIDs = n.member.ReserveProducerIDs
		tcfg.ClusterID = n.member.Meta().ClusterID
	} else {
		ps, err := pebble.Open(filepath.Join(cfg.DataDir, "store"), pebble.Options{Logger: slog.New(storeLog), HoldCompactions: true})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		n.store = ps // not a nil *pebble.Store in the interface
		// Its compactions wait for the loads below (pebble.Options.
		// HoldCompactions), and resume once they are done.
		defer ps.ResumeCompactions()
	}
	// The global unit (the topic catalog, credentials, ACLs,
	// organisations, quotas, the cluster's meta), whose views the topic
	// log, the coordinator (its groups' limits), the admin API and the
	// Kafka server read. In cluster mode every node writes it, each write
	// fencing the last writer (coordinator.GlobalUnit).
	if n.global, err = coordinator.StartGlobal(coordinator.GlobalConfig{Store: n.store, Shared: cfg.Cluster != nil, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	tcfg.Unit = n.global
	if n.topics, err = topics.Open(tcfg); err != nil {
		return nil, fmt.Errorf("open topic log: %w", err)
	}
	catalog := &catalogCache{log: n.topics}
	// The organisations' quotas, before the coordinator: its groups'
	// limits are an organisation's max_groups and max_members_per_group.
	if n.quotas, err = quota.NewRegistry(n.global); err != nil {
		return nil, err
	}
	cfg.Groups.TenantLimits = func(tenant string) groups.TenantLimits {
		l := n.quotas.Limits(security.OrgName(tenant))
		return groups.TenantLimits{Org: security.OrgName(tenant), MaxGroups: l.MaxGroups, MaxMembersPerGroup: l.MaxMembersPerGroup}
	}
	if n.groups, err = coordinator.Start(cfg.Groups, coordinator.Options{Store: n.store, Global: n.global, Logger: cfg.Logger, Topics: catalog.get, Observer: n.obs, Standby: cfg.Cluster != nil}); err != nil {
		return nil, fmt.Errorf("start group coordinator: %w", err)
	}
	// Before any request reads the catalog: no group request is served
	// until the Kafka listener starts.
	catalog.internal = n.internalTopics()
	if t := n.topics.Topic(offsetstopic.Name); t != nil && n.groups.OffsetsTopic() {
		n.logger.Warn("a topic of the topic log has the name of the internal topic, which hides it; delete it, or turn the internal topic off", "topic", t.Name)
	}
	// Finish any topic deletion a crash interrupted between the topic and
	// its groups' offsets.
	n.groups.ReconcileTopics(liveTopics(n))
	// Before the admin API, which manages them.
	if n.orgs, err = security.NewOrgs(n.global); err != nil {
		return nil, err
	}
	var apiSrc *apiSource          // given the Kafka server below
	var shareHost *sharecoord.Host // the admin API's, set once below
	if n.registry != nil {
		var cv admin.ClusterSource
		var refresh func(context.Context)
		if cfg.Cluster != nil {
			n.remote = &remoteOffsets{n: n}
			cv, refresh = clusterSource{n}, n.remote.refresh
		}
		apiSrc = &apiSource{n: n, started: time.Now()}
		// The admin API's sampler reads every group's offsets each
		// --lag-sample-interval: for the lag status, the groups list and
		// the lag under kafka_exporter's names.
		n.api = admin.NewAPI(admin.APIConfig{
			Source:         apiSrc,
			SampleInterval: cfg.LagSampleInterval,
			Tracker:        admin.LagTrackerConfig{MaxBytes: cfg.LagHistoryMaxBytes},
			MaxGroupSeries: cfg.MetricsMaxGroupSeries,
			Timeline: func(tenant, group string) any {
				if rs := n.timeline.Rebalances(tenant, group); rs != nil {
					return rs
				}
				return []timeline.Rebalance{}
			},
			ClusterEvents: clusterEvents(cfg.Cluster != nil, n.timeline),
			// The share coordinator starts below; the sampler and the
			// admin listener start after it.
			ShareState: func(ctx context.Context, tenant, group string) []sharestate.Description {
				if shareHost == nil {
					return nil
				}
				return shareHost.Describe(ctx, sharestate.DescribeCmd{Tenant: tenant, Group: group})
			},
			Orgs:        n.orgs,
			Cluster:     cv,
			RefreshEnds: refresh,
			PeerClient:  n.peerHTTP(),
			Logger:      cfg.Logger,
		})
		n.registry.MustRegister(n.api)
		n.registry.MustRegister(admin.NewLag(admin.LagConfig{Source: lagSource{api: n.api, topics: n.topics, remote: n.remote}, MaxPartitionSeries: cfg.MetricsMaxPartitionSeries, MaxGroupSeries: cfg.MetricsMaxGroupSeries, Logger: cfg.Logger}))
	}
	// The transaction coordinator: a shard per group coordinator shard
	// on a single node; in cluster mode the cluster's transaction units
	// (cluster.Meta.TxnUnits), loaded as this node gets them, with the
	// markers of partitions and group shards of other nodes sent to them
	// (WriteTxnMarkers).
	if cfg.TransactionMaxTimeout >= 0 {
		tc := txncoord.Config{
			Store: n.store, Topics: n.topics, Groups: n.groups, Shards: n.groups.Shards(),
			Machine:  txn.Config{MaxTimeout: cfg.TransactionMaxTimeout},
			Observer: n.obs, Logger: cfg.Logger,
		}
		if n.member != nil {
			n.peers = &peers{n: n}
			tc.Shards, tc.Standby, tc.Remote = n.member.Meta().TxnUnits, true, n.peers.markers
		}
		if tc.Shards > 0 {
			if n.txn, err = txncoord.Start(tc); err != nil {
				return nil, fmt.Errorf("start transaction coordinator: %w", err)
			}
		}
	}
	// The share coordinator (KIP-932 share partitions' state): its
	// shard count is the global unit's (stored at the first start that
	// has it); in cluster mode the cluster's share units
	// (cluster.Meta.ShareUnits), loaded as this node gets them.
	sc := sharecoord.Config{
		Store: n.store, Global: n.global, Shards: cmp.Or(cfg.ShareStateShards, n.groups.Shards()),
		Machine: cfg.ShareState, Observer: n.obs, Logger: cfg.Logger,
	}
	if n.member != nil {
		sc.Shards, sc.Standby = n.member.Meta().ShareUnits, true
	}
	if sc.Shards > 0 {
		if n.share, err = sharecoord.Start(sc); err != nil {
			return nil, fmt.Errorf("start share coordinator: %w", err)
		}
		if n.member != nil && n.share.Shards() != sc.Shards {
			// Both were written by the cluster's first node with this
			// count: a difference is a damaged cluster.
			return nil, fmt.Errorf("start share coordinator: the cluster has %d share units, its global unit %d share-state shards", sc.Shards, n.share.Shards())
		}
		// Share members' departures release their records, and deleted
		// share groups' state is dropped, from here on (and now, for
		// what a crash left).
		n.shareHooks.start(n.groups, n.share)
		shareHost = n.share
	}
	var view kafka.Cluster
	var peer func(context.Context, int32, kmsg.Request) (kmsg.Response, error)
	if n.member != nil {
		view = clusterView{n.member}
		if n.peers == nil {
			n.peers = &peers{n: n}
		}
		peer = n.peers.request
	}
	creds := security.NewCredentials(n.global)
	n.creds = creds
	sasl, err := security.NewSASL(creds, cfg.SASLMechanisms)
	if err != nil {
		return nil, err
	}
	if cfg.Authorizer {
		if n.authz, err = security.NewAuthorizer(security.AuthorizerConfig{
			Global: n.global, SuperUsers: cfg.SuperUsers, AllowEveryoneIfNoACLFound: cfg.AllowEveryoneIfNoACLFound,
		}); err != nil {
			return nil, err
		}
	}
	n.kafka, err = kafka.New(kafka.Config{
		Authorizer:                n.authz,
		Orgs:                      n.orgs,
		Quotas:                    n.quotas,
		QuotaWindow:               cfg.QuotaWindow,
		Cluster:                   view,
		Topics:                    n.topics,
		Groups:                    n.groups,
		Txn:                       n.txn,
		Share:                     n.share,
		TransactionVersion:        cfg.TransactionVersion,
		Peer:                      peer,
		AdvertisedAddr:            advertised,
		SASL:                      sasl,
		Credentials:               creds,
		FailedAuthenticationDelay: cfg.FailedAuthenticationDelay,
		SessionLifetime:           cfg.SASLSessionLifetime,
		OnAuthentication:          n.authMetric(),
		MaxRequestBytes:           cfg.MaxRequestBytes,
		AutoCreateTopics:          cfg.AutoCreateTopics,
		DefaultPartitions:         cfg.DefaultPartitions,
		MaxConnections:            cfg.MaxConnections,
		MaxConnectionsPerIP:       cfg.MaxConnectionsPerIP,
		ConnectionsMaxIdle:        cfg.ConnectionsMaxIdle,
		QueuedMaxRequestBytes:     cfg.QueuedMaxRequestBytes,
		RequestReadTimeout:        cfg.RequestReadTimeout,
		ResponseWriteTimeout:      cfg.ResponseWriteTimeout,
		Logger:                    cfg.Logger,
		LogLevel:                  cfg.LogLevel,
		ConsumerSessionTimeout:    cfg.Groups.WithDefaults().ConsumerSessionTimeout,
		ConsumerHeartbeatInterval: cfg.Groups.WithDefaults().ConsumerHeartbeatInterval,
		ShareSessionTimeout:       cfg.Groups.WithDefaults().ShareSessionTimeout,
		ShareHeartbeatInterval:    cfg.Groups.WithDefaults().ShareHeartbeatInterval,
		ShareMaxSize:              cfg.Groups.WithDefaults().ShareMaxSize,
		MaxShareSessions:          cfg.MaxShareSessions,
		Observer:                  n.obs,
	})
	if err != nil {
		return nil, err
	}
	if n.member != nil && n.share != nil {
		// A share partition's state may be on another node's
		// share-state shard than its leader: the host sends those
		// commands there (sharecoord/remote.go).
		n.share.SetRemote(shareRemote{n})
	}
	if n.registry != nil {
		apiSrc.kafka = n.kafka
		registerConnMetrics(n.registry, n.kafka)
	}
	if cfg.GRPCListen != "-" {
		if err := n.startAssigner(); err != nil {
			return nil, err
		}
	}
	if n.registry != nil {
		n.startAdmin()
		ctx, cancel := context.WithCancel(context.Background())
		n.apiStop = cancel
		n.serving.Go(func() { n.api.Run(ctx) })
	}
	if n.member != nil {
		var svc cluster.Service
		if n.assigner != nil {
			svc = n.assigner
		}
		var txnShards cluster.TxnShards
		if n.txn != nil {
			txnShards = n.txn
		}
		var shareShards cluster.HostedShards
		if n.share != nil {
			shareShards = n.share
		}
		n.member.Run(&cluster.Shards{
			Coordinator: n.groups,
			Store:       n.etcdStore,
			Assigner:    svc,
			Txn:         txnShards,
			Share:       shareShards,
			TxnUnits:    n.member.Meta().TxnUnits,
			// Offsets of topics deleted while another node held the
			// shard, or nobody did, go now.
			Loaded: func(int) { n.groups.ReconcileTopics(liveTopics(n)) },
		})
		n.catalogStop = make(chan struct{})
		stop := n.catalogStop
		n.serving.Go(func() { n.refreshCatalog(stop) })
	}
	// The goroutine holds the server and listener themselves: a Shutdown
	// right after Start may clear n.kafka before it runs (stop makes a
	// Serve that has not started return at once).
	srv := n.kafka
	for i, ln := range n.lns {
		l := n.listeners[i]
		n.serving.Go(func() {
			if err := srv.ServeListener(ln, l); err != nil {
				n.failed <- fmt.Errorf("kafka listener %s: %w", l.Name, err)
			}
		})
	}
	if n.certs != nil && cfg.TLSReloadInterval >= 0 {
		ctx, cancel := context.WithCancel(context.Background())
		n.certStop = cancel
		certs := n.certs
		n.serving.Go(func() {
			certs.Watch(ctx, cmp.Or(cfg.TLSReloadInterval, 10*time.Second),
				func() { n.logger.Info("tls certificate reloaded", "cert", cfg.TLSCert) },
				func(err error) { n.logger.Warn("tls certificate not reloaded; the previous one stays", "err", err) })
		})
	}
	n.started.Store(true)
	for i, ln := range n.lns {
		// kafka= first: scripts (and testkit) read the first listener's
		// address from this line.
		cfg.Logger.Info("cohort listening", "kafka", ln.Addr().String(), "listener", n.listeners[i].Name, "protocol", n.listeners[i].Protocol, "advertised", n.listeners[i].Advertised, "data_dir", cfg.DataDir)
	}
	return n, nil
}

// bindKafka binds the Kafka listeners and works out their advertised
// addresses: the first listener's (the default address of this node)
// and every listener's by name. A bind failure names the listener.
func (n *Node) bindKafka() (string, map[string]string, error) {
	protos, err := security.ParseProtocolMap(n.cfg.ListenerProtocols)
	if err != nil {
		return "", nil, err
	}
	ls, err := security.ParseListeners(n.cfg.KafkaListen, protos)
	if err != nil {
		return "", nil, fmt.Errorf("kafka listeners: %w", err)
	}
	adv, err := security.ParseAdvertised(n.cfg.AdvertisedKafkaAddr, ls)
	if err != nil {
		return "", nil, fmt.Errorf("advertised kafka addresses: %w", err)
	}
	endpoints := map[string]string{}
	for _, l := range ls {
		if l.Protocol.TLS() && n.tlsConf == nil {
			return "", nil, fmt.Errorf("kafka listener %s (%s): %s needs --tls-cert and --tls-key", l.Name, l.Addr, l.Protocol)
		}
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			return "", nil, fmt.Errorf("kafka listener %s (%s): %w", l.Name, l.Addr, err)
		}
		n.lns = append(n.lns, ln)
		a := adv[l.Name]
		if a == "" {
			a = ln.Addr().String()
		}
		kl := kafka.Listener{Name: l.Name, Protocol: l.Protocol, Advertised: a}
		if l.Protocol.TLS() {
			kl.TLS = n.tlsConf
		}
		n.listeners = append(n.listeners, kl)
		endpoints[l.Name] = a
	}
	return n.listeners[0].Advertised, endpoints, nil
}

// setupTLS loads the certificate, key and client CAs when a TLS
// listener is configured.
func (n *Node) setupTLS() error {
	cfg := n.cfg
	if cfg.TLSCert == "" && cfg.TLSKey == "" {
		if cfg.HTTPTLS || cfg.GRPCTLS {
			return errors.New("tls: --http-tls and --grpc-tls need --tls-cert and --tls-key")
		}
		return nil
	}
	if cfg.TLSCert == "" || cfg.TLSKey == "" {
		return errors.New("tls: --tls-cert and --tls-key go together")
	}
	auth, err := security.ParseClientAuth(cfg.TLSClientAuth)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	if n.certs, err = security.LoadCerts(cfg.TLSCert, cfg.TLSKey); err != nil {
		return err
	}
	if cfg.TLSClientCA != "" {
		if n.clientCAs, err = security.LoadCertPool(cfg.TLSClientCA); err != nil {
			return err
		}
	}
	n.tlsConf, err = security.ServerConfig(n.certs, n.clientCAs, auth)
	return err
}

// ReloadTLS reads the TLS certificate and key again (SIGHUP): new
// connections get the new pair, open ones keep theirs. On error the
// previous pair stays.
func (n *Node) ReloadTLS() error {
	if n.certs == nil {
		return nil
	}
	changed, err := n.certs.Reload()
	if err == nil && changed {
		n.logger.Info("tls certificate reloaded", "cert", n.cfg.TLSCert)
	}
	return err
}

// authMetric counts SASL authentications by mechanism and result in
// cohort_sasl_authentications_total, when the admin listener serves
// metrics.
func (n *Node) authMetric() func(string, bool) {
	if n.registry == nil {
		return nil
	}
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cohort_sasl_authentications_total",
		Help: "SASL authentications and re-authentications on the Kafka listeners, by mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, other) and result (success, failure).",
	}, []string{"mechanism", "result"})
	n.registry.MustRegister(c)
	for _, m := range []string{security.PLAIN, security.ScramSHA256.Name(), security.ScramSHA512.Name()} {
		for _, r := range []string{"success", "failure"} {
			c.WithLabelValues(m, r)
		}
	}
	return func(mech string, ok bool) {
		switch mech {
		case security.PLAIN, security.ScramSHA256.Name(), security.ScramSHA512.Name():
		default:
			mech = "other" // label values from a closed set
		}
		r := "success"
		if !ok {
			r = "failure"
		}
		c.WithLabelValues(mech, r).Inc()
	}
}

// startAdmin serves the admin HTTP listener bound by Start.
func (n *Node) startAdmin() {
	ln := n.httpLn
	var h http.Handler = admin.Handler(admin.Config{Gatherer: n.registry, Ready: n.ready, API: n.api, Page: web.Handler(), Caller: n.adminCaller, Profiling: n.cfg.Profiling})
	// Probes stay open: orchestrators call them without credentials.
	h = security.Token{
		Secret: n.cfg.AdminToken, User: "admin",
		Passwords: n.creds, FailedAuthenticationDelay: n.cfg.FailedAuthenticationDelay,
	}.HTTP(h, "/healthz", "/readyz")
	if n.cfg.HTTPTLS {
		ln = tls.NewListener(ln, n.tlsConf)
	}
	n.http = &http.Server{
		Handler: h,
		// A scrape or probe is small; a client that trickles its
		// request must not hold a connection for ever.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	srv := n.http
	n.serving.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.failed <- fmt.Errorf("http listener: %w", err)
		}
	})
	n.logger.Info("cohort admin listening", "http", ln.Addr().String())
}

// adminCaller is who an admin HTTP request acts for: an operator when it
// came with the admin token, on an open API (no token, nothing
// presented) or as a super user; else its principal's organisation's
// member, whatever it authenticated with (password, certificate).
func (n *Node) adminCaller(r *http.Request) admin.Caller {
	p := security.PrincipalFrom(r.Context())
	c := admin.Caller{Principal: p.String()}
	switch security.AuthMethodFrom(r.Context()) {
	case security.AuthOpen, security.AuthToken:
		c.Operator = true
		return c
	}
	if slices.Contains(n.cfg.SuperUsers, c.Principal) {
		c.Operator = true
		return c
	}
	c.Tenant = n.orgs.TenantOf(p)
	return c
}

// ready reports why the node does not serve yet: start-up not finished,
// or a coordinator shard not loaded.
func (n *Node) ready() error {
	if !n.started.Load() {
		return errors.New("starting")
	}
	if err := n.groups.Ready(); err != nil || n.share == nil {
		return err
	}
	return n.share.Ready()
}

// HTTPAddr is the address the admin HTTP listener is bound to ("" if off).
func (n *Node) HTTPAddr() string {
	if n.httpLn == nil {
		return ""
	}
	return n.httpLn.Addr().String()
}

// startAssigner starts the warm-handoff service and its gRPC listener.
// On error the caller's stop releases what it started.
func (n *Node) startAssigner() (err error) {
	ac := n.cfg.Assigner
	ac.Store, ac.Logger, ac.Observer = n.store, n.logger, n.obs
	ac.Standby = n.member != nil
	var external *kadm.Client
	if b := n.cfg.AssignerKafkaBootstrap; b != "" {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(b, ",")...))
		if err != nil {
			return fmt.Errorf("assigner: kafka bootstrap %q: %w", b, err)
		}
		n.externalKafka = cl
		external = kadm.NewClient(cl)
	}
	ac.Tenant = func(ctx context.Context) (string, error) {
		p := security.PrincipalFrom(ctx)
		tenant := n.orgs.TenantOf(p)
		md, _ := metadata.FromIncomingContext(ctx)
		claimed := md.Get(assigner.OrgMetadataKey)
		if tenant != "" || len(claimed) == 0 || claimed[0] == "" {
			return tenant, nil
		}
		// A default-organisation caller naming an organisation: only a
		// node relaying a call may, known as one by the authorizer (its
		// principal a super user), as the Kafka side's node-to-node
		// requests (kafka/scope.go peerTenant).
		if n.authz != nil && n.authz.IsSuperUser(p) && assigner.Relayed(ctx) {
			return claimed[0], nil
		}
		return "", status.Errorf(codes.PermissionDenied, "only a node relaying a call may name its organisation (%s); organisations' calls relayed between nodes need --authorizer with the nodes' principals super users", assigner.OrgMetadataKey)
	}
	ac.Partitions = func(ctx context.Context, tenant, topic string) (int32, error) {
		// The organisation's topic of that name (kafka/scope.go); an
		// internal name ("acme/events") is no topic name.
		if t := n.topics.Topic(topics.Internal(tenant, topic)); t != nil && topics.ValidTopicName(topic) {
			return int32(len(t.Partitions)), nil
		}
		if external == nil {
			return 0, status.Errorf(codes.NotFound, "topic %s is not in this node's topic log, and no external Kafka cluster is set (--assigner-kafka-bootstrap)", topic)
		}
		td, err := external.ListTopics(ctx, topic)
		if err != nil {
			return 0, status.Errorf(codes.Unavailable, "topic %s: the external Kafka cluster did not answer: %v", topic, err)
		}
		d, ok := td[topic]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			return 0, status.Errorf(codes.NotFound, "topic %s is neither in this node's topic log nor in the external Kafka cluster (%v)", topic, d.Err)
		}
		return int32(len(d.Partitions)), nil
	}
	if n.member != nil {
		// Calls on a node that does not serve the service's shard are
		// relayed to the one that does.
		unit := n.groups.Shards()
		ac.Route = func() (string, bool, bool) {
			nd, ok := n.member.Owner(unit)
			switch {
			case !ok:
				return "", false, false
			case nd.ID == n.member.NodeID():
				return "", true, true
			}
			return nd.GRPC, false, nd.GRPC != ""
		}
	}
	ac.DialOptions = n.relayDialOptions()
	if az := n.authz; az != nil {
		ac.Authorize = func(ctx context.Context, group string) bool {
			// The ACLs of the principal's organisation decide.
			p := security.PrincipalFrom(ctx)
			r := security.Request{Principal: p, Tenant: n.orgs.TenantOf(p)}
			if pe, ok := peer.FromContext(ctx); ok && pe.Addr != nil {
				r.Host = pe.Addr.String()
				if h, _, err := net.SplitHostPort(r.Host); err == nil {
					r.Host = h
				}
			}
			return az.Authorize(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, group)
		}
	}
	if n.assigner, err = assigner.Start(ac); err != nil {
		return err
	}
	idle := n.cfg.ConnectionsMaxIdle
	switch {
	case idle == 0:
		idle = defaultConnectionsIdle
	case idle < 0:
		idle = 0 // keepalive: infinity
	}
	streams := n.cfg.GRPCMaxConcurrentStreams
	if streams == 0 {
		streams = defaultGRPCMaxStreams
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(grpcMaxRecvMsgSize),
		grpc.MaxConcurrentStreams(streams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: grpcKeepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			// A connection with no open stream for this long gets a
			// GOAWAY, as a Kafka connection idle for
			// connections.max.idle.ms is closed.
			MaxConnectionIdle: idle,
			Time:              grpcKeepaliveTime,
			Timeout:           grpcKeepaliveTimeout,
		}),
	}
	if n.tracing != nil {
		// A span per assignment-service call.
		opts = append(opts, grpc.StatsHandler(n.tracing.GRPCServerHandler()))
	}
	if n.cfg.GRPCTLS {
		opts = append(opts, grpc.Creds(credentials.NewTLS(n.tlsConf)))
	}
	opts = append(opts, security.Token{Secret: n.cfg.GRPCToken, User: "grpc"}.GRPC("/grpc.health.v1.Health/")...)
	n.grpc = grpc.NewServer(opts...)
	n.assigner.AddTo(n.grpc)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(kafkaassignerpb.KafkaAssigner_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(n.grpc, hs)
	reflection.Register(n.grpc)
	srv, ln := n.grpc, n.grpcLn
	n.serving.Go(func() {
		// grpc-go retries temporary accept errors itself; an error here
		// means the listener is gone, and the node must not run on
		// without it.
		if err := srv.Serve(ln); err != nil {
			n.failed <- fmt.Errorf("grpc listener: %w", err)
		}
	})
	n.logger.Info("cohort assigner listening", "grpc", n.grpcAddr)
	return nil
}

// relayDialOptions are how this node calls another's assignment service
// (a relayed call): over TLS with its own certificate when the service
// is, the other node's verified against the client CAs (else the
// system's roots), and with the gRPC token.
func (n *Node) relayDialOptions() []grpc.DialOption {
	var opts []grpc.DialOption
	if n.cfg.GRPCTLS {
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			MinVersion:           tls.VersionTLS12,
			RootCAs:              n.clientCAs,
			GetClientCertificate: n.certs.GetClientCertificate,
		})))
	}
	if n.cfg.GRPCToken != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(security.BearerCredentials{Secret: n.cfg.GRPCToken, RequireTLS: n.cfg.GRPCTLS}))
	}
	return opts
}

// GRPCAddr is the address the gRPC listener is bound to ("" if off).
func (n *Node) GRPCAddr() string { return n.grpcAddr }

// KafkaConns is the number of Kafka connections open on every listener.
func (n *Node) KafkaConns() int { return n.kafka.Conns().Open }

// StoreUnfolded is about how many bytes of recent writes the embedded
// store holds in memory, in its journal's overlay, not yet folded into
// Pebble (pebble.Store.Unfolded); zero in cluster mode. A quiet node
// folds them within a fraction of a second.
func (n *Node) StoreUnfolded() int64 {
	if ps, ok := n.store.(*pebble.Store); ok {
		return ps.Unfolded()
	}
	return 0
}

// KafkaAddr is the address the Kafka listener is bound to.
func (n *Node) KafkaAddr() string { return n.lns[0].Addr().String() }

// plaintextAddr is the bound address of the first PLAINTEXT listener,
// or "": what the node's own Kafka clients (the lag reader) dial.
func (n *Node) plaintextAddr() string {
	for i, l := range n.listeners {
		if l.Protocol == security.Plaintext {
			return n.lns[i].Addr().String()
		}
	}
	return ""
}

// KafkaAddrs are the addresses the Kafka listeners are bound to, by
// listener name.
func (n *Node) KafkaAddrs() map[string]string {
	out := map[string]string{}
	for i, ln := range n.lns {
		out[n.listeners[i].Name] = ln.Addr().String()
	}
	return out
}

// Coordinator returns the node's group coordinator: tests and embedders
// use it to unload and load shards (Unload, Load) as cluster mode will.
func (n *Node) Coordinator() *coordinator.Coordinator { return n.groups }

// ShareCoordinator returns the node's share coordinator (the share
// partitions' state of share groups), or nil when it has no share-state
// shards (a cluster node whose cluster has no share units).
func (n *Node) ShareCoordinator() *sharecoord.Host { return n.share }

// Orgs is the node's organisation registry: who belongs to which
// organisation. For tests and embedders that manage organisations
// in-process.
func (n *Node) Orgs() *security.Orgs { return n.orgs }

// Member returns the node's cluster membership (nil on a single node).
func (n *Node) Member() *cluster.Member { return n.member }

// Done delivers the error of a listener (Kafka or gRPC) that stopped on
// its own; the node should then be shut down and the process fail.
func (n *Node) Done() <-chan error { return n.failed }

// Shutdown stops taking requests, answers those in flight, then syncs and
// closes the topic log and the store and releases the data directory.
// Calling it again does nothing more and returns nil.
func (n *Node) Shutdown(ctx context.Context) error {
	if n.member != nil {
		// Hand the shards off warm while still serving them.
		hctx, cancel := context.WithTimeout(ctx, n.cfg.Cluster.HandoffTimeout)
		if err := n.member.Leave(hctx); err != nil {
			// The shards not handed off move when the lease goes, which
			// leaving revokes: a cold move, not a lost one.
			n.logger.Warn("leaving the cluster", "err", err)
		}
		cancel()
	}
	if n.grpc != nil {
		// Streams are endless: stop them, do not wait for them.
		n.grpc.Stop()
	}
	var err error
	if n.kafka != nil {
		err = n.kafka.Shutdown(ctx)
	}
	if serr := n.stop(); err == nil {
		err = serr
	}
	return err
}

// stop closes whatever is open, in reverse order of start-up, and waits
// for the listeners' goroutines. Each part is closed once: stop after a
// failed start, or a second Shutdown, closes nothing twice.
func (n *Node) stop() error {
	if n.apiStop != nil {
		n.apiStop()
		n.apiStop = nil
	}
	if n.http != nil {
		n.http.Close()
		n.http = nil
	}
	if n.httpLn != nil {
		n.httpLn.Close() // if Serve never had it
	}
	if n.grpc != nil {
		n.grpc.Stop()
		n.grpc = nil
	}
	if n.grpcLn != nil {
		n.grpcLn.Close() // if Serve never had it
		n.grpcLn = nil
	}
	if n.kafka != nil {
		// Makes a Serve that has not started yet return at once; after
		// Shutdown, does nothing more.
		n.kafka.Shutdown(context.Background())
		n.kafka = nil
	}
	for _, ln := range n.lns {
		ln.Close() // if Serve never had it
	}
	if n.certStop != nil {
		n.certStop()
		n.certStop = nil
	}
	if n.catalogStop != nil {
		close(n.catalogStop)
		n.catalogStop = nil
	}
	if n.member != nil {
		n.member.Close() // serves nothing more; the lease goes
	}
	n.serving.Wait()
	var errs []error
	if n.assigner != nil {
		n.assigner.Close()
		n.assigner = nil
	}
	if n.externalKafka != nil {
		n.externalKafka.Close()
		n.externalKafka = nil
	}
	if n.txn != nil {
		// Before the group coordinator and the topic log, which its
		// marker writers use.
		n.txn.Close()
		n.txn = nil
	}
	if n.shareHooks != nil {
		// Before the coordinators it sends to.
		n.shareHooks.stop()
	}
	if n.share != nil {
		// Before the store: its writes under way finish.
		n.share.Close()
		n.share = nil
	}
	if n.peers != nil {
		n.peers.close()
		n.peers = nil
	}
	if n.remote != nil {
		n.remote.close()
	}
	if n.groups != nil {
		n.groups.Close()
		n.groups = nil
	}
	if n.global != nil {
		n.global.Close()
		n.global = nil
	}
	if n.topics != nil {
		errs = append(errs, n.topics.Close())
		n.topics = nil
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
		n.store, n.etcdStore = nil, nil
	}
	if n.etcd != nil {
		n.etcd.Close()
		n.etcd = nil
	}
	n.member = nil
	if n.lock != nil {
		errs = append(errs, n.lock.Close()) // closing releases the flock
		n.lock = nil
	}
	if n.tracing != nil {
		// Last: the spans of everything above (the final store writes
		// among them) are queued by now. Traces lost to a collector
		// that does not answer do not fail the shutdown.
		ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
		if err := n.tracing.Shutdown(ctx); err != nil {
			n.logger.Warn("flushing traces", "err", err)
		}
		cancel()
		n.tracing = nil
	}
	if n.logObs != nil {
		n.logObs.Close()
		n.logObs = nil
	}
	return errors.Join(errs...)
}

// lockDir takes an exclusive, non-blocking flock on dir/LOCK. The kernel
// drops it when the process dies, so a crash never leaves a stale lock.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrDataDirLocked, dir)
		}
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	return f, nil
}

// catalogCache hands the coordinator each tenant's topics of the topic
// log, by the names its clients know them by (topics.Owner), and
// the default tenant the internal ones, as a machine.Catalog per tenant,
// rebuilt only when the log's version moves.
type catalogCache struct {
	log *topics.Log
	// internal are the topics that are not the log's: __consumer_offsets,
	// which offset commits may name and KIP-848 subscriptions (a regex
	// resolved by the broker too) may match, as in Kafka. The default
	// tenant's only. Set before the catalog is first read, never changed.
	internal map[string]machine.TopicMeta
	cur      atomic.Pointer[tenantCatalogs]
}

// tenantCatalogs are the catalogs of one version of the topic log.
type tenantCatalogs struct {
	byTenant map[string]*machine.Catalog
	none     *machine.Catalog // a tenant's without topics
}

func (c *catalogCache) get(tenant string) *machine.Catalog {
	v := c.log.Version()
	cur := c.cur.Load()
	if cur == nil || cur.none.Version != v {
		// Read the version before the topics: a catalog may hold topics
		// newer than its version says, never older, and the next change
		// rebuilds it.
		byTenant := map[string]map[string]machine.TopicMeta{"": {}}
		for _, t := range c.log.Topics() {
			tn, name := topics.Owner(t.Name)
			if byTenant[tn] == nil {
				byTenant[tn] = map[string]machine.TopicMeta{}
			}
			byTenant[tn][name] = machine.TopicMeta{ID: t.ID, Partitions: int32(len(t.Partitions))}
		}
		maps.Copy(byTenant[""], c.internal)
		cur = &tenantCatalogs{byTenant: map[string]*machine.Catalog{}, none: machine.NewCatalog(v, map[string]machine.TopicMeta{})}
		for tn, ts := range byTenant {
			cur.byTenant[tn] = machine.NewCatalog(v, ts)
		}
		c.cur.Store(cur)
	}
	if cat := cur.byTenant[tenant]; cat != nil {
		return cat
	}
	return cur.none
}

// clusterEvents is the admin API's list of cluster events: the
// timeline's, in cluster mode.
func clusterEvents(cluster bool, tl *timeline.Observer) func() any {
	if !cluster {
		return nil
	}
	return func() any { return tl.ClusterEvents() }
}
