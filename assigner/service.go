// Package assigner serves kafka-assigner's gRPC contract
// (kafka_assigner.v1.KafkaAssigner) on Cohort's coordinator runtime: the
// pure machine is coordinator/handoff, run by a coordinator.ShardSet on the
// node's store, so that every owner and handoff is durable before a
// consumer is told about it. This package holds the gRPC side only: the
// streams, the mapping of errors to statuses, and finding partition
// counts.
package assigner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
	"github.com/cohort-dev/cohort/coordinator"
	"github.com/cohort-dev/cohort/coordinator/handoff"
	"github.com/cohort-dev/cohort/observe"
	"github.com/cohort-dev/cohort/record"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// GroupMetadataKey is the gRPC metadata key that names the group; without
// it a call is for Config.DefaultGroup (kafka-assigner has one group per
// deployment, Cohort many).
const GroupMetadataKey = "cohort-group"

// Config configures a Service.
type Config struct {
	// DefaultGroup is the group of calls without GroupMetadataKey
	// (--assigner-default-group, default "default").
	DefaultGroup string
	// LeaseTTL is how long a consumer whose stream closed keeps its
	// partitions (--assigner-lease-ttl, default 30 s).
	LeaseTTL time.Duration
	// Debounce is how long membership changes settle before a rebalance
	// (--assigner-rebalance-debounce, default 1 s).
	Debounce time.Duration
	// GrowthCheck is how often the partition counts of registered topics
	// are looked up again, so that added partitions are balanced. Default
	// 10 s.
	GrowthCheck time.Duration
	// Partitions returns the partition count of a tenant's topic. An
	// error whose status code is set (status.Error) is returned to the
	// caller as is. Required.
	Partitions func(ctx context.Context, tenant, topic string) (int32, error)
	// Tenant, if set, returns the organisation the call of ctx acts for:
	// its principal's, or, for a call relayed by another node, the one
	// that node names in OrgMetadataKey (an error if it may not: a
	// PERMISSION_DENIED status). Each organisation's groups are its own
	// (handoff.ScopedGroup). Nil: every call is the default
	// organisation's.
	Tenant func(ctx context.Context) (string, error)
	// Store holds the records. Required.
	Store store.Store
	// Clock; nil means the wall clock.
	Clock coordinator.Clock
	// Logger; nil discards.
	Logger *slog.Logger
	// Observer receives the assigner shard's events (batches written,
	// loads). Nil: none.
	Observer observe.Observer
	// Route, if set, says where the service's shard is served (cluster
	// mode): here (local), at the gRPC address addr of another node, or
	// nowhere right now (ok false). Calls that arrive where the shard is
	// not served are relayed to addr (relay.go). Nil: always here.
	Route func() (addr string, local, ok bool)
	// DialOptions are how relayed calls reach the other node (its
	// transport credentials and per-call token). Nil: plaintext.
	DialOptions []grpc.DialOption
	// Authorize, if set, reports whether the caller of ctx (the
	// principal the gRPC server's authentication put there) may READ the
	// consumer group group: what Kafka asks of a consumer that joins a
	// group, asked here of every call (Register, PartitionReady,
	// PartitionReleased), which acts in the group as a member of it. A
	// refused call gets PERMISSION_DENIED. A relayed call is checked on
	// both nodes, on the second as the relaying node's principal. Nil:
	// every call allowed (authorization off).
	Authorize func(ctx context.Context, group string) bool
	// Standby starts the service without its shard: the caller Loads it
	// when this node owns it (cluster mode); meanwhile calls get
	// UNAVAILABLE. False: the shard is loaded at Start.
	Standby bool
}

