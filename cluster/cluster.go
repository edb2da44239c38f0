// Package cluster runs Cohort's cluster mode on etcd: nodes register with
// a lease, one of them (the leader) decides which node owns each
// coordinator shard, and every node loads the shards it owns and stops
// serving the ones it does not.
//
// It decides ownership; it must not hold group state or write records:
// the shards themselves (coordinator.Coordinator, the assignment
// service) load from and write to the shared store, whose fencing
// (store.Handle) is what makes an ownership decision binding on a node
// that has not noticed it yet.
//
// # Keys
//
// Under Config.Prefix (P), next to the store's P/data:
//
//	P/cluster/meta            the cluster's unit counts and id, written once
//	                          (txn_units and share_units each added once to
//	                          a cluster created before them)
//	P/cluster/nodes/<id>      a node's registration (addresses, draining),
//	                          bound to its lease
//	P/cluster/leader          the leader's node id and lease, bound to it
//	P/cluster/assignment      the owner of every unit, written by the leader
//	P/cluster/ready/<u>/<id>  node id has warmed unit u up, bound to its lease
//
// # Ownership
//
// The decisions are the pure functions of plan.go (Balance, Plan,
// Reconcile); this file does the etcd I/O around them. The leader writes
// an assignment only while it is the leader (a transaction compares the
// leader key's create revision). A node whose lease it cannot renew stops
// serving every shard before the lease can have expired on etcd's side
// (suspension), so two nodes never serve one shard, even when a node is
// cut off from etcd and cannot be told.
package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/observe"
)

// Config configures Join.
type Config struct {
	// Client is the etcd client. Required; the Member does not close it.
	Client *clientv3.Client
	// Prefix is the cluster's etcd key prefix. Default "/cohort".
	Prefix string
	// NodeID is this node's id, unique in the cluster (Kafka's
	// node.id): 0 to 2^31-1.
	NodeID int32
	// KafkaAddr is the host:port clients reach this node's Kafka
	// listener at (the advertised address). Required.
	KafkaAddr string
	// Listeners are the advertised host:port of each of this node's
	// Kafka listeners, by listener name: nodes answer a client with the
	// addresses of the listener it came on. Nil: KafkaAddr alone (a
	// node of an older version registers only that).
	Listeners map[string]string
	// GRPCAddr is the host:port of this node's gRPC listener, or "".
	GRPCAddr string
	// AdminURL is the base URL of this node's admin HTTP API
	// ("http://host:port"), or "": other nodes ask it for what this
	// node alone holds (the groups it coordinates, their lag).
	AdminURL string
	// Rack is the node's rack (Kafka's broker.rack), or "".
	Rack string
	// DirID identifies the node's data directory. A node that finds its
	// id still registered by the same directory (it was killed and
	// restarted before its lease expired) takes the registration over at
	// once; any other live registration of the id makes Join wait for it
	// to expire, and fail after LeaseTTL plus a margin.
	DirID string
	// LeaseTTL is the node lease's time to live: a node that stops
	// renewing it is taken for dead after this long, and its shards move.
	// Default 6 s; etcd's minimum is 2 s. The node stops serving its
	// shards a quarter of it (at least 500 ms) before its lease could
	// have expired.
	LeaseTTL time.Duration
	// Units is the number of units whose owners the leader decides: the
	// coordinator shards, then the assignment service's. Required when
	// the cluster is created; an existing cluster's count wins (see
	// Meta).
	Units int
	// TxnUnits is the number of transaction coordinator shards, units
	// Units..Units+TxnUnits-1 after the others. 0: none. Fixed when the
	// cluster is created, like Units; a cluster created before there
	// were transaction units gets as many as it has coordinator shards
	// (Units-1, what a node configures for a new cluster), written once
	// into its Meta by the first node that knows them.
	TxnUnits int
	// ShareUnits is the number of share-state shards (sharecoord), the
	// units after the transaction coordinator's. 0: none. Fixed like
	// the others; a cluster created before there were share-state
	// units gets as many as it has coordinator shards, written once
	// into its Meta by the first node that knows them, as TxnUnits.
	ShareUnits int
	// WarmTimeout bounds a planned move: a unit whose next owner has not
	// warmed it up by then is moved anyway. Default 10 s.
	WarmTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// OnNodeEvent is called with every change in the cluster's nodes
	// this node sees (a node joined, lost, rejoined or draining, in
	// successive reads of the registrations: nodeEvents) and in its own
	// lease (suspended, resumed), from Join (every node registered then
	// joins) and the control loop. It must not block. Nil: none.
	OnNodeEvent func(observe.ClusterEvent)
}

// Meta is what is fixed when the cluster is first created.
type Meta struct {
	V     int `json:"v"`
	Units int `json:"units"`
	// TxnUnits are the transaction coordinator's units, after Units
	// (absent in the meta of a cluster created before them: see
	// Config.TxnUnits).
	TxnUnits int `json:"txn_units,omitempty"`
	// ShareUnits are the share coordinator's units, after TxnUnits
	// (absent in the meta of a cluster created before them: see
	// Config.ShareUnits).
	ShareUnits int    `json:"share_units,omitempty"`
	ClusterID  string `json:"cluster_id"`
}

// Total is the number of units the leader assigns.
func (m Meta) Total() int { return m.Units + m.TxnUnits + m.ShareUnits }

