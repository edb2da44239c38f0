package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/cohort-dev/cohort/admin"
	cgroups "github.com/cohort-dev/cohort/coordinator/groups"
	"github.com/cohort-dev/cohort/kafka"
	"github.com/cohort-dev/cohort/node"
	"github.com/cohort-dev/cohort/observe/tracing"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/topics"
	"go.opentelemetry.io/otel"
)

func serve(args []string, stderr io.Writer) int {
	return serveWith(args, stderr, runNode)
}

// serveWith parses serve's command line (args) and the environment into
// a node's configuration and hands it, with the logger it writes to and
// --shutdown-timeout, to start, whose exit code it returns; a bad command
// line is exit 2 without calling start. `cohort serve` starts the node
// with runNode; `cohort dev cluster` builds each of its nodes with it.
func serveWith(args []string, stderr io.Writer, start func(cfg node.Config, logger *slog.Logger, shutdown time.Duration) int) int {
	fs := flag.NewFlagSet("cohort serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg        node.Config
		partitions int
		maxReq     int
		logLevel   string
		shutdown   time.Duration
		g          = &cfg.Groups
		delay      time.Duration
		// assignInterval and assignors are parsed into g below.
		assignInterval time.Duration
		assignors      string
		// Connection limits, checked and converted below.
		maxConns, maxConnsPerIP int
		queuedMax               int64
		idle, readTimeout       time.Duration
		writeTimeout            time.Duration
		grpcStreams             uint
		// Cluster mode.
		etcdEndpoints string
		nodeID        int
		cc            node.ClusterConfig
		// Tracing: the ratio counts only when set (flag or
		// COHORT_TRACE_SAMPLE_RATIO), else OTEL_TRACES_SAMPLER decides.
		sampleRatio float64
	)
	fs.StringVar(&cfg.KafkaListen, "kafka-listen", "127.0.0.1:9092", "Kafka `listeners` in Kafka's syntax, NAME://host:port,... with NAME one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (or mapped by --listener-security-protocol-map), e.g. PLAINTEXT://127.0.0.1:9092,SASL_SSL://0.0.0.0:9093; a bare host:port is one PLAINTEXT listener; port 0 picks a free port")
	fs.StringVar(&cfg.AdvertisedKafkaAddr, "advertised-kafka-addr", "", "`addresses` given to clients in Metadata, FindCoordinator and DescribeCluster, per listener in the same syntax (NAME://host:port,...; a bare host:port is the first listener's); a client is given those of the listener it connected to (default: each listener's bound address)")
	fs.StringVar(&cfg.ListenerProtocols, "listener-security-protocol-map", "", "`NAME:PROTOCOL,...` security protocols of listeners named otherwise, e.g. INTERNAL:SASL_SSL,EXTERNAL:SSL (Kafka's listener.security.protocol.map)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate chain `file` of the SSL and SASL_SSL listeners (and of --http-tls, --grpc-tls); reloaded on SIGHUP and when it changes")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key `file` of --tls-cert")
	fs.StringVar(&cfg.TLSClientCA, "tls-client-ca", "", "PEM `file` of the CAs client certificates are verified against (mTLS); a verified certificate's subject is the principal, User:CN=...,O=...")
	fs.StringVar(&cfg.TLSClientAuth, "tls-client-auth", "none", "client certificates on TLS listeners: none, request (verified if given) or require (Kafka's ssl.client.auth)")
	fs.DurationVar(&cfg.TLSReloadInterval, "tls-reload-interval", 10*time.Second, "how often --tls-cert and --tls-key are checked for changes; 0 for only on SIGHUP")
	var saslMechanisms string
	fs.StringVar(&saslMechanisms, "sasl-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "SASL `mechanisms` the SASL listeners offer (Kafka's sasl.enabled.mechanisms); users are managed with cohort users")
	fs.DurationVar(&cfg.FailedAuthenticationDelay, "failed-authentication-delay", 100*time.Millisecond, "delay the answer to a failed SASL authentication (or admin HTTP password) and the connection's close by this long (Kafka's connection.failed.authentication.delay.ms); other connections never wait for it; 0 for none")
	fs.DurationVar(&cfg.SASLSessionLifetime, "sasl-session-lifetime", 0, "how long a SASL authentication holds (KIP-368, Kafka's connections.max.reauth.ms): clients re-authenticate before it ends, and a connection whose session ended is closed; 0 for for ever")
	fs.BoolVar(&cfg.Authorizer, "authorizer", false, "turn authorization on: Kafka's ACLs (managed with CreateAcls/DeleteAcls/DescribeAcls, e.g. kafka-acls.sh or rpk acl) decide what each principal may do; off, everyone may do everything")
	var superUsers string
	fs.StringVar(&superUsers, "super-users", "", "`principals` that may do everything with --authorizer, User:a;User:b (Kafka's super.users)")
	fs.BoolVar(&cfg.AllowEveryoneIfNoACLFound, "allow-everyone-if-no-acl-found", false, "with --authorizer, allow every operation on a resource no ACL matches (Kafka's allow.everyone.if.no.acl.found)")
	fs.BoolVar(&cfg.HTTPTLS, "http-tls", false, "serve the admin HTTP listener over TLS with --tls-cert (client certificates as --tls-client-auth)")
	fs.BoolVar(&cfg.GRPCTLS, "grpc-tls", false, "serve the gRPC assignment service over TLS with --tls-cert (client certificates as --tls-client-auth)")
	fs.StringVar(&cfg.AdminToken, "admin-token", "", "bearer `token` every admin HTTP request must carry (Authorization: Bearer ...) unless it presents a verified client certificate; /healthz and /readyz stay open (env COHORT_ADMIN_TOKEN keeps it out of the process list)")
	fs.StringVar(&cfg.GRPCToken, "grpc-token", "", "bearer `token` every gRPC call must carry (metadata authorization: Bearer ...) unless it presents a verified client certificate; health checks stay open (env COHORT_GRPC_TOKEN)")
	fs.StringVar(&cfg.DataDir, "data-dir", "./cohort-data", "`directory` for all durable state; created if missing, locked while in use")
	fs.BoolVar(&cfg.AutoCreateTopics, "auto-create-topics", true, "create unknown topics when clients ask for their metadata, as Kafka's auto.create.topics.enable")
	fs.IntVar(&partitions, "default-partitions", 1, "partitions of auto-created topics and of CreateTopics with -1 (1 to 10000)")
	fs.IntVar(&maxReq, "max-request-bytes", 100<<20, "largest request frame in `bytes`; a larger one closes the connection (Kafka's socket.request.max.bytes)")
	fs.IntVar(&maxConns, "max-connections", kafka.DefaultMaxConnections(), "most open Kafka connections; a new one beyond it is closed at once (Kafka's max.connections); the default is this process's open-file limit less 4096 kept for the store, segment files and gRPC, and at least half the limit")
	fs.IntVar(&maxConnsPerIP, "max-connections-per-ip", 0, "most open Kafka connections from one IP address; a new one beyond it is closed at once; 0 for no limit (Kafka's max.connections.per.ip)")
	fs.DurationVar(&idle, "connections-max-idle", 10*time.Minute, "close a Kafka connection with no request in flight that has read and written nothing for this long, and a gRPC connection with no stream for this long (Kafka's connections.max.idle.ms); 0 for never")
	fs.Int64Var(&queuedMax, "queued-max-request-bytes", kafka.DefaultQueuedMaxRequestBytes, "most `bytes` of requests being read or waiting for their response, across all connections; beyond it reading waits (Kafka's queued.max.request.bytes); at least --max-request-bytes, or -1 for no limit")
	fs.DurationVar(&readTimeout, "request-read-timeout", 30*time.Second, "close a connection whose request is not complete this long after its size arrived (a client trickling a large frame); 0 for never")
	fs.DurationVar(&writeTimeout, "response-write-timeout", 30*time.Second, "close a connection that takes no 1 MiB of its responses for this long, up to half as long again (a client that does not read its answers); 0 for never")
	fs.UintVar(&grpcStreams, "grpc-max-concurrent-streams", 1000, "most concurrent calls (streams) on one gRPC connection; a consumer process holds one Register stream per consumer")
	fs.StringVar(&etcdEndpoints, "etcd-endpoints", "", "`urls` of the etcd cluster (comma-separated, e.g. http://127.0.0.1:2379): cluster mode, where the coordinator's state and the topic catalog live in etcd and shards fail over between nodes; empty: a single node on the embedded store")
	fs.IntVar(&nodeID, "node-id", -1, "this node's `id` in the cluster, unique, 0 or more (Kafka's node.id); required with --etcd-endpoints")
	fs.StringVar(&cc.Prefix, "etcd-prefix", "/cohort", "etcd key `prefix` of the cluster: several Cohort clusters can share one etcd")
	fs.DurationVar(&cc.LeaseTTL, "cluster-lease-ttl", 6*time.Second, "a node that cannot renew its etcd lease for this long is taken for dead and its shards move; it stops serving them a quarter of it earlier (at least 2s)")
	fs.DurationVar(&cc.HandoffTimeout, "cluster-handoff-timeout", 10*time.Second, "on SIGTERM in cluster mode, how long to wait for this node's shards to be handed off warm before leaving anyway")
	fs.DurationVar(&cc.CompactHistory, "etcd-compact-history", 5*time.Minute, "in cluster mode, compact etcd's history of revisions older than this, every this long (Cohort's log compactions leave old revisions behind); 0 leaves it to etcd's --auto-compaction-retention")
	fs.IntVar(&g.Shards, "coordinator-shards", 16, "number of coordinator shards, fixed when the data directory or the cluster is created (Kafka's offsets.topic.num.partitions); a shard is one event loop and the unit that moves between nodes")
	fs.StringVar(&logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.DurationVar(&g.MinSessionTimeout, "group-min-session-timeout", 6*time.Second, "smallest session timeout a JoinGroup may ask for (Kafka's group.min.session.timeout.ms)")
	fs.DurationVar(&g.MaxSessionTimeout, "group-max-session-timeout", 30*time.Minute, "largest session timeout a JoinGroup may ask for (Kafka's group.max.session.timeout.ms)")
	fs.IntVar(&g.MaxSize, "group-max-size", 1<<31-1, "most members of a classic group (Kafka's group.max.size); member ids handed out and not yet used count too")
	fs.IntVar(&g.MaxPendingMembers, "group-max-pending-members", 10000, "most member ids a classic group hands out with MEMBER_ID_REQUIRED that have not joined yet; beyond it JoinGroup gets GROUP_MAX_SIZE_REACHED")
	offsetsTopic := fs.Bool("offsets-topic", true, "serve the internal __consumer_offsets topic (a partition per coordinator shard, Kafka's record formats) for lag tools that read it, such as Burrow; a partition costs memory (about 185 bytes per committed offset) only while someone reads it, and for 10 minutes after")
	fs.DurationVar(&delay, "group-initial-rebalance-delay", 3*time.Second, "how long the first rebalance of an empty group waits for more members, extended while they keep coming, up to the rebalance timeout (Kafka's group.initial.rebalance.delay.ms); 0 for none")
	fs.DurationVar(&g.InitialRebalanceQuiet, "group-initial-rebalance-quiet", 0, "close that wait as soon as no new member has arrived for this long, e.g. 50ms (default: equal to the delay, exactly Kafka's behaviour)")
	fs.BoolVar(&g.InitialRebalanceAdaptive, "group-initial-rebalance-adaptive", false, "close that wait once no new member has arrived for four times the mean gap between the arrivals so far (at least 1ms, at most the quiet window): a fleet that starts together forms one generation as soon as it is all there")
	fs.IntVar(&g.OffsetMetadataMaxBytes, "offset-metadata-max-bytes", 4096, "longest committed-offset metadata in `bytes` (Kafka's offset.metadata.max.bytes)")
	fs.DurationVar(&g.OffsetsRetention, "offsets-retention", 7*24*time.Hour, "how long offsets of an empty group are kept (Kafka's offsets.retention.minutes)")
	fs.DurationVar(&g.OffsetsRetentionCheckInterval, "offsets-retention-check-interval", 10*time.Minute, "how often expired offsets are looked for (Kafka's offsets.retention.check.interval.ms)")
	fs.DurationVar(&g.ConsumerSessionTimeout, "group-consumer-session-timeout", 45*time.Second, "KIP-848 consumer groups: a member silent this long is fenced (Kafka's group.consumer.session.timeout.ms)")
	fs.DurationVar(&g.ConsumerHeartbeatInterval, "group-consumer-heartbeat-interval", 5*time.Second, "KIP-848 consumer groups: the heartbeat interval given to members (Kafka's group.consumer.heartbeat.interval.ms)")
	fs.DurationVar(&assignInterval, "group-consumer-assignment-interval", time.Second, "KIP-848 consumer groups: least time between two target assignment computations of a group (Kafka's group.consumer.assignment.interval.ms); 0 for none")
	fs.IntVar(&g.ConsumerMaxSize, "group-consumer-max-size", 1<<31-1, "most members of a consumer group (Kafka's group.consumer.max.size)")
	fs.Var(migrationFlag{&g.MigrationPolicy}, "group-consumer-migration-policy", "which groups with members may change protocol online (Kafka's group.consumer.migration.policy): bidirectional (classic to consumer when a consumer-protocol member joins, and back when the last one leaves), upgrade, downgrade or disabled (default bidirectional)")
	fs.StringVar(&assignors, "group-consumer-assignors", "uniform,range", "server assignors consumer groups may ask for, the default first (Kafka's group.consumer.assignors)")
	fs.DurationVar(&g.ShareSessionTimeout, "group-share-session-timeout", 45*time.Second, "KIP-932 share groups: a member silent this long is fenced, in groups that set no share.session.timeout.ms (Kafka's group.share.session.timeout.ms)")
	fs.DurationVar(&g.ShareHeartbeatInterval, "group-share-heartbeat-interval", 5*time.Second, "KIP-932 share groups: the heartbeat interval given to members of groups that set no share.heartbeat.interval.ms (Kafka's group.share.heartbeat.interval.ms)")
	fs.IntVar(&g.ShareMaxSize, "group-share-max-size", 200, "most members of a share group (Kafka's group.share.max.size)")
	var shareDeliveries int
	fs.IntVar(&shareDeliveries, "group-share-delivery-count-limit", 5, "KIP-932 share groups: how many times a record is delivered before it is archived, in groups that set no share.delivery.count.limit, 2 to 10 (Kafka's group.share.delivery.count.limit)")
	fs.DurationVar(&cfg.ShareState.Limits.LockDuration, "group-share-record-lock-duration", 30*time.Second, "KIP-932 share groups: how long a member holds the records it was given, in groups that set no share.record.lock.duration.ms, 1s to 1h (Kafka's group.share.record.lock.duration.ms)")
	fs.IntVar(&cfg.ShareState.Limits.MaxInFlight, "group-share-partition-max-record-locks", 2000, "KIP-932 share groups: most records of a partition a group has in flight, in groups that set no share.partition.max.record.locks, 100 to 10000 (Kafka's group.share.partition.max.record.locks)")
	fs.IntVar(&cfg.MaxShareSessions, "group-share-max-share-sessions", 2000, "most share sessions (one per share consumer and node) this node keeps; at least --group-share-max-size (Kafka's group.share.max.share.sessions)")
	fs.DurationVar(&cfg.TransactionMaxTimeout, "transaction-max-timeout", 15*time.Minute, "largest transaction timeout a transactional producer may ask for (Kafka's transaction.max.timeout.ms); a transaction running longer is aborted by the coordinator; -1s turns transactions off")
	txnVersion := fs.Int("transaction-version", 2, "transaction.version feature level finalized in ApiVersions: 2 (as Kafka 4) serves KIP-890 part 2, where clients skip AddPartitionsToTxn and AddOffsetsToTxn and bump the epoch at every transaction's end; 1 keeps clients to the explicit requests")
	fs.StringVar(&cfg.HTTPListen, "http-listen", "127.0.0.1:9644", "`host:port` of the admin HTTP listener: the web page (/), the JSON API (/api/v1/, described at /api/v1/openapi.json), /metrics (Prometheus), /healthz, /readyz; port 0 picks a free port, - turns it off")
	fs.BoolVar(&cfg.Profiling, "pprof", false, "serve Go's profiles (CPU, heap, block, mutex, goroutines, execution trace) on the admin HTTP listener under /debug/pprof/, for `go tool pprof` and `go tool trace`")
	fs.DurationVar(&cfg.LagSampleInterval, "lag-sample-interval", 5*time.Second, "how often every group's committed offsets are sampled for lag status (Burrow-like, over a window of 10 samples) and time to clear")
	fs.Int64Var(&cfg.LagHistoryMaxBytes, "lag-history-max-bytes", admin.DefaultHistoryBytes, "most bytes of lag history (every group's samples, kept for trends and the lag status) in total; over it, fewer samples are kept, down to a status's window of 10; -1 for no bound")
	fs.IntVar(&cfg.MetricsMaxGroupSeries, "metrics-max-group-series", 250000, "most per-group series (kafka_consumergroup_members, _lag_sum, _current_offset_sum, cohort_consumergroup_generation, _status, _time_to_clear_seconds, cohort_sharegroup_lag_sum, _records_in_flight, _records_redelivered) in one /metrics scrape; beyond it the groups with the most lag are kept and the rest left out; -1 for none")
	fs.IntVar(&cfg.MetricsMaxPartitionSeries, "metrics-max-partition-series", 10000, "most per-partition lag series (kafka_consumergroup_lag, _current_offset, kafka_topic_partition_*, cohort_sharegroup_lag, _start_offset) in one /metrics scrape; beyond it they are left out and the per-group sums remain; -1 for none")
	fs.StringVar(&cfg.GRPCListen, "grpc-listen", "127.0.0.1:9095", "`host:port` of the gRPC warm-handoff assignment service (kafka-assigner's contract, health checking, reflection); port 0 picks a free port, - turns it off")
	fs.StringVar(&cfg.Assigner.DefaultGroup, "assigner-default-group", "default", "group of assignment-service calls without the cohort-group gRPC metadata key")
	fs.DurationVar(&cfg.Assigner.LeaseTTL, "assigner-lease-ttl", 30*time.Second, "how long an assignment-service consumer whose stream closed keeps its partitions")
	fs.StringVar(&cfg.AssignerKafkaBootstrap, "assigner-kafka-bootstrap", "", "`host:port,...` of an external Kafka cluster the assignment service asks for the partition counts of topics this node does not host")
	fs.DurationVar(&cfg.Assigner.Debounce, "assigner-rebalance-debounce", time.Second, "how long assignment-service membership changes settle before a rebalance")
	fs.StringVar(&cfg.OTLPEndpoint, "otlp-endpoint", "", "OpenTelemetry collector to send traces to over OTLP/gRPC: `host:port` (plaintext), http://host:port or https://host:port (TLS); empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT if set, else no tracing (and no cost)")
	fs.Float64Var(&sampleRatio, "trace-sample-ratio", tracing.DefaultSampleRatio, "share of Kafka requests, store writes and gRPC calls traced, 0 to 1; rebalance, member and shard spans are kept whenever it is above 0; unset: OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG if set, else this default (1 traces every request: about 50% more CPU per heartbeat, see BENCHMARKS.md)")
	fs.DurationVar(&shutdown, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long to let in-flight requests finish before closing connections")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: cohort serve [flags]\n\nRuns a Cohort node until SIGINT or SIGTERM, then shuts down gracefully.\nEvery flag can also be set by an environment variable, COHORT_<FLAG_IN_CAPS>\n(e.g. COHORT_KAFKA_LISTEN); a flag on the command line wins.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "trace-sample-ratio" {
			cfg.TraceSampleRatio = &sampleRatio
		}
	})
	if !(sampleRatio >= 0 && sampleRatio <= 1) {
		fmt.Fprintf(stderr, "cohort serve: --trace-sample-ratio must be between 0 and 1, not %v\n", sampleRatio)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		fmt.Fprintf(stderr, "cohort serve: invalid --log-level %q: use debug, info, warn or error\n", logLevel)
		return 2
	}
	if partitions < 1 || partitions > topics.MaxPartitions {
		fmt.Fprintf(stderr, "cohort serve: --default-partitions must be between 1 and %d, not %d\n", topics.MaxPartitions, partitions)
		return 2
	}
	if maxReq < 1024 || maxReq > 1<<31-1 {
		fmt.Fprintf(stderr, "cohort serve: --max-request-bytes must be between 1024 and %d, not %d\n", 1<<31-1, maxReq)
		return 2
	}
	cfg.DefaultPartitions, cfg.MaxRequestBytes = int32(partitions), int32(maxReq)
	if *txnVersion != 1 && *txnVersion != 2 {
		fmt.Fprintf(stderr, "cohort serve: --transaction-version must be 1 or 2, not %d\n", *txnVersion)
		return 2
	}
	cfg.TransactionVersion = int16(*txnVersion)
	if msg := connectionLimits(&cfg, maxConns, maxConnsPerIP, queuedMax, idle, readTimeout, writeTimeout, grpcStreams); msg != "" {
		fmt.Fprintf(stderr, "cohort serve: %s\n", msg)
		return 2
	}
	switch {
	case delay < 0:
		fmt.Fprintf(stderr, "cohort serve: --group-initial-rebalance-delay must not be negative\n")
		return 2
	case delay == 0:
		g.InitialRebalanceDelay = -1 // coordinator.Config: negative is none
	default:
		g.InitialRebalanceDelay = delay
	}
	g.ConsumerAssignmentInterval = assignInterval
	if assignInterval == 0 {
		g.ConsumerAssignmentInterval = -1 // coordinator.Config: negative is none
	}
	g.ConsumerAssignors = nil
	for _, a := range strings.Split(assignors, ",") {
		if a = strings.TrimSpace(a); a != "" {
			g.ConsumerAssignors = append(g.ConsumerAssignors, a)
		}
	}
	if etcdEndpoints != "" {
		if nodeID < 0 || nodeID > math.MaxInt32 {
			fmt.Fprintf(stderr, "cohort serve: --etcd-endpoints needs --node-id, between 0 and %d\n", math.MaxInt32)
			return 2
		}
		if cc.LeaseTTL < 2*time.Second {
			fmt.Fprintf(stderr, "cohort serve: --cluster-lease-ttl must be at least 2s (etcd's minimum), not %v\n", cc.LeaseTTL)
			return 2
		}
		for _, e := range strings.Split(etcdEndpoints, ",") {
			if e = strings.TrimSpace(e); e != "" {
				cc.EtcdEndpoints = append(cc.EtcdEndpoints, e)
			}
		}
		cc.NodeID = int32(nodeID)
		cfg.Cluster = &cc
	} else if nodeID >= 0 {
		fmt.Fprintf(stderr, "cohort serve: --node-id is for cluster mode: set --etcd-endpoints too\n")
		return 2
	}
	for _, m := range strings.Split(saslMechanisms, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.SASLMechanisms = append(cfg.SASLMechanisms, strings.ToUpper(m))
		}
	}
	users, err := security.ParseSuperUsers(superUsers)
	if err != nil {
		fmt.Fprintf(stderr, "cohort serve: --super-users: %v\n", err)
		return 2
	}
	cfg.SuperUsers = users
	if cfg.FailedAuthenticationDelay == 0 {
		cfg.FailedAuthenticationDelay = -1 // kafka.Config: negative is none
	}
	if cfg.TLSReloadInterval == 0 {
		cfg.TLSReloadInterval = -1 // node.Config: negative is only ReloadTLS
	}
	if cfg.FailedAuthenticationDelay < -1 || cfg.SASLSessionLifetime < 0 {
		fmt.Fprintf(stderr, "cohort serve: --failed-authentication-delay and --sasl-session-lifetime must not be negative\n")
		return 2
	}
	if err := cfg.Groups.WithDefaults().Validate(); err != nil {
		fmt.Fprintf(stderr, "cohort serve: %v\n", err)
		return 2
	}
	if msg := shareLimits(&cfg, shareDeliveries); msg != "" {
		fmt.Fprintf(stderr, "cohort serve: %s\n", msg)
		return 2
	}
	cfg.LogLevel = new(slog.LevelVar)
	cfg.LogLevel.Set(level)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	cfg.Logger = logger
	cfg.Groups.NoOffsetsTopic = !*offsetsTopic
	cfg.Version = versionString()
	// The OpenTelemetry SDK reports what goes wrong (a collector that
	// refuses spans) to its process-wide handler, which would print with
	// the standard log package: into the structured log instead.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("tracing", "err", err) }))
	return start(cfg, logger, shutdown)
}