func (c *Config) defaults() {
	if c.DefaultGroup == "" {
		c.DefaultGroup = "default"
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.Debounce <= 0 {
		c.Debounce = time.Second
	}
	if c.GrowthCheck <= 0 {
		c.GrowthCheck = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Service is the KafkaAssigner gRPC service.
type Service struct {
	kafkaassignerpb.UnimplementedKafkaAssignerServer
	cfg   Config
	shard *coordinator.ShardSet // holds record.AssignerShard

	nextStream atomic.Uint64
	mu         sync.Mutex
	boxes      map[uint64]*outbox
	topics     map[[2]string]int32 // (group, topic) → partitions last told
	stop       chan struct{}
	stopped    sync.WaitGroup
	closeOnce  sync.Once
	relay      relay
}

var errUnavailable = status.Error(codes.Unavailable, "the assigner's shard could not complete the call (store write failed or shard reloading); retry")

// Start loads the assigner's shard from the store and starts the service.
func Start(cfg Config) (*Service, error) {
	cfg.defaults()
	if cfg.Store == nil || cfg.Partitions == nil {
		return nil, errors.New("assigner: Config needs Store and Partitions")
	}
	s := &Service{cfg: cfg, boxes: map[uint64]*outbox{}, topics: map[[2]string]int32{}, stop: make(chan struct{})}
	s.relay.opts = cfg.DialOptions
	// The same shard set as the group coordinator's: a failed write
	// gives the shard up and loads it again (its Reset push then ends
	// every stream, and consumers register again).
	s.shard = coordinator.NewShardSet(coordinator.ShardSetConfig{
		Runtime: func(uint16) coordinator.RuntimeConfig {
			return coordinator.RuntimeConfig{
				Store: cfg.Store,
				New: func() coordinator.Machine {
					return handoff.New(handoff.Config{Shard: record.AssignerShard, LeaseTTL: cfg.LeaseTTL, Debounce: cfg.Debounce}).Machine()
				},
				Fail: func(coordinator.Request, int16) coordinator.Reply { return coordinator.Reply{Out: errUnavailable} },
				Push: s.push,
			}
		},
		Observer: cfg.Observer,
		Clock:    cfg.Clock,
		Logger:   cfg.Logger.With("component", "assigner"),
	})
	if !cfg.Standby {
		if err := s.shard.Load(record.AssignerShard); err != nil {
			return nil, fmt.Errorf("assigner: %w", err)
		}
	}
	s.stopped.Go(s.watchGrowth)
	return s, nil
}

// Load loads the service's shard and serves it (cluster mode: this node
// owns it now), returning once it serves.
func (s *Service) Load() error { return s.shard.Load(record.AssignerShard) }

// Unload stops serving the shard: calls get UNAVAILABLE and streams end
// with UNAVAILABLE, so that consumers register again and reach the node
// that serves it next.
func (s *Service) Unload() {
	s.shard.Unload(record.AssignerShard)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.boxes {
		b.put(moved{})
	}
}

// Holds reports whether the shard is served (or loading) here.
func (s *Service) Holds() bool { return slices.Contains(s.shard.Held(), record.AssignerShard) }

// AddTo adds the service to a gRPC server.
func (s *Service) AddTo(srv grpc.ServiceRegistrar) {
	kafkaassignerpb.RegisterKafkaAssignerServer(srv, s)
}

// Close stops the service's shard; open streams end. Calling it again
// does nothing: a node that fails to start and a node that shuts down
// may both reach it.
func (s *Service) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.stopped.Wait()
		s.shard.Close()
		s.mu.Lock()
		for _, b := range s.boxes {
			b.put(handoff.Close{Reason: "the assigner is shutting down"})
		}
		s.mu.Unlock()
		s.relay.close()
	})
}

// moved ends a stream whose shard this node no longer serves.
type moved struct{}

// outbox queues what the shard pushes to one stream: unbounded, so the
// shard's loop never waits for a slow consumer.
type outbox struct {
	mu   sync.Mutex
	msgs []any
	wake chan struct{}
}

func (b *outbox) put(m any) {
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *outbox) take() []any {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.msgs
	b.msgs = nil
	return m
}

func (s *Service) push(p coordinator.Push) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, reset := p.Msg.(handoff.Reset); reset {
		for _, b := range s.boxes {
			b.put(handoff.Close{Reason: "the assigner reloaded its state from the store; register again"})
		}
		return
	}
	if b := s.boxes[p.Stream]; b != nil {
		b.put(p.Msg)
	}
}

func (s *Service) group(ctx context.Context) string {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(GroupMetadataKey); len(v) > 0 && v[0] != "" {
			return v[0]
		}
	}
	return s.cfg.DefaultGroup
}

// tenant is the organisation the call acts for (Config.Tenant).
func (s *Service) tenant(ctx context.Context) (string, error) {
	if s.cfg.Tenant == nil {
		return "", nil
	}
	return s.cfg.Tenant(ctx)
}