// Classes are the sizes of the classes of units the leader balances each
// on its own (Plan): the group coordinator's shards with the assigner's,
// then the transaction coordinator's and the share coordinator's (each
// if any).
func (m Meta) Classes() []int {
	out := []int{m.Units}
	for _, n := range []int{m.TxnUnits, m.ShareUnits} {
		if n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// Node is a registered node.
type Node struct {
	ID    int32  `json:"id"`
	Kafka string `json:"kafka"`
	// Listeners are the Kafka listeners' advertised addresses by
	// listener name (Config.Listeners); absent in a registration by a
	// node of an older version.
	Listeners map[string]string `json:"listeners,omitempty"`
	GRPC      string            `json:"grpc,omitempty"`
	Admin     string            `json:"admin,omitempty"`
	Rack      string            `json:"rack,omitempty"`
	DirID     string            `json:"dir_id,omitempty"`
	Lease     int64             `json:"lease"`
	Draining  bool              `json:"draining,omitempty"`
}

// Host and Port split the Kafka address.
func (n Node) Host() string {
	h, _, _ := net.SplitHostPort(n.Kafka)
	return h
}

// Port is the Kafka listener's port.
func (n Node) Port() int32 {
	_, p, _ := net.SplitHostPort(n.Kafka)
	v, _ := strconv.Atoi(p)
	return int32(v)
}

// Units is what a Member drives: the shards of this node.
type Units interface {
	// Load loads unit u and serves it, returning when it serves (it
	// fences the unit's previous owner first). Loading a unit held
	// does nothing.
	Load(u int) error
	// Unload stops serving unit u.
	Unload(u int)
	// Preload warms unit u up ahead of a planned move (reads its
	// records), without serving or fencing anything.
	Preload(u int) error
	// Forget drops what Preload kept of unit u when the move is off.
	Forget(u int)
	// Holds reports whether unit u is still served (or loading) here: a
	// unit fenced by another node's Load is dropped by the runtime, and
	// the Member loads it again if it still owns it.
	Holds(u int) bool
	// Lease is called with every new lease of the node, before anything
	// is loaded under it: the store binds the owner keys it writes to it.
	Lease(id clientv3.LeaseID)
}

// Member is this node's membership of the cluster.
type Member struct {
	cfg    Config
	cli    *clientv3.Client
	logger *slog.Logger
	meta   Meta
	keys   keys

	lease      atomic.Int64 // the current clientv3.LeaseID
	validUntil atomic.Int64 // unix ns: the lease cannot expire before this
	// renewErr is why the last lease renewal failed (nil once one
	// succeeds), for the suspension's log line.
	renewErr atomic.Pointer[renewFailure]
	draining atomic.Bool

	mu    sync.Mutex
	state state // the last read of P/cluster

	// seen is every node id ever registered in a read, and evNodes the
	// registrations of the last read events were derived from: Join's,
	// then the loop's own.
	seen    map[int32]bool
	evNodes map[int32]Node
	// lastReg is every node's last registration read, kept once it is
	// gone (NodeStates); under mu.
	lastReg map[int32]Node
	// ownerRev and the rest of the loop's fields are the loop's own.

	wake    chan struct{}
	stopped chan struct{}
	cancel  context.CancelFunc
	ctx     context.Context
	units   Units
	stopOne sync.Once
	done    sync.WaitGroup
}

type keys struct {
	meta, nodes, leader, assignment, ready string
}

func newKeys(prefix string) keys {
	p := prefix + "/cluster/"
	return keys{meta: p + "meta", nodes: p + "nodes/", leader: p + "leader", assignment: p + "assignment", ready: p + "ready/"}
}

// DataPrefix is the etcd prefix of the cluster's store (store/etcd).
func DataPrefix(prefix string) string {
	if prefix == "" {
		prefix = "/cohort"
	}
	return prefix + "/data"
}

// state is one read of P/cluster.
type state struct {
	rev        int64
	nodes      map[int32]Node
	leader     int32 // None if no leader
	leaderRev  int64 // the leader key's create revision
	leaderVal  string
	assignment Assignment
	assignRev  int64 // its mod revision; 0 if none
	ready      map[int][]int32
}

// Join registers this node: it reads (or creates) the cluster's Meta and
// puts the node's registration under a fresh lease. The node serves
// nothing until Run.
func Join(ctx context.Context, cfg Config) (*Member, error) {
	if cfg.Client == nil {
		return nil, errors.New("cluster: Config.Client is nil")
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("cluster: node id %d: must be 0 or more", cfg.NodeID)
	}
	if cfg.KafkaAddr == "" {
		return nil, errors.New("cluster: Config.KafkaAddr is empty")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/cohort"
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 6 * time.Second
	}
	if cfg.LeaseTTL < 2*time.Second {
		return nil, fmt.Errorf("cluster: lease TTL %v: etcd's minimum is 2s", cfg.LeaseTTL)
	}
	if cfg.WarmTimeout <= 0 {
		cfg.WarmTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Member{
		cfg:     cfg,
		cli:     cfg.Client,
		logger:  cfg.Logger.With("component", "cluster", "node", cfg.NodeID),
		keys:    newKeys(cfg.Prefix),
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	var err error
	if m.meta, err = m.readMeta(ctx); err != nil {
		return nil, err
	}
	if err := m.register(ctx); err != nil {
		return nil, err
	}
	// Read the cluster before the node serves: Brokers, Leader and
	// Owner answer from the last read, and the node answers Metadata as
	// soon as Run returns. Left to the loop's first read, a node listed
	// only itself until then, and a client that asked kept that answer
	// (one broker) for its metadata max age, 5 min by default.
	st, err := m.read(ctx)
	if err != nil {
		c, cancel := m.reqCtx(context.WithoutCancel(ctx))
		m.cli.Revoke(c, m.Lease())
		cancel()
		return nil, fmt.Errorf("cluster: read %s/cluster/: %w", cfg.Prefix, err)
	}
	m.state = st
	m.seen = map[int32]bool{}
	m.nodesRead(st.nodes, false)
	return m, nil
}

// Meta returns the cluster's fixed facts.
func (m *Member) Meta() Meta { return m.meta }

// NodeID returns this node's id.
func (m *Member) NodeID() int32 { return m.cfg.NodeID }

// Lease returns the node's current lease.
func (m *Member) Lease() clientv3.LeaseID { return clientv3.LeaseID(m.lease.Load()) }

func (m *Member) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(m.cfg.LeaseTTL/2, time.Second))
}

// readMeta reads the cluster's Meta, creating it if this is the first node.
func (m *Member) readMeta(ctx context.Context) (Meta, error) {
	want := Meta{V: 1, Units: m.cfg.Units, TxnUnits: max(m.cfg.TxnUnits, 0), ShareUnits: max(m.cfg.ShareUnits, 0), ClusterID: newClusterID()}
	if want.Units < 1 {
		return Meta{}, errors.New("cluster: Config.Units must be at least 1")
	}
	b, _ := json.Marshal(want)
	c, cancel := m.reqCtx(ctx)
	defer cancel()
	resp, err := m.cli.Txn(c).
		If(clientv3.Compare(clientv3.CreateRevision(m.keys.meta), "=", 0)).
		Then(clientv3.OpPut(m.keys.meta, string(b))).
		Else(clientv3.OpGet(m.keys.meta)).Commit()
	if err != nil {
		return Meta{}, fmt.Errorf("cluster: read cluster meta at %s: %w", m.keys.meta, err)
	}
	if resp.Succeeded {
		m.logger.Info("created the cluster", "units", want.Units, "txn_units", want.TxnUnits, "share_units", want.ShareUnits, "cluster_id", want.ClusterID)
		return want, nil
	}
	for range 100 {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			return Meta{}, fmt.Errorf("cluster: %s vanished", m.keys.meta)
		}
		var got Meta
		if err := json.Unmarshal(kvs[0].Value, &got); err != nil || got.V != 1 || got.Units < 1 || got.TxnUnits < 0 || got.ShareUnits < 0 {
			return Meta{}, fmt.Errorf("cluster: corrupt %s: %q", m.keys.meta, kvs[0].Value)
		}
		// Transaction units are added only before share units: they
		// cannot go in between (a cluster created with share units and
		// no transaction units keeps none).
		addTxn := got.TxnUnits == 0 && want.TxnUnits > 0 && got.ShareUnits == 0
		addShare := got.ShareUnits == 0 && want.ShareUnits > 0
		if !addTxn && !addShare {
			if got.Units != want.Units || got.TxnUnits != want.TxnUnits || got.ShareUnits != want.ShareUnits {
				m.logger.Info("using the cluster's unit counts, fixed when it was created", "units", got.Units, "txn_units", got.TxnUnits, "share_units", got.ShareUnits,
					"configured", want.Units, "configured_txn", want.TxnUnits, "configured_share", want.ShareUnits)
			}
			return got, nil
		}
		// A cluster created before transaction (or share-state)
		// units: it gets as many as it has coordinator shards, once,
		// whichever node writes them first (the compare on the meta's
		// revision). New units go after the others, so that the
		// assignment grows and keeps its owners.
		if addTxn {
			got.TxnUnits = max(got.Units-1, 1)
		}
		if addShare {
			got.ShareUnits = max(got.Units-1, 1)
		}
		b, _ := json.Marshal(got)
		resp, err = m.cli.Txn(c).
			If(clientv3.Compare(clientv3.ModRevision(m.keys.meta), "=", kvs[0].ModRevision)).
			Then(clientv3.OpPut(m.keys.meta, string(b))).
			Else(clientv3.OpGet(m.keys.meta)).Commit()
		if err != nil {
			return Meta{}, fmt.Errorf("cluster: add units to %s: %w", m.keys.meta, err)
		}
		if resp.Succeeded {
			m.logger.Info("added units to the cluster", "units", got.Units, "txn_units", got.TxnUnits, "share_units", got.ShareUnits, "added_txn", addTxn, "added_share", addShare)
			return got, nil
		}
	}
	return Meta{}, fmt.Errorf("cluster: %s keeps changing", m.keys.meta)
}

func newClusterID() string {
	// Kafka's cluster ids are 22 characters of URL-safe base64 of a UUID;
	// any unique string works for clients.
	return fmt.Sprintf("cohort-%x", time.Now().UnixNano())
}

func (m *Member) nodeKey(id int32) string { return m.keys.nodes + strconv.Itoa(int(id)) }

// register grants a lease and puts the node's registration under it. A
// registration of the same id by another live process makes it wait for
// that lease to end; one left by this data directory's previous life is
// taken over at once (its lease is revoked).
func (m *Member) register(ctx context.Context) error {
	key := m.nodeKey(m.cfg.NodeID)
	deadline := time.Now().Add(m.cfg.LeaseTTL + 5*time.Second)
	waited := false
	for {
		c, cancel := m.reqCtx(ctx)
		resp, err := m.cli.Get(c, key)
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: read registration %s: %w", key, err)
		}
		if len(resp.Kvs) == 0 {
			break
		}
		var old Node
		_ = json.Unmarshal(resp.Kvs[0].Value, &old)
		if old.DirID != "" && old.DirID == m.cfg.DirID {
			// Our own previous life: we hold the data directory's lock,
			// so that process is gone. Revoking its lease drops its
			// registration and fences its shard handles.
			c, cancel := m.reqCtx(ctx)
			_, err := m.cli.Revoke(c, clientv3.LeaseID(resp.Kvs[0].Lease))
			cancel()
			if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return fmt.Errorf("cluster: revoke the previous registration's lease: %w", err)
			}
			m.logger.Info("took over this node's previous registration", "lease", fmt.Sprintf("%x", resp.Kvs[0].Lease))
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: node id %d is registered by another live node (kafka %s); node ids must be unique", m.cfg.NodeID, old.Kafka)
		}
		if !waited {
			m.logger.Warn("node id is registered by another process; waiting for its lease to expire", "other_kafka", old.Kafka, "ttl", m.cfg.LeaseTTL)
			waited = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return m.putRegistration(ctx)
}

// putRegistration grants a new lease and puts the registration, unless
// another process registered the id meanwhile.
func (m *Member) putRegistration(ctx context.Context) error {
	c, cancel := m.reqCtx(ctx)
	defer cancel()
	sent := time.Now()
	g, err := m.cli.Grant(c, int64(m.cfg.LeaseTTL/time.Second))
	if err != nil {
		return fmt.Errorf("cluster: grant lease: %w", err)
	}
	n := m.self()
	n.Lease = int64(g.ID)
	b, _ := json.Marshal(n)
	key := m.nodeKey(m.cfg.NodeID)
	resp, err := m.cli.Txn(c).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(b), clientv3.WithLease(g.ID))).Commit()
	if err != nil || !resp.Succeeded {
		// The node adopts the lease only once registered under it: it
		// used to adopt it at the grant, so that a registration lost
		// (timed out) left it renewing a lease with nothing bound to it,
		// never registering again, alive and possibly leading but owning
		// nothing for ever (found by TestSim, see TestSimRegistrationLost).
		// Keeping the old, expired lease makes keepAlive try again; the
		// revocation drops a registration that landed unbeknown to us.
		rc, rcancel := m.reqCtx(context.WithoutCancel(ctx))
		m.cli.Revoke(rc, g.ID)
		rcancel()
		if err != nil {
			return fmt.Errorf("cluster: register %s: %w", key, err)
		}
		return fmt.Errorf("cluster: node id %d was registered by another process meanwhile", m.cfg.NodeID)
	}
	m.lease.Store(int64(g.ID))
	m.validUntil.Store(sent.Add(time.Duration(g.TTL) * time.Second).UnixNano())
	m.logger.Info("registered", "lease", fmt.Sprintf("%x", int64(g.ID)), "ttl", m.cfg.LeaseTTL)
	return nil
}