// runNode runs a node with cfg until SIGINT or SIGTERM, or until its
// listener fails, then shuts it down within shutdown.
func runNode(cfg node.Config, logger *slog.Logger, shutdown time.Duration) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	n, err := node.Start(cfg)
	if err != nil {
		logger.Error("cohort could not start", "err", err)
		return 1
	}
	// After the listeners' lines, so that a start that fails is one line.
	logger.Info("cohort started", "version", versionString(), "gomaxprocs", runtime.GOMAXPROCS(0), "gc_heap_floor_mib", gcFloor>>20)
	code := 0
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
wait:
	for {
		select {
		case <-hup:
			// As a web server's reload: new TLS connections get the
			// certificate on disk, open ones keep theirs.
			if err := n.ReloadTLS(); err != nil {
				logger.Warn("SIGHUP: tls certificate not reloaded; the previous one stays", "err", err)
			}
		case <-ctx.Done():
			logger.Info("shutting down")
			break wait
		case err := <-n.Done():
			// A node without its listener is down: stop, and tell
			// whoever runs the process (a supervisor restarts on a
			// non-zero exit).
			logger.Error("listener stopped; shutting down", "err", err)
			code = 1
			break wait
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdown)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		logger.Error("shutdown", "err", err)
		return 1
	}
	logger.Info("stopped")
	return code
}

