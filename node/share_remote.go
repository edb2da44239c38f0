package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/cohort-dev/cohort/kafka"
)

// shareRemote is the share coordinator's way to the share-state shards
// other nodes of the cluster serve (sharecoord.Remote): the owner of
// each shard's unit, and the peers' client to carry the commands in
// (kafka.ShareForwardRequest).
type shareRemote struct{ n *Node }

// Owner implements sharecoord.Remote.
func (r shareRemote) Owner(i int) (int32, bool) {
	nd, ok := r.n.member.Owner(r.n.kafka.ShareUnit(i))
	if !ok || nd.ID == r.n.member.NodeID() {
		return 0, false
	}
	return nd.ID, true
}

// Send implements sharecoord.Remote.
func (r shareRemote) Send(ctx context.Context, node int32, tenant string, cmd []byte) ([]byte, error) {
	resp, err := r.n.peers.request(ctx, node, kafka.ShareForwardRequest(tenant, cmd))
	if err != nil {
		return nil, err
	}
	answer, ok := kafka.ShareForwardAnswer(resp)
	if !ok {
		return nil, fmt.Errorf("node %d: %w", node, errNoShareAnswer)
	}
	return answer, nil
}

var errNoShareAnswer = errors.New("no share-state answer (the command was refused)")