func (m *Member) self() Node {
	return Node{ID: m.cfg.NodeID, Kafka: m.cfg.KafkaAddr, Listeners: m.cfg.Listeners, GRPC: m.cfg.GRPCAddr, Admin: m.cfg.AdminURL, Rack: m.cfg.Rack, DirID: m.cfg.DirID, Lease: m.lease.Load(), Draining: m.draining.Load()}
}

// suspicion is how long before its lease could expire a node stops
// serving: a quarter of the TTL, at least 500 ms.
func suspicion(ttl time.Duration) time.Duration { return max(ttl/4, 500*time.Millisecond) }

// suspendedAt is the suspension rule: a node whose lease cannot expire
// before validUntil must not serve from validUntil − suspicion on, since
// its lease may expire (or have expired) before it could renew it. Pure,
// so that the simulation (sim_test.go) applies the rule the Member does.
func suspendedAt(now, validUntil time.Time, ttl time.Duration) bool {
	return !now.Before(validUntil.Add(-suspicion(ttl)))
}

// suspended reports whether the node must not serve now.
func (m *Member) suspended(now time.Time) bool {
	return suspendedAt(now, time.Unix(0, m.validUntil.Load()), m.cfg.LeaseTTL)
}

// Run starts driving units: renewing the lease, campaigning to lead,
// deciding ownership while leading, and loading and unloading units as
// the assignment says, until Leave or Close.
func (m *Member) Run(units Units) {
	m.units = units
	units.Lease(m.Lease())
	m.done.Go(m.keepAlive)
	m.done.Go(m.watchdog)
	m.done.Go(m.watch)
	m.done.Go(m.loop)
}

