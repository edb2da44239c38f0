package kafka

import (
	"cmp"
	"context"
	"slices"
	"sort"

	"github.com/cohort-dev/cohort/topics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerFunc serves one decoded request. It runs on the connection's
// reader, in request order, so the order-sensitive part of a request (a
// produce's append, which fixes the order idempotent sequences are checked
// in) happens here. It returns the rest: a function the connection's writer
// calls, in order, to get the response. Work that waits (an fsync, a long
// poll) belongs in that function. nil means no response is sent.
//
// ctx is the request's: the connection's context as the observer's
// RequestReceived returned it. A handler passes it on to what it calls for
// the request (the coordinator); its cancellation when the client hangs up
// never withdraws a request (see conn.ctx).
type handlerFunc func(ctx context.Context, s *Server, hdr *reqHeader, req kmsg.Request) func() kmsg.Response

type handler struct {
	min, max int16
	fn       handlerFunc
}

// handlers maps each served API key to its versions. Each is registered by
// the file for its key; ApiVersions advertises exactly these.
var handlers = map[int16]handler{}

func register(key kmsg.Key, min, max int16, fn handlerFunc) {
	if req := kmsg.RequestForKey(key.Int16()); req == nil || req.MaxVersion() < max {
		panic("kafka: kmsg cannot encode " + key.Name() + " at the registered version")
	}
	handlers[key.Int16()] = handler{min: min, max: max, fn: fn}
}

// done wraps a response that is ready now.
func done(resp kmsg.Response) func() kmsg.Response {
	return func() kmsg.Response { return resp }
}

// supportedKeys returns the served API keys in ascending order.
func supportedKeys() []int16 {
	keys := make([]int16, 0, len(handlers))
	for k := range handlers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// errPtr returns a pointer to msg, for nullable error messages.
func errPtr(msg string) *string { return &msg }

// partitionOf returns partition p of t, or the error code Kafka gives for
// an unknown topic (UNKNOWN_TOPIC_ID when asked by id) or partition, or
// NOT_LEADER_OR_FOLLOWER (code 6, kerr's NotLeaderForPartition, its name
// before Kafka 2.6) for a partition another node leads. A partition
// this node leads but could not open is KAFKA_STORAGE_ERROR, which clients
// retry here.
func (s *Server) partitionOf(t *topics.Topic, p int32, byID bool) (*topics.Partition, int16) {
	switch {
	case t == nil && byID:
		return nil, kerr.UnknownTopicID.Code
	case t == nil || p < 0 || int(p) >= len(t.Partitions):
		return nil, kerr.UnknownTopicOrPartition.Code
	case t.Partitions[p] == nil && t.Leaders[p] == s.cluster.Self():
		return nil, kerr.KafkaStorageError.Code
	case t.Partitions[p] == nil:
		return nil, kerr.NotLeaderForPartition.Code
	}
	return t.Partitions[p], 0
}

// leaderEpochCode checks a request's CurrentLeaderEpoch against the
// partition's, as Kafka's Partition.checkCurrentLeaderEpoch: -1 (none)
// passes; an older one is FENCED_LEADER_EPOCH (the client's metadata is
// stale); a newer one UNKNOWN_LEADER_EPOCH (we have not caught up).
func leaderEpochCode(requested, current int32) int16 {
	switch {
	case requested < 0:
		return 0
	case requested < current:
		return kerr.FencedLeaderEpoch.Code
	case requested > current:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}

// leaders collects the brokers named in CurrentLeader hints (KIP-951): a
// NOT_LEADER_OR_FOLLOWER answer names the partition's live leader, and the
// response lists its endpoint, so that the client need not refresh its
// metadata first.
type leaders struct {
	s *Server
	// listener is the name of the listener the request came on: the
	// endpoints are that listener's.
	listener string
	brokers  []Broker // sorted by id, each once, at the listener's endpoint
}

// of returns the live leader of partition p of t, recording it for
// endpoints.
func (l *leaders) of(t *topics.Topic, p int32) (Broker, bool) {
	if t == nil || p < 0 || int(p) >= len(t.Leaders) {
		return Broker{}, false
	}
	b, ok := l.s.broker(t.Leaders[p])
	if !ok {
		return Broker{}, false
	}
	l.add(b)
	return b, true
}

// add records b for endpoints.
func (l *leaders) add(b Broker) {
	b.Host, b.Port = b.at(l.listener)
	i, found := slices.BinarySearchFunc(l.brokers, b.NodeID, func(x Broker, id int32) int { return cmp.Compare(x.NodeID, id) })
	if !found {
		l.brokers = slices.Insert(l.brokers, i, b)
	}
}