// connectionLimits checks the connection-limit flags and sets them in
// cfg; it returns what is wrong, if anything. Zero durations mean never,
// which kafka.Config spells as negative.
func connectionLimits(cfg *node.Config, maxConns, perIP int, queued int64, idle, read, write time.Duration, streams uint) string {
	switch {
	case maxConns < 1:
		return fmt.Sprintf("--max-connections must be at least 1, not %d", maxConns)
	case perIP < 0:
		return fmt.Sprintf("--max-connections-per-ip must not be negative (0 is no limit), not %d", perIP)
	case queued != -1 && queued < int64(cfg.MaxRequestBytes):
		// Kafka's rule: otherwise the largest request could never be read.
		return fmt.Sprintf("--queued-max-request-bytes (%d) must be at least --max-request-bytes (%d), or -1 for no limit", queued, cfg.MaxRequestBytes)
	case idle < 0 || read < 0 || write < 0:
		return "--connections-max-idle, --request-read-timeout and --response-write-timeout must not be negative (0 is never)"
	case streams < 1 || uint64(streams) > math.MaxUint32:
		return fmt.Sprintf("--grpc-max-concurrent-streams must be between 1 and %d, not %d", uint32(math.MaxUint32), streams)
	}
	never := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	cfg.MaxConnections, cfg.MaxConnectionsPerIP, cfg.QueuedMaxRequestBytes = maxConns, perIP, queued
	cfg.ConnectionsMaxIdle, cfg.RequestReadTimeout, cfg.ResponseWriteTimeout = never(idle), never(read), never(write)
	cfg.GRPCMaxConcurrentStreams = uint32(streams)
	return ""
}