func (m *Member) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// keepAlive renews the lease every eighth of its TTL (keepAliveTimes). A
// renewal sent at t keeps the lease alive until at least t+TTL (etcd
// counts from when it got it), which is what validUntil records; so a
// node that cannot reach etcd knows when it must stop serving without
// etcd telling it. A lease that etcd no longer has is replaced by a new
// registration.
func (m *Member) keepAlive() {
	every, retry, attempt := keepAliveTimes(m.cfg.LeaseTTL)
	// The first renewal at once: the registration's lease was granted
	// before the node opened its store and started its services, which
	// under load can take most of a short TTL (a node was suspended right
	// after start, "no renewal attempt failed").
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		next := every
		sent := time.Now()
		c, cancel := context.WithTimeout(m.ctx, attempt)
		resp, err := m.cli.KeepAliveOnce(c, m.Lease())
		cancel()
		switch {
		case err == nil && resp.TTL > 0:
			m.validUntil.Store(sent.Add(time.Duration(resp.TTL) * time.Second).UnixNano())
			m.renewErr.Store(nil)
		case m.ctx.Err() != nil:
			return
		case errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && resp.TTL <= 0):
			// The lease expired: everything bound to it is gone, and
			// other nodes may own our shards. Start a new life.
			m.logger.Warn("lease expired; registering again", "lease", fmt.Sprintf("%x", m.lease.Load()))
			m.validUntil.Store(0)
			m.poke()
			c, cancel := context.WithTimeout(m.ctx, m.cfg.LeaseTTL)
			err := m.putRegistration(c)
			cancel()
			if err != nil {
				m.logger.Warn("register again", "err", err)
				next = retry
			} else {
				m.units.Lease(m.Lease())
			}
		default:
			// etcd electing a leader, a member gone: try again soon,
			// not a third of the TTL later.
			m.logger.Debug("lease renewal failed", "err", err)
			if f := m.renewErr.Load(); f == nil {
				m.renewErr.Store(&renewFailure{err: err, since: sent, attempts: 1})
			} else {
				m.renewErr.Store(&renewFailure{err: err, since: f.since, attempts: f.attempts + 1})
			}
			next = retry
		}
		m.poke()
		t.Reset(next)
	}
}

// renewFailure is a run of failed lease renewals: the last error, when
// the first failed, how many have.
type renewFailure struct {
	err      error
	since    time.Time
	attempts int
}

// keepAliveTimes is the lease renewal's cadence: every eighth of the TTL
// (half the suspicion margin); after a failed renewal, again soon (an
// etcd leader election takes about a second, longer under load); each
// attempt bounded, so that one sent to a member that died does not hold
// the next ones back.
//
// The cadence is what a node can ride out: it is suspended at the last
// renewal plus TTL − suspicion, so an etcd outage (a leader election, a
// member killed) that starts just before a renewal was due leaves it
// TTL − suspicion − every. Renewing every third of the TTL, as etcd's
// own client does, left 5/12 of the TTL (4.2 s of a 10 s lease): less
// than the 5 s an election took under the full suite's load, the likely
// cause of TestClusterEtcdMemberKilled's rare suspensions. Every eighth
// leaves 5/8 (6.25 s). A renewal costs etcd little: the leader answers
// it from memory, without a raft write.
func keepAliveTimes(ttl time.Duration) (every, retry, attempt time.Duration) {
	every = min(ttl/3, suspicion(ttl)/2)
	return every, min(every, 200*time.Millisecond), min(ttl/3, time.Second)
}

