package assigner

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cohort-dev/cohort/assigner/kafkaassignerpb"
)

// Cluster mode: the service's shard is served by one node, and consumers
// may be connected to any (kafka-assigner's "relay": its consumers reach
// the service through a load balancer). A call on another node is relayed
// to the node that serves the shard: a Register stream is proxied both
// ways for as long as both ends last, PartitionReady and
// PartitionReleased are forwarded. When the serving node goes away, or
// the shard moves, relayed streams end with UNAVAILABLE and consumers
// register again, on whatever node they reach; they keep their
// partitions for their lease meanwhile.

// relayedKey marks a relayed call: it is served where it arrives, or
// refused, never relayed again (two nodes with different views of the
// owner would otherwise bounce it between them).
const relayedKey = "cohort-relayed"

// OrgMetadataKey carries, on a call one node relays to another, the
// organisation the call acts for (Config.Tenant believes it only from a
// node).
const OrgMetadataKey = "cohort-org"

// Relayed reports whether the call of ctx was relayed by another node.
func Relayed(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(relayedKey)) > 0
}

// relay holds the connections to the other nodes.
type relay struct {
	// opts are Config.DialOptions.
	opts  []grpc.DialOption
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

func (r *relay) conn(addr string) (*grpc.ClientConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.conns[addr]; c != nil {
		return c, nil
	}
	opts := r.opts
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	c, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, err
	}
	if r.conns == nil {
		r.conns = map[string]*grpc.ClientConn{}
	}
	r.conns[addr] = c
	return c, nil
}

func (r *relay) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

// upstream returns a client of the node that serves the shard and the
// context to call it with, or local true when this node serves it (or
// must answer itself: a relayed call).
func (s *Service) upstream(ctx context.Context) (cl kafkaassignerpb.KafkaAssignerClient, out context.Context, local bool, err error) {
	if s.cfg.Route == nil {
		return nil, nil, true, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get(relayedKey)) > 0 {
		return nil, nil, true, nil
	}
	addr, isLocal, ok := s.cfg.Route()
	switch {
	case isLocal:
		return nil, nil, true, nil
	case !ok:
		return nil, nil, false, status.Error(codes.Unavailable, "no node serves the assignment service right now (it is moving between nodes); retry")
	}
	c, err := s.relay.conn(addr)
	if err != nil {
		return nil, nil, false, status.Errorf(codes.Unavailable, "relay to %s: %v", addr, err)
	}
	// The serving node sees this node as the caller: the organisation
	// the call acts for goes along (whatever the client itself sent
	// under that key is dropped).
	tenant, err := s.tenant(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	md = metadata.Join(md.Copy(), metadata.Pairs(relayedKey, "1"))
	md.Delete(OrgMetadataKey)
	if tenant != "" {
		md.Set(OrgMetadataKey, tenant)
	}
	out = metadata.NewOutgoingContext(ctx, md)
	return kafkaassignerpb.NewKafkaAssignerClient(c), out, false, nil
}

// relayStatus turns an error from the serving node into what the
// consumer is told: its own status when it has one (an invalid argument
// stays one), UNAVAILABLE when the node could not be reached.
func relayStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Errorf(codes.Unavailable, "relay: %v", err)
}

// relayRegister proxies a Register stream to the serving node.
func (s *Service) relayRegister(ctx context.Context, cl kafkaassignerpb.KafkaAssignerClient, req *kafkaassignerpb.RegisterRequest, stream grpc.ServerStreamingServer[kafkaassignerpb.AssignmentCommand]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	up, err := cl.Register(ctx, req)
	if err != nil {
		return relayStatus(err)
	}
	for {
		cmd, err := up.Recv()
		switch {
		case errors.Is(err, io.EOF):
			return status.Error(codes.Unavailable, "the node serving the assignment service ended the stream; register again")
		case err != nil:
			if stream.Context().Err() != nil {
				return status.FromContextError(stream.Context().Err()).Err()
			}
			if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
				if st.Code() == codes.Canceled || st.Code() == codes.Aborted {
					// The serving node went away or gave the shard up.
					return status.Errorf(codes.Unavailable, "the node serving the assignment service ended the stream (%s); register again", st.Message())
				}
				return err
			}
			return relayStatus(err)
		}
		if err := stream.Send(cmd); err != nil {
			return err
		}
	}
}
