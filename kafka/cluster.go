package kafka

// The cluster the broker APIs describe. A single node is one broker that
// leads every partition, is the controller and coordinates every group;
// in cluster mode (Config.Cluster) the nodes share the topic catalog, each
// leads (and alone stores) some partitions and owns some coordinator
// shards, and every node answers Metadata and FindCoordinator for all of
// them so that clients go to the right one.

// Broker is one live node as clients see it.
type Broker struct {
	NodeID int32
	// Host and Port are the broker's default address: what a request is
	// given when the broker has no endpoint for its listener.
	Host string
	Port int32
	Rack *string // nil: none
	// Endpoints are the broker's advertised addresses by listener name;
	// a request is answered with those of the listener it came on.
	Endpoints map[string]Endpoint
}

// Cluster tells the broker APIs about the other nodes. Its methods are
// called on every Metadata, FindCoordinator and DescribeCluster request,
// from many connections at once: they must be cheap and safe for
// concurrent use.
type Cluster interface {
	// Self is this node's id; it must be the topic log's NodeID.
	Self() int32
	// Brokers is every live node, this one included, sorted by id.
	Brokers() []Broker
	// Controller is the node that Metadata and DescribeCluster name as
	// the controller.
	Controller() int32
	// Coordinator is the live owner of a coordinator shard (see
	// coordinator.Coordinator.ShardFor), if it has one.
	Coordinator(shard int) (Broker, bool)
}

// single is the Cluster of one node: this server at its advertised
// address.
type single struct{ s *Server }

func (c single) Self() int32 { return c.s.topics.NodeID() }

func (c single) Brokers() []Broker { return []Broker{c.self()} }

func (c single) Controller() int32 { return c.Self() }

func (c single) Coordinator(int) (Broker, bool) { return c.self(), true }

func (c single) self() Broker {
	c.s.mu.Lock()
	host, port := c.s.host, c.s.port
	c.s.mu.Unlock()
	return Broker{NodeID: c.Self(), Host: host, Port: port, Endpoints: c.s.endpoints()}
}

// broker returns the live broker with the given id.
func (s *Server) broker(id int32) (Broker, bool) {
	for _, b := range s.cluster.Brokers() {
		if b.NodeID == id {
			return b, true
		}
	}
	return Broker{}, false
}