// watchdog stops serving every unit the moment the node becomes
// suspended, whatever the loop is waiting for (a read of etcd that will
// time out, a load).
func (m *Member) watchdog() {
	t := time.NewTimer(0)
	defer t.Stop()
	unloaded := false
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if m.suspended(now) {
			if !unloaded {
				all := make([]int, m.meta.Total())
				for u := range all {
					all[u] = u
				}
				m.unload(all)
				unloaded = true
				m.poke()
			}
			t.Reset(10 * time.Millisecond)
			continue
		}
		unloaded = false
		t.Reset(time.Unix(0, m.validUntil.Load()).Add(-suspicion(m.cfg.LeaseTTL)).Sub(now) + time.Millisecond)
	}
}

// unload unloads units all at once and waits for them: a unit stops
// serving as its Unload starts, but Unload returns only once the unit's
// writes under way are answered, which takes up to the store's timeout
// when etcd cannot be reached; one at a time, the last units would go on
// serving meanwhile.
func (m *Member) unload(us []int) {
	if len(us) == 1 {
		m.units.Unload(us[0])
		return
	}
	var wg sync.WaitGroup
	for _, u := range us {
		wg.Go(func() { m.units.Unload(u) })
	}
	wg.Wait()
}

// watch pokes the loop whenever something under P/cluster changes. The
// loop reads the whole of P/cluster on every poke, so the watch only has
// to miss nothing since Join's read: it starts at the revision after
// that read's, and one that ends (etcd lost its leader, the connection
// broke) starts again after the last revision it saw. One whose
// revisions were compacted away pokes, as a change may be among them,
// and goes on from the oldest revision etcd still has.
func (m *Member) watch() {
	m.mu.Lock()
	next := m.state.rev + 1
	m.mu.Unlock()
	for m.ctx.Err() == nil {
		wc := m.cli.Watch(clientv3.WithRequireLeader(m.ctx), m.cfg.Prefix+"/cluster/", clientv3.WithPrefix(), clientv3.WithRev(next))
		for resp := range wc {
			if resp.CompactRevision != 0 {
				next = resp.CompactRevision
				m.poke()
				break
			}
			if resp.Err() != nil {
				break
			}
			if len(resp.Events) > 0 {
				next = resp.Events[len(resp.Events)-1].Kv.ModRevision + 1
			}
			m.poke()
		}
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// read reads P/cluster in one request.
func (m *Member) read(ctx context.Context) (state, error) {
	c, cancel := m.reqCtx(ctx)
	defer cancel()
	resp, err := m.cli.Get(c, m.cfg.Prefix+"/cluster/", clientv3.WithPrefix())
	if err != nil {
		return state{}, err
	}
	st := state{rev: resp.Header.Revision, nodes: map[int32]Node{}, leader: None, ready: map[int][]int32{}}
	type readyKey struct {
		u     int
		node  int32
		epoch int64
	}
	var readies []readyKey
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		switch {
		case strings.HasPrefix(k, m.keys.nodes):
			var n Node
			if json.Unmarshal(kv.Value, &n) == nil {
				st.nodes[n.ID] = n
			}
		case k == m.keys.leader:
			st.leaderVal, st.leaderRev = string(kv.Value), kv.CreateRevision
			if id, _, ok := strings.Cut(st.leaderVal, "/"); ok {
				if v, err := strconv.Atoi(id); err == nil {
					st.leader = int32(v)
				}
			}
		case k == m.keys.assignment:
			if json.Unmarshal(kv.Value, &st.assignment) == nil {
				st.assignRev = kv.ModRevision
			}
		case strings.HasPrefix(k, m.keys.ready):
			us, ns, ok := strings.Cut(k[len(m.keys.ready):], "/")
			u, err1 := strconv.Atoi(us)
			n, err2 := strconv.Atoi(ns)
			epoch, _ := strconv.ParseInt(string(kv.Value), 10, 64)
			if ok && err1 == nil && err2 == nil {
				readies = append(readies, readyKey{u, int32(n), epoch})
			}
		}
	}
	// A ready said for an earlier move of the unit does not count.
	for _, r := range readies {
		if r.epoch >= since(st.assignment, r.u) {
			st.ready[r.u] = append(st.ready[r.u], r.node)
		}
	}
	return st, nil
}

// loop is the node's control loop: on every poke (a change in etcd, a
// lease renewal) and at least every tick, it reads the cluster's state,
// acts as the leader if it is one, and makes this node's units match the
// assignment.
func (m *Member) loop() {
	defer close(m.stopped)
	tick := time.NewTicker(max(m.cfg.LeaseTTL/20, 50*time.Millisecond))
	defer tick.Stop()
	l := &loopState{
		held:      map[int]bool{},
		warmed:    map[int]bool{},
		readyPut:  map[int]int64{},
		nextSince: map[int]time.Time{},
		results:   make(chan unitResult, 64),
		busy:      map[int]bool{},
	}
	for {
		select {
		case <-m.ctx.Done():
			m.shutdownUnits(l)
			return
		case <-m.wake:
		case <-tick.C:
		case r := <-l.results:
			m.finish(l, r)
		}
		m.step(l)
	}
}

// loopState is the control loop's own memory.
type loopState struct {
	held      map[int]bool  // units serving (or loading) here
	warmed    map[int]bool  // units preloaded here
	readyPut  map[int]int64 // ready keys this node has put: the epoch each says
	busy      map[int]bool  // a Load or Preload of the unit under way
	nextSince map[int]time.Time
	results   chan unitResult
	wasSusp   bool
	leaseSusp bool // suspended by the lease (not by draining)
	st        state
	haveSt    bool
}

type unitResult struct {
	u       int
	preload bool
	err     error
}

func (m *Member) finish(l *loopState, r unitResult) {
	delete(l.busy, r.u)
	switch {
	case r.preload && r.err == nil:
		l.warmed[r.u] = true
	case r.preload:
		m.logger.Warn("preloading a shard failed", "unit", r.u, "err", r.err)
	case r.err != nil:
		// The runtime retries loading with backoff while held; a hard
		// failure leaves it unheld so that the next step tries again.
		// One the assignment took away while it loaded is no failure.
		level := slog.LevelWarn
		if errors.Is(r.err, coordinator.ErrUnloaded) {
			level = slog.LevelDebug
		}
		m.logger.Log(context.Background(), level, "loading a shard failed", "unit", r.u, "err", r.err)
		delete(l.held, r.u)
		m.units.Unload(r.u)
	}
}

func (m *Member) step(l *loopState) {
	now := time.Now()
	susp := m.suspended(now) || m.draining.Load() && m.drainedSelf(l)
	if susp != l.wasSusp && m.suspended(now) {
		// Say why: the renewals failing (and how), or none failing, which
		// means the renewal loop itself did not run in time.
		args := []any{"last_err", "none: no renewal attempt failed"}
		if f := m.renewErr.Load(); f != nil {
			args = []any{"last_err", f.err, "failing_since", f.since.Format(time.RFC3339Nano), "failed_attempts", f.attempts}
		}
		m.logger.Warn("cannot renew the lease in time: serving no shard until it is renewed", args...)
	} else if !susp && l.wasSusp {
		m.logger.Info("lease renewed: serving shards again")
	}
	if ls := m.suspended(now); ls != l.leaseSusp {
		l.leaseSusp = ls
		e := observe.ClusterEvent{Kind: observe.NodeResumed, Node: m.cfg.NodeID, Self: true, Kafka: m.cfg.KafkaAddr}
		if ls {
			e.Kind, e.Reason = observe.NodeSuspended, "cannot renew the lease in time"
			if f := m.renewErr.Load(); f != nil {
				e.Reason += ": " + f.err.Error()
			}
		}
		m.emit(e, m.evNodes, ls)
	}
	l.wasSusp = susp
	if susp {
		// Stop serving at once, without waiting for etcd.
		var us []int
		for u := range l.held {
			us = append(us, u)
			delete(l.held, u)
		}
		m.unload(us)
	}
	for u := range l.held {
		if !l.busy[u] && !m.units.Holds(u) {
			delete(l.held, u)
		}
	}
	st, err := m.read(m.ctx)
	if err != nil {
		if m.ctx.Err() == nil {
			m.logger.Debug("read cluster state", "err", err)
		}
		return
	}
	m.mu.Lock()
	m.state = st
	m.mu.Unlock()
	m.nodesRead(st.nodes, l.leaseSusp)
	l.st, l.haveSt = st, true
	if !m.suspended(now) {
		m.lead(l, st)
	}
	a := st.assignment
	act := Reconcile(a, m.cfg.NodeID, l.held, l.warmed, susp)
	m.unload(act.Unload)
	for _, u := range act.Unload {
		delete(l.held, u)
	}
	for _, u := range act.Load {
		if l.busy[u] {
			continue
		}
		l.held[u], l.busy[u] = true, true
		m.done.Go(func() {
			err := m.units.Load(u)
			if err == nil && m.suspended(time.Now()) {
				m.units.Unload(u) // the watchdog may have run before it loaded
			}
			l.results <- unitResult{u: u, err: err}
		})
	}
	for _, u := range act.Preload {
		if l.busy[u] {
			continue
		}
		l.busy[u] = true
		m.done.Go(func() { l.results <- unitResult{u: u, preload: true, err: m.units.Preload(u)} })
	}
	// Ready keys: put for warmed units moving here, delete the others.
	for u := range l.warmed {
		moving := u < len(a.Next) && a.Next[u] == m.cfg.NodeID
		if !moving {
			if !l.held[u] {
				m.units.Forget(u)
			}
			delete(l.warmed, u)
			continue
		}
		if said, ok := l.readyPut[u]; (!ok || said < since(a, u)) && !susp {
			if m.putReady(u, a.Epoch) == nil {
				l.readyPut[u] = a.Epoch
			}
		}
	}
	for u := range l.readyPut {
		if u >= len(a.Next) || a.Next[u] != m.cfg.NodeID {
			if m.deleteReady(u) == nil {
				delete(l.readyPut, u)
			}
		}
	}
}

func (m *Member) readyKey(u int) string {
	return m.keys.ready + strconv.Itoa(u) + "/" + strconv.Itoa(int(m.cfg.NodeID))
}

// putReady says that this node has warmed unit u up, for the move the
// assignment of the given epoch shows.
func (m *Member) putReady(u int, epoch int64) error {
	c, cancel := m.reqCtx(m.ctx)
	defer cancel()
	_, err := m.cli.Put(c, m.readyKey(u), strconv.FormatInt(epoch, 10), clientv3.WithLease(m.Lease()))
	return err
}

// since is the epoch at which unit u's current move was announced (0 if
// the assignment does not say).
func since(a Assignment, u int) int64 {
	if u < len(a.Since) {
		return a.Since[u]
	}
	return 0
}

func (m *Member) deleteReady(u int) error {
	c, cancel := m.reqCtx(m.ctx)
	defer cancel()
	_, err := m.cli.Delete(c, m.readyKey(u))
	return err
}

// lead campaigns for the leader key and, while holding it, writes the
// next assignment when Plan says it changed.
func (m *Member) lead(l *loopState, st state) {
	val := fmt.Sprintf("%d/%x", m.cfg.NodeID, m.lease.Load())
	if st.leader == None {
		c, cancel := m.reqCtx(m.ctx)
		resp, err := m.cli.Txn(c).
			If(clientv3.Compare(clientv3.CreateRevision(m.keys.leader), "=", 0)).
			Then(clientv3.OpPut(m.keys.leader, val, clientv3.WithLease(m.Lease()))).Commit()
		cancel()
		if err != nil || !resp.Succeeded {
			return
		}
		m.logger.Info("leading the cluster")
		m.poke() // read again as the leader
		return
	}
	if st.leaderVal != val {
		return
	}
	registered, draining := nodeLists(st.nodes)
	force := warmTimeouts(st.assignment.Next, l.nextSince, time.Now(), m.cfg.WarmTimeout)
	next, changed := Plan(m.meta.Classes(), st.assignment, registered, draining, st.ready, force)
	if !changed {
		return
	}
	b, _ := json.Marshal(next)
	c, cancel := m.reqCtx(m.ctx)
	resp, err := m.cli.Txn(c).
		If(clientv3.Compare(clientv3.CreateRevision(m.keys.leader), "=", st.leaderRev),
			clientv3.Compare(clientv3.ModRevision(m.keys.assignment), "=", st.assignRev)).
		Then(clientv3.OpPut(m.keys.assignment, string(b))).Commit()
	cancel()
	if err != nil {
		m.logger.Debug("write assignment", "err", err)
		return
	}
	if resp.Succeeded {
		moved := 0
		for u := range next.Owner {
			if u < len(st.assignment.Owner) && st.assignment.Owner[u] != next.Owner[u] {
				moved++
			}
		}
		m.logger.Info("assignment", "epoch", next.Epoch, "nodes", registered, "draining", draining, "owners_changed", moved, "moving", countMoving(next))
		m.poke()
	}
}

// nodeLists returns the ids of the registered nodes and of those of them
// that are draining, ascending: Plan's input.
func nodeLists(nodes map[int32]Node) (registered, draining []int32) {
	for id, n := range nodes {
		registered = append(registered, id)
		if n.Draining {
			draining = append(draining, id)
		}
	}
	slices.Sort(registered)
	slices.Sort(draining)
	return registered, draining
}

// warmTimeouts is the leader's bookkeeping of planned moves: since holds
// when the leader first saw each unit moving (next[u] not None), and a
// unit that has waited for its next owner longer than timeout is to be
// moved anyway (Plan's force). Units no longer moving are forgotten.
func warmTimeouts(next []int32, since map[int]time.Time, now time.Time, timeout time.Duration) map[int]bool {
	force := map[int]bool{}
	for u, n := range next {
		if n == None {
			delete(since, u)
			continue
		}
		s, ok := since[u]
		if !ok {
			since[u] = now
		} else if now.Sub(s) > timeout {
			force[u] = true
		}
	}
	return force
}

func countMoving(a Assignment) int {
	n := 0
	for _, x := range a.Next {
		if x != None {
			n++
		}
	}
	return n
}

// drainedSelf reports whether a draining node owns nothing any more in
// the last assignment read (or there is nobody to hand over to).
func (m *Member) drainedSelf(l *loopState) bool {
	return l.haveSt && drained(l.st, m.cfg.NodeID)
}

// drained reports whether draining node me is done in state st: it owns
// no unit, or there is no other live node to hand its units to.
func drained(st state, me int32) bool {
	if !slices.Contains(st.assignment.Owner, me) {
		return true
	}
	for id, n := range st.nodes {
		if id != me && !n.Draining {
			return false
		}
	}
	return true
}

func (m *Member) shutdownUnits(l *loopState) {
	for u := range l.held {
		m.units.Unload(u)
	}
	clear(l.held)
	// Let Loads and Preloads under way finish, so that nothing is loaded
	// after this.
	for len(l.busy) > 0 {
		r := <-l.results
		delete(l.busy, r.u)
		if !r.preload {
			m.units.Unload(r.u)
		}
	}
}

// Brokers returns every registered node, by id, as of the last read of
// the cluster: Join's, then the loop's (on every change and every tick).
func (m *Member) Brokers() []Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Node, 0, len(m.state.nodes))
	for _, n := range m.state.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	if len(out) == 0 { // none read: the node itself, registering again
		out = append(out, m.self())
	}
	return out
}

