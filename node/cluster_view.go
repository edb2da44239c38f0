package node

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/cohort-dev/cohort/admin"
	"github.com/cohort-dev/cohort/cluster"
)

// clusterSource is what the admin API knows of the cluster (cluster
// mode): the nodes as this node's membership last read them, and which
// node coordinates a group.
type clusterSource struct{ n *Node }

var _ admin.ClusterSource = clusterSource{}

func (c clusterSource) Self() int32 { return c.n.member.NodeID() }

func (c clusterSource) Nodes() []admin.ClusterNode {
	shards := c.n.groups.Shards()
	self := c.n.member.NodeID()
	var out []admin.ClusterNode
	for _, ns := range c.n.member.NodeStates() {
		cn := admin.ClusterNode{
			ID: ns.ID, State: nodeStates[ns.State], Self: ns.ID == self, Leader: ns.Leader,
			KafkaAddr: ns.Kafka, AdminURL: ns.Admin, Rack: ns.Rack, Shards: []int{},
		}
		for _, u := range ns.Units {
			if u < shards { // the coordinator's units come first
				cn.Shards = append(cn.Shards, u)
			}
		}
		out = append(out, cn)
	}
	return out
}

func (c clusterSource) Assignment() (epoch int64, moving int) {
	a := c.n.member.Assignment()
	for _, next := range a.Next {
		if next != cluster.None {
			moving++
		}
	}
	return a.Epoch, moving
}

func (c clusterSource) CoordinatorOf(tenant, group string) (int32, bool) {
	owner, ok := c.n.member.Owner(c.n.groups.ShardFor(tenant, group))
	return owner.ID, ok
}

// nodeStates are the admin API's names of the cluster's node states.
var nodeStates = map[string]string{
	cluster.StateServing: admin.NodeServing, cluster.StateDraining: admin.NodeDraining,
	cluster.StateSuspended: admin.NodeSuspended, cluster.StateGone: admin.NodeGone,
}

// peerHTTP is the client the admin API asks other nodes' admin APIs
// with: over TLS when this node's admin listener is (every node of a
// cluster is configured alike), trusting the client CAs as the Kafka
// peers do; it presents no certificate, so that a peer never takes a
// caller's request for the node's own (admin/cluster.go).
func (n *Node) peerHTTP() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 4
	t.ResponseHeaderTimeout = 10 * time.Second
	if n.cfg.HTTPTLS {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: n.clientCAs}
	}
	return &http.Client{Transport: t}
}
