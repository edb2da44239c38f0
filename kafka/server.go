// Package kafka is Cohort's Kafka wire server: it reads size-prefixed
// frames, decodes them with franz-go's kmsg, dispatches each API key to its
// handler (one file per key, named like 00_produce.go) and writes responses
// back in request order.
//
// Broker APIs are served from the embedded topic log (package topics). The
// package holds no durable state of its own and must not block one
// connection on another: a slow fetch or fsync delays only the responses
// queued behind it on the same connection, as Kafka's ordering requires.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/global"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/observe/ratelog"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/quota"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/sharecoord"
	"github.com/cohort-dev/cohort/topics"
	"github.com/cohort-dev/cohort/txncoord"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures a Server. The zero value of each optional field means
// its documented default.
type Config struct {
	// Topics is the topic log the broker APIs serve. Required.
	Topics *topics.Log
	// Groups is the group coordinator the group APIs are handed to.
	// Required.
	Groups *coordinator.Coordinator
	// Txn is the transaction coordinator the transactional APIs are
	// handed to. Nil: transactional ids are refused
	// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
	Txn *txncoord.Coordinator
	// TransactionVersion is the finalized level of the transaction.version
	// feature advertised in ApiVersions (--transaction-version): 2 (the
	// default, as Kafka 4) serves KIP-890 part 2, where a produce v12+
	// adds its partitions to the transaction and a TxnOffsetCommit v5+
	// its group, so clients skip AddPartitionsToTxn and AddOffsetsToTxn
	// and end every transaction with an epoch bump (EndTxn v5); 1 keeps
	// clients to the explicit requests (KIP-890 part 1's verification
	// only). 0 means 2; anything else is refused by New.
	TransactionVersion int16
	// Share is the share coordinator (KIP-932 share partitions' state)
	// that ShareFetch, ShareAcknowledge and the share group offset APIs
	// are handed to. Nil: those APIs answer UNSUPPORTED_VERSION.
	Share *sharecoord.Host
	// MaxShareSessions caps the share sessions (Kafka's
	// group.share.max.share.sessions). Default DefaultMaxShareSessions.
	MaxShareSessions int
	// Peer sends a request to another node of the cluster, as this node
	// (cluster mode: a produce verifies its transaction with the node
	// coordinating it, KIP-890 part 1). Nil: no other node is asked.
	Peer func(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error)
	// Cluster describes the other nodes in cluster mode: the brokers, the
	// controller and the coordinator shards' owners. Its Self must be
	// Topics' NodeID. Nil: a single node, this one, at AdvertisedAddr,
	// leading every partition and coordinating every group.
	Cluster Cluster
	// AdvertisedAddr is the host:port Metadata and FindCoordinator give
	// clients. Default: the listener's address.
	AdvertisedAddr string
	// MaxRequestBytes caps a request frame; a larger one closes the
	// connection. Default 100 MiB, Kafka's socket.request.max.bytes.
	MaxRequestBytes int32
	// AutoCreateTopics lets Metadata create unknown topics, as Kafka's
	// auto.create.topics.enable. Default false in Config; the CLI
	// defaults it to true.
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and
	// of CreateTopics with -1. Default 1.
	DefaultPartitions int32
	// MaxInflight caps the requests one connection may have decoded but
	// not yet answered; reading pauses beyond it. Default 256.
	MaxInflight int

	// Limits that keep a flood of connections or requests from taking the
	// server down. Kafka's names where Kafka has the setting.

	// MaxConnections caps the open Kafka connections (Kafka's
	// max.connections). A connection accepted beyond it is closed at once.
	// Default DefaultMaxConnections(): the open-file limit less FDReserve,
	// so that accepting clients can never starve the store, the topic
	// log's segment files or the gRPC listener of file descriptors.
	// Kafka's default is unlimited.
	MaxConnections int
	// MaxConnectionsPerIP caps the open connections from one IP address
	// (Kafka's max.connections.per.ip); a new one beyond it is closed at
	// once. Default 0: unlimited, as Kafka.
	MaxConnectionsPerIP int
	// ConnectionsMaxIdle closes a connection that has no request in
	// flight and has read nothing and written nothing for this long
	// (Kafka's connections.max.idle.ms). Default 10 min; negative: never.
	ConnectionsMaxIdle time.Duration
	// QueuedMaxRequestBytes bounds the bytes of request frames being read
	// or waiting for their response across all connections (Kafka's
	// queued.max.request.bytes): a reader that would exceed it waits,
	// before allocating its frame, until responses free room. Default
	// DefaultQueuedMaxRequestBytes (256 MiB); negative: unbounded, Kafka's
	// default. When bounded it must be at least MaxRequestBytes (Kafka's
	// rule), or the largest frame could never be read.
	QueuedMaxRequestBytes int64
	// RequestReadTimeout closes a connection whose request frame is not
	// complete this long after its size was read (and its bytes were
	// granted), so that a client declaring a large frame and trickling it
	// cannot hold memory for ever. Default 30 s, the request.timeout.ms
	// of Kafka's own clients: a client whose request takes longer has
	// given up on it. Negative: no timeout. Kafka has no direct
	// equivalent; its connections.max.idle.ms counts from the last byte.
	RequestReadTimeout time.Duration
	// ResponseWriteTimeout closes a connection that takes no 1 MiB of its
	// responses for this long (up to half as long again: the deadline is
	// moved only once less than this is left): a client that sends requests and never
	// reads the answers would otherwise hold their request bytes
	// (QueuedMaxRequestBytes) for ever. Default 30 s; negative: none.
	ResponseWriteTimeout time.Duration

	// WarnBurst and WarnInterval limit the warnings that clients can
	// cause (a bad frame, a refused connection, a failed accept, a
	// timeout): at most WarnBurst lines of each kind per WarnInterval,
	// then one line counting the ones left out. Defaults 10 and 10 s.
	WarnBurst    int
	WarnInterval time.Duration

	// SASL authenticates the SASL_PLAINTEXT and SASL_SSL listeners'
	// clients (security.NewSASL). Required for those listeners.
	SASL *security.SASL
	// Credentials keeps the SCRAM credentials that
	// AlterUserScramCredentials and DescribeUserScramCredentials manage
	// (and that SASL checks). Nil: those APIs answer every user
	// UNKNOWN_SERVER_ERROR.
	Credentials *security.Credentials
	// Authorizer decides what each request's principal may do (Kafka's
	// ACLs; see authz.go), and keeps the ACLs that CreateAcls, DeleteAcls
	// and DescribeAcls manage. Nil: authorization off, every request
	// allowed and the ACL APIs answer SECURITY_DISABLED, as Kafka without
	// an authorizer.
	Authorizer *security.Authorizer
	// Orgs maps each connection's principal to its organisation, the
	// tenant its groups, offsets, topics, transactional ids and ACLs are
	// scoped to. Nil: everyone is in the default organisation.
	Orgs *security.Orgs
	// FailedAuthenticationDelay delays the answer to a failed SASL
	// authentication, and the connection's close after it, by this long
	// (Kafka's connection.failed.authentication.delay.ms), so that a
	// client guessing passwords gets few guesses a second per
	// connection. Only that connection waits. Default 100 ms; negative:
	// none.
	FailedAuthenticationDelay time.Duration
	// SessionLifetime is how long a SASL authentication holds (KIP-368,
	// Kafka's connections.max.reauth.ms): SaslAuthenticate v1+ tells the
	// client, which re-authenticates on the same connection before it
	// ends; a connection whose session has ended is closed at its next
	// request other than a re-authentication. Default 0: sessions never
	// end.
	SessionLifetime time.Duration
	// OnAuthentication, if set, is called after each SASL
	// authentication (and re-authentication) with its mechanism and
	// whether it succeeded: for metrics. Called from connections'
	// readers, concurrently.
	OnAuthentication func(mechanism string, ok bool)

	// Quotas are the organisations' quotas (package quota): the rate
	// quotas this server enforces (quotas.go) and that
	// DescribeClientQuotas and AlterClientQuotas manage. Nil: no quotas;
	// DescribeClientQuotas lists none and AlterClientQuotas refuses every
	// entry (UNKNOWN_SERVER_ERROR).
	Quotas *quota.Registry
	// QuotaWindow is how rates are measured for the quotas: samples of
	// Size, as Kafka's quota.window.size.seconds and quota.window.num.
	// Default quota.DefaultWindow (11 samples of 1 s); a throttle is at
	// most the whole window.
	QuotaWindow quota.Window

	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are the
	// coordinator's defaults for KIP-848 consumer groups
	// (coordinator.Config's): the static values of the dynamic broker
	// configs group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms, and within the bounds of the
	// groups' own. Default 45 s and 5 s, Kafka's.
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	// ShareSessionTimeout, ShareHeartbeatInterval and ShareMaxSize are
	// the coordinator's defaults for KIP-932 share groups
	// (coordinator.Config's): the static broker configs
	// group.share.session.timeout.ms, group.share.heartbeat.interval.ms
	// and group.share.max.size, the defaults DescribeConfigs reports for
	// a share group's share.session.timeout.ms and
	// share.heartbeat.interval.ms, and within the bounds of the groups'
	// own. Default 45 s, 5 s and 200, Kafka's. The share-partition
	// limits' defaults (group.share.delivery.count.limit,
	// group.share.record.lock.duration.ms,
	// group.share.partition.max.record.locks) are Share's.
	ShareSessionTimeout, ShareHeartbeatInterval time.Duration
	ShareMaxSize                                int

	// Logger; nil discards.
	Logger *slog.Logger
	// LogLevel is the level of Logger's handler, which the broker logger
	// "root" (IncrementalAlterConfigs on BROKER_LOGGER) changes. Nil: a
	// level of the server's own, at info, that changes nothing else.
	LogLevel *slog.LevelVar
	// Observer is told of every request that decodes: RequestReceived
	// before its handler runs (the context it returns travels with the
	// request, to the coordinator too) and RequestAnswered exactly once
	// after (see conn.go for when). It is called from every connection's
	// reader and writer, concurrently. Nil: observe.Nop, which costs no
	// clock read and no allocation per request.
	Observer observe.Observer
}