// Live returns the ids of the registered nodes, ascending.
func (m *Member) Live() []int32 {
	var ids []int32
	for _, n := range m.Brokers() {
		ids = append(ids, n.ID)
	}
	return ids
}

// Owner returns the registered node that owns unit u, if any.
func (m *Member) Owner(u int) (Node, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.state.assignment
	if u < 0 || u >= len(a.Owner) {
		return Node{}, false
	}
	n, ok := m.state.nodes[a.Owner[u]]
	return n, ok
}

// Leader returns the leader's node id, or None.
func (m *Member) Leader() int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state.leader == None && len(m.state.nodes) == 0 {
		return m.cfg.NodeID
	}
	return m.state.leader
}

// Assignment returns the last assignment read.
func (m *Member) Assignment() Assignment {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.assignment.clone()
}

// Leave hands this node's units off and leaves the cluster: it marks
// the registration draining, waits (up to ctx) until the leader has moved
// every unit to other nodes, warm, then stops serving, gives the
// leadership up and revokes the lease. Used on SIGTERM. It leaves in
// any case; the error says the handoff was cut short (ctx ended, or etcd
// could not be told), and the units not handed off move cold.
func (m *Member) Leave(ctx context.Context) error {
	m.draining.Store(true)
	n := m.self()
	b, _ := json.Marshal(n)
	c, cancel := m.reqCtx(ctx)
	_, err := m.cli.Put(c, m.nodeKey(m.cfg.NodeID), string(b), clientv3.WithLease(m.Lease()))
	cancel()
	if err != nil {
		err = fmt.Errorf("cluster: leaving without a handoff: mark draining: %w", err)
	} else {
		m.poke()
		err = m.waitDrained(ctx)
	}
	m.Close()
	return err
}

