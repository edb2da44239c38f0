package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cohort-dev/cohort/coordinator/txn"
	"github.com/cohort-dev/cohort/offsetstopic"
	"github.com/cohort-dev/cohort/security"
	"github.com/cohort-dev/cohort/topics"
	"github.com/cohort-dev/cohort/txncoord"
)

// peers is how a node of a cluster sends Kafka requests to the others,
// as Kafka's brokers do between themselves (its transaction markers,
// KIP-890's produce verification): over the first PLAINTEXT or SSL
// listener, the same-named listener of the other node, with the node's
// own certificate on SSL. The other node authorizes the node's
// principal (User:ANONYMOUS on PLAINTEXT, the certificate's subject on
// SSL): with --authorizer on, make it a super user, as Kafka's
// inter-broker principal (docs/security.md). A SASL-only node has no
// peer client: its markers for other nodes fail, and are retried.
type peers struct {
	n *Node

	mu      sync.Mutex
	clients map[int32]peerClient
	closed  bool
}

type peerClient struct {
	addr string
	cl   *kgo.Client
}

// listener returns the listener peer requests go through, or false.
func (p *peers) listener() (name string, proto security.Protocol, ok bool) {
	for _, l := range p.n.listeners {
		if l.Protocol == security.Plaintext || l.Protocol == security.SSL {
			return l.Name, l.Protocol, true
		}
	}
	return "", "", false
}

// client returns the client of node id, making one when the node's
// address changed (it restarted elsewhere).
func (p *peers) client(id int32) (*kgo.Client, error) {
	name, proto, ok := p.listener()
	if !ok {
		return nil, errors.New("no PLAINTEXT or SSL listener to reach other nodes through")
	}
	addr := ""
	for _, b := range p.n.member.Brokers() {
		if b.ID == id {
			addr = b.Kafka
			if a, ok := b.Listeners[name]; ok {
				addr = a
			}
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("node %d is not registered", id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("node closing")
	}
	if c, ok := p.clients[id]; ok {
		if c.addr == addr {
			return c.cl, nil
		}
		c.cl.Close()
		delete(p.clients, id)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("cohort-node-%d", p.n.member.NodeID()))}
	if proto == security.SSL {
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{
			MinVersion:           tls.VersionTLS12,
			RootCAs:              p.n.clientCAs,
			GetClientCertificate: p.n.certs.GetClientCertificate,
		}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	if p.clients == nil {
		p.clients = map[int32]peerClient{}
	}
	p.clients[id] = peerClient{addr, cl}
	return cl, nil
}

// request sends req to node id (its seed broker: the client learns no
// other) and returns the answer.
func (p *peers) request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	cl, err := p.client(id)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", id, err)
	}
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", id, err)
	}
	return resp, nil
}

// close closes every client.
func (p *peers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.clients {
		c.cl.Close()
	}
	p.clients = nil
}

// markers is the transaction coordinator's txncoord.Remote: each
// partition's markers go to its leader, each group shard's to its
// owner, one WriteTxnMarkers per node, all at once. A partition's
// outcome as WriteLocal's: written, or its topic gone, or a newer
// epoch's marker there, is done; anything else fails the call, which
// the coordinator tries again after a back-off (with the cluster's state
// read anew: a moved shard's new owner).
func (p *peers) markers(ctx context.Context, m txncoord.Marker) error {
	self := p.n.member.NodeID()
	byNode := map[int32]*kmsg.WriteTxnMarkersRequestMarker{}
	add := func(node int32, topic string, part int32) {
		mk := byNode[node]
		if mk == nil {
			v := kmsg.NewWriteTxnMarkersRequestMarker()
			v.ProducerID, v.ProducerEpoch, v.Committed = m.ProducerID, m.ProducerEpoch, m.Commit
			mk = &v
			byNode[node] = mk
		}
		if n := len(mk.Topics); n == 0 || mk.Topics[n-1].Topic != topic {
			mk.Topics = append(mk.Topics, kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: topic})
		}
		t := &mk.Topics[len(mk.Topics)-1]
		t.Partitions = append(t.Partitions, part)
	}
	var errs []error
	for _, tp := range m.Partitions {
		t := p.n.topics.Topic(tp.Topic)
		if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Leaders) {
			continue // deleted meanwhile
		}
		add(t.Leaders[tp.Partition], tp.Topic, tp.Partition)
	}
	for _, shard := range m.GroupShards {
		owner, ok := p.n.member.Owner(shard)
		if !ok {
			errs = append(errs, fmt.Errorf("group shard %d has no owner", shard))
			continue
		}
		add(owner.ID, offsetstopic.Name, int32(shard))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for node, mk := range byNode {
		wg.Go(func() {
			err := p.sendMarker(ctx, node, self, *mk)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sendMarker writes one node's share of a transaction's markers: here
// through WriteLocal when the node is this one (no network hop: the
// leader or owner changed since the coordinator looked), else with a
// WriteTxnMarkers.
func (p *peers) sendMarker(ctx context.Context, node, self int32, mk kmsg.WriteTxnMarkersRequestMarker) error {
	if node == self {
		local := txncoord.Marker{ProducerID: mk.ProducerID, ProducerEpoch: mk.ProducerEpoch, Commit: mk.Committed}
		for _, t := range mk.Topics {
			for _, part := range t.Partitions {
				if t.Topic == offsetstopic.Name {
					local.GroupShards = append(local.GroupShards, int(part))
				} else {
					local.Partitions = append(local.Partitions, txn.TP{Topic: t.Topic, Partition: part})
				}
			}
		}
		partErrs, shardErrs := txncoord.WriteLocal(ctx, p.n.topics, p.n.groups, local)
		var errs []error
		for _, err := range append(partErrs, shardErrs...) {
			if err != nil && !errors.Is(err, txncoord.ErrUnknownPartition) && !errors.Is(err, topics.ErrInvalidProducerEpoch) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Markers = []kmsg.WriteTxnMarkersRequestMarker{mk}
	kresp, err := p.request(ctx, node, req)
	if err != nil {
		return fmt.Errorf("write txn markers: %w", err)
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	var errs []error
	for _, rm := range resp.Markers {
		for _, t := range rm.Topics {
			for _, part := range t.Partitions {
				switch part.ErrorCode {
				case 0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidProducerEpoch.Code:
				default:
					errs = append(errs, fmt.Errorf("write txn markers: node %d: %s/%d: %w", node, t.Topic, part.Partition, kerr.ErrorForCode(part.ErrorCode)))
				}
			}
		}
	}
	if len(resp.Markers) == 0 {
		errs = append(errs, fmt.Errorf("write txn markers: node %d answered no marker", node))
	}
	return errors.Join(errs...)
}