// DefaultQueuedMaxRequestBytes is the default QueuedMaxRequestBytes:
// room for two frames of the default MaxRequestBytes (100 MiB), or for
// 256 producers' 1 MiB batches at once, while keeping the memory that
// requests can pin to a fraction of a small machine's.
const DefaultQueuedMaxRequestBytes = 256 << 20

// FDReserve is how many file descriptors the default MaxConnections
// leaves to everything else: Pebble keeps up to 1,000 table files open
// (its MaxOpenFiles default) besides its WAL, MANIFEST and lock; the
// topic log keeps every segment file open; the gRPC listener and its
// clients; and accept itself needs a free descriptor to refuse a
// connection.
const FDReserve = 4096

// DefaultMaxConnections is the default MaxConnections: the process's
// open-file limit (RLIMIT_NOFILE; the Go runtime raises the soft limit to
// the hard one at start) less FDReserve, but at least half the limit;
// 15,904 with a limit of 20,000. If the limit cannot be read, 1,000.
func DefaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 1000
	}
	n := lim.Cur
	if n > 1<<30 {
		n = 1 << 30 // RLIM_INFINITY
	}
	return int(max(n-min(n, FDReserve), n/2))
}
func (c *Config) setDefaults() {
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 100 << 20
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.TransactionVersion == 0 {
		c.TransactionVersion = 2
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 256
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections()
	}
	if c.ConnectionsMaxIdle == 0 {
		c.ConnectionsMaxIdle = 10 * time.Minute
	}
	if c.QueuedMaxRequestBytes == 0 {
		c.QueuedMaxRequestBytes = DefaultQueuedMaxRequestBytes
	}
	if c.RequestReadTimeout == 0 {
		c.RequestReadTimeout = 30 * time.Second
	}
	if c.ResponseWriteTimeout == 0 {
		c.ResponseWriteTimeout = 30 * time.Second
	}
	if c.WarnBurst <= 0 {
		c.WarnBurst = 10
	}
	if c.WarnInterval <= 0 {
		c.WarnInterval = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.LogLevel == nil {
		c.LogLevel = new(slog.LevelVar)
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = 45 * time.Second
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if c.ShareSessionTimeout <= 0 {
		c.ShareSessionTimeout = 45 * time.Second
	}
	if c.ShareHeartbeatInterval <= 0 {
		c.ShareHeartbeatInterval = 5 * time.Second
	}
	if c.ShareMaxSize <= 0 {
		c.ShareMaxSize = 200
	}
	if c.Observer == nil {
		c.Observer = observe.Nop{}
	}
	if c.FailedAuthenticationDelay == 0 {
		c.FailedAuthenticationDelay = 100 * time.Millisecond
	}
}

// Server serves the Kafka protocol on one or more listeners.
type Server struct {
	cfg    Config
	logger *slog.Logger
	topics *topics.Log
	groups *coordinator.Coordinator
	txn    *txncoord.Coordinator
	// share is cfg.Share; shareSess its sessions (share_session.go).
	share     *sharecoord.Host
	shareSess *shareSessions
	// shareRotation turns the partition a ShareFetch starts at;
	// shareReleases are the releases of closed connections' share
	// sessions under way, which Shutdown waits for.
	shareRotation atomic.Uint64
	shareReleases sync.WaitGroup
	// cluster is cfg.Cluster, or single.
	cluster Cluster
	// offsetsID is __consumer_offsets' topic id in this cluster.
	offsetsID [16]byte
	// warn limits the warnings one client can cause per connection.
	warn *ratelog.Limiter
	// budget bounds the bytes of requests read and not yet answered.
	budget *budget
	// obs is cfg.Observer; observing is false when it wants no request events (observe.WantsRequests),
	// whose calls (and the clock reads for their latencies) are skipped.
	obs       observe.Observer
	observing bool
	// quotas measures the organisations' rates (quotas.go).
	quotas quotas

	// host and port are the default advertised address: the first
	// listener's, or Config.AdvertisedAddr.
	host string
	port int32

	closing chan struct{} // closed by Shutdown: long polls return early

	mu  sync.Mutex
	lns []net.Listener
	// listeners are the listeners served, by name.
	listeners map[string]*listener
	conns     map[*conn]struct{}
	perIP     map[string]int // open connections by peer IP
	wg        sync.WaitGroup // one per connection
	// maxConns and maxConnsPerIP are the connection limits in force:
	// Config's, or the dynamic configs' (dynamic_configs.go); 0 per IP
	// is none.
	maxConns, maxConnsPerIP int
	// logLevelName is the root logger's level as last set by
	// IncrementalAlterConfigs, as Kafka names it; "" before.
	logLevelName string

	// unit is the global unit (the topic log's), whose config records
	// dyn is this node's reading of.
	unit global.Unit
	dyn  atomic.Pointer[dynamicConfigs]

	// refused counts connections closed at once by MaxConnections and
	// by MaxConnectionsPerIP.
	refusedMax, refusedPerIP atomic.Uint64
}

// ConnStats are the server's connection counts.
type ConnStats struct {
	Open int
	// RefusedMax and RefusedPerIP count the connections closed on arrival
	// by MaxConnections and MaxConnectionsPerIP since the server started.
	RefusedMax, RefusedPerIP uint64
}

// Conns returns the server's connection counts.
func (s *Server) Conns() ConnStats {
	s.mu.Lock()
	open := len(s.conns)
	s.mu.Unlock()
	return ConnStats{Open: open, RefusedMax: s.refusedMax.Load(), RefusedPerIP: s.refusedPerIP.Load()}
}

// New returns a Server; call Serve to accept connections.
func New(cfg Config) (*Server, error) {
	if cfg.Topics == nil || cfg.Groups == nil {
		return nil, errors.New("kafka: Config.Topics and Config.Groups are required")
	}
	cfg.setDefaults()
	if cfg.TransactionVersion != 1 && cfg.TransactionVersion != 2 {
		return nil, fmt.Errorf("kafka: transaction version %d: must be 1 or 2", cfg.TransactionVersion)
	}
	if cfg.QueuedMaxRequestBytes > 0 && cfg.QueuedMaxRequestBytes < int64(cfg.MaxRequestBytes) {
		return nil, fmt.Errorf("kafka: queued max request bytes (%d) must be at least max request bytes (%d)", cfg.QueuedMaxRequestBytes, cfg.MaxRequestBytes)
	}
	s := &Server{
		cfg:     cfg,
		logger:  cfg.Logger,
		topics:  cfg.Topics,
		groups:  cfg.Groups,
		txn:     cfg.Txn,
		share:   cfg.Share,
		warn:    ratelog.New(cfg.Logger, cfg.WarnBurst, cfg.WarnInterval),
		budget:  newBudget(cfg.QueuedMaxRequestBytes),
		obs:     cfg.Observer,
		closing: make(chan struct{}),
		conns:   make(map[*conn]struct{}),
		perIP:   make(map[string]int),

		listeners: make(map[string]*listener),
	}
	s.offsetsID = offsetstopic.TopicID(cfg.Topics.ClusterID())
	s.shareSess = newShareSessions(cfg.MaxShareSessions, s.shareSessionGone)
	s.quotas = quotas{reg: cfg.Quotas, window: cfg.QuotaWindow}
	if s.quotas.window.Size <= 0 {
		s.quotas.window = quota.DefaultWindow
	}
	s.observing = observe.WantsRequests(cfg.Observer)
	s.cluster = cfg.Cluster
	if s.cluster == nil {
		s.cluster = single{s}
	} else if self := s.cluster.Self(); self != cfg.Topics.NodeID() {
		return nil, fmt.Errorf("kafka: the cluster's node id %d is not the topic log's %d", self, cfg.Topics.NodeID())
	}
	if cfg.AdvertisedAddr != "" {
		if err := s.setAdvertised(cfg.AdvertisedAddr); err != nil {
			return nil, err
		}
	}
	s.unit = cfg.Topics.Unit()
	s.unit.Subscribe(s.applyConfigs)
	s.startDLQ()
	return s, nil
}

func (s *Server) setAdvertised(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("kafka: advertised address %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("kafka: advertised port %q: %w", port, err)
	}
	s.host, s.port = host, int32(p)
	return nil
}

// Accept retry delays, as net/http's Server.Serve: 5 ms doubling to 1 s.
const (
	acceptDelayMin = 5 * time.Millisecond
	acceptDelayMax = time.Second
)

// Serve accepts connections on ln until Shutdown, as a PLAINTEXT
// listener advertised at Config.AdvertisedAddr (default: ln's address).
// It returns nil after Shutdown, and an error only if ln was closed by
// someone else. Other accept errors (EMFILE and ENFILE when file
// descriptors run out, ECONNABORTED, ...) are logged, rate-limited, and
// retried after a delay, as net/http does: they pass when connections
// close, and a server that stopped listening would be down for good.
// ServeListener serves listeners of other protocols.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, s.plaintextListener())
}

// accept is a listener's accept loop.
func (s *Server) accept(ln net.Listener, l *listener) error {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return nil
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			delay = min(max(2*delay, acceptDelayMin), acceptDelayMax)
			s.warn.Warn("accept failed; retrying", "listener", ln.Addr().String(), "err", err, "retry_in", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.closing:
				t.Stop()
				return nil
			}
			continue
		}
		delay = 0
		s.admit(nc, l)
	}
}