// authorized returns the call's group as the shard names it (its
// organisation's: handoff.ScopedGroup), or PERMISSION_DENIED when its
// caller may not READ it (Config.Authorize).
func (s *Service) authorized(ctx context.Context) (string, error) {
	group := s.group(ctx)
	tenant, err := s.tenant(ctx)
	if err != nil {
		return "", err
	}
	if s.cfg.Authorize != nil && !s.cfg.Authorize(ctx, group) {
		return "", status.Errorf(codes.PermissionDenied, "not authorized to READ consumer group %q (set with the %s metadata key): a consumer of the assignment service needs an ACL allowing it READ on the group, as a Kafka consumer does", group, GroupMetadataKey)
	}
	return handoff.ScopedGroup(tenant, group), nil
}

// submit runs cmd on the shard and waits for its answer.
func (s *Service) submit(ctx context.Context, cmd any) error {
	ch, code := s.shard.Submit(ctx, record.AssignerShard, coordinator.Request{Cmd: cmd})
	if code != 0 {
		return errUnavailable
	}
	select {
	case r := <-ch:
		if r.Out == nil {
			return nil
		}
		return toStatus(r.Out)
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func toStatus(out any) error {
	err, ok := out.(error)
	if !ok {
		return status.Errorf(codes.Internal, "unexpected answer %v", out)
	}
	var e *handoff.Error
	if errors.As(err, &e) {
		switch e.Code {
		case handoff.InvalidArgument:
			return status.Error(codes.InvalidArgument, e.Msg)
		case handoff.NotFound:
			return status.Error(codes.NotFound, e.Msg)
		case handoff.FailedPrecondition:
			return status.Error(codes.FailedPrecondition, e.Msg)
		}
	}
	if _, isStatus := status.FromError(err); isStatus {
		return err
	}
	return status.Error(codes.Internal, err.Error())
}

// Register opens a consumer's command stream.
func (s *Service) Register(req *kafkaassignerpb.RegisterRequest, stream grpc.ServerStreamingServer[kafkaassignerpb.AssignmentCommand]) error {
	ctx := stream.Context()
	group, err := s.authorized(ctx)
	if err != nil {
		return err
	}
	if cl, out, local, err := s.upstream(ctx); err != nil {
		return err
	} else if !local {
		return s.relayRegister(out, cl, req, stream)
	}
	if req.GetConsumerName() == "" {
		return status.Error(codes.InvalidArgument, "consumer_name is empty")
	}
	if req.GetTopic() == "" {
		return status.Error(codes.InvalidArgument, "topic is empty")
	}
	tenant, _ := handoff.SplitGroup(group)
	n, err := s.cfg.Partitions(ctx, tenant, req.GetTopic())
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Errorf(codes.NotFound, "topic %s: %v", req.GetTopic(), err)
	}
	id := s.nextStream.Add(1)
	box := &outbox{wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.boxes[id] = box
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.boxes, id)
		s.mu.Unlock()
		// The consumer keeps its partitions for its lease.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.submit(ctx, handoff.DisconnectCmd{Group: group, Consumer: req.GetConsumerName(), Stream: handoff.StreamID(id)})
	}()
	if err := s.submit(ctx, handoff.RegisterCmd{Group: group, Consumer: req.GetConsumerName(), Topic: req.GetTopic(), Partitions: n, Stream: handoff.StreamID(id)}); err != nil {
		return err
	}
	s.mu.Lock()
	if n > s.topics[[2]string{group, req.GetTopic()}] {
		s.topics[[2]string{group, req.GetTopic()}] = n
	}
	s.mu.Unlock()
	for {
		for _, m := range box.take() {
			switch m := m.(type) {
			case handoff.Send:
				for _, c := range m.Commands {
					if err := stream.Send(toProto(c)); err != nil {
						return err
					}
				}
			case handoff.Close:
				return status.Error(codes.Aborted, m.Reason)
			case moved:
				return status.Error(codes.Unavailable, "the assignment service moved to another node; register again")
			}
		}
		select {
		case <-box.wake:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

func tp(p handoff.TP) *kafkaassignerpb.TopicPartition {
	return &kafkaassignerpb.TopicPartition{Topic: p.Topic, Partition: uint32(p.Partition)}
}

func toProto(c handoff.Command) *kafkaassignerpb.AssignmentCommand {
	switch c.Kind {
	case handoff.Warm:
		return &kafkaassignerpb.AssignmentCommand{Command: &kafkaassignerpb.AssignmentCommand_Warm{Warm: &kafkaassignerpb.WarmPartition{Partition: tp(c.Partition), CurrentOwner: c.Peer}}}
	case handoff.Release:
		return &kafkaassignerpb.AssignmentCommand{Command: &kafkaassignerpb.AssignmentCommand_Release{Release: &kafkaassignerpb.ReleasePartition{Partition: tp(c.Partition), NewOwner: c.Peer}}}
	}
	u := &kafkaassignerpb.AssignmentUpdate{Assigned: []*kafkaassignerpb.TopicPartition{}, Unassigned: []*kafkaassignerpb.TopicPartition{}}
	for _, p := range c.Assigned {
		u.Assigned = append(u.Assigned, tp(p))
	}
	for _, p := range c.Unassigned {
		u.Unassigned = append(u.Unassigned, tp(p))
	}
	return &kafkaassignerpb.AssignmentCommand{Command: &kafkaassignerpb.AssignmentCommand_Assignment{Assignment: u}}
}

func fromProto(p *kafkaassignerpb.TopicPartition) (handoff.TP, error) {
	if p == nil || p.GetTopic() == "" {
		return handoff.TP{}, status.Error(codes.InvalidArgument, "partition is missing or names no topic")
	}
	if p.GetPartition() > 1<<31-1 {
		return handoff.TP{}, status.Errorf(codes.InvalidArgument, "partition %d is out of range", p.GetPartition())
	}
	return handoff.TP{Topic: p.GetTopic(), Partition: int32(p.GetPartition())}, nil
}

// PartitionReady completes a warming handoff.
func (s *Service) PartitionReady(ctx context.Context, req *kafkaassignerpb.PartitionReadyRequest) (*kafkaassignerpb.PartitionReadyResponse, error) {
	group, err := s.authorized(ctx)
	if err != nil {
		return nil, err
	}
	if cl, out, local, err := s.upstream(ctx); err != nil {
		return nil, err
	} else if !local {
		resp, err := cl.PartitionReady(out, req)
		if err != nil {
			return nil, relayStatus(err)
		}
		return resp, nil
	}
	p, err := fromProto(req.GetPartition())
	if err != nil {
		return nil, err
	}
	if err := s.submit(ctx, handoff.ReadyCmd{Group: group, Consumer: req.GetConsumerName(), Partition: p}); err != nil {
		return nil, err
	}
	return &kafkaassignerpb.PartitionReadyResponse{}, nil
}

// PartitionReleased ends a complete handoff.
func (s *Service) PartitionReleased(ctx context.Context, req *kafkaassignerpb.PartitionReleasedRequest) (*kafkaassignerpb.PartitionReleasedResponse, error) {
	group, err := s.authorized(ctx)
	if err != nil {
		return nil, err
	}
	if cl, out, local, err := s.upstream(ctx); err != nil {
		return nil, err
	} else if !local {
		resp, err := cl.PartitionReleased(out, req)
		if err != nil {
			return nil, relayStatus(err)
		}
		return resp, nil
	}
	p, err := fromProto(req.GetPartition())
	if err != nil {
		return nil, err
	}
	if err := s.submit(ctx, handoff.ReleasedCmd{Group: group, Consumer: req.GetConsumerName(), Partition: p}); err != nil {
		return nil, err
	}
	return &kafkaassignerpb.PartitionReleasedResponse{}, nil
}

// watchGrowth looks up the partition counts of registered topics every
// GrowthCheck and tells the shard of any increase.
func (s *Service) watchGrowth() {
	t := time.NewTicker(s.cfg.GrowthCheck)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		known := make(map[[2]string]int32, len(s.topics))
		for k, v := range s.topics {
			known[k] = v
		}
		s.mu.Unlock()
		for k, was := range known {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			tenant, _ := handoff.SplitGroup(k[0])
			n, err := s.cfg.Partitions(ctx, tenant, k[1])
			if err == nil && n > was {
				err = s.submit(ctx, handoff.PartitionsCmd{Group: k[0], Topic: k[1], Partitions: n})
				if err == nil {
					s.mu.Lock()
					s.topics[k] = max(s.topics[k], n)
					s.mu.Unlock()
				}
			}
			cancel()
			if err != nil {
				tenant, group := handoff.SplitGroup(k[0])
				s.cfg.Logger.Warn("assigner: partition count check failed", "org", security.OrgName(tenant), "group", group, "topic", k[1], "err", err)
			}
		}
	}
}