// waitDrained waits until the last state read shows no unit owned here
// (or nobody left to own them), or ctx ends.
func (m *Member) waitDrained(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		m.mu.Lock()
		st := m.state
		m.mu.Unlock()
		if drained(st, m.cfg.NodeID) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: leaving before every shard was handed off: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Close stops serving every unit and revokes the lease, so that the
// node's registration, leadership and shard owner keys go at once. It
// does not hand units off: Leave does.
func (m *Member) Close() {
	m.stopOne.Do(func() {
		m.cancel()
		if m.units != nil {
			<-m.stopped
		}
		m.done.Wait()
		c, cancel := context.WithTimeout(context.Background(), max(m.cfg.LeaseTTL/2, time.Second))
		defer cancel()
		if _, err := m.cli.Revoke(c, m.Lease()); err != nil {
			m.logger.Debug("revoke lease", "err", err)
		}
	})
}

// nodesRead reports what changed in the registrations since the last
// read (OnNodeEvent).
func (m *Member) nodesRead(nodes map[int32]Node, suspended bool) {
	m.mu.Lock()
	if m.lastReg == nil {
		m.lastReg = map[int32]Node{}
	}
	for id, n := range nodes {
		m.lastReg[id] = n
	}
	m.mu.Unlock()
	evs := nodeEvents(m.evNodes, nodes, m.seen, m.cfg.NodeID)
	m.evNodes = nodes
	for _, e := range evs {
		m.emit(e, nodes, suspended)
	}
}

// emit hands e to OnNodeEvent with the counts of nodes in each state and
// the time.
func (m *Member) emit(e observe.ClusterEvent, nodes map[int32]Node, suspended bool) {
	if m.cfg.OnNodeEvent == nil {
		return
	}
	e.Serving, e.Draining, e.Suspended = nodeCounts(nodes, m.cfg.NodeID, suspended)
	e.At = time.Now()
	m.cfg.OnNodeEvent(e)
}

// nodeEvents is what changed between two reads of the registrations,
// prev and next (by node id), as events in ascending node id: a node
// not in prev is joined, or rejoined if seen holds it (every id
// registered in an earlier read; nodeEvents adds next's); a node gone
// from next is lost; one registered again under another lease between
// the reads was lost and rejoined; a registration that turned draining
// (or is draining as it appears) is draining. me is this node (Self).
// The counts and the time are the caller's. Pure.
func nodeEvents(prev, next map[int32]Node, seen map[int32]bool, me int32) []observe.ClusterEvent {
	var ids []int32
	for id := range prev {
		ids = append(ids, id)
	}
	for id := range next {
		if _, ok := prev[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []observe.ClusterEvent
	ev := func(k observe.ClusterEventKind, n Node, reason string) {
		out = append(out, observe.ClusterEvent{Kind: k, Node: n.ID, Self: n.ID == me, Kafka: n.Kafka, Reason: reason})
	}
	for _, id := range ids {
		p, was := prev[id]
		n, is := next[id]
		switch {
		case was && !is:
			reason := "lease expired or revoked"
			if p.Draining {
				reason = "left after draining"
			}
			ev(observe.NodeLost, p, reason)
		case was && p.Lease != n.Lease:
			ev(observe.NodeLost, p, "registered again under a new lease")
			ev(observe.NodeRejoined, n, "")
		case !was && seen[id]:
			ev(observe.NodeRejoined, n, "")
		case !was:
			ev(observe.NodeJoined, n, "")
		}
		if is {
			seen[id] = true
			if n.Draining && (!was || !p.Draining || p.Lease != n.Lease) {
				ev(observe.NodeDraining, n, "")
			}
		}
	}
	return out
}

// nodeCounts counts the registered nodes serving (not draining) and
// draining, and this node (me) as suspended instead if it is.
func nodeCounts(nodes map[int32]Node, me int32, suspended bool) (serving, draining, susp int) {
	for id, n := range nodes {
		switch {
		case id == me && suspended:
		case n.Draining:
			draining++
		default:
			serving++
		}
	}
	if suspended {
		susp = 1
	}
	return serving, draining, susp
}

// Node states, as NodeStates reports them.
const (
	StateServing   = "serving"   // registered, serving its units
	StateDraining  = "draining"  // registered, handing its units off to leave
	StateSuspended = "suspended" // this node, which cannot renew its lease and serves nothing
	StateGone      = "gone"      // registered once, or owning units, and registered no longer
)

// NodeState is a node as this member last read the cluster.
type NodeState struct {
	Node
	State string
	// Leader: the node leads the cluster (decides the assignment).
	Leader bool
	// Units are the units the last assignment read gives the node.
	Units []int
}

// NodeStates returns every node this member knows of, by id: those
// registered in its last read of the cluster, those registered in an
// earlier read and gone since (their last registration), and those the
// assignment still names as owners without a registration.
func (m *Member) NodeStates() []NodeState {
	suspended := m.suspended(time.Now())
	m.mu.Lock()
	defer m.mu.Unlock()
	byID := map[int32]*NodeState{}
	get := func(id int32) *NodeState {
		ns := byID[id]
		if ns == nil {
			ns = &NodeState{Node: Node{ID: id}, State: StateGone}
			if n, ok := m.lastReg[id]; ok {
				ns.Node = n
			}
			byID[id] = ns
		}
		return ns
	}
	for id := range m.lastReg {
		get(id)
	}
	nodes := m.state.nodes
	if len(nodes) == 0 { // none read yet: the node itself, registering
		nodes = map[int32]Node{m.cfg.NodeID: m.self()}
	}
	for id, n := range nodes {
		ns := get(id)
		ns.Node, ns.State = n, StateServing
		switch {
		case n.Draining:
			ns.State = StateDraining
		case id == m.cfg.NodeID && suspended:
			ns.State = StateSuspended
		}
	}
	for u, id := range m.state.assignment.Owner {
		if id != None {
			ns := get(id)
			ns.Units = append(ns.Units, u)
		}
	}
	if l := m.state.leader; l != None {
		get(l).Leader = true
	}
	out := make([]NodeState, 0, len(byID))
	for _, ns := range byID {
		out = append(out, *ns)
	}
	slices.SortFunc(out, func(a, b NodeState) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
