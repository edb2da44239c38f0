package node_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/internal/etcdtest"
	"github.com/cohort-dev/cohort/internal/testkit"
	"github.com/cohort-dev/cohort/node"
)

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// httpGet GETs http://addr/path and returns the body ("" on an error).
func httpGet(addr, path string) string {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return ""
	}
	return string(b)
}

// clusterEvent is an entry of /api/v1/cluster/events.
type clusterEvent struct {
	Event     string `json:"event"`
	Node      int32  `json:"node"`
	Self      bool   `json:"self"`
	Serving   int    `json:"serving"`
	Suspended int    `json:"suspended"`
}

// apiEvents lists the node's cluster events, newest first.
func apiEvents(n *node.Node) []clusterEvent {
	var out struct {
		Cluster bool           `json:"cluster"`
		Events  []clusterEvent `json:"events"`
	}
	if json.Unmarshal([]byte(httpGet(n.HTTPAddr(), "/api/v1/cluster/events")), &out) != nil || !out.Cluster {
		return nil
	}
	return out.Events
}

func hasEvent(evs []clusterEvent, event string, node int32) bool {
	for _, e := range evs {
		if e.Event == event && e.Node == node {
			return true
		}
	}
	return false
}

// TestClusterNodeEvents: three nodes on one etcd, node 3 reaching it
// through a proxy. Cut off, node 3's lease expires: the others say it
// is lost (an INFO line, the metrics, the API's events) and node 3 that
// it is suspended; healed, it registers again: the others say it
// rejoined, and node 3 that it resumed.
func TestClusterNodeEvents(t *testing.T) {
	ec := etcdtest.StartProcs(t, 1)
	px := etcdtest.NewProxy(t, strings.TrimPrefix(ec.Endpoints()[0], "http://"))
	logs := map[int32]*lockedBuffer{}
	nodes := map[int32]*node.Node{}
	for id := int32(1); id <= 3; id++ {
		eps := ec.Endpoints()
		if id == 3 {
			eps = []string{"http://" + px.Addr()}
		}
		logs[id] = &lockedBuffer{}
		nodes[id] = testkit.StartNode(t, node.Config{
			HTTPListen: "127.0.0.1:0",
			Logger:     slog.New(slog.NewTextHandler(logs[id], &slog.HandlerOptions{Level: slog.LevelInfo})),
			Cluster:    &node.ClusterConfig{EtcdEndpoints: eps, NodeID: id, LeaseTTL: 2 * time.Second},
		})
	}
	const within = 20 * time.Second
	for id, n := range nodes {
		testkit.Eventually(t, within, fmt.Sprintf("node %d sees every node joined", id), func() bool {
			evs := apiEvents(n)
			return hasEvent(evs, "joined", 1) && hasEvent(evs, "joined", 2) && hasEvent(evs, "joined", 3)
		})
	}

	px.Cut()
	for _, id := range []int32{1, 2} {
		n := nodes[id]
		testkit.Eventually(t, within, fmt.Sprintf("node %d reports node 3 lost", id), func() bool {
			evs := apiEvents(n)
			return len(evs) > 0 && evs[0].Event == "lost" && evs[0].Node == 3 && evs[0].Serving == 2
		})
		if line := `msg="cluster node lost" node=3`; !strings.Contains(logs[id].String(), line) {
			t.Errorf("node %d logged no %s:\n%s", id, line, logs[id])
		}
		metrics := httpGet(n.HTTPAddr(), "/metrics")
		for _, want := range []string{`cohort_cluster_nodes{state="serving"} 2`, `cohort_cluster_node_events_total{event="lost"} 1`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("node %d's metrics lack %s", id, want)
			}
		}
	}
	// Node 3 cannot reach etcd, but its admin listener answers.
	testkit.Eventually(t, within, "node 3 reports itself suspended", func() bool {
		return hasEvent(apiEvents(nodes[3]), "suspended", 3) &&
			strings.Contains(httpGet(nodes[3].HTTPAddr(), "/metrics"), `cohort_cluster_nodes{state="suspended"} 1`)
	})

	px.Heal()
	for _, id := range []int32{1, 2} {
		n := nodes[id]
		testkit.Eventually(t, within, fmt.Sprintf("node %d reports node 3 rejoined", id), func() bool {
			evs := apiEvents(n)
			return len(evs) > 0 && evs[0].Event == "rejoined" && evs[0].Node == 3 && evs[0].Serving == 3
		})
		if line := `msg="cluster node rejoined" node=3`; !strings.Contains(logs[id].String(), line) {
			t.Errorf("node %d logged no %s", id, line)
		}
		if m := httpGet(n.HTTPAddr(), "/metrics"); !strings.Contains(m, `cohort_cluster_nodes{state="serving"} 3`) {
			t.Errorf("node %d's metrics do not count 3 nodes serving", id)
		}
	}
	testkit.Eventually(t, within, "node 3 reports itself resumed", func() bool {
		return hasEvent(apiEvents(nodes[3]), "resumed", 3) &&
			strings.Contains(httpGet(nodes[3].HTTPAddr(), "/metrics"), `cohort_cluster_nodes{state="suspended"} 0`)
	})
	if line := `msg="cluster node suspended" node=3`; !strings.Contains(logs[3].String(), line) {
		t.Errorf("node 3 logged no %s", line)
	}
}