// admit serves nc unless a connection limit refuses it.
//
// Over a limit, the new connection is closed at once. Kafka does that for
// max.connections.per.ip, but for max.connections its Acceptor stops
// accepting until a connection closes, leaving new ones in the kernel's
// listen backlog. Cohort closes for both: a blocked accept lets a flood
// of idle connections fill the backlog as well, and every client, the
// legitimate ones too, then hangs until its connect or request times
// out, while a closed connection is an immediate error that clients
// retry with backoff, and the backlog stays drained so that a retry
// succeeds as soon as a slot frees.
func (s *Server) admit(nc net.Conn, l *listener) {
	ip := peerIP(nc.RemoteAddr())
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		nc.Close()
		return
	default:
	}
	// Refused: the line is logged before the close, so that a client
	// (or a test) that sees the close finds it.
	if max := s.maxConns; len(s.conns) >= max {
		s.mu.Unlock()
		s.refusedMax.Add(1)
		s.warn.Warn("closing new connection: max connections reached", "remote", nc.RemoteAddr().String(), "max_connections", max)
		nc.Close()
		return
	}
	if max := s.maxConnsPerIP; max > 0 && s.perIP[ip] >= max {
		s.mu.Unlock()
		s.refusedPerIP.Add(1)
		s.warn.Warn("closing new connection: max connections per IP reached", "remote", nc.RemoteAddr().String(), "max_connections_per_ip", max)
		nc.Close()
		return
	}
	c := newConn(s, nc, ip, l)
	s.conns[c] = struct{}{}
	s.perIP[ip]++
	s.wg.Add(1)
	s.mu.Unlock()
	go c.serve()
}

// Shutdown stops accepting, stops reading new requests, answers every
// request already read (cutting long polls short) and closes the
// connections. It returns when all are closed or ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()
	s.warn.Close()
	// Parked group requests (a JoinGroup on the barrier) would hold their
	// connections for up to a rebalance timeout: closing the coordinator
	// writes what is pending and answers them COORDINATOR_NOT_AVAILABLE,
	// which clients retry elsewhere or later.
	s.groups.Close()

	done := make(chan struct{})
	go func() { s.wg.Wait(); s.shareReleases.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (s *Server) connDone(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
	s.mu.Unlock()
	s.wg.Done()
}

// now is the wall clock, for timestamps and long-poll deadlines at the
// edge; the coordinator core never reads it.
func now() time.Time { return time.Now() }