// shareLimits checks the share groups' node-wide flags against Kafka's
// bounds (ShareGroupConfig's ConfigDef, and its rule that
// group.share.max.share.sessions is at least group.share.max.size) and
// sets the delivery limit in cfg; it returns what is wrong, if anything.
func shareLimits(cfg *node.Config, deliveries int) string {
	l := cfg.ShareState.Limits
	switch {
	case deliveries < 2 || deliveries > 10:
		return fmt.Sprintf("--group-share-delivery-count-limit must be between 2 and 10, not %d", deliveries)
	case l.LockDuration < time.Second || l.LockDuration > time.Hour:
		return fmt.Sprintf("--group-share-record-lock-duration must be between 1s and 1h, not %v", l.LockDuration)
	case l.MaxInFlight < 100 || l.MaxInFlight > 10000:
		return fmt.Sprintf("--group-share-partition-max-record-locks must be between 100 and 10000, not %d", l.MaxInFlight)
	case cfg.MaxShareSessions < cfg.Groups.WithDefaults().ShareMaxSize:
		return fmt.Sprintf("--group-share-max-share-sessions (%d) must be at least --group-share-max-size (%d)", cfg.MaxShareSessions, cfg.Groups.WithDefaults().ShareMaxSize)
	}
	cfg.ShareState.Limits.DeliveryLimit = int16(deliveries)
	return ""
}

// migrationFlag parses --group-consumer-migration-policy.
type migrationFlag struct{ p *cgroups.MigrationPolicy }

func (f migrationFlag) String() string {
	if f.p == nil {
		return ""
	}
	return string(*f.p)
}

func (f migrationFlag) Set(v string) error {
	p, err := cgroups.ParseMigrationPolicy(v)
	if err != nil {
		return err
	}
	*f.p = p
	return nil
}
